"""Agents shared by the tests: scripted ones (a fixed checker-play rule, fixed cube answers), so
that a test's games are deterministic where it needs them to be and its expectations follow from
the script; and tiny untrained nets, real evaluators for ``td:`` specs at almost no cost."""

from __future__ import annotations

from typing import Callable

import numpy as np

from nardy_ai.agents import Agent, make_agent, segment_argmax
from nardy_ai.model import NeuralEvaluator, save_checkpoint


def tiny_net(path, variant, seed: int) -> NeuralEvaluator:
    """Saves an untrained net with 8 hidden units, made from ``seed``, as a checkpoint at ``path``
    (the agent ``td:{path}`` plays with it) and returns it.  Where a check needs a reference's
    own valuations and not good play, it serves as well as a trained net."""
    ev = NeuralEvaluator.create(variant, hidden=(8,), seed=seed, device="cpu")
    save_checkpoint(path, {"kind": "model", "evaluator": ev.state()})
    return ev


class FirstPlay(Agent):
    """Always the first afterstate the generator lists: deterministic, no random draws."""

    name = "first"

    def choose(self, after, variant, rng):
        return after.offsets[:-1].copy()


class ScorePlay(Agent):
    """Plays the afterstate that ``score(after)`` (one value per afterstate row) ranks highest,
    or lowest with ``worst=True``; ties go to the first listed."""

    def __init__(self, name: str, score: Callable[..., np.ndarray], *, worst: bool = False):
        self.name, self.score, self.worst = name, score, worst

    def choose(self, after, variant, rng):
        scores = np.asarray(self.score(after), float)
        return segment_argmax(-scores if self.worst else scores, after.offsets)


class CubeScript(Agent):
    """Checker play of a built-in agent (``plays``, e.g. "heuristic") with the same cube answer
    every time: doubles whenever it may (``doubles=True``) or never, takes every double
    (``takes=True``) or passes it."""

    def __init__(self, name: str, plays: str, variant, *, doubles: bool, takes: bool = True):
        self.name, self.plays = name, make_agent(plays, variant)
        self.doubles, self.takes = doubles, takes

    def choose(self, after, variant, rng):
        return self.plays.choose(after, variant, rng)

    def double(self, boards, cubes, variant):
        return np.full(len(boards), self.doubles), None

    def take(self, boards, cubes, variant):
        return np.full(len(boards), self.takes), None
