"""Calibration of an evaluator's outcome probabilities (issue #12: cube decisions rest on the
win and gammon chances).

    python experiments/calibration.py --agent checkpoints/backgammon/search_targets/current.pt --games 4000

Plays ``games`` self-play games of the net at 0 ply through the game core and, at every
position of every game (the afterstate just played, the side that moved), keeps the net's
outcome probabilities and the class of the afterstate; at the end it scores each against what
happened in that game (won, won a gammon or more, lost a gammon or more).  Per class and per
tenth of predicted probability it prints the mean prediction against the observed frequency,
and the mean error (prediction minus outcome) with its standard error.  Self-play outcomes
measure the net against its own play; rollouts of a stronger player would measure it against
better play (the cube set's gnubg references are such a check for the cube).

Writes ``experiments/results/calibration_<variant>_<run>.json``.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from nardy_ai import core  # noqa: E402
from nardy_ai.classes import class_names, position_classes  # noqa: E402
from nardy_ai.movegen import segment_argmax  # noqa: E402
from nardy_ai.model import equity  # noqa: E402
from nardy_ai.netset import load_evaluator  # noqa: E402


def run(path: str, games: int, seed: int, lockstep: int = 512) -> dict:
    ev = load_evaluator(path, device="cpu")
    v = ev.variant
    L = len(v.scoring)
    rng = np.random.default_rng(seed)
    state = core.fresh(v, lockstep)
    everyone = np.arange(lockstep)
    traj: list[list] = [[] for _ in range(lockstep)]           # (probs, class, mover parity)
    rows = []                                                   # (probs, class, won, gammon_won, gammon_lost)
    finished = 0
    while finished < games:
        dice = rng.integers(1, 7, (lockstep, 2))
        after = core.legal(state, dice)
        probs = ev.probabilities(after.boards)
        pick = segment_argmax(equity(probs, v), after.offsets, rng)
        chosen = after.boards[pick]
        classes = position_classes(chosen, v)
        for g in range(lockstep):
            traj[g].append((probs[pick[g]], int(classes[g]), int(state.plies[g]) % 2))
        state = core.play(state, everyone, chosen)
        for g in np.flatnonzero(state.over):
            level = int(state.level[g])
            last = int(state.plies[g] - 1) % 2                   # the winner moved last
            if finished < games:
                for p, c, parity in traj[g]:
                    won = parity == last
                    rows.append((p, c, won, won and level >= 2, (not won) and level >= 2))
                finished += 1
            traj[g] = []
        state = core.restart(state, np.flatnonzero(state.over))
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
    ap.add_argument("--agent", default="checkpoints/backgammon/search_targets/current.pt")
    ap.add_argument("--games", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    res = run(args.agent, args.games, args.seed)
    name = os.path.basename(os.path.dirname(args.agent))
    path = os.path.join(ROOT, "experiments", "results", f"calibration_{res['variant']}_{name}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1)
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
