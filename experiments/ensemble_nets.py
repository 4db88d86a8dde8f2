"""Join the class nets of several checkpoints of one architecture into one net that averages
their outputs (an output ensemble), written as an ordinary ``td:PATH`` checkpoint.

Each chosen class net becomes one MLP: the members' first layers side by side, their later
hidden layers block-diagonal, and the output layer averaging the members' logits (so the
ensemble's probabilities are the sigmoid of the mean logit).  For one-hidden-layer members this
is exactly a wider net (no wasted weights); for two-layer members the block-diagonal layer
costs a dense product of the joined width.  The other classes (race net, bear-off database)
come from the first checkpoint::

    python experiments/ensemble_nets.py --out /tmp/ens2.pt --nets contact,crashed \\
        checkpoints/backgammon/distill_deep512/current.pt \\
        experiments/results/backgammon_deep512_round2_run/current.pt

The results guide (backgammon, "Output ensembles") has what such a net measured.
"""

from __future__ import annotations

import argparse
import copy
import sys

import torch

from nardy_ai.errors import NardyError
from nardy_ai.model import load_checkpoint, save_checkpoint


def join_members(states: list[dict]) -> dict:
    """One net's state (``hidden``, ``weights``) averaging the logits of ``states`` (members of
    the same depth, encoder and activation)."""
    first = states[0]
    for i, s in enumerate(states[1:], 2):
        for key in ("encoder", "activation", "variant"):
            if s.get(key) != first.get(key):
                raise NardyError(f"member {i}: {key} {s.get(key)!r} differs from the first's {first.get(key)!r}")
        if len(s["hidden"]) != len(first["hidden"]):
            raise NardyError(f"member {i}: {len(s['hidden'])} hidden layers, the first has {len(first['hidden'])}")
    ws = [s["weights"] for s in states]
    layers = len(first["hidden"]) + 1
    out = {}
    for i in range(layers):
        w = [x[f"net.{2 * i}.weight"] for x in ws]
        b = [x[f"net.{2 * i}.bias"] for x in ws]
        if i == 0:
            out["net.0.weight"], out["net.0.bias"] = torch.cat(w), torch.cat(b)
        elif i < layers - 1:
            out[f"net.{2 * i}.weight"], out[f"net.{2 * i}.bias"] = torch.block_diag(*w), torch.cat(b)
        else:
            out[f"net.{2 * i}.weight"] = torch.cat(w, 1) / len(ws)
            out[f"net.{2 * i}.bias"] = sum(b) / len(ws)
    joined = copy.deepcopy(first)
    joined["hidden"] = [sum(s["hidden"][j] for s in states) for j in range(len(first["hidden"]))]
    joined["weights"] = out
    return joined


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoints", nargs="+", help="net-set checkpoints of one architecture")
    ap.add_argument("--out", required=True, help="the ensemble checkpoint to write")
    ap.add_argument("--nets", default="contact,crashed", help="classes whose nets are joined")
    args = ap.parse_args(argv)
    try:
        cks = [load_checkpoint(p) for p in args.checkpoints]
        base = copy.deepcopy(cks[0])
        for cls in args.nets.split(","):
            members = [c["evaluator"].get("members", {}).get(cls) for c in cks]
            if any(not isinstance(m, dict) or "weights" not in m for m in members):
                raise NardyError(f"--nets {cls}: not a net in every checkpoint")
            base["evaluator"]["members"][cls] = join_members(members)
        base["ensemble_of"] = list(args.checkpoints)
        save_checkpoint(args.out, base)
    except NardyError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}: {args.nets} joined from {len(cks)} checkpoints")
    return 0


if __name__ == "__main__":
    sys.exit(main())
