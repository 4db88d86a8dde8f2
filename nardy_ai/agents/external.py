"""The external engine agent: ``ext:CMD`` plays through any program that speaks the agent
protocol (POSITIONS.md, "Agent protocol"), ``nardy serve`` among them.

The command line and the process (started on first use, asked ``info`` once, stopped after a
failure) are :class:`~nardy_ai.engine_process.EngineClient`'s, which the ``ext:`` evaluator
(:class:`~nardy_ai.evaluator.ExternalEvaluator`) shares.  The agent sends one batched ``play``
request per :meth:`ExternalAgent.choose` call, holding the positions (with their dice, from
:attr:`Afterstates.positions` / :attr:`Afterstates.dice`) that have more than one legal
afterstate.  Each answer is mapped back to a row of the afterstates, by its afterstate or,
without one, by its play notation; anything else is :class:`IllegalPlay`.  A process that
exits, breaks the protocol or stays silent for ``timeout`` seconds raises :class:`EngineError`
and is not asked again.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np

from ..board import board_from_json, board_to_json
from ..engine_process import TIMEOUT, EngineClient, UsesEngine
from ..errors import EngineError, FormatError, IllegalPlay, NardyError
from ..movegen import Afterstates
from ..notation import find_play
from ..variants import Variant
from .base import Agent


class ExternalAgent(UsesEngine, Agent):
    """A player that is another process speaking the agent protocol."""

    def __init__(self, command: str | Sequence[str], variant: str | Variant,
                 timeout: float = TIMEOUT, name: str | None = None):
        self.client = EngineClient(command, variant, timeout, name)
        self.argv, self.variant, self.timeout, self.name = (
            self.client.argv, self.client.variant, self.client.timeout, self.client.name)

    @property
    def info(self) -> dict | None:
        """The engine's ``info`` answer (None before the first request)."""
        return self.client.info

    def _request(self, obj: dict) -> dict:
        return self.client.request(obj)

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
