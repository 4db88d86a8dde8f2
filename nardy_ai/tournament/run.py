"""Running a tournament: scheduling chunks on a backend, writing games as they arrive, resuming (see :mod:`nardy_ai.tournament`)."""

from __future__ import annotations

import functools
import json
import os
import time
from pathlib import Path
from typing import Callable


from ..backends import Backend, check_backend_choice, make_backend, progress_bar
from ..files import FolderLock, append_durably, cut_torn_tail, make_folder, write_atomic
from ..shipping import checkpoint_files
from ..machine import machine_description
from ..game import GameRecord
from .gamesfile import game_line, read_games
from .outputs import display_names, format_summary, write_outputs, written_summary
from .schedule import Chunk, _agent, play_chunk, play_chunk_with_files, schedule
from .settings import CONFIG_FILE, GAMES_FILE, SESSIONS_FILE, TournamentConfig, TournamentError, load_config
from .statistics import summarize_tournament


#: Longest agent name the progress bar shows for the leader.
LEADER_WIDTH = 24


def _leader(tally: dict[str, list[float]], names: dict[str, str]) -> str:
    """The progress bar's note: the agent with the most points per game so far, by its
    table name (``names``: :func:`display_names`)."""
    played = {a: p / n for a, (p, n) in tally.items() if n}
    if not played:
        return ""
    best = max(played, key=lambda a: played[a])
    return f"leader {names[best]} {played[best]:+.2f} pts/game"


def run_tournament(config: TournamentConfig, out: str | os.PathLike, resume: bool = False, jobs: int | None = None,
                   progress: bool = True, log: Callable[[str], None] = print, backend: str | Backend = "local",
                   address: str | None = None, play: Callable[[Chunk], tuple] | None = None) -> dict:
    """Play (or finish) a tournament in folder ``out`` and write its outputs; the summary.

    Without ``resume`` the folder must not hold a tournament yet; with it, ``config`` must be
    the saved one (see :func:`resume_config`) and the games already in ``games.jsonl`` are
    kept.  Chunks run on ``backend`` (see :mod:`nardy_ai.backends`: ``local`` with ``jobs``
    spawned processes, default 1, or ``ray`` at ``address``, or a :class:`Backend` object);
    results do not depend on the backend or ``jobs``.  ``play`` replaces :func:`play_chunk`
    (tests use it to kill workers).
    """
    config.check()
    for spec in config.agents:          # a bad spec fails here, before any file is written
        _agent(config.variant, spec)
    own = check_backend_choice(backend, jobs, address)   # so do bad backend options and a missing Ray
    out = Path(out)
    if resume and load_config(out) != config:
        raise TournamentError(f"--resume: the settings differ from those saved in {out / CONFIG_FILE}")
    runner = make_backend(backend, jobs, address, log) if own else backend    # Ray joins or fails here
    try:
        if not resume:
            make_folder(out, TournamentError)
        with FolderLock(out, "nardy tournament", TournamentError):
            if play is None and runner.name == "ray":     # cluster nodes may not have the checkpoints
                play = functools.partial(play_chunk_with_files, checkpoint_files(config.agents))
            return _play(config, out, resume, runner, play or play_chunk, progress, log)
    finally:
        if own:
            runner.close()


def _play(config: TournamentConfig, out: Path, resume: bool, backend: Backend, play: Callable,
          progress: bool, log: Callable[[str], None]) -> dict:
    games_path = out / GAMES_FILE
    if resume:
        cut_torn_tail(games_path, TournamentError)
        done = read_games(games_path)
    else:
        if (out / CONFIG_FILE).exists() or games_path.exists():
            raise TournamentError(f"{out} already holds a tournament; continue it with --resume or choose another --out")
        write_atomic(out / CONFIG_FILE, json.dumps(config.to_json(), indent=1, ensure_ascii=False) + "\n")
        done = {}
    chunks = schedule(config)
    expected = {(c.a, c.b, i) for c in chunks for i in c.indices()}
    stray = next((k for k in done if k not in expected), None)
    if stray:
        raise TournamentError(f"{games_path} holds game {stray[2]} of {stray[0]} vs {stray[1]}, "
                              f"which is not part of this tournament")
    todo = [c for c in chunks if any((c.a, c.b, i) not in done for i in c.indices())]
    remaining = sum(1 for c in todo for i in c.indices() if (c.a, c.b, i) not in done)
    tally = {a: [0.0, 0] for a in config.agents}
    names = display_names(config.agents, LEADER_WIDTH, config.rules().id)

    def count(a: str, b: str, r: GameRecord) -> None:
        pts = r.points_for(a)
        tally[a][0] += pts
        tally[a][1] += 1
        tally[b][0] -= pts
        tally[b][1] += 1

    for (a, b, _), r in done.items():
        count(a, b, r)
    if done and remaining:
        log(f"resuming {out}: {len(done)} games already played, {remaining} to go")
    start = time.perf_counter()
    with open(games_path, "a", encoding="utf-8") as f, progress_bar(remaining, "tournament", progress) as bar:
        for chunk, (_, results) in backend.run(play, todo):
            lines = []
            for index, record in results:
                key = (chunk.a, chunk.b, index)
                if key in done:
                    continue
                done[key] = record
                count(chunk.a, chunk.b, record)
                lines.append(game_line(chunk.a, chunk.b, index, record) + "\n")
            append_durably(f, lines)
            bar.update(len(lines))
            bar.set_postfix_str(_leader(tally, names), refresh=False)
    elapsed = time.perf_counter() - start
    summary = summarize_tournament(config, done)
    if remaining:
        log(f"{remaining} games in {elapsed:.1f} s ({remaining / max(elapsed, 1e-9):.1f} games/s, "
            f"{backend.describe()})")
        session = {"finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "games": remaining,
                   "seconds": round(elapsed, 3), "games_per_s": round(remaining / max(elapsed, 1e-9), 2),
                   "backend": backend.name, "workers": backend.workers, "runs": backend.describe(),
                   "tasks_rerun": backend.restarts, "machine": machine_description()}
        with open(out / SESSIONS_FILE, "a", encoding="utf-8") as f:
            f.write(json.dumps(session) + "\n")
    written = write_outputs(out, config, summary, done, log)     # files first: printing may fail
    log(format_summary(summary))
    log(written_summary(out, [games_path, *written]))
    return summary
