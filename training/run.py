"""The life of a training run in its folder, the same for every method of ``nardy train``.

A method (TD(lambda) self-play, search-target generations, distillation rounds) is the work it
does; everything around that work is here, written once:

* **the folder**: one process at a time (an ``flock`` on ``DIR/.lock``); a new run refuses a
  folder that already holds one (``state.json`` or ``checkpoint.pt``); nothing is written
  before every check has passed; ``config.toml`` is the recipe as given, written atomically;
* **resume**: the run's own state is read under the lock, the recipe compared with the one the
  run was started with (:meth:`Run._require_same_config`: only what may change, such as
  ``[run]``, ``[ray]`` or a longer target, may differ; the error names the keys), a staged run
  goes back to the first phase whose inputs are on disk (:meth:`StagedRun._rewind`: after a
  kill -9, or in a fresh clone without the large intermediate files), and ``metrics.jsonl``
  loses the lines of the work that is done again (:meth:`Run._trim_metrics`), so that its
  counts never go backwards;
* **the one metrics writer** (:class:`training.metrics_log.MetricsLog`): ``metrics.jsonl`` and
  TensorBoard, opened unless the run is finished (a finished run's ``--resume`` writes nothing);
* **stopping**: :meth:`Run.request_stop` (Ctrl-C and SIGTERM through
  :meth:`Run.stop_on_signals`: the first signal stops at the next safe point, a second one
  kills), after which the run keeps its finished work and ``nardy train`` prints the command
  that continues it (:func:`cli_train`);
* progress bars, ``close``, the finished and interrupted messages.

:class:`StagedRun` adds what search targets and distillation share: ``state.json`` (written
atomically) with the unit of work (a generation, a round), its phase and the results so far,
``current.pt`` (the current evaluator), a folder per unit, the loop over the phases, and the
backend that runs their tasks; :class:`training.search_targets.LabellingRun` adds their unit
files, label chunks and gate.  The TD trainer keeps its state in ``checkpoint.pt``
(:class:`training.td.Trainer`).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import shlex
import signal
import sys
import time
from typing import Callable, Iterator

import torch

from nardy_ai.board import parse_json
from nardy_ai.errors import FormatError, NardyError
from nardy_ai.files import FolderLock, write_atomic
from nardy_ai.evaluator import load_evaluator
from nardy_ai.variants import parse_variant_spec

from .config import ConfigError, TrainConfig, require_same_config
from .metrics_log import MetricsLog

#: Version of ``state.json`` (search targets and distillation).
STATE_FORMAT = 1


class Run:
    """A training run in a folder (module docstring).  A method subclasses it and provides
    :meth:`_start` and :meth:`_write_start` (a new run), :meth:`_load` (a resumed one),
    :attr:`finished`, :meth:`_keep_line` (what a resume keeps of ``metrics.jsonl``) and
    ``run()``; the constructor of a subclass calls :meth:`_setup` then :meth:`_open`."""

    #: The file that holds the run's state (its presence: there is a run to resume).
    STATE_FILE = "state.json"
    #: Files whose presence means that a folder holds a run (a new run refuses the folder).
    MARKERS = ("state.json", "checkpoint.pt")
    #: The error of a damaged run folder (a subclass of NardyError).
    ERROR: type[NardyError] = NardyError

    # --- set-up ----------------------------------------------------------------------

    def _setup(self, cfg: TrainConfig, run_dir: str, backend: str = "local", jobs: int | None = None,
               address: str | None = None, log: bool = True, print_fn=print) -> None:
        """What every run checks and sets before it looks at its folder: the backend and its
        options (Ray must be importable before any file is written), torch threads
        (``run.threads``) and the device (``run.device``)."""
        from nardy_ai.backends import check_backend, require_ray
        self.cfg = cfg
        self.v = parse_variant_spec(cfg.variant)
        self.run_dir = run_dir
        self.state_path = os.path.join(run_dir, self.STATE_FILE)
        check_backend(backend, jobs, address)
        if backend == "ray":
            require_ray()                 # before any file is written
        self.backend_name, self.jobs, self.address = backend, jobs, address
        self.print = print_fn
        self.log_enabled = log
        self.progress = False
        self.stop_requested = False
        self.metrics: MetricsLog | None = None
        self.lock: FolderLock | None = None
        if cfg.run.threads:
            torch.set_num_threads(cfg.run.threads)
        device = None if cfg.run.device == "auto" else cfg.run.device
        if device == "cuda" and not torch.cuda.is_available():
            raise ConfigError("run.device: cuda, but this torch sees no CUDA device (use auto or cpu)")
        self.device = device

    def _open(self, resume: bool, config_text: str | None) -> None:
        """Resume the run in the folder, or start a new one there; then the metrics writer
        (not for a finished run: its ``--resume`` writes nothing)."""
        self._check_ahead()
        if resume:
            self._open_existing(config_text)
        else:
            self._open_new(config_text)
        if self.log_enabled and not self.finished:
            self.metrics = MetricsLog(self.run_dir, purge_step=self._purge_step(resume))

    def _open_existing(self, config_text: str | None) -> None:
        if not os.path.exists(self.state_path):
            raise self._no_run_error()
        self.lock = FolderLock(self.run_dir, "nardy train")
        try:
            self._load(config_text)
            if not self.finished:         # a finished run: nothing written
                self._rewind()
                self._trim_metrics()
        except BaseException:
            self.lock.release()
            raise

    def _open_new(self, config_text: str | None) -> None:
        self._refuse_a_run_in_the_folder()
        self._start()                     # in memory; every check before the folder is written
        try:
            os.makedirs(self.run_dir, exist_ok=True)
        except OSError as e:
            raise NardyError(f"cannot create the run folder {self.run_dir}: {e.strerror}") from None
        self.lock = FolderLock(self.run_dir, "nardy train")
        try:
            self._refuse_a_run_in_the_folder()          # started by another process meanwhile
            if config_text is not None:
                write_atomic(os.path.join(self.run_dir, "config.toml"), config_text, self.ERROR)
            self._write_start()
        except BaseException:
            self.lock.release()
            raise

    def _refuse_a_run_in_the_folder(self) -> None:
        if any(os.path.exists(os.path.join(self.run_dir, m)) for m in self.MARKERS):
            raise NardyError(f"{self.run_dir} already holds a run; use --resume to continue it "
                             f"or --out to start a new one")

    def _no_run_error(self) -> NardyError:
        """The error of ``--resume`` in a folder without the run's state file."""
        return NardyError(f"{self.run_dir} holds no run to resume (no {self.STATE_FILE})")

    def _check_ahead(self) -> None:
        """Checks of a new or resumed run before its folder is touched (the evaluation
        opponents by default: a spec that names no agent fails now, not after hours)."""
        self.check_eval_opponents()

    def check_eval_opponents(self) -> dict:
        """The agents of ``run.eval_opponents`` by spec; a :class:`ConfigError` naming the key
        for a spec that names no agent of this variant."""
        from nardy_ai.agents import make_agent
        out = {}
        for spec in self.cfg.run.eval_opponents:
            try:
                out[spec] = make_agent(spec, self.v)
            except NardyError as e:
                raise ConfigError(f"run.eval_opponents: {e}") from None
        return out

    def _require_same_config(self, saved: dict, now: dict, free: tuple[str, ...]) -> None:
        """Refuse a resume whose recipe differs from the run's (:meth:`TrainConfig.to_dict`
        forms) in anything but ``free``: sections (``"run"``) or keys (``"method.generations"``)
        that a resumed run may change.  The error names the changed keys."""
        a, b = copy.deepcopy(saved), copy.deepcopy(now)
        for d in (a, b):
            for name in free:
                section, _, key = name.partition(".")
                if key:
                    d.get(section, {}).pop(key, None)
                else:
                    d.pop(section, None)
        require_same_config(a, b, self.run_dir)

    # --- what a method provides ------------------------------------------------------

    @property
    def finished(self) -> bool:
        """The run has done all its recipe asks (its ``--resume`` says so and writes nothing)."""
        raise NotImplementedError

    def _start(self) -> None:
        """A new run, in memory: build and check what it starts from (no file written)."""
        raise NotImplementedError

    def _write_start(self) -> None:
        """A new run's first files, under the folder lock (after ``config.toml``)."""

    def _load(self, config_text: str | None) -> None:
        """A resumed run: read its state (under the lock) and check the recipe against it."""
        raise NotImplementedError

    def _rewind(self) -> None:
        """On resume: go back to work whose inputs are on disk (a staged run's phases)."""

    def _keep_line(self, line: dict) -> bool:
        """On resume: whether a line of ``metrics.jsonl`` stays (the work it records is kept)."""
        return True

    def _trimmed(self, path: str, dropped: int) -> None:
        """Told when a resume dropped ``dropped`` lines of ``metrics.jsonl``."""

    def _purge_step(self, resume: bool) -> int | None:
        """TensorBoard's purge step of a resumed session (None: keep every event)."""
        return None

    def finished_message(self) -> str:
        """What ``--resume`` of a finished run says (and how to extend it)."""
        raise NotImplementedError

    def summary(self, result: dict) -> str:
        """The line ``nardy train`` prints when :meth:`run` returns."""
        raise NotImplementedError

    def stopped_at(self, result: dict) -> str:
        """Where a stopped run stopped, for ``nardy: interrupted ...; continue with: ...``."""
        raise NotImplementedError

    # --- metrics ---------------------------------------------------------------------

    def _trim_metrics(self) -> int:
        """On resume: drop from ``metrics.jsonl`` the lines of work done again (those
        :meth:`_keep_line` refuses) and a torn last line, so that the file's counts never go
        backwards.  Rewritten atomically when a line is dropped; returns how many were."""
        path = os.path.join(self.run_dir, "metrics.jsonl")
        try:
            with open(path, "rb") as f:
                lines = f.read().split(b"\n")
        except FileNotFoundError:
            return 0
        except OSError as e:
            raise NardyError(f"cannot read {path}: {e.strerror}") from None
        keep, total = [], 0
        for raw in lines:
            if not raw.strip():
                continue
            total += 1
            try:
                line = parse_json(raw)
            except FormatError:
                continue                  # a torn last line
            if isinstance(line, dict) and self._keep_line(line):
                keep.append(raw + b"\n")
        dropped = total - len(keep)
        if dropped:
            write_atomic(path, b"".join(keep), self.ERROR)
            self._trimmed(path, dropped)
        return dropped

    @staticmethod
    def now() -> float:
        """The wall-clock time of a metrics line (seconds since the epoch, to the millisecond)."""
        return round(time.time(), 3)

    # --- running ---------------------------------------------------------------------

    def _begin(self, progress: bool) -> None:
        """The start of a :meth:`run` session: the folder lock (again, for a second session
        of this object) and the metrics writer."""
        if self.lock is None or not self.lock.held:
            self.lock = FolderLock(self.run_dir, "nardy train")
        self.progress = progress
        if self.log_enabled and self.metrics is None:
            self.metrics = MetricsLog(self.run_dir)

    def progress_bar(self, total: int | None, desc: str, unit: str, initial: int = 0):
        """A progress bar on the terminal (none without ``progress``)."""
        from tqdm import tqdm
        return tqdm(total=total, initial=initial, unit=unit, disable=not self.progress,
                    dynamic_ncols=True, desc=desc)

    def request_stop(self) -> None:
        """Stop at the next safe point; :meth:`run` then returns with its finished work kept
        (signal handlers call it)."""
        self.stop_requested = True

    def _stopping(self) -> bool:
        return self.stop_requested

    @contextlib.contextmanager
    def stop_on_signals(self) -> Iterator[None]:
        """Inside the block, Ctrl-C (SIGINT) and SIGTERM ask the run to stop at the next safe
        point; a second signal of the same kind kills as usual."""
        def stop(signum, frame):
            signal.signal(signum, signal.SIG_DFL)
            self.request_stop()

        before = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in before.items():
                signal.signal(sig, handler)

    def close(self) -> None:
        """Let another process use the run folder and close the metrics writer (:meth:`run`
        releases the folder when it returns; a later :meth:`run` takes both again)."""
        if self.lock is not None:
            self.lock.release()
        if self.metrics is not None:
            self.metrics.close()
            self.metrics = None

    # --- nardy train -----------------------------------------------------------------

    @classmethod
    def from_cli(cls, args, cfg: TrainConfig, text: str, out: str, games: int | None = None) -> "Run":
        """The run ``nardy train`` asks for (``args``: its options, the backend ones already
        merged with those the folder remembers; ``games``: the remembered ``--games`` target).
        A method refuses the options that are not its own."""
        return cls(cfg, out, config_text=text, resume=args.resume, backend=args.backend,
                   jobs=getattr(args, "jobs", None), address=args.address)


def label_chunk_paths(unit_dir: str, rows: int, chunk: int) -> list[str]:
    """The label files of a unit folder whose sample holds ``rows`` rows labelled ``chunk`` rows
    a file: ``labels/chunk_NNNN.npz``, in row order (the last one may hold fewer rows).  The one
    place that names them, for the run that writes and reads them and for scripts that read a
    run folder."""
    return [os.path.join(unit_dir, "labels", f"chunk_{i:04d}.npz") for i in range(-(-rows // chunk))]


class StagedRun(Run):
    """A run of units (generations, rounds) of phases, each phase resumable (module docstring).

    A method sets :attr:`PHASES`, :attr:`UNIT` (the key of ``state.json`` and of the metrics
    lines: ``"generation"``, ``"round"``) and provides one method per phase (``steps()``:
    phase -> callable of the unit, True when the phase is done, False when stopped),
    :meth:`unit_dir`, :attr:`units`, :meth:`_initial_state`, :meth:`_starting_evaluator`,
    :meth:`_start_payload`, and the phase files :meth:`_read_samples` and :meth:`_label_chunk`
    (the label files are :func:`label_chunk_paths` of the unit folder)."""

    PHASES: tuple[str, ...] = ()
    UNIT = ""
    #: Kinds of metrics lines of the phase in progress that a resume keeps (their files are kept).
    KEPT_KINDS: tuple[str, ...] = ()
    #: What ``state.json`` is the state of, in its error message.
    STATE_WHAT = "a run"
    #: How the run ends, in the error refusing ``--games`` (a TD option).
    STOPS_AFTER = ""
    #: What ``--backend ray`` runs as Ray tasks, in the error refusing ``--actors`` (a TD option).
    RAY_TASKS = ""

    def __init__(self, cfg: TrainConfig, run_dir: str, config_text: str | None = None,
                 resume: bool = False, backend: str = "local", jobs: int | None = None,
                 address: str | None = None, log: bool = True, print_fn=print):
        self._setup(cfg, run_dir, backend, jobs, address, log, print_fn)
        self._open(resume, config_text)

    @classmethod
    def from_cli(cls, args, cfg, text, out, games=None):
        if getattr(args, "games", None) is not None:
            raise NardyError(f"--games is for TD training; {cls.STATE_WHAT} stops after {cls.STOPS_AFTER}")
        if getattr(args, "actors", None) is not None:
            raise NardyError(f"--actors is for TD training (--backend ray runs {cls.RAY_TASKS} as Ray tasks)")
        return super().from_cli(args, cfg, text, out, games)

    def _setup(self, *a, **kw) -> None:
        super()._setup(*a, **kw)
        self.current_path = os.path.join(self.run_dir, "current.pt")

    # --- state -----------------------------------------------------------------------

    @property
    def units(self) -> int:
        """Units (generations, rounds) of the recipe."""
        raise NotImplementedError

    @property
    def finished(self) -> bool:
        return self.state[self.UNIT] > self.units

    def _initial_state(self) -> dict:
        raise NotImplementedError

    def _state_ok(self, state) -> bool:
        return (isinstance(state, dict) and state.get("format") == STATE_FORMAT
                and state.get("phase") in self.PHASES)

    def _read_state(self) -> dict:
        try:
            with open(self.state_path, encoding="utf-8") as f:
                state = json.load(f)
        except (OSError, ValueError) as e:
            raise self.ERROR(f"cannot read {self.state_path}: {e}") from None
        if not self._state_ok(state):
            raise self.ERROR(f"{self.state_path} is not the state of {self.STATE_WHAT} (format {STATE_FORMAT})")
        return state

    def _write_state(self) -> None:
        write_json(self.state_path, self.state, self.ERROR)

    def _starting_evaluator(self):
        """The evaluator a new run starts from, checked against the recipe."""
        raise NotImplementedError

    def _start_payload(self, ev) -> dict:
        """``current.pt`` of a new run."""
        raise NotImplementedError

    def _start(self) -> None:
        self._start_ev = self._starting_evaluator()

    def _write_start(self) -> None:
        from nardy_ai.model import save_checkpoint
        save_checkpoint(self.current_path, self._start_payload(self._start_ev))
        del self._start_ev
        self.state = self._initial_state()
        self._write_state()

    # --- resume ----------------------------------------------------------------------

    def unit_dir(self, u: int) -> str:
        raise NotImplementedError

    def _read_samples(self, u: int) -> dict:
        raise NotImplementedError

    def _label_chunk(self, u: int) -> int:
        """Rows a label chunk of unit ``u`` holds."""
        raise NotImplementedError

    def _chunk_paths(self, u: int) -> list[str]:
        """Unit ``u``'s label files, in row order (reads its sample for the row count)."""
        return label_chunk_paths(self.unit_dir(u), len(self._read_samples(u)["boards"]), self._label_chunk(u))

    def _inputs_on_disk(self, u: int, phase: str) -> bool:
        """Whether the files phase ``phase`` of unit ``u`` reads are on disk: the candidate
        for the gate, the sample and every label chunk for the fit, the sample for the label
        phase (a method with other phases adds theirs)."""
        if phase == "gate":
            return os.path.exists(os.path.join(self.unit_dir(u), "candidate.pt"))
        if phase in ("label", "fit"):
            try:
                paths = self._chunk_paths(u)
            except (OSError, NardyError):
                return False
            return phase == "label" or all(os.path.exists(p) for p in paths)
        return True

    def _rewind(self) -> None:
        """On resume: start the unit's work again at the last phase up to the one in progress
        whose inputs are on disk.  The unit folders are large and not shipped with a run, so a
        fresh clone resumes a run stopped mid-unit by doing the unit again from its first
        phase (every phase is seeded: the same rows, labels and nets)."""
        u, was = self.state[self.UNIT], self.state["phase"]
        phase = was
        while phase != self.PHASES[0] and not self._inputs_on_disk(u, phase):
            phase = self.PHASES[self.PHASES.index(phase) - 1]
        if phase != was:
            self.print(f"{self.UNIT} {u}: the files of phase {was} are not in {self.unit_dir(u)}; "
                       f"starting again at {phase}")
            self.state["phase"] = phase
            self._write_state()

    def _keep_line(self, line: dict) -> bool:
        """The lines of the phases that start again go (those of this unit from the phase in
        progress on, and of later units); the part and chunk lines of the phase in progress
        stay, as their files do."""
        u, phase = self.state[self.UNIT], self.state["phase"]
        lu, lp = line.get(self.UNIT), line.get("phase")
        if lp not in self.PHASES or not isinstance(lu, int):
            return True
        if lu > u:
            return False
        if lu == u and self.PHASES.index(lp) >= self.PHASES.index(phase):
            return lp == phase and line.get("kind") in self.KEPT_KINDS
        return True

    # --- metrics ---------------------------------------------------------------------

    def _log(self, kind: str, u: int, phase: str, scalars: dict, tb: bool = True, **extra) -> None:
        """One metrics.jsonl line; numbers also to TensorBoard as ``kind/name`` at step ``u``."""
        if not self.log_enabled:
            return
        self.metrics.line({"kind": kind, self.UNIT: u, "phase": phase, "time": self.now(), **extra, **scalars})
        if tb:
            self.metrics.scalars(kind, scalars, u)

    # --- the units -------------------------------------------------------------------

    def steps(self) -> dict[str, Callable[[int], bool]]:
        """Phase -> the method that runs it for a unit."""
        raise NotImplementedError

    def _checkpoint_bytes(self) -> tuple[str, bytes]:
        """``current.pt``'s sha256 and bytes (what backend tasks carry)."""
        with open(self.current_path, "rb") as f:
            data = f.read()
        return hashlib.sha256(data).hexdigest(), data

    def _load_current(self, device=None):
        """The current evaluator (``current.pt``) on ``device`` (default: the run's)."""
        return load_evaluator(self.current_path, self.v, device if device is not None else self.device)

    def run(self, progress: bool = True) -> dict:
        """Run the units' phases until the recipe's units are done or a stop is requested.
        Returns ``{UNIT, "phase", "stopped", "history"}``."""
        from nardy_ai.backends import make_backend
        from nardy_ai.machine import machine_description
        self._begin(progress)
        self.backend = make_backend(self.backend_name, self.jobs, self.address, log=self.print)
        if self.log_enabled:
            self.metrics.line({"kind": "session", self.UNIT: self.state[self.UNIT],
                               "phase_at_start": self.state["phase"], "time": self.now(),
                               "backend": self.backend.describe(), "machine": machine_description()})
        steps = self.steps()
        try:
            while not self.finished and not self.stop_requested:
                u, phase = self.state[self.UNIT], self.state["phase"]
                os.makedirs(self.unit_dir(u), exist_ok=True)
                t0 = time.perf_counter()
                done = steps[phase](u)
                self.state["seconds"][phase] = self.state["seconds"].get(phase, 0.0) + time.perf_counter() - t0
                if not done:
                    break
                nxt = self.PHASES.index(phase) + 1
                if nxt == len(self.PHASES):
                    self.state[self.UNIT], self.state["phase"] = u + 1, self.PHASES[0]
                else:
                    self.state["phase"] = self.PHASES[nxt]
                self._write_state()
            self._write_state()
            if self.metrics is not None:
                self.metrics.flush()
        finally:
            self.backend.close()
            self.lock.release()
        return {self.UNIT: self.state[self.UNIT], "phase": self.state["phase"], "stopped": self.stop_requested,
                "history": self.state["history"]}

    def _tasks(self, fn, tasks: list, desc: str, unit: str, size: Callable, done: int, total: int,
               rate: str = "per_s"):
        """Yield ``(task, result)`` as ``fn``'s tasks finish on the backend, with a progress
        bar (``size(task)`` of ``unit`` each, ``done`` of ``total`` before; the rate shown as
        ``rate``); stops, ending the tasks in flight, when a stop is requested."""
        bar = self.progress_bar(total, desc, unit, initial=done)
        t0, n = time.perf_counter(), 0
        runs = self.backend.run(fn, tasks)
        try:
            for task, result in runs:
                n += size(task)
                bar.update(size(task))
                bar.set_postfix({rate: f"{n / max(time.perf_counter() - t0, 1e-9):.0f}"})
                yield task, result
                if self.stop_requested:
                    break
        finally:
            runs.close()
            bar.close()

    # --- nardy train -----------------------------------------------------------------

    def summary(self, result: dict) -> str:
        done = result["history"]
        return (f"{len(done)} {self.UNIT}(s) in {self.run_dir}, {sum(1 for h in done if h['promoted'])} promoted; "
                f"current evaluator {self.current_path} ({self.UNIT} {self.state['current_' + self.UNIT]})")

    def stopped_at(self, result: dict) -> str:
        return f"in {self.UNIT} {result[self.UNIT]}, phase {result['phase']} (finished work kept)"


def write_json(path: str, obj: dict, error: type[NardyError] = NardyError) -> None:
    """``obj`` as indented JSON in ``path``, atomically (no NaN: any JSON reader reads it)."""
    write_atomic(path, json.dumps(obj, indent=1, allow_nan=False) + "\n", error)


def cli_train(method: type[Run], args, cfg: TrainConfig, text: str, out: str,
              resume_command: list[str] | None = None, on_start: Callable[[], None] = lambda: None,
              games: int | None = None) -> int:
    """``nardy train`` for every method (``method``: the :class:`Run` subclass of the recipe's
    ``[method] kind``): open the run (a finished one says so and how to extend it, exit 0),
    run it with Ctrl-C / SIGTERM stopping it cleanly, then print what it did; a stopped run
    prints the command that continues it (``resume_command``) and exits with status 130.
    ``on_start()`` once the run folder is set up (the CLI remembers its options there);
    ``games``: the ``--games`` target (TD), given or remembered."""
    run = method.from_cli(args, cfg, text, out, games)
    if run.finished:
        run.close()
        print(run.finished_message())
        return 0
    on_start()
    with run.stop_on_signals():
        res = run.run(progress=not args.no_progress)
    run.close()
    print(run.summary(res))
    if run.stop_requested:
        again = resume_command or ["nardy", "train", "--out", out, "--resume"]
        print(f"nardy: interrupted {run.stopped_at(res)}; continue with: {shlex.join(again)}", file=sys.stderr)
        return 130
    return 0
