"""Neural agents: play the afterstate with the best equity according to an evaluator, at 0 ply
(greedy: every afterstate of the whole batch in one forward pass) or with an n-ply expectimax
search (:mod:`nardy_ai.search`: 21 rolls per level, gnubg-style move filters).

Spec: ``td:PATH`` (a checkpoint written by ``nardy train``), ``td:PATH@1ply``,
``td:PATH@2ply`` (``@0ply`` is the default).  Afterstates that bear off the last checker
are valued exactly, not by the net.
"""

from __future__ import annotations

import re

import numpy as np

from ..cube import CubeViews, cube_efficiency, double_decision, take_decision
from ..errors import UnknownAgent
from ..model import NeuralEvaluator
from ..netset import load_evaluator
from ..movegen import Afterstates
from ..search import (MAX_PLIES, MoveFilter, best_afterstates, filters_for, neural_evaluation,
                      search_equity, search_values)
from ..variants import Variant
from .base import Agent
from .pubeval import is_race

_PLIES = re.compile(r"^(?P<path>.+)@(?P<plies>\d+)ply$")


class NeuralAgent(Agent):
    """Player on a :class:`~nardy_ai.model.NeuralEvaluator` searching ``plies`` deep
    (0 = greedy), with the move filters of :data:`nardy_ai.search.DEFAULT_FILTERS` unless
    ``filters`` are given."""

    def __init__(self, evaluator: NeuralEvaluator, name: str = "td", plies: int = 0,
                 filters: tuple[MoveFilter, ...] | None = None):
        self.evaluator = evaluator
        self.evaluation = neural_evaluation(evaluator)
        self.name = name
        self.filters = filters_for(plies, filters)
        self.plies = plies

    def choose(self, after: Afterstates, variant: Variant, rng: np.random.Generator) -> np.ndarray:
        return best_afterstates(after, self.evaluation, self.plies, self.filters, rng)

    def equity(self, boards: np.ndarray, variant: Variant) -> np.ndarray:
        """Cubeless equity of afterstates for the side that just played, at this agent's depth."""
        return search_equity(boards, self.evaluation, self.plies)

    def _cube_inputs(self, boards: np.ndarray, on_roll: np.ndarray, variant: Variant):
        """Outcome probabilities of the player deciding at this agent's depth, and Janowski's x."""
        boards = np.asarray(boards, np.int8)
        probs = np.empty((len(boards), self.evaluation.size))
        for flag in (False, True):
            rows = np.flatnonzero(on_roll == flag)
            if len(rows):
                probs[rows] = search_values(boards[rows], self.evaluation, self.plies, on_roll=flag)
        race = None if variant.is_long else is_race(boards)
        return probs, cube_efficiency(boards, variant, race)

    def double(self, boards: np.ndarray, cubes, variant: Variant):
        """Double / offer (CUBE-1, CUBE-D) when Janowski's cubeful equity of double/take and
        double/pass both beat no double (:func:`nardy_ai.cube.double_decision`)."""
        probs, x = self._cube_inputs(boards, np.ones(len(boards), bool), variant)
        return double_decision(probs, cubes, variant, x)

    def take(self, boards: np.ndarray, cubes, variant: Variant):
        """Take when the cubeful equity after the take is at least -1 stake
        (:func:`nardy_ai.cube.take_decision`); the doubler is on roll unless ``on_roll``."""
        on_roll = CubeViews.from_dicts(cubes, variant).on_roll
        probs, x = self._cube_inputs(boards, on_roll, variant)
        return take_decision(probs, cubes, variant, x)

    def beaver(self, boards: np.ndarray, cubes, variant: Variant):
        """Beaver (BG-B) when the equity after the take is positive: the double was a mistake."""
        _, eq = self.take(boards, cubes, variant)
        return np.array([e["take"] > 0 for e in eq], bool), eq


def parse_td_spec(arg: str) -> tuple[str, int]:
    """``PATH`` or ``PATH@Nply`` -> ``(PATH, N)``."""
    m = _PLIES.match(arg)
    if not m:
        return arg, 0
    plies = int(m["plies"])
    if plies > MAX_PLIES:
        raise UnknownAgent(f"td:{arg}: a {plies}-ply search is not offered; use @0ply to "
                           f"@{MAX_PLIES}ply")
    return m["path"], plies


def td_factory(arg: str, variant: Variant) -> NeuralAgent:
    """``td:PATH[@Nply]`` -> an agent on the checkpoint at PATH (refusing another variant)."""
    if not arg:
        raise UnknownAgent("agent 'td' needs a checkpoint: td:checkpoints/<variant>/<file>.pt[@1ply]")
    path, plies = parse_td_spec(arg)
    ev = load_evaluator(path, variant)
    return NeuralAgent(ev, name=f"td:{arg}", plies=plies)
