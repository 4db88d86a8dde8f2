"""Fit bigger nets from scratch on a teacher's search labels of many positions (issue #11).

A warm-started 256-unit net fitted to its own 2-ply labels stays where it is (the held-out
excess, a KL divergence, stuck at 3.0e-4 however long the fit: experiments/fit_aggregate.py,
session 8).  This script tests whether the net's size is the limit: it pools the afterstates
of search-target runs (``--runs``: every ``generations/NNN/samples.npz`` or label chunk),
labels them with the teacher's n-ply expectimax (``--plies``, 1 by default: noise-free and
cheap) on ``--jobs`` processes, caching the labels chunk by chunk under ``--cache`` (a killed
run resumes there), and fits the teacher's class nets named by ``--nets`` again, from scratch,
with ``--hidden`` layers (or fine-tunes them at their own size: ``--warm`` for all of
``--nets``, ``--warm-nets`` for some).  The other members (by default the
race net and the bear-off database) stay the teacher's.  ``--co-teachers`` label the same
afterstates too, and the student fits the mean of all the teachers' labels (an ensemble).  The result is a checkpoint for
``td:PATH`` agents (and ``[model] init_from`` of a run); the fits' losses go to ``PATH.json``.

    python experiments/distill.py --teacher checkpoints/backgammon/search_targets_2ply_r72/current.pt \
        --runs checkpoints/backgammon/search_targets_rollout72 checkpoints/backgammon/search_targets_rollout \
        --cache experiments/training/distill_cache --hidden 512 --out /tmp/distill512.pt --jobs 2
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import io
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from experiments.fit_aggregate import refit_nets, save_fitted          # noqa: E402
from nardy_ai.backends import make_backend                            # noqa: E402
from nardy_ai.classes import class_names                              # noqa: E402
from nardy_ai.files import write_atomic                               # noqa: E402
from nardy_ai.model import n_outputs                                  # noqa: E402
from nardy_ai.netset import as_netset, load_evaluator                 # noqa: E402
from training.metrics_log import MetricsLog                           # noqa: E402
from training.search_targets import (_distinct, _one_torch_thread, class_quotas,  # noqa: E402
                                     decision_candidates, evaluator_from_bytes, label_chunk,
                                     label_tasks, read_npz, sample_afterstates, write_npz)


def pooled_boards(runs: list[str], limit: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct afterstates and their class ids of every label chunk of the runs (at most
    ``limit``, a seeded random subset)."""
    boards, classes = [], []
    for run in runs:
        for path in sorted(glob.glob(os.path.join(run, "generations", "*", "labels", "chunk_*.npz"))):
            z = read_npz(path)
            boards.append(z["boards"])
            classes.append(z["classes"])
    if not boards:
        raise SystemExit(f"no label chunks under {runs}")
    b, c = np.concatenate(boards), np.concatenate(classes)
    keep = _distinct(b)
    b, c = b[keep], c[keep]
    if limit and len(b) > limit:
        rows = np.sort(np.random.default_rng(seed).permutation(len(b))[:limit])
        b, c = b[rows], c[rows]
    return b, c


def _sample_part(task) -> tuple[np.ndarray, np.ndarray, int]:
    """One process's share of :func:`sampled_boards` (a backend task: quotas, seed, epsilon,
    keep, variant, the teacher's ``(sha, bytes)``): its boards, classes and games played."""
    quotas, seed, epsilon, keep, variant, checkpoint = task
    with _one_torch_thread():
        s = sample_afterstates(evaluator_from_bytes(*checkpoint, variant), quotas, seed, 512, epsilon, 0.0, keep)
    return s.boards, s.classes, s.games


def sampled_boards(ev, data: bytes, n: int, shares: dict[str, float], seed: int, epsilon: float,
                   keep: float, cache: str, jobs: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` fresh distinct afterstates of the teacher's own self-play (0 ply, ``epsilon``-greedy,
    each played afterstate kept with probability ``keep``), split by class as ``shares``, drawn
    on ``jobs`` processes with seeds ``seed + j``; cached as an ``.npz`` under ``cache``
    keyed by the teacher's bytes and these settings (a rerun reuses them)."""
    names = class_names(ev.variant)
    sha = hashlib.sha256(data)
    key = hashlib.sha256(sha.digest()
                         + repr((n, sorted(shares.items()), seed, epsilon, keep, jobs)).encode()).hexdigest()[:16]
    path = os.path.join(cache, f"sample_{key}.npz")
    if os.path.exists(path):
        z = read_npz(path)
        print(f"{len(z['boards']):,} sampled afterstates from {path}", flush=True)
        return z["boards"], z["classes"]
    tasks = [(class_quotas(n // jobs + (j < n % jobs), shares, names), seed + j, epsilon, keep, ev.variant,
              (sha.hexdigest(), data)) for j in range(jobs)]
    t0 = time.time()
    backend = make_backend("local", jobs)
    try:
        by_seed = {task[1]: part for task, part in backend.run(_sample_part, tasks)}
    finally:
        backend.close()
    got = [by_seed[seed + j] for j in range(jobs)]           # in seed order, however they finished
    b = np.concatenate([g[0] for g in got])
    c = np.concatenate([g[1] for g in got])
    keep_rows = _distinct(b)                       # the processes' games may meet the same boards
    b, c = b[keep_rows], c[keep_rows]
    print(f"sampled {len(b):,} distinct afterstates in {sum(g[2] for g in got):,} games "
          f"({time.time() - t0:.0f} s): " + ", ".join(f"{k} {int(np.sum(c == names.index(k))):,}"
                                                     for k in shares), flush=True)
    os.makedirs(cache, exist_ok=True)
    write_npz(path, boards=b, classes=c)
    return b, c


def teacher_labels(boards, classes, ev, data: bytes, plies: int, cache: str, jobs: int, chunk: int = 10000):
    """Labels ``(N, K)`` at ``plies`` of the teacher ``ev`` (its checkpoint's bytes ``data``),
    chunk files under ``cache`` reused."""
    sha = hashlib.sha256(data).hexdigest()
    key = hashlib.sha256(sha.encode() + boards.tobytes() + bytes([plies])).hexdigest()[:16]
    folder = os.path.join(cache, key)
    os.makedirs(folder, exist_ok=True)
    settings = {"kind": "search", "plies": plies, "seed": 0}
    out = np.empty((len(boards), n_outputs(ev.variant)), np.float32)
    have = set()
    for i in range((len(boards) + chunk - 1) // chunk):
        path = os.path.join(folder, f"chunk_{i:04d}.npy")
        if os.path.exists(path):
            out[i * chunk:(i + 1) * chunk] = np.load(path)
            have.add(i)
    tasks = label_tasks(boards, classes, np.zeros(len(boards), bool), ev.variant, (sha, data), settings,
                        chunk, skip=have)
    print(f"{len(boards):,} afterstates: {len(have)} chunks cached, {len(tasks)} to label", flush=True)
    backend = make_backend("local", jobs)
    t0 = time.time()
    n = 0
    try:
        for task, (index, labels, _) in backend.run(label_chunk, tasks):
            out[task.first:task.first + len(labels)] = labels
            buf = io.BytesIO()
            np.save(buf, labels)
            write_atomic(os.path.join(folder, f"chunk_{index:04d}.npy"), buf.getvalue())
            n += len(labels)
            print(f"labelled {n:,} ({n / (time.time() - t0):.0f}/s)", flush=True)
    finally:
        backend.close()
    return out


def fit_logger(metrics: MetricsLog):
    """``refit_nets``'s ``log(net, epoch, figures)`` onto a run folder's :class:`MetricsLog`:
    one JSONL line per epoch (net, epoch, train_loss, val_loss, val_excess, seconds) and
    TensorBoard scalars ``fit/<net>/<figure>`` by epoch."""
    def log(net: str, epoch: int, figures: dict) -> None:
        metrics.record(f"fit/{net}", epoch, figures, net=net, epoch=epoch)
    return log


def _shares(text: str) -> dict[str, float]:
    """``--shares``'s "class=fraction,..." as a dict; ValueError names a malformed entry."""
    out = {}
    for kv in text.split(","):
        k, sep, v = kv.partition("=")
        try:
            if not sep:
                raise ValueError
            out[k.strip()] = float(v)
        except ValueError:
            raise ValueError(f"--shares: {kv!r} is not class=fraction") from None
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--teacher", required=True)
    ap.add_argument("--co-teachers", nargs="+", default=[],
                    help="checkpoints whose labels of the same afterstates are averaged with the "
                         "teacher's (an ensemble teacher; the sample, rivals and warm nets are the teacher's)")
    ap.add_argument("--variant", default="backgammon")
    ap.add_argument("--runs", nargs="+", default=[], help="search-target runs whose label chunks are pooled")
    ap.add_argument("--sample", type=int, default=0,
                    help="> 0: also this many fresh afterstates of the teacher's own self-play")
    ap.add_argument("--shares", default="contact=0.5,crashed=0.2,race=0.3",
                    help="--sample's split by class")
    ap.add_argument("--epsilon", type=float, default=0.05, help="--sample's exploration")
    ap.add_argument("--keep", type=float, default=0.5, help="--sample: each played afterstate kept with this chance")
    ap.add_argument("--cache", required=True)
    ap.add_argument("--plies", type=int, default=1)
    ap.add_argument("--limit", type=int, default=0, help="at most this many afterstates (0: all)")
    ap.add_argument("--candidates", type=int, default=1,
                    help="> 1: add the best this many plays (0 ply) of --decisions decisions")
    ap.add_argument("--decisions", type=int, default=300000)
    ap.add_argument("--threshold", type=float, default=0.1)
    ap.add_argument("--hidden", default="512")
    ap.add_argument("--activation", default=None)
    ap.add_argument("--warm", action="store_true",
                    help="fine-tune all of --nets at their own size (lr 2e-4); --hidden is then unused")
    ap.add_argument("--nets", default="contact,crashed")
    ap.add_argument("--warm-nets", default="",
                    help="fine-tune these of --nets (their own size, lr 2e-4), the others new with --hidden")
    ap.add_argument("--learning-rate", type=float, default=None, help="default 1e-3 (new nets)")
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--max-epochs", type=int, default=60)
    ap.add_argument("--patience", type=int, default=4)
    ap.add_argument("--lr-halvings", type=int, default=0,
                    help="on a plateau, back to the best weights with half the learning rate, this many times")
    ap.add_argument("--validation", type=float, default=0.02)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    if not a.runs and a.sample <= 0:
        ap.error("give --runs, --sample or both")
    teacher = load_evaluator(a.teacher, a.variant)
    names = class_names(teacher.variant)
    nets = a.nets.split(",")
    warm_nets = nets if a.warm else [n for n in a.warm_nets.split(",") if n]
    try:
        shares = _shares(a.shares)
    except ValueError as e:
        ap.error(str(e))
    for flag, keys in (("--nets", nets), ("--warm-nets", warm_nets), ("--shares", list(shares))):
        unknown = [k for k in keys if k not in names]
        if unknown:
            ap.error(f"{flag}: unknown position class {', '.join(unknown)} "
                     f"(the classes of {teacher.variant}: {', '.join(names)})")
    if not set(warm_nets) <= set(nets):
        ap.error("--warm-nets: every net named must also be in --nets")
    with open(a.teacher, "rb") as f:
        data = f.read()
    parts = [pooled_boards(a.runs, a.limit, a.seed)] if a.runs else []
    if a.sample > 0:
        parts.append(sampled_boards(teacher, data, a.sample, shares, a.seed, a.epsilon, a.keep, a.cache, a.jobs))
    boards, classes = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    first = _distinct(boards)
    boards, classes = boards[first], classes[first]
    mine = np.isin(classes, [names.index(c) for c in nets])     # the other classes' labels go unused
    boards, classes = boards[mine], classes[mine]
    co = []
    for path in a.co_teachers:
        with open(path, "rb") as f:
            co.append((load_evaluator(path, a.variant), f.read()))

    def ensemble_labels(rows, row_classes):
        """The teacher's labels of ``rows``, averaged with the co-teachers' (probabilities)."""
        out = teacher_labels(rows, row_classes, teacher, data, a.plies, a.cache, a.jobs)
        for ev_j, data_j in co:
            out += teacher_labels(rows, row_classes, ev_j, data_j, a.plies, a.cache, a.jobs)
        return out / (1 + len(co))

    labels = ensemble_labels(boards, classes)
    if a.candidates > 1:
        # The close rivals of decisions (training.search_targets.decision_candidates) of a
        # seeded share of the pooled afterstates join them: the plays a net must rank.
        pick = np.sort(np.random.default_rng(a.seed + 1).permutation(len(boards))[:a.decisions])
        quotas = {c: len(boards) * a.candidates for c in nets}
        cand, ccls, used = decision_candidates(teacher, boards[pick], quotas, a.candidates, a.threshold,
                                               a.seed + 2)
        both = np.concatenate([boards, cand])
        new = _distinct(both)
        new = new[new >= len(boards)] - len(boards)          # candidates not among the pooled rows
        cand, ccls = cand[new], ccls[new]
        print(f"{len(cand):,} new candidates of {used:,} decisions: "
              + ", ".join(f"{c} {int(np.sum(ccls == names.index(c))):,}" for c in quotas), flush=True)
        clab = ensemble_labels(cand, ccls)
        boards, classes = np.concatenate([boards, cand]), np.concatenate([classes, ccls])
        labels = np.concatenate([labels, clab])
    torch.set_num_threads(a.threads)
    ev = as_netset(teacher)
    with MetricsLog(os.path.dirname(os.path.abspath(a.out))) as metrics:
        log = fit_logger(metrics)
        fitted = refit_nets(ev, boards, classes, labels, [n for n in nets if n not in warm_nets], a,
                            scratch=True, log=log)
        if warm_nets:
            fitted.update(refit_nets(ev, boards, classes, labels, warm_nets,
                                     argparse.Namespace(**{**vars(a), "hidden": None, "activation": None}),
                                     scratch=False, log=log))
    report = {"variant": a.variant, "teacher": a.teacher, "plies": a.plies, "runs": a.runs,
              "sample": a.sample, "rows": int(len(boards)), "args": vars(a), "nets": fitted}
    save_fitted(a.out, ev, 0, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
