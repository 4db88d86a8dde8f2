"""TD(lambda) self-play training (training/): config schema, lambda-returns, checkpoints and
resume, and a small learning run whose measured win rates are asserted."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from nardy_ai.agents import RandomAgent
from nardy_ai.agents.neural import NeuralAgent
from nardy_ai.game import play_games, play_match, summarize
from nardy_ai.machine import machine_description
from nardy_ai.model import NeuralEvaluator, flip_outcomes, outcome_targets
from training.config import ConfigError, config_from_dict
from training.td import FinishedGame, Trainer, lambda_returns
from pipeline_helpers import toml_text
from td_helpers import trained_weights


def small_config(variant, **over):
    cfg = {"variant": variant, "seed": 5,
           "td": {"learning_rate": 0.003, "batch_size": 64},
           "selfplay": {"parallel_games": 128, "total_games": 400},
           "run": {"checkpoint_every": 200, "eval_every": 0, "log_every": 100}}
    for section, values in over.items():
        cfg.setdefault(section, {}).update(values)
    return config_from_dict(cfg)


@pytest.mark.parametrize("data,message", [
    ({"td": {"lamda": 0.5}}, "td.lamda: unknown key"),
    ({"td": {"lambda": "high"}}, "td.lambda: must be a number"),
    ({"td": {"lambda": 1.5}}, "td.lambda: must be between 0 and 1"),
    ({"model": {"hidden": [80, "x"]}}, "model.hidden: must be a list of integers"),
    ({"selfplay": 3}, "selfplay: must be a [section]"),
    ({"colour": "red"}, "colour: unknown key"),
    ({"run": {"device": "tpu"}}, "run.device"),
])
def test_config_errors_name_the_key(data, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        config_from_dict(data)


def test_lambda_returns_extremes():
    """lambda = 0: one-step TD targets; lambda = 1: the final outcome (Monte Carlo), each
    turned to the side of the player who made the afterstate."""
    rng = np.random.default_rng(1)
    values = rng.random((4, 5)).astype(np.float32)
    game = FinishedGame(np.zeros((4, 28), np.int8), values, level=2)   # gammon for the last mover
    z = outcome_targets(np.array([2]), "backgammon")[0]
    td0 = lambda_returns([game], 0.0, "backgammon")[0]
    assert np.allclose(td0[3], z)
    assert np.allclose(td0[2], flip_outcomes(z, "backgammon"))        # next is terminal
    assert np.allclose(td0[1], flip_outcomes(values[2], "backgammon"))
    assert np.allclose(td0[0], flip_outcomes(values[1], "backgammon"))
    mc = lambda_returns([game], 1.0, "backgammon")[0]
    for t in range(4):
        expect = z if (3 - t) % 2 == 0 else flip_outcomes(z, "backgammon")
        assert np.allclose(mc[t], expect)
    half = lambda_returns([game, FinishedGame(game.boards[:2], values[:2], 1)], 0.5, "backgammon")
    assert half[0].shape == (4, 5) and half[1].shape == (2, 5)
    assert np.allclose(half[0][1], 0.5 * flip_outcomes(values[2], "backgammon")
                       + 0.5 * flip_outcomes(half[0][2], "backgammon"))


def test_checkpoint_resume_and_refusal(tmp_path):
    run = tmp_path / "run"
    quick = {"selfplay": {"parallel_games": 64}, "run": {"checkpoint_every": 100}}
    t = Trainer(small_config("backgammon", **quick), str(run), config_text="# test\n")
    t.run(total_games=100, progress=False)
    assert (run / "checkpoint.pt").exists() and (run / "config.toml").exists()
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert any(x["kind"] == "train" and "td_error" in x for x in lines)
    assert [x["machine"] for x in lines if x["kind"] == "session"] == [machine_description()]
    assert list((run / "tb").iterdir())                                 # TensorBoard events
    with pytest.raises(Exception, match="--resume"):
        Trainer(small_config("backgammon", **quick), str(run))
    r = Trainer(small_config("backgammon", **quick), str(run), resume=True)
    assert r.games >= 100
    w0 = {k: v.clone() for k, v in r.ev.net.state_dict().items()}
    assert all((w0[k] == v).all() for k, v in t.ev.net.state_dict().items())
    r.run(total_games=200, progress=False)
    assert r.games >= 200
    with pytest.raises(Exception, match=r"config differs .*td\.learning_rate"):
        Trainer(small_config("backgammon", td={"learning_rate": 0.01}, **quick), str(run), resume=True)
    longer = small_config("backgammon", selfplay={"parallel_games": 64, "total_games": 10**6},
                          run={"checkpoint_every": 500, "eval_every": 1000})
    assert Trainer(longer, str(run), resume=True).games >= 200      # extending a run is fine
    with pytest.raises(Exception, match="not 'long'"):
        Trainer(small_config("long", **quick), str(run), resume=True)


def test_runs_are_reproducible_from_config_and_seed(tmp_path):
    """Same config and seed: the same games and the same weights."""
    cfg = small_config("long", selfplay={"parallel_games": 32})
    a, b = (trained_weights(cfg, tmp_path / name) for name in ("a", "b"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    other = trained_weights(config_from_dict(dict(small_config("long").to_dict(), seed=6)), tmp_path / "c")
    assert not all(torch.equal(a[k], other[k]) for k in a)


def test_model_card_reports_strength_with_intervals(tmp_path):
    from training.model_card import write_card
    run = tmp_path / "run"
    Trainer(small_config("long", selfplay={"parallel_games": 32}), str(run), config_text="seed = 5\n").run(
        total_games=64, progress=False)
    text = write_card(str(run), games=20)
    assert "| random |" in text and "| heuristic |" in text and "95% CI" in text
    assert (run / "MODEL_CARD.md").read_text() == text


def _win_rate(agent, variant, games=300, seed=77):
    recs = play_match(variant, agent, RandomAgent(), games, seed)
    return summarize(recs, agent=agent.name)["win_rate"]


@pytest.mark.parametrize("variant,games", [("backgammon", 1500), ("long", 1500)])
def test_training_beats_random_and_the_untrained_net(tmp_path, variant, games):
    """A small budget of self-play must turn the untrained net into one that beats random
    decisively (>= 80% over a fixed-seed match) and beats the untrained net."""
    cfg = small_config(variant, selfplay={"total_games": games})
    untrained = NeuralAgent(NeuralEvaluator.create(variant, seed=5, device="cpu"), name="untrained")
    t = Trainer(cfg, str(tmp_path / "run"), log=False)
    t.run(progress=False)
    trained = NeuralAgent(t.ev, name="trained")
    rate = _win_rate(trained, variant)
    base = _win_rate(untrained, variant)
    print(f"{variant}: trained {rate:.3f} vs random, untrained {base:.3f}")
    assert rate >= 0.80
    recs = play_games(variant, (trained, untrained), 100, seed=9, record=False)
    recs += play_games(variant, (untrained, trained), 100, seed=10, record=False)
    assert summarize(recs, agent="trained")["win_rate"] >= 0.6


def test_nardy_train_cli_runs_resumes_and_refuses_bad_config(tmp_path):
    cfg = tmp_path / "quick.toml"
    cfg.write_text(toml_text({"variant": "long", "seed": 2, "selfplay": {"parallel_games": 64, "total_games": 100},
                              "run": {"checkpoint_every": 50, "eval_every": 100, "eval_games": 20}}))
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "nardy_ai.cli", "train", "--config", str(cfg), "--out", str(out),
           "--no-progress"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    evals = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()
             if json.loads(x)["kind"] == "eval"]
    assert evals and "vs_random/win_rate" in evals[0]
    p = subprocess.run(cmd + ["--resume", "--games", "150"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text(toml_text({"variant": "long", "td": {"lamda": 0.5}}))
    p = subprocess.run(cmd[:5] + [str(bad)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "td.lamda" in p.stderr and "Traceback" not in p.stderr
    p = subprocess.run(cmd + ["--variant", "backgammon"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "backgammon" in p.stderr


def test_learning_rate_halves_every_halflife_down_to_its_floor(tmp_path):
    t = Trainer(small_config("backgammon", td={"learning_rate": 0.004, "lr_halflife_games": 100,
                                               "learning_rate_min": 0.0006}), str(tmp_path / "r"), log=False)
    rates = []
    for games in (0, 100, 200, 250, 1000):
        t.games = games
        rates.append(t.learning_rate())
    assert rates[:3] == pytest.approx([0.004, 0.002, 0.001])
    assert rates[3] == pytest.approx(0.001 * 0.5 ** 0.5) and rates[4] == 0.0006
    t.games = 300
    t.run(total_games=400, progress=False)                  # the optimizer steps with the schedule
    assert t.opt.param_groups[0]["lr"] == 0.0006              # past 3 halvings: the floor
    const = Trainer(small_config("backgammon"), str(tmp_path / "c"), log=False)
    const.games = 10**6
    assert const.learning_rate() == 0.003
    with pytest.raises(ConfigError, match="td.learning_rate_min"):
        small_config("backgammon", td={"learning_rate_min": 0.01})


def test_a_run_can_start_from_another_runs_weights(tmp_path):
    first = Trainer(small_config("backgammon"), str(tmp_path / "a"), log=True)
    first.run(total_games=100, progress=False)
    ckpt = str(tmp_path / "a" / "checkpoint.pt")
    cfg = config_from_dict({**small_config("backgammon", model={"init_from": ckpt}).to_dict(), "seed": 9})
    warm = Trainer(cfg, str(tmp_path / "b"), log=False)
    for k, w in first.ev.net.state_dict().items():
        assert torch.equal(w, warm.ev.net.state_dict()[k])
    assert warm.games == 0                                     # a new run: counters start at 0
    with pytest.raises(ConfigError, match=r"model.hidden: .* has hidden \[80\], this net \[40\]"):
        Trainer(small_config("backgammon", model={"init_from": ckpt, "hidden": [40]}), str(tmp_path / "c"), log=False)
    with pytest.raises(ConfigError, match=r"model.hidden: .* has hidden \[80\], this net \[80, 10\]"):
        Trainer(small_config("backgammon", model={"init_from": ckpt, "hidden": [80, 10]}), str(tmp_path / "c"), log=False)
    with pytest.raises(ConfigError, match="model.init_from: .*not 'long'"):
        Trainer(small_config("long", model={"init_from": ckpt}), str(tmp_path / "d"), log=False)
    with pytest.raises(ConfigError, match="model.init_from: .*does not exist"):
        Trainer(small_config("backgammon", model={"init_from": str(tmp_path / "nope.pt")}), str(tmp_path / "e"), log=False)


def test_warm_start_into_wider_layers_values_as_the_source(tmp_path):
    """model.init_from into wider hidden layers (Net2Net-style widening): the added units get
    random inputs but zero outgoing weights, so the wider net values exactly as the source,
    and training then moves the added units' outgoing weights off zero."""
    import numpy as np

    from nardy_ai.bench.positions import random_positions
    from nardy_ai.model import NeuralEvaluator, save_checkpoint
    src = NeuralEvaluator.create("backgammon", "tdgammon", (6, 5), device="cpu")
    torch.manual_seed(3)
    for w in src.net.parameters():
        torch.nn.init.normal_(w, std=0.5)
    path = tmp_path / "small.pt"
    save_checkpoint(path, {"kind": "model", "evaluator": src.state()})
    cfg = small_config("backgammon", model={"init_from": str(path), "encoder": "expert", "hidden": [9, 7]})
    tr = Trainer(cfg, str(tmp_path / "w"), log=False)
    boards = random_positions("backgammon", n_games=16, plies=60, seed=2)
    assert np.allclose(tr.ev.probabilities(boards), src.probabilities(boards), rtol=0, atol=1e-6)
    layers = [m for m in tr.ev.net.net if isinstance(m, torch.nn.Linear)]
    assert layers[0].weight[6:].abs().sum() > 0                  # added units: random inputs
    assert not layers[1].weight[:, 6:].any() and not layers[2].weight[:, 5:].any()
    tr.run(total_games=20, progress=False)
    layers = [m for m in tr.ev.net.net if isinstance(m, torch.nn.Linear)]
    assert layers[2].weight[:, 5:].abs().sum() > 0               # trained: the added units count
    tr.close()


def test_single_net_warm_start_over_an_extending_encoder(tmp_path):
    """model.init_from: a single `expert` net starts from a `tdgammon` net with zero weights on
    the extra inputs, so it values exactly as the source; an encoder that does not extend the
    source's is refused naming the key."""
    import numpy as np

    from nardy_ai.bench.positions import random_positions
    from nardy_ai.model import save_checkpoint
    from nardy_ai.evaluator import load_evaluator
    src = "checkpoints/backgammon/td80_anneal/checkpoint.pt"
    cfg = small_config("backgammon", model={"init_from": src, "encoder": "expert", "hidden": [80]})
    tr = Trainer(cfg, str(tmp_path / "a"), log=False)
    boards = random_positions("backgammon", n_games=16, plies=60, seed=1)
    want = load_evaluator(src, "backgammon", "cpu").probabilities(boards)
    assert np.allclose(tr.ev.probabilities(boards), want, atol=1e-5)
    expert_ckpt = tmp_path / "expert.pt"
    save_checkpoint(expert_ckpt, {"evaluator": tr.ev.state()})
    tr.close()
    # The other way round: tdgammon's inputs do not extend expert's.
    back = small_config("backgammon", model={"init_from": str(expert_ckpt), "encoder": "tdgammon",
                                             "hidden": [80]})
    with pytest.raises(ConfigError, match="model.init_from: .* has encoder 'expert', this config 'tdgammon'"):
        Trainer(back, str(tmp_path / "b"), log=False)
