"""The run folder's record (training/metrics_log.py): what every long training job writes."""

import json
import math

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from training.metrics_log import MetricsLog


def _scalars(folder):
    acc = EventAccumulator(str(folder / "tb"))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_record_appends_a_line_and_plots_only_finite_numbers(tmp_path):
    with MetricsLog(str(tmp_path)) as log:
        log.record("fit/race", 1, {"val_loss": 0.5, "net_name": "race", "warm": True},
                   net="race", epoch=1)
        log.record("fit/race", 2, {"val_loss": 0.25}, net="race", epoch=2)
    lines = [json.loads(x) for x in open(tmp_path / "metrics.jsonl")]
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
    assert [json.loads(x) for x in open(tmp_path / "metrics.jsonl")] == [{"loss": 1.0}]


def test_scalars_skip_non_finite_values(tmp_path):
    with MetricsLog(str(tmp_path)) as log:
        log.scalars("gate", {"ppg": 0.1, "lo": math.inf, "hi": math.nan}, 3)
    assert _scalars(tmp_path) == {"gate/ppg": [(3, pytest.approx(0.1))]}
