"""A run folder's record of what happened: ``metrics.jsonl`` and TensorBoard events.

Every long job that trains something (``nardy train`` with a TD, search-targets or
distillation recipe) writes the same two things into its
folder, through this one class:

* ``metrics.jsonl``: one JSON object a line, appended and never rewritten here (a resume
  trims it with :func:`nardy_ai.files.write_atomic`); NaN and infinities are refused, so
  every line parses with any JSON reader.
* ``tb/``: TensorBoard scalars, tag ``<kind>/<name>``, at a step the caller chooses (games
  for TD, generations for search targets, rounds or epochs for distillation).

Every line also carries ``cpu_seconds``: the CPU time (user + system, in seconds) the run has
used so far, over all its sessions, so that strength can be plotted against CPU-hours whatever
the parallelism (``nardy report``). :func:`cpu_seconds_used` says what is counted: this
process from its start (imports and loading included) when its log is the first one the
process opens, else from the moment the log was opened (a process that trains several runs in
turn), and its worker processes (``--jobs`` pools, the local Ray instance that ``--backend
ray`` starts: its raylet, workers and daemons), live or finished. Not counted: the nodes of a
Ray cluster joined with ``--address``, and on a resume the work of a killed session after its
last checkpoint (the resume drops those lines). A resumed run continues from the last line's
value, so the figure never goes backwards; a run begun before this field existed counts from 0
at its first resume.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections import defaultdict

#: The field every line carries (CPU seconds of the run so far).
CPU_FIELD = "cpu_seconds"
#: Whether no MetricsLog was opened in this process yet (the first one counts from its start).
_first_in_process = True


def _plottable(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _live_descendants_cpu(root: int) -> float:
    """CPU seconds (user + system, with those of their own finished and reaped children) of the
    live processes descended from ``root``, read from ``/proc``; 0 where there is no ``/proc``.
    A process that ends moves its seconds into its parent's count of reaped children, so a
    worker is counted once, while it runs and after it ends."""
    try:
        names = os.listdir("/proc")
        tick = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return 0.0
    children: dict[int, list[int]] = defaultdict(list)
    seconds: dict[int, float] = {}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            # after "pid (comm) ": state, ppid, ..., utime, stime, cutime, cstime (fields 3, 4, 14-17)
            rest = stat[stat.rindex(b")") + 2:].split()
            children[int(rest[1])].append(int(name))
            seconds[int(name)] = sum(int(x) for x in rest[11:15]) / tick
        except (OSError, ValueError, IndexError):
            continue                                 # ended meanwhile, or unreadable
    total, stack = 0.0, list(children.get(root, ()))
    while stack:
        pid = stack.pop()
        total += seconds.get(pid, 0.0)
        stack += children.get(pid, ())
    return total


def cpu_seconds_used() -> float:
    """CPU seconds (user + system) used so far by this process, by its children that ended and
    were reaped (``getrusage`` of ``RUSAGE_SELF`` and ``RUSAGE_CHILDREN``), and by its live
    descendants (``/proc`` on Linux: worker pools and a local Ray instance count while they run,
    not only once they end). Elsewhere: this process and its reaped children only."""
    try:
        import resource
    except ImportError:                              # not a Unix: this process alone
        return time.process_time()
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
            + _live_descendants_cpu(os.getpid()))


def last_cpu_seconds(path: str, tail: int = 1 << 16) -> float:
    """The ``cpu_seconds`` of the last line of the metrics file ``path`` that has one (read
    from its last ``tail`` bytes); 0 when the file is missing or no line there has one."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - tail))
            lines = f.read().split(b"\n")
    except OSError:
        return 0.0
    for raw in reversed(lines):
        try:
            value = json.loads(raw).get(CPU_FIELD)
        except (ValueError, AttributeError):
            continue                                 # torn, cut at the tail's start, or not an object
        if _plottable(value) and value >= 0:
            return float(value)
    return 0.0


class MetricsLog:
    """Append-only ``FOLDER/metrics.jsonl`` plus TensorBoard under ``FOLDER/tb``.

    ``tensorboard=False`` writes the JSONL only; ``purge_step`` (on a resume) makes
    TensorBoard drop the events a killed session logged from that step on.

    Every line gets ``cpu_seconds`` (unless the record has it): the value of the file's last
    line that had one (read at this log's first line, so after a resume has trimmed the file)
    plus the CPU seconds of :func:`cpu_seconds_used` since this process started (the first
    log a process opens) or since this log was opened (any later one); never less than the
    previous line's."""

    def __init__(self, folder: str, tensorboard: bool = True, purge_step: int | None = None):
        os.makedirs(folder, exist_ok=True)
        self.path = os.path.join(folder, "metrics.jsonl")
        global _first_in_process
        # this process's count to start from: 0 (its start) for its first log, else now
        self.cpu_start = 0.0 if _first_in_process else cpu_seconds_used()
        _first_in_process = False
        self.cpu_before: float | None = None          # the run's seconds before that (first line)
        self.cpu_last = 0.0
        self.writer = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter     # a core dependency
            self.writer = SummaryWriter(os.path.join(folder, "tb"), purge_step=purge_step)

    def cpu_seconds(self) -> float:
        """The run's CPU seconds so far (the value the next line gets)."""
        if self.cpu_before is None:
            self.cpu_before = self.cpu_last = last_cpu_seconds(self.path)
        now = self.cpu_before + max(0.0, cpu_seconds_used() - self.cpu_start)
        self.cpu_last = max(self.cpu_last, now)
        return self.cpu_last

    def line(self, record: dict) -> None:
        """Append one JSON line with the run's ``cpu_seconds`` (ValueError on NaN or an
        infinity: the file stays valid JSON)."""
        if CPU_FIELD not in record:
            record = {**record, CPU_FIELD: round(self.cpu_seconds(), 3)}
        text = json.dumps(record, allow_nan=False)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(text + "\n")

    def scalars(self, kind: str, values: dict, step: int, /) -> None:
        """The finite numbers of ``values`` to TensorBoard as ``kind/name`` at ``step``
        (strings, booleans, NaN are left to the JSONL)."""
        if self.writer is None:
            return
        for k, v in values.items():
            if _plottable(v):
                self.writer.add_scalar(f"{kind}/{k}", v, step)

    def record(self, kind: str, step: int, values: dict, /, **fields) -> None:
        """Both at once: ``{**fields, **values}`` as a JSON line, ``values`` as scalars
        (``fields`` may hold ``kind`` and ``step`` too: the first three are positional)."""
        self.line({**fields, **values})
        self.scalars(kind, values, step)

    def flush(self) -> None:
        if self.writer is not None:
            self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()

    def __enter__(self) -> "MetricsLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
