"""Benchmarks: figures with units and the machine they were measured on (never asserted in tests).

``nardy bench movegen`` measures the move generator on positions from random play, at several
batch sizes, on one core: distinct afterstates per second and positions per second (CPU time of
this process, best of several repetitions), and the peak memory that one call allocates.
"""

from __future__ import annotations

import json
import os
import time
import tracemalloc
from dataclasses import dataclass

import numpy as np

from . import core, driver
from .files import write_atomic
from .machine import machine_description  # noqa: F401  (re-exported: its home was here)
from .board import OFF, start_board
from .errors import NardyError
from .movegen import generate
from .variants import Variant, get_variant


def best_of(fn, repeats: int) -> float:
    """The least CPU time (s) of ``repeats`` calls of ``fn``, after one warm-up call."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return max(best, 1e-9)


def random_positions(variant, n_games: int = 256, plies: int = 200, seed: int = 0) -> np.ndarray:
    """Positions (mover on roll) met in random play: ``n_games`` games in lockstep for
    ``plies`` plies each (finished games restart from the start position)."""
    rng = np.random.default_rng(seed)
    seen = []
    driver.run(core.fresh(variant, n_games), driver.SeededDice(rng, opening=None), _RandomChoice(), rng,
               plies=plies, restart=True, on_ply=lambda rec, _: seen.append(rec.boards))
    return np.concatenate(seen)


class _RandomChoice:
    """The samplers' random play (:func:`nardy_ai.core.random_choice`) as a driver policy."""
    name = "random"

    def choose(self, after, variant, rng) -> np.ndarray:
        return core.random_choice(after, rng)


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
    from .model import NeuralEvaluator
    from .netset import load_evaluator

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
# is judged by the reference: equity lost against the reference's best play, overall and per
# class of the position on roll (nardy_ai/classes.py).  v2 sets draw a quota of decisions per
# class; backgammon's reference is gnubg 2-ply, long nardy's our rollouts of the candidate plays
# (rollout_reference).

#: The version of the shipped position sets read by default (v1, 300 positions a variant
#: without class quotas, stays loadable).
EVALUATOR_SET_VERSION = 2
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


def evaluator_positions_path(variant, version: int | None = None) -> str:
    """The shipped position set of a variant (package data), of ``version`` (default
    :data:`EVALUATOR_SET_VERSION`)."""
    from importlib.resources import files
    version = EVALUATOR_SET_VERSION if version is None else version
    return str(files("nardy_ai") / "data" / f"evaluator_positions_{get_variant(variant).id}_v{version}.jsonl")


def load_evaluator_positions(variant, path: str | None = None, version: int | None = None) -> PositionSet:
    """Read a position set: the file ``path``, else the shipped set of ``variant`` of
    ``version`` (default :data:`EVALUATOR_SET_VERSION`)."""
    from .board import board_from_json
    from .errors import FormatError
    v = get_variant(variant)
    path = path or evaluator_positions_path(v, version)
    from .board import numbered_lines, parse_json
    if not os.path.exists(path):
        raise FormatError(f"no evaluator position set for {v.id}: {path} is missing")
    lines = []
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            for n, line in numbered_lines(f):
                if line is None:                      # endless or huge (/dev/zero): stop here
                    raise FormatError(f"{path} line {n}: longer than a position set's line can be")
                if line.strip():
                    lines.append((n, line))
    except OSError as e:
        raise FormatError(f"cannot read {path}: {e.strerror}") from None
    header = boards = dice = plays = eqs = None
    for n, line in lines:
        try:
            obj = parse_json(line)
            if header is None:
                if not isinstance(obj, dict) or not isinstance(obj.get("header"), dict):
                    raise FormatError("the first line must be the set's header {\"header\": {...}}")
                header, boards, dice, plays, eqs = obj["header"], [], [], [], []
                continue
            _, board, d, _ = board_from_json(obj, v)
            stored = obj.get("afterstates")
            if d is None or not isinstance(stored, list) or not all(
                    isinstance(a, list) and len(a) == 2 and isinstance(a[0], str)
                    and isinstance(a[1], (int, float)) and not isinstance(a[1], bool) for a in stored):
                raise FormatError("a position needs \"dice\" and \"afterstates\": [[play, equity], ...]")
        except NardyError as e:
            raise FormatError(f"{path} line {n}: {e}") from None
        boards.append(board)
        dice.append(d)
        plays.append([p for p, _ in stored])
        eqs.append(np.array([e for _, e in stored], float))
    if header is None or not boards:
        raise FormatError(f"{path}: not a position set (a header line, then positions)")
    if not isinstance(header.get("version"), int) or not isinstance(header.get("reference"), str):
        raise FormatError(f"{path}: the header needs \"version\" (an integer) and \"reference\" (an agent)")
    return PositionSet(v, header, np.array(boards, np.int8), np.array(dice, np.int64), plays, eqs)


def _self_play_decisions(agent, v: Variant, rng: np.random.Generator, games: int, every: int,
                         max_plies: int) -> tuple[np.ndarray, np.ndarray]:
    """Every ``every``-th position with its roll (from the second ply on) of ``games`` games of
    ``agent``'s self-play in lockstep for ``max_plies`` plies (finished games restart), keeping
    only real decisions (at least 2 legal plays)."""
    pool_b, pool_d = [], []

    def keep(rec, _) -> None:
        if rec.ply % every == 1:
            real = rec.after.counts() >= 2
            pool_b.append(rec.boards[real])
            pool_d.append(rec.dice[real])

    driver.run(core.fresh(v, games), driver.SeededDice(rng, opening=None), agent, rng, plies=max_plies,
               restart=True, on_ply=keep)
    return np.concatenate(pool_b), np.concatenate(pool_d)


def distinct_decisions(boards: np.ndarray, dice: np.ndarray) -> np.ndarray:
    """Ascending indices of the first of every distinct decision: the same position with the
    same roll (the order of the two dice ignored) counts once."""
    key = np.concatenate([np.asarray(boards, np.int8), np.sort(dice, axis=1).astype(np.int8)], axis=1)
    _, first = np.unique(key, axis=0, return_index=True)
    return np.sort(first)


def strong_play_positions(agent, variant, n: int | None = None, seed: int = 0, games: int = 64,
                          every: int = 3, max_plies: int = 240,
                          quotas: dict[str, int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``n`` positions with dice ``((n, 28), (n, 2))`` from ``agent``'s self-play: ``games``
    games in lockstep (finished games restart), every ``every``-th ply from the second on,
    keeping only positions with at least 2 legal plays; drawn without replacement by ``seed``.

    With ``quotas`` (``{class name: count}``, names of :func:`nardy_ai.classes.class_names`;
    ``n`` then is their sum or ``None``), repeated decisions are removed first
    (:func:`distinct_decisions`) and each class of the position on roll
    (:func:`nardy_ai.classes.position_classes`) gets exactly its count, drawn without
    replacement within the class; the result keeps the order of play.  :class:`NardyError`
    when a class is unknown or self-play met too few distinct decisions of it (play more
    ``games`` or ``max_plies``)."""
    v = get_variant(variant)
    rng = np.random.default_rng(seed)
    pool_b, pool_d = _self_play_decisions(agent, v, rng, games, every, max_plies)
    if quotas is None:
        idx = np.sort(rng.choice(len(pool_b), n, replace=False))
        return pool_b[idx], pool_d[idx]
    from .classes import class_names, position_classes
    names = class_names(v)
    if set(quotas) - set(names):
        raise NardyError(f"quotas name unknown classes {sorted(set(quotas) - set(names))}; "
                         f"{v.id} has {', '.join(names)}")
    if n is not None and n != sum(quotas.values()):
        raise NardyError(f"n = {n} but the quotas add up to {sum(quotas.values())}")
    distinct = distinct_decisions(pool_b, pool_d)
    cls = position_classes(pool_b[distinct], v)
    picks = []
    for name, count in quotas.items():
        rows = distinct[cls == names.index(name)]
        if len(rows) < count:
            raise NardyError(f"self-play met {len(rows)} distinct {name} decisions, fewer than "
                             f"its quota {count}: play more games or plies")
        picks.append(rng.choice(rows, count, replace=False))
    idx = np.sort(np.concatenate(picks))
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


def build_evaluator_positions(variant, source: str, reference: str, path: str, n: int | None = 300,
                              seed: int = 0, version: int = EVALUATOR_SET_VERSION,
                              quotas: dict[str, int] | None = None, games: int = 64, every: int = 3,
                              max_plies: int = 240, values=None, log=None, chunk: int = 1000,
                              **header_extra) -> dict:
    """Write a position set and return its header: ``n`` positions from ``source``'s
    self-play (an agent spec; sampling as :func:`strong_play_positions` with ``seed``,
    ``games``, ``every``, ``max_plies`` and per-class ``quotas``), every legal afterstate
    valued by ``reference`` (an agent spec; gnubg or neural), ``chunk`` afterstates at a time
    with a progress line to ``log`` after each.  ``values``, when given, values the
    afterstates instead: ``values(after, variant) -> (equities (M,), header fields)``, with
    ``reference`` then only the name the header gives it.  ``header_extra`` (e.g.
    ``reference_settings``, ``notes``) goes into the header line.  The file is written next
    to ``path`` and renamed at the end, so a half-made set never lies at ``path``."""
    import datetime

    from .agents import make_agent
    from .board import board_to_json
    v = get_variant(variant)
    say = log or (lambda line: None)
    t0 = time.perf_counter()
    boards, dice = strong_play_positions(make_agent(source, v), v, n, seed, games, every, max_plies,
                                         quotas)
    n = len(boards)
    after = generate(boards, dice, v, notation=True)
    say(f"{v.id}: {n} positions, {len(after)} afterstates sampled in {time.perf_counter() - t0:.0f} s")
    t0, c0 = time.perf_counter(), time.process_time()
    extra: dict = {}
    if values is not None:
        eq, extra = values(after, v)
    else:
        agent = make_agent(reference, v)
        eq = np.empty(len(after))
        for lo in range(0, len(after), chunk):
            hi = min(lo + chunk, len(after))
            eq[lo:hi] = afterstate_equities(agent, after.boards[lo:hi], v)
            took = time.perf_counter() - t0
            say(f"{v.id}: {hi}/{len(after)} afterstates valued by {reference} in {took:.0f} s "
                f"({hi / max(took, 1e-9):.1f}/s)")
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(every, "th")
    sampling = (f"self-play, {games} games in lockstep, every {every}{suffix} ply from the 2nd, "
                f"positions with at least 2 legal plays, drawn without replacement")
    if quotas is not None:
        sampling += (f" ({max_plies} plies); repeated decisions (same position and roll) removed; "
                     "per class of the position on roll: "
                     + ", ".join(f"{k} {q}" for k, q in quotas.items()))
    header = {"set": "evaluator_positions", "variant": v.id, "version": version,
              "variant_version": v.version, "positions": n,
              "afterstates": len(after), "source": source, "seed": seed, "sampling": sampling,
              **({"quotas": dict(quotas)} if quotas is not None else {}),
              "reference": reference, "reference_seconds": round(time.perf_counter() - t0, 1),
              "reference_cpu_seconds": round(time.process_time() - c0, 1),
              "machine": machine_description(),
              "date": datetime.date.today().isoformat(), **extra, **header_extra}
    lines = [json.dumps({"header": header})]
    for i in range(n):
        lo, hi = after.offsets[i], after.offsets[i + 1]
        rows = [[after.plays[r], round(float(eq[r]), 5)] for r in range(lo, hi)]
        lines.append(json.dumps(board_to_json(boards[i], v, dice=[int(x) for x in dice[i]], afterstates=rows)))
    write_atomic(path, "\n".join(lines) + "\n")
    return header


def rollout_candidates(equity: np.ndarray, offsets: np.ndarray, max_candidates: int = 5,
                       window: float = 0.20, min_candidates: int = 2) -> np.ndarray:
    """``(M,)`` bool: the plays worth rolling out, by a cheap equity ``equity`` (points per
    game) of every afterstate of positions delimited by ``offsets``: per position the best
    ``max_candidates`` within ``window`` of the best, and always the best ``min_candidates``
    (all plays of a position with fewer)."""
    from .agents.base import segment_ids
    equity = np.asarray(equity, float)
    offsets = np.asarray(offsets, np.int64)
    seg = segment_ids(offsets)
    order = np.lexsort((-equity, seg))                   # per position, best first
    rank = np.empty(len(equity), np.int64)
    rank[order] = np.arange(len(equity)) - offsets[seg[order]]
    best = np.maximum.reduceat(equity, offsets[:-1])[seg]
    return (rank < min_candidates) | ((rank < max_candidates) & (equity >= best - window))


def rollout_reference(after, variant, agent: str, games: int = 324, truncate: int | None = 12,
                      batches: int = 3, seed: int = 0, max_candidates: int = 5,
                      window: float = 0.20, chunk: int = 500, log=None) -> tuple[np.ndarray, dict]:
    """Reference equities ``(M,)`` (points per game, for the side that moved) of every
    afterstate of ``after`` by rollouts of the candidate plays, and the header fields that
    say how (a ``values`` function for :func:`build_evaluator_positions`).

    Every afterstate is valued by ``agent`` (a ``td:`` spec) at 1 ply; the
    :func:`rollout_candidates` (``max_candidates`` within ``window``, at least 2) are rolled
    out ``games`` times each by the agent at 0 ply (:func:`nardy_ai.rollout.rollout`, cubeless,
    ``truncate`` plies then the net's value), in ``batches`` independent rollouts of
    ``games / batches`` games (seeds ``seed``, ``seed + 1``, ...) whose spread gives the
    standard error of the difference between two candidates of a position (batch means: the
    dice are the same for every candidate, so the difference's error is smaller than either
    equity's).  A play that is not a candidate gets the best rollout equity of its position
    minus its 1-ply loss against the 1-ply best, never more than the position's worst
    candidate: the rollouts rank the plays that matter, the 1-ply search the rest.  ``log``
    gets a progress line every ``chunk`` afterstates or candidates."""
    from .agents import make_agent
    from .agents.base import segment_ids
    from .rollout import rollout
    v = get_variant(variant)
    say = log or (lambda line: None)
    if games % batches:
        raise NardyError(f"games = {games} is not a multiple of batches = {batches}")
    spec = agent.split("@")[0]
    seg = segment_ids(after.offsets)
    t0 = time.perf_counter()
    one_ply = make_agent(f"{spec}@1ply", v)
    eq1 = np.empty(len(after))
    for lo in range(0, len(after), chunk):
        hi = min(lo + chunk, len(after))
        eq1[lo:hi] = afterstate_equities(one_ply, after.boards[lo:hi], v)
        say(f"{v.id}: {hi}/{len(after)} afterstates valued at 1 ply in {time.perf_counter() - t0:.0f} s")
    one_ply_seconds = time.perf_counter() - t0
    cand = np.flatnonzero(rollout_candidates(eq1, after.offsets, max_candidates, window))
    t0 = time.perf_counter()
    per_batch = np.empty((batches, len(cand)))
    se2 = np.zeros(len(cand))
    for lo in range(0, len(cand), chunk):
        part = cand[lo:lo + chunk]
        for b in range(batches):
            r = rollout(after.boards[part], v, spec, games=games // batches, truncate=truncate,
                        seed=seed + b, on_roll=False)
            per_batch[b, lo:lo + len(part)] = r.equity
            se2[lo:lo + len(part)] += r.equity_se ** 2
        say(f"{v.id}: {lo + len(part)}/{len(cand)} candidates rolled out in "
            f"{time.perf_counter() - t0:.0f} s")
    rollout_seconds = time.perf_counter() - t0
    rolled = per_batch.mean(axis=0)
    eq_se = np.sqrt(se2) / batches                       # of the mean of the batches
    # Per position: its best and worst rollout equity, then every play's value.
    high, low = np.full(len(after), -np.inf), np.full(len(after), np.inf)
    high[cand], low[cand] = rolled, rolled
    top = np.maximum.reduceat(high, after.offsets[:-1])
    low = np.minimum.reduceat(low, after.offsets[:-1])
    best1 = np.maximum.reduceat(eq1, after.offsets[:-1])
    eq = np.minimum(top[seg] - (best1[seg] - eq1), low[seg])
    eq[cand] = rolled
    # Difference of every other candidate from its position's rollout-best, per batch.
    cseg = seg[cand]
    best_row = np.full(len(after.offsets) - 1, -1)
    order = np.lexsort((rolled, cseg))                   # per position, best candidate last
    last = np.r_[cseg[order][1:] != cseg[order][:-1], True]
    best_row[cseg[order][last]] = order[last]
    others = np.flatnonzero(best_row[cseg] != np.arange(len(cand)))
    diffs = per_batch[:, best_row[cseg[others]]] - per_batch[:, others]
    diff_var = diffs.var(axis=0, ddof=1) / batches if batches > 1 else np.full(len(others), np.nan)
    fields = {
        "reference_settings": (
            f"rollouts of the candidate plays: every afterstate valued by {spec}@1ply; candidates "
            f"= the best {max_candidates} within {window} of the 1-ply best, at least 2; each "
            f"candidate rolled out {games} games by {spec} at 0 ply (nardy_ai.rollout.rollout, "
            f"cubeless, the opponent rolling first, duplicate dice across all candidates, "
            f"rotated first and stratified second rolls), in {batches} batches of "
            f"{games // batches} games with seeds {seed}..{seed + batches - 1}, "
            + (f"truncated after {truncate} plies and scored by the net's 0-ply value"
               if truncate is not None else "played to the end")
            + "; a play that is not a candidate: the best rollout equity of its position minus "
              "its 1-ply loss against the 1-ply best, at most the position's worst candidate"),
        "candidates": int(len(cand)),
        "rollout_games": games, "rollout_truncate": truncate, "rollout_batches": batches,
        "rollout_seed": seed,
        "one_ply_seconds": round(one_ply_seconds, 1), "rollout_seconds": round(rollout_seconds, 1),
        "mean_equity_se": round(float(eq_se.mean()), 5),
        "difference_se_rms": (round(float(np.sqrt(np.nanmean(diff_var))), 5)
                              if len(others) and batches > 1 else None),
        "se_note": "mean_equity_se: mean over candidates of a rollout equity's standard error "
                   "(i.i.d. formula, per batch, combined); difference_se_rms: root mean square "
                   "over the pairs (rollout-best candidate of a position, another candidate) of "
                   "the standard error of their difference, from the spread of the batches",
    }
    say(f"{v.id}: reference done; mean equity s.e. {fields['mean_equity_se']}, difference s.e. "
        f"(rms) {fields['difference_se_rms']}")
    return eq, fields


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


def class_figures(loss: np.ndarray, classes: np.ndarray, names) -> dict[str, dict]:
    """Per position class: ``decisions``, ``loss_mp`` (mean equity lost, milli-points per
    decision), ``blunder_rate`` (share of losses > :data:`BLUNDER`) and ``agreement`` (share
    losing nothing) of per-decision losses ``loss`` (points per game) whose decisions have
    class ids ``classes`` (indices into ``names``); ``None`` figures for a class without
    decisions."""
    k = len(names)
    count = np.bincount(classes, minlength=k)
    sums = {"loss_mp": 1000 * np.bincount(classes, loss, k),
            "blunder_rate": np.bincount(classes, loss > BLUNDER, k),
            "agreement": np.bincount(classes, loss <= 1e-9, k)}
    return {name: {"decisions": int(count[i]),
                   **{key: float(s[i] / count[i]) if count[i] else None for key, s in sums.items()}}
            for i, name in enumerate(names)}


def bench_evaluators(variant, agents, reference: str | None = None, seed: int = 0,
                     path: str | None = None, version: int | None = None) -> dict:
    """Judge ``agents`` (specs or :class:`~nardy_ai.agents.base.Agent` objects) on the
    position set (the file ``path``, else the shipped set of ``version``, default
    :data:`EVALUATOR_SET_VERSION`): each chooses on all positions in one batched call.  Per
    agent: ``loss_mp`` (mean equity lost per decision, milli-points), ``blunder_rate`` (share
    of losses > :data:`BLUNDER`), ``agreement`` (share choosing the reference's best play),
    ``decisions_per_s`` (wall time of the call) and ``classes``, the same figures per class
    (:func:`class_figures`).  A decision's class is that of its position with the player on
    roll (:func:`nardy_ai.classes.position_classes`), before the play: the kind of game the
    player had to play, whichever way the chosen play takes it.  ``reference`` (an agent
    spec) recomputes the reference instead of using the stored one."""
    from .agents import make_agent
    from .agents.base import segment_ids
    from .classes import class_names, position_classes
    from .errors import IllegalPlay
    v = get_variant(variant)
    pset = load_evaluator_positions(v, path, version)
    names = class_names(v)
    classes = position_classes(pset.positions, v)
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
                     "decisions_per_s": len(chosen) / wall,
                     "classes": class_figures(loss, classes, names)})
    return {"variant": v.id, "set_version": pset.header["version"], "positions": len(pset.positions),
            "afterstates": len(after), "reference": ref_name, "stored_reference": not reference,
            "machine": machine_description(),
            "classes": {name: int(n) for name, n in zip(names, np.bincount(classes, minlength=len(names)))},
            "agents": rows}


def format_evaluators(r: dict) -> str:
    """The tables ``nardy bench evaluators`` prints: overall, then per class of the position
    on roll (results of older versions without classes print the overall table only)."""
    src = "stored" if r["stored_reference"] else "recomputed"
    w = max([44] + [len(a["agent"]) + 2 for a in r["agents"]])
    lines = [f"machine: {r['machine']}",
             f"{r['variant']}: evaluator position set v{r['set_version']}, {r['positions']} positions "
             f"({r['afterstates']} afterstates); reference {r['reference']} ({src})",
             f"{'agent':<{w}}{'loss (mp/decision)':>20}{'blunders (>0.08)':>18}"
             f"{'agrees':>9}{'decisions/s':>13}"]
    for a in r["agents"]:
        lines.append(f"{a['agent']:<{w}}{a['loss_mp']:>20.1f}{100 * a['blunder_rate']:>17.1f}%"
                     f"{100 * a['agreement']:>8.1f}%{a['decisions_per_s']:>13,.0f}")
    if "classes" in r:
        lines.append("by class of the position on roll (decisions): "
                     + ", ".join(f"{c} {n}" for c, n in r["classes"].items()))
        lines.append(f"{'agent / class':<{w}}{'loss (mp/decision)':>20}{'blunders (>0.08)':>18}{'agrees':>9}")
        for a in r["agents"]:
            lines.append(a["agent"])
            for cls, f in a["classes"].items():
                if f["decisions"]:
                    lines.append(f"{'  ' + cls:<{w}}{f['loss_mp']:>20.1f}{100 * f['blunder_rate']:>17.1f}%"
                                 f"{100 * f['agreement']:>8.1f}%")
                else:
                    lines.append(f"{'  ' + cls:<{w}}{'-':>20}{'-':>18}{'-':>9}")
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


def bench_bearoff(variants=("backgammon", "long"), batch: int = 8192, repeats: int = 5,
                  seed: int = 0) -> dict:
    """The one-sided bear-off database (:mod:`nardy_ai.bearoff`): build time (CPU and wall s),
    file size (MiB, compressed), one-sided lookups/s (:func:`~nardy_ai.bearoff.expected_rolls`)
    and two-sided :func:`~nardy_ai.bearoff.bearoff_outcomes` afterstates/s per variant, on
    ``batch`` random bear-off afterstates (CPU time of one process, best of ``repeats``)."""
    import tempfile

    from . import bearoff
    from .board import BOARD_SIZE, OPP_OFF, mirror_index

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

    from .agents import make_agent
    from .rollout import rollout

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
    from .tournament import display_name
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

def random_afterstates(variant, n: int, seed: int = 0) -> np.ndarray:
    """``n`` afterstates met in random play (:func:`random_positions`, each position with a
    random roll and all its afterstates), shuffled; repeated when random play gives fewer."""
    v = get_variant(variant)
    rng = np.random.default_rng(seed)
    pool = random_positions(v, n_games=64, plies=64, seed=seed)
    after = generate(pool, rng.integers(1, 7, (len(pool), 2)), v).boards
    return after[rng.permutation(np.resize(np.arange(len(after)), n))]


def bench_features(variant="backgammon", batch: int = 16384, repeats: int = 5, seed: int = 0) -> dict:
    """Every registered encoder of the variant's family (:data:`nardy_ai.encoding.ENCODERS`) on
    ``batch`` afterstates from random play, on one core: inputs, afterstates encoded per second
    (CPU time of this process, best of ``repeats``, the encoders taking turns) and each one's
    time over the family's default encoder's, measured in the same run."""
    from .encoding import DEFAULT_ENCODER, ENCODERS

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
