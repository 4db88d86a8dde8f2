"""GNU Backgammon as an agent (``gnubg:0ply``, ``gnubg:1ply``, ``gnubg:2ply``), through the
``gnubg`` package on PyPI: an optional extra (``pip install 'nardy-ai[gnubg]'``, GPL).

How it plays.  An agent here sees the afterstates of its positions, not the dice, so gnubg's
best-move functions are not used (their bear-off moves also come back truncated).  Instead
every afterstate is valued by gnubg's cubeless evaluation of the position with the opponent
on roll, at 0 ply, and the gnubg package's own move filters (its hint filters) keep the
candidates that are valued again at 1 and 2 plies, as gnubg does when it chooses a move.
Every play is one of our legal afterstates by construction.  Afterstates that bear off the
last checker are valued exactly.  gnubg's outcome probabilities at 0-2 plies are also offered
as an evaluator (:class:`GnubgEvaluator`), for the search and the analysis.

Board mapping.  gnubg's board is ``(side not on roll, side on roll)``, each 25 counts in that
side's own numbering (index ``i`` = point ``i + 1``, index 24 = its bar).  For our afterstate
``b`` (mover's view; the opponent rolls next) that is ``(ours, theirs)`` with ``ours`` =
``b``'s positive counts and bar, ``theirs`` = the positive counts of ``flip(b)`` and the
opponent's bar.

Traps of the package: evaluation commands can hang unless gnubg runs one thread (set once at
load), its engine is not thread-safe (one engine per process: run games in processes), and
its commands print to the C-level stdout (silenced here, so that ``nardy serve`` stays clean).
Variants: backgammon-family rules whose scoring is single/gammon/backgammon = 1/2/3.

Cube decisions (CUBE-1, money play).  ``double``, ``take`` and ``beaver`` ask gnubg itself: the
package's ``hint()`` refuses cube actions ("not yet implemented") and ``evaluate`` returns only
cubeless numbers, so each position is set in gnubg's own money session as an XGID (the player
deciding, or the doubler, on roll as X; cube value, owner, Jacoby and beaver from our cube dict
and variant) and gnubg's ``hint`` command is run with its cube decisions evaluated cubefully at
the agent's ply; its three cubeful equities (no double, double/take, double/pass, in units of
the current cube, for the player on roll) are read from its output.  Double when
``min(DT, DP) > ND`` (gnubg's rule; "too good" positions play on), take when ``DT <= DP`` from the
doubler's side, beaver when ``DT < 0``, and a doubler answers a beaver by taking when ``DT >= -1``
(the cube then at twice the doubled value, owned by the beaverer).  Dave stakes (CUBE-D) are not
backgammon: there gnubg never offers and always accepts.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading

import numpy as np

from ..board import BAR, OPP_BAR, flip
from ..errors import UnknownAgent
from ..formats import xgid as format_xgid
from ..evaluator import finished
from ..model import equity, flip_outcomes, terminal_outcomes
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


def _captured(gnubg, cmd: str) -> str:
    """Run a gnubg command, returning what it printed to file descriptor 1."""
    sys.stdout.flush()
    with tempfile.TemporaryFile() as f:
        saved = os.dup(1)
        os.dup2(f.fileno(), 1)
        try:
            gnubg.command(cmd)
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
        f.seek(0)
        return f.read().decode("utf-8", "replace")


_CUBE_LINES = {"no_double": re.compile(r"No (?:re)?double\s+([-+]\d+\.\d+)"),
               "double_pass": re.compile(r"(?:Re)?[Dd]ouble, pass\s+([-+]\d+\.\d+)"),
               "double_take": re.compile(r"(?:Re)?[Dd]ouble, take\s+([-+]\d+\.\d+)")}


def xgid(board: np.ndarray, cube: int, owner: int, jacoby: bool, beaver: bool) -> str:
    """The XGID of ``board`` (28, seen by the player on roll, who is X) before the roll, money
    play; ``cube`` the log2 of the stake, ``owner`` 1 (X), -1 (O) or 0 (centred); the cube may
    reach 2**20 (:func:`nardy_ai.formats.xgid` writes it)."""
    return format_xgid(board, cube_value=2 ** int(cube), cube_owner=_OWNER_NAMES[int(owner)],
                       jacoby=jacoby, beaver=beaver, max_cube=2 ** 20)


_OWNER_NAMES = {0: "centre", 1: "mover", -1: "opponent"}


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


class GnubgEvaluator:
    """gnubg's cubeless evaluation at ``plies`` (0-2) as an :class:`~nardy_ai.evaluator.Evaluator`:
    outcome probabilities of unfinished afterstates for the side that has just moved (gnubg
    answers for the side on roll: flipped), one gnubg call per afterstate.  ``prune`` (default:
    at 1 ply and deeper) uses gnubg's pruning nets below the top ply, as its standard contexts
    do.  Backgammon scoring only."""

    def __init__(self, variant: Variant, plies: int = 0, prune: bool | None = None):
        if variant.is_long or tuple(variant.scoring) != (1, 2, 3):
            raise UnknownAgent(f"gnubg values backgammon (scoring 1/2/3, short nardy rules), not {variant.id}")
        self.gnubg = gnubg = load_gnubg()
        self.variant, self.plies = variant, plies
        self.cube = gnubg.cubeinfo(1, -1, 1, 0, (0, 0), 0)
        self.context = gnubg.evalcontext(0, plies, 1, int(plies > 0 if prune is None else prune), 0.0)

    def probabilities(self, afterstates: np.ndarray) -> np.ndarray:
        """Outcome probabilities ``(M, 5)`` float64 (win, gammon, backgammon, gammon loss,
        backgammon loss) of unfinished afterstates ``(M, 28)``."""
        boards = gnubg_boards(afterstates, self.variant).tolist()
        evaluate = self.gnubg.evaluate
        with _LOCK:
            on_roll = [evaluate((tuple(us), tuple(them)), self.cube, self.context)[:5] for us, them in boards]
        return flip_outcomes(np.array(on_roll, float).reshape(len(boards), 5), self.variant)


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
        done = finished(b)
        if done.any():
            eq[done] = equity(terminal_outcomes(b[done], variant), variant)
        live = np.flatnonzero(~done)
        boards = gnubg_boards(b[live], variant).tolist()
        ctx, evaluate = self.contexts[plies], self.gnubg.evaluate
        with _LOCK:
            # gnubg answers for the side on roll (the opponent): its cubeless equity, negated.
            eq[live] = [-evaluate((tuple(us), tuple(them)), self.cube, ctx)[5] for us, them in boards]
        return eq

    def cube_equities(self, board: np.ndarray, cube: dict, variant: Variant,
                      owner: int) -> dict:
        """gnubg's cubeful equities (``no_double``, ``double_take``, ``double_pass``, units of
        the current cube) of the player on roll in ``board`` (its view), at this agent's ply;
        ``owner`` 1 (the player on roll), -1 or 0, as in :func:`xgid`."""
        value = max(int(cube.get("value", 1)), 1)
        log2 = min(value.bit_length() - 1, 15)
        jacoby = bool(variant.jacoby) and not cube.get("turned", False)
        gid = xgid(board, log2, owner, jacoby, bool(variant.beaver))
        with _LOCK:
            if not self._cube_session:
                _captured(self.gnubg, "new session")
                GnubgAgent._cube_session = True
            _captured(self.gnubg, f"set evaluation cubedecision evaluation plies {self.plies}")
            _captured(self.gnubg, "set evaluation cubedecision evaluation cubeful on")
            _captured(self.gnubg, f"set gnubgid {gid}")
            text = _captured(self.gnubg, "hint")
        out = {}
        for key, rx in _CUBE_LINES.items():
            m = rx.search(text)
            if m is None:
                raise RuntimeError(f"gnubg gave no cube analysis for {gid}: {text.strip()!r}")
            out[key] = float(m.group(1))
        return out

    _cube_session = False

    @staticmethod
    def _owner(cube: dict, x_is_viewer: bool) -> int:
        o = cube.get("owner", "centre")
        if o == "centre":
            return 0
        return 1 if (o == "mover") == x_is_viewer else -1

    def double(self, boards: np.ndarray, cubes: list[dict], variant: Variant):
        """gnubg's money double (CUBE-1): ``min(DT, DP) > ND``; with dave never."""
        if variant.stakes != "cube":
            return np.zeros(len(boards), bool), None
        eq, dec = [], []
        for b, c in zip(boards, cubes):
            owner = self._owner(c, True)
            if owner == -1:                          # no access: gnubg cannot double here
                eq.append(None)
                dec.append(False)
                continue
            e = self.cube_equities(b, c, variant, owner)
            eq.append(e)
            dec.append(min(e["double_take"], e["double_pass"]) > e["no_double"])
        return np.array(dec, bool), eq

    def _doubler_view(self, boards, cubes, variant):
        """Per position: gnubg's equities with the doubler on roll (X), whatever side sees it."""
        out = []
        for b, c in zip(boards, cubes):
            if c.get("on_roll", False):              # the doubler answering a beaver
                out.append(self.cube_equities(b, c, variant, 1))
            else:                                    # the taker's view; the doubler rolls next
                out.append(self.cube_equities(flip(np.asarray(b)[None], variant)[0], c, variant,
                                              self._owner(c, False)))
        return out

    def take(self, boards: np.ndarray, cubes: list[dict], variant: Variant):
        """Take when gnubg's double/take is not worse for the taker than the pass (``DT <= DP``
        for the doubler); a doubler answering a beaver takes when ``DT >= -1``.  Dave: always."""
        if variant.stakes != "cube":
            return np.ones(len(boards), bool), None
        eq = self._doubler_view(boards, cubes, variant)
        dec = [e["double_take"] >= -1.0 if c.get("on_roll", False)
               else e["double_take"] <= e["double_pass"] for e, c in zip(eq, cubes)]
        return np.array(dec, bool), eq

    def beaver(self, boards: np.ndarray, cubes: list[dict], variant: Variant):
        """Beaver (BG-B) when the doubler's double/take equity is negative."""
        if variant.stakes != "cube":
            return np.zeros(len(boards), bool), None
        eq = self._doubler_view(boards, cubes, variant)
        return np.array([e["double_take"] < 0 for e in eq], bool), eq

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
