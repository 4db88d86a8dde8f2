"""``nardy analyze`` (nardy_ai/analysis.py): the error of each decision of recorded games against a
reference agent.  References here are tiny untrained nets (8 hidden units) at 0 and 1 ply: what
the analysis measures is the difference between the reference's valuations of the plays, so an
untrained net is as good a reference for these checks as the champion (and far cheaper)."""

from __future__ import annotations

import json
from functools import partial

import numpy as np
import pytest

from nardy_ai import analysis
from nardy_ai.agents import make_agent
from nardy_ai.cube import Stakes
from nardy_ai.cubeful import double_equities
from nardy_ai.game import play_games, replay, write_jsonl
from nardy_ai.model import equity
from nardy_ai.movegen import generate
from nardy_ai.search import best_afterstates, search_equity
from agent_helpers import CubeScript, ScorePlay, tiny_net


@pytest.fixture(scope="module")
def nets(tmp_path_factory):
    """Checkpoints of tiny untrained nets: ``{"backgammon": path, "long": path}``."""
    d = tmp_path_factory.mktemp("nets")
    out = {}
    for v, seed in (("backgammon", 1), ("long", 2)):
        out[v] = str(d / f"{v}.pt")
        tiny_net(out[v], v, seed)
    return out


def worst_play(ev) -> ScorePlay:
    """Plays the afterstate the given net values lowest at 0 ply (a known bad play), never doubles."""
    return ScorePlay("worst", lambda after: equity(ev.probabilities(after.boards), ev.variant), worst=True)


def _games(recs, prefix="g"):
    return [(f"{prefix}{i}", r) for i, r in enumerate(recs)]


def _mine(result, player, kind="play"):
    return [d for d in result["decisions"] if d[0] == player and d[2] == kind]


def test_known_bad_play_scores_its_error_and_the_best_play_zero(nets):
    ref = make_agent(f"td:{nets['backgammon']}", "backgammon")
    ev = ref.evaluator
    recs = play_games("backgammon", (ref, worst_play(ev)), 2, seed=5)
    results = dict(analysis.analyse_task(analysis.Task(f"td:{nets['backgammon']}",
                                                      tuple((k, r.to_json()) for k, r in _games(recs))))[1])
    boards = replay(recs)
    checked = 0
    for (key, res), r, h in zip(results.items(), recs, boards):
        assert all(d[4] == 0 for d in _mine(res, 0))             # the reference's own plays
        worst = {d[1]: d[4] for d in _mine(res, 1)}
        for k, t in enumerate(r.turns):
            if t.player != 1 or k not in worst:
                continue
            after = generate(h[k][None], np.array([t.dice]), "backgammon")
            eq = equity(ev.probabilities(after.boards), ev.variant)
            assert worst[k] == pytest.approx(1000 * (eq.max() - eq.min()), abs=0.01)
            checked += 1
    assert checked > 10 and any(e > 0 for res in results.values() for e in (d[4] for d in _mine(res, 1)))


def test_one_ply_reference_values_the_play_made_at_full_depth(nets):
    spec = f"td:{nets['backgammon']}@1ply"
    ref = make_agent(spec, "backgammon")
    ev = ref.evaluator
    recs = play_games("backgammon", (make_agent("heuristic", "backgammon"), worst_play(ev)), 1, seed=2)
    h = replay(recs)[0]
    r = recs[0]
    res = analysis.analyse_task(analysis.Task(spec, (("g", r.to_json()),)))[1][0][1]
    errors = {(d[0], d[1]): d[4] for d in res["decisions"] if d[2] == "play"}
    for k in (3, 4, 5, 6):
        t = r.turns[k]
        after = generate(h[k][None], np.array([t.dice]), "backgammon")
        if len(after.boards) < 2:
            continue
        best = int(best_afterstates(after, ev, 1)[0])
        played = after.notation(np.arange(len(after.boards))).index(t.play)
        want = 1000 * (search_equity(after.boards[[best]], ev, 1)[0] - search_equity(after.boards[[played]], ev, 1)[0])
        assert errors[(t.player, k)] == pytest.approx(max(want, 0.0), abs=0.01)


def test_forced_plays_are_not_decisions(nets):
    recs = play_games("backgammon", (make_agent("heuristic", "backgammon"), make_agent("random", "backgammon")),
                      3, seed=11)
    results = analysis.analyse_task(analysis.Task(f"td:{nets['backgammon']}",
                                                  tuple((k, r.to_json()) for k, r in _games(recs))))[1]
    forced = 0
    for (_, res), r, h in zip(results, recs, replay(recs)):
        counts = [len(generate(h[k][None], np.array([t.dice]), "backgammon").boards) for k, t in enumerate(r.turns)]
        forced += sum(c == 1 for c in counts)
        assert sorted(d[1] for d in res["decisions"] if d[2] == "play") == [k for k, c in enumerate(counts) if c > 1]
    assert forced > 0


def test_totals_per_agent_are_the_sums_over_games(nets):
    recs = play_games("backgammon", (make_agent("heuristic", "backgammon"), make_agent("pubeval", "backgammon")),
                      3, seed=4)
    s = analysis.run_analysis(_games(recs), f"td:{nets['backgammon']}", progress=False, log=lambda m: None)
    for agent, row in s["agents"].items():
        sides = [side for g in s["per_game"] for side in g["sides"] if side["agent"] == agent]
        assert row["games"] == len(sides) == 3
        assert row["all"]["n"] == sum(x["decisions"] for x in sides)
        assert row["all"]["total"] == pytest.approx(sum(x["error"] for x in sides), abs=0.05)
        assert row["play"]["n"] == sum(c["n"] for c in row["by_class"].values())
        assert row["all"]["mean"] == pytest.approx(row["all"]["total"] / row["all"]["n"], abs=1e-3)
    assert s["agents"]["heuristic"]["all"]["total"] > 0


def test_resume_after_a_partial_run_gives_the_same_result(nets, tmp_path):
    recs = play_games("backgammon", (make_agent("heuristic", "backgammon"), make_agent("random", "backgammon")),
                      3, seed=8)
    games = _games(recs)
    spec = f"td:{nets['backgammon']}"
    calls = []

    def dies_on_second(task):
        calls.append(task)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return analysis.analyse_task(task)

    with pytest.raises(KeyboardInterrupt):
        analysis.run_analysis(games, spec, out=tmp_path / "a", task_games=1, progress=False, log=lambda m: None,
                              analyse=dies_on_second)
    path = tmp_path / "a" / analysis.ANALYSIS_FILE
    assert len(path.read_text().splitlines()) == 1
    with open(path, "a") as f:
        f.write('{"key": "g1", "decis')                   # a write cut short by a kill
    with pytest.raises(analysis.AnalysisError, match="--resume"):
        analysis.run_analysis(games, spec, out=tmp_path / "a", progress=False, log=lambda m: None)
    resumed = analysis.run_analysis(games, spec, out=tmp_path / "a", resume=True, task_games=1, progress=False,
                                    log=lambda m: None)
    fresh = analysis.run_analysis(games, spec, out=tmp_path / "b", progress=False, log=lambda m: None)
    assert resumed == fresh
    assert len(path.read_text().splitlines()) == 3
    assert json.loads((tmp_path / "a" / analysis.ANALYSIS_SUMMARY).read_text()) == fresh
    with pytest.raises(analysis.AnalysisError, match="reference"):
        analysis.run_analysis(games, spec + "@1ply", out=tmp_path / "a", resume=True, progress=False,
                              log=lambda m: None)


def test_a_cube_error_is_scored(nets):
    spec = f"td:{nets['backgammon']}"
    ref = make_agent(spec, "backgammon")
    doubler = CubeScript("always-double", "heuristic", "backgammon", doubles=True, takes=False)   # passes every double
    recs = play_games("backgammon", (doubler, ref), 2, seed=1, stakes="cube")
    res = dict(analysis.analyse_task(analysis.Task(spec, tuple((k, r.to_json()) for k, r in _games(recs))))[1])
    for (key, r), h in zip(res.items(), replay(recs)):
        doubles = _mine(r, 0, "double")
        assert doubles, "the doubler may double at its first turn after the opening"
        k = doubles[0][1]
        views = Stakes.from_dicts([{"value": 1, "owner": "centre"}], ref.evaluator.variant)
        _, eq = double_equities(h[k][None], views, ref.evaluator, 0, recs[0].rules())
        e = eq[0]
        want = 1000 * max(max(e["no_double"], min(e["double_take"], 1.0)) - min(e["double_take"], 1.0), 0.0)
        assert doubles[0][4] == pytest.approx(want, abs=0.01)
        assert all(d[4] == 0 for d in r["decisions"] if d[0] == 1)      # the reference's own answers
    assert any(d[4] > 0 for r in res.values() for d in _mine(r, 0, "double"))
    s = analysis.summarize(res.values(), spec)
    assert s["agents"]["always-double"]["cube"]["n"] > 0 and s["agents"]["always-double"]["cube"]["total"] > 0


@pytest.mark.parametrize("stakes", [None, "dave"])
def test_long_nardy(nets, stakes):
    spec = f"td:{nets['long']}"
    ref = make_agent(spec, "long")
    recs = play_games("long", (make_agent("heuristic", "long"), ref), 2, seed=3, stakes=stakes)
    s = analysis.run_analysis(_games(recs), spec, progress=False, log=lambda m: None)
    assert s["classes"] == ["contact", "race", "bearoff"]
    assert s["agents"][spec]["all"]["total"] == 0 and s["agents"][spec]["all"]["n"] > 0
    assert s["agents"]["heuristic"]["play"]["total"] > 0
    assert (s["agents"]["heuristic"]["cube"]["n"] > 0) == (stakes == "dave")


def test_mat_files_give_the_analysis_of_their_records(nets, tmp_path):
    from nardy_ai.matfile import write_mat
    recs = play_games("backgammon", (make_agent("heuristic", "backgammon"), make_agent("pubeval", "backgammon")),
                      2, seed=6)
    (tmp_path / "m.mat").write_text(write_mat(recs, "heuristic", "pubeval"))
    spec = f"td:{nets['backgammon']}"
    from_mat = analysis.run_analysis(analysis.load_games([tmp_path / "m.mat"]), spec, progress=False,
                                     log=lambda m: None)
    direct = analysis.run_analysis(_games(recs), spec, progress=False, log=lambda m: None)
    assert from_mat["agents"] == direct["agents"]


def test_cli_json_schema_and_errors(nets, tmp_path, capsys):
    from nardy_ai.cli import main
    recs = play_games("backgammon", (make_agent("heuristic", "backgammon"), make_agent("random", "backgammon")),
                      2, seed=9)
    write_jsonl(recs, tmp_path / "games.jsonl")
    assert main(["analyze", str(tmp_path / "games.jsonl"), "--reference", f"td:{nets['backgammon']}", "--json",
                 "--no-progress"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["games"] == 2 and s["thresholds_mp"] == {"doubtful": 40.0, "bad": 80.0, "very_bad": 160.0}
    assert set(s["agents"]) == {"heuristic", "random"}
    for row in s["agents"].values():
        for group in ("all", "play", "cube", "double", "take", *row["by_class"]):
            r = row[group] if group in row else row["by_class"][group]
            assert set(r) == {"n", "total", "mean", "se"}
        assert set(row["per_1000_decisions"]) == {"doubtful", "bad", "very_bad"}
        assert row["bad"] >= row["very_bad"]
    assert [g["key"] for g in s["per_game"]] == ["games.jsonl:0", "games.jsonl:1"]
    assert main(["analyze", str(tmp_path / "games.jsonl"), "--reference", "heuristic"]) == 2
    assert "gives no equities" in capsys.readouterr().err
    assert main(["analyze", str(tmp_path / "games.jsonl"), "--resume"]) == 2
    assert "--resume needs --out" in capsys.readouterr().err
    assert main(["analyze", str(tmp_path / "nothing.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err


def _on_one_process_and(nets, seed: int, **options) -> tuple[dict, dict]:
    """The analysis of two heuristic-v-random games (dice from ``seed``), one game a task, on this
    process and then with ``options`` (more workers, another backend)."""
    recs = play_games("backgammon", (make_agent("heuristic", "backgammon"), make_agent("random", "backgammon")),
                      2, seed=seed)
    run = partial(analysis.run_analysis, _games(recs), f"td:{nets['backgammon']}", task_games=1, progress=False,
                  log=lambda m: None)
    return run(), run(**options)


def test_two_workers_give_the_same_result(nets):
    one, two = _on_one_process_and(nets, 12, jobs=2)
    assert one == two


def test_tournament_analyze_prints_ppg_and_error_rates(nets, tmp_path, capsys):
    from nardy_ai.cli import main
    out = tmp_path / "t"
    spec = f"td:{nets['backgammon']}"
    assert main(["tournament", "--variant", "backgammon", "--agents", "heuristic", "random", "--games", "4",
                 "--out", str(out), "--no-progress", "--analyze-games", "3", "--analyze-reference", spec]) == 0
    text = capsys.readouterr().out
    lines = (out / analysis.ANALYSIS_FILE).read_text().splitlines()
    assert len(lines) == 3                                   # the sample, not the 4 games
    standings = json.loads((out / "summary.json").read_text())
    s = json.loads((out / analysis.ANALYSIS_SUMMARY).read_text())
    assert s["games"] == 3 and s["reference"] == spec
    assert "ppg" in text and "95% interval" in text
    for r in standings["ranking"]:
        row = next(ln for ln in text.splitlines() if ln.startswith(r["agent"]) and f"{r['points_per_game']:+.3f}" in ln)
        assert f"{s['agents'][r['agent']]['all']['mean']:.1f}" in row


def test_ray_backend_gives_the_same_result(nets, ray_instance):
    local, ray = _on_one_process_and(nets, 13, backend="ray")
    assert ray == local
