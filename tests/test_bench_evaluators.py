"""The evaluator benchmark (nardy_ai/bench/evaluators.py, ``nardy bench evaluators``): the shipped
position sets and how choices are judged against their reference."""

import json
from functools import partial

import numpy as np
import pytest

from nardy_ai.agents import make_agent
from nardy_ai.agents.base import Agent
from nardy_ai.bench.evaluators import (BLUNDER, EVALUATOR_SET_VERSION, bench_evaluators, default_set_version,
                                       build_evaluator_positions, class_figures,
                                       evaluator_positions_path, format_evaluators,
                                       load_evaluator_positions, reference_rows, rollout_candidates,
                                       rollout_reference)
from nardy_ai.bench.positions import distinct_decisions, strong_play_positions
from nardy_ai.classes import class_names, position_classes
from nardy_ai.cli import main
from nardy_ai.errors import FormatError, NardyError, UnknownAgent
from nardy_ai.movegen import generate
from nardy_ai.search import search_equity
from nardy_ai.variants import get_variant
from agent_helpers import ScorePlay, tiny_net

VARIANTS = ("backgammon", "long")


@pytest.mark.parametrize("version", (1, 2))
@pytest.mark.parametrize("variant", VARIANTS)
def test_shipped_set_is_consistent(variant, version):
    pset = load_evaluator_positions(variant, version=version)
    h = pset.header
    assert h["version"] == version and h["variant"] == variant
    assert h["positions"] == len(pset.positions) >= (250 if version == 1 else 1000)
    for key in ("source", "seed", "date", "reference", "sampling", "reference_settings",
                "reference_seconds"):
        assert h[key] is not None
    if version >= 2:
        # Per-class quotas met by the class of the position on roll; no decision twice.
        counts = np.bincount(position_classes(pset.positions, variant), minlength=len(class_names(variant)))
        assert dict(zip(class_names(variant), counts.tolist())) == {
            name: h["quotas"].get(name, 0) for name in class_names(variant)}
        assert len(distinct_decisions(pset.positions, pset.dice)) == len(pset.positions)
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
    rows = partial(reference_rows, pset)             # oracles for the benchmark itself
    r = bench_evaluators(variant, [ScorePlay("reference-best", rows), ScorePlay("reference-worst", rows, worst=True)])
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
    tiny_net(net, "backgammon", seed=1)
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
    assert "machine:" in out and f"evaluator position set v{EVALUATOR_SET_VERSION}" in out
    assert "mp/decision" in out and "decisions/s" in out and "blunders (>0.08)" in out
    assert "random" in out and "heuristic" in out
    assert "by class of the position on roll" in out
    assert all(name in out for name in class_names("backgammon"))
    assert main(["bench", "evaluators", "--variant", "long", "--agents", "random", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["variant"] == "long" and r["agents"][0]["agent"] == "random"
    assert r["set_version"] == default_set_version("long") == 3      # long's newest set: the champion's rollouts
    assert set(r["agents"][0]["classes"]) == set(r["classes"]) == set(class_names("long"))
    # The overall table (4 lines), the per-class heading (2), the agent and one line per class.
    assert format_evaluators(r).count("\n") == 4 + 2 + 1 + len(class_names("long"))
    # The old set stays loadable by its version.
    assert main(["bench", "evaluators", "--variant", "backgammon", "--agents", "random",
                 "--set-version", "1"]) == 0
    assert "evaluator position set v1, 300 positions" in capsys.readouterr().out


# --- per-class figures ---------------------------------------------------------------------

class RecordingAgent(Agent):
    """An agent that remembers its choices (here: the heuristic's)."""

    name = "recording"

    def __init__(self, variant):
        self.inner = make_agent("heuristic", variant)

    def choose(self, after, variant, rng):
        self.after, self.chosen = after, np.asarray(self.inner.choose(after, variant, rng))
        return self.chosen


@pytest.mark.parametrize("variant", VARIANTS)
def test_class_figures_add_up_and_match_a_per_position_reading(variant):
    pset = load_evaluator_positions(variant)
    agent = RecordingAgent(variant)
    r = bench_evaluators(variant, ["random", agent])
    for row in r["agents"]:
        per = row["classes"]
        assert list(per) == list(class_names(variant)) == list(r["classes"])
        n = np.array([per[c]["decisions"] for c in per])
        assert n.sum() == r["positions"] and n.tolist() == list(r["classes"].values())
        for key, overall in (("loss_mp", row["loss_mp"]), ("blunder_rate", row["blunder_rate"]),
                             ("agreement", row["agreement"])):
            values = np.array([per[c][key] if per[c]["decisions"] else 0.0 for c in per])
            assert (n * values).sum() / n.sum() == pytest.approx(overall)
    # Each decision judged on its own: the stored equity of the play chosen (found by its
    # notation) against the position's best, grouped by the class of that one position.
    losses: dict[str, list[float]] = {c: [] for c in class_names(variant)}
    for i in range(len(pset.positions)):
        play = agent.after.plays[agent.chosen[i]]
        values = dict(zip(pset.plays[i], pset.equities[i]))
        cls = class_names(variant)[int(position_classes(pset.positions[i:i + 1], variant)[0])]
        losses[cls].append(max(values.values()) - values[play])
    per = r["agents"][1]["classes"]
    for cls, ls in losses.items():
        assert per[cls]["decisions"] == len(ls) > 0
        assert per[cls]["loss_mp"] == pytest.approx(1000 * np.mean(ls))
        assert per[cls]["blunder_rate"] == pytest.approx(np.mean(np.array(ls) > BLUNDER))
        assert per[cls]["agreement"] == pytest.approx(np.mean(np.array(ls) <= 1e-9))


def test_class_figures_of_an_empty_class_are_none():
    f = class_figures(np.array([0.0, 0.1, 0.02]), np.array([0, 0, 2]), ("a", "b", "c"))
    assert f["b"] == {"decisions": 0, "loss_mp": None, "blunder_rate": None, "agreement": None}
    assert f["a"]["decisions"] == 2 and f["a"]["loss_mp"] == pytest.approx(50.0)
    assert f["a"]["blunder_rate"] == 0.5 and f["a"]["agreement"] == 0.5
    assert f["c"] == {"decisions": 1, "loss_mp": pytest.approx(20.0), "blunder_rate": 0.0, "agreement": 0.0}


# --- sampling with per-class quotas --------------------------------------------------------

QUOTAS = {"backgammon": {"contact": 40, "crashed": 15, "race": 20, "bearoff": 15},
          "long": {"contact": 40, "race": 15, "bearoff": 20}}


@pytest.mark.parametrize("variant", VARIANTS)
def test_quota_sampler_meets_quotas_with_distinct_real_decisions(variant):
    quotas = QUOTAS[variant]
    agent = make_agent("heuristic", variant)
    boards, dice = strong_play_positions(agent, variant, seed=3, games=32, max_plies=240, quotas=quotas)
    assert len(boards) == len(dice) == sum(quotas.values())
    counts = np.bincount(position_classes(boards, variant), minlength=len(class_names(variant)))
    assert dict(zip(class_names(variant), counts.tolist())) == {c: quotas.get(c, 0) for c in class_names(variant)}
    assert len(distinct_decisions(boards, dice)) == len(boards)
    assert np.all(generate(boards, dice, variant).counts() >= 2)           # no forced plays
    again = strong_play_positions(agent, variant, seed=3, games=32, max_plies=240, quotas=quotas)
    assert np.array_equal(again[0], boards) and np.array_equal(again[1], dice)


def test_quota_sampler_refusals():
    agent = make_agent("random", "backgammon")
    with pytest.raises(NardyError, match="fewer than its quota"):
        strong_play_positions(agent, "backgammon", games=4, max_plies=30, quotas={"bearoff": 5})
    with pytest.raises(NardyError, match="unknown classes"):
        strong_play_positions(agent, "long", games=4, max_plies=30, quotas={"crashed": 5})
    with pytest.raises(NardyError, match="add up to 5"):
        strong_play_positions(agent, "backgammon", 7, games=4, max_plies=30, quotas={"contact": 5})
    # Without quotas: n positions, real decisions, repeats allowed (the old sampler).
    boards, dice = strong_play_positions(agent, "backgammon", 50, games=8, max_plies=60)
    assert len(boards) == 50 and np.all(generate(boards, dice, "backgammon").counts() >= 2)


def test_distinct_decisions_ignore_the_order_of_the_dice():
    b = np.zeros((4, 28), np.int8)
    b[:, 0], b[:, 12] = 15, -15
    b[3, 0], b[3, 1] = 14, 1
    dice = np.array([[3, 1], [1, 3], [3, 3], [3, 1]])
    assert distinct_decisions(b, dice).tolist() == [0, 2, 3]


# --- the rollout reference (long sets) -----------------------------------------------------

def test_rollout_candidates_take_the_best_within_the_window():
    eq = np.array([0.5, 0.1, 0.45, 0.3, 0.35, 0.31, 0.4,      # position 0: 7 plays
                   -0.2, -0.9,                                # position 1: 2 plays, far apart
                   0.0, 0.0, -0.5])                           # position 2: a tie, then far
    offsets = np.array([0, 7, 9, 12])
    cand = rollout_candidates(eq, offsets, max_candidates=4, window=0.18)
    # Best 4 within 0.18 of 0.5 (>= 0.32): 0.5, 0.45, 0.4, 0.35; 0.31 and 0.3 are out.
    assert np.flatnonzero(cand[:7]).tolist() == [0, 2, 4, 6]
    assert cand[7:9].all()                                    # always at least 2
    assert cand[9:].tolist() == [True, True, False]


def test_rollout_reference_values_candidates_by_rollout_and_the_rest_by_1ply(tmp_path):
    net = tmp_path / "long.pt"
    ev = tiny_net(net, "long", seed=4)
    pset = load_evaluator_positions("long", version=1)
    after = generate(pset.positions[:6], pset.dice[:6], "long", notation=True)
    # Truncated at 0 plies a rollout is the net's own 0-ply value, whatever the dice.
    eq, fields = rollout_reference(after, "long", f"td:{net}", games=72, truncate=0, batches=2,
                                   max_candidates=3, window=0.05)
    zero = search_equity(after.boards, ev, 0)
    one = search_equity(after.boards, ev, 1)
    cand = rollout_candidates(one, after.offsets, 3, 0.05)
    assert fields["candidates"] == cand.sum() and fields["difference_se_rms"] == pytest.approx(0, abs=1e-12)
    assert np.allclose(eq[cand], zero[cand])
    for i in range(6):
        lo, hi = after.offsets[i], after.offsets[i + 1]
        c = cand[lo:hi]
        for r in np.flatnonzero(~c) + lo:
            expect = min(eq[lo:hi][c].max() - (one[lo:hi].max() - one[r]), eq[lo:hi][c].min())
            assert eq[r] == pytest.approx(expect)
    assert {"reference_settings", "rollout_games", "rollout_truncate", "rollout_seconds",
            "one_ply_seconds", "mean_equity_se"} <= set(fields)


def test_rollout_reference_on_a_backend_gives_the_same_equities(tmp_path):
    from nardy_ai.backends import make_backend
    net = tmp_path / "long.pt"
    tiny_net(net, "long", seed=4)
    pset = load_evaluator_positions("long", version=1)
    after = generate(pset.positions[:3], pset.dice[:3], "long", notation=True)
    kw = dict(games=24, truncate=2, batches=2, max_candidates=2, window=0.1)
    here, _ = rollout_reference(after, "long", f"td:{net}", **kw)
    with make_backend("local", 2) as backend:
        there, _ = rollout_reference(after, "long", f"td:{net}", backend=backend, **kw)
    np.testing.assert_array_equal(here, there)


def test_shipped_backgammon_reference_is_gnubg_2ply():
    """Where gnubg is installed: the stored equities are gnubg 2-ply's, recomputed here."""
    pytest.importorskip("gnubg")
    pset = load_evaluator_positions("backgammon", version=2)
    assert pset.header["reference"] == "gnubg:2ply"
    rows = np.concatenate([np.flatnonzero(position_classes(pset.positions, "backgammon") == k)[:1]
                           for k in range(len(class_names("backgammon")))])
    after = generate(pset.positions[rows], pset.dice[rows], "backgammon", notation=True)
    stored = np.concatenate([[dict(zip(pset.plays[i], pset.equities[i]))[p]
                              for p in after.plays[after.offsets[j]:after.offsets[j + 1]]]
                             for j, i in enumerate(rows)])
    agent = make_agent("gnubg:2ply", "backgammon")
    assert np.allclose(agent.equities(after.boards, get_variant("backgammon"), 2), stored, atol=1e-5)


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_built_set_loads_back_with_its_header(variant, tmp_path):
    net = tmp_path / "net.pt"
    ev = tiny_net(net, variant, seed=2)
    quotas = {"contact": 6, "race": 3, "bearoff": 3}
    path = tmp_path / "set.jsonl"
    values = None
    if variant == "long":           # the long sets' reference: rollouts of the candidates
        def values(after, v):
            return rollout_reference(after, v, f"td:{net}", games=72, truncate=1, batches=2)
    header = build_evaluator_positions(variant, "heuristic", f"td:{net}", str(path), n=None, seed=1,
                                       version=7, quotas=quotas, games=16, max_plies=200,
                                       values=values, notes="test")
    assert not (tmp_path / "set.jsonl.part").exists()
    pset = load_evaluator_positions(variant, str(path))
    assert pset.header == header and header["version"] == 7 and header["quotas"] == quotas
    assert header["positions"] == len(pset.positions) == 12 and header["notes"] == "test"
    after = generate(pset.positions, pset.dice, variant, notation=True)
    eq = reference_rows(pset, after)               # every stored play legal, every legal play stored
    assert header["afterstates"] == len(after)
    if variant == "long":
        assert header["candidates"] >= 2 * len(pset.positions) and header["rollout_truncate"] == 1
    else:
        # Stored to 5 decimals by the set's agent (on CUDA where present; ev is on the CPU):
        # a last-place rounding may differ.
        assert np.allclose(eq, np.round(search_equity(after.boards, ev, 0), 5),
                           rtol=0, atol=1.5e-5)
    r = bench_evaluators(variant, ["random"], path=str(path))
    assert r["set_version"] == 7 and r["classes"] == {c: quotas.get(c, 0) for c in class_names(variant)}


def test_a_missing_position_set_is_named():
    from nardy_ai.bench.evaluators import load_evaluator_positions
    from nardy_ai.errors import FormatError
    with pytest.raises(FormatError, match=r"^no evaluator position set for long: .*_v999\.jsonl is missing$"):
        load_evaluator_positions("long", version=999)
