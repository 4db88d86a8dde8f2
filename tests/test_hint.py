"""``nardy hint`` (issue #12): the cube decision with its equities next to the ranked plays."""

from __future__ import annotations

import json

import numpy as np

from nardy_ai.agents import make_agent
from nardy_ai.board import board_to_json, start_board
from nardy_ai.cli import main
from nardy_ai.hint import cube_hint, play_hint
from nardy_ai.variants import get_variant

BG = get_variant("backgammon")
NET = "bg-2ply-r72+cube0ply"      # a shipped net (registry name) with the cube at 0 ply
#: We are on roll at 57 pips against 81 with no contact: a clear double and pass (CUBE-1).
RACE = {"variant": "backgammon", "points": [2, 2, 2, 3, 3, 3] + [0] * 10 + [-2, -2, -3, -3, -3, -2, 0, 0],
        "bar": [0, 0], "off": [0, 0]}


def test_cube_hint_of_a_clear_double_pass_and_of_an_opponents_cube():
    agent = make_agent(NET, BG)
    board = np.array(RACE["points"] + [0, 0, 0, 0], np.int8)
    h = cube_hint(agent, board, BG, None)
    assert h["action"] == "double, pass"
    e = h["equities"]
    assert min(e["double_take"], e["double_pass"]) > e["no_double"] and e["double_take"] > 1.0
    assert cube_hint(agent, board, BG, {"value": 2, "owner": "opponent"})["action"] == "no double available"
    start = cube_hint(agent, start_board(BG), BG, None)
    assert start["action"] == "no double" and start["equities"]["no_double"] < 0.3


def test_play_hint_ranks_every_legal_play_by_equity():
    agent = make_agent(NET, BG)
    plays = play_hint(agent, start_board(BG), BG, (3, 1), top=100)
    eq = [p["equity"] for p in plays]
    assert eq == sorted(eq, reverse=True) and plays[0]["loss"] == 0.0
    assert plays[0]["play"] == "8/5 6/5"                     # the standard opening 3-1
    assert len(plays) == len({p["play"] for p in plays}) == 16


def test_cli_hint(capsys):
    assert main(["hint", json.dumps(RACE), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cube"]["action"] == "double, pass" and out["plays"] is None
    pos = json.dumps(board_to_json(start_board(BG), BG))
    assert main(["hint", pos, "--dice", "6-5", "--top", "3", "--agent", NET]) == 0
    text = capsys.readouterr().out
    assert "plays of 6-5" in text and "24/13" in text.splitlines()[4]
    assert main(["hint", pos, "--dice", "7-1"]) != 0
    assert "--dice" in capsys.readouterr().err


def test_cli_hint_dice_none_gives_the_cube_decision_only(capsys):
    """``--dice none`` (offered by --help): the cube decision, no plays, even where the
    position holds a roll."""
    pos = dict(RACE, dice=[6, 5])
    assert main(["hint", json.dumps(pos), "--json", "--agent", NET]) == 0
    assert json.loads(capsys.readouterr().out)["plays"]                       # its own roll is played
    assert main(["hint", json.dumps(pos), "--json", "--agent", NET, "--dice", "none"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dice"] is None and out["plays"] is None and out["cube"]["action"] == "double, pass"
    assert main(["hint", json.dumps(pos), "--agent", NET, "--dice", "None"]) == 0
    text = capsys.readouterr().out
    assert "cube (before the roll): double, pass" in text and "plays of" not in text
