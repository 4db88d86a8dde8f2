"""``experiments/refit_depth.py``: a distillation round's nets refitted on the same labelled
rows with other hidden layers; with the round's own layers it reproduces the round's fit."""

import json
import os

import torch

from nardy_ai.model import load_checkpoint

from training.run import label_chunk_paths
from training.search_targets import read_npz

from experiment_helpers import load_experiment
from pipeline_helpers import make_teacher, nardy, recipe, toml_text


def script():
    return load_experiment("refit_depth")


def test_refit_with_the_rounds_layers_reproduces_its_fit_and_other_layers_refit_the_same_rows(tmp_path):
    teacher = make_teacher(str(tmp_path / "teacher.pt"))
    d = recipe(teacher)
    d["rounds"] = d["rounds"][:1]
    cfg = tmp_path / "r.toml"
    cfg.write_text(toml_text(d))
    run = tmp_path / "run"
    p = nardy("train", "--config", str(cfg), "--out", str(run), "--jobs", "1", timeout=600)
    assert p.returncode == 0, p.stderr
    same = tmp_path / "same.pt"
    assert script().main([str(run), "--hidden", "8", "--out", str(same)]) == 0
    got = load_checkpoint(same)["evaluator"]["members"]
    want = load_checkpoint(run / "rounds" / "01" / "candidate.pt")["evaluator"]["members"]
    for cls in ("contact", "crashed"):
        assert all(torch.equal(got[cls]["weights"][k], want[cls]["weights"][k]) for k in want[cls]["weights"])
    deep = tmp_path / "deep.pt"
    assert script().main([str(run), "--hidden", "8,8", "--out", str(deep)]) == 0
    members = load_checkpoint(deep)["evaluator"]["members"]
    assert members["contact"]["hidden"] == [8, 8] and members["crashed"]["hidden"] == [8, 8]
    assert members["race"]["hidden"] == want["race"]["hidden"]
    figures = json.loads((tmp_path / "deep.pt.json").read_text())
    assert figures["rows"] > 0 and figures["hidden"] == [8, 8]
    assert {"contact", "crashed"} <= set(figures["fit"]) and "val_excess" in figures["fit"]["contact"]


def test_label_chunk_paths_name_one_file_per_chunk_in_row_order(tmp_path):
    paths = label_chunk_paths(str(tmp_path), 25, 10)
    assert [os.path.relpath(p, tmp_path) for p in paths] == [
        os.path.join("labels", f"chunk_{i:04d}.npz") for i in range(3)]
    assert len(label_chunk_paths(str(tmp_path), 20, 10)) == 2 and label_chunk_paths(str(tmp_path), 0, 10) == []


def test_a_round_with_a_label_chunk_missing_is_refused(tmp_path, capsys):
    teacher = make_teacher(str(tmp_path / "teacher.pt"))
    d = recipe(teacher)
    d["rounds"] = d["rounds"][:1]
    d["rounds"][0]["fit"]["max_epochs"] = 1
    cfg = tmp_path / "r.toml"
    cfg.write_text(toml_text(d))
    run = tmp_path / "run"
    assert nardy("train", "--config", str(cfg), "--out", str(run), "--jobs", "1", timeout=600).returncode == 0
    folder = run / "rounds" / "01"
    rows = len(read_npz(str(folder / "samples.npz"))["boards"])
    named = label_chunk_paths(str(folder), rows, d["rounds"][0]["label"]["chunk"])
    # the run wrote exactly the label files the one naming function names
    assert len(named) > 1 and sorted(named) == sorted(str(p) for p in (folder / "labels").iterdir())
    (folder / "labels" / "chunk_0001.npz").unlink()
    assert script().main([str(run), "--hidden", "8", "--out", str(tmp_path / "x.pt")]) == 2
    assert "labels are incomplete" in capsys.readouterr().err and not (tmp_path / "x.pt").exists()


def test_a_round_without_labels_is_refused(tmp_path, capsys):
    teacher = make_teacher(str(tmp_path / "teacher.pt"))
    d = recipe(teacher)
    run = tmp_path / "run"
    os.makedirs(run)
    (run / "config.toml").write_text(toml_text(d))
    assert script().main([str(run), "--hidden", "8", "--out", str(tmp_path / "x.pt")]) == 2
    assert "no label chunks" in capsys.readouterr().err
    assert script().main([str(run), "--round", "3", "--hidden", "8", "--out", str(tmp_path / "x.pt")]) == 2
    assert "rounds 1 to 2" in capsys.readouterr().err
