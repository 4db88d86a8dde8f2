"""The agent protocol (POSITIONS.md, "Agent protocol"): `nardy serve` as a subprocess, the
`ext:` agent that speaks it, and the human agent driven by a fake terminal."""

import io
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from nardy_ai.agents import ExternalAgent, HumanAgent, RandomAgent, make_agent
from nardy_ai.agents.neural import NeuralAgent
from nardy_ai.board import board_from_json, board_to_json, start_board
from nardy_ai.errors import EngineError, IllegalPlay, NardyError
from nardy_ai.game import play_games, replay
from nardy_ai.model import NeuralEvaluator
from nardy_ai.movegen import generate
from nardy_ai.protocol import Server
from nardy_ai.variants import get_variant

BG = get_variant("backgammon")
START = board_to_json(start_board("backgammon"))
LONG = board_to_json(start_board("long"))
SERVE = [sys.executable, "-m", "nardy_ai.cli", "serve"]


def serve(requests, *args):
    """Run `nardy serve ARGS` on request lines; returns (answers, process)."""
    text = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in requests) + "\n"
    proc = subprocess.run(SERVE + list(args), input=text, capture_output=True, text=True, timeout=60)
    return [json.loads(line) for line in proc.stdout.splitlines()], proc


def assert_legal(answer, position, variant):
    """The answer's afterstate is one legal afterstate of the position, with its notation."""
    v, board, dice, _ = board_from_json(position, variant)
    after = generate(board[None], np.array([dice]), v, notation=True)
    _, played, _, _ = board_from_json(answer["afterstate"], v)
    rows = np.flatnonzero((after.boards == played).all(axis=1))
    assert len(rows) == 1, answer
    assert answer["play"] == after.plays[rows[0]]


def test_serve_answers_every_request_in_order_and_keeps_serving_after_errors():
    fourteen = dict(START, points=[-2, 0, 0, 0, 0, 4] + START["points"][6:])
    batch = [dict(START, dice=d) for d in ([3, 1], [6, 6], [5, 2])]
    batch.append(dict(LONG, variant="long", dice=[6, 5]))
    requests = [
        {"id": 1, "op": "info"},
        dict(START, id=2, op="play", dice=[3, 1]),
        {"id": 3, "op": "play", "batch": batch[:3]},
        "{not json",
        dict(fourteen, id=5, op="play", dice=[3, 1]),
        dict(START, id=6, op="play", dice=[7, 1]),
        {"id": 7, "op": "play", "batch": [dict(START, dice=[3, 1]), dict(START, dice=[0, 2])]},
        dict(START, id=8, op="play"),
        {"id": 9, "op": "play", "batch": batch[3:]},      # a long-nardy position to a backgammon bot
        {"id": 10, "op": "resign"},
        "",                                                # a blank line is no request
        dict(START, id=11, op="double", cube={"value": 1, "owner": "centre"}),
        dict(START, id="twelve", op="take"),
        dict(START, id=13, op="play", dice=[6, 5]),
    ]
    out, proc = serve(requests, "--agent", "heuristic", "--variant", "backgammon")
    assert proc.returncode == 0, proc.stderr
    assert [a["id"] for a in out] == [1, 2, 3, None, 5, 6, 7, 8, 9, 10, 11, "twelve", 13]
    assert out[0] == {"id": 1, "name": "heuristic", "variant": "backgammon", "version": "0.1.0",
                      "variant_version": "1"}
    assert out[1]["play"] == "8/5 6/5" and out[1]["equity"] is None
    assert_legal(out[1], dict(START, dice=[3, 1]), "backgammon")
    assert len(out[2]["batch"]) == 3
    for answer, position in zip(out[2]["batch"], batch):
        assert_legal(answer, position, "backgammon")
    assert "malformed JSON" in out[3]["error"]
    assert "14 checkers" in out[4]["error"]
    assert "dice[0]" in out[5]["error"]
    assert "batch[1]" in out[6]["error"] and "dice[0]" in out[6]["error"]
    assert "'dice'" in out[7]["error"]
    assert "batch[0]" in out[8]["error"] and "variant" in out[8]["error"]
    assert "'op'" in out[9]["error"]
    # The heuristic takes cube decisions by its pip-count rule (CUBE-1): no double, a take.
    assert out[10]["double"] is False and out[10]["equity"]["p"] == pytest.approx(0.5, abs=0.1)
    assert out[11]["take"] is True and set(out[11]) == {"id", "take", "equity"}
    assert_legal(out[12], dict(START, dice=[6, 5]), "backgammon")


def test_serve_random_long_nardy_batch_and_empty_input():
    positions = [dict(LONG, dice=[a, b]) for a in range(1, 7) for b in range(1, 7)]
    out, proc = serve([{"id": 0, "op": "play", "batch": positions}], "--agent", "random",
                      "--variant", "long", "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    assert len(out) == 1 and len(out[0]["batch"]) == 36
    for answer, position in zip(out[0]["batch"], positions):
        assert_legal(answer, position, "long")
    out, proc = serve([], "--agent", "random")
    assert proc.returncode == 0 and out == []


def test_serve_rejects_an_unknown_agent_with_a_one_line_error():
    out, proc = serve([], "--agent", "nobody")
    assert proc.returncode == 2 and "unknown agent 'nobody'" in proc.stderr


def test_server_gives_a_neural_agents_equity_of_the_chosen_afterstate():
    ev = NeuralEvaluator.create("backgammon", hidden=(8,), seed=1, device="cpu")
    server = Server(NeuralAgent(ev), "backgammon")
    ans = json.loads(server.answer_line(json.dumps(dict(START, id=1, op="play", dice=[4, 2]))))
    _, board, _, _ = board_from_json(ans["afterstate"], "backgammon")
    assert ans["equity"] == pytest.approx(float(ev.equity(board[None])[0]), abs=1e-6)
    after = generate(start_board("backgammon")[None], np.array([[4, 2]]), "backgammon")
    assert ans["equity"] == pytest.approx(float(ev.equity(after.boards).max()), abs=1e-6)


# --- the ext: agent ------------------------------------------------------------------------

def ext_heuristic(variant, **kw):
    return ExternalAgent(SERVE + ["--agent", "heuristic", "--variant", variant], variant, **kw)


@pytest.mark.parametrize("variant", ["backgammon", "long"])
def test_ext_agent_plays_complete_games_through_nardy_serve(variant):
    with ext_heuristic(variant) as ext:
        records = play_games(variant, (ext, RandomAgent()), 6, seed=11)
        assert ext.info["name"] == "heuristic" and ext.info["variant"] == variant
    assert all(r.white == ext.name for r in records)
    replay(records)                                   # every recorded play is legal
    assert sum(r.winner == 0 for r in records) >= 5   # the heuristic beats random


def test_ext_agent_chooses_for_explicit_positions_and_skips_forced_ones():
    closed = {"points": [0] * 5 + [14] + [0] * 12 + [-2] * 6, "bar": [1, 0], "off": [0, 3]}
    _, no_move, _, _ = board_from_json(closed, "backgammon")
    boards = np.stack([start_board("backgammon"), no_move, start_board("backgammon")])
    after = generate(boards, np.array([[3, 1], [6, 6], [6, 1]]), "backgammon", notation=True)
    with ext_heuristic("backgammon") as ext:
        rows = ext.choose(after, ext.variant, np.random.default_rng(0))
    assert after.notation(rows) == ["8/5 6/5", "", "13/7 8/7"]


def test_ext_spec_strips_quotes():
    """The command after ``ext:`` is run with its quotes removed; the spec's refusals (a missing
    program, no command) are checked in tests/test_agents.py."""
    cmd = " ".join(SERVE + ["--agent", "random"])
    for spec in (f'ext:"{cmd}"', f"ext:{cmd}"):
        agent = make_agent(spec, "backgammon")
        assert isinstance(agent, ExternalAgent) and agent.argv == SERVE + ["--agent", "random"]
        assert agent.name == spec


FAKE_ENGINE = textwrap.dedent("""
    import json, sys
    mode = sys.argv[1]
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] == "info":
            ans = {"name": "fake", "variant": "backgammon", "version": "0"}
        elif mode == "unchanged":      # plays no checker although it could
            ans = {"batch": [{"play": "", "afterstate": {k: p[k] for k in ("points", "bar", "off")}}
                             for p in req["batch"]]}
        elif mode == "notation":       # answers the play only
            ans = {"batch": [{"play": sys.argv[2]} for p in req["batch"]]}
        elif mode == "wrong-id":
            ans = {"id": -1, "batch": []}
        print(json.dumps({"id": req["id"], **ans}), flush=True)
""")


@pytest.fixture
def fake_engine(tmp_path):
    path = tmp_path / "fake_engine.py"
    path.write_text(FAKE_ENGINE)
    return lambda *args, **kw: ExternalAgent([sys.executable, str(path), *args], "backgammon", **kw)


def _opening(dice):
    return generate(start_board("backgammon")[None], np.array([dice]), "backgammon")


def test_ext_agent_maps_a_play_in_notation_and_refuses_illegal_answers(fake_engine):
    with fake_engine("notation", "13/7 8/7") as ext:
        after = _opening([6, 1])
        assert after.notation(ext.choose(after, ext.variant, None)) == ["13/7 8/7"]
        with pytest.raises(IllegalPlay, match=r"played '13/7 8/7' in position .*not one of the legal") as e:
            ext.choose(_opening([3, 1]), ext.variant, None)
        assert "fake_engine.py" in str(e.value) and '"dice": [3, 1]' in str(e.value)
    with fake_engine("unchanged") as ext:
        with pytest.raises(IllegalPlay, match="not a legal afterstate") as e:
            ext.choose(_opening([5, 2]), ext.variant, None)
        assert "fake_engine.py" in str(e.value) and '"dice": [5, 2]' in str(e.value)


def test_ext_agent_reports_dead_silent_and_confused_engines(fake_engine):
    dead = ExternalAgent([sys.executable, "-c", "import sys; print('no engine here', file=sys.stderr); "
                                                "sys.exit(3)"], "backgammon")
    with pytest.raises(EngineError, match=r"exited \(status 3\).*no engine here"):
        dead.choose(_opening([3, 1]), dead.variant, None)
    silent = ExternalAgent([sys.executable, "-c", "import time; time.sleep(60)"], "backgammon", timeout=0.5)
    with pytest.raises(EngineError, match="no answer within 0.5 s"):
        silent.choose(_opening([3, 1]), silent.variant, None)
    with pytest.raises(EngineError, match="stopped after an earlier failure"):
        silent.choose(_opening([3, 1]), silent.variant, None)
    with fake_engine("wrong-id") as ext, pytest.raises(EngineError, match="does not carry the id"):
        ext.choose(_opening([3, 1]), ext.variant, None)
    long = ExternalAgent(SERVE + ["--agent", "random"], "long")
    with pytest.raises(EngineError, match="plays variant 'backgammon', not 'long'"):
        long.choose(generate(start_board("long")[None], np.array([[3, 3]]), "long"), long.variant, None)


def test_serve_through_an_ext_agent_forwards_plays_and_cube_requests():
    inner = " ".join(SERVE + ["--agent", "heuristic"])
    out, proc = serve([dict(START, id=1, op="play", dice=[4, 2]), dict(START, id=2, op="double")],
                      "--agent", f"ext:{inner}")
    assert proc.returncode == 0, proc.stderr
    assert out[0]["play"] == "8/4 6/4"
    assert out[1] == {"id": 2, "double": False, "equity": out[1]["equity"]}
    out, proc = serve([dict(START, id=3, op="take", cube={"value": 2, "owner": "mover"})],
                      "--agent", "random")
    assert proc.returncode == 0 and "CUBE-1" in out[0]["error"]     # random has no cube logic


# --- the human agent -----------------------------------------------------------------------

def test_human_agent_reads_a_play_reasking_after_illegal_and_unreadable_entries():
    out = io.StringIO()
    human = HumanAgent(io.StringIO("24/21\nhello\n99\n\n8/5 6/5\n"), out)
    after = _opening([3, 1])
    row = human.choose(after, BG, None)
    assert after.notation(row) == ["8/5 6/5"]
    text = out.getvalue()
    assert "rolled 3-1" in text and "X (you, on roll)" in text
    assert "Legal plays:" in text and "8/5 6/5" in text
    assert "COM-1/COM-3" in text                   # 24/21 leaves the 1 unplayed
    assert "cannot read move 'hello'" in text
    assert "no play number 99" in text
    assert text.count("Your play") == 5
    assert isinstance(make_agent("human", "backgammon"), HumanAgent)


def test_human_agent_by_number_forced_plays_and_end_of_input():
    after = generate(np.stack([start_board("backgammon")] * 2), np.array([[6, 1], [6, 5]]), "backgammon",
                     notation=True)
    rows = HumanAgent(io.StringIO("2\n1\n"), io.StringIO()).choose(after, BG, None)
    assert rows.tolist() == [after.offsets[0] + 1, after.offsets[1]]
    closed = {"points": [0] * 5 + [14] + [0] * 12 + [-2] * 6, "bar": [1, 0], "off": [0, 3]}
    _, board, _, _ = board_from_json(closed, "backgammon")
    out = io.StringIO()
    forced = generate(board[None], np.array([[6, 6]]), "backgammon")
    assert HumanAgent(io.StringIO(""), out).choose(forced, BG, None).tolist() == [0]
    assert "No checker can move with 6-6 (COM-4)" in out.getvalue()
    with pytest.raises(NardyError, match="end of input"):
        HumanAgent(io.StringIO("24/21\n"), io.StringIO()).choose(_opening([3, 1]), BG, None)
