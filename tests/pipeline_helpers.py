"""The tiny recipes and checks the ``nardy train`` tests share (distillation, resume, crash
recovery, the run lifecycle): a 16-unit backgammon net set as teacher, a two-round
distillation recipe, the recipe as TOML, the weights of a checkpoint, the CLI run in a
subprocess (interrupted as by Ctrl-C, resumed as it says, resumed when finished), and a run
that stops itself after a given metrics line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

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


def interrupt_train(args: list[str], ready, polls: int) -> tuple[int, str]:
    """Runs ``nardy train ARGS`` in a subprocess and sends it SIGINT, as Ctrl-C does, once
    ``ready()`` holds (asked every 0.1 s, at most ``polls`` times); returns its exit status
    and its stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "nardy_ai.cli", "train", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(polls):
        if ready():
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    return proc.returncode, err


def resume_as_printed(err: str, out) -> subprocess.CompletedProcess:
    """Runs the command an interrupted ``nardy train`` printed on ``err`` to continue (checked
    to be ``nardy train --out OUT --resume``) as printed, with --no-progress."""
    printed = err.split("continue with: ")[1].strip()
    assert printed == f"nardy train --out {out} --resume"
    return nardy(*printed.split()[1:], "--no-progress")


def snapshot(folder) -> dict:
    """Every path under ``folder`` with its modification time (ns) and size: two equal
    snapshots mean nothing was written in between."""
    return {str(f): (f.stat().st_mtime_ns, f.stat().st_size) for f in Path(folder).rglob("*")}


def resume_finished(out, hint: str) -> dict:
    """Checks that ``nardy train --out OUT --resume`` of a finished run says it is finished,
    names ``hint`` (how to extend it) and writes nothing; returns the folder's snapshot."""
    before = snapshot(out)
    p = nardy("train", "--out", str(out), "--resume")
    assert p.returncode == 0, p.stderr
    assert "is finished" in p.stdout and hint in p.stdout
    assert snapshot(out) == before
    return before


class StopsAfter:
    """Mixin for a run class (a :class:`training.run.StagedRun`): the run asks itself to stop,
    as Ctrl-C does, after its ``stop_after``-th metrics line of kind ``stop_kind``."""

    stop_kind = None
    stop_after = 1
    seen = 0

    def _log(self, kind, *a, **kw):
        super()._log(kind, *a, **kw)
        if kind == self.stop_kind:
            self.seen += 1
            if self.seen >= self.stop_after:
                self.request_stop()
