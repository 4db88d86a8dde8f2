"""Digests of what the lockstep loops without pinned records produce for fixed seeds: the
replay of the pinned records, rollouts (:mod:`nardy_ai.rollout`), cubeful rollouts
(:mod:`nardy_ai.cube_rollout`), and seeded episodes of the Gymnasium and PettingZoo
environments.  Written to ``tests/data/pinned_drivers.json`` by the code as it was before
these loops became calls of the game driver (:mod:`nardy_ai.driver`); ``tests/test_driver.py``
checks that the driver-based loops give the same digests.  The results a torch net valued are
pinned by value instead (:func:`net_values`), re-pinned on 2026-12-03 by the driver-based code
from an AMD EPYC whose float32 products round differently from the machine that pinned them
first (3e-8 at most between torch's CPU kernels here); every digest without a net was
reproduced unchanged.  Run from the repository root: ``python tests/make_pinned_drivers.py``."""

from __future__ import annotations

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_pinned_games import digest  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def plays_bytes(plays) -> np.ndarray:
    """The plays' notation joined by "|", as bytes to digest."""
    return np.frombuffer("|".join(plays).encode(), np.uint8)


def write_pinned(name: str, digests: dict) -> None:
    """Writes ``digests`` to ``tests/data/NAME`` as JSON and prints the path."""
    path = os.path.join(DATA, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(digests, f, indent=1)
    print(path)


def _result_digest(res) -> str:
    return digest(res.probs, res.probs_se, res.equity, res.equity_se, res.plies, res.truncated)


def net_values(**arrays) -> dict:
    """The arrays of a result that a torch net valued, as lists: pinned by value rather than
    digest, since float32 matrix products round differently on other CPUs (the test compares
    them within ``tests/test_driver.NET_TOLERANCE``)."""
    return {name: np.asarray(a).tolist() for name, a in arrays.items()}


def _result_values(res) -> dict:
    return net_values(probs=res.probs, probs_se=res.probs_se, equity=res.equity, equity_se=res.equity_se,
                      plies=res.plies, truncated=res.truncated)


def replay_digest() -> dict:
    """The boards :func:`nardy_ai.game.replay` gives for the pinned game records."""
    from nardy_ai.game import read_jsonl, replay
    boards = replay(read_jsonl(os.path.join(DATA, "pinned_games.jsonl")))
    return {"replay/pinned_games": digest(*boards)}


def rollout_digests() -> dict:
    """Rollouts of a few positions: played out, seen as afterstates, with given dice, with a
    randomised agent, truncated by a small net, in several tasks."""
    import torch

    from nardy_ai.agents.neural import NeuralAgent
    from nardy_ai.bench.positions import random_positions
    from nardy_ai.board import flip
    from nardy_ai.model import NeuralEvaluator
    from nardy_ai.rollout import rollout
    from nardy_ai.variants import get_variant
    out = {}
    for variant in ("backgammon", "short_trictrac", "long"):
        v = get_variant(variant)
        boards = random_positions(v, n_games=3, plies=18, seed=6)[-3:]
        out[f"rollout/{variant}/heuristic"] = _result_digest(
            rollout(boards, v, "heuristic", games=72, seed=3, chunk=36))
        out[f"rollout/{variant}/random-afterstates"] = _result_digest(
            rollout(flip(boards, v), v, "random", games=40, seed=4, on_roll=False))
        out[f"rollout/{variant}/dice"] = _result_digest(
            rollout(boards, v, "heuristic", games=36, seed=5, dice=[[3, 1], [6, 6], [5, 2]]))
        torch.manual_seed(0)
        net = NeuralEvaluator.create(v, hidden=(8,), seed=1, device="cpu")
        out[f"rollout/{variant}/truncated"] = _result_values(
            rollout(boards, v, NeuralAgent(net), games=36, seed=6, truncate=3, chunk=12))
    return out


def cube_rollout_digests() -> dict:
    """Cubeful rollouts (both branches) with a small net deciding plays and the cube."""
    import torch

    from nardy_ai.agents.neural import NeuralAgent
    from nardy_ai.bench.positions import random_positions
    from nardy_ai.cube import Stakes
    from nardy_ai.cube_rollout import cubeful_rollout
    from nardy_ai.model import NeuralEvaluator
    from nardy_ai.variants import get_variant
    out = {}
    for variant in ("backgammon", "long_dave"):
        v = get_variant(variant)
        boards = random_positions(v, n_games=2, plies=30, seed=8)[-2:]
        torch.manual_seed(0)
        agent = NeuralAgent(NeuralEvaluator.create(v, hidden=(8,), seed=2, device="cpu"))
        cubes = Stakes.from_dicts([{"value": 1, "owner": "centre"}, {"value": 2, "owner": "mover"}], v)
        for trunc in (4, None):
            r = cubeful_rollout(boards, cubes, v, agent, games=12, truncate=trunc, seed=3, max_plies=3000)
            out[f"cube_rollout/{variant}/{trunc}"] = net_values(
                no_double=r.no_double, double_take=r.double_take, no_double_se=r.no_double_se,
                double_take_se=r.double_take_se)
    return out


ENV_CASES = [("backgammon", None, "heuristic", 0), ("backgammon", None, "random", 1),
             ("short_trictrac", None, "random", 0), ("long", None, "heuristic", 1),
             ("long_dave", "dave", "heuristic", 0), ("backgammon", "cube", "pubeval", 1)]


def env_digests() -> dict:
    """Seeded episodes of the Gymnasium environment with the learner's actions uniform over
    its mask: observations, rewards, ends, masks, afterstates and plays of every step."""
    from nardy_ai.env import NardyEnv
    out = {}
    for variant, stakes, opponent, seat in ENV_CASES:
        env = NardyEnv(variant, opponent=opponent, seat=seat, stakes=stakes, encoder="expert"
                       if variant == "backgammon" else None)
        rng = np.random.default_rng(99)
        parts = []
        for seed in range(3):
            obs, info = env.reset(seed=seed)
            while True:
                legal = np.flatnonzero(info["action_mask"])
                parts += [obs["board"], obs["dice"], obs.get("features", np.zeros(0)), info["action_mask"],
                          info["afterstates"], plays_bytes(info["plays"])]
                obs, reward, term, trunc, info = env.step(int(rng.choice(legal)))
                parts.append(np.array([reward, term, trunc, info["ply"], info.get("stake", 0)], float))
                if term or trunc:
                    parts += [obs["board"], np.array([info["winner"], info["level"], info["points"]])]
                    break
        out[f"env/{variant}/{stakes}/{opponent}/{seat}"] = digest(*parts)
    return out


def aec_digests() -> dict:
    """Seeded PettingZoo games with both seats' actions uniform over their masks."""
    from nardy_ai.aec import env as aec_env
    out = {}
    for variant in ("backgammon", "short_caucasian", "long"):
        rng = np.random.default_rng(7)
        parts = []
        for seed in range(2):
            e = aec_env(variant)
            e.reset(seed=seed)
            for seat in e.agent_iter():
                obs, reward, term, trunc, info = e.last()
                parts += [obs["observation"]["board"], obs["observation"]["dice"], obs["action_mask"],
                          np.array([reward, term, trunc], float)]
                if term or trunc:
                    e.step(None)
                    continue
                parts += [info["afterstates"], plays_bytes(info["plays"])]
                e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        out[f"aec/{variant}"] = digest(*parts)
    return out


def all_digests() -> dict:
    return {**replay_digest(), **rollout_digests(), **cube_rollout_digests(), **env_digests(), **aec_digests()}


if __name__ == "__main__":
    write_pinned("pinned_drivers.json", all_digests())
