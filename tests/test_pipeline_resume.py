"""Resume as a user meets it (``nardy train``, TD and search-target runs): the run folder
remembers its config, variant, target and options, so ``nardy train --out DIR --resume``
alone continues; the command printed after Ctrl-C works as printed; ``--resume`` of a
finished run says so and how to extend it; ``--resume --games N`` at or below the games
played is a one-line error that changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

from training.run_options import load_options, merge_options, resume_command, save_options

from pipeline_helpers import interrupt_train, nardy, resume_as_printed, resume_finished, snapshot


def games_played(out: Path) -> int:
    from nardy_ai.model import load_checkpoint
    return int(load_checkpoint(out / "checkpoint.pt")["games"])


QUICK_TD = ('seed = 2\n[selfplay]\nparallel_games = 32\ntotal_games = 1000\n'
            '[run]\ncheckpoint_every = 20\neval_every = 0\n')


def test_options_are_remembered_and_merged(tmp_path):
    assert load_options(str(tmp_path)) == {}
    save_options(str(tmp_path), {"backend": "local", "jobs": 2, "address": None, "games": 300})

    class Args:
        backend = None
        jobs = None
        address = None
        games = 500
    got = merge_options(Args(), load_options(str(tmp_path)))
    assert got == {"backend": "local", "jobs": 2, "address": None, "games": 500}
    assert resume_command("runs/x") == ["nardy", "train", "--out", "runs/x", "--resume"]
    (tmp_path / "options.json").write_text("[1]")
    try:
        load_options(str(tmp_path))
    except Exception as e:
        assert "options.json" in str(e)
    else:
        raise AssertionError("a damaged options.json was read")


def test_td_run_resumes_alone_refuses_a_lower_target_and_says_when_finished(tmp_path):
    cfg = tmp_path / "td.toml"
    cfg.write_text(QUICK_TD)                                   # no variant: it comes from --variant
    out = tmp_path / "run"
    p = nardy("train", "--config", str(cfg), "--variant", "long", "--games", "60", "--out", str(out),
              "--no-progress")
    assert p.returncode == 0, p.stderr
    assert games_played(out) >= 60
    assert json.loads((out / "options.json").read_text())["games"] == 60
    assert 'variant = "long"' in (out / "config.toml").read_text()
    played = games_played(out)
    before = resume_finished(out, "--games")          # says so and how to extend it, writes nothing
    # --games at or below what was played: a one-line error, nothing changed
    p = nardy("train", "--out", str(out), "--resume", "--games", str(played))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and f"already played {played}" in p.stderr
    assert "Traceback" not in p.stderr
    assert snapshot(out) == before
    # a higher target extends it, and is remembered
    p = nardy("train", "--out", str(out), "--resume", "--games", "100", "--no-progress")
    assert p.returncode == 0, p.stderr
    assert games_played(out) >= 100 and load_options(str(out))["games"] == 100


def test_td_command_printed_after_ctrl_c_continues_exactly_as_printed(tmp_path):
    cfg = tmp_path / "td.toml"
    cfg.write_text(QUICK_TD)
    out = tmp_path / "run"
    # interrupted once a checkpoint is written
    code, err = interrupt_train(["--config", str(cfg), "--variant", "long", "--games", "400", "--out", str(out),
                                 "--no-progress"], (out / "checkpoint.pt").exists, polls=1200)
    if code == 0:                                             # finished before the signal: nothing to test
        return
    assert code == 130, err
    p = resume_as_printed(err, out)
    assert p.returncode == 0, p.stderr
    assert games_played(out) >= 400                           # the remembered --games target


def test_search_targets_resume_alone_and_finished(tmp_path):
    root = Path(__file__).resolve().parent.parent
    cfg = tmp_path / "st.toml"
    cfg.write_text(f'variant = "backgammon"\nseed = 3\n[method]\nkind = "search_targets"\ngenerations = 1\n'
                   f'[model]\ninit_from = "{root}/checkpoints/backgammon/td80_anneal/checkpoint.pt"\n'
                   '[sample]\npositions = 120\nparallel_games = 16\n[label]\nchunk = 60\n'
                   '[fit]\nmax_epochs = 1\n[gate]\ngames = 4\n[run]\neval_opponents = []\n')
    out = tmp_path / "run"
    p = nardy("train", "--config", str(cfg), "--out", str(out), "--jobs", "1", "--no-progress")
    assert p.returncode == 0, p.stderr
    resume_finished(out, "method.generations")
    p = nardy("train", "--out", str(out), "--resume", "--games", "5")
    assert p.returncode == 2 and "--games is for TD training" in p.stderr


def test_resume_without_a_run_folder_is_a_one_line_error(tmp_path):
    p = nardy("train", "--resume")
    assert p.returncode == 2 and "--out" in p.stderr and "Traceback" not in p.stderr
    p = nardy("train", "--out", str(tmp_path / "none"), "--resume")
    assert p.returncode == 2 and "no run to resume" in p.stderr
    p = nardy("train")
    assert p.returncode == 2 and "--config" in p.stderr
