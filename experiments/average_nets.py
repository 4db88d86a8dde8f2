"""Average the weights of successive generations' nets and gate the average (issue #11).

The search-targets generations of a run are warm-started fits of one net to noisy labels
(rollout labels: ~0.04 standard error per output), so successive nets differ by a step of
fitted noise around a common basin.  Averaging their weights (as stochastic weight averaging
and checkpoint averaging do) keeps one net of the same size and cost and cancels part of that
noise.  This script averages the chosen class nets of several checkpoints of one architecture
(the other classes come from the first checkpoint), writes the result as a ``td:PATH``
checkpoint and, with ``--gate``, plays it against a reference in duplicate-dice pairs at 0 ply
(:func:`training.search_targets.gate_match`)::

    python experiments/average_nets.py --nets contact,crashed --out /tmp/avg.pt \
        --gate experiments/training/backgammon_search_targets_rollout72/current.pt --games 10000 \
        checkpoints/backgammon/search_targets_rollout/current.pt \
        experiments/training/backgammon_search_targets_rollout72/generations/00{2,3,4}/candidate.pt

``--weights`` gives each checkpoint's share (default equal).  The gate's result and the inputs
are written to ``OUT.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch


from nardy_ai.model import save_checkpoint                      # noqa: E402
from nardy_ai.evaluator import load_evaluator                   # noqa: E402
from nardy_ai.netset import as_netset                           # noqa: E402
from training.search_targets import gate_match                  # noqa: E402


def average_sets(paths: list[str], variant: str, nets: set[str], weights: list[float]):
    """The net set of ``paths[0]`` with the ``nets`` members' weights replaced by the weighted
    mean over every checkpoint (same hidden layers required)."""
    sets = [as_netset(load_evaluator(p, variant)) for p in paths]
    base = sets[0]
    total = sum(weights)
    for label, member in base.nets().items():
        if label not in nets:
            continue
        states = [s.nets()[label].net.state_dict() for s in sets]
        shapes = {k: v.shape for k, v in states[0].items()}
        for p, st in zip(paths, states):
            if {k: v.shape for k, v in st.items()} != shapes:
                raise SystemExit(f"{p}: the {label} net has other layers than {paths[0]}'s")
        mean = {k: sum(w * st[k].double() for w, st in zip(weights, states)) / total for k in shapes}
        member.net.load_state_dict({k: v.to(states[0][k].dtype) for k, v in mean.items()})
    return base


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoints", nargs="+")
    ap.add_argument("--variant", default="backgammon")
    ap.add_argument("--nets", default="contact,crashed")
    ap.add_argument("--weights", default=None, help="comma-separated shares, one per checkpoint")
    ap.add_argument("--out", required=True)
    ap.add_argument("--gate", default=None, help="reference checkpoint to play against")
    ap.add_argument("--games", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    weights = [float(w) for w in a.weights.split(",")] if a.weights else [1.0] * len(a.checkpoints)
    if len(weights) != len(a.checkpoints):
        raise SystemExit("--weights: one share per checkpoint")
    ev = average_sets(a.checkpoints, a.variant, set(a.nets.split(",")), weights)
    save_checkpoint(a.out, {"kind": "search_targets", "evaluator": ev.state(),
                            "averaged": {"checkpoints": a.checkpoints, "weights": weights, "nets": a.nets}})
    report = {"checkpoints": a.checkpoints, "weights": weights, "nets": a.nets, "out": a.out}
    if a.gate:
        t0 = time.time()
        ref = load_evaluator(a.gate, a.variant)
        res = gate_match(ev, ref, a.games, a.seed)
        report["gate"] = {"reference": a.gate, "games": a.games, "seed": a.seed,
                          "seconds": time.time() - t0, **res}
        print(f"averaged vs {a.gate}: {res['points_per_game']:+.4f} "
              f"[{res['points_per_game_ci95'][0]:+.4f}, {res['points_per_game_ci95'][1]:+.4f}] "
              f"over {a.games} games ({time.time() - t0:.0f} s)")
    with open(a.out + ".json", "w") as f:
        json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
