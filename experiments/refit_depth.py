"""Refit a finished distillation round's nets on the same labelled rows with other hidden layers.

A depth (or width) comparison on equal rows and labels: reads round ``--round``'s labelled
afterstates from a ``nardy train`` distillation run folder (``rounds/NN/labels/chunk_*.npz``:
boards, classes, labels, in chunk order; every chunk of the round's sample must be there), starts from the round's teacher (the run's
``[model] init_from``, or the previous round's net) and refits ``--nets`` with ``--hidden`` by
the round's own fit settings and seed (:func:`training.distill.fit_student`), then writes the
net as a ``td:`` checkpoint and its fit figures (held-out excess, epochs, minutes) to ``OUT.json``::

    python experiments/refit_depth.py RUN --hidden 512,512,512 --out /tmp/deep3.pt
    python experiments/refit_depth.py RUN --hidden 512,512 --activation elu --rows 600000 \
        --nets contact --max-epochs 30 --out /tmp/elu.pt       # a quicker probe on a subset

With the round's own hidden layers it reproduces the round's fit (same rows, same seed).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

from nardy_ai.errors import NardyError
from nardy_ai.evaluator import load_evaluator
from nardy_ai.files import write_atomic
from nardy_ai.machine import machine_description
from nardy_ai.model import save_checkpoint
from nardy_ai.netset import as_netset
from training.config import load_config
from training.distill import SEED_FIT, fit_student
from training.run import label_chunk_paths
from training.search_targets import derive_seed, read_label_chunks, read_npz


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a distillation run folder whose round has its labels")
    ap.add_argument("--round", type=int, default=1)
    ap.add_argument("--hidden", required=True, help="hidden layer sizes, e.g. 512,512,512")
    ap.add_argument("--nets", default=None, help="classes to refit (default: the round's fit.nets)")
    ap.add_argument("--activation", default=None, help="hidden activation of the new nets (sigmoid, relu, "
                    "tanh, elu; default: the round's)")
    ap.add_argument("--rows", type=int, default=0, help="fit on a seeded random subset of this many of the "
                    "round's rows (default: all): a quicker probe")
    ap.add_argument("--max-epochs", type=int, default=0, help="epoch limit (default: the round's)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (default: the run's)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    try:
        cfg, _ = load_config(os.path.join(args.run, "config.toml"))
        r = args.round
        if not 1 <= r <= len(cfg.rounds):
            raise NardyError(f"--round {r}: the run has rounds 1 to {len(cfg.rounds)}")
        ft = cfg.rounds[r - 1].fit
        hidden = [int(h) for h in args.hidden.split(",")]
        ft = dataclasses.replace(ft, hidden=hidden, nets=args.nets.split(",") if args.nets else ft.nets,
                                 activation=args.activation or ft.activation,
                                 max_epochs=args.max_epochs or ft.max_epochs)
        teacher = (cfg.model.init_from if r == 1
                   else os.path.join(args.run, "rounds", f"{r - 1:02d}", "candidate.pt"))
        folder = os.path.join(args.run, "rounds", f"{r:02d}")
        if not os.path.exists(os.path.join(folder, "labels")):
            raise NardyError(f"{args.run}: round {r} has no label chunks")
        # the label files the round's sample needs, named as the run names them
        n, chunk = len(read_npz(os.path.join(folder, "samples.npz"))["boards"]), cfg.rounds[r - 1].label.chunk
        paths = label_chunk_paths(folder, n, chunk)
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            raise NardyError(f"{args.run}: round {r}'s labels are incomplete ({len(missing)} of "
                             f"{len(paths)} chunks missing, e.g. {missing[0]})")
        boards, classes, labels = read_label_chunks(paths)
        if args.rows and args.rows < len(boards):
            import numpy as np
            pick = np.sort(np.random.default_rng(derive_seed(cfg.seed, SEED_FIT, r, 1)).permutation(len(boards))[:args.rows])
            boards, classes, labels = boards[pick], classes[pick], labels[pick]
    except (NardyError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    import torch
    torch.set_num_threads(args.threads or cfg.run.threads or 1)
    netset = as_netset(load_evaluator(teacher, cfg.variant))
    t0 = time.time()
    stats = fit_student(netset, boards, classes, labels, ft, derive_seed(cfg.seed, SEED_FIT, r),
                        on_epoch=lambda label, epoch, tl, vl, ex: print(
                            f"{label} epoch {epoch}: train {tl:.6f} held-out {vl:.6f} excess {ex:.2e}", flush=True))
    save_checkpoint(args.out, {"evaluator": netset.state(), "refit_of": args.run, "round": r,
                               "hidden": hidden, "fit": stats})
    out = {"run": args.run, "round": r, "hidden": hidden, "activation": ft.activation or "the round's nets'",
           "rows": int(len(boards)), "teacher": teacher,
           "fit": stats, "minutes": round((time.time() - t0) / 60, 1), "machine": machine_description()}
    write_atomic(args.out + ".json", json.dumps(out, indent=1, default=float) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "fit"}, indent=1))
    for label, s in stats.items():
        if "val_excess" in s:
            print(f"{label}: held-out excess {s['val_excess']:.3e}, best epoch {s['best_epoch']} of {s['epochs']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
