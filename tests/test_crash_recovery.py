"""What a user may rely on after a crash (issue #14, README "After a crash"): kill -9 of a
training run or of a `--jobs 2` tournament leaves no process behind, and `--resume` finishes
with every game exactly once and metrics that never go backwards; one process at a time in a
run folder; training that diverges stops with the last good checkpoint kept."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from nardy_ai.board import parse_json
from nardy_ai.errors import NardyError
from nardy_ai.model import load_checkpoint
from training.config import ConfigError, config_from_dict
from training.td import Trainer, TrainingDiverged
from pipeline_helpers import toml_text

NARDY = [sys.executable, "-m", "nardy_ai.cli"]
linux_only = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads the process table in /proc")


def small_recipe(**over) -> dict:
    """A quick backgammon TD recipe (32 games a batch and an update, no evaluation) as a dict;
    ``over``: {section: {key: value}} replacing its keys."""
    cfg = {"variant": "backgammon", "seed": 3, "selfplay": {"parallel_games": 32, "total_games": 10 ** 6},
           "td": {"update_games": 32}, "run": {"checkpoint_every": 64, "eval_every": 0, "log_every": 32}}
    for section, values in over.items():
        cfg.setdefault(section, {}).update(values)
    return cfg


def small_config(**over):
    return config_from_dict(small_recipe(**over))


def metrics(run: Path) -> list[dict]:
    """Every line of the run's metrics.jsonl, read as strict JSON (no NaN, no torn line)."""
    return [parse_json(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def wait_until(condition, timeout_s: float, what: str) -> None:
    end = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"gave up after {timeout_s} s waiting for {what}")
        time.sleep(0.02)


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1])


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` now (children, their children, ...)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(int(entry))):
            parents[int(entry)] = st[1]
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X")       # a zombie has ended


def kill_9(proc: subprocess.Popen) -> set[int]:
    """kill -9 the process alone (not its group); returns the processes it had below it."""
    family = descendants(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    return family


def kill_9_when(proc: subprocess.Popen, ready, timeout_s: float, what: str) -> set[int]:
    """Once ``ready()`` holds (waiting up to ``timeout_s`` seconds for ``what``), kill -9 the
    process and wait for it and every process it had below it to end; returns those below it.
    Whatever fails on the way, none of them is left running."""
    family: set[int] = set()
    try:
        wait_until(ready, timeout_s, what)
        family = kill_9(proc)
        wait_until(lambda: not any(alive(p) for p in family | {proc.pid}), 30, "every process of the run to end")
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in family:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    return family


def _games_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


@linux_only
def test_kill_9_of_a_two_process_tournament_leaves_no_process_and_resume_plays_every_game_once(tmp_path):
    out = tmp_path / "t"
    cmd = NARDY + ["tournament", "--variant", "backgammon", "--agents", "heuristic", "random", "--games", "240",
                   "--chunk", "2", "--jobs", "2", "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    family = kill_9_when(proc, lambda: _games_lines(out / "games.jsonl") >= 8 and len(descendants(proc.pid)) >= 2,
                         120, "the workers' first games")
    assert len(family) >= 2                              # two workers (and the resource tracker)
    done = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    keys = [(tuple(d["pairing"]), d["index"]) for d in map(parse_json, (out / "games.jsonl").read_text().splitlines())]
    assert len(keys) == len(set(keys)) == 240                       # every game exactly once
    assert sorted(i for _, i in keys) == list(range(240))
    assert parse_json((out / "summary.json").read_text())["games"] == 240


@linux_only
def test_kill_9_of_training_then_resume_metrics_never_go_backwards(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(toml_text(small_recipe(run={"checkpoint_every": 96})))
    run = tmp_path / "run"
    cmd = NARDY + ["train", "--config", str(cfg), "--out", str(run), "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def past_a_checkpoint() -> bool:         # a line logged after the last checkpoint
        try:
            saved = load_checkpoint(str(run / "checkpoint.pt"))["games"]
            return max(d["games"] for d in metrics(run)) > saved
        except (OSError, NardyError, ValueError):
            return False

    kill_9_when(proc, past_a_checkpoint, 120, "training past its first checkpoint")
    killed_at = max(d["games"] for d in metrics(run) if d["kind"] == "train")
    again = subprocess.run(cmd + ["--resume", "--games", str(killed_at + 96)], capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    games = [d["games"] for d in metrics(run)]
    assert games == sorted(games) and games[-1] >= killed_at + 96


def test_a_diverging_run_stops_keeping_the_last_good_checkpoint(tmp_path):
    run = tmp_path / "run"
    t = Trainer(small_config(), str(run))
    t.run(total_games=64, progress=False)
    good = (run / "checkpoint.pt").read_bytes()
    with torch.no_grad():                                  # what a far too high learning rate does
        next(t.ev.net.parameters()).view(-1)[0] = float("nan")
    with pytest.raises(TrainingDiverged, match="not a finite number"):
        t.run(total_games=256, progress=False)
    t.close()
    assert (run / "checkpoint.pt").read_bytes() == good
    assert max(d["games"] for d in metrics(run)) == t.games          # strict JSON, nothing after
    with pytest.raises(ConfigError, match="td.learning_rate: must be a finite number"):
        small_config(td={"learning_rate": float("inf")})


def test_resume_drops_what_a_killed_session_logged_after_its_checkpoint(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    run = tmp_path / "run"
    t = Trainer(small_config(), str(run))
    t.run(total_games=64, progress=False)           # logs every 32 games, the last at the checkpoint
    ckpt = t.games
    t.metrics.writer.add_scalar("train/loss", 9.5, ckpt + 20)        # a session killed after its checkpoint
    t.metrics.flush()
    with open(run / "metrics.jsonl", "a") as f:
        f.write(json.dumps({"kind": "train", "games": ckpt + 20, "loss": 9.5}) + '\n{"kind": "train", "ga')
    resumed = Trainer(small_config(), str(run), resume=True, print_fn=lambda *a: None)
    assert max(d["games"] for d in metrics(run)) == ckpt
    resumed.run(total_games=128, progress=False)
    games = [d["games"] for d in metrics(run)]
    assert games == sorted(games) and 9.5 not in [d.get("loss") for d in metrics(run)]
    acc = EventAccumulator(str(run / "tb"))
    acc.Reload()
    loss = {e.step: e.value for e in acc.Scalars("train/loss")}
    logged = [d["games"] for d in metrics(run) if d["kind"] == "train" and "loss" in d]
    assert ckpt in logged and sorted(loss) == logged                   # the checkpoint's own step kept
    assert 9.5 not in loss.values()


def test_eval_opponents_are_checked_before_anything_is_written(tmp_path):
    for spec, word in (("nobody", "nobody"), ("pubeval", "long")):
        cfg = small_config(run={"eval_opponents": ["random", spec]})
        cfg.variant = "long"
        with pytest.raises(ConfigError, match=f"run.eval_opponents: .*{word}"):
            Trainer(cfg, str(tmp_path / "run"))
    assert not (tmp_path / "run").exists()


def test_interrupted_training_exits_130_with_a_hint_and_its_own_config_resumes(tmp_path):
    cfg = tmp_path / "c.toml"                      # no variant: it comes from --variant
    cfg.write_text("seed = 3\n[selfplay]\nparallel_games = 16\ntotal_games = 100000\n[td]\nupdate_games = 16\n"
                   "[run]\ncheckpoint_every = 1000\neval_every = 0\nlog_every = 16\n")
    run = tmp_path / "run"
    proc = subprocess.Popen(NARDY + ["train", "--config", str(cfg), "--variant", "long", "--out", str(run),
                                     "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: (run / "metrics.jsonl").exists() and any(
            d["kind"] == "train" and d["games"] > 0 for d in metrics(run)), 120, "the first update")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted at game" in err and f"--out {run} --resume" in err and "Traceback" not in err
    games = max(d["games"] for d in metrics(run))
    again = subprocess.run(NARDY + ["train", "--config", str(run / "config.toml"), "--out", str(run), "--resume",
                                    "--games", str(games + 16), "--no-progress"],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]


@linux_only
def test_kill_9_of_a_distillation_run_mid_label_then_resume_gives_the_same_nets(tmp_path):
    """``[method] kind = "distill"`` on 2 processes, killed -9 once label chunks are on disk:
    the workers end with it, ``nardy train --out DIR --resume`` alone continues, at most the
    chunks in flight are labelled again, and the nets are those of a run never killed."""
    from pipeline_helpers import make_teacher, recipe, same_weights, weights
    from training.distill import DistillRun
    d = recipe(make_teacher(str(tmp_path / "teacher.pt")), label={"chunk": 20})
    cfg = tmp_path / "r.toml"
    cfg.write_text(toml_text(d))
    ref = tmp_path / "ref"
    r = DistillRun(config_from_dict(d), str(ref), jobs=1, print_fn=lambda *a: None)
    r.run(progress=False)
    r.close()
    run = tmp_path / "run"
    proc = subprocess.Popen(NARDY + ["train", "--config", str(cfg), "--out", str(run), "--jobs", "2", "--no-progress"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    chunks = run / "rounds/01/labels"
    kill_9_when(proc, lambda: len(list(chunks.glob("chunk_*.npz"))) >= 3 if chunks.exists() else False, 300,
                "the first label chunks")
    kept = {p.name: p.stat().st_mtime_ns for p in chunks.glob("chunk_*.npz")}
    assert json.loads((run / "state.json").read_text())["phase"] == "label"
    again = subprocess.run(NARDY + ["train", "--out", str(run), "--resume", "--no-progress"], capture_output=True,
                           text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    assert {n: (chunks / n).stat().st_mtime_ns for n in kept} == kept          # not labelled again
    for r in ("01", "02"):
        assert same_weights(weights(run / f"rounds/{r}/candidate.pt"), weights(ref / f"rounds/{r}/candidate.pt"))
    rounds = [x.get("round", 0) for x in metrics(run)]
    assert rounds == sorted(rounds)
