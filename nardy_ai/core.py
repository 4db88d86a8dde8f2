"""The game core: a batch of games as arrays, and pure functions that advance it (issue #13).

In the spirit of pgx: a :class:`Games` holds ``N`` games at once (boards, the player on roll,
the stake, results, ply counts), and every step is a function from a :class:`Games` to a new
one; nothing here draws dice from a hidden stream, asks an agent or writes a record.  The
game driver (:mod:`nardy_ai.driver`: dice sources, one checked step, the run loop) plays it for
the game runner, self-play, rollouts, the samplers and the environments; a researcher's own
learner may drive it directly:

>>> import numpy as np
>>> from nardy_ai import core
>>> rng = np.random.default_rng(0)
>>> games, _ = core.start("backgammon", 4, rng)
>>> while not games.over.all():
...     dice = core.roll(games, rng)
...     idx = np.flatnonzero(~games.over)
...     after = core.legal(games, dice, idx)                 # every legal afterstate, batched
...     pick = after.offsets[:-1] + (rng.random(len(idx)) * after.counts()).astype(int)
...     games = core.play(games, idx, after.boards[pick])    # random play
>>> games.points.shape
(4,)

Conventions.  ``board[g]`` is game ``g``'s position from the view of the player on roll
(:mod:`nardy_ai.board`); ``turn[g]`` is that player (0 white, 1 black).  A game is ``over``
once a side has borne off its 15 checkers (COM-6) or refused a raise; ``winner``, ``level``
(1 single / oin, 2 gammon / mars, 3 backgammon / koks, 4 BG-TT's fourth) and ``points`` (the
stake included) are then set, and later steps leave it as it is.  Dice: :func:`roll` draws a
roll for *every* game (finished or not) from the generator it is given, so game ``g``'s dice
depend only on the seed and the batch, never on how other games went.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .board import OFF, flip, start_board
from . import cube
from .cube import NOBODY, Stakes, stakes_variant
from .errors import UnknownVariant
from .movegen import Afterstates, generate
from .scoring import cubeless_points, result_levels
from .variants import Variant, get_variant


@dataclass(frozen=True)
class Games:
    """``N`` games of one variant; every array has the games on its first axis.

    ``board`` ``(N, 28)`` int8, the player on roll's view; ``turn`` ``(N,)`` int64 the player on
    roll; ``first`` the player who moved first; ``plies`` the turns played; ``over``,
    ``winner``, ``level``, ``points`` and ``passed`` (a refused raise ended the game) the
    results; ``lot`` ``(N, 2)`` the deciding COM-7 lot dice [white's, black's] (zeros when
    white always starts, BG-TT); ``stakes`` the cube / dave (:class:`nardy_ai.cube.Stakes`) or
    None for cubeless games at stake 1; ``dice`` ``(N, 2)`` the roll of the turn in progress
    (:func:`rolled`; None before the first roll), which :func:`legal` uses when given none.
    """
    variant: Variant
    board: np.ndarray
    turn: np.ndarray
    first: np.ndarray
    plies: np.ndarray
    over: np.ndarray
    winner: np.ndarray
    level: np.ndarray
    points: np.ndarray
    passed: np.ndarray
    lot: np.ndarray
    stakes: Stakes | None = None
    dice: np.ndarray | None = None

    @property
    def n(self) -> int:
        """The number of games."""
        return len(self.board)

    def running(self) -> np.ndarray:
        """Indices of the games not over yet."""
        return np.flatnonzero(~self.over)


def opening_lots(rng: np.random.Generator, n: int):
    """COM-7 lot for ``n`` games: each side rolls one die, ties rolled again.  Returns the
    deciding rolls ``(n, 2)`` [white, black], the first mover of each game and every round of
    rolls as ``(games, rolls)`` pairs (for records and BG-M's automatic doubles)."""
    decided = np.zeros((n, 2), np.int64)
    rounds: list[tuple[np.ndarray, np.ndarray]] = []
    pending = np.arange(n)
    while len(pending):
        r = rng.integers(1, 7, (len(pending), 2))
        rounds.append((pending, r))
        decided[pending] = r
        pending = pending[r[:, 0] == r[:, 1]]
    return decided, (decided[:, 1] > decided[:, 0]).astype(np.int64), rounds


def start(variant: str | Variant, n: int, rng: np.random.Generator, stakes: str | None = None):
    """``n`` new games: the start position (COM-2 / LN-2), the first mover decided by the
    variant's opening (COM-7: a lot of one die each, ties again; BG-TT: white) with dice from
    ``rng``, and the stake (``stakes``: None / ``"none"`` cubeless, ``"cube"``, ``"dave"``,
    ``"dave-geometric"``, ``"dave-arithmetic"``).  Returns ``(games, lot_rounds)``:
    ``lot_rounds`` lists every round of lot rolls as ``(games, rolls)`` (empty when white
    always starts).  BG-M's automatic doubles (equal lot dice, up to ``murphy_cap``) are
    applied to the stake; :func:`automatic_doubles` says how many each game had."""
    v = stakes_variant(variant, stakes)
    staked = stakes not in (None, "none")
    lot = np.zeros((n, 2), np.int64)
    first = np.zeros(n, np.int64)
    rounds: list = []
    if v.opening in ("opening_roll", "lot_then_roll"):
        lot, first, rounds = opening_lots(rng, n)
    elif v.opening != "white_first":
        raise UnknownVariant(f"variant {v.id}: unknown opening {v.opening!r} (COM-7)")
    st = None
    if staked:
        st = Stakes.start(v, n)
        autos = automatic_doubles(v, n, rounds)
        for k in range(int(autos.max(initial=0))):
            st = cube.apply(st, NOBODY, "auto", np.flatnonzero(autos > k))
    return replace(fresh(v, n), turn=first.copy(), first=first, lot=lot, stakes=st), rounds


def fresh(variant: str | Variant, n: int) -> Games:
    """``n`` games at the start position with white on roll, no lot drawn and no stakes: for
    loops where the first mover does not matter (self-play, samplers), which draw their own
    opening dice (:func:`random_opening_rolls`)."""
    v = get_variant(variant)
    zeros = np.zeros(n, np.int64)
    return Games(v, np.repeat(start_board(v)[None], n, axis=0), zeros.copy(), zeros.copy(),
                 zeros.copy(), np.zeros(n, bool), zeros.copy(), zeros.copy(), zeros.copy(),
                 np.zeros(n, bool), np.zeros((n, 2), np.int64))


def automatic_doubles(v: Variant, n: int, lot_rounds) -> np.ndarray:
    """BG-M: per game, the automatic doubles its lot gave (one per tie of the lot dice, at most
    ``murphy_cap``; 0 without the cube or the option)."""
    ties = np.zeros(n, np.int64)
    if v.stakes == "cube" and v.murphy_cap:
        for games, r in lot_rounds:
            ties[games] += r[:, 0] == r[:, 1]
    return np.minimum(ties, v.murphy_cap)


def roll(games: Games, rng: np.random.Generator) -> np.ndarray:
    """The dice ``(N, 2)`` of every game's next turn, drawn from ``rng`` for all ``N`` games;
    a game's first turn under ``opening_roll`` (COM-7) plays the lot's two dice instead."""
    dice = rng.integers(1, 7, (games.n, 2))
    if games.variant.opening == "opening_roll":
        first = games.plies == 0
        if first.any():
            dice[first] = games.lot[first]
    return dice


def rolled(games: Games, rng: np.random.Generator) -> Games:
    """The games with the dice of their next turn drawn (:func:`roll`, the same draws) and kept
    in ``games.dice``: the state-holds-the-roll style of pgx."""
    return replace(games, dice=roll(games, rng))


def legal(games: Games, dice: np.ndarray | None = None, idx: np.ndarray | None = None,
          notation: bool = False) -> Afterstates:
    """Every legal afterstate (:func:`nardy_ai.movegen.generate`) of the games ``idx`` (all
    when None) with their rows of ``dice`` ``(N, 2)`` (default: ``games.dice``, see
    :func:`rolled`): one batched call for all of them."""
    if dice is None:
        if games.dice is None:
            raise ValueError("legal() needs dice: pass them, or roll with rolled() first")
        dice = games.dice
    if idx is None:
        return generate(games.board, dice, games.variant, notation=notation)
    return generate(games.board[idx], np.asarray(dice)[idx], games.variant, notation=notation)


def play(games: Games, idx: np.ndarray, afterstates: np.ndarray) -> Games:
    """The games after the players on roll in ``idx`` played to ``afterstates`` ``(len(idx),
    28)`` (their own view, as :func:`legal` gives them): a game whose mover bore off its last
    checker ends (COM-6) and is scored (BG-6, BG-TT, LN-7, LN-8; with stakes, times the stake,
    BG-J); the others pass the turn (the board flips to the next mover's view)."""
    v = games.variant
    idx = np.asarray(idx, np.int64)
    new = np.asarray(afterstates)
    board, turn, plies = games.board.copy(), games.turn.copy(), games.plies.copy()
    over, winner, level, points = games.over.copy(), games.winner.copy(), games.level.copy(), games.points.copy()
    won = new[:, OFF] == 15
    if won.any():
        g = idx[won]
        lv = result_levels(new[won], v)
        over[g], winner[g], level[g] = True, turn[g], lv
        if games.stakes is None:
            points[g] = cubeless_points(lv, v)
        else:
            points[g] = cube.game_points(games.stakes, lv, v, g)
    board[idx] = flip(new, v)
    turn[idx] ^= 1
    plies[idx] += 1
    return replace(games, board=board, turn=turn, plies=plies, over=over, winner=winner,
                   level=level, points=points, dice=None)        # the turn's roll is used up


def restart(games: Games, idx: np.ndarray) -> Games:
    """The games ``idx`` started again from the start position (the same player on roll, no
    result, no ply, the stake back to 1): continuous play in loops that keep a fixed batch of
    running games (self-play, samplers)."""
    v = games.variant
    g = np.asarray(idx, np.int64)
    board = games.board.copy()
    board[g] = start_board(v)
    out = {}
    for name in ("plies", "winner", "level", "points"):
        a = getattr(games, name).copy()
        a[g] = 0
        out[name] = a
    over, passed = games.over.copy(), games.passed.copy()
    over[g] = passed[g] = False
    st = games.stakes
    if st is not None:
        st = st.put(g, st.fresh(len(g)))
    return replace(games, board=board, over=over, passed=passed, stakes=st, **out)


# --- stakes: raises, takes, beavers and passes (CUBE-1, CUBE-D, BG-B) -------------------------

def may_double(games: Games, idx: np.ndarray) -> np.ndarray:
    """Whether the player on roll in each of the games ``idx`` may double / offer now (before
    rolling): the game has stakes, is running, and :func:`nardy_ai.cube.may_double`."""
    idx = np.asarray(idx, np.int64)
    if games.stakes is None:
        return np.zeros(len(idx), bool)
    return cube.may_double(games.stakes, games.turn[idx], idx) & ~games.over[idx]


def cube_action(games: Games, idx: np.ndarray, player, action: str) -> Games:
    """The games ``idx`` after ``player`` (one per game, or one for all) does a stakes
    ``action`` there (``double``, ``take``, ``pass``, ``beaver``, ``auto``: checked by
    :func:`nardy_ai.cube.apply`, which raises :class:`~nardy_ai.errors.IllegalCubeAction`
    naming the rule).  A pass ends the game: the raiser wins the current stake, at level 1
    (CUBE-1, CUBE-D)."""
    idx = np.asarray(idx, np.int64)
    if not len(idx):
        return games
    st = cube.apply(games.stakes, player, action, idx)
    if action != "pass":
        return replace(games, stakes=st)
    over, passed = games.over.copy(), games.passed.copy()
    win, level, points = games.winner.copy(), games.level.copy(), games.points.copy()
    over[idx] = passed[idx] = True
    win[idx], level[idx], points[idx] = st.winner[idx], 1, st.value[idx]
    return replace(games, over=over, passed=passed, winner=win, level=level, points=points, stakes=st)


def random_opening_rolls(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` opening rolls ``(n, 2)`` drawn at once, each one of the 30 rolls with unequal dice
    equally likely: the distribution of a COM-7 lot's two dice, for loops that need no record
    of the lot (self-play)."""
    return _OPENING_ROLLS[rng.integers(0, len(_OPENING_ROLLS), n)]


_OPENING_ROLLS = np.array([(a, b) for a in range(1, 7) for b in range(1, 7) if a != b])


def random_choice(afterstates: Afterstates, rng: np.random.Generator) -> np.ndarray:
    """One legal afterstate row per position, uniformly at random (the benchmarks' samplers'
    choice: one uniform float per position)."""
    counts = afterstates.counts()
    return afterstates.offsets[:-1] + (rng.random(len(counts)) * counts).astype(np.int64)

