"""``nardy bench cube`` (issue #12): the shipped cube set and the scoring of double / take
decisions against its reference (CUBE-1, money play)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from nardy_ai.agents.base import Agent
from nardy_ai.bench.cube import (CLEAR_MARGIN, EQUITY_BINS, WIN_BINS, load_cube_positions,
                                 sample_cube_candidates, score_agent)
from nardy_ai.board import OFF, OPP_OFF
from nardy_ai.cli import main
from nardy_ai.cube import Stakes, stakes_variant
from nardy_ai.errors import FormatError
from nardy_ai.model import NeuralEvaluator, save_checkpoint


class Fixed(Agent):
    """Always doubles (or never) and always takes (or never)."""

    def __init__(self, doubles: bool, takes: bool):
        self.doubles, self.takes, self.name = doubles, takes, f"fixed-{doubles}-{takes}"
        self.seen = []

    def choose(self, after, variant, rng):
        return after.offsets[:-1]

    def double(self, boards, cubes, variant):
        self.seen.append(("double", cubes))
        return np.full(len(boards), self.doubles), None

    def take(self, boards, cubes, variant):
        self.seen.append(("take", cubes))
        return np.full(len(boards), self.takes), None


def test_shipped_set_is_versioned_and_labelled():
    cset = load_cube_positions("backgammon")
    h = cset.header
    assert h["version"] == 1 and h["positions"] == len(cset.boards) >= 1000
    assert "gnubg 2-ply" in h["reference"]
    assert np.allclose(cset.dp, 1.0)                       # a pass gives the doubler the stake
    assert set(cset.owner) == {"centre", "mover"}
    assert (cset.value[np.array(cset.owner) == "mover"] == 2).all()
    ref = cset.reference()
    for label in ("double", "take"):                       # every kind of reference action occurs
        assert ref[label].any() and (~ref[label]).any()
    assert (cset.nd > cset.dp).any()                       # too good to double


def test_scoring_counts_each_kind_of_error():
    cset = load_cube_positions("backgammon")
    ref = cset.reference()
    scored = ref["take_scored"]
    always = score_agent(Fixed(True, True), cset)["all"]
    assert always["missed_doubles"] == 0.0 and always["early_doubles"] == 1.0
    assert always["wrong_passes"] == 0.0 and always["wrong_takes"] == 1.0
    assert always["double_agreement"] == pytest.approx(ref["double"].mean())
    assert always["take_agreement"] == pytest.approx(ref["take"][scored].mean())
    assert always["take_decisions"] == scored.sum() and always["double_decisions"] == len(cset.boards)
    never = score_agent(Fixed(False, False), cset)["all"]
    assert never["missed_doubles"] == 1.0 and never["early_doubles"] == 0.0 and never["wrong_passes"] == 1.0
    # Cost: a never-doubling agent loses min(DT, DP) - ND wherever the reference doubles.
    best = np.minimum(cset.dt, cset.dp)
    lost_d = np.where(ref["double"], best - cset.nd, 0).sum()
    lost_t = (cset.dp - np.minimum(cset.dt, cset.dp))[scored].sum()
    assert never["mean_cost"] == pytest.approx((lost_d + lost_t) / (len(cset.boards) + scored.sum()))
    clear = score_agent(Fixed(True, True), cset)["clear"]
    assert clear["double_decisions"] == (ref["double_margin"] >= CLEAR_MARGIN).sum()



def test_agents_see_the_cube_from_their_side():
    cset = load_cube_positions("backgammon")
    agent = Fixed(True, True)
    score_agent(agent, cset)
    (_, dbl), (_, tk) = agent.seen
    assert isinstance(dbl, Stakes) and len(dbl) == len(cset.boards)
    owned = np.array(cset.owner) == "mover"
    assert (dbl.access[owned] == 1).all() and (dbl.access[~owned] == 0).all()
    assert (tk.access == np.where(owned, -1, 0)[cset.reference()["take_scored"]]).all()
    assert (dbl.next == 2 * dbl.value).all()


def test_bad_set_files_name_the_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"header": {"version": 1}}) + "\n" + json.dumps(
        {"points": [0] * 24, "bar": [0, 0], "off": [15, 15], "cube": {"value": 1, "owner": "centre"}}) + "\n")
    with pytest.raises(FormatError, match="line 2"):
        load_cube_positions("backgammon", str(bad))
    with pytest.raises(FormatError, match=r"^no cube position set for backgammon: .*none\.jsonl is missing "
                                          r"\(build one with nardy_ai\.bench\.cube\.build_cube_set"):
        load_cube_positions("backgammon", str(tmp_path / "none.jsonl"))


def test_cli_bench_cube(capsys):
    assert main(["bench", "cube", "--agents", "heuristic", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["rows"][0]["agent"] == "heuristic" and row["set"]["version"] == 1
    assert main(["bench", "cube", "--agents", "heuristic", "--variant", "short_trictrac"]) != 0
    assert "backgammon (the cube, gnubg reference) or long" in capsys.readouterr().err
    # Long nardy with dave: the shipped set whose reference is our own cubeful rollouts.
    assert main(["bench", "cube", "--agents", "heuristic", "--variant", "long", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["set"]["stakes"].startswith("dave") and row["set"]["positions"] >= 1000
    assert row["set"]["reference"].startswith("own cubeful rollouts")


def test_by_class_figures_add_up_to_the_clear_ones():
    r = score_agent(Fixed(True, False), load_cube_positions("backgammon"))
    parts = r["clear_by_class"].values()
    assert sum(x["double_decisions"] for x in parts) == r["clear"]["double_decisions"]
    assert sum(x["take_decisions"] for x in parts) == r["clear"]["take_decisions"]
    assert {"contact", "race"} <= set(r["clear_by_class"])


@pytest.mark.parametrize("name, stakes, edges", [("backgammon", "cube", EQUITY_BINS),
                                                 ("long", "dave-geometric", WIN_BINS)])
def test_sampled_candidates_are_distinct_running_positions_spread_over_the_bins(tmp_path, name, stakes, edges):
    """The set builder's sampler (self-play of the source on the game driver): distinct
    positions of running games, at most a fifth of ``n`` in each bin of the measure (the
    cubeless equity with the cube, the win chance with dave), the same ones for the same seed.
    Backgammon's source is an untrained net, long nardy's the shipped champion (an untrained
    net's win chances fall below the lowest bin)."""
    variant, source = stakes_variant(name, stakes), None
    if name == "backgammon":
        source = str(tmp_path / "net.pt")
        save_checkpoint(source, {"evaluator": NeuralEvaluator.create(variant, hidden=(8,), seed=1,
                                                                      device="cpu").state()})
    boards, measure = sample_cube_candidates(20, seed=2, source=source, games=16, plies=40, variant=variant)
    assert len(boards) == len(measure) > 0
    assert len(np.unique(boards, axis=0)) == len(boards)
    assert (boards[:, OFF] < 15).all() and (boards[:, OPP_OFF] < 15).all()
    assert ((measure >= edges[0]) & (measure < edges[-1])).all()
    assert (np.histogram(measure, edges)[0] <= 4).all()
    again, _ = sample_cube_candidates(20, seed=2, source=source, games=16, plies=40, variant=variant)
    assert np.array_equal(again, boards)
