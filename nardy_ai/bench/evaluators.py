"""``nardy bench evaluators``: the quality of agents' checker play on a fixed position set.

A fixed, versioned set of positions with dice per variant (``nardy_ai/data/
evaluator_positions_<variant>_v<N>.jsonl``): a header line naming how the positions were drawn
and the reference that valued them, then one POSITIONS.md position per line with "dice" and
"afterstates": every legal afterstate as [play notation, reference equity (points per game,
cubeless, for the side that moved)].  Agents choose a play on every position and each choice
is judged by the reference: equity lost against the reference's best play, overall and per
class of the position on roll (:mod:`nardy_ai.classes`).  v2 sets draw a quota of decisions
per class (:func:`nardy_ai.bench.positions.strong_play_positions`); backgammon's reference is
gnubg 2-ply, long nardy's our rollouts of the candidate plays (:func:`rollout_reference`).
:func:`build_evaluator_positions` writes a set.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import NardyError
from ..files import write_atomic
from ..machine import machine_description
from ..movegen import generate
from ..variants import Variant, get_variant
from .positions import strong_play_positions
from .sets import read_set, require_set

#: The version of the shipped position sets read by default where a variant has no newer one
#: (v1, 300 positions a variant without class quotas, stays loadable).
EVALUATOR_SET_VERSION = 2
#: Variants whose newest shipped set is another version: long nardy's v3 has its reference
#: rolled out by the long champion (v2's, by long td80, is far weaker than the nets it judges).
NEWEST_SET_VERSION = {"long": 3}
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


def default_set_version(variant) -> int:
    """The version of ``variant``'s shipped evaluator set read by default: its newest
    (:data:`NEWEST_SET_VERSION`, else :data:`EVALUATOR_SET_VERSION`)."""
    return NEWEST_SET_VERSION.get(get_variant(variant).id, EVALUATOR_SET_VERSION)


def evaluator_positions_path(variant, version: int | None = None) -> str:
    """The shipped position set of a variant (package data), of ``version`` (default
    :func:`default_set_version`)."""
    from importlib.resources import files
    version = default_set_version(variant) if version is None else version
    return str(files("nardy_ai") / "data" / f"evaluator_positions_{get_variant(variant).id}_v{version}.jsonl")


def load_evaluator_positions(variant, path: str | None = None, version: int | None = None) -> PositionSet:
    """Read a position set: the file ``path``, else the shipped set of ``variant`` of
    ``version`` (default :func:`default_set_version`); a one-line
    :class:`~nardy_ai.errors.FormatError` naming the line for anything malformed."""
    from ..board import board_from_json
    from ..errors import FormatError
    v = get_variant(variant)
    path = path or evaluator_positions_path(v, version)
    require_set(path, "evaluator position set", v.id)

    def position(obj: dict) -> tuple:
        _, board, d, _ = board_from_json(obj, v)
        stored = obj.get("afterstates")
        if d is None or not isinstance(stored, list) or not all(
                isinstance(a, list) and len(a) == 2 and isinstance(a[0], str)
                and isinstance(a[1], (int, float)) and not isinstance(a[1], bool) for a in stored):
            raise FormatError("a position needs \"dice\" and \"afterstates\": [[play, equity], ...]")
        return board, d, [p for p, _ in stored], np.array([e for _, e in stored], float)

    header, rows = read_set(path, "position set", position)
    if not isinstance(header.get("version"), int) or not isinstance(header.get("reference"), str):
        raise FormatError(f"{path}: the header needs \"version\" (an integer) and \"reference\" (an agent)")
    boards, dice, plays, eqs = zip(*rows)
    return PositionSet(v, header, np.array(boards, np.int8), np.array(dice, np.int64), list(plays), list(eqs))


def afterstate_equities(agent, boards: np.ndarray, variant, chunk: int | None = None,
                        progress: Callable[[int, float], None] | None = None) -> np.ndarray:
    """The reference equity ``(M,)`` (points per game, for the side that moved) of afterstates
    by an agent that can value them: gnubg at its depth, neural agents at theirs.  With
    ``chunk``, ``chunk`` afterstates at a time, ``progress(afterstates valued, wall seconds)``
    after each."""
    from ..agents.gnubg_agent import GnubgAgent
    from ..errors import UnknownAgent
    v = get_variant(variant)
    if chunk is not None:
        t0 = time.perf_counter()
        eq = np.empty(len(boards))
        for lo in range(0, len(boards), chunk):
            hi = min(lo + chunk, len(boards))
            eq[lo:hi] = afterstate_equities(agent, boards[lo:hi], v)
            if progress is not None:
                progress(hi, time.perf_counter() - t0)
        return eq
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

    from ..agents import make_agent
    from ..board import board_to_json
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
        eq = afterstate_equities(make_agent(reference, v), after.boards, v, chunk, lambda done, took: say(
            f"{v.id}: {done}/{len(after)} afterstates valued by {reference} in {took:.0f} s "
            f"({done / max(took, 1e-9):.1f}/s)"))
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
    from ..agents.base import segment_ids
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
                      window: float = 0.20, chunk: int = 500, log=None, backend=None) -> tuple[np.ndarray, dict]:
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
    gets a progress line every ``chunk`` afterstates or candidates; ``backend`` (a
    :class:`~nardy_ai.backends.Backend`) spreads the rollouts over processes, with the same
    results."""
    from ..agents import make_agent
    from ..agents.base import segment_ids
    from ..rollout import rollout
    v = get_variant(variant)
    say = log or (lambda line: None)
    if games % batches:
        raise NardyError(f"games = {games} is not a multiple of batches = {batches}")
    spec = agent.split("@")[0]
    seg = segment_ids(after.offsets)
    t0 = time.perf_counter()
    eq1 = afterstate_equities(make_agent(f"{spec}@1ply", v), after.boards, v, chunk, lambda done, took: say(
        f"{v.id}: {done}/{len(after)} afterstates valued at 1 ply in {took:.0f} s"))
    one_ply_seconds = time.perf_counter() - t0
    cand = np.flatnonzero(rollout_candidates(eq1, after.offsets, max_candidates, window))
    t0 = time.perf_counter()
    per_batch = np.empty((batches, len(cand)))
    se2 = np.zeros(len(cand))
    for lo in range(0, len(cand), chunk):
        part = cand[lo:lo + chunk]
        for b in range(batches):
            r = rollout(after.boards[part], v, spec, games=games // batches, truncate=truncate,
                        seed=seed + b, on_roll=False, backend=backend)
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
    from ..errors import FormatError
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
    :func:`default_set_version`): each chooses on all positions in one batched call.  Per
    agent: ``loss_mp`` (mean equity lost per decision, milli-points), ``blunder_rate`` (share
    of losses > :data:`BLUNDER`), ``agreement`` (share choosing the reference's best play),
    ``decisions_per_s`` (wall time of the call) and ``classes``, the same figures per class
    (:func:`class_figures`).  A decision's class is that of its position with the player on
    roll (:func:`nardy_ai.classes.position_classes`), before the play: the kind of game the
    player had to play, whichever way the chosen play takes it.  ``reference`` (an agent
    spec) recomputes the reference instead of using the stored one."""
    from ..agents import make_agent
    from ..agents.base import segment_ids
    from ..classes import class_names, position_classes
    from ..errors import IllegalPlay
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

