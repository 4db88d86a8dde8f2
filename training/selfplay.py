"""Self-play in lockstep: ``n`` games of one evaluator against itself, a ply at a time.

A driver of the game core (:mod:`nardy_ai.core`): TD training (:mod:`training.td`), its Ray
actors (:mod:`training.distributed`) and the search-target sampler
(:mod:`training.search_targets`) all play through :class:`SelfPlay`.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import torch

from nardy_ai import core
from nardy_ai.board import start_board
from nardy_ai.model import NeuralEvaluator, equity, n_outputs
from nardy_ai.movegen import segment_argmax
from nardy_ai.netset import NetSet, as_netset


@dataclass
class Timers:
    """Seconds spent per stage of training (for the benchmark's profile)."""

    seconds: dict = field(default_factory=lambda: defaultdict(float))

    def add(self, stage: str, t0: float) -> float:
        now = time.perf_counter()
        self.seconds[stage] += now - t0
        return now


@dataclass
class FinishedGame:
    """A finished self-play game: its afterstates (each from its mover's side), the values
    the network gave them during play, and the result level the last mover won."""

    boards: np.ndarray      # (T, 28) int8
    values: np.ndarray      # (T, K) float32
    level: int


class SelfPlay:
    """``n`` self-play games in lockstep; :meth:`ply` advances every game by one move."""

    def __init__(self, evaluator: NeuralEvaluator | NetSet, n: int, rng: np.random.Generator,
                 epsilon: float = 0.0, temperature: float = 0.0, timers: Timers | None = None):
        self.ev = evaluator
        self.set = as_netset(evaluator)
        self.v = evaluator.variant
        self.n = n
        self.rng = rng
        self.epsilon = epsilon
        self.temperature = temperature
        self.timers = timers or Timers()
        self.start = start_board(self.v)
        self.games = core.fresh(self.v, n)
        self.length = np.zeros(n, np.int64)
        self.cap = 256
        self.k = n_outputs(self.v)
        self.traj_boards = np.zeros((n, self.cap, 28), np.int8)
        self.traj_values = np.zeros((n, self.cap, self.k), np.float32)
        self.plies = 0

    def _grow(self) -> None:
        self.cap *= 2
        tb = np.zeros((self.n, self.cap, 28), np.int8)
        tv = np.zeros((self.n, self.cap, self.k), np.float32)
        tb[:, :self.cap // 2] = self.traj_boards
        tv[:, :self.cap // 2] = self.traj_values
        self.traj_boards, self.traj_values = tb, tv

    @property
    def boards(self) -> np.ndarray:
        """``(n, 28)`` the positions on roll, each from its mover's view."""
        return self.games.board

    def _roll(self) -> np.ndarray:
        """Every game's dice; a game's first turn under COM-7's opening roll gets one of the 30
        unequal rolls instead (the lot's dice, no lot recorded)."""
        dice = self.rng.integers(1, 7, (self.n, 2))
        if self.v.opening == "opening_roll":
            first = self.length == 0
            if first.any():
                dice[first] = core.random_opening_rolls(self.rng, int(first.sum()))
        return dice

    def _choose(self, after, values: np.ndarray) -> np.ndarray:
        eq = equity(values, self.v)
        if self.temperature > 0:
            key = eq / self.temperature + self.rng.gumbel(size=len(eq))
            pick = segment_argmax(key, after.offsets)
        else:
            pick = segment_argmax(eq, after.offsets, self.rng)
        if self.epsilon > 0:
            explore = self.rng.random(self.n) < self.epsilon
            if explore.any():
                counts = after.counts()[explore]
                pick[explore] = after.offsets[:-1][explore] + (self.rng.random(explore.sum()) * counts).astype(np.int64)
        return pick

    def values(self, boards: np.ndarray) -> np.ndarray:
        """The evaluator's outcome probabilities ``(M, K)`` of afterstates: each net of the
        set (one for a single net) over its rows in one forward pass, timed per stage."""
        tm = self.timers
        t0 = time.perf_counter()
        values = np.empty((len(boards), self.k), np.float32)
        groups = self.set.route(boards)
        if self.set.members:
            t0 = tm.add("classes", t0)
        for _, member, rows in groups:
            if isinstance(member, NeuralEvaluator):
                x = torch.from_numpy(member.encoder(boards[rows])).to(member.device)
                t0 = tm.add("encoding", t0)
                with torch.no_grad():
                    values[rows] = member.net(x).float().cpu().numpy()
                t0 = tm.add("forward", t0)
            else:
                values[rows] = member.probabilities(boards[rows])
                t0 = tm.add("bear-off database", t0)
        return values

    def ply(self) -> list[FinishedGame]:
        """Every game plays one move; returns the games that ended with it."""
        tm = self.timers
        t0 = time.perf_counter()
        after = core.legal(self.games, self._roll())
        t0 = tm.add("move generation", t0)
        values = self.values(after.boards)
        t0 = time.perf_counter()
        pick = self._choose(after, values)
        chosen = after.boards[pick]
        if self.length.max() >= self.cap:
            self._grow()
        rows = np.arange(self.n)
        self.traj_boards[rows, self.length] = chosen
        self.traj_values[rows, self.length] = values[pick]
        self.length += 1
        self.plies += 1
        self.games = core.play(self.games, rows, chosen)
        done = np.flatnonzero(self.games.over)
        finished = []
        if len(done):
            for g, lv in zip(done.tolist(), self.games.level[done].tolist()):
                T = int(self.length[g])
                finished.append(FinishedGame(self.traj_boards[g, :T].copy(),
                                             self.traj_values[g, :T].copy(), int(lv)))
            self.games = core.restart(self.games, done)         # a new game in that slot
            self.length[done] = 0
        tm.add("self-play other", t0)
        return finished


class LocalSelfPlay:
    """Self-play in this process: the learner's own network plays (the local backend)."""

    def __init__(self, play: SelfPlay):
        self.play = play

    def describe(self) -> str:
        return f"this process, {self.play.n} games in lockstep"

    def games(self) -> list[FinishedGame]:
        return self.play.ply()

    def after_update(self) -> None:
        pass

    def close(self) -> None:
        pass
