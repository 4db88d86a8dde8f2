"""Tournaments: scheduling with duplicate dice, parallel workers, statistics and outputs.

Schedule.  Round robin (every pair of agents) or gauntlet (the first agent against each of the
others).  A pairing ``(A, B)`` plays its ``N`` games (``N`` even) as duplicate pairs: game
``2k`` has A as white, game ``2k + 1`` replays exactly the same dice with B as white.  Pairs
are grouped in chunks of ``chunk`` pairs; a chunk is two calls of
:func:`~nardy_ai.game.play_games` with the same seed and batch size, the second with the agents
swapped.  (In ``play_games`` the dice of a game depend on the seed and the batch size, never on
the plays, so both calls roll the same dice game for game.)  The seed of a chunk depends only
on the tournament seed, the two agent specs and the chunk number, so the games are the same
whatever runs them (this process, ``--jobs`` local processes or a Ray cluster: see
:mod:`nardy_ai.backends`), the order in which chunks finish, or how often the tournament was
stopped and resumed.  Workers build their agents from the specs, so outside this process every
agent must be known to :func:`~nardy_ai.agents.make_agent` in a fresh interpreter (and a
checkpoint path must be readable where the worker runs).  A worker that dies loses only its
chunk, which is played again; a game is written once, when its chunk's results arrive.

Statistics (all from the games alone, so a resumed tournament gives the same summary).

- Points per game of a side: mean of its signed points (won +, lost -).  95 % interval:
  mean ± 1.96 standard errors, the standard error taken over *duplicate pairs* (the mean of
  the two games that share their dice), which are independent where the two games of a pair
  are not.
- Win rate with its 95 % Wilson interval over games (treating games as independent; with
  duplicate dice this errs on the wide side).
- Result levels (gammon / backgammon, mars / koks, ...): counts of games won and lost at each
  level, and the rate of games won (lost) at that level or higher.
- Elo: a Bradley-Terry (logistic) model of wins and losses, ``P(i beats j) =
  1 / (1 + 10 ** (-(R_i - R_j) / 400))``, fitted by maximum likelihood (Newton's method) with
  one virtual draw per pairing (half a win to each side) so that a clean sweep keeps a finite
  rating; ratings are shifted to mean 0.  95 % intervals: rating ± 1.96 standard errors from
  the inverse of the information matrix (the negative Hessian of the log-likelihood) at the
  fit, i.e. Wald intervals relative to the mean.  They take games as independent, which
  with duplicate dice errs on the wide side.  Points are not used by the Elo fit.

Files in the tournament folder.

- ``tournament.json``: the settings (variant, agents, games, seed, mode, chunk size);
  ``--resume`` refuses other settings.
- ``games.jsonl``: every game as one JSON line, append-only, written as each chunk finishes:
  a :class:`~nardy_ai.game.GameRecord` with ``pairing`` ``[A, B]`` and ``index`` (the game's
  number within the pairing) added; ``white``/``black`` are the agent specs.  On resume the
  games already there are skipped (a chunk missing some of its games is replayed whole, as its
  dice depend on its batch, and only the missing games are added).
- ``summary.json`` and ``summary.csv`` (written atomically), ``summary.png`` (Elo with
  intervals and the cross-table; needs matplotlib, the ``plot`` extra).  The summary depends
  on the games only; ``sessions.jsonl`` gets one line per run with its games/s and machine;
  ``.lock`` keeps a second process out of a folder in use.
- ``matches/NN-A-vs-B.mat``, on request only (``mat``, ``nardy tournament --mat``; a resumed
  tournament keeps the choice), for cubeless short nardy: each pairing's games as one GNU
  Backgammon money session (``0 point match``), see :mod:`nardy_ai.matfile`.

The printed summary fits a terminal :data:`~.outputs.SCREEN_WIDTH` columns wide whatever the
number of agents: names are the registry's or the shortest distinct path tails
(:func:`display_names`), wide tables are folded into blocks of columns (:func:`fold_table`), and
the files written are listed by folder (:func:`written_summary`).

The package, one module per job: :mod:`.settings` (the config, default agents, file names),
:mod:`.schedule` (chunks, seeds, the workers' :func:`play_chunk`), :mod:`.gamesfile`,
:mod:`.statistics`, :mod:`.outputs` and :mod:`.run` (:func:`run_tournament`).
"""

from __future__ import annotations

from .settings import (CONFIG_FILE, DEFAULT_CHUNK, DEFAULT_GAMES, ELO_PER_LOGIT, GAMES_FILE,
                       MATCH_DIR, MAX_CHUNK, MAX_GAMES, PICTURE, SESSIONS_FILE, SUMMARY_CSV,
                       SUMMARY_JSON, TournamentConfig, TournamentError, default_agents, even_games,
                       load_config, resume_config)
from .schedule import Chunk, chunk_seed, play_chunk, play_chunk_with_files, schedule
from .gamesfile import game_line, read_games
from .statistics import (ELO_METHOD, PPG_METHOD, WIN_METHOD, cube_stats, elo_table, fit_elo,
                         summarize_tournament)
from .outputs import (NAME_WIDTH, SCREEN_WIDTH, display_name, display_names, fold_table, format_summary,
                      plot_summary, summary_csv, write_outputs, written_summary)
from .run import run_tournament
# Helpers that lived in this module before the split (issue #13), still importable from here.
from ..files import FolderLock
from ..scoring import level_names
from ..shipping import checkpoint_files, local_copy
from ..stats import side_stats, wilson_interval

__all__ = [
    'CONFIG_FILE', 'Chunk', 'DEFAULT_CHUNK', 'DEFAULT_GAMES', 'ELO_METHOD', 'ELO_PER_LOGIT',
    'FolderLock', 'GAMES_FILE', 'MATCH_DIR', 'MAX_CHUNK', 'MAX_GAMES', 'NAME_WIDTH', 'PICTURE',
    'PPG_METHOD', 'SCREEN_WIDTH', 'SESSIONS_FILE', 'SUMMARY_CSV', 'SUMMARY_JSON',
    'TournamentConfig', 'TournamentError', 'WIN_METHOD', 'checkpoint_files', 'chunk_seed',
    'cube_stats', 'default_agents', 'display_name', 'display_names', 'elo_table', 'even_games',
    'fit_elo', 'fold_table', 'format_summary', 'game_line', 'level_names', 'load_config',
    'local_copy', 'play_chunk', 'play_chunk_with_files', 'plot_summary', 'read_games',
    'resume_config', 'run_tournament', 'schedule', 'side_stats', 'summarize_tournament',
    'summary_csv', 'wilson_interval', 'write_outputs', 'written_summary'
]
