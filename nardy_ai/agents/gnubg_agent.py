"""GNU Backgammon as an agent (``gnubg:0ply``, ``gnubg:1ply``, ``gnubg:2ply``), through the
``gnubg`` package on PyPI: an optional extra (``pip install 'nardy-ai[gnubg]'``, GPL).

How it plays.  An agent here sees the afterstates of its positions, not the dice, so gnubg's
best-move functions are not used (their bear-off moves also come back truncated).  Instead
every afterstate is valued by gnubg's cubeless evaluation of the position with the opponent
on roll, at 0 ply, and the gnubg package's own move filters (its hint filters) keep the
candidates that are valued again at 1 and 2 plies, as gnubg does when it chooses a move.
Every play is one of our legal afterstates by construction.  Afterstates that bear off the
last checker are valued exactly.

Board mapping.  gnubg's board is ``(side not on roll, side on roll)``, each 25 counts in that
side's own numbering (index ``i`` = point ``i + 1``, index 24 = its bar).  For our afterstate
``b`` (mover's view; the opponent rolls next) that is ``(ours, theirs)`` with ``ours`` =
``b``'s positive counts and bar, ``theirs`` = the positive counts of ``flip(b)`` and the
opponent's bar.

Traps of the package: evaluation commands can hang unless gnubg runs one thread (set once at
load), its engine is not thread-safe (one engine per process: run games in processes), and
its commands print to the C-level stdout (silenced here, so that ``nardy serve`` stays clean).
Variants: backgammon-family rules whose scoring is single/gammon/backgammon = 1/2/3.
"""

from __future__ import annotations

import os
import re
import sys
import threading

import numpy as np

from ..board import BAR, CHECKERS, OFF, OPP_BAR, flip
from ..errors import UnknownAgent
from ..game import result_levels
from ..movegen import Afterstates
from ..search import MoveFilter, filtered_choice
from ..variants import Variant
from .base import Agent

INSTALL_HINT = "pip install 'nardy-ai[gnubg]'"
_SPEC = re.compile(r"^(?P<plies>[0-2])ply$")
_LOCK = threading.Lock()
_engine = None


def _silenced(fn, *args):
    """Call ``fn`` with the process's file descriptor 1 pointed at /dev/null."""
    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        return fn(*args)
    finally:
        os.dup2(saved, 1)
        os.close(null)
        os.close(saved)


def load_gnubg():
    """The ``gnubg`` module, set to one thread; :class:`UnknownAgent` saying how to install
    it when it is missing."""
    global _engine
    if _engine is None:
        try:
            import gnubg
        except ImportError:
            raise UnknownAgent(f"gnubg agents need the optional gnubg package: {INSTALL_HINT}") from None
        _silenced(gnubg.command, "set threads 1")
        _engine = gnubg
    return _engine


def gnubg_boards(afterstates: np.ndarray, variant: Variant) -> np.ndarray:
    """``(M, 2, 25)`` gnubg boards of afterstates ``(M, 28)``: (us, not on roll; the
    opponent, on roll), each in its own numbering with its bar at index 24."""
    b = np.asarray(afterstates)
    out = np.zeros((len(b), 2, 25), np.int64)
    out[:, 0, :24] = np.maximum(b[:, :24], 0)
    out[:, 0, 24] = b[:, BAR]
    out[:, 1, :24] = np.maximum(flip(b, variant)[:, :24], 0)
    out[:, 1, 24] = b[:, OPP_BAR]
    return out


class GnubgAgent(Agent):
    """gnubg's cubeless money play at 0, 1 or 2 plies (see the module docstring)."""

    def __init__(self, plies: int, filters: tuple[MoveFilter, ...] | None = None):
        gnubg = load_gnubg()
        self.gnubg = gnubg
        self.plies = plies
        self.name = f"gnubg:{plies}ply"
        self.cube = gnubg.cubeinfo(1, -1, 1, 0, (0, 0), 0)
        # gnubg's standard contexts: cubeless, deterministic, pruning nets below the top ply.
        self.contexts = [gnubg.evalcontext(0, p, 1, int(p > 0), 0.0) for p in range(plies + 1)]
        self.filters = self._hint_filters() if filters is None else tuple(filters)

    def _hint_filters(self) -> tuple[MoveFilter, ...]:
        """The package's move filters for this depth (one per ply before the last)."""
        rows = [f for f in self.gnubg.getevalhintfilter() if f["ply"] == self.plies]
        rows.sort(key=lambda f: f["level"])
        return tuple(MoveFilter(int(f["acceptmoves"]) + int(f["extramoves"]), float(f["threshold"]))
                     for f in rows)

    def equities(self, afterstates: np.ndarray, variant: Variant, plies: int) -> np.ndarray:
        """Cubeless equity ``(M,)`` of afterstates for the side that just moved, gnubg at
        ``plies``; one gnubg call per afterstate (finished games exactly)."""
        b = np.asarray(afterstates)
        eq = np.empty(len(b))
        done = b[:, OFF] == CHECKERS
        eq[done] = np.asarray(variant.scoring, float)[result_levels(b[done], variant) - 1]
        live = np.flatnonzero(~done)
        boards = gnubg_boards(b[live], variant).tolist()
        ctx, evaluate = self.contexts[plies], self.gnubg.evaluate
        with _LOCK:
            # gnubg answers for the side on roll (the opponent): its cubeless equity, negated.
            eq[live] = [-evaluate((tuple(us), tuple(them)), self.cube, ctx)[5] for us, them in boards]
        return eq

    def choose(self, after: Afterstates, variant: Variant, rng: np.random.Generator) -> np.ndarray:
        eq0 = self.equities(after.boards, variant, 0)
        return filtered_choice(eq0, after.offsets, self.filters,
                               lambda rows, depth: self.equities(after.boards[rows], variant, depth),
                               rng)


def gnubg_factory(arg: str, variant: Variant) -> GnubgAgent:
    """``gnubg:0ply`` (default ``gnubg``), ``gnubg:1ply``, ``gnubg:2ply``."""
    m = _SPEC.match(arg or "0ply")
    if not m:
        raise UnknownAgent(f"gnubg:{arg}: use gnubg:0ply, gnubg:1ply or gnubg:2ply")
    if variant.is_long or tuple(variant.scoring) != (1, 2, 3):
        raise UnknownAgent(f"gnubg plays backgammon (scoring 1/2/3, short nardy rules), not {variant.id}")
    return GnubgAgent(int(m["plies"]))
