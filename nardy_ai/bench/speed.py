"""Speed benchmarks: ``nardy bench movegen``, ``train``, ``agents``, ``bearoff``, ``rollout``
and ``features``.  Figures with units and the machine they were measured on (never asserted in
tests).

``nardy bench movegen`` measures the move generator on positions from random play, at several
batch sizes, on one core: distinct afterstates per second and positions per second (CPU time of
this process, best of several repetitions), and the peak memory that one call allocates.
"""

from __future__ import annotations

import time
import tracemalloc

import numpy as np

from ..board import OFF, start_board
from ..machine import machine_description
from ..movegen import generate
from ..variants import get_variant
from .positions import random_afterstates, random_positions


def best_of(fn, repeats: int) -> float:
    """The least CPU time (s) of ``repeats`` calls of ``fn``, after one warm-up call."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return max(best, 1e-9)



def bench_movegen(variant, batch_sizes=(64, 1024, 8192), repeats: int = 5, seed: int = 0,
                  min_positions: int = 8192) -> list[dict]:
    """Measure :func:`generate` at each batch size.  Returns one dict of figures per size:
    ``afterstates_per_s``, ``positions_per_s``, ``afterstates_per_position`` and
    ``peak_mib`` (memory NumPy allocated during one call, MiB)."""
    v = get_variant(variant)
    pool = random_positions(v, seed=seed)
    rng = np.random.default_rng(seed + 1)
    out = []
    for size in batch_sizes:
        idx = rng.choice(len(pool), size)
        boards, dice = pool[idx], rng.integers(1, 7, (size, 2))
        calls = max(1, min_positions // size)
        generate(boards, dice, v)
        best = float("inf")
        for _ in range(repeats):
            t0 = time.process_time()
            for _ in range(calls):
                res = generate(boards, dice, v)
            best = min(best, (time.process_time() - t0) / calls)
        tracemalloc.start()
        generate(boards, dice, v)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out.append({
            "variant": v.id, "batch": size, "afterstates": len(res),
            "afterstates_per_s": len(res) / best, "positions_per_s": size / best,
            "afterstates_per_position": len(res) / size, "peak_mib": peak / 2**20,
        })
    return out


def format_movegen(rows: list[dict]) -> str:
    """The table ``nardy bench movegen`` prints."""
    lines = [f"machine: {machine_description()}",
             "move generation, one core, positions from random play (CPU time, best of repeats)",
             f"{'variant':<16}{'batch':>7}{'afterstates/s':>16}{'positions/s':>14}"
             f"{'afterst./pos':>14}{'peak MiB':>10}"]
    for r in rows:
        lines.append(f"{r['variant']:<16}{r['batch']:>7}{r['afterstates_per_s']:>16,.0f}"
                     f"{r['positions_per_s']:>14,.0f}{r['afterstates_per_position']:>14.1f}"
                     f"{r['peak_mib']:>10.1f}")
    return "\n".join(lines)


def bench_train(variant, seconds: float = 30.0, hidden=(80,), parallel_games: int = 512,
                threads: int = 1) -> dict:
    """Self-play training throughput: games/s and positions/s of ``nardy train``'s loop with
    the default TD settings and an MLP of ``hidden`` units, for about ``seconds`` of wall time,
    plus peak memory and the share of time per stage (move generation, encoding, forward,
    backward)."""
    import resource
    import shutil
    import tempfile

    from training.config import config_from_dict
    from training.td import Trainer

    v = get_variant(variant)
    cfg = config_from_dict({"variant": v.id, "seed": 0, "model": {"hidden": list(hidden)},
                            "selfplay": {"parallel_games": parallel_games, "total_games": 10**9},
                            "run": {"eval_every": 0, "checkpoint_every": 10**9, "threads": threads}})
    tmp = tempfile.mkdtemp(prefix="nardy-bench-")
    try:
        trainer = Trainer(cfg, tmp, log=False)
        trainer.run(progress=False, seconds=min(5.0, seconds / 5))      # warm-up
        trainer.timers.seconds.clear()
        g0, p0, t0 = trainer.games, trainer.positions, time.perf_counter()
        trainer.run(progress=False, seconds=seconds)
        wall = time.perf_counter() - t0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    timers = dict(trainer.timers.seconds)
    total = sum(timers.values())
    return {"variant": v.id, "hidden": list(hidden), "parallel_games": parallel_games,
            "torch_threads": __import__("torch").get_num_threads(),
            "games_per_s": (trainer.games - g0) / wall,
            "positions_per_s": (trainer.positions - p0) / wall,
            "seconds": wall, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "profile": {k: t / total for k, t in sorted(timers.items(), key=lambda kv: -kv[1])}}


def format_train(rows: list[dict]) -> str:
    """The lines ``nardy bench train`` prints."""
    lines = [f"machine: {machine_description()}"]
    for r in rows:
        lines.append(f"{r['variant']}: self-play TD training, MLP {r['hidden']}, "
                     f"{r['parallel_games']} games in lockstep, {r['torch_threads']} torch threads: "
                     f"{r['games_per_s']:.1f} games/s, {r['positions_per_s']:,.0f} positions/s "
                     f"over {r['seconds']:.0f} s; peak RSS {r['peak_rss_mib']:.0f} MiB")
        lines.append("  time: " + ", ".join(f"{k} {100 * f:.0f}%" for k, f in r["profile"].items()))
    return "\n".join(lines)


def bench_agents(variant="backgammon", checkpoint: str | None = None, hidden=(80,),
                 games: int = 512, threads: int = 1, repeats: int = 3, seed: int = 0) -> dict:
    """Speed of the neural agents, ``threads`` torch threads: 0-ply evaluations/s (afterstates
    through the net), decisions/s at 0, 1 and 2 plies (positions decided per second, batched,
    positions from the net's own 0-ply games with fresh dice), and games/s of neural 0-ply
    against itself with ``games`` games in lockstep; also gnubg 0-ply against itself when
    gnubg is installed.  Rates are per CPU second of this process (best of ``repeats``; on
    one thread: per core), games also per wall second.  The net is ``checkpoint``'s, else an
    untrained MLP of ``hidden`` units."""
    import torch

    from ..agents.neural import NeuralAgent
    from ..errors import UnknownAgent
    from ..evaluator import load_evaluator
    from ..game import play_games, replay
    from ..model import NeuralEvaluator

    torch.set_num_threads(threads)
    v = get_variant(variant)
    if checkpoint:
        ev, net = load_evaluator(checkpoint, v, device="cpu"), checkpoint
    else:
        ev = NeuralEvaluator.create(v, hidden=hidden, seed=seed, device="cpu")
        net = f"untrained MLP {list(hidden)}"
    players = (NeuralAgent(ev, name="a"), NeuralAgent(ev, name="b"))

    def match(agents, n: int, record: bool = False):
        t0, c0 = time.perf_counter(), time.process_time()
        recs = play_games(v, agents, n, seed=seed, record=record)
        return n / max(time.process_time() - c0, 1e-9), n / (time.perf_counter() - t0), recs

    games_cpu, games_wall, _ = match(players, games)
    pool = np.concatenate([h[:-1] for h in replay(match(players, 64, record=True)[2])])
    rng = np.random.default_rng(seed + 1)

    def best_cpu_seconds(fn) -> float:
        return best_of(fn, repeats)

    def sample(n: int):
        idx = rng.choice(len(pool), n, replace=False)
        return generate(pool[idx], rng.integers(1, 7, (n, 2)), v)

    after = sample(1024)
    evals = len(after) / best_cpu_seconds(lambda: ev.probabilities(after.boards))
    decisions = {}
    for plies, batch in ((0, 1024), (1, 128), (2, 32)):
        agent, after = NeuralAgent(ev, plies=plies), sample(batch)
        decisions[plies] = batch / best_cpu_seconds(lambda: agent.choose(after, v, rng))
    gnubg = None
    try:
        from ..agents.gnubg_agent import GnubgAgent
        pair = (GnubgAgent(0), GnubgAgent(0))
        pair[1].name = "gnubg:0ply (b)"
        gnubg = match(pair, min(games, 200))[0]
    except UnknownAgent:
        pass
    return {"variant": v.id, "net": net, "torch_threads": torch.get_num_threads(),
            "evaluations_per_s": evals,
            "decisions_per_s": {f"{p}ply": d for p, d in decisions.items()},
            "games": games, "games_per_s": games_cpu, "games_per_s_wall": games_wall,
            "gnubg_games_per_s": gnubg}


def format_agents(r: dict) -> str:
    """The lines ``nardy bench agents`` prints."""
    d = r["decisions_per_s"]
    lines = [f"machine: {machine_description()}",
             f"{r['variant']}: neural agents on {r['net']}, {r['torch_threads']} torch thread(s); "
             f"rates per CPU second (best of repeats)",
             f"  0-ply evaluations:   {r['evaluations_per_s']:>12,.0f} afterstates/s",
             f"  decisions, 0-ply:    {d['0ply']:>12,.1f} positions/s (batch 1024)",
             f"  decisions, 1-ply:    {d['1ply']:>12,.1f} positions/s (batch 128)",
             f"  decisions, 2-ply:    {d['2ply']:>12,.1f} positions/s (batch 32)",
             f"  neural 0-ply vs neural 0-ply: {r['games_per_s']:,.1f} games/s "
             f"({r['games_per_s_wall']:,.1f} games/s wall), {r['games']} games in lockstep"]
    if r["gnubg_games_per_s"] is not None:
        lines.append(f"  gnubg 0-ply vs gnubg 0-ply (through this platform's adapter): "
                     f"{r['gnubg_games_per_s']:,.1f} games/s")
    else:
        lines.append("  gnubg 0-ply vs gnubg 0-ply: gnubg not installed (pip install 'nardy-ai[gnubg]')")
    return "\n".join(lines)



def bench_bearoff(variants=("backgammon", "long"), batch: int = 8192, repeats: int = 5,
                  seed: int = 0) -> dict:
    """The one-sided bear-off database (:mod:`nardy_ai.bearoff`): build time (CPU and wall s),
    file size (MiB, compressed), one-sided lookups/s (:func:`~nardy_ai.bearoff.expected_rolls`)
    and two-sided :func:`~nardy_ai.bearoff.bearoff_outcomes` afterstates/s per variant, on
    ``batch`` random bear-off afterstates (CPU time of one process, best of ``repeats``)."""
    import tempfile

    from .. import bearoff
    from ..board import BOARD_SIZE, OPP_OFF, mirror_index

    c0 = time.process_time()
    db = bearoff.build_database()
    build_cpu = time.process_time() - c0
    with tempfile.TemporaryDirectory(prefix="nardy-bench-") as tmp:
        size = bearoff.save_database(db, tmp).stat().st_size
    rng = np.random.default_rng(seed)
    pts = bearoff.index_positions()
    sides = pts[rng.integers(1, len(pts), (batch, 2))].astype(np.int64)   # never all off

    def best_cpu_seconds(fn) -> float:
        return best_of(fn, repeats)

    row = {"machine": machine_description(), "positions": len(db.off), "K": db.K,
           "build_seconds": db.build_seconds, "build_cpu_seconds": build_cpu,
           "file_mib": size / 2**20, "batch": batch,
           "lookups_per_s": batch / best_cpu_seconds(lambda: bearoff.expected_rolls(sides[:, 0], db)),
           "outcomes_per_s": {}}
    for name in variants:
        v = get_variant(name)
        boards = np.zeros((batch, BOARD_SIZE), np.int8)
        boards[:, :6] = sides[:, 0]
        boards[:, mirror_index(v)[:6]] = -sides[:, 1]
        boards[:, OFF] = 15 - sides[:, 0].sum(1)
        boards[:, OPP_OFF] = 15 - sides[:, 1].sum(1)
        row["outcomes_per_s"][v.id] = batch / best_cpu_seconds(
            lambda: bearoff.bearoff_outcomes(boards, v, db))
    return row


def format_bearoff(r: dict) -> str:
    """The lines ``nardy bench bearoff`` prints."""
    lines = [f"machine: {r['machine']}",
             f"one-sided bear-off database: {r['positions']:,} positions, K = {r['K']} rolls; "
             f"built in {r['build_cpu_seconds']:.1f} s CPU ({r['build_seconds']:.1f} s wall), "
             f"file {r['file_mib']:.1f} MiB (compressed float64)",
             f"one core, {r['batch']:,} random bear-off afterstates (CPU time, best of repeats):",
             f"  {'one-sided lookups (expected rolls):':<44}{r['lookups_per_s']:>14,.0f} positions/s"]
    for name, rate in r["outcomes_per_s"].items():
        lines.append(f"  {'two-sided outcomes, ' + name + ':':<44}{rate:>14,.0f} afterstates/s")
    return "\n".join(lines)



# --- nardy bench rollout ---------------------------------------------------------------------

def rollout_agents(variant) -> list[str]:
    """The agents ``nardy bench rollout`` times by default: the variant's champion at 0 ply
    (``best``), pubeval (short nardy), heuristic."""
    v = get_variant(variant)
    return ["best"] + ([] if v.is_long else ["pubeval"]) + ["heuristic"]


def bench_rollout(variant="backgammon", agents: list[str] | None = None, seconds: float = 30.0,
                  games: int = 1296, truncate: int = 10, threads: int = 1) -> dict:
    """Rollout speed: games/s of :func:`nardy_ai.rollout.rollout` of the start position (the
    player on roll rolls first) in this process, ``threads`` torch threads, per agent played
    to the end and, for agents with an evaluator, truncated after ``truncate`` plies.  Each
    measurement repeats rollouts of ``games`` games (seeds 0, 1, ...) for its share of
    ``seconds`` (at least one rollout); rates per wall second and per CPU second."""
    import torch

    from ..agents import make_agent
    from ..rollout import rollout

    torch.set_num_threads(threads)
    v = get_variant(variant)
    agents = agents or rollout_agents(v)
    runs = []
    for spec in agents:
        agent = make_agent(spec, v)
        runs.append((spec, None))
        if getattr(agent, "evaluator", None) is not None:
            runs.append((spec, truncate))
    share = seconds / max(len(runs), 1)
    start = start_board(v)
    rows = []
    for spec, trunc in runs:
        rollout(start, v, spec, games=36, truncate=trunc)             # warm-up: agent, torch
        n, plies, wall, cpu, seed = 0, 0.0, 0.0, 0.0, 0
        while seed == 0 or wall < share:
            t0, c0 = time.perf_counter(), time.process_time()
            res = rollout(start, v, spec, games=games, truncate=trunc, seed=seed)
            wall += time.perf_counter() - t0
            cpu += time.process_time() - c0
            n += games
            plies += float(res.plies[0]) * games
            seed += 1
        rows.append({"agent": spec, "truncate": trunc, "games": n, "seconds": wall,
                     "games_per_s": n / wall, "games_per_cpu_s": n / max(cpu, 1e-9),
                     "plies_per_game": plies / n})
    return {"machine": machine_description(), "variant": v.id, "torch_threads": torch.get_num_threads(),
            "position": "start, player on roll rolls first", "games_per_rollout": games, "rows": rows}


def format_rollout(r: dict) -> str:
    """The table ``nardy bench rollout`` prints."""
    from ..tournament import display_name
    lines = [f"machine: {r['machine']}",
             f"{r['variant']}: rollouts of the start position, {r['games_per_rollout']} games each, one process, "
             f"{r['torch_threads']} torch thread(s)",
             f"{'agent':<30}{'played':<20}{'games':>8}{'games/s':>10}{'games/CPU s':>13}{'plies/game':>12}"]
    for a in r["rows"]:
        how = "to the end" if a["truncate"] is None else f"truncated at {a['truncate']}"
        lines.append(f"{display_name(a['agent']):<30}{how:<20}{a['games']:>8,}{a['games_per_s']:>10,.0f}"
                     f"{a['games_per_cpu_s']:>13,.0f}{a['plies_per_game']:>12.1f}")
    return "\n".join(lines)



# --- nardy bench features --------------------------------------------------------------------

def bench_features(variant="backgammon", batch: int = 16384, repeats: int = 5, seed: int = 0) -> dict:
    """Every registered encoder of the variant's family (:data:`nardy_ai.encoding.ENCODERS`) on
    ``batch`` afterstates from random play, on one core: inputs, afterstates encoded per second
    (CPU time of this process, best of ``repeats``, the encoders taking turns) and each one's
    time over the family's default encoder's, measured in the same run."""
    from ..encoding import DEFAULT_ENCODER, ENCODERS

    v = get_variant(variant)
    boards = random_afterstates(v, batch, seed)
    encoders = [e for e in ENCODERS.values() if e.family == v.family]
    best = {e.name: float("inf") for e in encoders}
    for e in encoders:
        e(boards)                                                      # warm-up
    for _ in range(repeats):
        for e in encoders:
            t0 = time.process_time()
            e(boards)
            best[e.name] = min(best[e.name], max(time.process_time() - t0, 1e-9))
    default = DEFAULT_ENCODER[v.family]
    rows = [{"encoder": e.name, "version": e.version, "inputs": e.n_features,
             "afterstates_per_s": batch / best[e.name], "ms_per_batch": 1e3 * best[e.name],
             "cost_vs_default": best[e.name] / best[default]} for e in encoders]
    return {"machine": machine_description(), "variant": v.id, "family": v.family, "batch": batch,
            "repeats": repeats, "default": default, "rows": rows}


def format_features(r: dict) -> str:
    """The table ``nardy bench features`` prints."""
    lines = [f"machine: {r['machine']}",
             f"{r['family']} nardy encoders ({r['variant']}): {r['batch']:,} afterstates from random play, "
             f"one core (CPU time, best of {r['repeats']}, encoders taking turns)",
             f"{'encoder':<14}{'version':>8}{'inputs':>8}{'afterstates/s':>16}{'ms/batch':>10}"
             f"{'cost vs ' + r['default']:>20}"]
    for e in r["rows"]:
        lines.append(f"{e['encoder']:<14}{e['version']:>8}{e['inputs']:>8}{e['afterstates_per_s']:>16,.0f}"
                     f"{e['ms_per_batch']:>10.2f}{e['cost_vs_default']:>20.2f}")
    return "\n".join(lines)
