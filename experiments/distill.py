"""Fit bigger nets from scratch on a teacher's search labels of many positions (issue #11).

A warm-started 256-unit net fitted to its own 2-ply labels stays where it is (the held-out
excess, a KL divergence, stuck at 3.0e-4 however long the fit: experiments/fit_aggregate.py,
session 8).  This script tests whether the net's size is the limit: it pools the afterstates
of search-target runs (``--runs``: every ``generations/NNN/samples.npz`` or label chunk),
labels them with the teacher's n-ply expectimax (``--plies``, 1 by default: noise-free and
cheap) on ``--jobs`` processes, caching the labels chunk by chunk under ``--cache`` (a killed
run resumes there), and fits the teacher's class nets named by ``--nets`` again, from scratch,
with ``--hidden`` layers (or fine-tunes them, ``--warm``).  The other members (by default the
race net and the bear-off database) stay the teacher's.  The result is a checkpoint for
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
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from experiments.fit_aggregate import refit_nets, save_fitted          # noqa: E402
from nardy_ai.backends import make_backend                            # noqa: E402
from nardy_ai.files import write_atomic                               # noqa: E402
from nardy_ai.model import n_outputs                                  # noqa: E402
from nardy_ai.netset import as_netset, load_evaluator                 # noqa: E402
from training.search_targets import (_distinct, decision_candidates, label_chunk,  # noqa: E402
                                     label_tasks, read_npz)


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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--teacher", required=True)
    ap.add_argument("--variant", default="backgammon")
    ap.add_argument("--runs", nargs="+", required=True)
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
                    help="fine-tune the teacher's nets (lr 2e-4) where --hidden and --activation are theirs")
    ap.add_argument("--nets", default="contact,crashed")
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
    boards, classes = pooled_boards(a.runs, a.limit, a.seed)
    teacher = load_evaluator(a.teacher, a.variant)
    with open(a.teacher, "rb") as f:
        data = f.read()
    labels = teacher_labels(boards, classes, teacher, data, a.plies, a.cache, a.jobs)
    if a.candidates > 1:
        # The close rivals of decisions (training.search_targets.decision_candidates) of a
        # seeded share of the pooled afterstates join them: the plays a net must rank.
        from nardy_ai.classes import class_names
        names = class_names(teacher.variant)
        pick = np.sort(np.random.default_rng(a.seed + 1).permutation(len(boards))[:a.decisions])
        quotas = {c: len(boards) * a.candidates for c in a.nets.split(",")}
        cand, ccls, used = decision_candidates(teacher, boards[pick], quotas, a.candidates, a.threshold,
                                               a.seed + 2)
        both = np.concatenate([boards, cand])
        new = _distinct(both)
        new = new[new >= len(boards)] - len(boards)          # candidates not among the pooled rows
        cand, ccls = cand[new], ccls[new]
        print(f"{len(cand):,} new candidates of {used:,} decisions: "
              + ", ".join(f"{c} {int(np.sum(ccls == names.index(c))):,}" for c in quotas), flush=True)
        clab = teacher_labels(cand, ccls, teacher, data, a.plies, a.cache, a.jobs)
        boards, classes = np.concatenate([boards, cand]), np.concatenate([classes, ccls])
        labels = np.concatenate([labels, clab])
    torch.set_num_threads(a.threads)
    ev = as_netset(teacher)
    report = {"variant": a.variant, "teacher": a.teacher, "plies": a.plies, "runs": a.runs,
              "rows": int(len(boards)),
              "nets": refit_nets(ev, boards, classes, labels, a.nets.split(","), a, scratch=not a.warm)}
    save_fitted(a.out, ev, 0, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
