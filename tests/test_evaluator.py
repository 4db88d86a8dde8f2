"""The evaluator protocol and its one loader (nardy_ai/evaluator.py): every evaluator satisfies
it, finished games are valued once (exactly, never by the evaluator), and load_evaluator
returns the right evaluator for a checkpoint, a registry name, bearoff and pubeval, with
one-line errors naming the file."""

import numpy as np
import pytest

from nardy_ai import registry
from nardy_ai.bearoff import BearoffEvaluator, bearoff_outcomes
from nardy_ai.bench.positions import random_positions
from nardy_ai.evaluator import Evaluator, load_evaluator, outcomes
from nardy_ai.model import CheckpointError, NeuralEvaluator, save_checkpoint
from nardy_ai.movegen import generate
from nardy_ai.netset import NetSet
from nardy_ai.pubeval import PubevalEvaluator
from nardy_ai.variants import get_variant
from movegen_helpers import hand_board

TD80 = "checkpoints/backgammon/td80_anneal/checkpoint.pt"
BG = get_variant("backgammon")


def afterstates(variant, seed=1):
    positions = random_positions(variant, n_games=4, plies=60, seed=seed)
    dice = np.random.default_rng(seed).integers(1, 7, (len(positions), 2))
    return generate(positions, dice, variant).boards


class Spy:
    """Records what it was asked; says 0.25 for every outcome."""

    variant = BG

    def __init__(self):
        self.asked = []

    def probabilities(self, boards):
        self.asked.append(np.array(boards))
        return np.full((len(boards), 5), 0.25, np.float32)


def test_every_evaluator_satisfies_the_protocol():
    net = NeuralEvaluator.create(BG, hidden=(4,), seed=0, device="cpu")
    for ev in (net, NetSet(BG, {"bearoff": BearoffEvaluator(BG)}, net), BearoffEvaluator(BG),
               PubevalEvaluator(BG), Spy()):
        assert isinstance(ev, Evaluator)


def test_finished_games_get_their_result_and_are_never_asked_about():
    won = hand_board({20: -3, 24: -2}, off=15, opp_off=10)
    gammon = hand_board({20: -15}, off=15)
    live = afterstates(BG)[:5]
    spy = Spy()
    out = outcomes(spy, np.concatenate([won[None], live, gammon[None]]))
    assert out[0].tolist() == [1, 0, 0, 0, 0] and out[-1].tolist() == [1, 1, 0, 0, 0]
    assert (out[1:-1] == 0.25).all()
    assert len(spy.asked) == 1 and np.array_equal(spy.asked[0], live)


def test_a_checkpoint_a_registry_name_and_its_bytes_load_the_same_net():
    boards = afterstates(BG)
    ev = load_evaluator(TD80, BG, "cpu")
    assert isinstance(ev, NeuralEvaluator)
    want = ev.probabilities(boards)
    assert np.array_equal(load_evaluator("td-gammon", "backgammon", "cpu").probabilities(boards), want)
    assert np.array_equal(load_evaluator("td:td-gammon", None, "cpu").probabilities(boards), want)
    with open(TD80, "rb") as f:
        assert np.array_equal(load_evaluator(f.read(), BG, "cpu").probabilities(boards), want)
    champion = load_evaluator("best", BG, "cpu")
    assert np.array_equal(champion.probabilities(boards),
                          load_evaluator(registry.champion(BG).path, BG, "cpu").probabilities(boards))


def test_bearoff_and_pubeval_by_name():
    db = load_evaluator("bearoff", "long")
    assert isinstance(db, BearoffEvaluator) and db.variant.id == "long"
    boards = afterstates(BG, seed=5)
    pub = load_evaluator("pubeval")
    assert isinstance(pub, PubevalEvaluator) and pub.variant.id == "backgammon"
    assert pub.probabilities(boards).shape == (len(boards), 5)
    with pytest.raises(CheckpointError, match="needs a variant"):
        load_evaluator("bearoff")


def test_the_bearoff_evaluator_is_the_database_and_finished_games_exact():
    home = hand_board({1: 3, 2: 2, 5: 1, 19: -2, 23: -4}, off=9, opp_off=9)
    done = hand_board({20: -15}, off=15)
    got = BearoffEvaluator(BG).probabilities(np.stack([home, done]))
    assert np.allclose(got[0], bearoff_outcomes(home[None], BG)[0], atol=1e-7)
    assert got[1].tolist() == [1, 1, 0, 0, 0] and got.dtype == np.float32


def test_errors_name_the_file_and_the_reason(tmp_path):
    with pytest.raises(CheckpointError, match=f"^{TD80}: checkpoint is for variant 'backgammon', not 'long'$"):
        load_evaluator(TD80, "long")
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match=f"{junk}: not a nardy_ai checkpoint or corrupt"):
        load_evaluator(junk, "backgammon")
    with pytest.raises(CheckpointError, match="the checkpoint bytes: not a nardy_ai checkpoint"):
        load_evaluator(b"junk", "backgammon")
    with pytest.raises(CheckpointError, match="no search depth"):
        load_evaluator("td-gammon@1ply", "backgammon")
    with pytest.raises(CheckpointError, match="does not exist"):
        load_evaluator(tmp_path / "missing.pt", "backgammon")


def test_siblings_of_the_family_are_kept_or_adopted_on_request(tmp_path):
    net = NeuralEvaluator.create(BG, hidden=(4,), seed=2, device="cpu")
    path = tmp_path / "bg.pt"
    save_checkpoint(path, {"kind": "model", "evaluator": net.state()})
    with pytest.raises(CheckpointError, match="not 'short_caucasian'"):
        load_evaluator(path, "short_caucasian")
    kept = load_evaluator(path, "short_caucasian", siblings="keep")
    adopted = load_evaluator(path, "short_caucasian", siblings="adopt")
    assert kept.variant.id == "backgammon" and adopted.variant.id == "short_caucasian"
    boards = afterstates(BG)
    assert np.array_equal(kept.probabilities(boards), net.probabilities(boards))
    assert np.array_equal(adopted.probabilities(boards), net.probabilities(boards))
    with pytest.raises(CheckpointError, match=f"^{path}: .*not 'long'"):
        load_evaluator(path, "long", siblings="keep")
