"""The evaluator benchmark (nardy_ai/bench.py, ``nardy bench evaluators``): the shipped
position sets and how choices are judged against their reference."""

import json

import numpy as np
import pytest

from nardy_ai.agents.base import Agent, segment_argmax
from nardy_ai.bench import (BLUNDER, bench_evaluators, evaluator_positions_path,
                            format_evaluators, load_evaluator_positions, reference_rows)
from nardy_ai.cli import main
from nardy_ai.errors import FormatError, UnknownAgent
from nardy_ai.model import NeuralEvaluator, save_checkpoint
from nardy_ai.movegen import generate

VARIANTS = ("backgammon", "long")


class ReferenceAgent(Agent):
    """Plays the stored reference's best afterstate (an oracle for the benchmark itself)."""

    name = "reference-best"

    def __init__(self, pset):
        self.pset = pset

    def choose(self, after, variant, rng):
        return segment_argmax(reference_rows(self.pset, after), after.offsets)


class WorstAgent(ReferenceAgent):
    name = "reference-worst"

    def choose(self, after, variant, rng):
        return segment_argmax(-reference_rows(self.pset, after), after.offsets)


@pytest.mark.parametrize("variant", VARIANTS)
def test_shipped_set_is_consistent(variant):
    pset = load_evaluator_positions(variant)
    h = pset.header
    assert h["version"] == 1 and h["variant"] == variant and h["positions"] == len(pset.positions) >= 250
    for key in ("source", "seed", "date", "reference", "sampling"):
        assert h[key] is not None
    # Every stored afterstate is legal and every legal one is stored (reference_rows checks
    # both); every position is a real decision.
    after = generate(pset.positions, pset.dice, variant, notation=True)
    eq = reference_rows(pset, after)
    assert np.all(after.counts() >= 2) and sum(map(len, pset.plays)) == len(after)
    assert np.all(np.abs(eq) <= 3.0)
    assert pset.positions.shape[1] == 28


@pytest.mark.parametrize("variant", VARIANTS)
def test_reference_best_loses_nothing_and_worst_loses(variant):
    pset = load_evaluator_positions(variant)
    r = bench_evaluators(variant, [ReferenceAgent(pset), WorstAgent(pset)])
    best, worst = r["agents"]
    assert best["loss_mp"] == 0 and best["agreement"] == 1 and best["blunder_rate"] == 0
    assert worst["loss_mp"] > 0 and worst["agreement"] < 1
    spread = [e.max() - e.min() for e in pset.equities]
    assert worst["loss_mp"] == pytest.approx(1000 * np.mean(spread))
    assert worst["blunder_rate"] == pytest.approx(np.mean(np.array(spread) > BLUNDER))


def test_random_loses_more_than_heuristic_on_backgammon():
    r = bench_evaluators("backgammon", ["random", "heuristic"])
    rand, heur = r["agents"]
    assert rand["loss_mp"] > heur["loss_mp"] > 0
    assert rand["agreement"] < heur["agreement"]
    assert r["stored_reference"] and r["reference"] == load_evaluator_positions("backgammon").header["reference"]
    assert all(a["decisions_per_s"] > 0 for a in r["agents"])


def test_recomputed_reference_and_refusals(tmp_path):
    net = tmp_path / "net.pt"
    ev = NeuralEvaluator.create("backgammon", hidden=(8,), seed=1, device="cpu")
    save_checkpoint(net, {"kind": "model", "evaluator": ev.state()})
    # Judged by its own net, a 0-ply agent always plays the reference's best.
    r = bench_evaluators("backgammon", [f"td:{net}"], reference=f"td:{net}")
    assert r["reference"] == f"td:{net}" and not r["stored_reference"]
    assert r["agents"][0]["loss_mp"] == pytest.approx(0, abs=1e-9)
    with pytest.raises(UnknownAgent, match="cannot value afterstates"):
        bench_evaluators("backgammon", ["random"], reference="heuristic")


def test_a_set_that_disagrees_with_the_rules_is_refused(tmp_path):
    lines = open(evaluator_positions_path("backgammon")).read().splitlines()
    pos = json.loads(lines[1])
    pos["afterstates"] = pos["afterstates"][1:]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([lines[0], json.dumps(pos)]) + "\n")
    with pytest.raises(FormatError, match="legal plays but"):
        bench_evaluators("backgammon", ["random"], path=str(path))


def test_cli_prints_the_table_with_units(capsys):
    assert main(["bench", "evaluators", "--variant", "backgammon", "--agents", "random", "heuristic"]) == 0
    out = capsys.readouterr().out
    assert "machine:" in out and "evaluator position set v1" in out
    assert "mp/decision" in out and "decisions/s" in out and "blunders (>0.08)" in out
    assert "random" in out and "heuristic" in out
    assert main(["bench", "evaluators", "--variant", "long", "--agents", "random", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["variant"] == "long" and r["agents"][0]["agent"] == "random"
    assert format_evaluators(r).count("\n") == 4
