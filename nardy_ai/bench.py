"""Benchmarks: figures with units and the machine they were measured on (never asserted in tests).

``nardy bench movegen`` measures the move generator on positions from random play, at several
batch sizes, on one core: distinct afterstates per second and positions per second (CPU time of
this process, best of several repetitions), and the peak memory that one call allocates.
"""

from __future__ import annotations

import json
import os
import platform
import time
import tracemalloc
from dataclasses import dataclass

import numpy as np

from .board import OFF, flip, start_board
from .errors import NardyError
from .movegen import generate
from .variants import Variant, get_variant


def machine_description() -> str:
    """One line naming the CPU, core count, Python and NumPy versions."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} logical cores, Python {platform.python_version()}, "
            f"NumPy {np.__version__}")


def random_positions(variant, n_games: int = 256, plies: int = 200, seed: int = 0) -> np.ndarray:
    """Positions (mover on roll) met in random play: ``n_games`` games in lockstep for
    ``plies`` plies each (finished games restart from the start position)."""
    v = get_variant(variant)
    rng = np.random.default_rng(seed)
    start = start_board(v)
    boards = np.repeat(start[None], n_games, axis=0)
    seen = []
    for _ in range(plies):
        seen.append(boards)
        after = generate(boards, rng.integers(1, 7, (n_games, 2)), v)
        pick = after.offsets[:-1] + (rng.random(n_games) * after.counts()).astype(np.int64)
        chosen = after.boards[pick]
        chosen[chosen[:, OFF] == 15] = start
        boards = flip(chosen, v)
    return np.concatenate(seen)


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

    from .agents.neural import NeuralAgent
    from .errors import UnknownAgent
    from .game import play_games, replay
    from .model import NeuralEvaluator, load_evaluator

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
        fn()
        best = float("inf")
        for _ in range(repeats):
            t0 = time.process_time()
            fn()
            best = min(best, time.process_time() - t0)
        return max(best, 1e-9)

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
        from .agents.gnubg_agent import GnubgAgent
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


# --- nardy bench evaluators ------------------------------------------------------------------
#
# A fixed, versioned set of positions with dice per variant (nardy_ai/data/
# evaluator_positions_<variant>_v<N>.jsonl): a header line naming how the positions were drawn
# and the reference that valued them, then one POSITIONS.md position per line with "dice" and
# "afterstates": every legal afterstate as [play notation, reference equity (points per game,
# cubeless, for the side that moved)].  Agents choose a play on every position and each choice
# is judged by the reference: equity lost against the reference's best play.

#: The version of the shipped position sets read by default.
EVALUATOR_SET_VERSION = 1
#: A choice losing more than this (points per game) is a blunder (gnubg's "very bad" mark).
BLUNDER = 0.08


@dataclass
class PositionSet:
    """A loaded position set: ``positions`` ``(N, 28)`` int8 (mover on roll), ``dice``
    ``(N, 2)``, and per position the stored ``plays`` (notation) with their reference
    ``equities`` (points per game)."""

    variant: Variant
    header: dict
    positions: np.ndarray
    dice: np.ndarray
    plays: list[list[str]]
    equities: list[np.ndarray]


def evaluator_positions_path(variant, version: int = EVALUATOR_SET_VERSION) -> str:
    """The shipped position set of a variant (package data)."""
    from importlib.resources import files
    return str(files("nardy_ai") / "data" / f"evaluator_positions_{get_variant(variant).id}_v{version}.jsonl")


def load_evaluator_positions(variant, path: str | None = None) -> PositionSet:
    """Read a position set (default: the shipped one of ``variant``)."""
    from .board import board_from_json
    from .errors import FormatError
    v = get_variant(variant)
    path = path or evaluator_positions_path(v)
    if not os.path.exists(path):
        raise FormatError(f"no evaluator position set for {v.id}: {path} is missing")
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    if not lines or "header" not in lines[0]:
        raise FormatError(f"{path}: the first line must be the set's header")
    header = lines[0]["header"]
    boards, dice, plays, eqs = [], [], [], []
    for obj in lines[1:]:
        _, board, d, _ = board_from_json(obj, v)
        boards.append(board)
        dice.append(d)
        plays.append([p for p, _ in obj["afterstates"]])
        eqs.append(np.array([e for _, e in obj["afterstates"]], float))
    return PositionSet(v, header, np.array(boards, np.int8), np.array(dice, np.int64), plays, eqs)


def strong_play_positions(agent, variant, n: int, seed: int = 0, games: int = 64, every: int = 3,
                          max_plies: int = 240) -> tuple[np.ndarray, np.ndarray]:
    """``n`` positions with dice ``((n, 28), (n, 2))`` from ``agent``'s self-play: ``games``
    games in lockstep (finished games restart), every ``every``-th ply from the second on,
    keeping only positions with at least 2 legal plays; drawn without replacement by ``seed``."""
    v = get_variant(variant)
    rng = np.random.default_rng(seed)
    start = start_board(v)
    boards = np.repeat(start[None], games, axis=0)
    pool_b, pool_d = [], []
    for ply in range(max_plies):
        dice = rng.integers(1, 7, (games, 2))
        after = generate(boards, dice, v)
        if ply % every == 1:
            keep = after.counts() >= 2
            pool_b.append(boards[keep])
            pool_d.append(dice[keep])
        chosen = after.boards[agent.choose(after, v, rng)]
        chosen[chosen[:, OFF] == 15] = start
        boards = flip(chosen, v)
    pool_b, pool_d = np.concatenate(pool_b), np.concatenate(pool_d)
    idx = np.sort(rng.choice(len(pool_b), n, replace=False))
    return pool_b[idx], pool_d[idx]


def afterstate_equities(agent, boards: np.ndarray, variant) -> np.ndarray:
    """The reference equity ``(M,)`` (points per game, for the side that moved) of afterstates
    by an agent that can value them: gnubg at its depth, neural agents at theirs."""
    from .agents.gnubg_agent import GnubgAgent
    from .errors import UnknownAgent
    v = get_variant(variant)
    if isinstance(agent, GnubgAgent):
        return agent.equities(boards, v, agent.plies)
    eq = agent.equity(boards, v)
    if eq is None:
        raise UnknownAgent(f"{agent.name} cannot value afterstates; a reference must "
                           f"(td:PATH[@Nply] or gnubg:Nply)")
    return np.asarray(eq, float)


def build_evaluator_positions(variant, source: str, reference: str, path: str, n: int = 300,
                              seed: int = 0, version: int = EVALUATOR_SET_VERSION,
                              **header_extra) -> None:
    """Write a position set: ``n`` positions from ``source``'s self-play (an agent spec),
    every legal afterstate valued by ``reference`` (an agent spec; gnubg or neural).
    ``header_extra`` (e.g. ``reference_settings``, ``notes``) goes into the header line."""
    import datetime

    from .agents import make_agent
    from .board import board_to_json
    v = get_variant(variant)
    boards, dice = strong_play_positions(make_agent(source, v), v, n, seed)
    after = generate(boards, dice, v, notation=True)
    t0 = time.perf_counter()
    eq = afterstate_equities(make_agent(reference, v), after.boards, v)
    header = {"set": "evaluator_positions", "variant": v.id, "version": version,
              "variant_version": v.version, "positions": n,
              "afterstates": len(after), "source": source, "seed": seed,
              "sampling": "self-play, 64 games in lockstep, every 3rd ply from the 2nd, "
                          "positions with at least 2 legal plays, drawn without replacement",
              "reference": reference, "reference_seconds": round(time.perf_counter() - t0, 1),
              "date": datetime.date.today().isoformat(), **header_extra}
    with open(path, "w") as f:
        f.write(json.dumps({"header": header}) + "\n")
        for i in range(n):
            lo, hi = after.offsets[i], after.offsets[i + 1]
            rows = [[after.plays[r], round(float(eq[r]), 5)] for r in range(lo, hi)]
            f.write(json.dumps(board_to_json(boards[i], v, dice=[int(x) for x in dice[i]],
                                             afterstates=rows)) + "\n")


def reference_rows(pset: PositionSet, after) -> np.ndarray:
    """The stored reference equity of every row of ``after`` (generated with notation from
    the set's positions and dice), ``(M,)``; :class:`FormatError` when they disagree."""
    from .errors import FormatError
    eq = np.empty(len(after))
    for i, (plays, values) in enumerate(zip(pset.plays, pset.equities)):
        lo, hi = after.offsets[i], after.offsets[i + 1]
        stored = dict(zip(plays, values))
        if hi - lo != len(stored):
            raise FormatError(f"position {i}: {hi - lo} legal plays but {len(stored)} stored")
        for r in range(lo, hi):
            if after.plays[r] not in stored:
                raise FormatError(f"position {i}: legal play {after.plays[r]} is not in the set")
            eq[r] = stored[after.plays[r]]
    return eq


def bench_evaluators(variant, agents, reference: str | None = None, seed: int = 0,
                     path: str | None = None) -> dict:
    """Judge ``agents`` (specs or :class:`~nardy_ai.agents.base.Agent` objects) on the
    position set: each chooses on all positions in one batched call.  Per agent: ``loss_mp``
    (mean equity lost per decision, milli-points), ``blunder_rate`` (share of losses >
    :data:`BLUNDER`), ``agreement`` (share choosing the reference's best play) and
    ``decisions_per_s`` (wall time of the call).  ``reference`` (an agent spec) recomputes the
    reference instead of using the stored one."""
    from .agents import make_agent
    from .agents.base import segment_ids
    from .errors import IllegalPlay
    v = get_variant(variant)
    pset = load_evaluator_positions(v, path)
    after = generate(pset.positions, pset.dice, v, notation=True)
    if reference:
        ref_name = reference
        ref = afterstate_equities(make_agent(reference, v), after.boards, v)
    else:
        ref_name = pset.header["reference"]
        ref = reference_rows(pset, after)
    best = np.maximum.reduceat(ref, after.offsets[:-1])
    seg = segment_ids(after.offsets)
    rows = []
    for spec in agents:
        agent = make_agent(spec, v) if isinstance(spec, str) else spec
        rng = np.random.default_rng(seed)            # the same for every agent: order-free
        t0 = time.perf_counter()
        chosen = np.asarray(agent.choose(after, v, rng))
        wall = max(time.perf_counter() - t0, 1e-9)
        if np.any(seg[chosen] != np.arange(len(chosen))):
            raise IllegalPlay(f"{agent.name} chose a row outside its position")
        loss = best - ref[chosen]
        rows.append({"agent": spec if isinstance(spec, str) else agent.name,
                     "loss_mp": 1000 * float(loss.mean()),
                     "blunder_rate": float((loss > BLUNDER).mean()),
                     "agreement": float((loss <= 1e-9).mean()),
                     "decisions_per_s": len(chosen) / wall})
    return {"variant": v.id, "set_version": pset.header["version"], "positions": len(pset.positions),
            "afterstates": len(after), "reference": ref_name, "stored_reference": not reference,
            "machine": machine_description(), "agents": rows}


def format_evaluators(r: dict) -> str:
    """The table ``nardy bench evaluators`` prints."""
    src = "stored" if r["stored_reference"] else "recomputed"
    lines = [f"machine: {r['machine']}",
             f"{r['variant']}: evaluator position set v{r['set_version']}, {r['positions']} positions "
             f"({r['afterstates']} afterstates); reference {r['reference']} ({src})",
             f"{'agent':<44}{'loss (mp/decision)':>20}{'blunders (>0.08)':>18}"
             f"{'agrees':>9}{'decisions/s':>13}"]
    for a in r["agents"]:
        lines.append(f"{a['agent']:<44}{a['loss_mp']:>20.1f}{100 * a['blunder_rate']:>17.1f}%"
                     f"{100 * a['agreement']:>8.1f}%{a['decisions_per_s']:>13,.0f}")
    lines.append("loss: mean equity lost per decision against the reference's best play, "
                 "x1000 (milli-points per game, cubeless)")
    return "\n".join(lines)


def bench_backends(variant="backgammon", agents: list[str] | None = None, games: int = 100,
                   chunk: int = 10, jobs: int | None = None, train_seconds: float = 20.0,
                   hidden=(80,), parallel_games: int = 256) -> dict:
    """Games/s of the same work on each backend on this machine (``jobs`` = its cores by
    default): a tournament (``agents``, default the shipped ones and the baselines, ``games``
    per pairing in chunks of ``chunk`` duplicate pairs) in one process, in ``jobs`` local
    processes and on a local Ray instance of ``jobs`` CPUs; and self-play training (MLP of
    ``hidden``, ``parallel_games`` in lockstep per player) in one process and on Ray with
    ``jobs - 1`` and ``jobs`` self-play actors feeding the learner.

    Tournament rates are over the whole run (worker start-up included, Ray's own start-up
    reported apart); training rates are steady state: games counted after a warm-up of a
    quarter of ``train_seconds``, divided by the wall seconds after it.  The tournament's
    games are checked to be identical on every backend."""
    import shutil
    import tempfile

    from . import tournament as tm
    from .backends import make_backend, require_ray, start_ray

    ray = require_ray()
    v = get_variant(variant)
    jobs = jobs or os.cpu_count() or 1
    agents = agents or tm.default_agents(v)
    config = tm.TournamentConfig(v.id, tuple(agents), tm.even_games(games), 0, False, chunk)
    n_games = config.games * len(config.pairings())
    tmp = tempfile.mkdtemp(prefix="nardy-bench-")
    rows, reference = [], None
    t0 = time.perf_counter()
    owns = start_ray(cpus=jobs)              # else: measure on the instance already running
    ray_start = time.perf_counter() - t0
    try:
        for name, n in (("local", 1), ("local", jobs), ("ray", jobs)):
            out = os.path.join(tmp, f"{name}{n}")
            backend = make_backend(name, n, log=lambda s: None)
            t0 = time.perf_counter()
            tm.run_tournament(config, out, backend=backend, progress=False, log=lambda s: None)
            wall = time.perf_counter() - t0
            with open(os.path.join(out, tm.GAMES_FILE)) as f:
                lines = sorted(f)
            reference = reference or lines
            rows.append({"backend": name, "workers": backend.workers, "runs": backend.describe(),
                         "games": n_games, "seconds": wall, "games_per_s": n_games / wall,
                         "same_games": lines == reference})
        train = [_train_rate(v, tmp, "local", 0, train_seconds, hidden, parallel_games)]
        for actors in sorted({max(1, jobs - 1), jobs}):
            train.append(_train_rate(v, tmp, "ray", actors, train_seconds, hidden, parallel_games))
    finally:
        if owns:
            ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    base_t, base_s = rows[0]["games_per_s"], train[0]["games_per_s"]
    for r in rows:
        r["ratio"] = r["games_per_s"] / base_t
    for r in train:
        r["ratio"] = r["games_per_s"] / base_s
    return {"machine": machine_description(), "variant": v.id, "agents": list(agents),
            "ray_version": ray.__version__, "ray_start_seconds": ray_start,
            "tournament": rows, "train": train}


def _train_rate(v: Variant, tmp: str, backend: str, actors: int, seconds: float, hidden,
                parallel_games: int) -> dict:
    from training.config import config_from_dict
    from training.td import Trainer

    cfg = config_from_dict({"variant": v.id, "seed": 0, "model": {"hidden": list(hidden)},
                            "selfplay": {"parallel_games": parallel_games, "total_games": 10**9},
                            "run": {"eval_every": 0, "checkpoint_every": 10**9},
                            "ray": {"actors": actors}})
    trainer = Trainer(cfg, os.path.join(tmp, f"train-{backend}{actors}"), log=False, backend=backend,
                      print_fn=lambda s: None)
    marks: list[tuple[float, int]] = []
    start = time.perf_counter()

    def mark() -> None:     # measure for `seconds`, and over at least 8 updates on a busy machine
        marks.append((time.perf_counter(), trainer.games))
        if marks[-1][0] - start >= seconds and len(marks) >= 8:
            trainer.request_stop()

    trainer.run(progress=False, seconds=10 * seconds + 120, on_update=mark)
    if len(marks) < 2:
        raise NardyError(f"training on {backend} made fewer than 2 updates in {10 * seconds + 120:.0f} s")
    t_end, g_end = marks[-1]
    warm = marks[0][0] + (t_end - marks[0][0]) / 4
    t_w, g_w = next(m for m in marks if m[0] >= warm)
    if t_w == t_end:
        t_w, g_w = marks[0]
    return {"backend": backend, "actors": actors,
            "runs": "this process" if backend == "local" else f"Ray, {actors} self-play actor(s) + learner",
            "games": g_end - g_w, "seconds": t_end - t_w, "games_per_s": (g_end - g_w) / max(t_end - t_w, 1e-9)}


def format_backends(row: dict) -> str:
    """The lines ``nardy bench backends`` prints."""
    lines = [f"machine: {row['machine']}",
             f"Ray {row['ray_version']} local instance start-up: {row['ray_start_seconds']:.1f} s (not in the rates)",
             f"tournament, {row['variant']}, agents {' '.join(row['agents'])}: "
             f"{row['tournament'][0]['games']} games per run (start-up of workers included)",
             f"  {'backend':<44}{'seconds':>9}{'games/s':>10}{'ratio':>8}  same games"]
    for r in row["tournament"]:
        lines.append(f"  {r['runs']:<44}{r['seconds']:>9.1f}{r['games_per_s']:>10.1f}{r['ratio']:>8.2f}  "
                     f"{'yes' if r['same_games'] else 'NO'}")
    lines.append(f"self-play training, {row['variant']} (steady state, after warm-up)")
    lines.append(f"  {'backend':<44}{'seconds':>9}{'games/s':>10}{'ratio':>8}")
    for r in row["train"]:
        lines.append(f"  {r['runs']:<44}{r['seconds']:>9.1f}{r['games_per_s']:>10.1f}{r['ratio']:>8.2f}")
    return "\n".join(lines)
