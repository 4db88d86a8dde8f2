"""`nardy pool`: one figure per pairing from several tournament folders (other seeds, reversed
seat order, a match stopped part-way), and its refusals."""

import json

import numpy as np
import pytest

from nardy_ai import tournament as tm
from nardy_ai.cli import main
from nardy_ai.stats import side_stats
from nardy_ai.tournament.pool import pool_tournaments
from cli_helpers import main_error


def play(tmp_path, name, agents=("heuristic", "random"), games=8, seed=5, variant="backgammon", dice="pairing"):
    cfg = tm.TournamentConfig(variant, tuple(agents), games, seed, False, 2, dice=dice)
    summary = tm.run_tournament(cfg, tmp_path / name, progress=False, log=lambda m: None)
    return str(tmp_path / name), summary


def points(folder, a, b):
    """Signed points of ``a`` in every game of pairing (a, b), in game order."""
    games = tm.read_games(f"{folder}/games.jsonl")
    idx = sorted(i for (x, y, i) in games if (x, y) == (a, b))
    return np.array([games[(a, b, i)].points * (1 if (games[(a, b, i)].winner == 0) == (games[(a, b, i)].white == a)
                                                 else -1) for i in idx], float)


def test_two_seeds_pool_as_one_sample_of_duplicate_pairs(tmp_path):
    f1, s1 = play(tmp_path, "s5", seed=5)
    f2, s2 = play(tmp_path, "s6", seed=6, games=6)
    pool = pool_tournaments([f1, f2])
    (p,) = pool["pairings"]
    assert p["agents"] == ["heuristic", "random"] and p["games"] == 14
    both = np.concatenate([points(f1, "heuristic", "random"), points(f2, "heuristic", "random")])
    assert p["points_per_game"] == pytest.approx(both.mean())
    pair_means = both.reshape(-1, 2).mean(axis=1)
    half = 1.959963984540054 * pair_means.std(ddof=1) / np.sqrt(len(pair_means))
    assert p["points_per_game_ci95"] == pytest.approx([both.mean() - half, both.mean() + half])
    # each folder's own figure is its tournament's summary figure
    for part, s in zip(p["folders"], (s1, s2)):
        assert part["complete"] and part["games"] == s["games_per_pairing"]
        assert part["points_per_game"] == pytest.approx(s["pairings"][0]["points_per_game"])
        assert part["points_per_game_ci95"] == pytest.approx(s["pairings"][0]["points_per_game_ci95"])
    assert p["pairs_won"] + p["pairs_lost"] <= 7
    assert pool["method"].startswith("complete duplicate pairs")


def test_a_reversed_pairing_counts_with_its_points_negated(tmp_path):
    f1, s1 = play(tmp_path, "ab", agents=("heuristic", "random"), seed=5)
    f2, s2 = play(tmp_path, "ba", agents=("random", "heuristic"), seed=5)   # other seat order: other dice
    (p,) = pool_tournaments([f1, f2])["pairings"]
    assert p["agents"] == ["heuristic", "random"] and p["games"] == 16
    want = (s1["pairings"][0]["points_per_game"] - s2["pairings"][0]["points_per_game"]) / 2
    assert p["points_per_game"] == pytest.approx(want)
    assert p["folders"][1]["points_per_game"] == pytest.approx(-s2["pairings"][0]["points_per_game"])
    assert p["folders"][1]["agents"] == ["random", "heuristic"]


def test_a_stopped_match_contributes_its_complete_pairs_only(tmp_path):
    f1, _ = play(tmp_path, "s5", seed=5)
    f2, _ = play(tmp_path, "s6", seed=6)
    path = tmp_path / "s6" / "games.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    kept = [ln for ln in lines if json.loads(ln)["index"] not in (3, 6, 7)]    # pair 1 half, pair 3 gone
    path.write_text("".join(kept))
    (p,) = pool_tournaments([f1, f2])["pairings"]
    part = p["folders"][1]
    assert (part["games_on_file"], part["games"], part["complete"]) == (5, 4, False)
    assert p["games"] == 12
    pts2 = points(f2, "heuristic", "random")        # games 0, 1, 2, 4, 5 on file
    assert part["points_per_game"] == pytest.approx(np.r_[pts2[:2], pts2[3:5]].mean())


def test_aliases_pool_one_agent_called_by_two_names(tmp_path, monkeypatch):
    from nardy_ai.agents import AGENTS
    monkeypatch.setitem(AGENTS, "heuristic2", AGENTS["heuristic"])
    f1, _ = play(tmp_path, "a", agents=("heuristic", "random"), seed=5)
    f2, _ = play(tmp_path, "b", agents=("heuristic2", "random"), seed=6)
    with pytest.raises(tm.TournamentError, match="no pairing is held by two"):
        pool_tournaments([f1, f2])
    (p,) = pool_tournaments([f1, f2], {"heuristic2": "heuristic"})["pairings"]
    assert p["games"] == 16 and [q["agents"][0] for q in p["folders"]] == ["heuristic", "heuristic2"]


def test_shared_dice_pool_with_each_pairings_own_dice_but_not_twice(tmp_path, capsys):
    """A shared-dice match rolls other dice than a default one of the same seed (they pool);
    two shared-dice matches of one seed roll the same dice in either seat order (refused)."""
    own, _ = play(tmp_path, "own", seed=5)
    shared, _ = play(tmp_path, "shared", seed=5, dice="shared")
    swapped, _ = play(tmp_path, "swapped", agents=("random", "heuristic"), seed=5, dice="shared")
    (p,) = pool_tournaments([own, shared])["pairings"]
    assert p["games"] == 16
    assert not np.array_equal(points(own, "heuristic", "random"), points(shared, "heuristic", "random"))
    # the same dice with the seats swapped: game 2k of one is game 2k+1 of the other
    assert np.array_equal(points(shared, "heuristic", "random"), -points(swapped, "random", "heuristic")[
        np.arange(8) ^ 1])
    main_error(capsys, ["pool", shared, swapped], "same dice", "seed 5")


def test_refusals_name_the_problem(tmp_path, capsys):
    f1, _ = play(tmp_path, "s5", seed=5)
    f2, _ = play(tmp_path, "s5b", seed=5, games=4)
    f3, _ = play(tmp_path, "long", seed=6, variant="long", games=2)
    main_error(capsys, ["pool", f1, f2], "same dice", "seed 5")
    main_error(capsys, ["pool", f1, f3], "variant", "same rules")
    main_error(capsys, ["pool", f1], "at least two")
    main_error(capsys, ["pool", f1, f1], "named twice")
    main_error(capsys, ["pool", f1, str(tmp_path)], "not a tournament folder")
    main_error(capsys, ["pool", f1, f3, "--alias", "heuristic"], "--alias", "SPEC=NAME")


def test_the_command_prints_a_table_and_writes_json(tmp_path, capsys):
    f1, _ = play(tmp_path, "s5", seed=5)
    f2, _ = play(tmp_path, "s6", seed=6)
    out = tmp_path / "pooled.json"
    assert main(["pool", f1, f2, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "heuristic vs random" in text and "pooled" in text and "s6, seed 6" in text
    saved = json.loads(out.read_text())
    assert saved["pairings"][0]["games"] == 16 and saved["folders"] == [f1, f2]
    assert main(["pool", f1, f2, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == saved
