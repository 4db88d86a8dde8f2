"""The agent protocol (POSITIONS.md, "Agent protocol"): ``nardy serve --agent SPEC``.

A long-lived process: one JSON request per line on stdin, one JSON answer line per request on
stdout, in order and flushed at once, with the request's ``id`` echoed (``null`` when it has
none or cannot be read).  Blank lines are not requests and get no answer.

``play``
    Positions with ``"dice"``, as a ``"batch"`` list or one position inline.  Each answer gives
    the chosen play in canonical notation, the afterstate (mover's side, not flipped: one of
    the legal afterstates of ``nardy moves``) and the agent's equity of it (``null`` for
    agents without one, see :meth:`~nardy_ai.agents.base.Agent.equity`).  A whole batch is one
    call of the move generator and one call of the agent.
``double``, ``take``
    Cube decisions (CUBE-1) for positions with ``"cube"`` (default: centred at 1), seen by the
    player deciding; they go to the agent's ``double``/``take`` methods, and an agent without
    them answers an error.
``evaluate`` (this project's extension of the shared protocol)
    Positions, as a ``"batch"`` list or one inline, each taken as an **afterstate**: seen from
    the side that has just moved (its checkers positive, ``bar[0]``/``off[0]`` its own), the
    other side on roll next; ``dice`` and ``cube`` are ignored.  Each answer is
    ``{"probabilities": [...]}``: the agent's evaluator's outcome probabilities for the side
    that has just moved, in :mod:`nardy_ai.model`'s layout (``P(win)``, then
    ``P(win at level >= l)`` and ``P(lose at level >= l)`` for ``l = 2..L``: backgammon win,
    gammon, backgammon, gammon loss, backgammon loss; a net of a sibling variant answers in
    its own variant's levels), the static (0-ply) evaluation whatever the agent's search
    depth.  Finished games get their exact result (:func:`nardy_ai.evaluator.outcomes`).  An
    agent without an evaluator (random, heuristic, pubeval, human, gnubg, ext) answers an error.
``info``
    ``{"name", "variant", "version"}`` (and ``variant_version``, the rules version).

A request that cannot be read or names an illegal position gets ``{"id", "error"}`` with a
message naming its line number and the field or rule, and the process keeps serving (whatever
the line: malformed, not UTF-8, nested thousands deep, longer than
:data:`~nardy_ai.board.MAX_LINE_CHARS`).  End of input ends it.
"""

from __future__ import annotations

import json
from typing import IO, Any

import numpy as np

from . import __version__
from .agents.base import Agent
from .board import MAX_LINE_CHARS, board_from_json, board_to_json, json_object, numbered_lines
from .driver import ask
from .errors import FormatError, InvalidPosition, NardyError
from .evaluator import Evaluator, outcomes
from .movegen import generate
from .variants import Variant, get_variant

OPS = ("play", "double", "take", "evaluate", "info")
_CENTRED = {"value": 1, "owner": "centre"}


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"{type(obj).__name__} is not JSON")


class Server:
    """Answers protocol requests for one agent and one variant."""

    def __init__(self, agent: Agent, variant: str | Variant, seed: int = 0):
        self.agent = agent
        self.variant = get_variant(variant)
        self.rng = np.random.default_rng(seed)

    def answer_line(self, line: str | None, number: int | None = None) -> str:
        """The answer line (no newline) to one request line (None: a line too long to read);
        an error names the line ``number`` when given."""
        req_id = None
        try:
            if line is None:
                raise FormatError(f"the request line is longer than {MAX_LINE_CHARS} characters")
            req = json_object(line, "a request must be a JSON object with an 'op'")
            req_id = req.get("id")
            out = self.answer(req)
        except NardyError as e:
            error = str(e)
        except MemoryError:
            error = "the request needs more memory than this process has; send smaller batches"
        else:
            try:
                return json.dumps({"id": req_id, **out}, default=_json_default, allow_nan=False)
            except ValueError:    # NaN or an infinity in the agent's answer: not JSON
                error = f"agent {self.agent.name} answered a number that is not finite"
        where = "" if number is None else f"line {number}: "
        return json.dumps({"id": req_id, "error": where + error})

    def answer(self, req: dict) -> dict:
        """The answer to a parsed request, without its ``id``; raises :class:`NardyError`."""
        op = req.get("op")
        if op not in OPS:
            raise FormatError(f"field 'op' must be one of {', '.join(OPS)}, got {op!r}")
        if op == "info":
            return {"name": self.agent.name, "variant": self.variant.id, "version": __version__,
                    "variant_version": self.variant.version}
        evaluator = getattr(self.agent, "evaluator", None)
        if op == "evaluate" and not isinstance(evaluator, Evaluator):
            raise NardyError(f"agent {self.agent.name} has no evaluator to answer 'evaluate' "
                             f"(agents on a net, a net set or a registry name have one)")
        if op in ("double", "take") and not callable(getattr(self.agent, op, None)):
            raise NardyError(f"agent {self.agent.name} takes no cube decisions yet (CUBE-1)")
        positions = self._positions(req, op)
        if op == "play":
            answers = self._play(positions)
        elif op == "evaluate":
            answers = self._evaluate(evaluator, positions)
        else:
            answers = self._cube(op, positions)
        return {"batch": answers} if "batch" in req else answers[0]

    def _positions(self, req: dict, op: str) -> list[tuple[np.ndarray, Any]]:
        """``(board, dice or cube)`` of every position of the request, validated."""
        if "batch" in req:
            items = req["batch"]
            if not isinstance(items, list):
                raise FormatError("field 'batch' must be a list of positions")
        else:
            items = [req]
        out = []
        for i, obj in enumerate(items):
            where = f"batch[{i}]: " if "batch" in req else ""
            try:
                if not isinstance(obj, dict):
                    raise FormatError("a position must be a JSON object")
                _, board, dice, cube = board_from_json(obj, self.variant)
                if op == "play" and dice is None:
                    raise InvalidPosition("missing field 'dice' (two numbers 1-6)")
            except NardyError as e:
                raise type(e)(f"{where}{e}") from None
            out.append((board, dice if op == "play" else (cube or dict(_CENTRED))))
        return out

    def _play(self, positions: list[tuple[np.ndarray, Any]]) -> list[dict]:
        if not positions:
            return []
        v = self.variant
        after = generate(np.stack([b for b, _ in positions]), np.array([d for _, d in positions]), v)
        rows = ask(self.agent, after, v, self.rng)          # the agent's picks, checked
        chosen = after.boards[rows]
        eq = self.agent.equity(chosen, v)
        return [{"play": play, "afterstate": board_to_json(board),
                 "equity": None if eq is None else float(eq[i])}
                for i, (play, board) in enumerate(zip(after.notation(rows), chosen))]

    def _evaluate(self, evaluator: Evaluator, positions: list[tuple[np.ndarray, Any]]) -> list[dict]:
        """Outcome probabilities of the positions taken as afterstates (module docstring)."""
        if not positions:
            return []
        probs = outcomes(evaluator, np.stack([b for b, _ in positions]))
        return [{"probabilities": row} for row in probs.tolist()]

    def _cube(self, op: str, positions: list[tuple[np.ndarray, Any]]) -> list[dict]:
        if not positions:
            return []
        boards = np.stack([b for b, _ in positions])
        decisions, equities = getattr(self.agent, op)(boards, [c for _, c in positions], self.variant)
        return [{op: bool(decisions[i]), "equity": None if equities is None else equities[i]}
                for i in range(len(positions))]


def serve(agent: Agent, variant: str | Variant, stdin: IO[str], stdout: IO[str], seed: int = 0) -> None:
    """Answer requests from ``stdin`` on ``stdout`` until end of input."""
    server = Server(agent, variant, seed)
    for number, line in numbered_lines(stdin):
        if line is not None and not line.strip():
            continue
        stdout.write(server.answer_line(line, number) + "\n")
        stdout.flush()
