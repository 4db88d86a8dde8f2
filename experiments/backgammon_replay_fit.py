"""Fit 256-unit contact and crashed nets on the labels of many search-target generations at once
(issue #11 experiment).

Why: fitted to one generation's 1-ply labels at a time, the 128-unit nets level off (validation
excess ~0.00036 for contact) and 2-ply labels do not lower it; 256-unit nets fitted to one
generation's 300,000 afterstates fit better (0.00030) but did not play better in the gate.  Here
the wide nets see every labelled afterstate the earlier runs wrote (2.3 M, labelled by the
evaluators current then), in two passes.  The pipeline's own form of this is `[fit] history`.

Needs the label chunks of these runs (gitignored; each recipe reproduces its labels for its
seed): experiments/backgammon_search_targets.toml (generations 5-12),
experiments/backgammon_search_targets_2ply.toml (1-2) and
experiments/backgammon_search_targets_wide.toml (1, run with --out runs/bg_st_wide), the others with
--out checkpoints/backgammon/<run> as their recipes say.

    python experiments/backgammon_replay_fit.py [--out runs/bg_replay]

The shipped checkpoints/backgammon/search_targets_replay/current.pt was made this way (validation
excess, contact 0.00036 -> 0.00026, crashed 0.00080 -> 0.00054).  Result (2026-11-30): +0.0245
[+0.004, +0.045] against its start and +0.017 [+0.002, +0.031] against
search_targets generation 12 (duplicate dice, 10,000 and 20,000 games), v2 bench 2.86 mp
(generation 12: 3.78), but against gnubg 0-ply -0.058 [-0.096, -0.020] (4,000 games;
generation 12: -0.035 [-0.073, +0.003]): no measurable gain against gnubg.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
import types

import numpy as np
import torch


from nardy_ai.model import save_checkpoint  # noqa: E402
from nardy_ai.evaluator import evaluator_from_state  # noqa: E402
from nardy_ai.netset import as_netset  # noqa: E402
from nardy_ai.variants import get_variant  # noqa: E402
from training.config import load_config  # noqa: E402
from training.search_targets import fit_net, gate_match, initial_evaluator, read_npz  # noqa: E402

SOURCES = ([f"checkpoints/backgammon/search_targets/generations/{g:03d}" for g in range(5, 13)]
           + [f"checkpoints/backgammon/search_targets_2ply/generations/{g:03d}" for g in (1, 2)]
           + ["runs/bg_st_wide/generations/001"])
#: (learning rate, max epochs): the second pass continues from the first's weights.
PASSES = ((0.0005, 12), (0.0003, 25))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="runs/bg_replay")
    p.add_argument("--gate-games", type=int, default=10000)
    args = p.parse_args()
    torch.set_num_threads(1)
    v = get_variant("backgammon")
    cfg, _ = load_config("experiments/backgammon_search_targets_wide.toml")
    start = initial_evaluator(cfg, v, "cpu")            # the 2-ply run's nets, widened to 256
    files = [f for d in SOURCES for f in sorted(glob.glob(os.path.join(d, "labels", "chunk_*.npz")))]
    if not files:
        raise SystemExit("no label chunks found: run the recipes named in the docstring first")
    parts = [read_npz(f) for f in files]
    boards = np.concatenate([z["boards"] for z in parts])
    labels = np.concatenate([z["labels"] for z in parts])
    classes = np.concatenate([z["classes"] for z in parts])
    print(f"{len(files)} chunks, {len(boards):,} labelled afterstates", flush=True)
    cand = evaluator_from_state(start.state(), v, "cpu")
    log = []
    for lr, epochs in PASSES:
        fit = types.SimpleNamespace(learning_rate=lr, batch_size=512, max_epochs=epochs, patience=2,
                                    validation=0.03)
        for label, member, rows in as_netset(cand).route(boards, classes):
            if label not in ("contact", "crashed"):
                continue
            t0 = time.time()
            r = fit_net(member, member.encoder(boards[rows]), labels[rows], fit, 7,
                        lambda e, tl, vl, ve: print(f"{label} lr {lr} epoch {e}: validation excess "
                                                    f"{ve:.6f} ({time.time() - t0:.0f} s)", flush=True))
            log.append({"net": label, "learning_rate": lr, "rows": int(len(rows)), **r})
    os.makedirs(args.out, exist_ok=True)
    save_checkpoint(os.path.join(args.out, "current.pt"),
                    {"kind": "search_targets", "evaluator": cand.state(), "fit": log,
                     "sources": SOURCES, "config": cfg.to_dict()})
    res = gate_match(cand, start, args.gate_games, 99)
    summary = {"fit": log, "gate_vs_start": {k: res[k] for k in ("games", "points_per_game", "points_per_game_ci95")}}
    with open(os.path.join(args.out, "fit.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary["gate_vs_start"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
