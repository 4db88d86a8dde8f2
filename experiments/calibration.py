"""Calibration of an evaluator's outcome probabilities (issue #12: cube decisions rest on the
win and gammon chances).

    python experiments/calibration.py --agent checkpoints/backgammon/search_targets_distill_iter3/current.pt --games 4000

Plays ``games`` self-play games of the net at 0 ply (a run of the game driver,
:func:`nardy_ai.driver.run`, ``lockstep`` games at a time, each game's first roll by the
variant's opening rule) and, at every position of every game (the afterstate just played,
the side that moved), keeps the net's outcome probabilities and the class of the afterstate;
at the end of the game it scores each against what happened (won, won a gammon or more, lost a
gammon or more).  Per class and per tenth of predicted probability it prints the mean
prediction against the observed frequency, and the mean error (prediction minus outcome) with
its standard error.  Self-play outcomes measure the net against its own play; rollouts of a
stronger player would measure it against better play (the cube set's gnubg references are such
a check for the cube).  Without ``--agent``: the backgammon champion of the agent registry.

Writes ``experiments/results/calibration_<variant>_<run>.json``.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

from nardy_ai import core, driver, registry
from nardy_ai.classes import class_names, position_classes
from nardy_ai.files import write_atomic
from nardy_ai.model import equity
from nardy_ai.movegen import segment_argmax
from nardy_ai.evaluator import load_evaluator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class GreedyPlay:
    """0-ply play by the net's cubeless equity (ties broken at random), keeping the outcome
    probabilities of the afterstates of the last decision (``probs``, one row per afterstate)."""

    name = "calibration 0-ply"

    def __init__(self, evaluator):
        self.evaluator, self.probs = evaluator, None

    def choose(self, after, variant, rng) -> np.ndarray:
        self.probs = self.evaluator.probabilities(after.boards)
        return segment_argmax(equity(self.probs, variant), after.offsets, rng)


def run(path: str, games: int, seed: int, lockstep: int = 512) -> dict:
    ev = load_evaluator(path, device="cpu")
    v = ev.variant
    L = len(v.scoring)
    rng = np.random.default_rng(seed)
    policy = GreedyPlay(ev)
    traj: list[list] = [[] for _ in range(lockstep)]           # (probs, class, seat that moved)
    rows = []                                                   # (probs, class, won, gammon_won, gammon_lost)
    finished = 0

    def record(rec, _) -> None:
        chosen = rec.after.boards[rec.chosen]
        classes = position_classes(chosen, v)
        probs = policy.probs[rec.chosen]
        for k, g in enumerate(rec.idx.tolist()):
            traj[g].append((probs[k], int(classes[k]), int(rec.turn[k])))

    def score(state, done) -> None:
        nonlocal finished
        for g in done.tolist():
            level, winner = int(state.level[g]), int(state.winner[g])
            if finished < games:
                for p, c, seat in traj[g]:
                    won = seat == winner
                    rows.append((p, c, won, won and level >= 2, (not won) and level >= 2))
                finished += 1
            traj[g] = []

    state, ply = core.fresh(v, lockstep), 0
    dice = driver.SeededDice(rng, opening="random")
    while finished < games:
        out = driver.run(state, dice, policy, rng, ply=ply, plies=1, restart=True, on_ply=record, on_end=score)
        state, ply = out.games, out.ply
    P = np.array([r[0] for r in rows])
    cls = np.array([r[1] for r in rows])
    out = {"checkpoint": path, "variant": v.id, "games": games, "seed": seed, "positions": len(rows),
           "classes": {}}
    targets = {"win": (0, np.array([r[2] for r in rows], float)),
               "gammon_win": (1, np.array([r[3] for r in rows], float)),
               "gammon_loss": (L, np.array([r[4] for r in rows], float))}
    for ci, name in enumerate(class_names(v)):
        m = cls == ci
        if not m.any():
            continue
        row = {"positions": int(m.sum())}
        for t, (col, y) in targets.items():
            pred, obs = P[m, col], y[m]
            err = pred - obs
            bins = []
            for lo in np.arange(0, 1, 0.1):
                b = (pred >= lo) & (pred < lo + 0.1 + (lo >= 0.9))
                if b.sum() >= 50:
                    bins.append([round(float(lo), 1), int(b.sum()), round(float(pred[b].mean()), 4),
                                 round(float(obs[b].mean()), 4)])
            row[t] = {"mean_predicted": round(float(pred.mean()), 4), "observed": round(float(obs.mean()), 4),
                      "mean_error": round(float(err.mean()), 4),
                      "error_se": round(float(err.std(ddof=1) / np.sqrt(len(err))), 4) if len(err) > 1 else None,
                      "bins": bins}
        out["classes"][name] = row
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agent", help="a checkpoint (default: the backgammon champion of the agent registry)")
    ap.add_argument("--games", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    agent = args.agent or str(registry.champion("backgammon").path)
    res = run(agent, args.games, args.seed)
    name = os.path.basename(os.path.dirname(agent))
    path = os.path.join(ROOT, "experiments", "results", f"calibration_{res['variant']}_{name}.json")
    write_atomic(path, json.dumps(res, indent=1))
    print(f"{res['variant']} {name}: {res['games']} self-play games, {res['positions']} positions; "
          "mean predicted / observed (mean error ± s.e.):")
    for cname, row in res["classes"].items():
        parts = [f"{t} {row[t]['mean_predicted']:.3f}/{row[t]['observed']:.3f} ({row[t]['mean_error']:+.3f}"
                 f"±{row[t]['error_se']:.3f})" for t in ("win", "gammon_win", "gammon_loss")]
        print(f"  {cname:<8} {row['positions']:>7}  " + "  ".join(parts))
    print(f"written: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
