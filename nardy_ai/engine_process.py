"""The channel to an external engine: a program that speaks the agent protocol
(POSITIONS.md, "Agent protocol"), ``nardy serve`` among them.  The ``ext:`` agent
(:class:`~nardy_ai.agents.external.ExternalAgent`) and the ``ext:`` evaluator
(:class:`~nardy_ai.evaluator.ExternalEvaluator`) both talk through :class:`EngineClient`.

The command (split like a shell would; one pair of outer quotes is dropped, so both
``nardy serve --agent heuristic`` and ``"nardy serve --agent heuristic"`` work) is started on
first use with pipes on stdin/stdout; its stderr goes to a temporary file, whose last lines are
quoted when it fails.  It is asked ``info`` once (its variant must be ours), then one request
line per :meth:`EngineClient.request`.  A process that exits, breaks the protocol or stays
silent for ``timeout`` seconds raises :class:`~nardy_ai.errors.EngineError` and is not asked
again; an ``error`` answer raises it too (naming the op) and the engine keeps serving.
"""

from __future__ import annotations

import json
import queue
import shlex
import shutil
import subprocess
import tempfile
import threading
import weakref
from typing import IO, Sequence

from .board import parse_json
from .errors import EngineError, FormatError, NardyError, UnknownAgent
from .variants import Variant, get_variant

#: Seconds to wait for one answer, by default.
TIMEOUT = 120.0


def split_command(command: str, who: str = "agent ext") -> list[str]:
    """The argv of a command line, one pair of outer quotes dropped (``"nardy serve ..."``)."""
    text = command.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]
    try:
        return shlex.split(text)
    except ValueError as e:
        raise UnknownAgent(f"{who}:{command}: cannot split the command line: {e}") from None


def _pump(stream: IO[bytes], lines: queue.Queue) -> None:
    for line in iter(stream.readline, b""):
        lines.put(line)
    lines.put(None)


def _stop(proc: subprocess.Popen, reader: threading.Thread, stderr: IO[bytes]) -> None:
    """End of input asks a protocol server to exit (status 0); kill it if it does not."""
    try:
        proc.stdin.close()
    except OSError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    reader.join(timeout=5)           # it sees the end of the pipe once the process is gone
    proc.stdout.close()
    stderr.close()


class EngineProcess:
    """One running engine process: JSON lines out, JSON lines back through a reader thread;
    errors start with ``who`` (``agent ext:CMD``, ``evaluator ext:CMD``)."""

    def __init__(self, argv: list[str], who: str):
        self.who = who
        self.stderr = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self.stderr)
        except OSError as e:
            self.stderr.close()
            raise EngineError(f"{who}: cannot start {argv[0]!r}: {e.strerror}") from None
        self.lines: queue.Queue = queue.Queue()
        reader = threading.Thread(target=_pump, args=(self.proc.stdout, self.lines), daemon=True)
        reader.start()
        self.next_id = 0
        self.close = weakref.finalize(self, _stop, self.proc, reader, self.stderr)

    def _stderr_tail(self) -> str:
        if self.stderr.closed:
            return ""
        self.stderr.seek(0)
        tail = self.stderr.read().decode("utf-8", "replace").strip().splitlines()[-3:]
        return f"; its stderr ends: {' | '.join(tail)}" if tail else ""

    def _died(self) -> EngineError:
        try:
            status = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            status = None
        msg = (f"{self.who}: the engine process exited (status {status})" if status is not None
               else f"{self.who}: the engine process closed its output")
        msg += self._stderr_tail()
        self.close()
        return EngineError(msg)

    def request(self, obj: dict, timeout: float) -> dict:
        """Send one request (its ``id`` added) and return the answer; an error answer raises."""
        rid = self.next_id
        self.next_id += 1
        try:
            self.proc.stdin.write((json.dumps({"id": rid, **obj}) + "\n").encode())
            self.proc.stdin.flush()
        except (OSError, ValueError):       # broken pipe, or stdin already closed
            raise self._died() from None
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            self.proc.kill()
            self.close()
            raise EngineError(f"{self.who}: no answer within {timeout:g} s to the {obj['op']} "
                              f"request {rid}; the engine was stopped") from None
        if line is None:
            raise self._died()
        try:
            ans = parse_json(line)
        except FormatError:
            self.close()
            raise EngineError(f"{self.who}: unreadable answer line {line[:200]!r} to the "
                              f"{obj['op']} request {rid}") from None
        if not isinstance(ans, dict) or ans.get("id") != rid:
            self.close()
            raise EngineError(f"{self.who}: answer {line[:200]!r} does not carry the id {rid} "
                              f"of the {obj['op']} request")
        if "error" in ans:
            raise EngineError(f"{self.who}: the engine answered the {obj['op']} request "
                              f"with an error: {ans['error']}")
        return ans


class EngineClient:
    """An engine command for games of ``variant``: started on the first :meth:`request`, asked
    ``info`` then (its variant must be ours), stopped by :meth:`close`.  A copy in another
    process (tournament workers) starts an engine of its own.  Errors start with ``kind`` and
    ``name`` (``agent ext:CMD``); a command line that names no program raises ``refuse``."""

    def __init__(self, command: str | Sequence[str], variant: str | Variant, timeout: float = TIMEOUT,
                 name: str | None = None, kind: str = "agent", refuse: type[NardyError] = UnknownAgent):
        self.argv = split_command(command, f"{kind} ext") if isinstance(command, str) else list(command)
        if not self.argv:
            raise refuse(f'{kind} ext needs a command line, e.g. ext:"nardy serve --agent heuristic"')
        if shutil.which(self.argv[0]) is None:
            raise refuse(f"{kind} ext: no program {self.argv[0]!r} found (PATH or path)")
        self.variant = get_variant(variant)
        self.timeout = float(timeout)
        self.name = name or "ext:" + (command if isinstance(command, str) else shlex.join(self.argv))
        self.who = f"{kind} {self.name}"
        self.engine: EngineProcess | None = None
        self.info: dict | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "engine": None, "info": None}

    def request(self, obj: dict) -> dict:
        """The engine's answer to one request (``op`` and its fields; the ``id`` is added)."""
        if self.engine is None:
            self.engine = EngineProcess(self.argv, self.who)
            info = self.engine.request({"op": "info"}, self.timeout)
            if info.get("variant") != self.variant.id:
                self.close()
                raise EngineError(f"{self.who}: the engine plays variant {info.get('variant')!r}, "
                                  f"not {self.variant.id!r}")
            self.info = {k: x for k, x in info.items() if k != "id"}
        elif not self.engine.close.alive:
            raise EngineError(f"{self.who}: the engine was stopped after an earlier failure")
        return self.engine.request(obj, self.timeout)

    def close(self) -> None:
        """Stop the engine process (it is started again on the next request)."""
        if self.engine is not None:
            self.engine.close()
            self.engine = None


class UsesEngine:
    """For objects that talk to an engine through ``self.client`` (an :class:`EngineClient`):
    :meth:`close` stops the process, and the object is a context manager that closes it."""

    client: EngineClient

    def close(self) -> None:
        """Stop the engine process (it is started again on the next request)."""
        self.client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
