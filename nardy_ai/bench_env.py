"""``nardy bench env``: how fast the environments step, single and batched, beside OpenSpiel's
backgammon when ``open_spiel`` is installed.

Every measurement plays random legal actions for the learner against the opponent agent
(default ``random``) in this process (one torch thread for a neural opponent), for its share
of the time, and counts the learner's
steps (decisions) and the games finished, per wall second and per CPU second.  The vector
environment (:mod:`nardy_ai.vector_env`) runs with its defaults (action masks built every
step).  OpenSpiel's game is stepped by a plain Python loop over its C++ state
(``new_initial_state``, chance outcomes, ``legal_actions``, ``apply_action``), both seats
random; its steps are its decisions (both seats)."""

from __future__ import annotations

import time

import numpy as np

from .machine import machine_description
from .variants import get_variant

#: Games in lockstep timed for the vector environment by default.
SIZES = (1, 64, 1024)


def _clock(fn, seconds: float) -> dict:
    """Call ``fn()`` (returning ``(steps, games)``) until ``seconds`` of wall time have passed;
    rates per wall and per CPU second."""
    steps = games = 0
    t0, c0 = time.perf_counter(), time.process_time()
    while True:
        s, g = fn()
        steps, games = steps + s, games + g
        wall = time.perf_counter() - t0
        if wall >= seconds:
            break
    cpu = max(time.process_time() - c0, 1e-9)
    return {"steps": steps, "games": games, "seconds": wall, "steps_per_s": steps / wall,
            "games_per_s": games / wall, "steps_per_cpu_s": steps / cpu, "games_per_cpu_s": games / cpu}


def _time_random(step, info: dict, legal, n: int, seconds: float, seed: int) -> dict:
    """Random legal actions for ``n`` games: ``step(actions) -> (info, games ended)``,
    ``legal(info)`` the ``(n,)`` counts of legal actions; steps counted where there were any."""
    rng = np.random.default_rng(seed)
    state = {"info": info}

    def burst():
        steps = games = 0
        for _ in range(max(1, 256 // n)):
            counts = legal(state["info"])
            state["info"], ended = step((rng.random(n) * np.maximum(counts, 1)).astype(np.int64))
            steps += int((counts > 0).sum())
            games += ended
        return steps, games
    return _clock(burst, seconds)


def time_single(variant, opponent: str, seconds: float, seed: int = 0) -> dict:
    """The Gymnasium environment (:class:`nardy_ai.env.NardyEnv`), one game."""
    from .env import NardyEnv
    env = NardyEnv(variant, opponent=opponent, seat=0)

    def step(actions):
        _, _, term, trunc, info = env.step(int(actions[0]))
        return (env.reset()[1], 1) if term or trunc else (info, 0)
    return _time_random(step, env.reset(seed=seed)[1], lambda info: np.array([info["action_mask"].sum()]),
                        1, seconds, seed)


def time_vector(variant, n: int, opponent: str, seconds: float, seed: int = 0) -> dict:
    """The vector environment (:class:`nardy_ai.vector_env.NardyVectorEnv`), ``n`` games."""
    from .vector_env import NardyVectorEnv
    envs = NardyVectorEnv(n, variant, opponent=opponent)

    def step(actions):
        _, _, term, trunc, info = envs.step(actions)
        return info, int(term.sum() + trunc.sum())
    return _time_random(step, envs.reset(seed=seed)[1], lambda info: info["n_legal"], n, seconds, seed)


def open_spiel_available() -> bool:
    """Whether OpenSpiel's Python package (``pyspiel``) can be imported."""
    from importlib.util import find_spec
    return find_spec("pyspiel") is not None


def time_open_spiel(seconds: float, seed: int = 0) -> dict:
    """OpenSpiel's backgammon, random play for both seats (Python's own generator: the
    cheapest draws, so the loop times OpenSpiel rather than NumPy)."""
    import random

    import pyspiel
    game = pyspiel.load_game("backgammon")
    rand = random.Random(seed)

    def one_game():
        state = game.new_initial_state()
        steps = 0
        while not state.is_terminal():
            if state.is_chance_node():
                x = rand.random()
                for action, p in state.chance_outcomes():
                    x -= p
                    if x < 0:
                        break
                state.apply_action(action)
            else:
                legal = state.legal_actions()
                state.apply_action(legal[rand.randrange(len(legal))])
                steps += 1
        return steps, 1
    return _clock(one_game, seconds)


def bench_env(variants=("backgammon", "long"), sizes=SIZES, opponent: str = "random",
              seconds: float = 30.0, seed: int = 0) -> dict:
    """Steps/s and games/s of the single environment and the vector environment at each size
    per variant, and OpenSpiel's backgammon when installed; ``seconds`` shared by all the
    measurements.  Ratios: each row's games/s over OpenSpiel's (None without it)."""
    from importlib.util import find_spec
    if find_spec("torch") is not None:                # a neural opponent: one thread, as the rest
        import torch
        torch.set_num_threads(1)
    vs = [get_variant(v) for v in variants]
    spiel = open_spiel_available()
    share = seconds / max(1, len(vs) * (1 + len(sizes)) + spiel)
    rows = []
    for v in vs:
        rows.append({"variant": v.id, "env": "single", "games_in_lockstep": 1,
                     **time_single(v.id, opponent, share, seed)})
        for n in sizes:
            rows.append({"variant": v.id, "env": "vector", "games_in_lockstep": int(n),
                         **time_vector(v.id, int(n), opponent, share, seed)})
    ref = None
    if spiel:
        ref = {"variant": "backgammon", "env": "open_spiel", "games_in_lockstep": 1, **time_open_spiel(share, seed)}
        rows.append(ref)
    for r in rows:
        r["vs_open_spiel"] = None if ref is None else r["games_per_s"] / max(ref["games_per_s"], 1e-9)
    return {"machine": machine_description(), "opponent": opponent, "seconds_each": share,
            "open_spiel": spiel, "rows": rows}


def format_env(r: dict) -> str:
    """The table ``nardy bench env`` prints."""
    lines = [f"machine: {r['machine']}",
             f"random legal actions for the learner, opponent {r['opponent']}; "
             f"{r['seconds_each']:.1f} s per row, one process"
             + ("" if r["open_spiel"] else "; OpenSpiel not installed (pip install open_spiel)"),
             f"{'variant':<16}{'environment':<14}{'games':>7}{'steps/s':>11}{'games/s':>10}"
             f"{'steps/CPU s':>13}{'games/CPU s':>13}{'x OpenSpiel':>13}"]
    for a in r["rows"]:
        ratio = "" if a["vs_open_spiel"] is None else f"{a['vs_open_spiel']:.2f}"
        lines.append(f"{a['variant']:<16}{a['env']:<14}{a['games_in_lockstep']:>7,}{a['steps_per_s']:>11,.0f}"
                     f"{a['games_per_s']:>10,.1f}{a['steps_per_cpu_s']:>13,.0f}{a['games_per_cpu_s']:>13,.1f}"
                     f"{ratio:>13}")
    return "\n".join(lines)
