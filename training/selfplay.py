"""Self-play in lockstep: ``n`` games of one evaluator against itself, a ply at a time.

A call of the game driver (:func:`nardy_ai.driver.run`, one ply at a time, finished games
restarted at once; the dice of :class:`nardy_ai.driver.SeededDice` with a random opening roll
and no lot): TD training (:mod:`training.td`), its Ray
actors (:mod:`training.distributed`) and the search-target sampler
(:mod:`training.search_targets`) all play through :class:`SelfPlay`.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import torch

from nardy_ai import core, driver
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
        self.dice = driver.SeededDice(rng, opening="random")
        self._values = np.zeros((0, self.k), np.float32)
        self._t0 = 0.0

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

    name = "self-play"

    def choose(self, after, variant, rng) -> np.ndarray:
        """The driver's question: the evaluator's values of every afterstate (kept for the
        trajectories), then the greedy / softmax / epsilon choice."""
        self._t0 = self.timers.add("move generation", self._t0)
        self._values = self.values(after.boards)
        self._t0 = time.perf_counter()
        return self._choose(after, self._values)

    def _keep(self, rec: driver.Ply, _) -> None:
        """The trajectory of every game: the afterstate played and its values."""
        pick = rec.chosen
        if self.length.max() >= self.cap:
            self._grow()
        rows = np.arange(self.n)
        self.traj_boards[rows, self.length] = rec.after.boards[pick]
        self.traj_values[rows, self.length] = self._values[pick]
        self.length += 1
        self.plies += 1

    def _end(self, games: core.Games, done: np.ndarray) -> None:
        for g, lv in zip(done.tolist(), games.level[done].tolist()):
            T = int(self.length[g])
            self._finished.append(FinishedGame(self.traj_boards[g, :T].copy(),
                                               self.traj_values[g, :T].copy(), int(lv)))
        self.length[done] = 0

    def ply(self) -> list[FinishedGame]:
        """Every game plays one move; returns the games that ended with it (their slots start
        a new game at once)."""
        self._t0 = time.perf_counter()
        self._finished: list[FinishedGame] = []
        self.games = driver.run(self.games, self.dice, self, self.rng, plies=1, on_ply=self._keep,
                                on_end=self._end, restart=True).games
        self.timers.add("self-play other", self._t0)
        return self._finished


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
