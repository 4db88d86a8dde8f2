"""The agent interface: choose one afterstate per position of a batch.

An agent sees the output of :func:`nardy_ai.movegen.generate` (every legal afterstate of every
position, still from the mover's side) and returns, for each position, the row of the
afterstate it plays.  Choosing is batched: one call decides for the whole batch, so an agent
never loops over positions in Python.  Cube and dave decisions (CUBE-1, CUBE-D) are an optional
part of the interface (see :meth:`Agent.equity`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ..movegen import Afterstates, segment_argmax, segment_ids  # noqa: F401  (re-exported: their home was here)
from ..variants import Variant


class Agent(ABC):
    """A player.  Subclasses set ``name`` (the spec :func:`~nardy_ai.agents.make_agent` reads)."""

    name: str = "agent"

    @abstractmethod
    def choose(self, after: Afterstates, variant: Variant, rng: np.random.Generator) -> np.ndarray:
        """The chosen afterstate of every position: ``(N,)`` int64 absolute rows of ``after.boards``.

        Row ``out[i]`` lies in ``after.offsets[i]:after.offsets[i + 1]``.  ``rng`` is the only
        source of randomness an agent may use, so that games replay from their seed.
        """

    def equity(self, boards: np.ndarray, variant: Variant) -> np.ndarray | None:
        """The agent's own equity estimate of afterstates ``(K, 28)``, or ``None`` without one.

        ``(K,)`` float, cubeless points per game for the side that just played (the boards
        are not flipped).  Neural agents give their evaluator's (0-ply) equity; hand-written
        scores that are not equities (random, heuristic) give ``None``.

        Agents that take cube decisions (CUBE-1, CUBE-D; :mod:`nardy_ai.cube`) also define,
        batched over positions ``(N, 28)`` seen by the player deciding, with ``cubes`` the
        stakes of the batch as that player sees them: from the game runner and the game core a
        :class:`nardy_ai.cube.Stakes` (arrays ``value``, ``access``, ``next``, ``turned``,
        ``on_roll``; iterating it gives one dict per position), from the protocol a list of
        dicts ``{"value", "owner"}`` (owner ``"centre"``, ``"mover"`` = the player deciding,
        ``"opponent"``; for dave the player who may offer next; optionally ``"next"``,
        ``"turned"``, ``"on_roll"``); :meth:`nardy_ai.cube.Stakes.from_dicts` reads either.
        The methods:
        ``double(boards, cubes, variant)`` (the player deciding is on roll, before rolling),
        ``take(boards, cubes, variant)`` (the doubler is on roll, unless ``on_roll``: the
        doubler answering a beaver) and, optionally, ``beaver(...)``
        (BG-B, same view as ``take``), each returning ``(decisions (N,) bool, equities: list of
        dict per position, or None)``.  The runner treats an agent without ``double`` as never
        doubling and one without ``take`` as always taking.
        """
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def subset(after: Afterstates, positions: np.ndarray) -> tuple[Afterstates, np.ndarray]:
    """The afterstates of some positions of a batch, as a batch of their own: ``(sub, rows)``,
    a choice ``c`` in ``sub`` being row ``rows[c]`` of ``after`` (see ``Afterstates.select``)."""
    return after.select(positions)
