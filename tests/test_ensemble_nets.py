"""``experiments/ensemble_nets.py``: class nets of several checkpoints joined into one net
that averages their logits (an output ensemble), loadable as an ordinary ``td:`` checkpoint."""

import numpy as np
import pytest
import torch

from nardy_ai.bench.positions import random_positions
from nardy_ai.evaluator import load_evaluator
from nardy_ai.model import save_checkpoint
from nardy_ai.netset import NetSet

from experiment_helpers import load_experiment


def script():
    return load_experiment("ensemble_nets")


def netset(seed: int, hidden) -> NetSet:
    return NetSet.create("backgammon", {"contact": {"hidden": hidden}, "race": {"hidden": [4]},
                                        "bearoff": "database"}, fallback={"hidden": [4]}, seed=seed, device="cpu")


@pytest.mark.parametrize("hidden", [[6], [6, 5]])
def test_the_joined_net_is_the_sigmoid_of_the_members_mean_logit(tmp_path, hidden):
    paths = []
    for seed in (1, 2, 3):
        p = tmp_path / f"m{seed}.pt"
        save_checkpoint(p, {"evaluator": netset(seed, hidden).state()})
        paths.append(str(p))
    out = tmp_path / "ens.pt"
    assert script().main(["--out", str(out), "--nets", "contact", *paths]) == 0
    ens = load_evaluator(str(out), "backgammon")
    members = [load_evaluator(p, "backgammon") for p in paths]
    assert ens.members["contact"].hidden == tuple(3 * h for h in hidden)
    boards = random_positions("backgammon", n_games=4, plies=12, seed=5)
    x = torch.from_numpy(ens.members["contact"].encoder(boards))
    with torch.no_grad():
        mean_logit = sum(m.members["contact"].net.logits(x) for m in members) / 3
        got = ens.members["contact"].net(x)
    np.testing.assert_allclose(got.numpy(), torch.sigmoid(mean_logit).numpy(), atol=1e-6)
    # the other classes are the first checkpoint's
    for name, a in members[0].members["race"].net.state_dict().items():
        assert torch.equal(a, ens.members["race"].net.state_dict()[name])


def test_members_of_different_depths_are_refused(tmp_path, capsys):
    a, b = tmp_path / "a.pt", tmp_path / "b.pt"
    save_checkpoint(a, {"evaluator": netset(1, [6]).state()})
    save_checkpoint(b, {"evaluator": netset(2, [6, 5]).state()})
    out = tmp_path / "ens.pt"
    assert script().main(["--out", str(out), "--nets", "contact", str(a), str(b)]) == 2
    assert "hidden layers" in capsys.readouterr().err and not out.exists()
    assert script().main(["--out", str(out), "--nets", "crashed", str(a), str(b)]) == 2
    assert "not a net" in capsys.readouterr().err
