"""Backends (nardy_ai.backends): local processes and Ray give the same tournament, game for
game; a worker that dies loses only its task, which runs again and is counted once; a task
that raises is not retried; without Ray, --backend ray says how to install it."""

import functools
import json
import sys

import pytest

import backend_helpers as bh
from nardy_ai import tournament as tm
from nardy_ai.backends import BackendError, LocalProcesses, make_backend
from nardy_ai.cli import main

CONFIG = dict(variant="backgammon", agents=("heuristic", "random", "pubeval"), games=8, seed=11, chunk=2)


def config() -> tm.TournamentConfig:
    c = dict(CONFIG)
    return tm.TournamentConfig(c.pop("variant"), c.pop("agents"), **c)


def games_of(folder) -> list[str]:
    return sorted((folder / tm.GAMES_FILE).read_text().splitlines())


def tournament_with_a_worker_killed(tmp_path, chunk: int, **backend):
    """Plays the tournament into ``tmp_path / "t"`` with the worker that plays chunk number
    ``chunk`` of the schedule killed once mid-chunk; ``backend``: run_tournament's jobs or
    backend.  Returns the folder, that chunk, the log lines and the summary."""
    victim = tm.schedule(config())[chunk]
    play = functools.partial(bh.die_once, str(tmp_path), victim, tm.play_chunk)
    logs = []
    out = tmp_path / "t"
    summary = tm.run_tournament(config(), out, progress=False, log=logs.append, play=play, **backend)
    return out, victim, logs, summary


@pytest.fixture(scope="module")
def local_reference(tmp_path_factory):
    """The tournament played in this process: the games every backend must reproduce."""
    out = tmp_path_factory.mktemp("ref") / "t"
    summary = tm.run_tournament(config(), out, progress=False, log=lambda s: None)
    return out, summary


# --- the backends on plain tasks --------------------------------------------------------------

def test_unknown_backend_and_address_without_ray_are_errors():
    with pytest.raises(BackendError, match="unknown backend 'spark'"):
        make_backend("spark")
    with pytest.raises(BackendError, match="--address is for --backend ray"):
        make_backend("local", address="auto")
    with pytest.raises(BackendError, match="--jobs must be at least 1"):
        make_backend("local", jobs=0)


def test_local_processes_run_every_task_once():
    logs = []
    with LocalProcesses(2, logs.append) as b:
        out = dict(b.run(bh.square, list(range(7))))
    assert out == {i: i * i for i in range(7)} and b.restarts == 0 and logs == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts threads in /proc/self/task (Linux)")
def test_local_workers_run_numpy_on_one_thread():
    # OpenBLAS's idle threads busy-wait: with a BLAS thread per core in every worker, half of
    # each worker's CPU went to spinning. The package sets OPENBLAS_NUM_THREADS=1 for its
    # workers, so after a matrix product a worker has no threads but Python's (the main thread
    # and the die-with-parent watcher).
    with LocalProcesses(2, lambda s: None) as b:
        out = dict(b.run(bh.threads_after_a_matrix_product, [0, 1]))
    for blas, os_threads, python_threads in out.values():
        assert blas == "1"
        assert os_threads == python_threads


def test_local_worker_that_dies_loses_only_its_task(tmp_path):
    logs = []
    fn = functools.partial(bh.die_once, str(tmp_path), 3, bh.square)
    with LocalProcesses(2, logs.append) as b:
        results = list(b.run(fn, list(range(6))))
    assert sorted(results) == [(i, i * i) for i in range(6)]          # each task exactly once
    assert (tmp_path / "attempts-3").read_text() == "xx"                 # task 3 ran twice
    assert b.restarts >= 1 and any("worker died while running 3" in x for x in logs)


def test_a_task_that_always_kills_its_worker_is_given_up(tmp_path):
    with LocalProcesses(2, lambda s: None) as b:
        with pytest.raises(BackendError, match="a worker died 3 times while running"):
            list(b.run(bh.always_die, [1, 2]))


def test_a_task_that_raises_is_not_retried():
    with LocalProcesses(2, lambda s: None) as b:
        with pytest.raises(Exception, match="task 2 is bad"):
            list(b.run(functools.partial(bh.fail_on, 2), [1, 2, 3]))


# --- tournaments ------------------------------------------------------------------------------

def test_local_processes_give_the_games_of_one_process(tmp_path, local_reference):
    ref, summary = local_reference
    out = tmp_path / "local2"
    assert tm.run_tournament(config(), out, jobs=2, progress=False, log=lambda s: None) == summary
    assert games_of(out) == games_of(ref)


def test_tournament_worker_killed_mid_chunk_replays_that_chunk_only(tmp_path, local_reference):
    ref, summary = local_reference
    out, victim, logs, got = tournament_with_a_worker_killed(tmp_path, 4, jobs=2)
    assert got == summary
    lines = (out / tm.GAMES_FILE).read_text().splitlines()
    keys = [(d["pairing"][0], d["pairing"][1], d["index"]) for d in map(json.loads, lines)]
    assert len(keys) == len(set(keys)) == 3 * 8                      # nothing written twice
    assert sorted(lines) == games_of(ref)
    assert any("worker died while running " + victim.label() in x for x in logs)
    session = json.loads((out / tm.SESSIONS_FILE).read_text().splitlines()[-1])
    assert session["backend"] == "local" and session["tasks_rerun"] >= 1


def test_ray_tournament_gives_the_same_games_as_local(tmp_path, ray_instance, local_reference):
    ref, summary = local_reference
    out = tmp_path / "ray"
    assert tm.run_tournament(config(), out, backend="ray", progress=False, log=lambda s: None) == summary
    assert games_of(out) == games_of(ref)
    session = json.loads((out / tm.SESSIONS_FILE).read_text())
    assert session["backend"] == "ray" and session["workers"] == 2 and session["tasks_rerun"] == 0


def test_ray_worker_killed_mid_chunk_replays_that_chunk_only(tmp_path, ray_instance, local_reference):
    ref, summary = local_reference
    out, victim, logs, got = tournament_with_a_worker_killed(tmp_path, 2, backend="ray")
    assert got == summary
    lines = (out / tm.GAMES_FILE).read_text().splitlines()
    assert len(lines) == len(set(lines)) == 3 * 8 and sorted(lines) == games_of(ref)
    assert (tmp_path / f"attempts-{bh._name(victim)}").read_text() == "xx"
    assert any("worker died while running " + victim.label() in x and "WorkerCrashedError" in x for x in logs)


def test_ray_task_that_raises_reports_its_error(ray_instance):
    b = make_backend("ray", log=lambda s: None)
    with pytest.raises(Exception, match="task 2 is bad"):
        list(b.run(functools.partial(bh.fail_on, 2), [1, 2, 3]))
    b.close()                       # the test's instance is not the backend's: it stays up
    assert ray_instance.is_initialized()


def test_ray_resume_of_a_local_tournament(tmp_path, ray_instance, local_reference):
    """A tournament started locally can be finished on Ray (and the other way round)."""
    ref, summary = local_reference
    out = tmp_path / "mixed"
    out.mkdir()
    lines = games_of(ref)
    (out / tm.CONFIG_FILE).write_text((ref / tm.CONFIG_FILE).read_text())
    (out / tm.GAMES_FILE).write_text("\n".join(lines[:10]) + "\n")
    assert tm.run_tournament(config(), out, resume=True, backend="ray", progress=False,
                             log=lambda s: None) == summary
    assert games_of(out) == lines


# --- without Ray -----------------------------------------------------------------------------

def test_without_ray_the_ray_backend_says_how_to_install_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)           # import ray now fails
    with pytest.raises(BackendError, match=r"pip install 'nardy-ai\[ray\]'"):
        make_backend("ray")
    code = main(["tournament", "--variant", "backgammon", "--agents", "heuristic", "random", "--games", "2",
                 "--backend", "ray", "--out", str(tmp_path / "t"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "nardy-ai[ray]" in err and "Traceback" not in err
    assert not (tmp_path / "t" / tm.GAMES_FILE).exists()


def test_address_needs_the_ray_backend(tmp_path, capsys):
    code = main(["tournament", "--variant", "backgammon", "--agents", "heuristic", "random", "--games", "2",
                 "--address", "auto", "--out", str(tmp_path / "t"), "--no-progress"])
    assert code == 2 and "--address is for --backend ray" in capsys.readouterr().err


def test_jobs_with_a_cluster_address_is_an_error(ray_instance, monkeypatch):
    monkeypatch.setattr(ray_instance, "is_initialized", lambda: False)   # as if no instance ran
    with pytest.raises(BackendError, match="with --address the cluster's CPUs are used"):
        make_backend("ray", jobs=2, address="auto")


def test_python_dash_m_runs_the_nardy_command():
    import subprocess
    out = subprocess.run([sys.executable, "-m", "nardy_ai", "variants"], capture_output=True, text=True)
    assert out.returncode == 0 and "long_dave" in out.stdout


def test_bench_backends_reports_rates_and_identical_games(ray_instance):
    from nardy_ai.bench.backends import bench_backends, format_backends
    row = bench_backends("backgammon", ["heuristic", "random"], games=4, jobs=2, train_seconds=6,
                         parallel_games=32)
    assert [r["runs"] for r in row["tournament"]][:2] == ["1 process", "2 processes"]
    assert row["tournament"][2]["runs"].startswith("Ray") and all(r["same_games"] for r in row["tournament"])
    assert [(r["backend"], r["actors"]) for r in row["train"]] == [("local", 0), ("ray", 1), ("ray", 2)]
    assert all(r["games_per_s"] > 0 and r["games"] > 0 for r in row["train"])
    assert row["tournament"][0]["ratio"] == row["train"][0]["ratio"] == 1.0
    text = format_backends(row)
    assert "machine:" in text and "games/s" in text and "self-play training" in text
    assert ray_instance.is_initialized()                 # the bench leaves a running instance alone


def test_ray_workers_without_the_checkpoint_play_the_drivers_copy(tmp_path, ray_instance):
    """On a cluster without shared disk a worker cannot read td:PATH; the driver ships the file
    and the games are those of a local run."""
    import shutil
    import tempfile
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    net = tmp_path / "net.pt"
    shutil.copy(root / "checkpoints" / "backgammon" / "td80_anneal" / "checkpoint.pt", net)
    cfg = tm.TournamentConfig("backgammon", (f"td:{net}@0ply", "heuristic"), 4, seed=2, chunk=1)
    tm.run_tournament(cfg, tmp_path / "local", progress=False, log=lambda s: None)
    files = tm.checkpoint_files(cfg.agents)
    sha = files[str(net)][0]
    net.rename(tmp_path / "moved.pt")                      # no worker can read the path now
    backend = make_backend("ray", log=lambda s: None)
    play = functools.partial(tm.play_chunk_with_files, files)
    lines = sorted(tm.game_line(c.a, c.b, i, r) for c, (_, recs) in backend.run(play, tm.schedule(cfg))
                   for i, r in recs)
    assert lines == games_of(tmp_path / "local")
    assert (Path(tempfile.gettempdir()) / "nardy-checkpoints" / sha / "net.pt").exists()
