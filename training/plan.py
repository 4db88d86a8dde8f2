"""``nardy train --config R --plan``: a recipe's stages, their sizes, and the hours and disk
they take on this machine, without running the recipe.

The hours come from rates measured here and now, for a few seconds each, with the recipe's
own starting net (one process, one torch thread: :func:`training.distill.measure_rates`):
self-play afterstates per second, 1- and 2-ply labels per second, decisions turned into
rivals per second, gate games per second, and rows fitted per second for each net shape.
A stage's hours are its size over the rate times ``--jobs`` (sample, rivals, label: the
backend's processes) or over the fit rate (``run.threads`` torch threads); a fit is counted
at its ``max_epochs`` (an upper bound: early stop usually ends it sooner).  TD recipes are
timed by training the recipe's net for a few seconds in a temporary folder.  The estimate
assumes the cores are not shared with other work.
"""

from __future__ import annotations

import os
import tempfile

from nardy_ai.netset import as_netset
from nardy_ai.variants import parse_variant_spec

from .config import TrainConfig


def starting_netset(cfg: TrainConfig):
    """The net set a recipe starts from (``model.init_from``, widened or adopted as the run would)."""
    from .search_targets import initial_evaluator
    return as_netset(initial_evaluator(cfg, parse_variant_spec(cfg.variant), "cpu"))


def net_shapes(netset) -> tuple[dict[str, list[int]], dict[str, int]]:
    """The hidden layers and encoder inputs of each class's net."""
    from .search_targets import fitted_classes
    hidden, inputs = {}, {}
    for c in fitted_classes(netset):
        m = netset.member_for(c)
        hidden[c], inputs[c] = list(m.hidden), int(m.encoder.n_features)
    return hidden, inputs


def measure_for(cfg: TrainConfig, netset, seconds: float = 3.0) -> dict:
    """:func:`training.distill.measure_rates` for the recipe's starting net, its (first round's)
    sampling settings and the net shapes its fits will train."""
    from nardy_ai.model import save_checkpoint
    from .distill import measure_rates
    from .search_targets import evaluator_payload
    hidden, inputs = net_shapes(netset)
    fits = []
    for r in cfg.rounds:
        for c in (r.fit.nets or list(hidden)):
            h = list(r.fit.hidden) if r.fit.hidden and c not in r.fit.warm_nets else hidden.get(c, [80])
            fits.append((c, h, inputs.get(c, 238)))
    for c in hidden:
        fits.append((c, hidden[c], inputs[c]))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "start.pt")
        save_checkpoint(path, evaluator_payload(netset, cfg, 0))
        if cfg.method.kind == "distill":
            s = cfg.rounds[0].sample
            shares = s.quotas or {c: 1.0 for c in (cfg.rounds[0].fit.nets or hidden)}
        else:
            s = cfg.sample
            shares = s.quotas or {c: 1.0 for c in hidden}
        return measure_rates(path, netset.variant, fits, seconds, shares=shares, keep=s.keep, epsilon=s.epsilon,
                             parallel_games=s.parallel_games, sample_rows=4000,
                             candidates=s.candidates, threshold=s.candidate_threshold,
                             three_ply=cfg.method.kind == "distill"
                             and any(r.label.decision_plies == 3 for r in cfg.rounds))


def search_targets_stages(cfg: TrainConfig, rates: dict, hidden: dict, inputs: dict, jobs: int,
                          threads: int) -> list[dict]:
    """The stages of a search-targets recipe (``method.generations`` of sample, label, fit, gate)."""
    from .distill import BYTES_CHUNK_ROW, BYTES_SAMPLE_ROW, label_stage
    s, lb, ft = cfg.sample, cfg.label, cfg.fit
    speedup = 1 + 0.7 * max(threads - 1, 0)
    out = []
    for g in range(1, cfg.method.generations + 1):
        name = f"generation {g}"
        out.append({"round": g, "name": name, "stage": "sample", "rows": int(s.positions * s.oversample),
                    "seconds": s.positions * s.oversample / rates["sample_per_s"]
                    + (s.positions / rates["rivals_per_s"] if s.candidates > 1 else 0)
                    + (s.positions * s.oversample / (rates["label_per_s"] * jobs) if s.oversample > 1 else 0),
                    "bytes": BYTES_SAMPLE_ROW * s.positions})
        if lb.kind == "rollout":
            # a rollout costs about games x truncate 0-ply choices of ~20 plays; a 1-ply label
            # about 21 rolls x ~20 plays: a rough ratio, not measured
            per_s = rates["label_per_s"] / max(lb.rollout_games * lb.rollout_truncate / 21, 1)
            what = "label (rollout, rough)"
        else:
            what, per_row = label_stage(lb.plies, 1.0 if lb.plies == 2 else lb.two_ply_fraction, rates)
            per_s = 1 / per_row
        out.append({"round": g, "name": name, "stage": what, "rows": s.positions,
                    "seconds": s.positions / (per_s * jobs), "bytes": BYTES_CHUNK_ROW * s.positions})
        rows = s.positions * (1 + min(ft.history, g - 1))
        fit_s = 0.0
        shares = s.quotas or {c: 1.0 for c in hidden}
        total = sum(shares.values()) or 1.0
        for c, h in hidden.items():
            per = rates["fit_rows_per_s"].get(f"{inputs[c]}x{'x'.join(map(str, h))}", 20000)
            fit_s += rows * shares.get(c, 0) / total * ft.max_epochs / (per * speedup)
        out.append({"round": g, "name": name, "stage": "fit", "rows": rows, "max_epochs": ft.max_epochs,
                    "nets": [f"{c} {h}" for c, h in hidden.items()], "seconds": fit_s, "bytes": 0})
        out.append({"round": g, "name": name, "stage": "gate", "rows": cfg.gate.games,
                    "seconds": cfg.gate.games / rates["gate_games_per_s"], "bytes": 0})
    return out


def td_plan(cfg: TrainConfig) -> str:
    """The one stage of a TD recipe: ``selfplay.total_games`` at the games per CPU second of
    this recipe's training measured on its first ``selfplay.parallel_games`` games (one
    lockstep batch, in a temporary folder)."""
    import time
    from nardy_ai.machine import machine_description
    from .td import Trainer
    with tempfile.TemporaryDirectory() as d:
        t = Trainer(cfg, os.path.join(d, "run"), log=False, print_fn=lambda *a: None)
        c0 = time.process_time()
        res = t.run(total_games=min(cfg.selfplay.parallel_games, cfg.selfplay.total_games), progress=False)
        cpu = time.process_time() - c0
        t.close()
        # a checkpoint holds the weights and Adam's two moments: about 3 x 4 bytes a parameter
        size = 12 * sum(p.numel() for net in as_netset(t.ev).nets().values() for p in net.net.parameters())
    rate = max(res["games"], 1) / max(cpu, 1e-9)
    return "\n".join([
        f"machine: {machine_description()}; TD(lambda) self-play in this process",
        f"measured here: {rate:,.0f} games per CPU second over the first {res['games']:,} games of this "
        f"recipe's net (games of an untrained net are longer: the rate grows during training)",
        f"td  {cfg.selfplay.total_games:>11,} games  {cfg.selfplay.total_games / rate / 3600:>7.2f} hours  "
        f"checkpoint {size / 2 ** 20:.1f} MiB, metrics a few MiB"])


def train_plan(cfg: TrainConfig, jobs: int = 1, rates: dict | None = None) -> str:
    """The text ``nardy train --plan`` prints for any recipe (``rates``: measured if None)."""
    from nardy_ai.machine import machine_description
    from .distill import format_plan, plan
    if cfg.method.kind == "td":
        return td_plan(cfg)
    netset = starting_netset(cfg)
    hidden, inputs = net_shapes(netset)
    rates = rates or measure_for(cfg, netset)
    threads = cfg.run.threads or os.cpu_count() or 1
    if cfg.method.kind == "distill":
        stages = plan(cfg, rates, jobs, threads, hidden, inputs)
    else:
        stages = search_targets_stages(cfg, rates, hidden, inputs, jobs, threads)
    return format_plan(stages, rates, jobs, threads, machine_description())
