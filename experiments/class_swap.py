"""How much would a class net of gnubg's quality buy?  Plays an evaluator whose afterstates of
the classes ``--classes`` (default race) are valued by gnubg 0-ply (the other classes by a net set,
the bear-off class by our database unless named) against gnubg 0-ply, and the net set itself
against gnubg 0-ply on the same dice (duplicate pairs, the same seeds), and prints both scores and
their paired difference::

    python experiments/class_swap.py td:bg-champion --pairs 4000 --seeds 40 41 --out F.json
    python experiments/class_swap.py td:bg-champion --classes crashed --seeds 40 41 --out G.json

An upper bound, not a recipe: gnubg's values are mixed into a decision beside our other nets'
values (a real net would be fitted to agree with them).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from nardy_ai.agents.gnubg_agent import GnubgAgent, GnubgEvaluator
from nardy_ai.agents.neural import NeuralAgent
from nardy_ai.classes import class_names, position_classes
from nardy_ai.errors import NardyError
from nardy_ai.evaluator import load_evaluator
from nardy_ai.files import write_atomic
from nardy_ai.game import play_games
from nardy_ai.machine import machine_description
from nardy_ai.model import n_outputs
from nardy_ai.variants import get_variant


class ClassesFrom:
    """``base``'s probabilities, with the afterstates of ``classes`` valued by ``other``."""

    def __init__(self, base, other, classes=("race",)):
        self.base, self.race, self.variant = base, other, base.variant
        self.ids = [class_names(self.variant).index(c) for c in classes]

    def probabilities(self, afterstates: np.ndarray) -> np.ndarray:
        out = np.asarray(self.base.probabilities(afterstates), np.float64).copy()
        rows = np.flatnonzero(np.isin(position_classes(afterstates, self.variant), self.ids))
        if len(rows):
            out[rows] = self.race.probabilities(afterstates[rows])[:, :n_outputs(self.variant)]
        return out


def duplicate(v, a, b, pairs: int, seed: int) -> np.ndarray:
    """Points per duplicate pair for ``a`` (the mean of its two seats on the same dice)."""
    white = play_games(v, (a, b), pairs, seed=seed, record=False)
    black = play_games(v, (b, a), pairs, seed=seed, record=False)
    return np.array([(r1.points * (1 if r1.winner == 0 else -1) + r2.points * (1 if r2.winner == 1 else -1)) / 2
                     for r1, r2 in zip(white, black)])


def interval(x: np.ndarray) -> list[float]:
    half = 1.96 * x.std(ddof=1) / np.sqrt(len(x))
    return [round(float(x.mean() - half), 4), round(float(x.mean() + half), 4)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("net", help="a td: spec or checkpoint path (the net set)")
    ap.add_argument("--pairs", type=int, default=4000, help="duplicate pairs per seed")
    ap.add_argument("--seeds", type=int, nargs="+", default=[40])
    ap.add_argument("--classes", default="race", help="classes valued by gnubg, comma-separated (default race)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    v = get_variant("backgammon")
    try:
        base = load_evaluator(args.net[3:] if args.net.startswith("td:") else args.net, v)
        classes = args.classes.split(",")
        bad = [c for c in classes if c not in class_names(v)]
        if bad:
            raise NardyError(f"--classes: {', '.join(bad)} is not a class of backgammon ({', '.join(class_names(v))})")
        hybrid = ClassesFrom(base, GnubgEvaluator(v, 0), classes)
    except NardyError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    gnubg = GnubgAgent(0)
    plain_agent, hybrid_agent = NeuralAgent(base, name="net"), NeuralAgent(hybrid, name=f"net+gnubg {args.classes}")
    res = {"net": args.net, "classes_from_gnubg": classes, "pairs_per_seed": args.pairs, "seeds": args.seeds, "machine": machine_description(),
           "per_seed": []}
    plain_all, hybrid_all = [], []
    for s in args.seeds:
        t0 = time.time()
        p = duplicate(v, plain_agent, gnubg, args.pairs, s)
        h = duplicate(v, hybrid_agent, gnubg, args.pairs, s)
        plain_all.append(p)
        hybrid_all.append(h)
        row = {"seed": s, "net": round(float(p.mean()), 4), "with_gnubg_values": round(float(h.mean()), 4),
               "difference": round(float((h - p).mean()), 4), "difference_ci95": interval(h - p),
               "minutes": round((time.time() - t0) / 60, 1)}
        res["per_seed"].append(row)
        print(json.dumps(row), flush=True)
    p, h = np.concatenate(plain_all), np.concatenate(hybrid_all)
    res.update(games=2 * len(p), net_ppg=round(float(p.mean()), 4), net_ci95=interval(p),
               with_gnubg_values_ppg=round(float(h.mean()), 4), with_gnubg_values_ci95=interval(h),
               difference=round(float((h - p).mean()), 4), difference_ci95=interval(h - p),
               pairs_that_differ=int(np.sum(h != p)))
    write_atomic(args.out, json.dumps(res, indent=1) + "\n")
    print(json.dumps({k: v for k, v in res.items() if k != "per_seed"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
