"""How good are search-target labels as decisions? (issue #11 diagnostic)

A net fitted to labels can at best choose as well as the labels themselves.  This script takes
an evaluator position set (default the variant's shipped one: backgammon v2, every legal play
of 1,200 decisions with gnubg 2-ply equities; long v3, rollouts by the long champion), labels
every afterstate of the chosen classes' decisions with a label procedure, plays the
best-labelled afterstate, and reports the equity lost per decision (milli-points, against the
set's stored reference) per class, as ``nardy bench evaluators`` does for agents.  With
``--filter K`` only the evaluator's best K plays at 0 ply (and those within 0.16 of the best)
are labelled and chosen from, as a search's move filter does (and as a round's rivals are
picked): deep labels then cost K rows a decision.  Procedures (``--kind``, repeatable):

- ``0ply``: the evaluator itself;
- ``1ply``, ``2ply``, ``3ply``: its n-ply expectimax (:func:`nardy_ai.search.search_values`,
  split over ``--jobs`` processes);
- ``rolloutG/T``: G games truncated after T plies of the evaluator's 0-ply play (the labels
  of ``label.kind = "rollout"``); all afterstates share the dice (the rollout's duplicate dice),
  so this is the labels' ranking with the luck shared, an upper bound on what independent
  noisy labels give a fit;
- ``rolloutG/T@1ply``: the same with the plays of the rollout chosen at 1 ply.

    python experiments/label_quality.py --checkpoint checkpoints/backgammon/search_targets_rollout72/current.pt \
        --kind 0ply --kind 1ply --kind rollout72/7 --classes contact,crashed --jobs 2
    python experiments/label_quality.py --variant long --checkpoint checkpoints/long/distill_twoply/current.pt \
        --kind 0ply --kind 1ply --kind 2ply --kind 3ply --classes contact --filter 5 --limit 150 --jobs 2
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np


from nardy_ai.backends import make_backend                     # noqa: E402
from nardy_ai.bench.evaluators import class_figures, load_evaluator_positions, reference_rows  # noqa: E402
from nardy_ai.classes import class_names, position_classes      # noqa: E402
from nardy_ai.model import equity                               # noqa: E402
from nardy_ai.movegen import generate                           # noqa: E402
from nardy_ai.evaluator import load_evaluator                   # noqa: E402
from nardy_ai.search import search_values                       # noqa: E402


def _search_part(task):
    index, checkpoint, variant, boards, plies = task
    import torch
    torch.set_num_threads(1)
    return index, search_values(boards, load_evaluator(checkpoint, variant), plies)


def label(kind: str, boards: np.ndarray, checkpoint: str, ev, backend, seed: int) -> np.ndarray:
    """Outcome probabilities ``(M, K)`` of afterstates ``boards`` by procedure ``kind``."""
    variant = ev.variant.id
    if kind.endswith("ply") and not kind.startswith("rollout"):
        plies = int(kind[:-3])
        if backend is None or plies < 2:
            return search_values(boards, ev, plies)
        step = 8 if plies == 3 else 256                 # small tasks: the processes stay busy
        tasks = [(i, checkpoint, variant, boards[lo:lo + step], plies)
                 for i, lo in enumerate(range(0, len(boards), step))]
        parts = dict(result for _, result in backend.run(_search_part, tasks))
        return np.concatenate([parts[i] for i in range(len(tasks))])
    from nardy_ai.rollout import rollout
    spec, _, play = kind[len("rollout"):].partition("@")
    games, truncate = (int(s) for s in spec.split("/"))
    agent = f"td:{checkpoint}" + (f"@{play}" if play else "")
    res = rollout(boards, variant, agent, games=games, truncate=truncate, seed=seed,
                  on_roll=False, backend=backend, chunk=min(games, 324))
    return res.probs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variant", default="backgammon")
    ap.add_argument("--positions", default=None, help="a set file (default: the variant's shipped set)")
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--kind", action="append", required=True)
    ap.add_argument("--classes", default="contact,crashed")
    ap.add_argument("--limit", type=int, default=0, help="at most this many decisions per class (0: all)")
    ap.add_argument("--filter", type=int, default=0, help="label only the best K plays at 0 ply (0: all)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None, help="JSON file for the figures")
    a = ap.parse_args(argv)
    pset = load_evaluator_positions(a.variant, a.positions)
    names = class_names(pset.variant)
    cls = position_classes(pset.positions, pset.variant)
    wanted = [names.index(c) for c in a.classes.split(",")]
    keep = np.zeros(len(cls), bool)
    for c in wanted:
        idx = np.flatnonzero(cls == c)
        keep[idx[:a.limit] if a.limit else idx] = True
    after = generate(pset.positions, pset.dice, pset.variant, notation=True)
    ref = reference_rows(pset, after)
    pos = np.flatnonzero(keep)
    sub = generate(pset.positions[pos], pset.dice[pos], pset.variant)
    lo, hi = after.offsets[pos], after.offsets[pos + 1]
    rows = np.concatenate([np.arange(a_, b_) for a_, b_ in zip(lo, hi)])
    assert np.array_equal(after.boards[rows], sub.boards)
    ref_sub = ref[rows]
    best = np.maximum.reduceat(ref_sub, sub.offsets[:-1])
    ev = load_evaluator(a.checkpoint, a.variant)
    if a.filter:                    # the evaluator's 0-ply move filter: K plays within 0.16
        from nardy_ai.search import MoveFilter, filter_candidates
        eq0 = equity(search_values(sub.boards, ev, 0), pset.variant)
        kept = filter_candidates(eq0, sub.offsets, np.ones(len(eq0), bool), MoveFilter(a.filter, 0.16))
        counts = np.add.reduceat(kept.astype(np.int64), sub.offsets[:-1])
        offsets = np.r_[0, np.cumsum(counts)]
        boards, ref_kept = sub.boards[kept], ref_sub[kept]
    else:
        offsets, boards, ref_kept = sub.offsets, sub.boards, ref_sub
    backend = make_backend("local", a.jobs) if a.jobs > 1 else None
    print(f"{len(pos)} decisions, {len(rows)} afterstates, {len(boards)} labelled", flush=True)
    report = {"variant": pset.variant.id, "set": pset.header.get("reference"), "set_version": pset.header["version"],
              "checkpoint": a.checkpoint, "decisions": int(len(pos)), "afterstates": int(len(rows)),
              "filter": a.filter, "labelled": int(len(boards)), "kinds": {}}
    for kind in a.kind:
        t0 = time.time()
        p = label(kind, boards, a.checkpoint, ev, backend, a.seed)
        eq = equity(p, pset.variant)
        chosen = np.array([o + int(np.argmax(eq[o:e])) for o, e in zip(offsets[:-1], offsets[1:])])
        loss = best - ref_kept[chosen]
        figs = class_figures(loss, cls[pos], names)
        report["kinds"][kind] = {"loss_mp": 1000 * float(loss.mean()), "seconds": time.time() - t0,
                                 "classes": {n: figs[n] for n in a.classes.split(",")}}
        per = "  ".join(f"{n} {figs[n]['loss_mp']:.2f}" for n in a.classes.split(","))
        print(f"{kind:>18}: {1000 * loss.mean():.2f} mp/decision ({per})  {time.time() - t0:.0f} s", flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(report, f, indent=1)
    if backend is not None:
        backend.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
