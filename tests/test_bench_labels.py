"""``nardy bench labels`` (nardy_ai/bench/labels.py): the labelling speed of training on search
targets, in this process and on local worker processes."""

from __future__ import annotations

import json

import pytest

from nardy_ai.bench.labels import bench_labels, format_labels
from nardy_ai.cli import main
from nardy_ai.model import NeuralEvaluator, save_checkpoint


@pytest.fixture
def tiny_net(tmp_path):
    net = NeuralEvaluator.create("backgammon", hidden=(8,), seed=1, device="cpu")
    path = tmp_path / "net.pt"
    save_checkpoint(path, {"evaluator": net.state()})
    return str(path)


def test_bench_labels_labels_whole_chunks_here_and_in_a_worker(tiny_net):
    r = bench_labels("backgammon", tiny_net, seconds=0.01, jobs=1, chunk=30)
    assert r["classes"]["bearoff"] == 0                       # the database labels cost nothing
    assert sum(r["classes"].values()) == 4 * 30                # the sample: four chunks' worth
    one, alls = r["one_core"], r["all_cores"]
    assert one["positions"] >= 30 and one["positions"] % 30 == 0 and one["positions_per_cpu_s"] > 0
    assert one["every_row_positions_per_cpu_s"] > 0
    assert one["ratio_to_every_row"] == pytest.approx(one["positions_per_cpu_s"] / one["every_row_positions_per_cpu_s"])
    assert alls["jobs"] == 1 and alls["positions"] >= 30 and alls["positions"] % 30 == 0
    assert alls["positions_per_s"] >= alls["positions_per_s_with_startup"] > 0
    text = format_labels(r)
    assert text.startswith("machine: ") and "1-ply labels" in text and "1 local processes" in text
    assert "x the same chunks valuing every afterstate" in text


def test_the_baseline_values_every_afterstate_and_is_restored():
    """every_row_valued: the search's distinct-afterstate step out of reach inside, back after
    (also after an error)."""
    from nardy_ai import search
    from nardy_ai.bench.labels import every_row_valued
    before = search.DISTINCT_MIN
    with pytest.raises(RuntimeError):
        with every_row_valued():
            assert search.DISTINCT_MIN > 10 ** 12
            raise RuntimeError
    assert search.DISTINCT_MIN == before


def test_cli_bench_labels_runs_the_labels_suite(tiny_net, capsys):
    assert main(["bench", "labels", "--checkpoint", tiny_net, "--seconds", "0.01", "--jobs", "1", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["net"] == tiny_net and row["variant"] == "backgammon" and row["plies"] == 1



def test_cli_bench_labels_passes_the_search_depth(tiny_net, capsys, monkeypatch):
    """--plies 2 reaches the suite (which then labels chunks of 100: labels.CHUNK)."""
    import nardy_ai.bench.labels as labels_mod
    seen = []
    monkeypatch.setattr(labels_mod, "bench_labels", lambda *a: seen.append(a) or {"plies": a[4]})
    assert main(["bench", "labels", "--checkpoint", tiny_net, "--json", "--plies", "2"]) == 0
    assert seen[0][4] == 2 and json.loads(capsys.readouterr().out)["plies"] == 2
    assert labels_mod.CHUNK[2] < labels_mod.CHUNK[1]
