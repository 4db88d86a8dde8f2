"""Calibration of a net's outcome probabilities against rollouts, per class (issue #12).

    python experiments/calibration_rollouts.py --run checkpoints/backgammon/search_targets_rollout --generation 9

A search-targets run with ``label.kind = "rollout"`` labels each sampled afterstate with the
mean outcome of 36 games of the current net's play, truncated after a few plies (the net scores
the rest).  The labels of generation ``g`` were made by the net that was current then (their
``evaluator_sha256``); this script checks that the checkpoint given (default ``RUN/current.pt``)
is that net, values the same afterstates at 0 ply, and compares per class and per output the
mean prediction with the mean rollout label (and per tenth of predicted win chance).  A
truncated rollout measures the drift of the net's own estimates over the plies played, which
is what a cube decision (a look a few plies ahead) needs.  Race and bear-off afterstates are not
labelled by rollouts (see ``experiments/calibration.py`` for self-play calibration there).

Writes ``experiments/results/calibration_rollouts_<run>_g<g>.json``.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from nardy_ai.classes import class_names  # noqa: E402
from nardy_ai.files import write_atomic  # noqa: E402
from nardy_ai.model import equity  # noqa: E402
from nardy_ai.evaluator import load_evaluator  # noqa: E402


def output_names(K: int) -> list[str]:
    return {5: ["win", "gammon_win", "backgammon_win", "gammon_loss", "backgammon_loss"],
            3: ["win", "mars_win", "mars_loss"]}.get(K, [f"out{i}" for i in range(K)])


def run(folder: str, generation: int, checkpoint: str | None) -> dict:
    path = checkpoint or os.path.join(folder, "current.pt")
    with open(path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    chunks = sorted(glob.glob(os.path.join(folder, "generations", f"{generation:03d}", "labels", "chunk_*.npz")))
    parts = []
    for c in chunks:
        z = np.load(c)
        settings = json.loads(str(z["settings"]))
        if settings.get("kind") != "rollout":
            raise SystemExit(f"{c}: not rollout labels ({settings.get('kind')})")
        if settings["evaluator_sha256"] != sha:
            raise SystemExit(f"{c}: labelled by another net than {path}")
        parts.append((z["boards"], z["classes"], z["labels"]))
    if not parts:
        raise SystemExit(f"no label chunks for generation {generation} under {folder}")
    boards, classes, labels = (np.concatenate([p[i] for p in parts]) for i in range(3))
    ev = load_evaluator(path, device="cpu")
    v = ev.variant
    pred = ev.probabilities(boards)
    names = class_names(v)
    outs = output_names(pred.shape[1])
    result = {"checkpoint": path, "sha256": sha, "generation": generation, "positions": int(len(boards)),
              "labels": f"rollouts: {settings['rollout_games']} games truncated after "
                        f"{settings['rollout_truncate']} plies, the net's 0-ply play", "classes": {}}
    for ci, cname in enumerate(names):
        rows = classes == ci
        if not rows.any():
            continue
        p, y = pred[rows], labels[rows]
        err = p - y
        per = {o: {"predicted": float(p[:, k].mean()), "rollouts": float(y[:, k].mean()),
                   "mean_error": float(err[:, k].mean()),
                   "se": float(err[:, k].std(ddof=1) / np.sqrt(len(err))),
                   "mean_abs_error": float(np.abs(err[:, k]).mean())} for k, o in enumerate(outs)}
        eq_err = equity(p, v) - equity(y, v)
        bins = []
        for lo in np.arange(0, 1, 0.1):
            b = (p[:, 0] >= lo) & (p[:, 0] < lo + 0.1 + (lo >= 0.9) * 1e-9)
            if b.sum() >= 20:
                bins.append({"bin": [round(float(lo), 1), round(float(lo) + 0.1, 1)], "n": int(b.sum()),
                             "predicted_win": float(p[b, 0].mean()), "rollout_win": float(y[b, 0].mean()),
                             "predicted_gammon_win": float(p[b, 1].mean()), "rollout_gammon_win": float(y[b, 1].mean()),
                             "predicted_gammon_loss": float(p[b, 3].mean()) if p.shape[1] > 3 else None,
                             "rollout_gammon_loss": float(y[b, 3].mean()) if p.shape[1] > 3 else None})
        result["classes"][cname] = {"n": int(rows.sum()), "outputs": per,
                                    "equity_mean_error": float(eq_err.mean()),
                                    "equity_mean_abs_error": float(np.abs(eq_err).mean()), "bins": bins}
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", required=True)
    ap.add_argument("--generation", type=int, required=True)
    ap.add_argument("--checkpoint", default=None)
    a = ap.parse_args(argv)
    r = run(a.run, a.generation, a.checkpoint)
    name = os.path.basename(os.path.normpath(a.run))
    out = os.path.join(ROOT, "experiments", "results", f"calibration_rollouts_{name}_g{a.generation}.json")
    write_atomic(out, json.dumps(r, indent=1))
    print(f"{r['positions']:,} afterstates, {r['labels']}")
    for c, x in r["classes"].items():
        print(f"{c} ({x['n']:,}): equity error {x['equity_mean_error']:+.4f} (mean |e| {x['equity_mean_abs_error']:.4f})")
        for o, s in x["outputs"].items():
            print(f"   {o:16s} predicted {s['predicted']:.4f} rollouts {s['rollouts']:.4f} "
                  f"error {s['mean_error']:+.4f} ± {1.96 * s['se']:.4f}")
        for b in x["bins"]:
            print(f"   win in [{b['bin'][0]:.1f},{b['bin'][1]:.1f}) n={b['n']:5d}: win {b['predicted_win']:.3f}/"
                  f"{b['rollout_win']:.3f}  gammon win {b['predicted_gammon_win']:.3f}/{b['rollout_gammon_win']:.3f}"
                  + (f"  gammon loss {b['predicted_gammon_loss']:.3f}/{b['rollout_gammon_loss']:.3f}"
                     if b["predicted_gammon_loss"] is not None else ""))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
