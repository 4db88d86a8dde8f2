"""experiments/distill.py (issues #11, #15): a student fitted on its teacher's search labels of
fresh self-play afterstates (``--sample``), with some nets fine-tuned (``--warm-nets``)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from experiments import distill
from nardy_ai.classes import class_names, position_classes
from nardy_ai.model import NeuralEvaluator, save_checkpoint
from nardy_ai.netset import NetSet, as_netset, load_evaluator

VARIANT = "short_trictrac"


@pytest.fixture(scope="module")
def teacher(tmp_path_factory) -> str:
    """A tiny short_trictrac net set (16-unit class nets, the bear-off database) as a checkpoint."""
    net = {"encoder": "expert", "hidden": (16,)}
    ev = NetSet.create(VARIANT, {"contact": net, "crashed": net, "race": net, "bearoff": "database"},
                       seed=0, device="cpu")
    path = str(tmp_path_factory.mktemp("teacher") / "teacher.pt")
    save_checkpoint(path, {"kind": "search_targets", "evaluator": ev.state(), "generation": 0})
    return path


def test_sampled_boards_are_distinct_split_by_class_and_cached(teacher, tmp_path):
    ev = load_evaluator(teacher, VARIANT)
    data = open(teacher, "rb").read()
    shares = {"contact": 0.5, "crashed": 0.2, "race": 0.3}
    b, c = distill.sampled_boards(ev, data, 600, shares, 3, 0.05, 0.5, str(tmp_path), 1)
    names = class_names(ev.variant)
    assert b.shape[1] == 28 and len(b) == len(c)
    assert len(np.unique(b, axis=0)) == len(b)                     # distinct afterstates
    assert np.array_equal(position_classes(b, ev.variant), c)      # each tagged with its own class
    counts = {k: int(np.sum(c == names.index(k))) for k in shares}
    assert counts == {"contact": 300, "crashed": 120, "race": 180}
    cached = [f for f in os.listdir(tmp_path) if f.startswith("sample_")]
    assert len(cached) == 1
    b2, c2 = distill.sampled_boards(ev, data, 600, shares, 3, 0.05, 0.5, str(tmp_path), 1)
    assert np.array_equal(b, b2) and np.array_equal(c, c2)         # read back, not drawn again
    b3, _ = distill.sampled_boards(ev, data, 600, shares, 4, 0.05, 0.5, str(tmp_path), 1)
    assert not np.array_equal(b, b3)                                # another seed, other games


def test_distill_from_fresh_samples_fits_new_and_warm_nets(teacher, tmp_path):
    out = str(tmp_path / "student.pt")
    rc = distill.main(["--variant", VARIANT, "--teacher", teacher, "--sample", "400", "--seed", "5",
                       "--cache", str(tmp_path / "cache"), "--hidden", "8", "--nets", "contact,race",
                       "--warm-nets", "race", "--max-epochs", "2", "--jobs", "1", "--threads", "1",
                       "--out", out])
    assert rc == 0
    student = as_netset(load_evaluator(out, VARIANT))
    old = as_netset(load_evaluator(teacher, VARIANT))
    assert tuple(student.members["contact"].hidden) == (8,)        # new, of --hidden
    assert tuple(student.members["race"].hidden) == (16,)          # fine-tuned at its own size
    assert tuple(student.members["crashed"].hidden) == (16,)       # not named: the teacher's
    crashed_same = all(torch.equal(p, q) for p, q in zip(student.members["crashed"].net.parameters(),
                                                         old.members["crashed"].net.parameters()))
    assert crashed_same
    assert isinstance(student.members["race"], NeuralEvaluator)
    report = json.load(open(out + ".json"))
    assert report["rows"] == 200 + 120           # contact and race rows only: crashed ones go unlabelled
    assert report["sample"] == 400 and report["args"]["warm_nets"] == "race" and set(report["nets"]) == {"contact", "race"}
    assert report["nets"]["race"]["warm"] and not report["nets"]["contact"]["warm"]
    lines = [json.loads(x) for x in open(tmp_path / "metrics.jsonl")]      # every epoch of each fit
    assert [(x["net"], x["epoch"]) for x in lines] == [("contact", 1), ("contact", 2), ("race", 1), ("race", 2)]
    assert all(x["val_loss"] > 0 for x in lines)
    assert os.listdir(tmp_path / "tb")                                       # TensorBoard events


def test_distill_needs_runs_or_a_sample(teacher, tmp_path):
    with pytest.raises(SystemExit):
        distill.main(["--variant", VARIANT, "--teacher", teacher, "--cache", str(tmp_path),
                      "--out", str(tmp_path / "x.pt")])


@pytest.mark.parametrize("flags, words", [
    (["--nets", "contact,midgame"], "--nets: unknown position class midgame"),
    (["--nets", "contact", "--warm-nets", "race"], "--warm-nets: every net named must also be in --nets"),
    (["--shares", "contact=0.5,holding=0.5"], "--shares: unknown position class holding"),
    (["--shares", "contact=half"], "--shares: 'contact=half' is not class=fraction"),
])
def test_distill_names_a_bad_class_or_share(teacher, tmp_path, capsys, flags, words):
    with pytest.raises(SystemExit) as e:
        distill.main(["--variant", VARIANT, "--teacher", teacher, "--sample", "100", "--cache", str(tmp_path),
                      "--out", str(tmp_path / "x.pt"), *flags])
    assert e.value.code != 0
    assert words in capsys.readouterr().err + str(e.value.code)
    assert not os.path.exists(tmp_path / "x.pt")


def test_warm_fine_tunes_every_named_net_at_its_own_size(teacher, tmp_path):
    out = str(tmp_path / "student.pt")
    assert distill.main(["--variant", VARIANT, "--teacher", teacher, "--sample", "300", "--seed", "6",
                         "--cache", str(tmp_path / "cache"), "--nets", "contact,race", "--warm",
                         "--max-epochs", "1", "--jobs", "1", "--threads", "1", "--out", out]) == 0
    student = as_netset(load_evaluator(out, VARIANT))
    assert tuple(student.members["contact"].hidden) == (16,)       # not the default --hidden 512
    report = json.load(open(out + ".json"))
    assert report["nets"]["contact"]["warm"] and report["nets"]["race"]["warm"]


def test_co_teachers_labels_are_the_mean_of_the_teachers(teacher, tmp_path, monkeypatch):
    other = NetSet.create(VARIANT, {c: {"encoder": "expert", "hidden": (16,)} for c in ("contact", "crashed", "race")}
                          | {"bearoff": "database"}, seed=1, device="cpu")
    co = str(tmp_path / "co.pt")
    save_checkpoint(co, {"kind": "search_targets", "evaluator": other.state(), "generation": 0})
    seen = {}

    def capture(ev, boards, classes, labels, wanted, a, scratch, log=None):
        seen.update(boards=boards.copy(), classes=classes.copy(), labels=labels.copy())
        return {}
    monkeypatch.setattr(distill, "refit_nets", capture)
    cache = str(tmp_path / "cache")
    assert distill.main(["--variant", VARIANT, "--teacher", teacher, "--co-teachers", co, "--sample", "200",
                         "--seed", "8", "--cache", cache, "--nets", "race", "--jobs", "1", "--threads", "1",
                         "--out", str(tmp_path / "s.pt")]) == 0
    b, c = seen["boards"], seen["classes"]
    assert len(b) > 0 and np.all(c == class_names(VARIANT).index("race"))
    mine = distill.teacher_labels(b, c, load_evaluator(teacher, VARIANT), open(teacher, "rb").read(), 1, cache, 1)
    theirs = distill.teacher_labels(b, c, load_evaluator(co, VARIANT), open(co, "rb").read(), 1, cache, 1)
    assert not np.allclose(mine, theirs)                        # two different teachers ...
    np.testing.assert_allclose(seen["labels"], (mine + theirs) / 2, rtol=1e-6)   # ... averaged
