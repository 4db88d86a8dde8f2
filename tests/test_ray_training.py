"""Self-play training on Ray (training/distributed.py, `nardy train --backend ray`): the same
run folder as a local run, resuming across backends, a dead actor replaced without counting
its games, and the weights the actors play with following the learner."""

import json
import os
import sys

import numpy as np
import pytest
import torch

import backend_helpers as bh
from nardy_ai.cli import main
from nardy_ai.model import load_checkpoint
from training import distributed
from training.config import config_from_dict
from training.td import Trainer
from pipeline_helpers import toml_text


def config(**over):
    cfg = {"variant": "backgammon", "seed": 5,
           "selfplay": {"parallel_games": 64, "total_games": 300},
           "run": {"checkpoint_every": 100, "eval_every": 0, "log_every": 100},
           "ray": {"actors": 1}}
    for section, values in over.items():
        cfg.setdefault(section, {}).update(values)
    return config_from_dict(cfg)


def scalar_tags(run) -> set[str]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(str(run / "tb"))
    acc.Reload()
    return set(acc.Tags()["scalars"])


def metrics(run) -> list[dict]:
    return [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]


def test_ray_run_has_the_local_layout_and_resumes_on_either_backend(tmp_path, ray_instance):
    local, ray_run = tmp_path / "local", tmp_path / "ray"
    Trainer(config(), str(local), config_text="# t\n").run(progress=False)
    t = Trainer(config(), str(ray_run), config_text="# t\n", backend="ray", print_fn=lambda s: None)
    res = t.run(progress=False)
    assert res["games"] >= 300
    assert sorted(os.listdir(local)) == sorted(os.listdir(ray_run)) == [".lock", "checkpoint.pt", "config.toml",
                                                                        "metrics.jsonl", "tb"]
    assert scalar_tags(ray_run) == scalar_tags(local) | {"train/weights_lag"}
    a, b = load_checkpoint(str(local / "checkpoint.pt")), load_checkpoint(str(ray_run / "checkpoint.pt"))
    assert set(a) == set(b) and b["kind"] == "training" and b["games"] == res["games"]
    assert b["positions"] == t.positions > 0
    # Every game received was counted once: positions = the afterstates of the counted games.
    lags = [m["weights_lag"] for m in metrics(ray_run) if "weights_lag" in m]
    assert lags and all(0 <= x <= 3 for x in lags)             # actors follow the learner closely
    # Resume the Ray run locally and the local run on Ray: both go on from their checkpoint.
    r1 = Trainer(config(selfplay={"total_games": 450}), str(ray_run), resume=True)
    assert r1.games == res["games"]
    assert r1.run(progress=False)["games"] >= 450
    r2 = Trainer(config(selfplay={"total_games": 450}, ray={"actors": 2}), str(local), resume=True,
                 backend="ray", print_fn=lambda s: None)
    before = r2.games
    assert r2.run(progress=False)["games"] >= 450 > before
    sessions = [m for m in metrics(local) if m["kind"] == "session"]
    assert [s["backend"] for s in sessions] == ["local", "ray"]
    assert "2 self-play actors" in sessions[1]["self_play"]
    assert all("logical cores" in s["machine"] for s in sessions)   # where each session ran


def test_a_dead_actor_is_replaced_and_its_games_are_not_counted(tmp_path, ray_instance, monkeypatch):
    monkeypatch.setattr(distributed, "SelfPlayActor", bh.dying_actor(str(tmp_path), on_call=2))
    logs = []
    t = Trainer(config(), str(tmp_path / "run"), backend="ray", print_fn=logs.append)
    counted = []
    update = t.update
    monkeypatch.setattr(t, "update", lambda games: (counted.append(len(games)), update(games))[1])
    res = t.run(progress=False)
    lost = int((tmp_path / "actor-died").read_text())            # games the dead actor had finished
    assert lost >= 64
    assert any("self-play actor 0 died" in x for x in logs)
    assert res["games"] == sum(counted) >= 300                      # only games that arrived count
    assert load_checkpoint(str(tmp_path / "run" / "checkpoint.pt"))["games"] == res["games"]


def test_actors_play_with_the_learners_weights(tmp_path, ray_instance):
    """An actor that is handed published weights evaluates exactly like the learner's net."""
    t = Trainer(config(), str(tmp_path / "run"), log=False, backend="ray", print_fn=lambda s: None)
    src = t.self_play()
    try:
        with torch.no_grad():
            for p in t.ev.net.parameters():
                p.add_(0.5)                                          # the learner moves on
        src.after_update()                                            # weights_every = 1: publish
        assert src.version == 1
        games = []
        while not games:
            games = src.games()                                       # the first batch: old weights
        games = src.games() or src.games()                            # a later batch: new weights
        # The last play of each game was made in this batch, so with the published weights.
        last = np.stack([g.boards[-1] for g in games])
        mine = t.ev.net(torch.from_numpy(t.ev.encoder(last))).detach().numpy()
        assert abs(mine - np.stack([g.values[-1] for g in games])).max() < 1e-5
    finally:
        src.close()


def test_train_cli_on_ray_and_its_errors(tmp_path, ray_instance, capsys, monkeypatch):
    recipe = {"variant": "long", "seed": 2, "selfplay": {"parallel_games": 32, "total_games": 64},
              "run": {"eval_every": 0, "checkpoint_every": 64, "log_every": 32}, "ray": {"actors": 1}}
    cfg = tmp_path / "c.toml"
    cfg.write_text(toml_text(recipe))
    out = tmp_path / "run"
    assert main(["train", "--config", str(cfg), "--out", str(out), "--backend", "ray", "--no-progress"]) == 0
    assert load_checkpoint(str(out / "checkpoint.pt"))["games"] >= 64
    capsys.readouterr()
    assert main(["train", "--config", str(cfg), "--out", str(tmp_path / "x"), "--actors", "2"]) == 2
    assert "--actors is for --backend ray" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text(toml_text({**recipe, "ray": {"actor": 1}}))
    assert main(["train", "--config", str(bad), "--out", str(tmp_path / "y"), "--backend", "ray"]) == 2
    assert "ray.actor: unknown key" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "ray", None)
    assert main(["train", "--config", str(cfg), "--out", str(tmp_path / "z"), "--backend", "ray"]) == 2
    err = capsys.readouterr().err
    assert "nardy-ai[ray]" in err and "Traceback" not in err and not (tmp_path / "z").exists()


def test_sigterm_stops_a_ray_run_with_a_checkpoint(tmp_path, ray_instance):
    """Ray installs its own SIGTERM handler (it aborts); the trainer keeps its own, so a
    terminated Ray run writes its checkpoint and exits cleanly, then resumes."""
    import signal
    import subprocess
    import time
    recipe = {"variant": "backgammon", "seed": 3, "selfplay": {"parallel_games": 64, "total_games": 10 ** 6},
              "run": {"eval_every": 0, "checkpoint_every": 10 ** 6, "log_every": 64}, "ray": {"actors": 1}}
    cfg = tmp_path / "c.toml"
    cfg.write_text(toml_text(recipe))
    out = tmp_path / "run"
    address = ray_instance.get_runtime_context().gcs_address       # join the test's instance
    cmd = [sys.executable, "-m", "nardy_ai", "train", "--config", str(cfg), "--out", str(out),
           "--backend", "ray", "--address", address, "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            if (out / "metrics.jsonl").exists() and any(m.get("games", 0) > 0 and m["kind"] == "train"
                                                        for m in metrics(out)):
                break
            time.sleep(0.5)
        assert proc.poll() is None, proc.communicate()[1]
        logged = max(m["games"] for m in metrics(out))
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err                   # stopped: the command that continues it
    assert "Traceback" not in err and "SIGTERM received" not in err and f"--out {out} --resume" in err
    saved = load_checkpoint(str(out / "checkpoint.pt"))["games"]
    assert saved >= logged > 0
    assert Trainer(config_from_dict({**config().to_dict(), "seed": 3}), str(out), resume=True,
                   log=False).games == saved
