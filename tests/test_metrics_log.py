"""The run folder's record (training/metrics_log.py): what every long training job writes."""

import json
import math
import subprocess
import sys
import time

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from training.metrics_log import CPU_FIELD, MetricsLog, cpu_seconds_used


def _lines(folder, keep_cpu=False):
    """The JSON lines of ``folder/metrics.jsonl`` (without ``cpu_seconds`` unless asked)."""
    out = [json.loads(x) for x in open(folder / "metrics.jsonl")]
    return out if keep_cpu else [{k: v for k, v in d.items() if k != CPU_FIELD} for d in out]


def _burn(seconds):
    """Use about ``seconds`` of this process's CPU time."""
    start = time.process_time()
    x = 0
    while time.process_time() - start < seconds:
        x += sum(range(1000))
    return time.process_time() - start


def _scalars(folder):
    acc = EventAccumulator(str(folder / "tb"))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_record_appends_a_line_and_plots_only_finite_numbers(tmp_path):
    with MetricsLog(str(tmp_path)) as log:
        log.record("fit/race", 1, {"val_loss": 0.5, "net_name": "race", "warm": True},
                   net="race", epoch=1)
        log.record("fit/race", 2, {"val_loss": 0.25}, net="race", epoch=2)
    lines = _lines(tmp_path)
    assert lines == [{"net": "race", "epoch": 1, "val_loss": 0.5, "net_name": "race", "warm": True},
                     {"net": "race", "epoch": 2, "val_loss": 0.25}]
    assert _scalars(tmp_path) == {"fit/race/val_loss": [(1, 0.5), (2, 0.25)]}   # no string, no bool


def test_a_later_session_appends(tmp_path):
    MetricsLog(str(tmp_path), tensorboard=False).line({"kind": "session", "games": 0})
    MetricsLog(str(tmp_path), tensorboard=False).line({"kind": "session", "games": 10})
    assert [json.loads(x)["games"] for x in open(tmp_path / "metrics.jsonl")] == [0, 10]
    assert not (tmp_path / "tb").exists()


def test_nan_is_refused_and_the_file_stays_valid(tmp_path):
    log = MetricsLog(str(tmp_path), tensorboard=False)
    log.line({"loss": 1.0})
    with pytest.raises(ValueError):
        log.line({"loss": math.nan})
    assert _lines(tmp_path) == [{"loss": 1.0}]


def test_scalars_skip_non_finite_values(tmp_path):
    with MetricsLog(str(tmp_path)) as log:
        log.scalars("gate", {"ppg": 0.1, "lo": math.inf, "hi": math.nan}, 3)
    assert _scalars(tmp_path) == {"gate/ppg": [(3, pytest.approx(0.1))]}


def test_every_line_carries_the_cpu_seconds_of_the_run(tmp_path):
    log = MetricsLog(str(tmp_path), tensorboard=False)
    log.line({"kind": "session"})
    burnt = _burn(0.2)
    log.line({"kind": "train", "loss": 0.5})
    log.line({"kind": "eval", CPU_FIELD: 7.0})                      # a caller's own value stays
    first, second, third = (d[CPU_FIELD] for d in _lines(tmp_path, keep_cpu=True))
    assert 0 <= first <= second and third == 7.0
    assert second - first >= burnt - 0.02                           # rusage ticks: 10 ms at worst
    assert second - first < burnt + 5


def test_a_resumed_run_continues_from_the_last_lines_cpu_seconds(tmp_path):
    with open(tmp_path / "metrics.jsonl", "w") as f:                 # an earlier session; a line torn by a kill
        f.write(json.dumps({"kind": "train", CPU_FIELD: 1000.0}) + "\n" + json.dumps({"kind": "x"}) + "\n{\"kin\n")
    log = MetricsLog(str(tmp_path), tensorboard=False)
    _burn(0.05)
    log.line({"kind": "session"})
    log.line({"kind": "train"})
    values = [json.loads(x)[CPU_FIELD] for x in open(tmp_path / "metrics.jsonl").read().splitlines()[3:]]
    assert 1000.0 < values[0] <= values[1] <= 1000.0 + cpu_seconds_used()   # never backwards
    again = MetricsLog(str(tmp_path), tensorboard=False)             # a third session
    again.line({"kind": "session"})
    last = open(tmp_path / "metrics.jsonl").read().splitlines()[-1]
    assert json.loads(last)[CPU_FIELD] >= values[1]


def test_a_run_begun_without_the_field_counts_from_zero(tmp_path):
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"kind": "train", "games": 10}) + "\n")
    MetricsLog(str(tmp_path), tensorboard=False).line({"kind": "session"})
    assert 0 <= _lines(tmp_path, keep_cpu=True)[-1][CPU_FIELD] <= cpu_seconds_used()


def test_the_first_log_of_a_process_counts_from_its_start(tmp_path):
    """A `nardy train` session's imports and loading are CPU of the run: the first log a process
    opens counts from the process's start; a later one (another run in turn) from its opening."""
    code = ("import sys, time\ns = time.process_time()\nwhile time.process_time() - s < 0.3: sum(range(1000))\n"
            "from training.metrics_log import MetricsLog\n"
            "MetricsLog(sys.argv[1], tensorboard=False).line({'run': 1})\n"
            "MetricsLog(sys.argv[2], tensorboard=False).line({'run': 2})")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "a"), str(tmp_path / "b")], check=True)
    assert _lines(tmp_path / "a", keep_cpu=True)[0][CPU_FIELD] >= 0.3
    assert _lines(tmp_path / "b", keep_cpu=True)[0][CPU_FIELD] < 0.15


def test_worker_processes_count_while_they_run_and_once_after_they_end(tmp_path):
    """A child's CPU is in the next line while it runs (read from /proc), and is not counted a
    second time once it ends and is reaped (then getrusage's children count has it)."""
    if not (sys.platform.startswith("linux")):
        pytest.skip("live worker processes are read from /proc (Linux only)")
    log = MetricsLog(str(tmp_path), tensorboard=False)
    log.line({"kind": "session"})
    code = ("import sys, time\ns = time.process_time()\nwhile time.process_time() - s < 0.4: sum(range(1000))\n"
            "print(time.process_time(), flush=True)\nsys.stdin.read()")
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        child_cpu = float(child.stdout.readline())
        log.line({"kind": "live"})
    finally:
        child.stdin.close()
        child.wait()
    log.line({"kind": "reaped"})
    start, live, reaped = (d[CPU_FIELD] for d in _lines(tmp_path, keep_cpu=True))
    assert live - start >= child_cpu - 0.03                          # counted while it runs
    assert reaped - live < child_cpu / 2                             # and not again once reaped


def test_td_training_writes_the_cpu_seconds_across_a_resume(tmp_path):
    """The trainers write through MetricsLog: every line of a TD run has the field, and it never
    goes backwards over a resume."""
    from training.config import config_from_dict
    from training.td import Trainer
    cfg = config_from_dict({"variant": "backgammon", "seed": 5, "td": {"batch_size": 64},
                            "selfplay": {"parallel_games": 32, "total_games": 64},
                            "run": {"checkpoint_every": 32, "eval_every": 0, "log_every": 32}})
    Trainer(cfg, str(tmp_path / "run"), config_text="# test\n").run(total_games=32, progress=False)
    first = _lines(tmp_path / "run", keep_cpu=True)
    Trainer(cfg, str(tmp_path / "run"), resume=True).run(total_games=64, progress=False)
    lines = _lines(tmp_path / "run", keep_cpu=True)
    assert len(lines) > len(first) and all(CPU_FIELD in d for d in lines)
    values = [d[CPU_FIELD] for d in lines]
    assert values == sorted(values) and values[-1] > first[-1][CPU_FIELD] > 0
