"""Tournaments: duplicate dice, balanced totals, statistics, resuming, parallel workers, files
and the `nardy tournament` command."""

import csv
import json
import math
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from nardy_ai import tournament as tm
from nardy_ai.agents import AGENTS
from nardy_ai.cli import main
from nardy_ai.game import replay
from nardy_ai.matfile import read_mat
from agent_helpers import FirstPlay
from cli_helpers import main_error


@pytest.fixture
def first_agent(monkeypatch):
    monkeypatch.setitem(AGENTS, "first", lambda arg, variant: FirstPlay())   # a third, deterministic agent


def run(tmp_path, name, *, agents=("heuristic", "random"), games=8, chunk=2, seed=5, variant="backgammon",
        gauntlet=False, jobs=1, resume=False, log=None, mat=False):
    cfg = tm.TournamentConfig(variant, tuple(agents), games, seed, gauntlet, chunk, mat=mat)
    lines = []
    summary = tm.run_tournament(cfg, tmp_path / name, resume=resume, jobs=jobs, progress=False,
                                log=log or lines.append)
    return summary, lines


def test_duplicate_pairs_replay_the_same_dice_with_seats_swapped():
    """Game 2k has A as white, game 2k+1 the same seed, lots and rolls with B as white."""
    cfg = tm.TournamentConfig("backgammon", ("heuristic", "random"), 8, seed=3, chunk=4)
    chunk, results = tm.play_chunk(tm.schedule(cfg)[0])
    games = dict(results)
    assert sorted(games) == list(range(8))
    different_plays = 0
    for k in range(4):
        g1, g2 = games[2 * k], games[2 * k + 1]
        assert (g1.white, g1.black, g2.white, g2.black) == ("heuristic", "random", "random", "heuristic")
        assert g1.seed == g2.seed and g1.opening == g2.opening and g1.first == g2.first
        n = min(g1.plies, g2.plies)
        assert [t.dice for t in g1.turns[:n]] == [t.dice for t in g2.turns[:n]]
        different_plays += [t.play for t in g1.turns[:n]] != [t.play for t in g2.turns[:n]]
    assert different_plays == 4                       # the agents, not the dice, differ
    # The chunk seed depends on the tournament seed, the pairing and the chunk only.
    assert chunk.seed == tm.chunk_seed(3, "heuristic", "random", 0) != tm.chunk_seed(4, "heuristic", "random", 0)


def test_round_robin_totals_balance_and_files_agree(tmp_path, first_agent):
    summary, lines = run(tmp_path, "t", agents=("heuristic", "random", "first"), games=10, chunk=2, mat=True)
    out = tmp_path / "t"
    assert summary["games"] == 30 and len(summary["pairings"]) == 3
    records = tm.read_games(out / tm.GAMES_FILE)
    assert len(records) == 30 and (out / tm.GAMES_FILE).read_text().count("\n") == 30
    replay(list(records.values()))                    # every recorded play is legal
    # One side's points won are the other side's points lost, pairing by pairing.
    for p in summary["pairings"]:
        a, b = p["agents"]
        recs = [records[(a, b, i)] for i in range(10)]
        won_a = sum(r.points for r in recs if (r.winner == 0) == (r.white == a))
        won_b = sum(r.points for r in recs if (r.winner == 0) != (r.white == a))
        assert (p["points_won"], p["points_lost"]) == (won_a, won_b)
        assert p["points_per_game"] == pytest.approx((won_a - won_b) / 10)
        assert summary["cross_table"][a][b] == -summary["cross_table"][b][a] == pytest.approx(p["points_per_game"])
        lo, hi = p["points_per_game_ci95"]
        assert lo <= p["points_per_game"] <= hi
    ranking = summary["ranking"]
    assert sum(r["points_won"] for r in ranking) == sum(r["points_lost"] for r in ranking)
    assert sum(r["wins"] for r in ranking) == 30 and all(r["games"] == 20 for r in ranking)
    assert sum(r["elo"] for r in ranking) == pytest.approx(0, abs=1e-6)
    assert [r["elo"] for r in ranking] == sorted((r["elo"] for r in ranking), reverse=True)
    for r in ranking:
        assert r["elo_ci95"][0] < r["elo"] < r["elo_ci95"][1]
        assert sum(r["levels_won"].values()) == r["wins"]
        assert r["win_rates_by_level"]["gammon"] == pytest.approx(
            (r["levels_won"]["gammon"] + r["levels_won"]["backgammon"]) / r["games"])
    elo = {r["agent"]: r["elo"] for r in ranking}
    assert elo["random"] < elo["heuristic"]
    # summary.json is the returned summary; summary.csv has one row per agent and per pairing.
    assert json.loads((out / tm.SUMMARY_JSON).read_text()) == json.loads(json.dumps(summary))
    rows = list(csv.DictReader((out / tm.SUMMARY_CSV).open()))
    agents = [r for r in rows if r["kind"] == "agent"]
    pairings = [r for r in rows if r["kind"] == "pairing"]
    assert [r["agent"] for r in agents] == [r["agent"] for r in ranking] and len(pairings) == 3
    for row, r in zip(agents, ranking):
        assert float(row["elo"]) == pytest.approx(r["elo"]) and int(row["games"]) == 20
        assert float(row["points_per_game"]) == pytest.approx(r["points_per_game"])
        assert int(row["won_gammon"]) == r["levels_won"]["gammon"]
    # On request (mat), one .mat money session per pairing with all its games.
    mats = sorted((out / tm.MATCH_DIR).glob("*.mat"))
    assert [m.name for m in mats] == ["01-heuristic-vs-random.mat", "02-heuristic-vs-first.mat",
                                      "03-random-vs-first.mat"]
    length, games = read_mat(mats[0].read_text())
    assert length == 0 and len(games) == 10
    assert [len(g.turns) for g in games] == [records[("heuristic", "random", i)].plies for i in range(10)]
    # The terminal text: the ranking and a cross-table with every agent.
    text = "\n".join(lines)
    assert "Cross-table" in text and all(a in text for a in ("heuristic", "random", "first"))


def test_resume_after_a_kill_gives_the_uninterrupted_result(tmp_path):
    """A games file cut in the middle of a chunk and of a line, plus a duplicated line: the
    resumed tournament plays what is missing and counts every game once."""
    full, _ = run(tmp_path, "full", games=12, chunk=2)
    killed = tmp_path / "killed"
    shutil.copytree(tmp_path / "full", killed)
    for name in (tm.SUMMARY_JSON, tm.SUMMARY_CSV, tm.PICTURE):
        (killed / name).unlink(missing_ok=True)
    lines = (killed / tm.GAMES_FILE).read_text().splitlines(keepends=True)
    kept = lines[:5] + [lines[2]] + [lines[5][:40]]   # a repeat and a torn last line
    (killed / tm.GAMES_FILE).write_text("".join(kept))
    log = []
    resumed, _ = run(tmp_path, "killed", games=12, chunk=2, resume=True, log=log.append)
    assert resumed == full
    assert any("5 games already played, 7 to go" in x for x in log)
    text = (killed / tm.GAMES_FILE).read_text()
    assert text.endswith("\n") and text.count("\n") == 12 + 1      # 12 games, one repeated line
    assert len(tm.read_games(killed / tm.GAMES_FILE)) == 12
    assert json.loads((killed / tm.SUMMARY_JSON).read_text()) == json.loads((tmp_path / "full" / tm.SUMMARY_JSON).read_text())
    # Resuming a finished tournament plays nothing and gives the same summary.
    again, _ = run(tmp_path, "killed", games=12, chunk=2, resume=True)
    assert again == full and (killed / tm.GAMES_FILE).read_text() == text


def test_results_do_not_depend_on_the_number_of_processes(tmp_path):
    one, _ = run(tmp_path, "one", games=8, chunk=2, jobs=1)
    two, _ = run(tmp_path, "two", games=8, chunk=2, jobs=2)
    assert one == two
    lines = [sorted((tmp_path / d / tm.GAMES_FILE).read_text().splitlines()) for d in ("one", "two")]
    assert lines[0] == lines[1]


def test_one_process_at_a_time_in_a_folder(tmp_path):
    fcntl = pytest.importorskip("fcntl")
    (tmp_path / "t").mkdir()
    with open(tmp_path / "t" / ".lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(tm.TournamentError, match="another nardy tournament is running"):
            run(tmp_path, "t", games=2, chunk=1)


def test_gauntlet_and_long_nardy(tmp_path, first_agent):
    summary, lines = run(tmp_path, "g", agents=("first", "heuristic", "random"), games=4, variant="long",
                         gauntlet=True, mat=True)
    assert [p["agents"] for p in summary["pairings"]] == [["first", "heuristic"], ["first", "random"]]
    assert summary["cross_table"]["heuristic"]["random"] is None
    assert summary["result_levels"] == ["oin", "mars"]
    assert not (tmp_path / "g" / tm.MATCH_DIR).exists()          # .mat files are for backgammon
    assert any(x.startswith(".mat files: not written") for x in lines)


def test_elo_fit_is_the_maximum_likelihood_with_one_virtual_draw():
    elo, cov = tm.fit_elo(2, [(0, 1)], [30], [40])
    p = 30.5 / 41
    assert elo[0] - elo[1] == pytest.approx(400 * math.log10(p / (1 - p)))
    assert elo.sum() == pytest.approx(0)
    # Wald: variance of the difference = 1 / (n p (1 - p)) logits^2, split evenly (mean 0).
    sd_diff = math.sqrt(1 / (41 * p * (1 - p))) * 400 / math.log(10)
    assert math.sqrt(cov[0, 0]) == pytest.approx(sd_diff / 2)
    sweep, _ = tm.fit_elo(3, [(0, 1), (1, 2), (0, 2)], [20, 20, 20], [20, 20, 20])
    assert np.isfinite(sweep).all() and sweep[0] > sweep[1] > sweep[2]


def test_picture_needs_matplotlib(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    run(tmp_path, "with", games=2, chunk=1)
    assert (tmp_path / "with" / tm.PICTURE).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    _, lines = run(tmp_path, "without", games=2, chunk=1)
    assert not (tmp_path / "without" / tm.PICTURE).exists()
    assert any(x.startswith("no picture: matplotlib is not installed") for x in lines)


def test_default_agents_are_the_registry_champion_references_and_baselines(monkeypatch):
    """The default tournament is the registry's list: the variant's champion first, then its
    references and the built-in baselines; gnubg:0ply joins backgammon's when installed."""
    from nardy_ai import registry
    from nardy_ai.tournament import settings
    monkeypatch.setattr(settings, "gnubg_installed", lambda: False)
    for v in ("backgammon", "short_caucasian", "short_trictrac", "long", "long_dave"):
        specs = tm.default_agents(v)
        assert specs[0] == registry.load().best[v]
        assert specs[-2:] == ["heuristic", "random"]
        assert len(specs) == len(set(specs)) <= 6
    assert "pubeval" in tm.default_agents("backgammon") and "pubeval" not in tm.default_agents("long")
    assert "td-gammon" in tm.default_agents("backgammon")
    monkeypatch.setattr(settings, "gnubg_installed", lambda: True)
    assert tm.default_agents("backgammon")[-1] == "gnubg:0ply"
    assert "gnubg:0ply" not in tm.default_agents("long")


def test_errors_name_the_problem(tmp_path, capsys):
    out = str(tmp_path / "t")
    base = ["tournament", "--variant", "backgammon", "--games", "2", "--no-progress"]
    main_error(capsys, base + ["--agents", "heuristic", "nobody", "--out", out], "unknown agent 'nobody'")
    assert not (tmp_path / "t").exists()
    main_error(capsys, ["tournament", "--variant", "backgamon", "--agents", "heuristic", "random"],
               "unknown variant 'backgamon'")
    main_error(capsys, base + ["--agents", "random", "random"], "listed twice")
    main_error(capsys, base + ["--agents", "heuristic", "random", "--resume"], "--resume needs --out")
    main_error(capsys, base + ["--agents", "heuristic", "random", "--out", out, "--resume"], "holds no tournament")
    assert main(base + ["--agents", "heuristic", "random", "--out", out]) == 0
    capsys.readouterr()
    main_error(capsys, base + ["--agents", "heuristic", "random", "--out", out], "already holds a tournament")
    main_error(capsys, base + ["--agents", "heuristic", "random", "--out", out, "--resume", "--seed", "9"],
               "--seed 0, not 9")
    main_error(capsys, base + ["--agents", "random", "heuristic", "--out", out, "--resume"],
               "--agents heuristic random, not random heuristic")
    main_error(capsys, base + ["--agents", "heuristic", "random", "--out", out, "--resume", "--variant", "long"],
               "--variant backgammon, not long")
    assert main(["tournament", "--variant", "backgammon", "--out", out, "--resume", "--no-progress"]) == 0


def test_the_command_prints_the_ranking_and_the_cross_table(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "nardy_ai.cli", "tournament", "--variant", "backgammon",
                           "--agents", "heuristic", "random", "--games", "3", "--seed", "1",
                           "--out", str(tmp_path / "t"), "--no-progress"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "--games 3 rounded up to 4" in proc.stdout
    assert "Cross-table" in proc.stdout and "Elo" in proc.stdout
    assert json.loads((tmp_path / "t" / tm.SUMMARY_JSON).read_text())["games_per_pairing"] == 4


def test_default_agents_play_from_any_folder(tmp_path, monkeypatch):
    """Outside the repository the default agents' names resolve to the shipped files."""
    from nardy_ai.agents import make_agent
    monkeypatch.chdir(tmp_path)
    for spec in tm.default_agents("short_trictrac"):
        assert make_agent(spec, "short_trictrac").name == spec


def synthetic_summary(specs, games=4, stakes="none"):
    """The summary of a round robin among ``specs`` whose games are copies of a few real
    heuristic-vs-random games (tables only need figures, not those agents' own play)."""
    from dataclasses import replace
    from nardy_ai.agents import make_agent
    from nardy_ai.game import play_games
    from nardy_ai.variants import get_variant
    v = get_variant("backgammon")
    recs = play_games(v, (make_agent("heuristic", v), make_agent("random", v)), games, seed=1, stakes=stakes)
    cfg = tm.TournamentConfig("backgammon", tuple(specs), games, 0, False, 2, stakes)
    played = {}
    for k, (a, b) in enumerate(cfg.pairings()):
        for i in range(games):
            r = recs[(i + k) % games]
            played[(a, b, i)] = (replace(r, white=a, black=b) if (r.white == "heuristic") == (k % 3 > 0)
                                 else replace(r, white=b, black=a))
    return tm.summarize_tournament(cfg, played)


TWENTY = ([f"td:runs/{'backgammon' if i % 2 else 'short_trictrac'}/search_targets_distill_iter{i // 2}/current.pt"
           for i in range(16)]
          + ["td:runs/backgammon/search_targets_distill_iter0/current.pt@1ply+cube2ply",
             'ext:"python -m some.engine --with --many --options --that --go --on and on and on"',
             "heuristic", "a-plug-in-agent-with-a-name-longer-than-any-column:and/an/argument/too"])


@pytest.mark.parametrize("stakes", ["none", "cube"])
def test_a_summary_of_twenty_agents_fits_a_terminal(stakes):
    """20 agents with long names: every line fits 100 columns, the names in the tables are
    distinct, every spec is listed whole, and the folded cross-table keeps all 20 x 19 cells."""
    assert len(set(TWENTY)) == 20
    summary = synthetic_summary(TWENTY, stakes=stakes)
    text = tm.format_summary(summary)
    lines = text.splitlines()
    assert max(len(x) for x in lines) <= 100
    shown = tm.display_names(TWENTY, tm.NAME_WIDTH, "backgammon")
    assert len(set(shown.values())) == 20 and all(len(n) <= tm.NAME_WIDTH for n in shown.values())
    # Paths of two variants keep the variant folder apart.
    assert shown[TWENTY[0]] != shown[TWENTY[1]]
    joined = " ".join(x.strip() for x in lines)
    for spec in TWENTY:
        assert spec in joined and shown[spec] in text
    assert len(re.findall(r"[+-]\d+\.\d\d±", text)) == 20 * 19
    ranked = [x for x in lines if re.match(r"^[ \d]\d  ", x)]
    assert {x.split()[0] for x in ranked} == {str(i) for i in range(1, 21)}
    if stakes == "cube":
        assert "Stakes (cube)" in text and ("#19 vs #20" in text or "#20 vs #19" in text)


def test_names_are_registry_names_or_the_shortest_distinct_path_tails():
    from nardy_ai import registry
    champ = registry.entry("bg-champion")
    specs = ["td:runs/backgammon/td80/checkpoint.pt", "td:runs/long/td80/checkpoint.pt",
             "td:runs/mine/checkpoint.pt", f"td:{champ.path}@1ply", "pubeval"]
    assert tm.display_names(specs, variant="backgammon") == {
        specs[0]: "td:backgammon/td80/checkpoint.pt", specs[1]: "td:long/td80/checkpoint.pt",
        specs[2]: "td:mine/checkpoint.pt", specs[3]: "bg-champion@1ply", "pubeval": "pubeval"}
    # Alone, a path needs no more than its last two parts.
    assert tm.display_name(specs[0]) == "td:td80/checkpoint.pt"
    # Cut to a width, names differing only in the middle stay apart.
    twins = [f"td:runs/{'a' * 30}{c}{'b' * 30}/checkpoint.pt" for c in "xy"]
    cut = tm.display_names(twins, 24)
    assert len(set(cut.values())) == 2 and all(len(n) <= 24 for n in cut.values())


def test_fold_table_repeats_the_key_column_in_blocks_that_fit():
    keys = ["one", "two"]
    columns = [(f"c{j}", [f"{j}{'x' * 15}", "y"]) for j in range(10)]
    lines = tm.fold_table("key", keys, columns, width=60)
    assert max(len(x) for x in lines) <= 60
    blocks = "\n".join(lines).split("\n\n")
    assert len(blocks) > 1 and all(b.splitlines()[1].startswith("one") for b in blocks)
    assert sum(b.splitlines()[0].count(" c") for b in blocks) == 10         # every column, once


def test_written_files_are_listed_by_folder(tmp_path):
    (tmp_path / tm.GAMES_FILE).write_bytes(b"x" * 250_000)
    (tmp_path / tm.SUMMARY_JSON).write_text("{}")
    (tmp_path / tm.MATCH_DIR).mkdir()
    mats = [tmp_path / tm.MATCH_DIR / f"{i:02d}.mat" for i in range(190)]
    for m in mats:
        m.write_bytes(b"y" * 1000)
    line = tm.written_summary(tmp_path, [tmp_path / tm.GAMES_FILE, tmp_path / tm.SUMMARY_JSON, *mats])
    assert line == (f"written: {tmp_path.as_posix()}/ (games.jsonl 250.0 kB, summary.json, "
                    f"matches/ 190 files 190.0 kB)")


def test_mat_files_are_written_on_request_and_resume_keeps_the_choice(tmp_path, capsys):
    base = ["tournament", "--variant", "backgammon", "--agents", "heuristic", "random", "--games", "2",
            "--no-progress"]
    plain, mat = str(tmp_path / "plain"), str(tmp_path / "mat")
    assert main(base + ["--out", plain]) == 0
    assert not (tmp_path / "plain" / tm.MATCH_DIR).exists()
    assert "matches/" not in capsys.readouterr().out
    assert main(base + ["--out", mat, "--mat"]) == 0
    assert [m.name for m in (tmp_path / "mat" / tm.MATCH_DIR).glob("*.mat")] == ["01-heuristic-vs-random.mat"]
    assert "matches/ 1 file" in capsys.readouterr().out
    shutil.rmtree(tmp_path / "mat" / tm.MATCH_DIR)
    assert main(["tournament", "--variant", "backgammon", "--out", mat, "--resume", "--no-progress"]) == 0
    assert (tmp_path / "mat" / tm.MATCH_DIR / "01-heuristic-vs-random.mat").exists()
    main_error(capsys, ["tournament", "--variant", "backgammon", "--out", plain, "--resume", "--mat"],
               "started without --mat")
    assert not (tmp_path / "plain" / tm.MATCH_DIR).exists()


def test_the_progress_bar_names_the_leader_by_its_table_name(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(AGENTS, "fake", lambda arg, variant: FirstPlay())
    specs = ("fake:runs/backgammon/td80/checkpoint.pt", "fake:runs/long/td80/checkpoint.pt", "heuristic")
    cfg = tm.TournamentConfig("backgammon", specs, 2, 0, False, 1)
    tm.run_tournament(cfg, tmp_path / "t", progress=True, log=lambda _: None)
    err = capsys.readouterr().err
    assert "leader " in err
    names = tm.display_names(specs, 24)
    assert any(f"leader {n} " in err for n in names.values())
    assert "fake:td80/checkpoint.pt" not in err                # the variant folder keeps them apart


def test_shared_dice_roll_game_i_of_every_pairing_alike(tmp_path, first_agent):
    """--dice shared: the chunk seed follows the seed and the chunk only, so game i of (X, A)
    and of (X, B) open with the same lot and roll the same dice (each pairing its own dice
    by default)."""
    assert tm.chunk_seed(3, "a", "b", 1, "shared") == tm.chunk_seed(3, "c", "d", 1, "shared")
    assert tm.chunk_seed(3, "a", "b", 1, "shared") != tm.chunk_seed(3, "a", "b", 2, "shared")
    assert tm.chunk_seed(3, "a", "b", 1) != tm.chunk_seed(3, "c", "d", 1)
    agents = ("heuristic", "random", "first")
    games = {}
    for dice in ("shared", "pairing"):
        cfg = tm.TournamentConfig("backgammon", agents, 8, 3, True, 2, dice=dice)
        cfg.check()
        for chunk in tm.schedule(cfg):
            _, results = tm.play_chunk(chunk)
            for i, r in results:
                games[(dice, chunk.b, i)] = r
    for dice, same in (("shared", True), ("pairing", False)):
        alike = 0
        for i in range(8):
            g1, g2 = games[(dice, "random", i)], games[(dice, "first", i)]
            n = min(g1.plies, g2.plies)
            rolls = ([t.dice for t in g1.turns[:n]], [t.dice for t in g2.turns[:n]])
            alike += (g1.seed, g1.opening, g1.first, rolls[0]) == (g2.seed, g2.opening, g2.first, rolls[1])
        assert alike == (8 if same else 0), dice


def test_paired_differences_of_a_shared_dice_gauntlet(tmp_path, first_agent):
    """The summary's paired section: A's minus B's mean points per duplicate pair against the
    first agent, its interval over the pairs' differences, the unpaired interval (standard
    errors in quadrature) and the correlation, recomputed here from the games file."""
    agents = ("heuristic", "random", "first")
    cfg = tm.TournamentConfig("backgammon", agents, 12, 4, True, 3, dice="shared")
    summary = tm.run_tournament(cfg, tmp_path / "t", progress=False, jobs=1, log=lambda s: None)
    assert summary["dice"] == "shared" and "paired" in summary["methods"]
    [p] = summary["paired"]
    assert p["agents"] == ["random", "first"] and p["opponent"] == "heuristic" and p["pairs"] == 6
    games = {}
    for line in (tmp_path / "t" / tm.GAMES_FILE).read_text().splitlines():
        rec = json.loads(line)
        games[(rec["pairing"][1], rec["index"])] = rec

    def pair_means(b):
        pts = []
        for i in range(12):
            g = games[(b, i)]
            won = [g["white"], g["black"]][g["winner"]] == b
            pts.append(g["points"] if won else -g["points"])
        return np.array(pts, float).reshape(-1, 2).mean(axis=1)

    pa, pb = pair_means("random"), pair_means("first")
    d = pa - pb
    half = 1.959963984540054 * d.std(ddof=1) / math.sqrt(6)
    half_u = 1.959963984540054 * math.sqrt((pa.var(ddof=1) + pb.var(ddof=1)) / 6)
    assert p["difference"] == pytest.approx(d.mean())
    assert p["ci95"] == pytest.approx([d.mean() - half, d.mean() + half])
    assert p["unpaired_ci95"] == pytest.approx([d.mean() - half_u, d.mean() + half_u])
    assert p["correlation"] == pytest.approx(np.corrcoef(pa, pb)[0, 1])
    assert "Paired on shared dice" in tm.format_summary(summary)
    # Round robin or default dice: no paired section.
    plain = tm.TournamentConfig("backgammon", agents, 4, 4, True, 2)
    s2 = tm.run_tournament(plain, tmp_path / "u", progress=False, jobs=1, log=lambda s: None)
    assert "paired" not in s2 and "dice" not in s2 and "Paired" not in tm.format_summary(s2)


def test_dice_mode_is_saved_checked_and_kept_on_resume(tmp_path, capsys):
    base = ["tournament", "--variant", "backgammon", "--agents", "heuristic", "random", "--games", "2",
            "--no-progress"]
    out = str(tmp_path / "t")
    assert main(base + ["--out", out, "--dice", "shared"]) == 0
    saved = json.loads((tmp_path / "t" / tm.CONFIG_FILE).read_text())
    assert saved["dice"] == "shared" and tm.load_config(out).dice == "shared"
    main_error(capsys, ["tournament", "--variant", "backgammon", "--out", out, "--resume", "--dice", "pairing"],
               "started with --dice shared, not pairing")
    assert main(["tournament", "--variant", "backgammon", "--out", out, "--resume", "--no-progress"]) == 0
    # A folder written before the option (no "dice" field) resumes with each pairing's own dice.
    del saved["dice"]
    assert tm.TournamentConfig.from_json(saved).dice == "pairing"
    with pytest.raises(tm.TournamentError, match="--dice must be one of pairing, shared"):
        tm.TournamentConfig("backgammon", ("heuristic", "random"), 2, dice="same").check()
