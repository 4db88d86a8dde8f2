"""Rollouts: play positions out many times with one agent and average the results.

:func:`rollout` takes a batch of ``N`` positions and plays each of them ``games`` times, all
``N x games`` games in lockstep: every ply is *one* :func:`~nardy_ai.movegen.generate` call and
one ``agent.choose`` call for all the live games of a task (no Python loop over games or
positions).  The agent chooses for both sides.  Rollouts are **cubeless**: the result is the
outcome probabilities (the layout of :mod:`nardy_ai.model`: ``P(win)``, ``P(win at level >= l)``
for ``l = 2..L``, ``P(lose at level >= l)`` for ``l = 2..L``) and the cubeless equity (points
per game, :func:`nardy_ai.model.equity`), each with its standard error.

Whose view.  With ``on_roll=True`` the positions are seen by the player on roll (the *root*
player), who rolls first; with ``dice`` given, the root player first plays that roll (the
agent chooses the play), then the opponent rolls.  With ``on_roll=False`` the boards are
afterstates: the root player is the side that has just moved and the opponent rolls first.
Every figure is the root player's.

Scoring.  A game ends when a side bears off its 15th checker (COM-6) and is scored exactly:
:func:`nardy_ai.scoring.result_levels` on the winning afterstate, turned into an outcome vector by
:func:`nardy_ai.model.outcome_targets` and flipped (:func:`nardy_ai.model.flip_outcomes`) when
the winner is the opponent.  A truncated rollout (``truncate = T``) stops each game still
running after ``T`` plies (the root's play of given dice counts as a ply) and scores it by the
evaluator's 0-ply outcome probabilities of the afterstate just played, seen from the root
player's side.  ``truncate=0`` is therefore the evaluator's own value of the position
(:func:`nardy_ai.search.search_values` at 0 plies), and ``truncate=1`` over ``36 k`` games,
with a greedy 0-ply neural agent and no dice given, its 1-ply value (every first roll is played
``k`` times, below).  The evaluator is the agent's own (``agent.evaluator``, neural agents) or
the ``evaluator`` argument: anything with ``probabilities(afterstates) -> (M, K)`` in that
layout.

Dice (variance reduction: :class:`nardy_ai.driver.StratifiedDice`).  The dice of game ``g``
depend only on the seed and ``g``, never on the position, the plays or how the games are split
into tasks:

- *Duplicate dice across positions*: game ``g`` of every position of the batch rolls the same
  dice, so the rollouts of the candidate plays of one decision (their afterstates in one
  batch) are compared on the same luck.
- *Rotated first roll*: the first random roll of game ``g`` is ``FIRST[g mod 36]``, a seeded
  order of the 36 ordered rolls, so every block of 36 games plays every first roll once.
- *Stratified second roll* (as gnubg's quasi-random dice): the second roll of game ``g`` is
  ``SECOND[(g mod 36 + s_b) mod 36]`` where block ``b = g // 36`` of each group of 36 blocks
  (1,296 games) takes a different shift ``s_b`` (a seeded permutation of 0..35).  So each
  block of 36 games also plays every second roll once, and every 1,296 games play every pair
  of first and second rolls exactly once.
- Later rolls: a counter-based hash (splitmix64) of the seed, ``g`` and the roll number.

The standard errors use the plain i.i.d. formula (sample standard deviation over games /
sqrt(games)); the stratified dice make the true error smaller, so they err on the safe side.

Tasks and backends.  Games are split into tasks of ``chunk`` games (by game index) times a
group of positions (at most :data:`MAX_LOCKSTEP` games in lockstep per task).  The grid depends
only on ``N``, ``games`` and ``chunk``; each task draws the agent's random choices (the random
agent, tie-breaks) from its own stream seeded by the seed and the task's place in the grid, and
the results of the tasks are added in grid order.  So a seed gives identical figures in this
process, in any number of local processes or on Ray (:mod:`nardy_ai.backends`).  A randomised
agent's choices come from a stream shared by the games of a task, so *identical positions* in
one batch give identical results only with a deterministic agent (e.g. a 0-ply net without
ties); their dice are identical whatever the agent.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from . import core, driver
from .agents import Agent, make_agent
from .board import BAR, BOARD_SIZE, CHECKERS, OFF, OPP_BAR, OPP_OFF, flip
from .driver import StratifiedDice
from .errors import InvalidDice, InvalidPosition, NardyError
from .scoring import result_levels
from .model import equity, flip_outcomes, n_outputs, outcome_targets
from .variants import Variant, get_variant

#: Games per position of a task by default (9 blocks of 36 rolls).
DEFAULT_CHUNK = 324
#: At most this many games are played in lockstep in one task (bounds the move generator's memory).
MAX_LOCKSTEP = 8192
#: Default number of games: 36 x 36, every pair of first and second rolls once.
DEFAULT_GAMES = 1296

class RolloutError(NardyError):
    """Rollout settings that cannot work (a truncation without an evaluator, bad counts)."""


# --- results -------------------------------------------------------------------------------

@dataclass
class RolloutResult:
    """Figures of a rollout, for the root player of each of the ``N`` positions.

    probs, probs_se
        ``(N, K)`` outcome probabilities (layout of :mod:`nardy_ai.model`) and their standard
        errors.
    equity, equity_se
        ``(N,)`` cubeless equity, points per game, and its standard error.
    games
        games played per position.
    plies
        ``(N,)`` mean plies per game (truncated games count their ``truncate`` plies).
    truncated
        ``(N,)`` share of games stopped by the truncation rather than finished.
    seconds
        wall time of the whole rollout.
    """

    variant: Variant
    probs: np.ndarray
    probs_se: np.ndarray
    equity: np.ndarray
    equity_se: np.ndarray
    games: int
    plies: np.ndarray
    truncated: np.ndarray
    seconds: float

    @property
    def games_per_s(self) -> float:
        """Games played per second of wall time, all positions together."""
        return len(self.equity) * self.games / max(self.seconds, 1e-9)

    def outcomes(self) -> list[str]:
        """Names of the ``K`` outcome columns: ``win``, ``win gammon``, ... ``lose gammon``, ..."""
        return outcome_names(self.variant)


def outcome_names(variant: str | Variant) -> list[str]:
    """Names of the outcome vector's entries for a variant, e.g. backgammon: ``win``,
    ``win gammon``, ``win backgammon``, ``lose gammon``, ``lose backgammon`` (each "at that
    level or higher")."""
    from .scoring import level_names
    higher = level_names(get_variant(variant))[1:]
    return ["win"] + [f"win {n}" for n in higher] + [f"lose {n}" for n in higher]


# --- tasks ---------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class RolloutTask:
    """Games ``first_game .. first_game + games - 1`` of positions ``first_position ..`` of a
    rollout; ``index`` is the task's place in the grid (results are added in that order)."""

    index: int
    variant: Variant
    boards: np.ndarray
    dice: np.ndarray | None
    on_roll: bool
    agent: Any
    evaluator: Any
    truncate: int | None
    seed: int
    first_position: int
    first_game: int
    games: int
    max_plies: int

    def label(self) -> str:
        p1 = self.first_position + len(self.boards) - 1
        return (f"rollout games {self.first_game}-{self.first_game + self.games - 1} of positions "
                f"{self.first_position}-{p1}")


_AGENTS: dict[tuple[Variant, str], Agent] = {}


def _agent(spec: Any, variant: Variant) -> Agent:
    """The agent a spec names, built once per process (a checkpoint is loaded once)."""
    if not isinstance(spec, str):
        return spec
    key = (variant, spec)
    if key not in _AGENTS:
        _AGENTS[key] = make_agent(spec, variant)
    return _AGENTS[key]


def _evaluator(agent: Agent, evaluator: Any) -> Any:
    return evaluator if evaluator is not None else getattr(agent, "evaluator", None)


def play_task(task: RolloutTask) -> tuple[int, dict]:
    """Play one task: ``(task.index, sums)`` with per position ``(P, K)`` sums and sums of
    squares of the outcome vectors, ``(P,)`` of the equities, plies and truncated games.

    A call of the game driver (:func:`nardy_ai.driver.run`) from the given boards: batch row
    ``p * C + c`` is game ``c`` of position ``p``; player 0 is the root player (on roll, or
    the side that has just moved when the boards are afterstates); the dice are
    :class:`nardy_ai.driver.StratifiedDice`."""
    v = task.variant
    agent = _agent(task.agent, v)
    ev = _evaluator(agent, task.evaluator)
    K = n_outputs(v)
    P, C = len(task.boards), task.games
    rng = np.random.default_rng([task.seed, 0x726F6C6C, task.first_position, task.first_game])
    dice = StratifiedDice(task.seed, task.first_game + np.arange(C),
                          None if task.dice is None else np.repeat(task.dice, C, axis=0))
    games = start_games(task.boards, v, task.on_roll, C)
    limit, too_long = driver.plies_cap(task.max_plies, task.truncate, lambda games, idx: (
        f"{task.label()}: a game has no winner after max_plies={task.max_plies} plies (COM-6)"))
    games = driver.run(games, dice, agent, rng, max_plies=limit, too_long=too_long).games

    out = np.empty((P * C, K))
    done = games.over
    t = outcome_targets(games.level[done], v).astype(float)
    out[done] = np.where((games.winner[done] == 0)[:, None], t, flip_outcomes(t, v))
    live = games.running()
    if len(live):                                 # truncated: the evaluator, for the side that just moved
        p = np.asarray(ev.probabilities(flip(games.board[live], v)), float)
        if p.shape != (len(live), K):
            raise RolloutError(f"the evaluator gave outcome probabilities of shape {p.shape}; "
                               f"{v.id} needs ({len(live)}, {K})")
        out[live] = np.where((games.turn[live] == 0)[:, None], flip_outcomes(p, v), p)
    eq = equity(out, v)
    by_pos = out.reshape(P, C, K)
    eq_pos = eq.reshape(P, C)
    return task.index, {"sum": by_pos.sum(1), "sumsq": (by_pos ** 2).sum(1),
                        "eq_sum": eq_pos.sum(1), "eq_sumsq": (eq_pos ** 2).sum(1),
                        "plies": games.plies.reshape(P, C).sum(1), "truncated": (~done).reshape(P, C).sum(1)}


def start_games(boards: np.ndarray, v: Variant, on_roll: bool, copies: int) -> core.Games:
    """``copies`` games of each position as a core batch (row ``p * copies + c``): player 0
    is the root player, on roll when ``on_roll`` (else the boards are its afterstates and the
    opponent, player 1, rolls); a position whose side that just moved has borne off its 15th
    checker is already over (COM-6), scored from that side's winning afterstate."""
    n = len(boards) * copies
    b = np.repeat(boards if on_roll else flip(boards, v), copies, axis=0)
    turn = np.full(n, 0 if on_roll else 1, np.int64)
    g = replace(core.fresh(v, n), board=b, turn=turn, first=turn.copy())
    ended = np.flatnonzero(b[:, OPP_OFF] == CHECKERS)
    if len(ended):
        over, winner, level = g.over.copy(), g.winner.copy(), g.level.copy()
        over[ended], winner[ended] = True, 1 - turn[ended]
        level[ended] = result_levels(flip(b[ended], v), v)
        g = replace(g, over=over, winner=winner, level=level)
    return g


def play_task_with_files(files: dict, task: RolloutTask) -> tuple[int, dict]:
    """:func:`play_task` on a worker that may lack the agent's checkpoint (a Ray cluster
    without shared disk): a ``td:`` agent is built from the driver's copy of its file."""
    from .shipping import shipped_spec
    spec = task.agent
    if isinstance(spec, str) and (task.variant, spec) not in _AGENTS:
        built = shipped_spec(spec, files)
        if built is not None:
            _AGENTS[(task.variant, spec)] = make_agent(built, task.variant)
    return play_task(task)


# --- the rollout ---------------------------------------------------------------------------

def _check_positions(boards: np.ndarray, v: Variant, on_roll: bool) -> None:
    """Batched checks of the checker counts (COM), bars (LN-2) and finished games (COM-6)."""
    b = boards.astype(np.int64)
    pts = b[:, :24]
    mover = np.where(pts > 0, pts, 0).sum(1) + b[:, BAR] + b[:, OFF]
    opp = np.where(pts < 0, -pts, 0).sum(1) + b[:, OPP_BAR] + b[:, OPP_OFF]
    bad = (mover != CHECKERS) | (opp != CHECKERS) | (b[:, 24:] < 0).any(1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidPosition(f"position {i}: each side must have 15 checkers on the points, bar "
                              f"and off, not {mover[i]} and {opp[i]} (COM)")
    if v.is_long and (b[:, [BAR, OPP_BAR]] != 0).any():
        i = int(np.flatnonzero((b[:, [BAR, OPP_BAR]] != 0).any(1))[0])
        raise InvalidPosition(f"position {i}: bar must be [0, 0] in long nardy: there is no hitting (LN-2)")
    # The side to roll next must not have borne off all 15 already: its game ended earlier.
    ended = b[:, OFF if on_roll else OPP_OFF] == CHECKERS
    if ended.any():
        who = "the player on roll" if on_roll else "the side to roll next"
        raise InvalidPosition(f"position {int(np.flatnonzero(ended)[0])}: {who} has borne off all 15; "
                              f"that game is already over (COM-6)")


def rollout(boards, variant: str | Variant, agent: str | Agent, games: int = DEFAULT_GAMES,
            truncate: int | None = None, seed: int = 0, on_roll: bool = True, backend=None,
            evaluator: Any = None, dice=None, chunk: int = DEFAULT_CHUNK,
            max_plies: int = 5000) -> RolloutResult:
    """Roll out positions: play each one ``games`` times with ``agent`` on both sides.

    boards
        ``(N, 28)`` (or one ``(28,)``) positions seen by the player on roll (``on_roll=True``)
        or afterstates seen by the side that has just moved (``on_roll=False``).
    agent
        an agent spec (``td:PATH@1ply``, ``pubeval``, ...; built by
        :func:`~nardy_ai.agents.make_agent`, and by each worker process) or an
        :class:`~nardy_ai.agents.Agent` (sent to workers by pickling).
    games
        games per position (default 1,296 = 36 x 36, see the dice in the module docstring).
    truncate
        stop each game after this many plies and score it by the evaluator (None: play out).
    seed
        the dice seed (non-negative); the same seed gives the same figures on every backend.
    backend
        a :class:`~nardy_ai.backends.Backend` (``make_backend("local", jobs)`` or ``"ray"``);
        None runs the tasks in this process.
    evaluator
        for truncation: an object with ``probabilities(afterstates) -> (M, K)``; default the
        agent's ``evaluator``.
    dice
        ``(N, 2)`` rolls the root player plays first (``on_roll=True`` only).
    chunk
        games per position in one task (the results depend on it, never on the backend).

    Returns a :class:`RolloutResult` (figures for the root player, cubeless).
    """
    v = get_variant(variant)
    b = np.asarray(boards)
    if b.ndim == 1:
        b = b[None]
    if b.ndim != 2 or b.shape[1] != BOARD_SIZE or len(b) == 0:
        raise InvalidPosition(f"rollout needs positions of shape (N, {BOARD_SIZE}) with N >= 1, "
                              f"got {b.shape}")
    if not np.issubdtype(b.dtype, np.integer) or np.abs(b.astype(np.int64)).max() > CHECKERS:
        raise InvalidPosition("positions must hold integer checker counts of at most 15")
    b = b.astype(np.int8)
    _check_positions(b, v, on_roll)
    for name, value, low in (("games", games, 1), ("chunk", chunk, 1), ("seed", seed, 0),
                             ("max_plies", max_plies, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise RolloutError(f"{name} must be an integer of at least {low}, got {value!r}")
    if truncate is not None and (isinstance(truncate, bool) or not isinstance(truncate, (int, np.integer))
                                 or truncate < 0):
        raise RolloutError(f"truncate must be a number of plies >= 0 (or None), got {truncate!r}")
    d = None
    if dice is not None:
        if not on_roll:
            raise RolloutError("dice are for positions with the player on roll (on_roll=True); "
                               "after an afterstate the opponent rolls")
        d = np.asarray(dice)
        if d.ndim == 1:
            d = d[None]
        if d.shape != (len(b), 2) or not np.issubdtype(d.dtype, np.integer) or d.min() < 1 or d.max() > 6:
            raise InvalidDice(f"dice must be ({len(b)}, 2) integers 1-6, one roll per position")
        d = d.astype(np.int64)
    built = _agent(agent, v)                  # a bad spec fails here, before any worker starts
    if truncate is not None:
        ev = _evaluator(built, evaluator)
        if ev is None or not callable(getattr(ev, "probabilities", None)):
            raise RolloutError(f"--truncate needs an evaluator of outcome probabilities: agent "
                               f"{built.name!r} has none (use a td: agent or pass an evaluator)")

    C = min(int(chunk), int(games))
    P = max(1, MAX_LOCKSTEP // C)
    tasks = []
    for p0 in range(0, len(b), P):
        for g0 in range(0, games, C):
            tasks.append(RolloutTask(len(tasks), v, b[p0:p0 + P], None if d is None else d[p0:p0 + P],
                                     bool(on_roll), agent, evaluator, truncate, int(seed), p0, g0,
                                     min(C, games - g0), int(max_plies)))
    fn = play_task
    if backend is not None and backend.name == "ray" and isinstance(agent, str):
        from .shipping import checkpoint_files    # cluster nodes may not have the checkpoint
        fn = functools.partial(play_task_with_files, checkpoint_files([agent]))
    elif backend is not None and backend.name == "local" and backend.workers > 1 and len(tasks) > 1:
        _check_picklable(agent, evaluator)

    t0 = time.perf_counter()
    results: dict[int, dict] = {}
    runs = backend.run(fn, tasks) if backend is not None else ((t, fn(t)) for t in tasks)
    for _, (index, sums) in runs:
        results[index] = sums
    seconds = time.perf_counter() - t0
    return _combine(v, tasks, results, len(b), games, seconds)


def _check_picklable(*objects) -> None:
    import pickle
    for obj in objects:
        if obj is None or isinstance(obj, str):
            continue
        try:
            pickle.dumps(obj)
        except Exception as e:
            raise RolloutError(f"{obj!r} cannot be sent to worker processes ({type(e).__name__}); "
                               f"pass the agent as a spec string, or run in this process") from None


def _combine(v: Variant, tasks: list[RolloutTask], results: dict[int, dict], n: int, games: int,
             seconds: float) -> RolloutResult:
    """Add the tasks' sums in grid order (so the figures never depend on the order tasks
    finish in) and turn them into means and standard errors."""
    K = n_outputs(v)
    acc = {"sum": np.zeros((n, K)), "sumsq": np.zeros((n, K)), "eq_sum": np.zeros(n),
           "eq_sumsq": np.zeros(n), "plies": np.zeros(n), "truncated": np.zeros(n)}
    for t in tasks:
        sums = results[t.index]
        rows = slice(t.first_position, t.first_position + len(t.boards))
        for k in acc:
            acc[k][rows] += sums[k]

    def mean_se(s, ss):
        mean = s / games
        if games < 2:
            return mean, np.full_like(mean, np.nan)
        var = np.maximum(ss - s * mean, 0.0) / (games - 1)
        return mean, np.sqrt(var / games)

    probs, probs_se = mean_se(acc["sum"], acc["sumsq"])
    eq, eq_se = mean_se(acc["eq_sum"], acc["eq_sumsq"])
    return RolloutResult(v, probs, probs_se, eq, eq_se, int(games), acc["plies"] / games,
                         acc["truncated"] / games, seconds)


# --- output --------------------------------------------------------------------------------

def result_json(res: RolloutResult, i: int = 0, **extra) -> dict:
    """Position ``i``'s figures as a JSON-ready dict (``extra`` keys first; a standard error
    that one game cannot give is ``null``)."""
    def num(x) -> float | None:
        return None if np.isnan(x) else float(x)

    return {**extra, "variant": res.variant.id, "games": res.games, "outcomes": res.outcomes(),
            "probs": [float(x) for x in res.probs[i]], "probs_se": [num(x) for x in res.probs_se[i]],
            "equity": float(res.equity[i]), "equity_se": num(res.equity_se[i]),
            "mean_plies": float(res.plies[i]), "truncated_share": float(res.truncated[i]),
            "seconds": res.seconds, "games_per_s": res.games_per_s}


def format_result(res: RolloutResult, i: int = 0, header: str = "") -> str:
    """The lines ``nardy rollout`` prints for position ``i``."""
    lines = [header] if header else []
    lines.append(f"  {'outcome (root player)':<24}{'probability':>12}{'std. error':>12}")
    for name, p, se in zip(res.outcomes(), res.probs[i], res.probs_se[i]):
        lines.append(f"  {name:<24}{p:>12.4f}{se:>12.4f}")
    lines.append(f"  {'equity (points/game)':<24}{res.equity[i]:>+12.4f}{res.equity_se[i]:>12.4f}")
    tr = f", {100 * res.truncated[i]:.1f}% truncated" if res.truncated[i] else ""
    lines.append(f"  {res.games} games in {res.seconds:.1f} s ({res.games_per_s:,.1f} games/s); "
                 f"{res.plies[i]:.1f} plies per game{tr}")
    return "\n".join(lines)
