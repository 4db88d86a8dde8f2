"""TD self-play runs the training tests share (training/td.py)."""

from __future__ import annotations

from training.td import Trainer


def trained_weights(config, run_dir, games: int = 64) -> dict:
    """The net weights (a state dict) after ``games`` self-play games of a new run of ``config``
    in the folder ``run_dir``: two runs of one config and seed give equal weights."""
    t = Trainer(config, str(run_dir), log=False)
    t.run(total_games=games, progress=False)
    return t.ev.net.state_dict()
