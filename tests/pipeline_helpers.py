"""The tiny recipes and checks the ``nardy train`` tests share (distillation, resume, crash
recovery): a 16-unit backgammon net set as teacher, a two-round distillation recipe, the
recipe as TOML, the weights of a checkpoint, and the CLI run in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import torch

from nardy_ai.model import save_checkpoint
from nardy_ai.evaluator import load_evaluator
from nardy_ai.netset import NetSet, as_netset

VARIANT = "backgammon"


def make_teacher(path: str) -> str:
    """A tiny backgammon net set (16-unit contact / crashed / race nets, the bear-off
    database), seeded, saved at ``path``."""
    net = {"encoder": "expert", "hidden": (16,)}
    ev = NetSet.create(VARIANT, {"contact": net, "crashed": net, "race": net, "bearoff": "database"},
                       seed=0, device="cpu")
    save_checkpoint(path, {"kind": "search_targets", "evaluator": ev.state(), "generation": 0})
    return path


def recipe(teacher: str, **round1) -> dict:
    """Two rounds: new 8-unit contact / crashed nets with rivals and a halving, then the
    contact net fine-tuned and a new 6-unit crashed net."""
    r1 = {"name": "first",
          "sample": {"positions": 300, "quotas": {"contact": 0.7, "crashed": 0.3}, "part": 120,
                     "parallel_games": 32, "decisions": 60},
          "label": {"chunk": 100},
          "fit": {"nets": ["contact", "crashed"], "hidden": [8], "max_epochs": 3, "patience": 1,
                  "lr_halvings": 1, "validation": 0.1},
          "gate": {"games": 20, "threshold": -3.0}}
    for k, v in round1.items():
        r1[k].update(v)
    r2 = {"name": "second", "sample": {"positions": 150, "part": 100, "parallel_games": 32},
          "label": {"chunk": 100},
          "fit": {"nets": ["contact", "crashed"], "warm_nets": ["contact"], "hidden": [6], "max_epochs": 2,
                  "validation": 0.1},
          "gate": {"games": 20, "threshold": 3.0}}
    return {"variant": VARIANT, "seed": 4, "method": {"kind": "distill"}, "model": {"init_from": teacher},
            "run": {"eval_opponents": ["random"], "eval_games": 10}, "rounds": [r1, r2]}


def toml_text(d: dict) -> str:
    """A recipe dict as TOML (the shapes :func:`recipe` uses)."""
    def value(v):
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + "}"
        return json.dumps(v)
    lines = [f"{k} = {value(v)}" for k, v in d.items() if not isinstance(v, (dict, list))]
    for k, v in d.items():
        if isinstance(v, dict):
            lines += [f"[{k}]"] + [f"{a} = {value(b)}" for a, b in v.items()]
    for r in d.get("rounds", []):
        lines += ["[[rounds]]"] + [f"{a} = {value(b)}" for a, b in r.items() if not isinstance(b, dict)]
        for sec, body in r.items():
            if isinstance(body, dict):
                lines += [f"[rounds.{sec}]"] + [f"{a} = {value(b)}" for a, b in body.items()]
    return "\n".join(lines) + "\n"


def weights(path) -> dict:
    """The parameters of every net of a checkpoint, by net."""
    ev = as_netset(load_evaluator(str(path), VARIANT))
    return {k: [p.detach().clone() for p in m.net.parameters()] for k, m in ev.nets().items()}


def same_weights(a, b) -> bool:
    return a.keys() == b.keys() and all(all(torch.equal(x, y) for x, y in zip(a[k], b[k])) for k in a)


def nardy(*args, timeout=300) -> subprocess.CompletedProcess:
    """``nardy ARGS`` in a subprocess (text output captured)."""
    return subprocess.run([sys.executable, "-m", "nardy_ai.cli", *args], capture_output=True, text=True,
                          timeout=timeout)
