"""Fit a net set on the labels of many generations of a search-targets run at once (issue #11).

A run fits each generation on its own labels (and ``fit.history`` earlier ones), warm-started.
This script pools the labelled afterstates of generations ``--generations A-B`` of a run folder
(every ``generations/NNN/labels/chunk_*.npz`` on disk) and fits the nets of the run's current
evaluator again, either warm-started (``--hidden`` omitted or equal to the member's) or from
scratch with other hidden layers (``--hidden 512`` or ``--hidden 256,128``; ``--activation``).
The race net and the bear-off database stay as they are.  The result is a checkpoint that
``td:PATH`` agents read; the fit's losses go to ``PATH.json``.  Gate and measure it as usual::

    python experiments/fit_aggregate.py --run checkpoints/backgammon/search_targets_rollout \
        --generations 1-9 --hidden 256 --out /tmp/agg.pt --threads 1
    nardy tournament ... / training.search_targets.gate_match

Labels of different generations come from different (successive) nets: pooling them is the
"dataset aggregation" of imitation learning; each row is a noisy rollout estimate of its
afterstate's outcome probabilities under the net of its time.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
from types import SimpleNamespace

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from nardy_ai.model import NeuralEvaluator, save_checkpoint          # noqa: E402
from nardy_ai.netset import as_netset, load_evaluator                 # noqa: E402
from training.search_targets import fit_net, read_npz                 # noqa: E402


def pooled_labels(run: str, first: int, last: int):
    """Boards, classes and labels of every label chunk of generations first..last."""
    parts = []
    for g in range(first, last + 1):
        for path in sorted(glob.glob(os.path.join(run, "generations", f"{g:03d}", "labels", "chunk_*.npz"))):
            z = read_npz(path)
            parts.append((z["boards"], z["classes"], z["labels"]))
    if not parts:
        raise SystemExit(f"no label chunks under {run}/generations for {first}-{last}")
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


def refit_nets(ev, boards, classes, labels, wanted, a, scratch: bool, log=None) -> dict:
    """Fit the neural members of net set ``ev`` named in ``wanted`` on their rows of
    ``boards``/``labels`` (in place), with the options ``a`` (``hidden``, ``activation``,
    ``learning_rate``, ``batch_size``, ``max_epochs``, ``patience``, ``lr_halvings``,
    ``validation``, ``seed``):
    warm-started when ``hidden`` and ``activation`` are the member's and not ``scratch``,
    otherwise a new net (lr 2e-4 warm, 1e-3 new unless given).  ``log(label, epoch, figures)``,
    when given, is called after every epoch (TensorBoard / JSONL).  Returns the fit figures by net."""
    out = {}
    for label, member, rows in list(ev.route(boards, classes)):
        if label not in wanted or not isinstance(member, NeuralEvaluator):
            continue
        hidden = tuple(int(h) for h in a.hidden.split(",")) if a.hidden else tuple(member.hidden)
        activation = a.activation or member.activation
        warm = not scratch and hidden == tuple(member.hidden) and activation == member.activation
        if not warm:
            torch.manual_seed(a.seed)
            member = NeuralEvaluator.create(ev.variant, member.encoder.name, hidden, activation)
            ev.members[label] = member
        lr = a.learning_rate or (2e-4 if warm else 1e-3)
        fit = SimpleNamespace(learning_rate=lr, batch_size=a.batch_size, max_epochs=a.max_epochs,
                              patience=a.patience, validation=a.validation,
                              lr_halvings=getattr(a, "lr_halvings", 0))
        x = member.encoder(boards[rows])
        t0 = time.time()

        def on_epoch(epoch, train_loss, val_loss, excess, label=label, t0=t0):
            print(f"{label} epoch {epoch}: train {train_loss:.5f} val {val_loss:.5f} excess {excess:.6f} "
                  f"({time.time() - t0:.0f} s)", flush=True)
            if log is not None:
                log(label, epoch, {"train_loss": train_loss, "val_loss": val_loss, "val_excess": excess,
                                   "seconds": time.time() - t0})

        res = fit_net(member, x, labels[rows], fit, a.seed, on_epoch)
        res.update(hidden=list(hidden), activation=activation, warm=warm, learning_rate=lr,
                   seconds=time.time() - t0, rows=int(len(rows)))
        out[label] = res
        print(label, json.dumps(res), flush=True)
    return out


def save_fitted(out: str, ev, generation: int, report: dict) -> None:
    """The refitted net set as a checkpoint ``out`` (``td:`` agents, ``init_from``) and the
    report as ``out.json``."""
    save_checkpoint(out, {"kind": "search_targets", "evaluator": ev.state(), "generation": generation,
                          "fit": report["nets"]})
    with open(out + ".json", "w") as f:
        json.dump(report, f, indent=1)
    print(f"wrote {out}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", required=True, help="search-targets run folder")
    ap.add_argument("--generations", default="1-9", help="A-B: the generations whose labels are pooled")
    ap.add_argument("--start", default=None, help="checkpoint to start from (default RUN/current.pt)")
    ap.add_argument("--hidden", default=None, help="hidden layers of the fitted nets, e.g. 512 or 256,128 "
                                                   "(default: the start's, warm-started)")
    ap.add_argument("--activation", default=None)
    ap.add_argument("--nets", default="contact,crashed", help="which class nets to fit")
    ap.add_argument("--learning-rate", type=float, default=None,
                    help="default 2e-4 warm-started, 1e-3 from scratch")
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--max-epochs", type=int, default=40)
    ap.add_argument("--patience", type=int, default=3)
    ap.add_argument("--lr-halvings", type=int, default=0,
                    help="on a plateau, back to the best weights with half the learning rate, this many times")
    ap.add_argument("--validation", type=float, default=0.03)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    first, last = (int(s) for s in a.generations.split("-"))
    start = a.start or os.path.join(a.run, "current.pt")
    ev = as_netset(load_evaluator(start, "backgammon"))
    boards, classes, labels = pooled_labels(a.run, first, last)
    print(f"{len(boards):,} labelled afterstates from generations {first}-{last}", flush=True)
    wanted = set(a.nets.split(","))
    report = {"run": a.run, "generations": [first, last], "start": start, "rows": int(len(boards)),
              "nets": refit_nets(ev, boards, classes, labels, wanted, a, scratch=False)}
    save_fitted(a.out, ev, last, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
