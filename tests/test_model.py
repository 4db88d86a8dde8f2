"""Evaluator outputs, equity and checkpoints (nardy_ai/model.py) and encoders (encoding.py)."""

import numpy as np
import pytest
import torch

from nardy_ai.bench.positions import random_positions
from nardy_ai.board import start_board
from nardy_ai.encoding import ENCODERS, UnknownEncoder, get_encoder
from nardy_ai.model import (CheckpointError, NeuralEvaluator, equity, flip_outcomes, load_checkpoint, n_outputs,
                            outcome_targets, save_checkpoint)
from nardy_ai.evaluator import load_evaluator


def test_outputs_per_scoring():
    """BG-6: 5 outputs as gnubg; LN-7: win, mars win, mars loss; BG-TT: 7; LN-8: 1."""
    assert n_outputs("backgammon") == 5
    assert n_outputs("long") == 3
    assert n_outputs("short_trictrac") == 7
    assert n_outputs("long_dave") == 1


def test_equity_of_exact_outcomes_is_the_score():
    """A certain backgammon win is worth 3 points (BG-6); a certain x8 trictrac win 8 (BG-TT)."""
    for variant, points in (("backgammon", (1, 2, 3)), ("short_trictrac", (1, 2, 4, 8)),
                            ("long", (1, 2)), ("long_dave", (1,))):
        for level, p in enumerate(points, start=1):
            z = outcome_targets(np.array([level]), variant)
            assert equity(z, variant)[0] == pytest.approx(p)
            assert equity(flip_outcomes(z, variant), variant)[0] == pytest.approx(-p)


def test_flip_is_an_involution_and_negates_equity():
    rng = np.random.default_rng(0)
    p = rng.random((10, 5)).astype(np.float32)
    assert np.allclose(flip_outcomes(flip_outcomes(p, "backgammon"), "backgammon"), p)
    assert np.allclose(equity(flip_outcomes(p, "backgammon"), "backgammon"), -equity(p, "backgammon"))
    t = torch.from_numpy(p)
    assert torch.allclose(flip_outcomes(t, "backgammon"), torch.from_numpy(flip_outcomes(p, "backgammon")))


@pytest.mark.parametrize("name", list(ENCODERS))
def test_encoders_shape_and_range(name):
    enc = ENCODERS[name]
    variant = "long" if enc.family == "long" else "backgammon"
    boards = random_positions(variant, n_games=8, plies=30, seed=2)
    x = enc(boards)
    assert x.shape == (len(boards), enc.n_features) and x.dtype == np.float32
    assert np.isfinite(x).all() and x.min() >= -5 and x.max() <= 10
    # Different positions get different inputs.
    assert len({r.tobytes() for r in x}) == len({b.tobytes() for b in boards})


def test_tdgammon_encoding_of_the_start():
    x = get_encoder("tdgammon", "backgammon")(start_board("backgammon")[None])[0]
    # Point 6: five mover checkers -> 1, 1, 1, (5 - 3) / 2.
    assert x[5 * 8:5 * 8 + 4].tolist() == [1, 1, 1, 1]
    # Point 1: two opponent checkers -> opponent units 1, 1, 0, 0.
    assert x[4:8].tolist() == [1, 1, 0, 0]
    assert x[192:196].tolist() == [0, 0, 0, 0]


def test_encoder_family_is_checked():
    with pytest.raises(UnknownEncoder, match="long nardy"):
        get_encoder("long", "backgammon")
    with pytest.raises(UnknownEncoder, match="unknown encoder"):
        get_encoder("alphazero", "long")


def test_checkpoint_round_trip_and_refusals(tmp_path):
    ev = NeuralEvaluator.create("backgammon", hidden=(16,), seed=3, device="cpu")
    path = tmp_path / "a.pt"
    save_checkpoint(path, {"kind": "model", "evaluator": ev.state()})
    boards = random_positions("backgammon", n_games=4, plies=10, seed=0)
    back = load_evaluator(path, "backgammon")
    assert np.allclose(back.probabilities(boards), ev.probabilities(boards))
    assert not list(tmp_path.glob("*.tmp*"))                     # written atomically
    with pytest.raises(CheckpointError, match="not 'long'"):
        load_evaluator(path, "long")
    state = ev.state()
    state["encoder_version"] = "0"
    save_checkpoint(tmp_path / "old.pt", {"kind": "model", "evaluator": state})
    with pytest.raises(CheckpointError, match="encoder tdgammon version 0"):
        load_evaluator(tmp_path / "old.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match="corrupt"):
        load_checkpoint(tmp_path / "junk.pt")
    torch.save({"anything": 1}, tmp_path / "foreign.pt")
    with pytest.raises(CheckpointError, match="not a nardy_ai checkpoint"):
        load_checkpoint(tmp_path / "foreign.pt")
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "missing.pt")


def test_wide_nets_take_fewer_rows_a_pass_on_the_cpu():
    """cpu_rows: 2,048 rows for the 80-unit nets, fewer for wide ones (activations kept near
    2 MiB), never under 256, the widest hidden layer deciding."""
    from nardy_ai.model import CPU_ROWS, cpu_rows
    assert cpu_rows((80,)) == CPU_ROWS == 2048
    assert cpu_rows((512,)) == 1024
    assert cpu_rows((1024,)) == 512
    assert cpu_rows((80, 1024)) == 512
    assert cpu_rows((1 << 20,)) == 256
    assert cpu_rows(()) == CPU_ROWS


@pytest.mark.parametrize("activation", ["sigmoid", "relu", "tanh", "elu"])
def test_inference_pass_equals_the_training_forward(activation):
    """MLP.infer (activations in place) gives forward's values bit for bit, and the
    evaluator's probabilities are those of forward over its blocks of cpu_rows rows."""
    from nardy_ai.model import cpu_rows
    ev = NeuralEvaluator.create("long", "long", hidden=(1024, 40), activation=activation, seed=3, device="cpu")
    boards = random_positions("long", n_games=12, plies=60, seed=2)
    x = torch.from_numpy(ev.encoder(boards))
    with torch.no_grad():
        assert torch.equal(ev.net.infer(x.clone()), ev.net(x))
        blocks = torch.cat([ev.net(xb) for xb in torch.split(x, cpu_rows(ev.hidden))]).numpy()
    assert np.array_equal(ev.probabilities(boards), blocks)
