"""The external engine agent: ``ext:CMD`` plays through any program that speaks the agent
protocol (POSITIONS.md, "Agent protocol"), ``nardy serve`` among them.

The command (split like a shell would; one pair of outer quotes is dropped, so both
``ext:nardy serve --agent heuristic`` and ``ext:"nardy serve --agent heuristic"`` work) is
started on first use with pipes on stdin/stdout; its stderr goes to a temporary file, whose
last lines are quoted when it fails.  It is asked ``info`` once (its variant must be ours), then
one batched ``play`` request per :meth:`ExternalAgent.choose` call, holding the positions
(with their dice, from :attr:`Afterstates.positions` / :attr:`Afterstates.dice`) that have
more than one legal afterstate.  Each answer is mapped back to a row of the afterstates, by its
afterstate or, without one, by its play notation; anything else is :class:`IllegalPlay`.  A
process that exits, breaks the protocol or stays silent for ``timeout`` seconds raises
:class:`EngineError` and is not asked again.
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
from typing import IO, Any, Sequence

import numpy as np

from ..board import board_from_json, board_to_json, parse_json
from ..errors import EngineError, FormatError, IllegalPlay, NardyError, UnknownAgent
from ..movegen import Afterstates
from ..notation import find_play
from ..variants import Variant, get_variant
from .base import Agent

#: Seconds to wait for one answer, by default.
TIMEOUT = 120.0


def split_command(command: str) -> list[str]:
    """The argv of a command line, one pair of outer quotes dropped (``"nardy serve ..."``)."""
    text = command.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]
    try:
        return shlex.split(text)
    except ValueError as e:
        raise UnknownAgent(f"agent ext:{command}: cannot split the command line: {e}") from None


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


class _Engine:
    """One running engine process: JSON lines out, JSON lines back through a reader thread."""

    def __init__(self, argv: list[str], who: str):
        self.who = who
        self.stderr = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self.stderr)
        except OSError as e:
            self.stderr.close()
            raise EngineError(f"agent {who}: cannot start {argv[0]!r}: {e.strerror}") from None
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
        msg = (f"agent {self.who}: the engine process exited (status {status})" if status is not None
               else f"agent {self.who}: the engine process closed its output")
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
            raise EngineError(f"agent {self.who}: no answer within {timeout:g} s to the {obj['op']} "
                              f"request {rid}; the engine was stopped") from None
        if line is None:
            raise self._died()
        try:
            ans = parse_json(line)
        except FormatError:
            self.close()
            raise EngineError(f"agent {self.who}: unreadable answer line {line[:200]!r} to the "
                              f"{obj['op']} request {rid}") from None
        if not isinstance(ans, dict) or ans.get("id") != rid:
            self.close()
            raise EngineError(f"agent {self.who}: answer {line[:200]!r} does not carry the id {rid} "
                              f"of the {obj['op']} request")
        if "error" in ans:
            raise EngineError(f"agent {self.who}: the engine answered the {obj['op']} request "
                              f"with an error: {ans['error']}")
        return ans


class ExternalAgent(Agent):
    """A player that is another process speaking the agent protocol."""

    def __init__(self, command: str | Sequence[str], variant: str | Variant,
                 timeout: float = TIMEOUT, name: str | None = None):
        self.argv = split_command(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise UnknownAgent('agent ext needs a command line, e.g. ext:"nardy serve --agent heuristic"')
        if shutil.which(self.argv[0]) is None:
            raise UnknownAgent(f"agent ext: no program {self.argv[0]!r} found (PATH or path)")
        self.variant = get_variant(variant)
        self.timeout = float(timeout)
        self.name = name or "ext:" + (command if isinstance(command, str) else shlex.join(self.argv))
        self._engine: _Engine | None = None
        self.info: dict | None = None

    def __getstate__(self) -> dict:
        # A copy in another process (tournament workers) starts an engine of its own.
        return {**self.__dict__, "_engine": None, "info": None}

    def _request(self, obj: dict) -> dict:
        if self._engine is None:
            self._engine = _Engine(self.argv, self.name)
            info = self._engine.request({"op": "info"}, self.timeout)
            if info.get("variant") != self.variant.id:
                self.close()
                raise EngineError(f"agent {self.name}: the engine plays variant {info.get('variant')!r}, "
                                  f"not {self.variant.id!r}")
            self.info = {k: x for k, x in info.items() if k != "id"}
        elif not self._engine.close.alive:
            raise EngineError(f"agent {self.name}: the engine was stopped after an earlier failure")
        return self._engine.request(obj, self.timeout)

    def close(self) -> None:
        """Stop the engine process (it is started again on the next request)."""
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    def __enter__(self) -> ExternalAgent:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def choose(self, after: Afterstates, variant: Variant, rng: np.random.Generator) -> np.ndarray:
        if after.positions is None or after.dice is None:
            raise NardyError(f"agent {self.name} needs the positions and dice of the afterstates "
                             f"(Afterstates.positions and .dice, as movegen.generate sets them)")
        rows = after.offsets[:-1].copy()
        ask = np.flatnonzero(after.counts() > 1)       # forced plays need no engine
        if not len(ask):
            return rows
        requests = [self._position(after, i) for i in ask]
        ans = self._request({"op": "play", "batch": requests})
        batch = ans.get("batch")
        if not isinstance(batch, list) or len(batch) != len(ask):
            raise EngineError(f"agent {self.name}: the play answer must hold a 'batch' list of "
                              f"{len(ask)} answers, got {json.dumps(ans)[:200]}")
        for i, request, entry in zip(ask, requests, batch):
            rows[i] = self._row(after, i, request, entry)
        return rows

    def _position(self, after: Afterstates, i: int) -> dict[str, Any]:
        return board_to_json(after.positions[i], self.variant, dice=[int(d) for d in after.dice[i]])

    def _row(self, after: Afterstates, i: int, request: dict, entry: Any) -> int:
        """The row of ``after`` that an answer names; :class:`IllegalPlay` when none."""
        where = f"in position {json.dumps(request)}"
        if isinstance(entry, dict) and entry.get("afterstate") is not None:
            what = f"the afterstate {json.dumps(entry['afterstate'])}"
            if isinstance(entry.get("play"), str):
                what += f" ({entry['play']!r})"
            try:
                if not isinstance(entry["afterstate"], dict):
                    raise FormatError("an afterstate must be a JSON object")
                _, board, _, _ = board_from_json(entry["afterstate"], self.variant)
            except NardyError as e:
                raise IllegalPlay(f"agent {self.name} answered {what} {where}: {e}") from None
        elif isinstance(entry, dict) and isinstance(entry.get("play"), str):
            what = f"{entry['play']!r}"
            try:
                board, _ = find_play(after.positions[i], after.dice[i], entry["play"], self.variant)
            except NardyError as e:
                raise IllegalPlay(f"agent {self.name} played {what} {where}: {e}") from None
        else:
            raise EngineError(f"agent {self.name}: an answer needs an 'afterstate' or a 'play', "
                              f"got {json.dumps(entry)[:200]} {where}")
        lo, hi = int(after.offsets[i]), int(after.offsets[i + 1])
        match = np.flatnonzero((after.boards[lo:hi] == board).all(axis=1))
        if not len(match):
            raise IllegalPlay(f"agent {self.name} played {what}, which is not a legal afterstate {where}")
        return lo + int(match[0])

    def _cube(self, op: str, boards: np.ndarray, cubes: list[dict]) -> tuple[np.ndarray, list]:
        decisions, equities = [], []
        for board, cube in zip(boards, cubes):
            ans = self._request({"op": op, **board_to_json(board, self.variant, cube=cube)})
            if not isinstance(ans.get(op), bool):
                raise EngineError(f"agent {self.name}: the {op} answer needs {op!r}: true/false, "
                                  f"got {json.dumps(ans)[:200]}")
            decisions.append(ans[op])
            equities.append(ans.get("equity"))
        return np.array(decisions, bool), equities

    def double(self, boards: np.ndarray, cubes: list[dict], variant: Variant) -> tuple[np.ndarray, list]:
        """The engine's double decisions (CUBE-1), one request per position."""
        return self._cube("double", boards, cubes)

    def take(self, boards: np.ndarray, cubes: list[dict], variant: Variant) -> tuple[np.ndarray, list]:
        """The engine's take decisions (CUBE-1), one request per position."""
        return self._cube("take", boards, cubes)


def ext_factory(arg: str, variant: Variant) -> ExternalAgent:
    """``ext:CMD`` -> an agent playing through the command line CMD."""
    return ExternalAgent(arg, variant, name=f"ext:{arg.strip()}")
