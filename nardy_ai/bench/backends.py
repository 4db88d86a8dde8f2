"""``nardy bench backends``: the same work on each backend (one process, local processes,
Ray) on this machine: a tournament and self-play training, games per second."""

from __future__ import annotations

import os
import time

from ..errors import NardyError
from ..machine import machine_description
from ..variants import Variant, get_variant


def bench_backends(variant="backgammon", agents: list[str] | None = None, games: int = 100,
                   chunk: int = 10, jobs: int | None = None, train_seconds: float = 20.0,
                   hidden=(80,), parallel_games: int = 256) -> dict:
    """Games/s of the same work on each backend on this machine (``jobs`` = its cores by
    default): a tournament (``agents``, default the shipped ones and the baselines, ``games``
    per pairing in chunks of ``chunk`` duplicate pairs) in one process, in ``jobs`` local
    processes and on a local Ray instance of ``jobs`` CPUs; and self-play training (MLP of
    ``hidden``, ``parallel_games`` in lockstep per player) in one process and on Ray with
    ``jobs - 1`` and ``jobs`` self-play actors feeding the learner.

    Tournament rates are over the whole run (worker start-up included, Ray's own start-up
    reported apart); training rates are steady state: games counted after a warm-up of a
    quarter of ``train_seconds``, divided by the wall seconds after it.  The tournament's
    games are checked to be identical on every backend."""
    import shutil
    import tempfile

    from .. import tournament as tm
    from ..backends import make_backend, require_ray, start_ray

    ray = require_ray()
    v = get_variant(variant)
    jobs = jobs or os.cpu_count() or 1
    agents = agents or tm.default_agents(v)
    config = tm.TournamentConfig(v.id, tuple(agents), tm.even_games(games), 0, False, chunk)
    n_games = config.games * len(config.pairings())
    tmp = tempfile.mkdtemp(prefix="nardy-bench-")
    rows, reference = [], None
    t0 = time.perf_counter()
    owns = start_ray(cpus=jobs)              # else: measure on the instance already running
    ray_start = time.perf_counter() - t0
    try:
        for name, n in dict.fromkeys((("local", 1), ("local", jobs), ("ray", jobs))):   # jobs = 1: once
            out = os.path.join(tmp, f"{name}{n}")
            backend = make_backend(name, n, log=lambda s: None)
            t0 = time.perf_counter()
            tm.run_tournament(config, out, backend=backend, progress=False, log=lambda s: None)
            wall = time.perf_counter() - t0
            with open(os.path.join(out, tm.GAMES_FILE)) as f:
                lines = sorted(f)
            reference = reference or lines
            rows.append({"backend": name, "workers": backend.workers, "runs": backend.describe(),
                         "games": n_games, "seconds": wall, "games_per_s": n_games / wall,
                         "same_games": lines == reference})
        train = [_train_rate(v, tmp, "local", 0, train_seconds, hidden, parallel_games)]
        for actors in sorted({max(1, jobs - 1), jobs}):
            train.append(_train_rate(v, tmp, "ray", actors, train_seconds, hidden, parallel_games))
    finally:
        if owns:
            ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    base_t, base_s = rows[0]["games_per_s"], train[0]["games_per_s"]
    for r in rows:
        r["ratio"] = r["games_per_s"] / base_t
    for r in train:
        r["ratio"] = r["games_per_s"] / base_s
    return {"machine": machine_description(), "variant": v.id, "agents": list(agents),
            "ray_version": ray.__version__, "ray_start_seconds": ray_start,
            "tournament": rows, "train": train}


def _train_rate(v: Variant, tmp: str, backend: str, actors: int, seconds: float, hidden,
                parallel_games: int) -> dict:
    from training.config import config_from_dict
    from training.td import Trainer

    cfg = config_from_dict({"variant": v.id, "seed": 0, "model": {"hidden": list(hidden)},
                            "selfplay": {"parallel_games": parallel_games, "total_games": 10**9},
                            "run": {"eval_every": 0, "checkpoint_every": 10**9},
                            "ray": {"actors": actors}})
    trainer = Trainer(cfg, os.path.join(tmp, f"train-{backend}{actors}"), log=False, backend=backend,
                      print_fn=lambda s: None)
    marks: list[tuple[float, int]] = []
    start = time.perf_counter()

    def mark() -> None:     # measure for `seconds`, and over at least 8 updates on a busy machine
        marks.append((time.perf_counter(), trainer.games))
        if marks[-1][0] - start >= seconds and len(marks) >= 8:
            trainer.request_stop()

    trainer.run(progress=False, seconds=10 * seconds + 120, on_update=mark)
    if len(marks) < 2:
        raise NardyError(f"training on {backend} made fewer than 2 updates in {10 * seconds + 120:.0f} s")
    t_end, g_end = marks[-1]
    warm = marks[0][0] + (t_end - marks[0][0]) / 4
    t_w, g_w = next(m for m in marks if m[0] >= warm)
    if t_w == t_end:
        t_w, g_w = marks[0]
    return {"backend": backend, "actors": actors,
            "runs": "this process" if backend == "local" else f"Ray, {actors} self-play actor(s) + learner",
            "games": g_end - g_w, "seconds": t_end - t_w, "games_per_s": (g_end - g_w) / max(t_end - t_w, 1e-9)}


def format_backends(row: dict) -> str:
    """The lines ``nardy bench backends`` prints."""
    lines = [f"machine: {row['machine']}",
             f"Ray {row['ray_version']} local instance start-up: {row['ray_start_seconds']:.1f} s (not in the rates)",
             f"tournament, {row['variant']}, agents {' '.join(row['agents'])}: "
             f"{row['tournament'][0]['games']} games per run (start-up of workers included)",
             f"  {'backend':<44}{'seconds':>9}{'games/s':>10}{'ratio':>8}  same games"]
    for r in row["tournament"]:
        lines.append(f"  {r['runs']:<44}{r['seconds']:>9.1f}{r['games_per_s']:>10.1f}{r['ratio']:>8.2f}  "
                     f"{'yes' if r['same_games'] else 'NO'}")
    lines.append(f"self-play training, {row['variant']} (steady state, after warm-up)")
    lines.append(f"  {'backend':<44}{'seconds':>9}{'games/s':>10}{'ratio':>8}")
    for r in row["train"]:
        lines.append(f"  {r['runs']:<44}{r['seconds']:>9.1f}{r['games_per_s']:>10.1f}{r['ratio']:>8.2f}")
    return "\n".join(lines)

