"""``nardy bench labels``: how fast training on search targets labels afterstates
(:func:`training.search_targets.label_afterstates`, the labelling path of ``nardy train``'s
search-targets method), in this process and on local processes.

The front-end layer may import the training package (it sits above the jobs); the labelling
itself stays in :mod:`training.search_targets`, this module only times it.
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
import time
from contextlib import contextmanager

import numpy as np

from training.search_targets import (LabelTask, class_quotas, evaluator_from_bytes, label_chunk,
                                     label_tasks, sample_afterstates)

from .. import search
from ..backends import make_backend
from ..machine import machine_description
from ..netset import as_netset
from ..shipping import bench_net
from ..variants import get_variant

#: The repository root: a relative checkpoint path not found from the working directory is
#: looked up there.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def timed_chunk(task: LabelTask) -> tuple[int, float, float, float]:
    """A benchmark task: label a chunk; ``(positions, CPU seconds, start, end)`` (wall clock)."""
    t0 = time.time()
    _, labels, cpu = label_chunk(task)
    return len(labels), cpu, t0, time.time()


#: Positions per labelling chunk by search depth (a 2-ply label costs some 20 times a 1-ply one).
CHUNK = {1: 2000, 2: 100}


@contextmanager
def every_row_valued():
    """The search without its distinct-afterstate step (:data:`nardy_ai.search.DISTINCT_MIN`
    out of reach): the baseline the one-core figure is compared with."""
    saved = search.DISTINCT_MIN
    search.DISTINCT_MIN = sys.maxsize
    try:
        yield
    finally:
        search.DISTINCT_MIN = saved


def bench_labels(variant="backgammon", checkpoint: str | None = None, seconds: float = 30.0,
                 jobs: int | None = None, plies: int = 1, chunk: int | None = None, seed: int = 0) -> dict:
    """1- or 2-ply labelling speed (:func:`training.search_targets.label_afterstates`, the
    labelling path of training) on afterstates from the net's own self-play (every class but
    bear-off, whose database labels cost nothing): positions labelled per CPU second in this
    process (one core), beside the same chunks labelled with every afterstate of the search
    valued (no :func:`~nardy_ai.board.distinct_boards` step: the baseline, alternating chunk by
    chunk), and per wall second on ``jobs`` local processes (default: every core), counted
    from the first chunk's start to the last one's end (worker start-up excluded; also given
    with it)."""
    chunk = chunk or CHUNK.get(plies, 100)
    import multiprocessing as mp

    v = get_variant(variant)
    path = checkpoint or bench_net(v)
    if not os.path.isabs(path) and not os.path.exists(path):
        here = os.path.join(ROOT, path)
        path = here if os.path.exists(here) else path
    with open(path, "rb") as f:
        data = f.read()
    ck = (hashlib.sha256(data).hexdigest(), data)
    ev = evaluator_from_bytes(*ck, v)
    netset = as_netset(ev)
    names = netset.classes
    quotas = class_quotas(4 * chunk, {c: 1.0 for c in names if c != "bearoff"}, names)
    res = sample_afterstates(ev, quotas, seed, parallel_games=256, epsilon=0.05, keep=0.25)
    boards, classes = res.boards, res.classes
    settings = {"kind": "search", "plies": plies, "seed": seed}
    no_deep = np.zeros(len(boards), bool)

    def tasks(n: int) -> list[LabelTask]:
        reps = np.resize(np.arange(len(boards)), n)
        return label_tasks(boards[reps], classes[reps], no_deep[reps], v, ck, settings, chunk)

    # One core: this process, chunk after chunk for half the time, each chunk labelled by the
    # search as it is and by the baseline valuing every afterstate, in turn.
    label_chunk(tasks(min(200, chunk))[0])                       # warm-up
    one = tasks(len(boards))
    n1 = cpu1 = wall1 = cpu0 = 0.0
    i = 0
    while i == 0 or wall1 < seconds / 4:
        with every_row_valued():
            _, _, c0 = label_chunk(one[i % len(one)])
        t0 = time.perf_counter()
        _, labels, cpu = label_chunk(one[i % len(one)])
        wall1 += time.perf_counter() - t0
        cpu1 += cpu
        cpu0 += c0
        n1 += len(labels)
        i += 1
    rate1 = n1 / max(cpu1, 1e-9)
    rate0 = n1 / max(cpu0, 1e-9)
    # All cores: local processes, enough chunks for about half the time at this process's pace.
    jobs = jobs or os.cpu_count() or 1
    per_job = max(1, int(math.ceil(n1 / max(wall1, 1e-9) * seconds / 2 / chunk)))
    work = tasks(jobs * per_job * chunk)
    t0 = time.perf_counter()
    with make_backend("local", jobs, log=lambda s: None) as be:
        results = [r for _, r in be.run(timed_chunk, work)]
    wall_all = time.perf_counter() - t0
    n_all = sum(r[0] for r in results)
    span = max(r[3] for r in results) - min(r[2] for r in results)
    described = netset.describe() if netset.members else netset.describe()[-1:]
    return {"machine": machine_description(), "variant": v.id, "net": path,
            "evaluator": described, "plies": plies, "chunk": chunk,
            "classes": {c: int(np.sum(classes == names.index(c))) for c in names},
            "one_core": {"positions": int(n1), "cpu_seconds": cpu1, "wall_seconds": wall1,
                         "positions_per_cpu_s": rate1, "positions_per_s": n1 / max(wall1, 1e-9),
                         "every_row_positions_per_cpu_s": rate0, "ratio_to_every_row": rate1 / max(rate0, 1e-9)},
            "all_cores": {"jobs": jobs, "positions": int(n_all), "wall_seconds": span,
                          "positions_per_s": n_all / max(span, 1e-9),
                          "wall_seconds_with_startup": wall_all,
                          "positions_per_s_with_startup": n_all / max(wall_all, 1e-9),
                          "cpu_seconds": sum(r[1] for r in results)},
            "start_method": mp.get_start_method()}


def format_labels(r: dict) -> str:
    """The lines ``nardy bench labels`` prints."""
    one, alls = r["one_core"], r["all_cores"]
    mix = ", ".join(f"{c} {n:,}" for c, n in r["classes"].items() if n)
    return "\n".join([
        f"machine: {r['machine']}",
        f"{r['variant']}: {r['plies']}-ply labels of afterstates from the net's self-play ({mix}), "
        f"{r['net']}, chunks of {r['chunk']:,}",
        *(f"  {line}" for line in r["evaluator"]),
        f"  one core (this process, 1 torch thread): {one['positions_per_cpu_s']:>10,.0f} positions/CPU s "
        f"({one['positions_per_s']:,.0f}/s wall, {int(one['positions']):,} positions; "
        f"{one['ratio_to_every_row']:.2f}x the same chunks valuing every afterstate of the search, "
        f"{one['every_row_positions_per_cpu_s']:,.0f}/CPU s)",
        f"  {alls['jobs']} local processes:              {alls['positions_per_s']:>10,.0f} positions/s wall "
        f"({alls['positions']:,} positions in {alls['wall_seconds']:.1f} s; "
        f"{alls['positions_per_s_with_startup']:,.0f}/s counting worker start-up; "
        f"{alls['positions'] / max(alls['cpu_seconds'], 1e-9):,.0f} positions/CPU s per process)",
    ])
