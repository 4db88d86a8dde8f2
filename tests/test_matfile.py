"""GNU Backgammon .mat match files: plays written one hop per die, files read back as gnubg
splits their lines, and (when gnubg is installed) imported by gnubg itself."""

import re
import shutil
import subprocess
from dataclasses import replace

import numpy as np
import pytest

from nardy_ai.agents import make_agent
from nardy_ai.board import OFF, start_board
from nardy_ai.errors import FormatError
from nardy_ai.game import play_games, replay
from nardy_ai.matfile import jf_play, mat_name, read_mat, replay_mat_game, write_mat
from nardy_ai.variants import get_variant

BG = get_variant("backgammon")


def test_plays_are_written_one_hop_per_die_with_bar_25_and_off_0():
    """COM-1/COM-5, BG-4/BG-5: a combined move goes through an open point, (2) is written out,
    a bear-off with a larger die waits until the higher checkers are off."""
    start = start_board(BG)
    assert jf_play(start, (6, 5), "24/13") == "24/18 18/13"
    assert jf_play(start, (3, 3), "8/5(2) 6/3(2)") == "8/5 8/5 6/3 6/3"
    assert jf_play(start, (4, 2), "") == ""
    bar = start.copy()
    bar[23] -= 1
    bar[24] = 1                          # one mover checker on the bar
    bar[19] = -1                         # an opponent blot on the mover's 20 point
    bar[18] += 1
    assert jf_play(bar, (5, 1), "bar/20* 6/5") == "25/20* 6/5"
    home = np.zeros(28, np.int8)
    home[[3, 2, 1]] = 1                  # mover on 4, 3, 2; the rest off
    home[OFF] = 12
    home[23] = -15
    assert jf_play(home, (3, 3), "4/off 3/off 2/off") == "4/1 3/0 2/0 1/0"
    with pytest.raises(FormatError):
        jf_play(start, (6, 5), "24/12")


def test_names_never_hold_a_colon():
    assert mat_name("td:checkpoints/backgammon/td80/checkpoint.pt") == "td=td80/checkpoint.pt"
    assert ":" not in mat_name("ext:a:b") and len(mat_name("x" * 80)) == 31


@pytest.fixture(scope="module")
def games():
    a, b = make_agent("heuristic", BG), make_agent("random", BG)
    recs = play_games(BG, (a, b), 5, seed=11) + play_games(BG, (b, a), 5, seed=12)
    return [replace(r, game=i) for i, r in enumerate(recs)]


def test_mat_file_reads_back_to_the_same_games(games):
    """Every game is there, every move line has its dice, the plays replay to the recorded
    positions and the winner's column and points match."""
    text = write_mat(games, "heuristic", "random", event="test")
    length, mat = read_mat(text)
    assert length == 0 and len(mat) == len(games)
    assert text.count(" Game ") == len(games)
    for line in text.splitlines():
        if re.match(r"^\s*\d+\)", line):
            assert re.search(r"[1-6][1-6]:", line), line
    history = replay(games)
    scores = [0, 0]
    for r, g, boards in zip(games, mat, history):
        left_white = r.white == "heuristic"
        assert g.names == ("heuristic", "random") and g.scores == tuple(scores)
        assert len(g.turns) == r.plies
        for t, rt in zip(g.turns, r.turns):
            assert t.dice == rt.dice and (t.player == 0) == ((rt.player == 0) == left_white)
            dice = [rt.dice[0]] * 4 if rt.dice[0] == rt.dice[1] else list(rt.dice)
            for hop in t.play.split():                 # one die per hop (off: that die or more)
                src, dst = (int(x.rstrip("*")) for x in hop.split("/"))
                assert src - dst in dice or (dst == 0 and max(dice) > src), (hop, rt.dice)
                dice.remove(src - dst if src - dst in dice else max(dice))
        for mine, theirs in zip(replay_mat_game(g), boards):
            assert (mine == theirs).all()
        winner = 0 if (r.winner == 0) == left_white else 1
        assert (g.winner, g.points) == (winner, r.points)
        scores[winner] += r.points


def test_long_nardy_games_are_refused():
    a = make_agent("random", "long")
    recs = play_games("long", (a, a), 1, seed=0)
    with pytest.raises(FormatError, match="long nardy"):
        write_mat(recs, "random", "random")


GNUBG = shutil.which("gnubg") or shutil.which("/usr/games/gnubg")


@pytest.mark.skipif(not GNUBG, reason="GNU Backgammon (the gnubg program) is not installed")
def test_gnubg_imports_the_file_with_every_play(games, tmp_path):
    """gnubg re-exports the imported match with the same rolls, plays (hop order aside) and
    results: no play was rejected."""
    src, back = tmp_path / "in.mat", tmp_path / "out.mat"
    src.write_text(write_mat(games, "heuristic", "random"))
    commands = f"import mat {src}\nexport match mat {back}\n"
    subprocess.run([GNUBG, "-t", "-q"], input=commands, capture_output=True, text=True, timeout=120)
    _, ours = read_mat(src.read_text())
    _, theirs = read_mat(back.read_text())
    assert len(theirs) == len(ours)
    for g, h in zip(ours, theirs):
        assert [(t.player, t.dice, sorted(t.play.split())) for t in g.turns] == \
               [(t.player, t.dice, sorted(t.play.split())) for t in h.turns]
        assert (g.winner, g.points) == (h.winner, h.points)
