"""experiments/class_swap.py: the evaluator that values some classes' afterstates by another
evaluator routes each afterstate by its class and leaves the others to the base net set."""

from __future__ import annotations

import numpy as np
import pytest

from nardy_ai.bench.positions import random_positions
from nardy_ai.classes import class_names, position_classes
from nardy_ai.evaluator import load_evaluator
from nardy_ai.pubeval import PubevalEvaluator
from nardy_ai.variants import get_variant

from experiment_helpers import load_experiment


@pytest.mark.parametrize("classes", [("race",), ("contact", "crashed")])
def test_named_classes_take_the_other_evaluators_values(classes):
    v = get_variant("backgammon")
    base = load_evaluator("bg-champion", v)
    other = PubevalEvaluator(v)
    boards = random_positions("backgammon", 16, 200, seed=5)       # every class: random play ends in races
    cls = position_classes(boards, v)
    picked = np.isin(cls, [class_names(v).index(c) for c in classes])
    assert picked.any() and not picked.all()
    mixed = load_experiment("class_swap").ClassesFrom(base, other, classes).probabilities(boards)
    assert np.allclose(mixed[picked], other.probabilities(boards[picked]), atol=1e-6)
    assert np.allclose(mixed[~picked], base.probabilities(boards[~picked]), atol=1e-6)
