"""Scoring finished games (BG-6, BG-TT, LN-7, LN-8, BG-J, stakes): the rules layer's answer
to "how much did that game win?", shared by the game core, search, rollouts and agents.

Boards are afterstates of the winning play, from the winner's view (see :func:`result_levels`);
levels count from 1 (a single game / oin); points multiply the variant's ``scoring`` by the
stake.
"""

from __future__ import annotations

import numpy as np

from .board import OFF, OPP_BAR, OPP_OFF
from .variants import Variant, get_variant


def result_levels(boards: np.ndarray, variant: str | Variant) -> np.ndarray:
    """Result level (1 = lowest) of finished games, ``(N,)`` int64, from the winner's view.

    ``boards`` ``(N, 28)`` are the positions right after the winning play, not flipped: the
    mover is the winner (``board[26] == 15``) and negative counts, ``board[25]`` and
    ``board[27]`` are the loser's checkers, bar and borne-off checkers.

    - Stakes with dave (LN-8, CUBE-D): always 1; mars and oin do not exist.
    - Long nardy (LN-7): 1 oin; 2 mars if the loser has borne off none; with the ``koks``
      option, 3 if moreover a loser checker stands on the winner's points 1-12.  Our reading
      of koks: the loser still has a checker in the winner's home (winner's 1-6) or in its own
      first quarter (its points 19-24, the winner's 7-12; LN-1 geometry).
    - Trictrac (BG-TT, four levels): 1; 2 if the loser has borne off none; 3 (4 points) if
      moreover a loser checker is not in the loser's home (the winner's points 19-24), i.e.
      stands on the winner's points 1-18 or on the bar; 4 (8 points) if moreover one is on the
      bar.
    - Backgammon (BG-6): 1 single; 2 gammon if the loser has borne off none; 3 backgammon if
      moreover a loser checker is on the bar or in the winner's home (points 1-6).
    """
    v = get_variant(variant)
    b = np.asarray(boards)
    loser = b[:, :24] < 0
    none_off = b[:, OPP_OFF] == 0
    on_bar = b[:, OPP_BAR] > 0
    level = np.ones(len(b), np.int64)
    if v.stakes == "dave":
        return level
    level += none_off
    if v.is_long:
        if v.koks:
            level += none_off & loser[:, :12].any(1)
    elif len(v.scoring) == 4:
        outside_home = none_off & (loser[:, :18].any(1) | on_bar)
        level += outside_home
        level += outside_home & on_bar
    else:
        level += none_off & (loser[:, :6].any(1) | on_bar)
    return level


def result_points(board_after_winning_play: np.ndarray, variant: str | Variant) -> tuple[int, int]:
    """``(level, points)`` won by the side that just bore off its last checker (COM-6).

    ``points = variant.scoring[level - 1]`` times a stake of 1: a cubeless game (games with
    stakes are scored by :func:`nardy_ai.cube.game_points`).  Because no cube is ever turned
    here, the Jacoby option (BG-J) scores every game as 1 point while ``level`` still reports
    the gammon or backgammon.
    """
    v = get_variant(variant)
    b = np.asarray(board_after_winning_play)
    if b.shape != (28,) or b[OFF] != 15:
        raise ValueError("result_points needs one (28,) board whose mover has borne off 15 (COM-6)")
    levels = result_levels(b[None], v)
    return int(levels[0]), int(cubeless_points(levels, v)[0])


def stake_points(levels: np.ndarray, value: np.ndarray, turned: np.ndarray,
                 v: Variant) -> np.ndarray:
    """Points ``(N,)`` int64 of games won by bearing off at ``levels`` for the stakes ``value``
    (int64) with ``turned`` (a raise was ever taken): dave (LN-8) wins the stake; BG-J counts a
    single game while the cube was never turned (automatic doubles included); else the level's
    points times the stake.  The array form of :func:`nardy_ai.cube.game_points`."""
    levels = np.asarray(levels, np.int64)
    value = np.asarray(value, np.int64)
    if v.stakes == "dave":
        return value.copy()
    scoring = np.asarray(v.scoring, np.int64)
    base = scoring[levels - 1]
    if v.jacoby:
        base = np.where(np.asarray(turned, bool), base, scoring[0])
    return base * value


def cubeless_points(levels: np.ndarray, v: Variant) -> np.ndarray:
    """Points ``(N,)`` int64 of cubeless games (stake 1) won at ``levels``: the level's points,
    or 1 point for every game under BG-J (no cube is ever turned)."""
    scoring = np.asarray(v.scoring, np.int64)
    levels = np.asarray(levels, np.int64)
    return np.full(len(levels), scoring[0]) if v.jacoby else scoring[levels - 1]


def level_names(v: Variant) -> tuple[str, ...]:
    """Names of the result levels, lowest first (BG-6, BG-TT, LN-7, LN-8)."""
    if len(v.scoring) == 1:
        return ("win",)
    if v.is_long:
        return ("oin", "mars", "koks")[:len(v.scoring)]
    if len(v.scoring) == 3:
        return ("single", "gammon", "backgammon")
    return tuple(f"x{p}" for p in v.scoring)
