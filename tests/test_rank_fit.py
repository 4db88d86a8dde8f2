"""The ranking term of a distillation fit (``fit.rank_weight``): the loss among a decision's
plays, the regret figure, the decision groups rebuilt from the rivals phase, and the fit and
run that use them."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from nardy_ai.classes import class_names
from nardy_ai.evaluator import load_evaluator
from nardy_ai.model import load_checkpoint
from nardy_ai.movegen import generate
from nardy_ai.netset import as_netset
from nardy_ai.variants import get_variant
from training.config import ConfigError, config_from_dict
from training.distill import SEED_RIVALS, DistillRun, decision_groups, fit_student, sample_part, sample_tasks
from training.search_targets import (DecisionGroups, decision_rank_loss, decision_regret, decision_rolls,
                                     derive_seed)

from pipeline_helpers import VARIANT, make_teacher, recipe


@pytest.fixture(scope="module")
def teacher(tmp_path_factory) -> str:
    return make_teacher(str(tmp_path_factory.mktemp("teacher") / "teacher.pt"))


def one_round(teacher, **fit) -> dict:
    """One round of the tiny recipe with 2-ply decisions and a ranking weight."""
    d = recipe(teacher, label={"two_ply": "decisions"}, sample={"decisions": 40},
               fit={"max_epochs": 2, **fit}, gate={"games": 2})
    d["rounds"] = d["rounds"][:1]
    return d


@pytest.fixture(scope="module")
def ranked_run(teacher, tmp_path_factory):
    """The one-round recipe with fit.rank_weight = 5, run to the end."""
    out = tmp_path_factory.mktemp("ranked") / "run"
    lines = []
    run = DistillRun(config_from_dict(one_round(teacher, rank_weight=5.0)), str(out), jobs=1,
                     print_fn=lines.append)
    run.run(progress=False)
    return run, out, lines


# --- the loss and the regret ---------------------------------------------------------------------

def test_rank_loss_counts_only_the_differences_within_a_decision():
    label = torch.tensor([0.10, 0.20, 0.40, -0.5, -0.3])
    gid = torch.tensor([0, 0, 0, 1, 1])
    shifted = label + torch.tensor([0.3, 0.3, 0.3, -1.0, -1.0])      # a constant per decision
    assert float(decision_rank_loss(shifted, label, gid, 2)) == pytest.approx(0.0, abs=1e-12)
    # decision 0: errors (0.1, 0, 0) centred (2/30, -1/30, -1/30); decision 1: (0, 0.2) -> (-0.1, 0.1)
    student = label + torch.tensor([0.1, 0.0, 0.0, 0.0, 0.2])
    want = ((4 + 1 + 1) / 900 / 3 + (0.01 + 0.01) / 2) / 2
    assert float(decision_rank_loss(student, label, gid, 2)) == pytest.approx(want, rel=1e-5)
    # minimising it over free equities recovers the labels' differences, not their level
    e = torch.zeros(5, requires_grad=True)
    opt = torch.optim.SGD([e], lr=2.0)
    for _ in range(300):
        opt.zero_grad()
        decision_rank_loss(e, label, gid, 2).backward()
        opt.step()
    d = e.detach() - label
    assert torch.allclose(d[:3], d[0].expand(3), atol=1e-4) and torch.allclose(d[3:], d[3].expand(2), atol=1e-4)
    assert abs(float(e.detach()[:3].mean())) < 1e-6           # the level never moved


def test_regret_is_the_labels_loss_of_the_students_first_choice():
    label = torch.tensor([0.10, 0.20, 0.40, -0.5, -0.3])
    gid = torch.tensor([0, 0, 0, 1, 1])
    # the student picks row 1 (label 0.20, best 0.40) and row 4 (the best)
    student = torch.tensor([0.0, 0.9, 0.5, 0.0, 0.1])
    assert decision_regret(student, label, gid, 2) == pytest.approx((0.2 + 0.0) / 2)
    assert decision_regret(label, label, gid, 2) == 0.0


def test_groups_batch_and_restrict_to_a_nets_rows():
    g = DecisionGroups(np.array([0, 3, 5, 1, 2, 4, 6]), np.array([0, 3, 5, 7]))
    rows, gid = g.batch(np.array([2, 0]))
    assert rows.tolist() == [4, 6, 0, 3, 5] and gid.tolist() == [0, 0, 1, 1, 1]
    # a net that values rows 0, 2, 3, 4 of 7: decision 0 keeps rows 0 and 3 (local 0, 2), decision
    # 1 keeps only row 2 (dropped), decision 2 only row 4 (dropped)
    mine = g.restricted(np.array([0, 2, 3, 4]), 7)
    assert mine.members.tolist() == [0, 2] and mine.offsets.tolist() == [0, 2] and mine.decisions.tolist() == [0]


# --- the groups of a run ----------------------------------------------------------------------

def test_decision_groups_are_the_plays_of_the_rivals_phase_decisions(ranked_run):
    """Rebuilt from the seeds alone, each group is the labelled rows among the legal plays of one
    decision (all of them, nothing else); every rival row is a play of a rebuilt decision, so
    the rebuild rolls the dice the rivals phase rolled."""
    run, out, _ = ranked_run
    v = get_variant(VARIANT)
    z = dict(np.load(out / "rounds/01/samples.npz"))
    boards, sampled = z["boards"], int(z["sampled"])
    groups = run.round_groups(1, boards)
    assert len(groups) > 5
    rc = run.cfg.rounds[0].sample
    decided = boards[:sampled][run.decisions_of(1, sampled)]
    seed = derive_seed(run.cfg.seed, SEED_RIVALS, 1)
    positions, dice = zip(*(decision_rolls(decided[lo:lo + rc.part], derive_seed(seed, k), v)
                            for k, lo in enumerate(range(0, len(decided), rc.part))))
    positions, dice = np.concatenate(positions), np.concatenate(dice)
    plays = generate(positions, dice, v)
    keys = {b.tobytes(): i for i, b in reversed(list(enumerate(boards)))}
    for g in range(len(groups)):
        d = groups.decisions[g]
        mine = plays.boards[plays.offsets[d]:plays.offsets[d + 1]]
        found = {keys[b.tobytes()] for b in mine if b.tobytes() in keys}
        assert sorted(found) == groups.members[groups.offsets[g]:groups.offsets[g + 1]].tolist()
    all_plays = {b.tobytes() for b in plays.boards}
    assert all(b.tobytes() in all_plays for b in boards[sampled:])
    assert sampled < len(boards)
    # the groups of a fit number into its rows (the round's own rows here: history 0)
    fitted = run.fit_groups(1, run.fit_units(1))
    assert np.array_equal(fitted.members, groups.members) and np.array_equal(fitted.offsets, groups.offsets)


# --- the fit and the run ----------------------------------------------------------------------

def _sample(teacher, n=300):
    v = get_variant(VARIANT)
    data = open(teacher, "rb").read()
    _, boards, classes, _ = sample_part(sample_tasks(n, n, {"contact": 1.0}, class_names(v), 1, v,
                                                     ("s", data), 32)[0])
    return boards, classes


def test_a_zero_rank_weight_fits_exactly_as_without_groups(teacher):
    """fit.rank_weight = 0 (the default): decision groups change nothing, so recipes written
    before the key fit the same nets."""
    boards, classes = _sample(teacher)
    labels = np.random.default_rng(2).random((len(boards), 5)).astype(np.float32)
    groups = DecisionGroups(np.arange(60), np.arange(0, 61, 3))
    fit = config_from_dict(recipe(teacher, fit={"nets": ["contact"], "max_epochs": 2})).rounds[0].fit
    a, b = as_netset(load_evaluator(teacher, VARIANT)), as_netset(load_evaluator(teacher, VARIANT))
    sa = fit_student(a, boards, classes, labels, fit, 3)
    sb = fit_student(b, boards, classes, labels, fit, 3, groups=groups)
    assert sa["contact"]["val_loss"] == sb["contact"]["val_loss"] and "val_regret" not in sb["contact"]
    assert all(torch.equal(p, q) for p, q in zip(a.members["contact"].net.parameters(),
                                                   b.members["contact"].net.parameters()))


def test_a_rank_weight_holds_out_whole_decisions_and_reports_rank_and_regret(teacher):
    boards, classes = _sample(teacher)
    labels = np.random.default_rng(2).random((len(boards), 5)).astype(np.float32)
    groups = DecisionGroups(np.arange(90), np.arange(0, 91, 3))
    d = recipe(teacher, fit={"nets": ["contact"], "max_epochs": 3, "rank_weight": 5.0, "validation": 0.1})
    fit = config_from_dict(d).rounds[0].fit
    plain = as_netset(load_evaluator(teacher, VARIANT))
    ranked = as_netset(load_evaluator(teacher, VARIANT))
    fit_student(plain, boards, classes, labels, config_from_dict(
        recipe(teacher, fit={"nets": ["contact"], "max_epochs": 3, "validation": 0.1})).rounds[0].fit, 3)
    s = fit_student(ranked, boards, classes, labels, fit, 3, groups=groups)["contact"]
    assert s["rank_weight"] == 5.0 and s["decisions"] == 30 and s["val_decisions"] == 3   # 10% of 30, whole
    assert s["val_rows"] >= 9 and s["val_rows"] + s["train_rows"] == len(boards)
    for k in ("val_rank", "val_rank_before", "val_regret", "val_regret_before"):
        assert np.isfinite(s[k]) and s[k] >= 0
    # the held-out criterion (cross-entropy + w * rank) never rises above the start's
    assert s["val_loss"] + 5.0 * s["val_rank"] <= s["val_loss_before"] + 5.0 * s["val_rank_before"] + 1e-9
    assert not all(torch.equal(p, q) for p, q in zip(plain.members["contact"].net.parameters(),
                                                      ranked.members["contact"].net.parameters()))


def test_a_run_with_a_rank_weight_fits_on_its_decisions_and_logs_the_regret(ranked_run):
    run, out, lines = ranked_run
    fit = load_checkpoint(out / "rounds/01/candidate.pt")["fit"]
    assert fit["contact"]["rank_weight"] == 5.0 and fit["contact"]["decisions"] > 5
    assert "val_regret" in fit["contact"]
    assert any("held-out decisions" in str(x) and "regret" in str(x) for x in lines)
    logged = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert any("val_regret_contact" in x for x in logged if x["kind"] == "fit")
    run.close()


def test_rank_weight_config_errors_name_the_key(teacher):
    with pytest.raises(ConfigError, match=r"rounds\[1\]\.fit\.rank_weight: must be 0 to 1000"):
        config_from_dict(one_round(teacher, rank_weight=-1.0))
    d = recipe(teacher, fit={"rank_weight": 1.0}, sample={"decisions": 0})
    with pytest.raises(ConfigError, match=r"rounds\[1\]\.fit\.rank_weight: needs sample.decisions"):
        config_from_dict(d)
