"""The `nardy` command as a user runs it: a subprocess, its output lines and exit status."""

import json

import pytest

from nardy_ai.board import board_to_json, start_board
from cli_helpers import assert_one_line_error, nardy

START = board_to_json(start_board("backgammon"), "backgammon")
LONG = board_to_json(start_board("long"), "long")


def test_moves_answers_each_line_in_order_and_reports_bad_lines():
    """POSITIONS.md: one answer per request, in order; a bad line gets an error line."""
    lines = [dict(START, dice=[3, 1]), "not json", dict(START, dice=[7, 1]),
             dict(LONG, dice=[6, 6]), dict(START, points=[1] * 24, dice=[1, 2]),
             {"points": START["points"], "dice": [6, 5]}]
    text = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n"
    proc = nardy("moves", "--variant", "backgammon", stdin=text)
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(x) for x in proc.stdout.splitlines()]
    assert len(out) == 6
    assert len(out[0]["afterstates"]) == 16                       # the opening 3-1
    assert {a["play"] for a in out[0]["afterstates"]} >= {"8/5 6/5", "24/23 13/10", "13/9"}
    assert "malformed JSON" in out[1]["error"]
    assert "dice[0]" in out[2]["error"]
    assert [a["play"] for a in out[3]["afterstates"]] == ["24/18(2)"]   # LN-4 first mover
    assert "checkers" in out[4]["error"]
    assert len(out[5]["afterstates"]) == 7                        # --variant fills in
    for a in out[0]["afterstates"]:
        assert sum(x for x in a["points"] if x > 0) + a["bar"][0] + a["off"][0] == 15


def test_moves_no_move_returns_the_position_with_empty_play():
    """COM-4: closed board against a checker on the bar."""
    pts = [0] * 5 + [14] + [0] * 12 + [-2] * 6     # the opponent holds points 19-24
    pos = {"variant": "backgammon", "points": pts, "bar": [1, 0], "off": [0, 3], "dice": [6, 6]}
    proc = nardy("moves", stdin=json.dumps(pos) + "\n")
    ans = json.loads(proc.stdout)
    assert ans["afterstates"] == [{"points": pts, "bar": [1, 0], "off": [0, 3], "play": ""}]


def test_show_text_svg_and_gnubg_id(tmp_path):
    svg = tmp_path / "start.svg"
    proc = nardy("show", json.dumps(START), "--svg", str(svg))
    assert proc.returncode == 0, proc.stderr
    assert "4HPwATDgc/ABMA" in proc.stdout and "167" in proc.stdout
    assert svg.read_text().lstrip().startswith(("<?xml", "<svg"))
    proc = nardy("show", "--gnubg-id", "4HPwATDgc/ABMA")
    assert proc.returncode == 0 and "167" in proc.stdout
    proc = nardy("show", "-", stdin=json.dumps(LONG))
    assert proc.returncode == 0 and "360" in proc.stdout


def test_play_prints_a_summary_and_writes_records(tmp_path):
    out = tmp_path / "games.jsonl"
    proc = nardy("play", "--variant", "long", "--agents", "heuristic", "random", "--games", "6",
                 "--seed", "3", "--jsonl", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["games"] == 6
    lines = out.read_text().splitlines()
    assert len(lines) == 6 and all(json.loads(x)["variant"] == "long" for x in lines)


def test_bench_movegen_prints_units_and_machine():
    proc = nardy("bench", "movegen", "--variant", "backgammon", "--batch-sizes", "16",
                 "--repeats", "1")
    assert proc.returncode == 0, proc.stderr
    assert "afterstates/s" in proc.stdout and "machine:" in proc.stdout and "MiB" in proc.stdout


def test_play_with_stakes_prints_cube_statistics_that_balance():
    proc = nardy("play", "--variant", "backgammon", "--agents", "heuristic", "pubeval",
                 "--games", "12", "--seed", "3", "--stakes", "cube", "--json")
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert s["stakes"] == "cube" and len(s["cube"]) == 2
    a, b = s["cube"]
    # Each raise offered is answered by the other side; both see the same games.
    assert a["doubles"] == b["takes"] + b["passes"] + b["beavers"] == b["doubles_received"]
    assert b["doubles"] == a["takes"] + a["passes"] + a["beavers"] == a["doubles_received"]
    assert a["doubles"] + b["doubles"] > 0
    assert a["games_passed"] == b["games_passed"] == a["passes"] + b["passes"]
    assert a["mean_stake"] == b["mean_stake"] >= 1
    text = nardy("play", "--variant", "backgammon", "--agents", "heuristic", "pubeval",
                 "--games", "12", "--seed", "3", "--stakes", "cube")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert f"  stakes cube: mean final stake {a['mean_stake']:.2f}, {a['games_passed']} of 12 games " \
           f"ended by a pass" in lines
    assert (f"  heuristic: {a['doubles']} doubles offered, {a['takes']} takes, {a['passes']} passes, "
            f"{a['beavers']} beavers") in lines
    assert any(x.startswith("  pubeval: ") for x in lines)


def test_play_without_stakes_prints_no_cube_lines():
    proc = nardy("play", "--variant", "backgammon", "--agents", "heuristic", "heuristic",
                 "--games", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "cube" not in json.loads(proc.stdout) and "stakes" not in json.loads(proc.stdout)


@pytest.mark.parametrize("args, first", [
    (("play", "--variant", "backgammon", "--agents", "random", "heuristic", "--games", "-5"),
     "nardy: error: play: argument --games:"),
    (("tournament", "--variant", "backgammon", "--games", "x"), "nardy: error: tournament: argument --games:"),
    (("hint", "--top", "0"), "nardy: error: hint: argument --top:"),
    (("bench", "nope"), "nardy: error: bench: argument what:"),
    (("nope",), "nardy: error: argument command:"),
])
def test_argument_errors_carry_one_prefix(args, first):
    """An argument error of any sub-command: ``nardy: error:``, the sub-command's name once, the
    argument; never ``nardy: error: nardy play: ...``."""
    proc = nardy(*args)
    assert_one_line_error(proc)
    assert proc.stderr.startswith(first) and proc.stderr.count("nardy") == 1, proc.stderr
