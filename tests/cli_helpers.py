"""Running ``nardy`` as a user does, and the rule every refusal of bad input follows: exit status
2, one line ``nardy: error: ...`` on stderr naming the problem, no traceback."""

from __future__ import annotations

import subprocess
import sys


def nardy(*args, stdin: str | bytes = "", timeout=120) -> subprocess.CompletedProcess:
    """`nardy ARGS` as a user runs it (a new interpreter); stdout and stderr as text."""
    proc = subprocess.run([sys.executable, "-m", "nardy_ai.cli", *args], capture_output=True, timeout=timeout,
                          input=stdin if isinstance(stdin, bytes) else stdin.encode())
    proc.stdout = proc.stdout.decode("utf-8", "replace")
    proc.stderr = proc.stderr.decode("utf-8", "replace")
    return proc


def error_line(returncode: int, stderr: str, *words: str) -> str:
    """The one error line of a refused command, checked against the rule and for each of ``words``."""
    assert returncode == 2, (returncode, stderr[-2000:])
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nardy: error: "), stderr[-2000:]
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def assert_one_line_error(proc: subprocess.CompletedProcess, *words: str) -> str:
    """A finished :func:`nardy` run refused its input by the rule, naming each of ``words``."""
    return error_line(proc.returncode, proc.stderr, *words)


def main_error(capsys, argv: list[str], *words: str) -> str:
    """`nardy ARGV` run in this process (no interpreter start) refused its input by the rule,
    naming each of ``words``; returns the error line."""
    from nardy_ai.cli import main
    returncode = main(list(argv))
    return error_line(returncode, capsys.readouterr().err, *words)
