"""``nardy bench env``: how fast the environments step, single and batched, beside OpenSpiel's
backgammon when ``open_spiel`` is installed.

Every measurement plays random legal actions for the learner against the opponent agent
(default ``random``) in this process (one torch thread for a neural opponent), for its share
of the time, and counts the learner's steps (decisions), per wall second and per CPU second;
games/s are steps/s over the learner's mean steps per game in the single rows' games (played
one after another), since a vector row's games all start at once and its own count of finished
games falls short while the row lasts less than a few games' length.  The vector
environment (:mod:`nardy_ai.vector_env`) runs with its defaults (action masks built every
step).  The baseline row ``single-before`` is the single environment stepped as it was before
its speed work, in the same run: move generation by the array path for its one position
(:data:`nardy_ai.movegen.ONE_POSITION_PATH` off) and the notation of every legal play built at
every step (``info["plays"]`` read in full).  OpenSpiel's game is stepped by a plain Python
loop over its C++ state (``new_initial_state``, chance outcomes, ``legal_actions``,
``apply_action``), both seats random; its steps are its decisions (both seats); it is timed in
two halves, first and last, so that a change in the machine's load during the run falls on
both sides of the ratios."""

from __future__ import annotations

import time

import numpy as np

from ..machine import machine_description
from ..variants import get_variant

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
    return _rates(steps, games, wall, time.process_time() - c0)


def _rates(steps: int, games: int, wall: float, cpu: float) -> dict:
    """Counts and their rates per wall second and per CPU second."""
    wall, cpu = max(wall, 1e-9), max(cpu, 1e-9)
    return {"steps": steps, "games": games, "seconds": wall, "cpu_seconds": cpu, "steps_per_s": steps / wall,
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


def time_single(variant, opponent: str, seconds: float, seed: int = 0, before: bool = False) -> dict:
    """The Gymnasium environment (:class:`nardy_ai.env.NardyEnv`), one game; ``before``: as it
    stepped before its speed work (the array path of move generation for one position, every
    legal play's notation built at every step)."""
    from .. import movegen
    from ..env import NardyEnv
    env = NardyEnv(variant, opponent=opponent, seat=0)

    def step(actions):
        _, _, term, trunc, info = env.step(int(actions[0]))
        return (env.reset()[1], 1) if term or trunc else (info, 0)

    def legal(info):
        if before:                   # the notation of every legal play, as info["plays"] was
            list(info["plays"])
        return np.array([info["action_mask"].sum()])
    kept = movegen.ONE_POSITION_PATH
    movegen.ONE_POSITION_PATH = not before
    try:
        return _time_random(step, env.reset(seed=seed)[1], legal, 1, seconds, seed)
    finally:
        movegen.ONE_POSITION_PATH = kept


def time_vector(variant, n: int, opponent: str, seconds: float, seed: int = 0) -> dict:
    """The vector environment (:class:`nardy_ai.vector_env.NardyVectorEnv`), ``n`` games."""
    from ..vector_env import NardyVectorEnv
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
    """Steps/s and games/s per variant of the single environment as it was before its speed
    work (``single-before``), of the single environment and of the vector environment at each
    size, and OpenSpiel's backgammon when installed (timed in two halves, first and last);
    ``seconds`` shared by all the measurements.  Ratios: ``vs_before``, a row's steps/s over
    its variant's ``single-before`` row; ``vs_open_spiel``, its games/s over OpenSpiel's (None
    without it)."""
    from importlib.util import find_spec
    if find_spec("torch") is not None:                # a neural opponent: one thread, as the rest
        import torch
        torch.set_num_threads(1)
    vs = [get_variant(v) for v in variants]
    spiel = open_spiel_available()
    share = seconds / max(1, len(vs) * (2 + len(sizes)) + spiel)
    halves = [time_open_spiel(share / 2, seed)] if spiel else []
    rows = []
    for v in vs:
        before = {"variant": v.id, "env": "single-before", "games_in_lockstep": 1,
                  **time_single(v.id, opponent, share, seed, before=True)}
        rows.append(before)
        rows.append({"variant": v.id, "env": "single", "games_in_lockstep": 1,
                     **time_single(v.id, opponent, share, seed)})
        for n in sizes:
            rows.append({"variant": v.id, "env": "vector", "games_in_lockstep": int(n),
                         **time_vector(v.id, int(n), opponent, share, seed)})
        # Games/s: steps/s over the learner's mean steps per game, from the single rows' games
        # (played one after another); a vector row's own count of finished games would fall
        # short while its row lasts less than a few games' length (all its games start at once).
        single = [r for r in rows if r["variant"] == v.id and r["games_in_lockstep"] == 1 and r["env"] != "vector"]
        per_game = sum(r["steps"] for r in single) / max(1, sum(r["games"] for r in single))
        for r in rows:
            if r["variant"] == v.id:
                r["vs_before"] = r["steps_per_s"] / max(before["steps_per_s"], 1e-9)
                r["steps_per_game"] = per_game
                r["games_per_s"] = r["steps_per_s"] / per_game
                r["games_per_cpu_s"] = r["steps_per_cpu_s"] / per_game
    ref = None
    if spiel:
        halves.append(time_open_spiel(share / 2, seed + 1))
        ref = {"variant": "backgammon", "env": "open_spiel", "games_in_lockstep": 1, "vs_before": None,
               **_rates(*(sum(h[k] for h in halves) for k in ("steps", "games", "seconds", "cpu_seconds")))}
        rows.append(ref)
    for r in rows:
        r["vs_open_spiel"] = None if ref is None else r["games_per_s"] / max(ref["games_per_s"], 1e-9)
    return {"machine": machine_description(), "opponent": opponent, "seconds_each": share,
            "open_spiel": spiel, "rows": rows,
            "steps_per_game": {v.id: next(r["steps_per_game"] for r in rows if r["variant"] == v.id) for v in vs}}


def format_env(r: dict) -> str:
    """The table ``nardy bench env`` prints, with what its baseline and ratios are."""
    lines = [f"machine: {r['machine']}",
             f"random legal actions for the learner, opponent {r['opponent']}; "
             f"{r['seconds_each']:.1f} s per row, one process"
             + ("" if r["open_spiel"] else "; OpenSpiel not installed (pip install open_spiel)"),
             "baseline single-before: the single environment stepped as before its speed work, in this run "
             "(array-path move",
             "generation for its one position, every legal play's notation built at each step); "
             "x before: steps/s over it, per variant",
             "games/s: steps/s over the learner's mean steps per game in the single rows' games ("
             + ", ".join(f"{k} {x:.1f}" for k, x in r["steps_per_game"].items())
             + "); OpenSpiel's: its games counted",
             f"{'variant':<16}{'environment':<15}{'games':>7}{'steps/s':>11}{'games/s':>10}"
             f"{'steps/CPU s':>13}{'games/CPU s':>13}{'x before':>10}{'x OpenSpiel':>13}"]
    for a in r["rows"]:
        ratio = "" if a["vs_open_spiel"] is None else f"{a['vs_open_spiel']:.2f}"
        before = "" if a.get("vs_before") is None else f"{a['vs_before']:.2f}"
        lines.append(f"{a['variant']:<16}{a['env']:<15}{a['games_in_lockstep']:>7,}{a['steps_per_s']:>11,.0f}"
                     f"{a['games_per_s']:>10,.1f}{a['steps_per_cpu_s']:>13,.0f}{a['games_per_cpu_s']:>13,.1f}"
                     f"{before:>10}{ratio:>13}")
    return "\n".join(lines)
