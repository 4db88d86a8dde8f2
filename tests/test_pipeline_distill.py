"""training/distill.py: ``[method] kind = "distill"`` of ``nardy train`` -- rounds of sample,
rivals, label, fit and gate on a tiny recipe (a 16-unit net set, a few hundred rows), its
stages as public functions, resume after a stop or a kill at each phase, and the plan."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from nardy_ai.backends import make_backend
from nardy_ai.classes import class_names, position_classes
from nardy_ai.model import load_checkpoint, save_checkpoint
from nardy_ai.evaluator import load_evaluator
from nardy_ai.netset import as_netset
from nardy_ai.variants import get_variant
from training.config import ConfigError, config_from_dict
from training.distill import (DistillRun, check_growth, fit_student, merge_parts, plan, rivals_part, RivalsTask,
                              sample_part, sample_tasks)
from training.plan import train_plan
from training.search_targets import joined_units

from pipeline_helpers import (VARIANT, StopsAfter, interrupt_train, make_teacher, nardy, recipe, resume_as_printed,
                              resume_finished, same_weights, toml_text, weights)


@pytest.fixture(scope="module")
def teacher(tmp_path_factory) -> str:
    """A tiny backgammon net set (16-unit contact / crashed / race nets, the bear-off database)."""
    return make_teacher(str(tmp_path_factory.mktemp("teacher") / "teacher.pt"))


@pytest.fixture(scope="module")
def finished(teacher, tmp_path_factory):
    """The tiny recipe run start to finish on 1 process."""
    out = tmp_path_factory.mktemp("run") / "run"
    run = DistillRun(config_from_dict(recipe(teacher)), str(out), config_text="# tiny\n", jobs=1,
                     print_fn=lambda *a: None)
    res = run.run(progress=False)
    run.close()
    return out, res


# --- the stages ------------------------------------------------------------------------------

def test_sample_parts_are_distinct_class_tagged_and_the_same_on_any_number_of_jobs(teacher):
    v = get_variant(VARIANT)
    data = open(teacher, "rb").read()
    ck = ("sha", data)
    names = class_names(v)
    tasks = sample_tasks(250, 100, {"contact": 0.6, "race": 0.4}, names, 9, v, ck, 32)
    assert [sum(t.quotas.values()) for t in tasks] == [100, 100, 50]
    assert tasks[0].quotas == {"contact": 60, "race": 40} and len({t.seed for t in tasks}) == 3
    one = {t.index: r for t, r in make_backend("local", 1).run(sample_part, tasks)}
    with make_backend("local", 2) as be:
        two = {t.index: r for t, r in be.run(sample_part, tasks)}
    for k in one:
        assert np.array_equal(one[k][1], two[k][1]) and np.array_equal(one[k][2], two[k][2])
    b, c = merge_parts([(one[k][1], one[k][2]) for k in sorted(one)])
    assert len(np.unique(b, axis=0)) == len(b) <= 250
    assert np.array_equal(position_classes(b, v), c)
    assert set(np.unique(c)) <= {names.index("contact"), names.index("race")}
    # exclude: boards already in the sample are not added again
    b2, _ = merge_parts([(one[0][1], one[0][2])], exclude=one[0][1][:10])
    assert len(b2) == len(one[0][1]) - 10


def test_rivals_are_plays_of_the_named_classes_not_among_the_sample(teacher):
    v = get_variant(VARIANT)
    data = open(teacher, "rb").read()
    names = class_names(v)
    tasks = sample_tasks(80, 80, {"contact": 1.0}, names, 3, v, ("sha", data), 16)
    _, boards, classes, _ = sample_part(tasks[0])
    _, rb, rc, used = rivals_part(RivalsTask(0, v, ("sha", data), boards, ("contact",), 5, 0.5, 7))
    assert 0 < used <= len(boards) and len(rb) <= 5 * used
    assert set(np.unique(rc)) == {names.index("contact")}
    assert np.array_equal(position_classes(rb, v), rc)
    new, _ = merge_parts([(rb, rc)], exclude=boards)
    assert len(new) <= len(rb)
    keys = {bytes(x) for x in boards.astype(np.int8)}
    assert not any(bytes(x) in keys for x in new.astype(np.int8))


def test_fit_student_makes_new_nets_warm_starts_others_and_leaves_the_rest(teacher):
    ev = as_netset(load_evaluator(teacher, VARIANT))
    old = {k: [p.detach().clone() for p in m.net.parameters()] for k, m in ev.nets().items()}
    v = ev.variant
    names = class_names(v)
    rng = np.random.default_rng(0)
    data = open(teacher, "rb").read()
    _, boards, classes, _ = sample_part(sample_tasks(200, 200, {"contact": 0.5, "race": 0.5}, names, 1, v,
                                                     ("s", data), 32)[0])
    labels = rng.random((len(boards), 5)).astype(np.float32)
    cfg = config_from_dict(recipe(teacher, fit={"nets": ["contact", "race"], "warm_nets": ["race"],
                                                "hidden": [8], "max_epochs": 2}))
    seen = []
    stats = fit_student(ev, boards, classes, labels, cfg.rounds[0].fit, 5, on_net=lambda n, f: seen.append(n))
    assert seen == ["contact", "race"]
    assert tuple(ev.members["contact"].hidden) == (8,) and not stats["contact"]["warm"]
    assert tuple(ev.members["race"].hidden) == (16,) and stats["race"]["warm"]
    assert stats["race"]["learning_rate"] == cfg.rounds[0].fit.warm_learning_rate
    assert all(torch.equal(p, q) for p, q in zip(ev.members["crashed"].net.parameters(), old["crashed"]))
    assert stats["contact"]["rows"] == int(np.sum(classes == names.index("contact")))
    # a resumed fit skips the nets already done
    again = as_netset(load_evaluator(teacher, VARIANT))
    seen.clear()
    fit_student(again, boards, classes, labels, cfg.rounds[0].fit, 5, done={"contact": stats["contact"]},
                on_net=lambda n, f: seen.append(n))
    assert seen == ["race"]


def test_a_grown_net_starts_from_the_teachers_values_and_is_wider(teacher):
    """fit.grow_nets: the teacher's 16-unit contact net widened to 24 units values the rows exactly
    as the teacher before training (the added units send nothing on); after the fit it is the
    wider net, trained (its weights moved) at fit.learning_rate."""
    from training.td import widen_copy
    from nardy_ai.model import NeuralEvaluator
    ev = as_netset(load_evaluator(teacher, VARIANT))
    v = ev.variant
    names = class_names(v)
    data = open(teacher, "rb").read()
    _, boards, classes, _ = sample_part(sample_tasks(200, 200, {"contact": 1.0}, names, 1, v, ("s", data), 32)[0])
    old = ev.members["contact"]
    wide = NeuralEvaluator.create(v, old.encoder.name, (24,), old.activation)
    widen_copy(old, wide, "fit.grow_nets", "the teacher")
    x = old.encoder(boards)
    with torch.no_grad():
        assert torch.allclose(old.net(torch.as_tensor(x)), wide.net(torch.as_tensor(x)), atol=1e-6)
    labels = np.random.default_rng(1).random((len(boards), 5)).astype(np.float32)
    cfg = config_from_dict(recipe(teacher, fit={"nets": ["contact"], "grow_nets": ["contact"], "hidden": [24],
                                                "max_epochs": 2, "learning_rate": 0.01}))
    stats = fit_student(ev, boards, classes, labels, cfg.rounds[0].fit, 5)
    grown = ev.members["contact"]
    assert tuple(grown.hidden) == (24,) and stats["contact"]["grown"] and not stats["contact"]["warm"]
    assert stats["contact"]["learning_rate"] == 0.01
    assert not torch.equal(grown.net.state_dict()["net.0.weight"][:16], old.net.state_dict()["net.0.weight"])
    with pytest.raises(ConfigError, match=r"rounds\[2\]\.fit\.grow_nets: the contact net has hidden \[8\] there"):
        d = recipe(teacher)          # round 1 refits contact at 8 units: round 2 cannot grow it to 6
        d["rounds"][1]["fit"] = {**d["rounds"][1]["fit"], "warm_nets": [], "grow_nets": ["contact"], "hidden": [6]}
        check_growth(config_from_dict(d), {"contact": [16], "crashed": [16], "race": [16]})
    with pytest.raises(ConfigError, match=r"fit.grow_nets \(contact\)\.hidden"):
        fit_student(as_netset(load_evaluator(teacher, VARIANT)), boards, classes, labels,
                    config_from_dict(recipe(teacher, fit={"nets": ["contact"], "grow_nets": ["contact"],
                                                          "hidden": [8], "max_epochs": 1})).rounds[0].fit, 5)


# --- the run ---------------------------------------------------------------------------------

def test_a_run_goes_through_every_round_and_phase(finished, teacher):
    out, res = finished
    assert not res["stopped"] and res["round"] == 3
    state = json.loads((out / "state.json").read_text())
    assert [h["name"] for h in state["history"]] == ["first", "second"]
    assert [h["promoted"] for h in state["history"]] == [True, False]      # thresholds -3 and +3
    assert state["current_round"] == 1
    assert same_weights(weights(out / "current.pt"), weights(out / "rounds/01/candidate.pt"))
    r1 = np.load(out / "rounds/01/samples.npz")
    assert int(r1["sampled"]) <= 300 < len(r1["boards"])                    # rivals added
    assert len(np.unique(r1["boards"], axis=0)) == len(r1["boards"])
    chunks = sorted((out / "rounds/01/labels").glob("chunk_*.npz"))
    assert len(chunks) == (len(r1["boards"]) + 99) // 100
    student = as_netset(load_evaluator(str(out / "current.pt"), VARIANT))
    assert tuple(student.members["contact"].hidden) == (8,) and tuple(student.members["race"].hidden) == (16,)
    second = as_netset(load_evaluator(str(out / "rounds/02/candidate.pt"), VARIANT))
    assert tuple(second.members["contact"].hidden) == (8,) and tuple(second.members["crashed"].hidden) == (6,)
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    kinds = [x["kind"] for x in lines]
    for k in ("sample", "rivals", "label", "fit_epoch", "fit", "gate", "eval"):
        assert k in kinds
    rounds = [x["round"] for x in lines if "round" in x]
    assert rounds == sorted(rounds)                                          # never backwards
    gate = json.loads((out / "rounds/02/gate.json").read_text())
    assert gate["games"] == 20 and gate["promoted"] is False


class StopAfter(StopsAfter, DistillRun):
    """Asks itself to stop (as Ctrl-C does) after the ``count``-th metrics line of ``kind``."""

    def __init__(self, *a, kind=None, count=1, **kw):
        super().__init__(*a, **kw)
        self.stop_kind, self.stop_after = kind, count


@pytest.mark.parametrize("stop_kind,count", [("part", 1), ("part", 6), ("fit", 1)])
def test_a_stopped_run_resumes_to_the_same_nets(finished, teacher, tmp_path, stop_kind, count):
    ref, _ = finished
    cfg = config_from_dict(recipe(teacher))
    out = tmp_path / "run"
    run = StopAfter(cfg, str(out), jobs=1, kind=stop_kind, count=count, print_fn=lambda *a: None)
    res = run.run(progress=False)
    run.close()
    assert res["stopped"] and res["round"] == 1
    again = DistillRun(cfg, str(out), resume=True, jobs=1, print_fn=lambda *a: None)
    res = again.run(progress=False)
    again.close()
    assert res["round"] == 3
    for r in ("01", "02"):
        assert same_weights(weights(out / f"rounds/{r}/candidate.pt"), weights(ref / f"rounds/{r}/candidate.pt"))
    rounds = [json.loads(x).get("round", 0) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert rounds == sorted(rounds)


def test_a_kill_mid_label_or_mid_fit_or_a_fresh_clone_loses_only_that_work(finished, teacher, tmp_path):
    ref, _ = finished
    cfg = config_from_dict(recipe(teacher))
    out = tmp_path / "run"
    shutil.copytree(ref, out)
    state = json.loads((out / "state.json").read_text())

    def resume_at(round_, phase):
        s = dict(state, round=round_, phase=phase)
        (out / "state.json").write_text(json.dumps(s))
        run = DistillRun(cfg, str(out), resume=True, jobs=1, print_fn=lambda *a: None)
        at = run.state["phase"]
        run.run(progress=False)
        run.close()
        return at

    # kill -9 mid-label: one chunk never written; only it is labelled again
    chunks = sorted((out / "rounds/02/labels").glob("chunk_*.npz"))
    before = {p.name: p.stat().st_mtime_ns for p in chunks[1:]}
    chunks[0].unlink()
    (out / "rounds/02/candidate.pt").unlink()
    assert resume_at(2, "label") == "label"
    assert {p.name: p.stat().st_mtime_ns for p in chunks[1:]} == before
    assert same_weights(weights(out / "rounds/02/candidate.pt"), weights(ref / "rounds/02/candidate.pt"))
    # kill -9 mid-fit: partial.pt holds the contact net only; only the crashed net is fitted again
    partial = load_checkpoint(out / "rounds/02/partial.pt")
    partial["fit"].pop("crashed")
    save_checkpoint(out / "rounds/02/partial.pt", partial)
    (out / "rounds/02/candidate.pt").unlink()
    assert resume_at(2, "fit") == "fit"
    cand = load_checkpoint(out / "rounds/02/candidate.pt")["fit"]
    assert cand["contact"] == partial["fit"]["contact"]                 # not fitted again
    assert same_weights(weights(out / "rounds/02/candidate.pt"), weights(ref / "rounds/02/candidate.pt"))
    # a fresh clone: rounds/ is not committed; round 2 starts again at its sample, same nets
    shutil.rmtree(out / "rounds")
    assert resume_at(2, "gate") == "sample"
    assert same_weights(weights(out / "rounds/02/candidate.pt"), weights(ref / "rounds/02/candidate.pt"))


def test_a_kill_mid_net_resumes_after_the_last_finished_epoch(finished, teacher, tmp_path, monkeypatch):
    """A run stopped right after an epoch of a net's fit keeps that epoch (``fit_epoch.pt``):
    the resumed fit goes on from the next epoch (no epoch logged twice), ends with the nets of
    the run that was not stopped, and removes the file once the round's student is written."""
    import training.distill as distill
    ref, _ = finished
    cfg = config_from_dict(recipe(teacher))
    out = tmp_path / "run"
    saved, real_save = [], distill.save_fit_epoch
    run = DistillRun(cfg, str(out), jobs=1, print_fn=lambda *a: None)

    def save_then_stop(path, payload):
        real_save(path, payload)
        saved.append((payload["net"], payload["state"]["epoch"]))
        if len(saved) == 2:
            run.request_stop()                   # the kill: the next minibatch ends the fit

    monkeypatch.setattr(distill, "save_fit_epoch", save_then_stop)
    res = run.run(progress=False)
    run.close()
    assert res["stopped"] and run.state["phase"] == "fit"
    net, epoch = saved[-1]
    epoch_file = out / "rounds/01/fit_epoch.pt"
    assert distill.load_fit_epoch(str(epoch_file))["state"]["epoch"] == epoch
    monkeypatch.setattr(distill, "save_fit_epoch", real_save)
    said = []
    again = DistillRun(cfg, str(out), resume=True, jobs=1, print_fn=said.append)
    again.run(progress=False)
    again.close()
    assert f"round 1: the {net} net's fit goes on after epoch {epoch}" in said
    for r in ("01", "02"):
        assert same_weights(weights(out / f"rounds/{r}/candidate.pt"), weights(ref / f"rounds/{r}/candidate.pt"))
        assert not (out / f"rounds/{r}/fit_epoch.pt").exists()
    fitted = [(x["round"], x["net"], x["epoch"]) for x in map(json.loads, (out / "metrics.jsonl").read_text().splitlines())
              if x["kind"] == "fit_epoch"]
    assert len(fitted) == len(set(fitted))
    assert ref_fit_epochs(ref) == sorted(fitted)


def ref_fit_epochs(run) -> list:
    return sorted((x["round"], x["net"], x["epoch"]) for x in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())
                  if x["kind"] == "fit_epoch")


def test_rounds_from_begins_a_recipe_with_another_recipes_rounds(teacher, tmp_path):
    """``rounds_from = "OTHER.toml"`` (relative to the recipe's folder): OTHER's rounds, then the
    recipe's own; the text returned (what a run folder keeps) holds them all, so it loads
    alone from any folder to the same config.  Recipes that differ in what makes rounds the
    same, a nested ``rounds_from``, a missing file or the key inside a section are refused."""
    from training.config import load_config
    base = recipe(teacher)
    (tmp_path / "base.toml").write_text(toml_text(base))
    third = dict(base["rounds"][1], name="third")
    more = {k: v for k, v in base.items() if k != "rounds"}
    text = toml_text(dict(more, rounds=[third]))
    lines = text.splitlines()
    lines.insert(2, 'rounds_from = "base.toml"')
    (tmp_path / "more.toml").write_text("\n".join(lines) + "\n")
    cfg, joined = load_config(str(tmp_path / "more.toml"))
    assert [r.name for r in cfg.rounds] == ["first", "second", "third"]
    assert cfg.rounds[:2] == config_from_dict(base).rounds
    elsewhere = tmp_path / "run"
    elsewhere.mkdir()
    (elsewhere / "config.toml").write_text(joined)
    again, text_again = load_config(str(elsewhere / "config.toml"))
    assert again.to_dict() == cfg.to_dict() and text_again == joined
    assert '# rounds_from = "base.toml"' in joined

    def refused(body: str, message: str):
        (tmp_path / "bad.toml").write_text(body)
        with pytest.raises(ConfigError, match=message):
            load_config(str(tmp_path / "bad.toml"))
    refused(toml_text(dict(more, seed=5, rounds=[third])).replace("seed = 5", 'seed = 5\nrounds_from = "base.toml"'),
            "rounds_from: base.toml has seed 4, this recipe 5")
    refused(text.replace('variant = ', 'rounds_from = "more.toml"\nvariant = '), "more.toml has its own rounds_from")
    refused(text.replace('variant = ', 'rounds_from = "gone.toml"\nvariant = '), "rounds_from: gone.toml is not a file")
    refused(text.replace("[run]", '[run]\nrounds_from = "base.toml"'), "run.rounds_from: unknown key")


def test_config_errors_name_the_round_and_key(teacher):
    def bad(**over):
        d = recipe(teacher)
        for k, v in over.items():
            d["rounds"][1][k] = {**d["rounds"][1][k], **v}
        return d
    for d, msg in [(bad(fit={"lr_halvings": 99}), r"rounds\[2\]\.fit\.lr_halvings"),
                   (bad(sample={"positionz": 3}), r"rounds\[2\]\.sample\.positionz: unknown key"),
                   (bad(fit={"nets": ["kontact"], "warm_nets": []}), r"rounds\[2\]\.fit\.nets: kontact"),
                   (bad(fit={"grow_nets": ["crashed"], "hidden": []}), r"rounds\[2\]\.fit\.grow_nets: needs fit.hidden"),
                   (bad(fit={"grow_nets": ["contact"], "warm_nets": ["contact"], "hidden": [8]}),
                    r"rounds\[2\]\.fit\.grow_nets: a net is grown or warm-started"),
                   (bad(sample={"quotas": {"contact": -1.0}}), r"rounds\[2\]\.sample\.quotas"),
                   (bad(gate={"threshold": "x"}), r"rounds\[2\]\.gate\.threshold: must be a number"),
                   (bad(label={"two_ply": "decisions"}), r"rounds\[2\]\.label\.two_ply: needs sample.decisions"),
                   (bad(label={"two_ply": "rivals"}), r"rounds\[2\]\.label\.two_ply: must be"),
                   (recipe(teacher, label={"two_ply": "decisions", "plies": 2}),
                    r"rounds\[1\]\.label\.two_ply: only with label.plies = 1"),
                   (bad(label={"decision_plies": 3}), r"rounds\[2\]\.label\.decision_plies: only with label.two_ply"),
                   (recipe(teacher, label={"two_ply": "decisions", "decision_plies": 4}),
                    r"rounds\[1\]\.label\.decision_plies: must be 2 or 3"),
                   ({**recipe(teacher), "rounds": []}, r"rounds: .*distill"),
                   ({**recipe(teacher), "method": {"kind": "td"}}, r"rounds: .*distill")]:
        with pytest.raises(ConfigError, match=msg):
            config_from_dict(d)


def test_resume_may_add_rounds_but_not_change_begun_ones(finished, teacher, tmp_path):
    ref, _ = finished
    out = tmp_path / "run"
    shutil.copytree(ref, out)
    d = recipe(teacher)
    d["rounds"][0]["fit"]["hidden"] = [9]
    with pytest.raises(Exception, match="rounds 1"):
        DistillRun(config_from_dict(d), str(out), resume=True, jobs=1)
    d = recipe(teacher)
    d["rounds"].append({**d["rounds"][1], "name": "third"})
    run = DistillRun(config_from_dict(d), str(out), resume=True, jobs=1, print_fn=lambda *a: None)
    assert not run.finished
    run.run(progress=False)
    run.close()
    assert [h["name"] for h in json.loads((out / "state.json").read_text())["history"]] == ["first", "second",
                                                                                          "third"]


def test_fit_history_adds_earlier_rounds_rows_and_may_be_set_until_the_fit_begins(finished, teacher, tmp_path):
    ref, _ = finished
    out = tmp_path / "run"
    shutil.copytree(ref, out)
    state = json.loads((out / "state.json").read_text())
    d = recipe(teacher)
    d["rounds"][1]["fit"] = {**d["rounds"][1]["fit"], "history": 1}
    (out / "state.json").write_text(json.dumps(dict(state, round=2, phase="fit", history=state["history"][:1])))
    with pytest.raises(Exception, match=r"rounds 2 .*already begun"):     # its fit has begun: frozen
        DistillRun(config_from_dict(d), str(out), resume=True, jobs=1)
    (out / "state.json").write_text(json.dumps(dict(state, round=2, phase="label", history=state["history"][:1])))
    lines = []
    run = DistillRun(config_from_dict(d), str(out), resume=True, jobs=1, print_fn=lines.append)
    assert len(joined_units(run.fit_units(2))[0]) == len(run.read_labels(1)[0]) + len(run.read_labels(2)[0])
    run.run(progress=False)
    run.close()
    ref1, ref2 = (load_checkpoint(ref / f"rounds/0{r}/candidate.pt")["fit"] for r in (1, 2))
    new2 = load_checkpoint(out / "rounds/02/candidate.pt")["fit"]
    for net in ("contact", "crashed"):
        assert new2[net]["rows"] == ref1[net]["rows"] + ref2[net]["rows"]
    # an earlier round's labels gone (a moved folder): said, and the fit uses the round's own rows
    shutil.rmtree(out / "rounds/01/labels")
    lines.clear()
    run = DistillRun(config_from_dict(d), str(out), resume=True, jobs=1, print_fn=lines.append)
    assert len(joined_units(run.fit_units(2))[0]) == len(run.read_labels(2)[0])
    run.close()
    assert any("round 1's labels are not on disk" in str(x) for x in lines)


def test_fit_history_reaches_back_at_most_to_round_1(teacher):
    d = recipe(teacher)
    d["rounds"][0]["fit"] = {**d["rounds"][0]["fit"], "history": 1}
    with pytest.raises(ConfigError, match=r"rounds\[1\]\.fit\.history: must be 0 to 0"):
        config_from_dict(d)


def test_two_ply_decisions_labels_the_decisions_and_their_rivals_at_2_plies(teacher, tmp_path):
    """label.two_ply = "decisions": the sampled rows the rivals stage took as decisions and
    every rival row are labelled by the teacher's 2-ply search, the other rows at 1 ply."""
    from nardy_ai.search import search_values
    d = recipe(teacher, label={"two_ply": "decisions"}, sample={"decisions": 15}, gate={"games": 2})
    d["rounds"] = d["rounds"][:1]
    run = DistillRun(config_from_dict(d), str(tmp_path / "run"), jobs=1, print_fn=lambda *a: None)
    try:
        run.run(progress=False)
        z = dict(np.load(tmp_path / "run/rounds/01/samples.npz"))
        deep = run.two_ply_rows(1, z)
        sampled = int(z["sampled"])
        assert deep[:sampled].sum() == 15 and deep[sampled:].all() and len(z["boards"]) > sampled
        boards, classes, labels = run.read_labels(1)
    finally:
        run.close()
    assert (boards == z["boards"]).all()
    ev = load_evaluator(teacher, VARIANT)
    live = classes != class_names(get_variant(VARIANT)).index("bearoff")
    rows_2, rows_1 = np.flatnonzero(deep & live)[:6], np.flatnonzero(~deep & live)[:6]
    assert len(rows_2) == 6 and len(rows_1) == 6
    np.testing.assert_allclose(labels[rows_2], search_values(boards[rows_2], ev, 2), atol=1e-5)
    np.testing.assert_allclose(labels[rows_1], search_values(boards[rows_1], ev, 1), atol=1e-5)
    assert np.abs(labels[rows_2] - search_values(boards[rows_2], ev, 1)).max() > 1e-3   # not the 1-ply values


def test_decision_plies_3_labels_the_deep_rows_by_a_3_ply_search(teacher):
    """label.decision_plies = 3: the rows that label.two_ply = "decisions" marks are valued by
    the teacher's 3-ply search (each of the opponent's 21 rolls, its 0-ply best reply valued
    at 2 plies), the others at label.plies; the chunk settings name the depth, so chunks
    labelled at 2 plies are not taken for 3-ply ones."""
    from nardy_ai.search import search_values
    from training.search_targets import label_afterstates
    ev = load_evaluator(teacher, VARIANT)
    v = get_variant(VARIANT)
    # three race afterstates (no contact, outside the bear-off database; a 3-ply search of each
    # takes seconds with this tiny net)
    boards = np.zeros((3, 28), np.int8)
    boards[:, [0, 1, 2, 7, 8, 9]] = [[3, 3, 3, 2, 2, 2], [4, 2, 3, 1, 3, 2], [2, 3, 4, 3, 2, 1]]
    boards[:, [14, 15, 16, 21, 22, 23]] = [[-2, -2, -2, -3, -3, -3], [-1, -3, -2, -3, -3, -3],
                                           [-2, -2, -2, -4, -3, -2]]
    classes = position_classes(boards, v)
    assert (classes == class_names(v).index("race")).all()
    settings = {"kind": "search", "plies": 1, "decision_plies": 3}
    deep = np.array([True, False, True])
    labels = label_afterstates(boards, classes, ev, settings, deep)
    np.testing.assert_allclose(labels[deep], search_values(boards[deep], ev, 3), atol=1e-5)
    np.testing.assert_allclose(labels[~deep], search_values(boards[~deep], ev, 1), atol=1e-5)
    two = label_afterstates(boards, classes, ev, {"kind": "search", "plies": 1}, deep)
    np.testing.assert_allclose(two[deep], search_values(boards[deep], ev, 2), atol=1e-5)
    assert np.abs(labels[deep] - two[deep]).max() > 1e-4


# --- the plan ----------------------------------------------------------------------------------

def test_plan_sizes_and_hours_follow_the_rates(teacher):
    cfg = config_from_dict(recipe(teacher))
    rates = {"sample_per_s": 100.0, "label_per_s": 50.0, "label2_per_s": 2.0, "rivals_per_s": 30.0,
             "gate_games_per_s": 10.0, "fit_rows_per_s": {"238x8": 1000.0, "238x16": 500.0}}
    stages = plan(cfg, rates, jobs=2, threads=1, teacher_hidden={"contact": [16], "crashed": [16], "race": [16]},
                  inputs={"contact": 238, "crashed": 238, "race": 238})
    by = {(s["round"], s["stage"]): s for s in stages}
    assert by[(1, "sample")]["seconds"] == pytest.approx(300 / (100 * 2))
    assert by[(1, "rivals")]["seconds"] == pytest.approx(60 / (30 * 2))
    label = by[(1, "label (1-ply)")]
    assert label["seconds"] == pytest.approx(label["rows"] / (50 * 2)) and label["rows"] > 300
    fit = by[(1, "fit")]
    assert fit["seconds"] == pytest.approx(label["rows"] * 3 / 1000)           # all rows, 3 epochs, 8 units
    # round 2: warm contact at the 8 units round 1 gave it (75 rows), a new 6-unit crashed net at
    # the slowest rate measured (75 rows), 2 epochs each
    assert by[(2, "fit")]["seconds"] == pytest.approx(75 * 2 / 1000 + 75 * 2 / 500)
    assert by[(2, "fit")]["nets"][0].startswith("contact [8]")
    assert (2, "rivals") not in by and by[(2, "gate")]["seconds"] == pytest.approx(2.0)
    d = recipe(teacher)
    d["rounds"][1]["fit"] = {**d["rounds"][1]["fit"], "history": 1}
    with_history = plan(config_from_dict(d), rates, jobs=2, threads=1,
                        teacher_hidden={"contact": [16], "crashed": [16], "race": [16]})
    fit2 = next(s for s in with_history if s["round"] == 2 and s["stage"] == "fit")
    assert fit2["rows"] == label["rows"] + 150                                # round 1's rows join round 2's
    d = recipe(teacher, label={"two_ply": "decisions"})
    mixed = {(s["round"], s["stage"][:5]): s for s in plan(config_from_dict(d), rates, jobs=2, threads=1,
                                                            teacher_hidden={"contact": [16], "crashed": [16], "race": [16]})}
    lab = mixed[(1, "label")]
    deep = 60 + by[(1, "rivals")]["rows"]                                      # the decisions and their rivals
    assert lab["stage"] == f"label ({deep / lab['rows']:.0%} 2-ply)"
    assert lab["seconds"] == pytest.approx(((lab["rows"] - deep) / 50 + deep / 2) / 2)
    d = recipe(teacher, label={"two_ply": "decisions", "decision_plies": 3})
    three = {(s["round"], s["stage"][:5]): s for s in plan(config_from_dict(d), {**rates, "label3_per_s": 0.1},
                                                            jobs=2, threads=1,
                                                            teacher_hidden={"contact": [16], "crashed": [16],
                                                                            "race": [16]})}
    lab3 = three[(1, "label")]
    assert lab3["stage"] == f"label ({deep / lab3['rows']:.0%} 3-ply)" and lab3["rows"] == lab["rows"]
    assert lab3["seconds"] == pytest.approx(((lab3["rows"] - deep) / 50 + deep / 0.1) / 2)
    text = train_plan(cfg, jobs=2, rates=rates)
    assert "first" in text and "second" in text and "total:" in text and "hours" in text


def test_plan_counts_rivals_at_the_rate_measured_for_the_recipes_settings(teacher):
    """The new rows a decision adds as rivals differ by variant (long nardy 3.4 of 5, backgammon
    about 2.3): the plan uses the measured rate where it was measured with the round's
    candidates and threshold, the rough rule elsewhere."""
    from training.distill import rivals_per_decision
    rates = {"sample_per_s": 100.0, "label_per_s": 50.0, "label2_per_s": 2.0, "rivals_per_s": 30.0,
             "gate_games_per_s": 10.0, "fit_rows_per_s": {"238x8": 1000.0},
             "rivals_per_decision": 3.4, "rivals_settings": [5, 0.1]}
    assert rivals_per_decision(5, 0.1, rates) == 3.4
    assert rivals_per_decision(8, 0.1, rates) == pytest.approx(8 - 2.6)     # measured for other settings
    assert rivals_per_decision(5, 0.1, {}) == pytest.approx(5 - 2.6)
    d = recipe(teacher, label={"two_ply": "decisions"})
    stages = plan(config_from_dict(d), rates, jobs=2, threads=1,
                  teacher_hidden={"contact": [16], "crashed": [16], "race": [16]})
    by = {(s["round"], s["stage"][:5]): s for s in stages}
    assert by[(1, "rival")]["rows"] == int(60 * 3.4)
    lab = by[(1, "label")]
    assert lab["rows"] == 300 + int(60 * 3.4)
    deep = 60 + int(60 * 3.4)
    assert lab["seconds"] == pytest.approx(((lab["rows"] - deep) / 50 + deep / 2) / 2)


def test_plan_times_self_play_over_whole_games_the_slowest_class_setting_the_rate(teacher):
    """Classes fill at different plies (crashed and race rows come late in a game): self-play is
    timed over games played to their ends with every wanted class kept, and the rate for the
    round's shares is the one at which the class slowest to fill its share fills it."""
    from training.distill import measure_rates
    v = get_variant(VARIANT)
    shares = {"contact": 0.5, "race": 0.5, "crashed": 0.0}
    r = measure_rates(teacher, v, seconds=0.2, shares=shares, parallel_games=16, sample_rows=200)
    by = r["sample_per_s_by_class"]
    assert set(by) == {"contact", "race"}                      # a class with no share is not timed
    assert all(x > 0 for x in by.values())
    slowest = max(0.5 / by[c] for c in by)                       # CPU seconds a row of the round
    assert r["sample_per_s"] == pytest.approx(1 / slowest)
    # with equal shares the slowest class sets the rate: twice its own (up to float rounding)
    assert r["sample_per_s"] == pytest.approx(2 * min(by.values()), rel=1e-12)
    assert r["sample_per_s"] <= sum(by.values()) * (1 + 1e-12)


def test_cli_plan_prints_the_stages_and_runs_nothing(teacher, tmp_path):
    cfg = tmp_path / "r.toml"
    cfg.write_text(toml_text(recipe(teacher)))
    out = tmp_path / "run"
    p = nardy("train", "--config", str(cfg), "--out", str(out), "--plan", "--jobs", "2")
    assert p.returncode == 0, p.stderr
    assert not out.exists()
    for word in ("first", "second", "sample", "rivals", "label (1-ply)", "fit", "gate", "total:", "MiB",
                 "per CPU second"):
        assert word in p.stdout
    # the rivals a decision adds, measured with the recipe's 5 candidates: new rows only
    each = float(p.stdout.split(" new rows each")[0].rsplit("(", 1)[1])
    assert 0 < each <= 5
    rivals = next(x for x in p.stdout.splitlines() if x.split()[2:3] == ["rivals"])
    assert abs(int(rivals.split()[3].replace(",", "")) - 60 * each) <= 1      # each printed to 0.01


def test_cli_runs_stops_and_resumes_as_printed(teacher, tmp_path):
    """The command printed after a stop continues the run exactly as printed; --resume of the
    finished run says so and how to extend it, and changes nothing."""
    cfg = tmp_path / "r.toml"
    d = recipe(teacher)
    d.pop("variant")                                  # the variant from the command line, remembered
    cfg.write_text(toml_text(d))
    out = tmp_path / "run"
    parts = out / "rounds/01/sample"
    # stopped once the first sample part is on disk
    code, err = interrupt_train(["--config", str(cfg), "--variant", VARIANT, "--out", str(out), "--jobs", "1",
                                 "--no-progress"], lambda: parts.exists() and any(parts.glob("part_*.npz")),
                                polls=600)
    if code == 0:
        pytest.skip("the run finished before the signal")   # a very fast machine
    assert code == 130, err
    p = resume_as_printed(err, out)
    assert p.returncode == 0, p.stderr
    assert json.loads((out / "options.json").read_text())["jobs"] == 1
    resume_finished(out, "[[rounds]]")


def test_two_local_processes_and_ray_give_the_same_run(finished, teacher, tmp_path):
    """Sampling, rivals and labels are seeded per task: the backend and the number of jobs
    change nothing (the reference ran inline, one process)."""
    ref, _ = finished
    cfg = config_from_dict(recipe(teacher))
    for backend, jobs in (("local", 2), ("ray", 2)):
        out = tmp_path / backend
        run = DistillRun(cfg, str(out), backend=backend, jobs=jobs, print_fn=lambda *a: None)
        run.run(progress=False)
        run.close()
        for r in ("01", "02"):
            a, b = np.load(out / f"rounds/{r}/samples.npz"), np.load(ref / f"rounds/{r}/samples.npz")
            assert np.array_equal(a["boards"], b["boards"])
            for chunk in sorted((ref / f"rounds/{r}/labels").glob("chunk_*.npz")):
                assert np.array_equal(np.load(chunk)["labels"], np.load(out / f"rounds/{r}/labels" / chunk.name)["labels"])
            assert same_weights(weights(out / f"rounds/{r}/candidate.pt"), weights(ref / f"rounds/{r}/candidate.pt"))


def test_model_card_of_a_distillation_run_names_its_rounds_and_gates(finished, tmp_path):
    """training.model_card reads a distillation run folder (state.json says method distill):
    the card calls it distilled and lists each round's gate, not search-target generations."""
    from training.model_card import write_card
    out, _ = finished
    run = tmp_path / "run"
    shutil.copytree(out, run, ignore=shutil.ignore_patterns(".lock"))
    text = write_card(str(run), games=2)
    state = json.loads((run / "state.json").read_text())
    assert "distilled evaluator" in text and "distillation (training/distill.py)" in text
    assert "generations" not in text
    first = state["history"][0]
    assert f"by round: 1: {first['points_per_game']:+.3f} ({'promoted' if first['promoted'] else 'rejected'})" in text
