"""Cubeful rollouts (issue #12): the value of raising and of not raising in a position, by
playing it out with an agent that decides the cube (or dave) inside the games.

For each position (before the roll, the root player on roll, with its stake) two branches are
played ``games`` times each on the same dice (common random numbers: game ``c`` of both
branches rolls the same dice, the first two rolls stratified over the 36 as in
:mod:`nardy_ai.rollout`):

no double (ND)
    the stake as it is; the root player rolls without raising, and from the next turn on both
    players decide raises, takes and passes with the agent (:class:`nardy_ai.driver.CubeStage`);
double / take (DT)
    the stake raised to ``next`` and held by the opponent (it took), then the same.

A game ends when a player bears off (its points: the stake, with the variant's result level
under the cube, BG-J, LN-8) or passes a raise (the stake before the raise), or after
``truncate`` plies, where the player on roll's cubeful 0-ply value
(:func:`nardy_ai.cubeful.node_values`: Janowski with the player's own cube option) scores it
— gnubg's truncated cubeful rollouts.  Results are points for the root player in units of the
root's current stake, with standard errors over the games; double/pass is +1 by definition.

Everything runs in one lockstep batch per chunk of positions: a call of the game driver
(:func:`nardy_ai.driver.run`) from the given boards, with :class:`nardy_ai.driver.StratifiedDice`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from . import core, driver
from .agents.base import Agent
from .cube import CENTRE, Stakes
from .cubeful import node_values
from .driver import CubeStage, StratifiedDice
from .variants import Variant


@dataclass
class CubefulRollout:
    """Per position ``(N,)``: ``no_double`` and ``double_take`` (the root player's mean points
    in units of its current stake) with standard errors ``*_se``, ``double_pass`` (+1), the
    games per branch and the truncation."""
    no_double: np.ndarray
    double_take: np.ndarray
    no_double_se: np.ndarray
    double_take_se: np.ndarray
    games: int
    truncate: int | None

    @property
    def double_pass(self) -> np.ndarray:
        return np.ones_like(self.no_double)


def _start(boards: np.ndarray, cubes: Stakes, v: Variant, games: int) -> core.Games:
    """The batch: row ``(p * 2 + b) * games + c`` is game ``c`` of branch ``b`` (0 ND, 1 DT) of
    position ``p``; player 0 is the root, on roll, with the stake ``cubes`` gives it (its view),
    raised in the DT branch to ``next`` and held by player 1, who took."""
    P = len(boards)
    n = P * 2 * games
    pos = np.repeat(np.arange(P), 2 * games)
    dt = np.flatnonzero(np.tile(np.repeat([False, True], games), P))
    root = cubes.select(pos)
    access = root.access
    stakes = replace(root.fresh(n), beaver=bool(v.beaver), value=root.value, next=root.next,
                     turned=root.turned, owner=np.where(access == 0, CENTRE, np.where(access > 0, 0, 1)))
    stakes = stakes.put(dt, stakes.select(dt).raised(access=-1))
    zeros = np.zeros(n, np.int64)
    g = core.Games(v, np.asarray(boards, np.int8)[pos], zeros.copy(), zeros.copy(),
                   np.full(n, 10, np.int64), np.zeros(n, bool), zeros.copy(), zeros.copy(), zeros.copy(),
                   np.zeros(n, bool), np.zeros((n, 2), np.int64), stakes)
    return g


def cubeful_rollout(boards, cubes: Stakes, variant: Variant, agent: Agent, games: int = 144,
                    truncate: int | None = 10, seed: int = 0, chunk: int = 32,
                    max_plies: int = 5000) -> CubefulRollout:
    """Roll out positions ``boards`` ``(N, 28)`` (the root player on roll) with stakes
    ``cubes`` (the root's view) under ``variant`` (with its stakes: cube or dave), ``agent``
    (needs ``evaluator`` for the truncation: a neural agent) playing both sides and deciding
    the cube; see the module docstring."""
    boards = np.asarray(boards, np.int8)
    v = variant
    N = len(boards)
    nd, dt = np.empty(N), np.empty(N)
    nd_se, dt_se = np.empty(N), np.empty(N)
    rng = np.random.default_rng([seed, 0x63756265])
    for lo in range(0, N, chunk):
        rows = np.arange(lo, min(N, lo + chunk))
        pts = _play_chunk(boards[rows], cubes.select(rows), v, agent, games, truncate, seed, rng, max_plies)
        per = pts.reshape(len(rows), 2, games)
        mean = per.mean(axis=2)
        se = per.std(axis=2, ddof=1) / np.sqrt(games) if games > 1 else np.zeros_like(mean)
        value = cubes.value[rows].astype(float)
        nd[rows], dt[rows] = mean[:, 0] / value, mean[:, 1] / value
        nd_se[rows], dt_se[rows] = se[:, 0] / value, se[:, 1] / value
    return CubefulRollout(nd, dt, nd_se, dt_se, games, truncate)


def _play_chunk(boards, cubes, v, agent, games, truncate, seed, rng, max_plies) -> np.ndarray:
    """Points of every game of the chunk for the root player (player 0), ``(P * 2 * games,)``."""
    state = _start(boards, cubes, v, games)
    dice = StratifiedDice(seed, np.arange(games))     # game c of every branch: the same dice
    limit, too_long = driver.plies_cap(max_plies, truncate, lambda games, idx: (
        f"cubeful rollout: a game has no winner after {max_plies} plies (COM-6)"))
    # The root rolls without raising (ND) / after the take (DT): the stakes stage from ply 1.
    state = driver.run(state, dice, agent, rng, max_plies=limit, too_long=too_long,
                       cube=CubeStage((agent, agent), from_ply=1)).games
    points = np.where(state.winner == 0, state.points, -state.points).astype(float)
    live = state.running()
    if len(live):                                     # truncated: the cubeful value of the player on roll
        views = state.stakes.views(live, state.turn[live])
        value = node_values(state.board[live], views, agent.evaluator, 0, v)[2]
        points[live] = np.where(state.turn[live] == 0, value, -value)
    return points
