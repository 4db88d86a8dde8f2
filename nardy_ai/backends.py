"""Where independent tasks run: in this process, in local worker processes, or on a Ray cluster.

A tournament is a list of independent tasks (chunks of games); :func:`run_tasks` hands them
to a :class:`Backend` and yields ``(task, result)`` as each finishes, in any order.  The
caller writes each result as it arrives and keys it by the task, so the order never matters
and nothing is counted twice.

- ``local`` (the default): ``jobs`` spawned worker processes on this machine
  (:class:`concurrent.futures.ProcessPoolExecutor`); ``jobs = 1`` runs the tasks in this
  process.
- ``ray``: Ray tasks (https://docs.ray.io), one CPU each, on the cluster at ``address`` or,
  without one, on a Ray instance started on this machine with ``jobs`` CPUs (default: all).
  Ray is an optional extra: ``pip install 'nardy-ai[ray]'``.

Fault handling (both multi-process backends): a worker process that dies while running a
task (killed, out of memory, a lost node) loses only that task's work; the task is run again
from scratch, up to ``retries`` times, and a message says so.  A task that *raises* is not
retried: its error is raised here (a :class:`~nardy_ai.errors.NardyError` as it is).  Tasks
must therefore be pure: the same task gives the same result wherever and however often it runs
(a tournament chunk carries its own dice seed).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from typing import Any, Callable, Iterator, Sequence

from .errors import NardyError

BACKENDS = ("local", "ray")
RAY_INSTALL_HINT = "pip install 'nardy-ai[ray]' (or pip install ray)"


class BackendError(NardyError):
    """A backend that cannot start or a task that could not be completed."""


def require_ray():
    """The ``ray`` module, or a :class:`BackendError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise BackendError(f"--backend ray needs Ray, which is not installed: {RAY_INSTALL_HINT}") from None
    return ray


def start_ray(address: str | None = None, cpus: int | None = None) -> bool:
    """Join the Ray cluster at ``address`` or start a local instance of ``cpus`` CPUs (default
    all), unless Ray is already running in this process; True if it was started here (the
    caller then shuts it down).  This process keeps its own SIGINT/SIGTERM handlers: Ray's
    would abort it without writing a checkpoint."""
    import logging
    ray = require_ray()
    if ray.is_initialized():
        return False
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    kwargs: dict = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    if address is None and cpus is not None:
        kwargs["num_cpus"] = cpus
    try:
        # Joining a cluster, Ray's C++ core logs every retry on stderr (a local instance
        # starts processes that would inherit the held-back stderr: not held back).
        with _stderr_kept_back(address is not None) as replay:
            ray.init(address=address, **kwargs)
            replay()                          # it started: show what it said
    except Exception as e:               # unreachable address, bad cluster, ...
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        raise BackendError(f"cannot connect to {where}: {e}") from None
    for sig, handler in handlers.items():
        if handler is not None:
            try:
                signal.signal(sig, handler)
            except ValueError:          # not the main thread: signals are not ours to handle
                pass
    return True


@contextlib.contextmanager
def _stderr_kept_back(hold: bool = True):
    """Hold back what this process writes to file descriptor 2 (C libraries included) inside
    the block; the block calls the function it gets to write it out, else it is dropped (a
    failure is reported in one line instead).  ``hold=False``: nothing is held back."""
    import tempfile
    saved = None
    if hold:
        try:
            sys.stderr.flush()
            saved = os.dup(2)
        except (OSError, ValueError):      # no real stderr: nothing to hold back
            saved = None
    if saved is None:
        yield lambda: None
        return
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        restored = False

        def replay() -> None:
            nonlocal restored
            os.dup2(saved, 2)
            restored = True
            held.seek(0)
            os.write(2, held.read())

        try:
            yield replay
        finally:
            if not restored:
                os.dup2(saved, 2)
            os.close(saved)


def ray_lost_work_errors() -> tuple[type, ...]:
    """The Ray exceptions that mean a worker, actor or node was lost with its work (to run
    again), as opposed to a task that raised."""
    from ray import exceptions as rex
    return tuple(getattr(rex, n) for n in (
        "WorkerCrashedError", "NodeDiedError", "ObjectLostError", "OwnerDiedError",
        "RayActorError", "OutOfMemoryError", "LocalRayletDiedError") if hasattr(rex, n))


def ray_task_error(e: Exception, what: str) -> BaseException:
    """The exception to raise here for a Ray ``RayTaskError``: the task's own (a NardyError
    stays one), else a :class:`BackendError` saying ``what`` failed."""
    cause = getattr(e, "cause", None)
    return cause if isinstance(cause, BaseException) else BackendError(f"{what} failed: {e}")


def die_with_parent(parent: int, poll_s: float = 0.5) -> None:
    """Make this worker process end when its parent (pid ``parent``) does, however the parent
    ends (kill -9 included), so that no worker outlives its run: on Linux the kernel sends
    SIGKILL when the parent dies (``prctl(PR_SET_PDEATHSIG)``); everywhere a daemon thread
    checks every ``poll_s`` seconds that the parent is still this process's parent."""
    import threading
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)     # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:                              # the parent died before prctl
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os._exit(1)

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()


def _init_worker(parent: int | None = None) -> None:
    # Dies with the parent; one thread per worker (the workers are the parallelism); Ctrl-C is
    # the parent's to handle. NumPy's BLAS threads are set before NumPy loads, by the
    # OPENBLAS_NUM_THREADS this worker inherits (nardy_ai/__init__.py): here is too late for it.
    if parent is not None:
        die_with_parent(parent)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Backend:
    """Runs ``fn(task)`` for many tasks; see :meth:`run`."""

    name = "inline"
    retries = 2

    def __init__(self, log: Callable[[str], None] = print):
        self.log = log
        self.restarts = 0        # tasks re-run because their worker died

    @property
    def workers(self) -> int:
        """Tasks that can run at once."""
        return 1

    def describe(self) -> str:
        """One line for logs: what runs the tasks."""
        return "1 process"

    def run(self, fn: Callable[[Any], Any], tasks: Sequence[Any]) -> Iterator[tuple[Any, Any]]:
        """Yield ``(task, fn(task))`` for every task, in the order they finish."""
        for t in tasks:
            yield t, fn(t)

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _strike(self, strikes: dict[int, int], i: int, task: Any, why: str) -> None:
        strikes[i] = strikes.get(i, 0) + 1
        if strikes[i] > self.retries:
            raise BackendError(f"a worker died {strikes[i]} times while running {_label(task)} ({why}); giving up")
        self.restarts += 1
        self.log(f"a worker died while running {_label(task)} ({why}); running it again")


def _call(fn: Callable[[Any], Any], task: Any) -> Any:
    """A Ray task: ``fn(task)`` (Ray needs a plain function; ``fn`` may be a partial)."""
    return fn(task)


def _label(task: Any) -> str:
    label = getattr(task, "label", None)
    return label() if callable(label) else repr(task)


class LocalProcesses(Backend):
    """``jobs`` spawned processes on this machine; a broken pool is replaced and the tasks it
    was running are run again."""

    name = "local"

    def __init__(self, jobs: int, log: Callable[[str], None] = print):
        super().__init__(log)
        check_backend(self.name, jobs)
        self.jobs = jobs

    @property
    def workers(self) -> int:
        return self.jobs

    def describe(self) -> str:
        return f"{self.jobs} process{'es' if self.jobs > 1 else ''}"

    def run(self, fn, tasks):
        if self.jobs <= 1 or len(tasks) <= 1:
            yield from super().run(fn, tasks)
            return
        import multiprocessing as mp
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
        from concurrent.futures.process import BrokenProcessPool

        queue = list(range(len(tasks)))[::-1]         # pop() takes the first task first
        strikes: dict[int, int] = {}
        ctx = mp.get_context("spawn")
        complete = False
        while queue:
            pool = ProcessPoolExecutor(min(self.jobs, len(queue)), mp_context=ctx, initializer=_init_worker,
                                       initargs=(os.getpid(),))
            running: dict = {}
            broken = False
            try:
                while queue or running:
                    # Only `jobs` tasks in flight: when a worker dies, those are the suspects.
                    while queue and len(running) < self.jobs and not broken:
                        i = queue.pop()
                        try:
                            running[pool.submit(fn, tasks[i])] = i
                        except BrokenProcessPool:     # a worker died since the last wait
                            queue.append(i)
                            broken = True
                    if not running:
                        break
                    done, _ = wait(running, return_when=FIRST_COMPLETED)
                    for fut in done:
                        i = running.pop(fut)
                        try:
                            result = fut.result()
                        except BrokenProcessPool:
                            broken = True
                            queue.append(i)
                            self._strike(strikes, i, tasks[i], "worker process ended")
                            continue
                        yield tasks[i], result
                    if broken:
                        for fut, i in running.items():        # lost with the pool: run again
                            queue.append(i)
                        running.clear()
                        break
                else:
                    complete = True
            finally:
                if not complete and not broken:      # interrupted: stop the workers now
                    for p in list(getattr(pool, "_processes", {}).values()):
                        p.terminate()
                pool.shutdown(wait=complete, cancel_futures=True)


class RayTasks(Backend):
    """Ray tasks of one CPU each, at most ``2 x`` the cluster's CPUs in flight."""

    name = "ray"

    def __init__(self, address: str | None = None, jobs: int | None = None,
                 log: Callable[[str], None] = print):
        super().__init__(log)
        check_backend(self.name, jobs, address)
        self.ray = require_ray()
        self.owns = start_ray(address, jobs)
        self.address = address

    @property
    def workers(self) -> int:
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)))

    def describe(self) -> str:
        where = f"cluster {self.address}" if self.address else "local Ray instance"
        return f"Ray {self.ray.__version__}, {where}, {self.workers} CPUs"

    def run(self, fn, tasks):
        ray = self.ray
        from ray import exceptions as rex
        lost_work = ray_lost_work_errors()
        remote = ray.remote(num_cpus=1, max_retries=0)(_call)
        fn_ref = ray.put(fn)
        limit = 2 * self.workers
        queue = list(range(len(tasks)))[::-1]
        strikes: dict[int, int] = {}
        running: dict = {}
        try:
            while queue or running:
                while queue and len(running) < limit:
                    i = queue.pop()
                    running[remote.remote(fn_ref, tasks[i])] = i
                ready, _ = ray.wait(list(running), num_returns=1)
                for ref in ready:
                    i = running.pop(ref)
                    try:
                        result = ray.get(ref)
                    except rex.RayTaskError as e:     # the task raised: not a lost worker
                        raise ray_task_error(e, _label(tasks[i])) from None
                    except lost_work as e:
                        queue.append(i)
                        self._strike(strikes, i, tasks[i], type(e).__name__)
                        continue
                    yield tasks[i], result
        finally:
            for ref in running:
                ray.cancel(ref, force=True)

    def close(self) -> None:
        if self.owns and self.ray.is_initialized():
            self.ray.shutdown()


def check_backend(name: str, jobs: int | None = None, address: str | None = None) -> None:
    """A :class:`BackendError` naming the option, unless ``name``/``jobs``/``address`` go
    together and a cluster ``address`` answers (:func:`probe_ray_address`); checked before
    anything starts or is written."""
    if name not in BACKENDS:
        raise BackendError(f"unknown backend {name!r} (known: {', '.join(BACKENDS)})")
    if address is not None and name != "ray":
        raise BackendError("--address is for --backend ray")
    if jobs is not None and jobs < 1:
        raise BackendError(f"--jobs must be at least 1, got {jobs}")
    if jobs is not None and address is not None:
        raise BackendError("--jobs sets the CPUs of a local Ray instance; with --address the "
                           "cluster's CPUs are used (leave --jobs out)")
    if address is not None:
        probe_ray_address(address)


def progress_bar(total: int, desc: str, show: bool, unit: str = "game"):
    """A tqdm bar on stderr over the ``total`` results of a run (``desc``: the job's name),
    hidden unless ``show`` and there is something to do."""
    from tqdm import tqdm
    return tqdm(total=total, unit=unit, desc=desc, disable=not show or not total, file=sys.stderr,
                dynamic_ncols=True)


def check_backend_choice(backend: str | Backend, jobs: int | None = None, address: str | None = None) -> bool:
    """Whether a job makes (and closes) its own backend: ``backend`` is a name, not a
    :class:`Backend` object.  A name is checked with its options (:func:`check_backend`) and
    ``ray`` needs Ray installed (:func:`require_ray`), before the job writes anything."""
    if isinstance(backend, Backend):
        return False
    check_backend(backend, jobs, address)
    if backend == "ray":
        require_ray()
    return True


def probe_ray_address(address: str, timeout_s: float = 5.0) -> None:
    """A :class:`BackendError` at once unless ``address`` (``auto``, ``HOST:PORT`` or
    ``ray://HOST:PORT``) is well formed and accepts a TCP connection: Ray itself retries an
    unreachable cluster for a minute or more, printing its logs, before it gives up."""
    if address == "auto":                # Ray looks for a cluster on this machine, quickly
        return
    import socket
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    host = host.strip("[]")              # [IPv6]:port
    if not (sep and host and port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        raise BackendError(f"--address {address!r}: expected auto, HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except (OSError, UnicodeError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e) or type(e).__name__
        raise BackendError(f"cannot connect to the Ray cluster at {address}: {why}") from None


def make_backend(name: str, jobs: int | None = None, address: str | None = None,
                 log: Callable[[str], None] = print) -> Backend:
    """The backend called ``name`` (``local`` or ``ray``).  ``jobs``: local worker processes
    (default 1), or the CPUs of a local Ray instance (default: all of this machine's).
    ``address``: a Ray cluster to join (``ray`` only)."""
    check_backend(name, jobs, address)
    if name == "local":
        return LocalProcesses(1 if jobs is None else jobs, log)
    return RayTasks(address, jobs, log)
