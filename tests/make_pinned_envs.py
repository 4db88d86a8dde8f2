"""Digests of what the environments give for fixed seeds and seeded random legal actions: the
batched vector environment (:mod:`nardy_ai.vector_env`, several games in lockstep with
autoresets) and the single environment with the learner's seat drawn at each reset
(:mod:`nardy_ai.env`).  Written to ``tests/data/pinned_envs.json`` by the environments as they
were before their speed work; ``tests/test_vector_env.py`` checks that they still give the same
observations, masks, afterstates, rewards and results.  (The single environment with fixed
seats and the PettingZoo form are pinned in ``tests/data/pinned_drivers.json``.)  Run from the
repository root: ``python tests/make_pinned_envs.py``."""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_pinned_drivers import plays_bytes, write_pinned  # noqa: E402
from make_pinned_games import digest  # noqa: E402

#: (variant, stakes, opponent, games in lockstep, steps) of the vector environment's cases.
VECTOR_CASES = [("backgammon", None, "random", 16, 90), ("long", None, "random", 16, 110),
                ("backgammon", None, "heuristic", 5, 60), ("backgammon", "cube", "heuristic", 6, 60),
                ("long_dave", "dave", "heuristic", 4, 60)]

#: (variant, opponent) of the single environment's cases, the seat drawn at each reset.
SINGLE_CASES = [("backgammon", "random"), ("long", "random"), ("short_caucasian", "heuristic")]


def vector_digests() -> dict:
    """Seeded steps of the vector environment with uniform random legal actions (the seat of
    each game drawn at each autoreset): every observation, reward, end flag and info array."""
    from nardy_ai.vector_env import NardyVectorEnv
    out = {}
    for variant, stakes, opponent, n, steps in VECTOR_CASES:
        envs = NardyVectorEnv(n, variant, opponent=opponent, stakes=stakes)
        obs, info = envs.reset(seed=11)
        rng = np.random.default_rng(12)
        parts = []
        for _ in range(steps):
            parts += [obs["board"], obs["dice"], info["seat"], info["ply"], info["n_legal"], info["afterstates"],
                      info["afterstate_offsets"], info["action_mask"], info.get("stake", np.zeros(0))]
            parts += [plays_bytes(envs.plays(i)) for i in (0, n - 1)]
            actions = (rng.random(n) * np.maximum(info["n_legal"], 1)).astype(np.int64)
            obs, rewards, term, trunc, info = envs.step(actions)
            parts += [rewards, term, trunc] + [info.get(k, np.zeros(0)) for k in ("winner", "level", "points")]
        out[f"vector/{variant}/{stakes}/{opponent}/{n}"] = digest(*parts)
    return out


def single_digests() -> dict:
    """Seeded episodes of the single environment, seat drawn at each reset, uniform random legal
    actions: observations, masks, afterstates, plays, rewards and results."""
    from nardy_ai.env import NardyEnv
    out = {}
    for variant, opponent in SINGLE_CASES:
        env = NardyEnv(variant, opponent=opponent)
        env.reset(seed=21)
        rng = np.random.default_rng(22)
        parts = []
        for _ in range(3):
            obs, info = env.reset()                 # seeds drawn from the environment's generator
            while True:
                parts += [obs["board"], obs["dice"], np.array([info["seat"], info["ply"]]), info["action_mask"],
                          info["afterstates"], plays_bytes(info["plays"])]
                obs, reward, term, trunc, info = env.step(int(rng.integers(info["action_mask"].sum())))
                parts.append(np.array([reward, term, trunc], float))
                if term or trunc:
                    parts += [obs["board"], np.array([info["winner"], info["level"], info["points"]])]
                    break
        out[f"single/{variant}/{opponent}/drawn-seat"] = digest(*parts)
    return out


def all_digests() -> dict:
    return {**vector_digests(), **single_digests()}


if __name__ == "__main__":
    write_pinned("pinned_envs.json", all_digests())
