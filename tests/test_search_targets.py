"""Training on search targets (training/search_targets.py): a tiny generation end to end, resume
after a stop mid-generation, the same labels on 1 and 2 processes, exact bear-off labels
(COM-5), the gate's decision, and config errors that name the key."""

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from nardy_ai.agents import make_agent
from nardy_ai.backends import make_backend
from nardy_ai.bearoff import bearoff_outcomes
from nardy_ai.board import OFF, flip
from nardy_ai.classes import class_names, position_classes
from nardy_ai.model import load_checkpoint, save_checkpoint
from nardy_ai.evaluator import load_evaluator
from nardy_ai.netset import NetSet, as_netset
from nardy_ai.variants import get_variant
from training.config import ConfigError, config_from_dict
from training.search_targets import (SearchTargetsRun, class_quotas, evaluator_payload, fit_net,
                                     gate_match, initial_evaluator, label_afterstates, label_chunk,
                                     label_tasks, most_disagreeing, read_npz,
                                     decision_candidates)
from cli_helpers import main_error
from pipeline_helpers import same_weights, toml_text, weights

ROOT = Path(__file__).resolve().parent.parent
TD80 = str(ROOT / "checkpoints/backgammon/td80_anneal/checkpoint.pt")
LONG_TD80 = str(ROOT / "checkpoints/long/td80/checkpoint.pt")


def tiny(**over):
    """One generation of a net set warm-started from the shipped net: contact and race nets,
    the crashed class on the fallback, the bear-off database; a few hundred afterstates."""
    cfg = {"variant": "backgammon", "seed": 11,
           "method": {"kind": "search_targets", "generations": 1},
           "model": {"hidden": [80], "init_from": TD80,
                     "classes": {"contact": {}, "race": {}, "bearoff": {"kind": "database"}}},
           "sample": {"positions": 300, "quotas": {"contact": 0.5, "crashed": 0.2, "race": 0.3},
                      "parallel_games": 32, "epsilon": 0.1, "keep": 0.5},
           "label": {"chunk": 100},
           "fit": {"max_epochs": 6, "batch_size": 32, "learning_rate": 0.003, "patience": 2},
           "gate": {"games": 10},
           "run": {"eval_opponents": []}}
    for section, values in over.items():
        cfg.setdefault(section, {}).update(values)
    return config_from_dict(cfg)


class StopAt(SearchTargetsRun):
    """A run that asks itself to stop (as Ctrl-C does) once ``when(kind, count)`` holds for a
    metrics line of ``kind`` logged for the ``count``-th time."""

    def __init__(self, *a, when=None, **kw):
        super().__init__(*a, **kw)
        self.when, self.seen = when, {}

    def _log(self, kind, *a, **kw):
        super()._log(kind, *a, **kw)
        self.seen[kind] = self.seen.get(kind, 0) + 1
        if self.when is not None and self.when(kind, self.seen[kind]):
            self.request_stop()


def chunk_files(run: Path) -> list[Path]:
    return sorted((run / "generations/001/labels").glob("chunk_*.npz"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One uninterrupted generation of :func:`tiny` (with TensorBoard and metrics)."""
    run = tmp_path_factory.mktemp("st") / "run"
    cfg = tiny(run={"eval_opponents": ["heuristic"], "eval_games": 4})
    res = SearchTargetsRun(cfg, str(run), config_text="# tiny\n", print_fn=lambda s: None).run(progress=False)
    assert not res["stopped"]
    return run


def test_one_generation_end_to_end(reference):
    run = reference
    g = run / "generations/001"
    for name in ("config.toml", "current.pt", "state.json", "metrics.jsonl"):
        assert (run / name).exists(), name
    assert list((run / "tb").iterdir())
    state = json.loads((run / "state.json").read_text())
    assert (state["generation"], state["phase"]) == (2, "sample")

    # The sample: the quotas, distinct afterstates, none finished, each of its class.
    z = read_npz(str(g / "samples.npz"))
    names = class_names("backgammon")
    counts = {c: int(np.sum(z["classes"] == names.index(c))) for c in names}
    assert counts == {"contact": 150, "crashed": 60, "race": 90, "bearoff": 0}
    assert len(np.unique(z["boards"], axis=0)) == len(z["boards"])
    assert (z["boards"][:, OFF] < 15).all()
    assert np.array_equal(position_classes(z["boards"], "backgammon"), z["classes"])

    # Labels: 3 chunks of 100, probabilities in the model's layout.
    files = chunk_files(run)
    assert len(files) == 3
    labels = np.concatenate([read_npz(str(f))["labels"] for f in files])
    assert labels.shape == (300, 5) and (labels >= 0).all() and (labels <= 1).all()

    # The fitted nets move toward their labels: the held-out loss of the fit, and the loss
    # over all of a class's labelled afterstates against the warm start.
    cand = load_checkpoint(g / "candidate.pt")
    fit = cand["fit"]
    assert set(fit) == {"contact", "race", "fallback"}
    assert fit["contact"]["val_loss"] < fit["contact"]["val_loss_before"]
    before = initial_evaluator(tiny(), get_variant("backgammon"), "cpu")
    after = load_evaluator(g / "candidate.pt", "backgammon", "cpu")
    rows = z["classes"] == names.index("contact")
    y = torch.from_numpy(labels[rows])

    def loss(ev):
        net = ev.members["contact"]
        logits = net.net.logits(torch.from_numpy(net.encoder(z["boards"][rows])))
        return float(torch.nn.functional.binary_cross_entropy_with_logits(logits, y))

    with torch.no_grad():
        assert loss(after) < loss(before)

    # The gate: promoted exactly when the candidate did not lose; current.pt follows it.
    gate = json.loads((g / "gate.json").read_text())
    assert gate["games"] == 10 and gate["promoted"] == (gate["points_per_game"] >= 0.0)
    lo, hi = gate["points_per_game_ci95"]
    assert lo <= gate["points_per_game"] <= hi
    same = (run / "current.pt").read_bytes() == (g / "candidate.pt").read_bytes()
    assert same == gate["promoted"]

    kinds = {json.loads(x)["kind"] for x in (run / "metrics.jsonl").read_text().splitlines()}
    assert {"sample", "label", "label_chunk", "fit_epoch", "fit", "gate", "eval"} <= kinds
    agent = make_agent(f"td:{run / 'current.pt'}", "backgammon")       # usable as an agent
    assert isinstance(agent.evaluator, NetSet)


def test_resume_after_stop_mid_labelling(reference, tmp_path):
    """Stopped after one chunk (as Ctrl-C would), the run resumes in the label phase, keeps
    that chunk and ends with the same labels and the same fitted nets as an uninterrupted run."""
    run = tmp_path / "run"
    first = StopAt(tiny(), str(run), log=True, print_fn=lambda s: None,
                   when=lambda kind, n: kind == "label_chunk" and n == 1)
    res = first.run(progress=False)
    assert res["stopped"] and (res["generation"], res["phase"]) == (1, "label")
    assert len(chunk_files(run)) == 1
    kept = chunk_files(run)[0].stat().st_mtime_ns
    again = SearchTargetsRun(tiny(), str(run), resume=True, print_fn=lambda s: None)
    assert not again.run(progress=False)["stopped"]
    assert chunk_files(run)[0].stat().st_mtime_ns == kept              # not labelled again
    for mine, ref in zip(chunk_files(run), chunk_files(reference), strict=True):
        a, b = read_npz(str(mine)), read_npz(str(ref))
        assert np.array_equal(a["boards"], b["boards"]) and np.array_equal(a["labels"], b["labels"])
    w = load_checkpoint(run / "generations/001/candidate.pt")["evaluator"]["members"]["contact"]["weights"]
    r = load_checkpoint(reference / "generations/001/candidate.pt")["evaluator"]["members"]["contact"]["weights"]
    assert all(torch.equal(w[k], r[k]) for k in r)
    # The metrics of the restarted phases are not counted twice.
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [x["chunk"] for x in lines if x["kind"] == "label_chunk"] == [0, 1, 2]
    assert sum(x["kind"] == "sample" for x in lines) == 1


@pytest.mark.parametrize("epochs", [2, 7])
def test_resume_after_stop_mid_fit_goes_on_after_the_last_epoch(reference, tmp_path, epochs):
    """Stopped right after the ``epochs``-th epoch of the fit (in the first net, or in the second
    with the first finished), the run keeps ``fit_epoch.pt`` and its resume goes on from the
    next epoch: the same nets as an uninterrupted run, every epoch logged once."""
    run = tmp_path / "run"
    first = StopAt(tiny(), str(run), log=True, print_fn=lambda s: None,
                   when=lambda kind, n: kind == "fit_epoch" and n == epochs)
    res = first.run(progress=False)
    assert res["stopped"] and res["phase"] == "fit"
    assert (run / "generations/001/fit_epoch.pt").exists()
    said = []
    again = SearchTargetsRun(tiny(), str(run), resume=True, print_fn=said.append)
    assert not again.run(progress=False)["stopped"]
    assert any("net's fit goes on after epoch" in x for x in said)
    assert not (run / "generations/001/fit_epoch.pt").exists()
    mine, ref = weights(run / "generations/001/candidate.pt"), weights(reference / "generations/001/candidate.pt")
    assert set(ref) == {"contact", "race", "fallback"} and same_weights(mine, ref)

    def epochs_logged(folder):
        return [(x["net"], x["epoch"]) for x in map(json.loads, (folder / "metrics.jsonl").read_text().splitlines())
                if x["kind"] == "fit_epoch"]
    assert epochs_logged(run) == epochs_logged(reference)
    assert len(epochs_logged(reference)) > epochs


@pytest.mark.parametrize("phase", ["label", "gate"])
def test_resume_without_the_generation_files_starts_the_generation_again(reference, tmp_path, phase):
    """A run stopped mid-generation and copied without its gitignored generations/ folder (a
    fresh clone of a shipped run) resumes by sampling that generation again and ends with the
    same labels as an uninterrupted run."""
    import shutil
    run = tmp_path / "run"
    first = StopAt(tiny(), str(run), log=True, print_fn=lambda s: None,
                   when=lambda kind, n: kind == ("label_chunk" if phase == "label" else "fit"))
    res = first.run(progress=False)
    assert res["stopped"] and res["phase"] == phase
    shutil.rmtree(run / "generations")
    said = []
    again = SearchTargetsRun(tiny(), str(run), resume=True, print_fn=said.append)
    assert json.loads((run / "state.json").read_text())["phase"] == "sample"
    assert any(f"the files of phase {phase} are not in" in x and "starting again at sample" in x for x in said)
    assert not again.run(progress=False)["stopped"]
    for mine, ref in zip(chunk_files(run), chunk_files(reference), strict=True):
        a, b = read_npz(str(mine)), read_npz(str(ref))
        assert np.array_equal(a["boards"], b["boards"]) and np.array_equal(a["labels"], b["labels"])
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert sum(x["kind"] == "sample" for x in lines) == 1     # the first sample's line trimmed


def test_resume_after_stop_mid_sampling(reference, tmp_path):
    """A sample stopped part-way is drawn again from its seed on resume: the same afterstates."""
    run = tmp_path / "run"

    class StopInSample(SearchTargetsRun):
        calls = 0

        def _stopping(self):
            self.calls += 1
            return self.stop_requested or self.calls == 5

    res = StopInSample(tiny(), str(run), log=False, print_fn=lambda s: None).run(progress=False)
    assert (res["generation"], res["phase"]) == (1, "sample")
    assert not (run / "generations/001/samples.npz").exists()
    again = StopAt(tiny(), str(run), resume=True, log=True, print_fn=lambda s: None,
                   when=lambda kind, n: kind == "sample")
    res = again.run(progress=False)
    assert (res["generation"], res["phase"]) == (1, "label")
    a = read_npz(str(run / "generations/001/samples.npz"))
    b = read_npz(str(reference / "generations/001/samples.npz"))
    assert np.array_equal(a["boards"], b["boards"]) and np.array_equal(a["classes"], b["classes"])


def bearoff_boards(variant, n, seed=0):
    """``n`` bear-off afterstates (COM-5): each side's checkers on its own points 1-6 or off,
    neither side finished."""
    rng = np.random.default_rng(seed)

    def side(k):
        b = np.zeros((k, 28), np.int64)
        left = rng.integers(1, 16, k)
        for p in range(6):                       # a random split of `left` checkers over 6 points
            take = rng.integers(0, left + 1) if p < 5 else left
            b[:, p] = take
            left = left - take
        b[:, OFF] = 15 - b[:, :6].sum(1)
        return b

    return (side(n) + flip(side(n), variant)).astype(np.int8)


@pytest.mark.parametrize("variant,net", [("backgammon", TD80), ("long", LONG_TD80)])
def test_bearoff_afterstates_get_the_database_values(variant, net):
    """COM-5: bear-off afterstates are labelled with the one-sided database's exact outcome
    probabilities, whatever the evaluator (here a single net without a database member)."""
    boards = bearoff_boards(variant, 200)
    classes = position_classes(boards, variant)
    assert (classes == class_names(variant).index("bearoff")).all()
    ev = load_evaluator(net, variant, "cpu")
    got = label_afterstates(boards, classes, ev, {"kind": "search", "plies": 1})
    assert np.array_equal(got, bearoff_outcomes(boards, variant).astype(np.float32))


def _chunk_tasks(reference):
    """Label tasks of sampled afterstates and bear-off afterstates, some rows at 2 plies."""
    z = read_npz(str(reference / "generations/001/samples.npz"))
    boards = np.concatenate([z["boards"][:60], bearoff_boards("backgammon", 20, seed=3)])
    classes = position_classes(boards, "backgammon")
    data = Path(TD80).read_bytes()
    deep = np.zeros(len(boards), bool)
    deep[::7] = True
    return boards, classes, label_tasks(boards, classes, deep, get_variant("backgammon"),
                                        (hashlib.sha256(data).hexdigest(), data),
                                        {"kind": "search", "plies": 1, "seed": 0}, chunk=20)


def _labels(backend, tasks):
    out = {}
    with backend:
        for task, (index, lab, _) in backend.run(label_chunk, tasks):
            out[index] = lab
    return np.concatenate([out[i] for i in range(len(tasks))])


def test_rollout_labels_agree_with_search(reference):
    """Rollout labels of afterstates: cut at 0 plies they are the evaluator's own values; cut
    after the opponent's reply over the 36 rolls they are the 1-ply expectimax values."""
    z = read_npz(str(reference / "generations/001/samples.npz"))
    boards = z["boards"][::25]
    classes = position_classes(boards, "backgammon")
    ev = load_evaluator(TD80, "backgammon", "cpu")

    def rollout_labels(truncate):
        return label_afterstates(boards, classes, ev, {"kind": "rollout", "rollout_games": 36,
                                                        "rollout_truncate": truncate, "rollout_seed": 5})

    assert np.allclose(rollout_labels(0), ev.probabilities(boards), atol=1e-6)
    one_ply = label_afterstates(boards, classes, ev, {"kind": "search", "plies": 1})
    assert np.allclose(rollout_labels(1), one_ply, atol=1e-5)


def first_sample_keeping_the_quotas(tmp_path, sample: dict) -> dict:
    """The first generation's sample of a tiny run with these ``[sample]`` settings (stopped once
    it is drawn), checked to hold the run's quotas (150 contact, 60 crashed, 90 race), distinct."""
    run = tmp_path / "run"
    st = StopAt(tiny(sample=sample), str(run), log=True, print_fn=lambda s: None,
                when=lambda kind, n: kind == "sample")
    assert st.run(progress=False)["phase"] == "label"
    z = read_npz(str(run / "generations/001/samples.npz"))
    names = class_names("backgammon")
    assert [int(np.sum(z["classes"] == names.index(c))) for c in ("contact", "crashed", "race")] == [150, 60, 90]
    assert len(np.unique(z["boards"], axis=0)) == 300
    return z


def test_oversampled_sample_keeps_the_quotas(tmp_path):
    """sample.oversample = 2: twice the afterstates drawn, the quotas kept (the most
    disagreeing half of each class, :func:`most_disagreeing`)."""
    first_sample_keeping_the_quotas(tmp_path, {"oversample": 2.0})


def test_decision_candidates_are_the_close_plays_of_real_decisions():
    """sample.candidates: each kept afterstate is a legal play of one of the decisions (a sampled
    afterstate flipped, a seeded roll), within the threshold of that decision's 0-ply best and
    among its best ``keep``; the quotas are filled by the candidates' own classes; distinct
    boards; seeded."""
    from nardy_ai.movegen import generate, segment_ids
    from nardy_ai.model import equity
    ev = load_evaluator(TD80, "backgammon")
    names = class_names("backgammon")
    from training.search_targets import sample_afterstates
    sampled = sample_afterstates(ev, {"contact": 120, "race": 60}, 3, 32, 0.1, 0.0, 0.5, 10 ** 6)
    quotas = {"contact": 150, "race": 40}
    boards, classes, used = decision_candidates(ev, sampled.boards, quotas, 4, 0.08, 5)
    again = decision_candidates(ev, sampled.boards, quotas, 4, 0.08, 5)
    assert np.array_equal(boards, again[0]) and used == again[2]
    assert [int(np.sum(classes == names.index(c))) for c in quotas] == [150, 40]
    assert np.array_equal(classes, position_classes(boards, "backgammon"))
    assert len(np.unique(boards, axis=0)) == len(boards)
    assert used < len(boards)                  # several candidates per decision on average
    # Rebuild the decisions as decision_candidates draws them and check every candidate.
    rng = np.random.default_rng(5)
    order = rng.permutation(len(sampled.boards))
    dice = rng.integers(1, 7, size=(len(sampled.boards), 2))
    after = generate(flip(sampled.boards[order], "backgammon"), dice, "backgammon")
    eq = equity(ev.probabilities(after.boards), "backgammon")
    keys = {b.tobytes(): i for i, b in enumerate(after.boards)}
    seg = segment_ids(after.offsets)
    for b in boards:
        r = keys[b.tobytes()]                   # a legal play of some decision
        lo, hi = after.offsets[seg[r]], after.offsets[seg[r] + 1]
        assert eq[r] >= eq[lo:hi].max() - 0.08 - 1e-9
        assert np.sum(eq[lo:hi] > eq[r]) < 4


def test_sample_with_candidates_keeps_the_quotas(tmp_path):
    """sample.candidates = 3 in a run: the sample holds the quotas, distinct, and logs how many
    decisions gave them."""
    z = first_sample_keeping_the_quotas(tmp_path, {"candidates": 3, "candidate_threshold": 0.2})
    settings = json.loads(str(z["settings"]))
    assert settings["decision_candidates"] == 3 and 0 < settings["decisions"] < 300


def test_most_disagreeing_keeps_the_largest_gaps_per_class():
    classes = np.array([0, 0, 0, 2, 2, 2, 2], np.int8)
    zero = np.zeros(7)
    one = np.array([0.1, -0.5, 0.2, 0.0, 0.3, -0.01, -0.4])
    rows = most_disagreeing(np.zeros((7, 28), np.int8), classes, {"contact": 2, "race": 2}, zero, one,
                            class_names("backgammon"))
    assert rows.tolist() == [1, 2, 4, 6]


def test_same_labels_on_one_and_two_processes(reference):
    """A chunk's labels do not depend on the process that computes it (one torch thread each)."""
    boards, classes, tasks = _chunk_tasks(reference)
    one = _labels(make_backend("local", 1), tasks)
    two = _labels(make_backend("local", 2, log=lambda s: None), tasks)
    assert np.array_equal(one, two)
    bear = classes == class_names("backgammon").index("bearoff")
    assert np.array_equal(one[bear], bearoff_outcomes(boards[bear], "backgammon").astype(np.float32))


def test_same_labels_on_ray(reference, ray_instance):
    _, _, tasks = _chunk_tasks(reference)
    assert np.array_equal(_labels(make_backend("local", 1), tasks),
                          _labels(make_backend("ray", log=lambda s: None), tasks))


def test_gate_duplicate_dice_and_decision(tmp_path):
    """Duplicate dice: an evaluator against itself wins each pair's one game and loses the
    other, exactly 0 points per game (promoted at the default threshold 0, ``>=``).  A
    candidate that loses (an untrained net set against the shipped net) is not promoted and
    current.pt stays as it was."""
    ev = load_evaluator(TD80, "backgammon", "cpu")
    even = gate_match(ev, ev, 20, seed=4)
    assert even["points_per_game"] == 0.0 and even["points_per_game_ci95"] == [0.0, 0.0]

    run = tmp_path / "run"
    st = SearchTargetsRun(tiny(gate={"games": 16}), str(run), log=False, print_fn=lambda s: None)
    cur = (run / "current.pt").read_bytes()
    bad = NetSet.create("backgammon", {"contact": {"hidden": (80,)}, "race": {"hidden": (80,)},
                                       "bearoff": "database"}, {"hidden": (80,)}, seed=1, device="cpu")
    (run / "generations/001").mkdir(parents=True)
    save_checkpoint(run / "generations/001/candidate.pt", evaluator_payload(bad, st.cfg, 1))
    st.state["phase"] = "gate"
    st.run(progress=False)
    gate = json.loads((run / "generations/001/gate.json").read_text())
    assert gate["points_per_game"] < 0 and gate["promoted"] is False
    assert (run / "current.pt").read_bytes() == cur
    state = json.loads((run / "state.json").read_text())
    assert state["current_generation"] == 0 and state["history"][0]["promoted"] is False


def net_and_its_own_labels():
    """The TD-80 backgammon net on the CPU, 400 random afterstates encoded for it, its own
    probabilities of them (labels it already fits best) and a copy of its starting weights."""
    from nardy_ai.bench.positions import random_afterstates
    ev = load_evaluator(TD80, "backgammon", "cpu")
    boards = random_afterstates("backgammon", 400, seed=2)
    start = {k: w.clone() for k, w in ev.net.state_dict().items()}
    return ev, ev.encoder(boards), ev.probabilities(boards), start


def test_fit_keeps_the_best_epoch_and_a_stopped_fit_changes_nothing():
    """Labels equal to the net's own outputs are already at the cross-entropy's minimum: no
    epoch beats the start, so the early stop keeps the starting weights (best epoch 0).  A
    fit stopped part-way also leaves the net as it was."""
    ev, x, y, start = net_and_its_own_labels()
    res = fit_net(ev, x, y, tiny().fit, seed=1)
    assert res["best_epoch"] == 0 and res["epochs"] == tiny().fit.patience
    assert all(torch.equal(w, start[k]) for k, w in ev.net.state_dict().items())
    calls = iter(range(10 ** 6))
    assert fit_net(ev, x, np.zeros_like(y), tiny().fit, seed=1, stop=lambda: next(calls) == 3) is None
    assert all(torch.equal(w, start[k]) for k, w in ev.net.state_dict().items())


def test_lr_halvings_continue_from_the_best_weights():
    """``fit.lr_halvings``: a plateau of ``patience`` epochs sends the fit back to its best
    weights with half the learning rate instead of stopping it.  Same seed, same steps: the
    fit runs the plain fit's epochs first, then goes on, and ends no worse than it."""
    from dataclasses import replace
    ev, x, y, start = net_and_its_own_labels()
    target = np.clip(y + 0.2 * (np.random.default_rng(3).random(y.shape) - 0.5), 0, 1).astype(np.float32)
    plain = replace(tiny().fit, max_epochs=40, learning_rate=0.03)
    base = fit_net(ev, x, target, plain, seed=1)
    ev.net.load_state_dict(start)
    halved = fit_net(ev, x, target, replace(plain, lr_halvings=3), seed=1)
    assert base["lr_halvings"] == 0 and base["epochs"] < plain.max_epochs      # it hit a plateau
    assert 1 <= halved["lr_halvings"] <= 3 and halved["epochs"] > base["epochs"]
    assert halved["val_loss"] <= base["val_loss"]


def test_a_fit_resumed_after_any_epoch_ends_as_the_fit_that_was_not_stopped(tmp_path):
    """``on_checkpoint`` hands over the fit's whole state after each epoch (weights, best
    weights, Adam's moments and step size, counters, both random generators); a fit resumed
    from any of them -- written to disk and read back as a run does -- ends with the same
    weights and figures as the fit that ran through, halvings included.  A state of other
    labels or settings is refused, naming what differs."""
    from dataclasses import replace
    from training.search_targets import FitStateError, load_fit_epoch, save_fit_epoch
    ev, x, y, start = net_and_its_own_labels()
    target = np.clip(y + 0.2 * (np.random.default_rng(3).random(y.shape) - 0.5), 0, 1).astype(np.float32)
    fit = replace(tiny().fit, max_epochs=30, learning_rate=0.03, lr_halvings=2)
    states = []
    whole = fit_net(ev, x, target, fit, seed=1, on_checkpoint=states.append)
    end = {k: w.clone() for k, w in ev.net.state_dict().items()}
    assert whole["lr_halvings"] >= 1 and len(states) == whole["epochs"] - 1     # none after the last
    assert [s["epoch"] for s in states] == list(range(1, len(states) + 1))
    after_halving = next(s for s in states if s["halvings"] == 1)
    for state in (states[0], after_halving, states[-1]):
        save_fit_epoch(str(tmp_path / "fit_epoch.pt"), {"state": state})
        loaded = load_fit_epoch(str(tmp_path / "fit_epoch.pt"))["state"]
        ev.net.load_state_dict(start)
        later = []
        again = fit_net(ev, x, target, fit, seed=1, on_checkpoint=later.append, resume=loaded)
        assert again == whole
        assert all(torch.equal(w, end[k]) for k, w in ev.net.state_dict().items())
        assert [s["epoch"] for s in later] == list(range(state["epoch"] + 1, len(states) + 1))
    with pytest.raises(FitStateError, match="rows_digest"):
        fit_net(ev, x, y, fit, seed=1, resume=states[0])
    with pytest.raises(FitStateError, match="settings"):
        fit_net(ev, x, target, replace(fit, learning_rate=0.01), seed=1, resume=states[0])
    with pytest.raises(FitStateError, match="seed"):
        fit_net(ev, x, target, fit, seed=2, resume=states[0])


def test_a_damaged_saved_fit_state_is_a_clear_error(tmp_path):
    from nardy_ai.model import CheckpointError
    from training.search_targets import load_fit_epoch
    bad = tmp_path / "fit_epoch.pt"
    bad.write_bytes(b"not a torch file")
    with pytest.raises(CheckpointError, match="fit_epoch.pt.*delete it"):
        load_fit_epoch(str(bad))
    save_checkpoint(str(bad), {"evaluator": {}})          # a checkpoint, not a fit state
    with pytest.raises(CheckpointError, match="not a saved fit state"):
        load_fit_epoch(str(bad))


def test_class_quotas_add_up():
    q = class_quotas(1001, {"contact": 0.6, "crashed": 0.1, "race": 0.3}, class_names("backgammon"))
    assert sum(q.values()) == 1001 and list(q) == ["contact", "crashed", "race"]
    assert abs(q["contact"] - 600.6) < 1 and abs(q["crashed"] - 100.1) < 1


@pytest.mark.parametrize("data,message", [
    ({"method": {"kind": "mcts"}}, "method.kind: must be td, search_targets or distill"),
    ({"method": {"generations": 0}}, "method.generations"),
    ({"sample": {"quota": {}}}, "sample.quota: unknown key"),
    ({"sample": {"quotas": {"contact": "most"}}}, "sample.quotas.contact: must be a number"),
    ({"sample": {"quotas": [1, 2]}}, "sample.quotas: must be a table"),
    ({"variant": "backgammon", "sample": {"quotas": {"midgame": 1.0}}}, "sample.quotas.midgame: not a position class"),
    ({"sample": {"quotas": {"contact": 0.0}}}, "sample.quotas: at least one share"),
    ({"sample": {"keep": 0.0}}, "sample.keep"),
    ({"sample": {"candidates": 0}}, "sample.candidates: must be 1 to 64"),
    ({"sample": {"candidates": 2.5}}, "sample.candidates: must be an integer"),
    ({"sample": {"candidates": 4, "oversample": 2.0}}, "sample.candidates: not with sample.oversample"),
    ({"sample": {"candidate_threshold": -0.1}}, "sample.candidate_threshold"),
    ({"label": {"plies": 3}}, "label.plies: must be 1 or 2"),
    ({"label": {"kind": "gnubg"}}, "label.kind"),
    ({"label": {"plies": 2, "two_ply_fraction": 0.5}}, "label.two_ply_fraction: only with label.plies = 1"),
    ({"fit": {"patience": 0}}, "fit.patience"),
    ({"fit": {"lr_halvings": 21}}, "fit.lr_halvings: must be 0 to 20"),
    ({"fit": {"validation": 0.9}}, "fit.validation"),
    ({"fit": {"history": 1001}}, "fit.history: must be 0 to 1000"),
    ({"gate": {"games": 1}}, "gate.games"),
    ({"gate": {"threshold": "zero"}}, "gate.threshold: must be a number"),
])
def test_config_errors_name_the_key(data, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace(".", r"\.")):
        config_from_dict(data)


def test_quota_on_the_database_class_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="sample.quotas.bearoff"):
        SearchTargetsRun(tiny(sample={"quotas": {"contact": 1.0, "bearoff": 1.0}}), str(tmp_path / "r"), log=False)
    assert not (tmp_path / "r").exists()


def test_cli_errors_are_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text(toml_text({"variant": "backgammon", "method": {"kind": "search_targets"}, "fit": {"patience": 0}}))
    td = tmp_path / "td.toml"
    td.write_text(toml_text({"variant": "backgammon"}))
    for args, message in ((["--config", str(bad)], "fit.patience"),
                          (["--config", str(td), "--jobs", "2"], "--jobs is for"),
                          (["--config", str(tmp_path / "none.toml")], "cannot read config")):
        main_error(capsys, ["train", *args, "--out", str(tmp_path / "o")], message)
    assert not (tmp_path / "o").exists()


def test_model_card_of_a_search_targets_run(reference, tmp_path):
    """training.model_card reads a search-targets run folder (current.pt, state.json) and
    names its generations and gate results."""
    import shutil

    from training.model_card import write_card
    run = tmp_path / "run"
    shutil.copytree(reference, run, ignore=shutil.ignore_patterns(".lock"))
    text = write_card(str(run), games=4)
    state = json.loads((run / "state.json").read_text())
    assert "search-targets evaluator" in text and "current.pt" in text
    assert "generations of self-play sampling" in text
    gate = state["history"][0]
    assert f"1: {gate['points_per_game']:+.3f}" in text
    assert (run / "MODEL_CARD.md").read_text() == text
    # the card names the machines the run's sessions ran on (in order), not the one it is written on
    from nardy_ai.machine import machine_description
    metrics = run / "metrics.jsonl"
    with open(metrics, "a", encoding="utf-8") as f:
        f.write(json.dumps({"kind": "session", "time": 1.0, "machine": "Elsewhere CPU, 16 logical cores"}) + "\n")
    text = write_card(str(run), games=4)
    assert f"wall time on {machine_description()}; Elsewhere CPU, 16 logical cores" in text
    # a run logged before session lines named their machine: the card says whose machine it names
    old = [json.loads(x) for x in metrics.read_text().splitlines()]
    metrics.write_text("".join(json.dumps({k: v for k, v in x.items() if k != "machine"}) + "\n" for x in old))
    text = write_card(str(run), games=4)
    assert f"wall time on {machine_description()} (where this card was written)" in text


def test_model_card_lists_measured_gauntlet_matches(reference, tmp_path):
    """--results: the pairings of a gauntlet summary whose first agent is this net, with their
    intervals; a pairing between two other agents is left out."""
    import shutil

    from training.model_card import write_card
    run = tmp_path / "run"
    shutil.copytree(reference, run, ignore=shutil.ignore_patterns(".lock"))
    me = f"td:{run}/current.pt"
    summary = {"agents": [me, "gnubg:0ply", "pubeval"], "pairings": [
        {"agents": [me, "gnubg:0ply"], "games": 4000, "points_per_game": -0.035,
         "points_per_game_ci95": [-0.073, 0.003], "win_rate": 0.49, "win_rate_ci95": [0.475, 0.505],
         "decided_pairs_won_share": 0.48, "decided_pairs_won_ci95": [0.45, 0.51]},
        {"agents": ["gnubg:0ply", "pubeval"], "games": 10, "points_per_game": 0.5,
         "points_per_game_ci95": [0.1, 0.9], "win_rate": 0.6, "win_rate_ci95": [0.3, 0.9]}]}
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(summary))
    text = write_card(str(run), games=4, result_files=[str(path)])
    assert "## Measured matches" in text
    assert (f"| {me} | gnubg:0ply | none | 4,000 | -0.035 (-0.073 to +0.003) | 48.0% (45.0-51.0%) "
            f"| 49.0% (47.5-50.5%)") in text
    assert "| pubeval | 10 |" not in text
    assert "## Cube decisions" not in text
    cubed = write_card(str(run), games=4, result_files=[str(path)], cube=True)
    rows = [line for line in cubed.splitlines() if line.startswith(("| 0 ply (Janowski) |", "| 1 ply (cubeful"))]
    assert "## Cube decisions (`nardy bench cube`, set v1: 1,500 money positions" in cubed and len(rows) == 4


def test_model_card_shows_a_match_from_the_nets_side_whichever_seat_it_had(tmp_path):
    """--agent names the net in result files where it was not the first agent (or had another
    path): its pairings are mirrored to its side (points, win rate, decided pairs and their
    intervals); pairings it did not play stay out."""
    from training.model_card import measured_lines
    summary = {"agents": ["caucasian-champion", "td:old/place.pt", "pubeval"], "stakes": "none", "pairings": [
        {"agents": ["caucasian-champion", "td:old/place.pt"], "games": 10000, "points_per_game": -0.0077,
         "points_per_game_ci95": [-0.0285, 0.0131], "win_rate": 0.497, "win_rate_ci95": [0.487, 0.507],
         "decided_pairs_won_share": 0.48, "decided_pairs_won_ci95": [0.46, 0.50]},
        {"agents": ["caucasian-champion", "pubeval"], "games": 10, "points_per_game": 0.5,
         "points_per_game_ci95": [0.1, 0.9], "win_rate": 0.6, "win_rate_ci95": [0.3, 0.9]}]}
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(summary))
    rows = [r for r in measured_lines([str(path)], ["td:old/place.pt"]) if r.startswith("| td:")]
    assert rows == [f"| td:old/place.pt | caucasian-champion | none | 10,000 | +0.008 (-0.013 to +0.029) "
                    f"| 52.0% (50.0-54.0%) | 50.3% (49.3-51.3%) | `{os.path.relpath(path)}` |"]
    first = [r for r in measured_lines([str(path)]) if r.startswith("| caucasian-champion |")]
    assert len(first) == 2 and "| -0.008 (-0.029 to +0.013) |" in first[0]      # default: the first agent's side


def test_fit_history_joins_earlier_generations_labels():
    """fit.history = h: generation g fits on the labelled afterstates of generations
    g - h .. g (oldest first; none before generation 1); history 0 keeps g's own."""
    import types

    def fake(h):                    # generation h's labelled afterstates: boards filled with h
        return (np.full((h, 28), h, np.int8), np.full(h, h, np.int8), np.full((h, 5), h / 10, np.float32))

    def run(history):
        return types.SimpleNamespace(cfg=tiny(fit={"history": history}), read_labels=fake)

    boards, classes, labels = SearchTargetsRun.fit_labels(run(2), 4)
    assert boards[:, 0].tolist() == [2, 2, 3, 3, 3, 4, 4, 4, 4]
    assert classes.tolist() == boards[:, 0].tolist() and np.allclose(labels[:, 0], boards[:, 0] / 10)
    assert SearchTargetsRun.fit_labels(run(5), 2)[0][:, 0].tolist() == [1, 2, 2]
    assert SearchTargetsRun.fit_labels(run(0), 3)[0][:, 0].tolist() == [3, 3, 3]


def test_model_card_of_a_missing_run_is_a_clear_error(tmp_path, capsys):
    from training.model_card import main
    assert main([str(tmp_path / "nothing")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("model_card: error:") and "does not exist" in err and "Traceback" not in err


def test_two_ply_labels_of_a_sure_loss_are_probabilities_and_fit():
    """A short_trictrac race the mover has lost for certain: its 2-ply average once rounded to
    P(win) = -2.2e-16, and the fit's cross-entropy refused the label.  Labels are clipped to
    [0, 1]; the fit also accepts labels written before the clip."""
    ev = load_evaluator("checkpoints/short_trictrac/search_targets/current.pt", "short_trictrac", "cpu")
    b = np.array([[1, 3, 2, 2, 3, 3, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -3, -5, 0, 0, 0, 7]], np.int8)
    classes = position_classes(b, ev.variant)
    y = label_afterstates(b, classes, ev, {"kind": "search", "plies": 1}, np.array([True]))
    assert ((y >= 0) & (y <= 1)).all() and y[0, 0] == 0.0
    race = as_netset(ev).member_for("race")
    x = race.encoder(np.repeat(b, 40, axis=0))
    bad = np.repeat(y, 40, axis=0)
    bad[:, 0] = -2.2e-16
    assert fit_net(race, x, bad, tiny().fit, seed=1) is not None
