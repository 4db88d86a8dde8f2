"""training/run.py: the run lifecycle every method of ``nardy train`` shares -- the folder
lock, ``state.json``, resume with a rewind to the work whose files are on disk, metrics that
never go backwards, stop requests and signals, and the one ``cli_train`` -- on a toy staged
run whose phases write small files (no nets), so that each rule is tested once, here."""

from __future__ import annotations

import json
import os
import signal
import types

import numpy as np
import pytest

from nardy_ai.errors import NardyError
from training.config import config_from_dict
from training.run import StagedRun, cli_train

from pipeline_helpers import StopsAfter


class Toy(StopsAfter, StagedRun):
    """Two rounds of sample (``samples.npz`` of 5 rows), label (3 chunks of 2 rows, a ``part``
    metrics line each), fit (``candidate.pt``) and gate (a history entry).  ``stop_after``:
    ask for a stop after that many metrics lines of kind ``stop_kind``."""

    PHASES = ("sample", "label", "fit", "gate")
    UNIT = "round"
    KEPT_KINDS = ("part",)
    STATE_WHAT = "a toy run"

    def __init__(self, cfg, run_dir, config_text="# toy\n", resume=False, backend="local", jobs=None,
                 address=None, stop_kind=None, stop_after=1, print_fn=None):
        self.said, self.stop_kind, self.stop_after, self.seen = [], stop_kind, stop_after, 0
        self.written: list[str] = []
        self._setup(cfg, run_dir, backend, jobs, address, True, print_fn or self.said.append)
        self._open(resume, config_text)

    units = 2

    def _initial_state(self):
        return {"format": 1, "round": 1, "phase": "sample", "current_round": 0, "history": [],
                "seconds": {}}

    def _start(self):
        pass

    def _write_start(self):
        self.state = self._initial_state()
        self._write_state()

    def _load(self, config_text):
        self.state = self._read_state()

    def unit_dir(self, r):
        return os.path.join(self.run_dir, "rounds", f"{r:02d}")

    def _read_samples(self, r):
        with np.load(os.path.join(self.unit_dir(r), "samples.npz")) as z:
            return {"boards": z["boards"]}

    def _chunk_path(self, r, i):
        return self._chunk_paths(r)[i]      # the names the base class checks (label_chunk_paths)

    def _label_chunk(self, r):
        return 2

    def finished_message(self):
        return f"{self.run_dir} is finished"

    def steps(self):
        return {"sample": self.sample, "label": self.label, "fit": self.fit, "gate": self.gate}

    def sample(self, r):
        np.savez(os.path.join(self.unit_dir(r), "samples.npz"), boards=np.zeros((5, 28), np.int8))
        self._log("sample", r, "sample", {"rows": 5})
        return True

    def label(self, r):
        os.makedirs(os.path.join(self.unit_dir(r), "labels"), exist_ok=True)
        for i in range(3):
            path = self._chunk_path(r, i)
            if os.path.exists(path):
                continue                  # kept from a stopped session
            with open(path, "wb") as f:
                np.save(f, np.full(2, i))
            self.written.append(f"{r}/{i}")
            self._log("part", r, "label", {"chunk": i}, tb=False)
            if self.stop_requested:
                return False
        self._log("label", r, "label", {"chunks": 3})
        return True

    def fit(self, r):
        with open(os.path.join(self.unit_dir(r), "candidate.pt"), "wb") as f:
            f.write(b"net")
        self._log("fit", r, "fit", {"loss": 0.5})
        return True

    def gate(self, r):
        self.state["history"].append({"round": r, "promoted": True})
        self.state["current_round"] = r
        self._log("gate", r, "gate", {"points_per_game": 0.1})
        return True


@pytest.fixture
def cfg():
    return config_from_dict({"variant": "backgammon", "run": {"eval_opponents": ["random"]}})


def lines(run) -> list[dict]:
    return [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]


def work(run) -> list[tuple]:
    """The (round, phase, kind, chunk) of the metrics lines of work done (not sessions)."""
    return [(x["round"], x["phase"], x["kind"], x.get("chunk")) for x in lines(run) if x["kind"] != "session"]


def test_a_run_goes_through_its_units_and_phases(cfg, tmp_path):
    run = tmp_path / "run"
    toy = Toy(cfg, str(run))
    res = toy.run(progress=False)
    toy.close()
    assert res == {"round": 3, "phase": "sample", "stopped": False,
                   "history": [{"round": 1, "promoted": True}, {"round": 2, "promoted": True}]}
    assert (run / "config.toml").read_text() == "# toy\n"
    assert sorted(os.listdir(run)) == [".lock", "config.toml", "metrics.jsonl", "rounds", "state.json", "tb"]
    one = [(1, "sample", "sample", None)] + [(1, "label", "part", i) for i in range(3)] + [
        (1, "label", "label", None), (1, "fit", "fit", None), (1, "gate", "gate", None)]
    assert work(run) == one + [(2,) + x[1:] for x in one]
    assert toy.summary(res) == f"2 round(s) in {run}, 2 promoted; current evaluator {run}/current.pt (round 2)"
    # the session line says where the work ran, so rates from different machines can be told apart
    from nardy_ai.machine import machine_description
    (session,) = [x for x in lines(run) if x["kind"] == "session"]
    assert session["machine"] == machine_description() and session["phase_at_start"] == "sample"


def test_one_process_at_a_time_in_a_run_folder(cfg, tmp_path):
    run = tmp_path / "run"
    first = Toy(cfg, str(run))                                         # holds the folder
    state, metrics = (run / "state.json").read_bytes(), (run / "metrics.jsonl").exists()
    with pytest.raises(NardyError, match="another nardy train is running in"):
        Toy(cfg, str(run), resume=True)
    with pytest.raises(NardyError, match="already holds a run; use --resume"):
        Toy(cfg, str(run))
    assert (run / "state.json").read_bytes() == state and (run / "metrics.jsonl").exists() == metrics
    first.stop_kind = "fit"
    first.run(progress=False)                                          # returns: the folder is free
    again = Toy(cfg, str(run), resume=True)
    with pytest.raises(NardyError, match="another nardy train is running in"):
        first.run(progress=False)                                      # a second session takes it again
    again.close()
    first.stop_kind, first.stop_requested = None, False
    first.run(progress=False)
    assert first.finished and not first.lock.held


def test_state_round_trip_and_damaged_or_missing_state(cfg, tmp_path):
    run = tmp_path / "run"
    toy = Toy(cfg, str(run), stop_kind="fit")
    toy.run(progress=False)
    toy.close()
    saved = json.loads((run / "state.json").read_text())
    assert (saved["round"], saved["phase"]) == (1, "gate")             # fit done, written at once
    again = Toy(cfg, str(run), resume=True)
    assert again.state == saved and not again.finished
    again.close()
    (run / "state.json").write_text(json.dumps({**saved, "phase": "bake"}))
    with pytest.raises(NardyError, match=r"state.json is not the state of a toy run \(format 1\)"):
        Toy(cfg, str(run), resume=True)
    (run / "state.json").write_text('{"format": 1, "rou')
    with pytest.raises(NardyError, match="cannot read .*state.json"):
        Toy(cfg, str(run), resume=True)
    with pytest.raises(NardyError, match="holds no run to resume \\(no state.json\\)"):
        Toy(cfg, str(tmp_path / "none"), resume=True)
    assert not (tmp_path / "none").exists()


def test_a_finished_run_resumes_without_writing_anything(cfg, tmp_path):
    run = tmp_path / "run"
    toy = Toy(cfg, str(run))
    toy.run(progress=False)
    toy.close()
    before = {str(f): (f.stat().st_mtime_ns, f.stat().st_size) for f in run.rglob("*")}
    again = Toy(cfg, str(run), resume=True)
    assert again.finished and again.metrics is None
    again.close()
    assert {str(f): (f.stat().st_mtime_ns, f.stat().st_size) for f in run.rglob("*")} == before


def test_a_stop_request_leaves_a_state_that_resumes_losing_nothing(cfg, tmp_path):
    run = tmp_path / "run"
    toy = Toy(cfg, str(run), stop_kind="part", stop_after=2)
    res = toy.run(progress=False)
    toy.close()
    assert res["stopped"] and (res["round"], res["phase"]) == (1, "label")
    assert toy.stopped_at(res) == "in round 1, phase label (finished work kept)"
    assert json.loads((run / "state.json").read_text())["phase"] == "label"
    again = Toy(cfg, str(run), resume=True)
    assert again.state["phase"] == "label" and not again.said        # its inputs are on disk
    again.run(progress=False)
    again.close()
    assert toy.written + again.written == ["1/0", "1/1", "1/2", "2/0", "2/1", "2/2"]   # each chunk once
    assert [x[3] for x in work(run) if x[2] == "part"] == [0, 1, 2, 0, 1, 2]
    rounds = [x["round"] for x in lines(run)]
    assert rounds == sorted(rounds)


def test_a_kill_loses_only_the_lines_of_the_work_done_again(cfg, tmp_path):
    """As after kill -9 in round 2's fit: the lines logged after the state was written (the
    fit's, a gate's, a later round's, a torn last line) go; round 2's label parts stay with their files.  Then
    without the round's files (a fresh clone) the run goes back to its sample, says so, and
    drops every line of the round."""
    run = tmp_path / "run"
    Toy(cfg, str(run), stop_kind="fit", stop_after=2).run(progress=False)
    state = json.loads((run / "state.json").read_text())
    assert (state["round"], state["phase"]) == (2, "gate")
    state["phase"] = "fit"                                            # killed before the state was written
    (run / "state.json").write_text(json.dumps(state))
    kept = [x for x in work(run) if not (x[0] == 2 and x[1] == "fit")]
    with open(run / "metrics.jsonl", "a") as f:
        for line in ({"kind": "gate", "round": 2, "phase": "gate"}, {"kind": "sample", "round": 3, "phase": "sample"}):
            f.write(json.dumps(line) + "\n")
        f.write('{"kind": "gate", "rou')
    toy = Toy(cfg, str(run), resume=True)
    toy.close()
    assert work(run) == kept
    assert (2, "label", "part", 2) in work(run) and not toy.said
    # the round's files gone: back to the sample, every line of round 2 dropped
    import shutil
    shutil.rmtree(run / "rounds/02")
    toy = Toy(cfg, str(run), resume=True)
    assert toy.said == [f"round 2: the files of phase fit are not in {run}/rounds/02; starting again at sample"]
    assert json.loads((run / "state.json").read_text())["phase"] == "sample"
    assert [x for x in work(run) if x[0] == 2] == []
    toy.run(progress=False)
    toy.close()
    rounds = [x["round"] for x in lines(run)]
    assert rounds == sorted(rounds) and [x[0] for x in work(run)].count(2) == 7


@pytest.mark.parametrize("phase,missing,back_to", [
    ("gate", "candidate.pt", "fit"), ("fit", "labels/chunk_0001.npz", "label"), ("fit", "samples.npz", "sample"),
    ("label", "samples.npz", "sample")])
def test_rewind_goes_back_to_the_phase_whose_inputs_are_on_disk(cfg, tmp_path, phase, missing, back_to):
    run = tmp_path / "run"
    Toy(cfg, str(run), stop_kind="fit").run(progress=False)            # round 1's files all on disk
    (run / "rounds/01" / missing).unlink()
    state = json.loads((run / "state.json").read_text())
    (run / "state.json").write_text(json.dumps({**state, "phase": phase}))
    toy = Toy(cfg, str(run), resume=True)
    toy.close()
    assert toy.state["phase"] == back_to
    assert json.loads((run / "state.json").read_text())["phase"] == back_to


def test_config_check_names_the_changed_keys_and_ignores_the_free_ones(cfg, tmp_path):
    toy = Toy(cfg, str(tmp_path / "run"))
    toy.close()
    saved = cfg.to_dict()
    other = config_from_dict({"variant": "backgammon", "seed": 9, "run": {"eval_games": 7},
                              "fit": {"patience": 9}, "method": {"generations": 3}}).to_dict()
    with pytest.raises(NardyError, match=r"config differs .*\(fit\.patience, seed\)"):
        toy._require_same_config(saved, other, ("run", "method.generations"))
    toy._require_same_config(saved, {**other, "seed": saved["seed"], "fit": saved["fit"]}, ("run", "method.generations"))
    assert saved == cfg.to_dict()                                     # the dicts given are left as they were


def test_a_signal_asks_for_a_stop_and_the_handlers_come_back(cfg, tmp_path):
    toy = Toy(cfg, str(tmp_path / "run"))
    before = signal.getsignal(signal.SIGTERM)
    with toy.stop_on_signals():
        os.kill(os.getpid(), signal.SIGTERM)
        assert toy.stop_requested
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL      # a second one kills
    assert signal.getsignal(signal.SIGTERM) == before
    toy.close()


def test_cli_train_prints_how_to_continue_and_when_finished(cfg, tmp_path, capsys):
    run = tmp_path / "run"
    args = types.SimpleNamespace(resume=False, backend="local", jobs=None, address=None, no_progress=True)

    class StopsInLabel(Toy):
        def __init__(self, *a, **kw):
            super().__init__(*a, stop_kind="part", **kw)

    started = []
    assert cli_train(StopsInLabel, args, cfg, "# toy\n", str(run), ["nardy", "train", "--out", str(run), "--resume"],
                     on_start=lambda: started.append(1)) == 130
    out, err = capsys.readouterr()
    assert out == f"0 round(s) in {run}, 0 promoted; current evaluator {run}/current.pt (round 0)\n"
    assert err == (f"nardy: interrupted in round 1, phase label (finished work kept); continue with: "
                   f"nardy train --out {run} --resume\n")
    args.resume = True
    assert cli_train(Toy, args, cfg, "# toy\n", str(run)) == 0 and started == [1]
    assert cli_train(Toy, args, cfg, "# toy\n", str(run), on_start=lambda: started.append(2)) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"{run} is finished" and started == [1]
