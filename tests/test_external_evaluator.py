"""The ``evaluate`` op of the agent protocol (``nardy serve``) and the ``ext:`` evaluator that
asks it (nardy_ai.evaluator.ExternalEvaluator): the same probabilities as the net loaded
directly, finished games valued once by the evaluator module, one request per batch, and
one-line errors for agents without an evaluator, malformed positions and engines that die or
break the protocol."""

import json
import shlex
import sys
import textwrap

import numpy as np
import pytest

from nardy_ai.agents import RandomAgent, make_agent
from nardy_ai.agents.neural import NeuralAgent
from nardy_ai.bench.positions import random_positions
from nardy_ai.board import board_to_json
from nardy_ai.errors import EngineError
from nardy_ai.evaluator import Evaluator, ExternalEvaluator, load_evaluator, outcomes
from nardy_ai.model import CheckpointError, NeuralEvaluator, terminal_outcomes
from nardy_ai.movegen import generate
from nardy_ai.protocol import Server
from nardy_ai.variants import get_variant
from movegen_helpers import hand_board

SERVE = [sys.executable, "-m", "nardy_ai.cli", "serve"]
#: Finished afterstates (the mover has borne off all 15) of each family: a single game, a
#: gammon / mars and, in backgammon, a backgammon.
FINISHED = {
    "backgammon": [hand_board({20: -3, 24: -2}, off=15, opp_off=10), hand_board({20: -15}, off=15),
                   hand_board({3: -14}, opp_bar=1, off=15)],
    "long": [hand_board({12: -5}, off=15, opp_off=10), hand_board({12: -15}, off=15)],
}


def afterstates(variant: str, seed: int = 3) -> np.ndarray:
    """Afterstates met in random play, the finished ones of :data:`FINISHED` spread among them."""
    positions = random_positions(variant, n_games=4, plies=40, seed=seed)
    dice = np.random.default_rng(seed).integers(1, 7, (len(positions), 2))
    boards = generate(positions, dice, variant).boards[::7]
    for i, done in enumerate(FINISHED[variant]):
        boards = np.insert(boards, 5 * i + 1, done, axis=0)
    return boards


def ext(*serve_args: str) -> str:
    """The ``ext:`` source of ``nardy serve SERVE_ARGS``."""
    return "ext:" + shlex.join(SERVE + list(serve_args))


@pytest.mark.parametrize("variant, net", [("backgammon", "bg-champion"), ("long", "best")])
def test_ext_evaluator_over_nardy_serve_gives_the_nets_own_probabilities(variant, net):
    boards = afterstates(variant)
    done = boards[:, 26] == 15
    assert done.sum() == len(FINISHED[variant]) and len(boards) > 40
    direct = load_evaluator(net, variant)
    with load_evaluator(ext("--agent", net, "--variant", variant), variant) as remote:
        assert isinstance(remote, ExternalEvaluator) and isinstance(remote, Evaluator)
        assert remote.variant.id == variant
        expected = outcomes(direct, boards)
        # Through the evaluator module and straight to the engine (finished games included:
        # the server values them by the same outcomes()), one evaluate request per call.
        via_outcomes = outcomes(remote, boards)
        assert remote.client.engine.next_id == 2           # info, then one evaluate
        raw = remote.probabilities(boards)
        assert remote.client.engine.next_id == 3
    for got in (via_outcomes, raw):
        assert got.shape == (len(boards), direct.probabilities(boards[:1]).shape[1])
        assert np.allclose(got, expected, rtol=0, atol=1e-6)
    assert np.array_equal(raw[done], terminal_outcomes(boards[done], variant))
    # A td: spec takes any evaluator load_evaluator reads, an external one too (started lazily).
    agent = make_agent(f"td:{ext('--agent', net, '--variant', variant)}@1ply", variant)
    assert isinstance(agent.evaluator, ExternalEvaluator) and agent.plies == 1


def test_server_evaluates_through_the_agents_evaluator_and_refuses_agents_without_one():
    bg = get_variant("backgammon")
    net = NeuralEvaluator.create(bg, hidden=(8,), seed=5, device="cpu")
    boards = afterstates("backgammon")[:12]
    batch = [board_to_json(b) for b in boards]
    server = Server(NeuralAgent(net, name="tiny", plies=1), bg)
    ans = json.loads(server.answer_line(json.dumps({"id": 4, "op": "evaluate", "batch": batch})))
    assert ans["id"] == 4 and len(ans["batch"]) == len(boards)
    assert np.allclose([a["probabilities"] for a in ans["batch"]], outcomes(net, boards), rtol=0, atol=1e-6)
    one = json.loads(server.answer_line(json.dumps({"id": 5, "op": "evaluate", **batch[1]})))
    assert np.array_equal(one["probabilities"], terminal_outcomes(boards[1:2], bg)[0])
    bad = dict(batch[2], off=[3, 0])
    err = json.loads(server.answer_line(json.dumps({"id": 6, "op": "evaluate", "batch": [batch[0], bad]}), 9))
    assert err["id"] == 6 and err["error"].startswith("line 9: batch[1]:") and "checkers" in err["error"]
    random = Server(RandomAgent(), bg)
    err = json.loads(random.answer_line(json.dumps({"id": 7, "op": "evaluate", "batch": batch})))
    assert err["id"] == 7 and err["error"] == (f"agent {RandomAgent().name} has no evaluator to answer "
                                               f"'evaluate' (agents on a net, a net set or a registry "
                                               f"name have one)")
    assert json.loads(random.answer_line('{"id": 8, "op": "info"}'))["id"] == 8      # still serving


def test_ext_evaluator_error_answers_name_the_engine_and_the_op_and_it_keeps_serving():
    boards = afterstates("backgammon")[:4]
    with load_evaluator(ext("--agent", "heuristic"), "backgammon") as remote:
        for _ in range(2):           # an error answer leaves the engine serving
            with pytest.raises(EngineError, match=r"^evaluator ext:.*serve --agent heuristic: the engine "
                                                  r"answered the evaluate request with an error: line \d+: "
                                                  r"agent heuristic has no evaluator") as e:
                outcomes(remote, boards)
            assert "\n" not in str(e.value)
    with pytest.raises(CheckpointError, match="needs a variant"):
        load_evaluator(ext("--agent", "best"))


FAKE_ENGINE = textwrap.dedent("""
    import json, sys
    mode = sys.argv[1]
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] == "info":
            print(json.dumps({"id": req["id"], "name": "fake", "variant": "backgammon"}), flush=True)
        elif mode == "dies":
            print("evaluator crashed", file=sys.stderr)
            sys.exit(4)
        elif mode == "short":          # three numbers where backgammon has five
            print(json.dumps({"id": req["id"], "batch": [{"probabilities": [0.5, 0.1, 0.0]}
                                                         for _ in req["batch"]]}), flush=True)
""")


def test_ext_evaluator_reports_an_engine_that_dies_or_answers_the_wrong_shape(tmp_path):
    path = tmp_path / "fake_engine.py"
    path.write_text(FAKE_ENGINE)
    boards = afterstates("backgammon")[:3]
    dies = ExternalEvaluator(shlex.join([sys.executable, str(path), "dies"]), "backgammon")
    with pytest.raises(EngineError, match=r"^evaluator ext:.*fake_engine.py dies: the engine process "
                                          r"exited \(status 4\).*evaluator crashed"):
        dies.probabilities(boards)
    with pytest.raises(EngineError, match="stopped after an earlier failure"):
        dies.probabilities(boards)
    with ExternalEvaluator(shlex.join([sys.executable, str(path), "short"]), "backgammon") as short:
        with pytest.raises(EngineError, match=r"the evaluate answer must hold a 'batch' list of 3 "
                                              r"entries, each with 'probabilities': 5 numbers"):
            short.probabilities(boards)
    with pytest.raises(CheckpointError, match="no program 'no-such-engine-here'"):
        load_evaluator("ext:no-such-engine-here --serve", "backgammon")
