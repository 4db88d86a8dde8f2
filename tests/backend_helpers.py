"""Tasks for the backend tests that kill or break their own worker (importable by workers)."""

import os
from pathlib import Path

from nardy_ai.errors import NardyError


def die_once(marker_dir: str, victim, fn, task):
    """Run ``fn(task)``, except that the first time ``task == victim`` the worker process
    ends abruptly (as if killed) after leaving a marker file; the attempts are counted in
    ``attempts-<victim>``."""
    if task == victim:
        d = Path(marker_dir)
        with open(d / f"attempts-{_name(victim)}", "a") as f:
            f.write("x")
        marker = d / f"died-{_name(victim)}"
        if not marker.exists():
            marker.write_text("dead")
            os._exit(3)
    return fn(task)


def _name(task) -> str:
    label = getattr(task, "label", None)
    text = label() if callable(label) else str(task)
    return "".join(c if c.isalnum() else "_" for c in text)


def square(x: int) -> int:
    return x * x


def fail_on(bad: int, x: int) -> int:
    if x == bad:
        raise NardyError(f"task {x} is bad")
    return x


def always_die(x: int) -> int:
    os._exit(4)


def dying_actor(marker_dir: str, on_call: int = 2):
    """A self-play actor class whose process ends abruptly in its ``on_call``-th batch the
    first time (a marker file keeps its replacement alive)."""
    from training.distributed import SelfPlayActor

    class DyingActor(SelfPlayActor):
        calls = 0

        def play_games(self, games, weights=None, version=0):
            self.calls += 1
            out = super().play_games(games, weights, version)    # games played, then lost
            marker = Path(marker_dir) / "actor-died"
            if self.calls == on_call and not marker.exists():
                marker.write_text(str(len(out["games"])))
                os._exit(5)
            return out

    return DyingActor


def threads_after_a_matrix_product(x: int) -> tuple[str | None, int, int]:
    """In a worker: OPENBLAS_NUM_THREADS, then the operating system's threads of this process
    and Python's own threads after a NumPy matrix product large enough for OpenBLAS to use
    every thread it has (Linux: /proc/self/task)."""
    import os
    import threading

    import numpy as np
    a = np.ones((256, 256))
    for _ in range(3):
        a = a @ a / 256.0
    return os.environ.get("OPENBLAS_NUM_THREADS"), len(os.listdir("/proc/self/task")), threading.active_count()
