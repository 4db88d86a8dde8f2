"""Lockstep game runner: dice, opening, turns, results and game records.

:func:`play_games` plays many games at once.  Each ply, *one* call of
:func:`nardy_ai.movegen.generate` produces the afterstates of every running game; each agent
then chooses, in one batched call, for the games where it is on roll; the chosen afterstates
are flipped to the next mover's view (:func:`nardy_ai.board.flip`).  A game ends when the
mover has borne off all 15 checkers (COM-6) and is scored by :func:`result_points`.

Randomness.  The dice come from ``np.random.default_rng(seed)``; the agents draw from a
separate stream spawned from it, so an agent's choices never shift the dice.  Every ply a roll
is drawn for *every* game of the batch (finished or not), so the dice of game ``i`` at ply
``k`` depend only on the seed, the batch size and the opening lots, not on how the games went.

Stakes.  With ``stakes`` (cube or dave) a cube stage runs before each roll: the player on roll
with access is asked ``double``, the opponent ``take`` (and ``beaver`` with BG-B), one agent call
per seat and question for all the games of the batch; a pass ends the game at the current
stake.  The cube never draws from either random stream, so the dice stay those of the seed.

Records.  A :class:`GameRecord` is one JSON line (:meth:`GameRecord.to_json`);
:func:`write_jsonl` only appends, so records already written are never lost.
:func:`replay` re-plays records against the move generator.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field, replace
from typing import IO, Iterable, NamedTuple, Sequence

import numpy as np

from .agents.base import Agent
from .board import OFF, parse_json
from . import core, driver
from .cube import NOBODY, Stakes, apply as cube_apply, stakes_name
from .driver import GameTooLong
from .errors import FormatError, IllegalPlay, UnknownVariant
from .scoring import result_levels, result_points  # noqa: F401  (their home before the core)
from .stats import mean_ci95, wilson_interval  # noqa: F401  (wilson_interval's home was here)
from .variants import Variant, variant_options, with_options


# --- results: nardy_ai.scoring (kept importable from here) ----------------------------------

# --- records --------------------------------------------------------------------------------

class Turn(NamedTuple):
    """One turn: the player on roll (0 white, 1 black), the dice and the play (notation).

    ``play`` is ``""`` when no checker could move (COM-4).  On move 1 of an opening-roll game
    (COM-7) the dice are the two lot dice, white's first.
    """
    player: int
    dice: tuple[int, int]
    play: str


@dataclass
class GameRecord:
    """One finished game.  Players: 0 = white, 1 = black; ``white``/``black`` are agent names.

    ``opening`` holds the lot rolls of COM-7 as ``[white's die, black's die]`` (ties re-rolled;
    empty when white always starts, BG-TT); ``first`` is the player who moved first.
    ``turns`` is empty when the game was played with ``record=False``.

    Games with stakes also carry ``stakes`` (``"cube"``, ``"dave-geometric"``,
    ``"dave-arithmetic"``; cubeless games: ``"none"``, and their JSON line omits these four
    fields), the final ``stake``, ``passed`` (a refused raise ended the game; ``level`` is then
    1 and ``points`` the stake) and ``cube``: ``[ply, player, action, stake after it]`` per
    action (``double`` gives the stake before the raise; ``auto`` has player -1, BG-M).
    ``points`` are always the points of the game, stake included.
    """
    variant: str
    variant_version: str
    seed: int
    game: int
    white: str
    black: str
    first: int
    winner: int
    level: int
    points: int
    plies: int
    options: dict = field(default_factory=dict)
    opening: list[tuple[int, int]] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    stakes: str = "none"
    stake: int = 1
    passed: bool = False
    cube: list = field(default_factory=list)

    def points_for(self, agent: str) -> int:
        """The points ``agent`` (the white or the black player's name) scored: ``points`` if it
        won, ``-points`` if it lost."""
        return self.points if (self.winner == 0) == (self.white == agent) else -self.points

    def rules(self) -> Variant:
        """The variant the game was played under; refuses a record of another rules version."""
        v = with_options(self.variant, **self.options)
        if v.version != self.variant_version:
            raise UnknownVariant(f"record of game {self.game} was played under {self.variant} "
                                 f"v{self.variant_version}; this platform has v{v.version}")
        return v

    def to_json(self) -> str:
        """One JSON line (no newline); turns are ``[player, [d1, d2], play]``."""
        d = asdict(self)
        d["opening"] = [list(r) for r in self.opening]
        d["turns"] = [[t.player, list(t.dice), t.play] for t in self.turns]
        if self.stakes == "none":                     # cubeless records keep their old form
            for k in ("stakes", "stake", "passed", "cube"):
                del d[k]
        return json.dumps(d, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str) -> GameRecord:
        """Read a line written by :meth:`to_json`."""
        try:
            d = parse_json(line)
            d["opening"] = [tuple(r) for r in d.get("opening", [])]
            d["turns"] = [Turn(int(p), (int(a), int(b)), str(s)) for p, (a, b), s in d.get("turns", [])]
            return cls(**d)
        except (AttributeError, TypeError, ValueError, KeyError, FormatError) as e:
            raise FormatError(f"not a game record: {e}") from None


def write_jsonl(records: Iterable[GameRecord], path_or_file: str | os.PathLike | IO[str]) -> None:
    """Append records as JSON lines to a path (opened in append mode) or an open text file."""
    if isinstance(path_or_file, (str, os.PathLike)):
        with open(path_or_file, "a", encoding="utf-8") as f:
            write_jsonl(records, f)
        return
    for r in records:
        path_or_file.write(r.to_json() + "\n")
    path_or_file.flush()


def read_jsonl(path_or_file: str | os.PathLike | IO[str]) -> list[GameRecord]:
    """Read every record of a JSON-lines file (blank lines skipped); a bad line raises
    :class:`FormatError` naming its line number."""
    if isinstance(path_or_file, (str, os.PathLike)):
        with open(path_or_file, encoding="utf-8") as f:
            return read_jsonl(f)
    out = []
    for i, line in enumerate(path_or_file, 1):
        if line.strip():
            try:
                out.append(GameRecord.from_json(line))
            except FormatError as e:
                raise FormatError(f"line {i}: {e}") from None
    return out


# --- playing --------------------------------------------------------------------------------

def play_games(variant: str | Variant, agents: tuple[Agent, Agent], n_games: int, seed: int,
               record: bool = True, max_plies: int = 5000, stakes: str | None = None) -> list[GameRecord]:
    """Play ``n_games`` games in lockstep, ``agents[0]`` as white (player 0) in every game.

    Seat alternation is the caller's: play a second batch with the agents swapped.  Returns
    one :class:`GameRecord` per game, in game order; with ``record=False`` the records carry
    no turns or lot rolls (and no notation is computed).  Raises :class:`GameTooLong` when a
    game has not ended after ``max_plies`` plies.

    ``stakes`` (:data:`nardy_ai.cube.PLAY_STAKES`): None or ``"none"`` plays cubeless at
    stake 1, as the platform always did (training and benchmarks rely on it, whatever the
    variant's own ``stakes`` field says); ``"cube"`` (CUBE-1, with the variant's BG-J, BG-M
    and BG-B options), ``"dave"`` (the variant's progression), ``"dave-geometric"`` or
    ``"dave-arithmetic"`` (CUBE-D, LN-8) play for stakes (the cube stage: :class:`nardy_ai.driver.CubeStage`).

    A call of the game driver (:func:`nardy_ai.driver.run`): the core keeps the games, the
    driver asks the agents, this function writes the records.
    """
    n = int(n_games)
    dice_rng = np.random.default_rng(seed)
    agent_rng = dice_rng.spawn(1)[0]
    games, lots = core.start(variant, n, dice_rng, stakes)
    v = games.variant
    staked = games.stakes is not None
    log = []
    history: list[list] = [[] for _ in range(n)]
    if staked:
        for g, k in enumerate(core.automatic_doubles(v, n, lots).tolist()):
            for i in range(k):
                history[g].append([0, -1, "auto", 2 ** (i + 1)])

    def too_long(games: core.Games, idx: np.ndarray) -> GameTooLong:
        return GameTooLong(f"game {idx[0]} (seed {seed}, {v.id}) has no winner after "
                           f"max_plies={max_plies} plies (COM-6); {len(idx)} games unfinished")

    def keep(rec: driver.Ply, _) -> None:
        log.append((rec.idx, rec.turn, rec.dice, rec.after.notation(rec.chosen)))

    games = driver.run(games, driver.SeededDice(dice_rng), tuple(agents), agent_rng, max_plies=max_plies,
                       too_long=too_long, cube=driver.CubeStage(agents, history) if staked else None,
                       on_ply=keep if record else None).games

    turns: list[list[Turn]] = [[] for _ in range(n)]
    opening: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    if record:
        for idx, players, dice, plays in log:
            for g, p, d, s in zip(idx.tolist(), players.tolist(), dice.tolist(), plays):
                turns[g].append(Turn(p, (d[0], d[1]), s))
        for members, r in lots:
            for g, d in zip(members.tolist(), r.tolist()):
                opening[g].append((d[0], d[1]))
    names = (agents[0].name, agents[1].name)
    recs = [GameRecord(v.id, v.version, seed, g, names[0], names[1], int(games.first[g]),
                       int(games.winner[g]), int(games.level[g]), int(games.points[g]),
                       int(games.plies[g]), variant_options(v), opening[g], turns[g]) for g in range(n)]
    if staked:
        for g, r in enumerate(recs):
            r.stakes, r.stake = stakes_name(v, stakes), int(games.stakes.value[g])
            r.passed, r.cube = bool(games.passed[g]), history[g]
    return recs


def replay(records: Sequence[GameRecord]) -> list[np.ndarray]:
    """Re-play recorded games against the move generator; the boards of each game.

    For each record returns ``(plies + 1, 28)`` int8: row ``k`` is the position before turn
    ``k`` from its mover's view, the last row the position after the winning play (winner's
    view).  Every play must be the notation of exactly one legal afterstate (else
    :class:`IllegalPlay`); turns must alternate from ``first`` and the game must end on the
    last turn with the recorded winner, level and points (else :class:`FormatError`); every
    cube action must be legal (:class:`~nardy_ai.errors.IllegalCubeAction`).  Games of the
    same rules are replayed together through the game core (:mod:`nardy_ai.core`), one
    generator call per ply; the core scores them, stakes included.
    """
    out: list[np.ndarray | None] = [None] * len(records)
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(records):
        if len(r.turns) != r.plies or r.plies == 0 and not r.passed:
            raise FormatError(f"game {r.game}: {len(r.turns)} turns recorded for {r.plies} plies")
        groups.setdefault((r.variant, json.dumps(r.options, sort_keys=True), r.variant_version), []).append(i)
    for members in groups.values():
        v = records[members[0]].rules()
        recs = [records[i] for i in members]
        n = len(recs)
        plies = np.array([r.plies for r in recs])
        passed = np.array([r.passed for r in recs], bool)
        first = np.array([r.first for r in recs], np.int64)
        staked = any(r.stakes != "none" for r in recs)
        for r in recs:
            if r.stakes != "none":
                _replay_cube(r, v)                      # every action legal, the stake as recorded
        games = replace(core.fresh(v, n), turn=first.copy(), first=first.copy(),
                        stakes=Stakes.start(v, n) if staked else None)
        hist = np.zeros((n, plies.max() + 1, 28), np.int8)
        recorded = _Recorded(recs, plies, passed, hist)
        games = driver.run(games, recorded.dice, recorded, cube=recorded.cube, max_plies=int(plies.max()) + 1,
                           on_ply=recorded.keep, notation=True).games
        for j, r in enumerate(recs):
            if passed[j]:
                hist[j, r.plies] = games.board[j]
            got = (int(games.winner[j]), int(games.level[j]), int(games.points[j]))
            if not games.over[j] or got != (r.winner, r.level, r.points):
                raise FormatError(f"game {r.game}: recorded winner {r.winner}, level {r.level}, "
                                  f"{r.points} points; replay gives "
                                  + (f"{got[0]}, {got[1]}, {got[2]}" if games.over[j] else "no result"))
            out[members[j]] = hist[j, :r.plies + 1]
    return out


class _Recorded:
    """The recorded games of one :func:`replay` group as the driver's dice source, stakes stage
    and policy: each turn's recorded roll (its player checked), the recorded cube actions
    before it, and the one legal afterstate its notation names; keeps the boards."""

    name = "record"

    def __init__(self, recs: Sequence[GameRecord], plies: np.ndarray, passed: np.ndarray, hist: np.ndarray):
        self.recs, self.plies, self.passed, self.hist = recs, plies, passed, hist
        self.cube_actions = _cube_actions_by_ply(recs)
        self.idx, self.k = np.zeros(0, np.int64), 0

    def dice(self, games: core.Games, k: int, idx: np.ndarray) -> np.ndarray:
        out = np.ones((len(idx), 2), np.int64)       # a game past its turns must pass (its cube actions)
        for a, j in enumerate(idx.tolist()):
            r = self.recs[j]
            if k >= r.plies:
                continue
            if r.turns[k].player != games.turn[j]:
                raise FormatError(f"game {r.game}, turn {k + 1}: player {r.turns[k].player} is not on roll")
            out[a] = r.turns[k].dice
        return out

    def cube(self, games: core.Games, k: int, idx: np.ndarray) -> core.Games:
        if k in self.cube_actions:
            games = _replay_cube_actions(games, self.cube_actions[k])
        self.idx, self.k = idx[~games.over[idx]], k
        return games

    def choose(self, after, variant, rng) -> np.ndarray:
        k = self.k
        rows = np.empty(len(self.idx), np.int64)
        for a, j in enumerate(self.idx.tolist()):
            r = self.recs[j]
            if k >= r.plies:
                raise FormatError(f"game {r.game}: recorded winner {r.winner}, level {r.level}, "
                                  f"{r.points} points; replay gives no result")
            lo, hi = int(after.offsets[a]), int(after.offsets[a + 1])
            play = r.turns[k].play
            legal = after.plays[lo:hi]
            if legal.count(play) != 1:
                raise IllegalPlay(f"game {r.game}, turn {k + 1}: {play!r} with dice "
                                  f"{list(r.turns[k].dice)} is not one legal play; "
                                  f"legal: {', '.join(repr(p) for p in legal)}")
            rows[a] = lo + legal.index(play)
        new = after.boards[rows]
        last = (self.plies[self.idx] == k + 1) & ~self.passed[self.idx]     # a pass ends a game before a roll
        if np.any((new[:, OFF] == 15) != last):
            j = self.idx[np.flatnonzero((new[:, OFF] == 15) != last)[0]]
            raise FormatError(f"game {self.recs[j].game}: the game does not end at its last turn (COM-6)")
        return rows

    def keep(self, rec: driver.Ply, _) -> None:
        """The boards before each turn and after the winning play."""
        self.hist[rec.idx, rec.ply] = rec.boards
        new = rec.after.boards[rec.chosen]
        won = new[:, OFF] == 15
        self.hist[rec.idx[won], rec.ply + 1] = new[won]


def _cube_actions_by_ply(recs: Sequence[GameRecord]) -> dict[int, list[tuple[int, int, str]]]:
    """Every recorded cube action as ``ply -> [(record index, player, action)]``, in the
    records' order."""
    out: dict[int, list] = {}
    for j, r in enumerate(recs):
        for at, player, action, _ in r.cube:
            out.setdefault(at, []).append((j, player, action))
    return out


def _replay_cube_actions(games: core.Games, actions) -> core.Games:
    """Recorded cube actions applied to the core's stakes, in order, by the core's checked
    stakes step (:func:`nardy_ai.core.cube_action`: BG-M automatic doubles, offers, takes,
    beavers and passes)."""
    for j, player, action in actions:
        games = core.cube_action(games, np.array([j]), player, action)
    return games


def _replay_cube(r: GameRecord, v: Variant) -> Stakes:
    """The final stake of a record's cube history (a batch of one game), each action checked by
    :func:`nardy_ai.cube.apply` (an illegal one raises :class:`~nardy_ai.errors.IllegalCubeAction`)."""
    state = Stakes.start(v, 1)
    for entry in r.cube:
        if (not isinstance(entry, (list, tuple)) or len(entry) != 4
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in (entry[0], entry[1], entry[3]))
                or entry[1] not in (NOBODY, 0, 1)):
            raise FormatError(f"game {r.game}: cube entry {entry!r} is not [ply, player (-1, 0 or 1), "
                              f"action, stake]")
        ply, player, action, value = entry
        state = cube_apply(state, player, action)
        if action != "double" and state.value[0] != value and state.winner[0] == NOBODY:
            raise FormatError(f"game {r.game}, ply {ply}: stake {value} after {action}; the rules "
                              f"give {state.value[0]}")
    pending = state.offer[0] != NOBODY
    if state.value[0] != r.stake or pending:
        raise FormatError(f"game {r.game}: recorded stake {r.stake}; its cube history gives "
                          f"{state.value[0]}" + (" with a raise unanswered" if pending else ""))
    return state


# --- statistics -----------------------------------------------------------------------------

def play_match(variant, agent: Agent, opponent: Agent, games: int, seed: int,
               record: bool = False) -> list[GameRecord]:
    """``games`` games of ``agent`` against ``opponent``, seats alternating: the first half
    with ``agent`` as white (dice seed ``seed``), the rest with the seats swapped (``seed + 1``)."""
    half = games // 2
    recs = play_games(variant, (agent, opponent), half, seed=seed, record=record)
    return recs + play_games(variant, (opponent, agent), games - half, seed=seed + 1, record=record)


def summarize(records: Sequence[GameRecord], agent: str | None = None) -> dict:
    """Results of a set of games from one agent's side (default: white of the first record).

    Returns a JSON-ready dict: ``games``; ``agents`` [that agent, its opponent]; ``wins`` per
    agent (same order); ``win_rate`` of the first agent with its 95 % (Wilson) interval;
    ``points_per_game`` (the first agent's points won minus lost, per game) with
    ``points_per_game_ci95`` (normal approximation, 1.96 standard errors); ``levels``
    (result level -> games) for all games and ``levels_by_agent``; ``mean_plies``.
    When both agents have the same name, the first agent is the white side.
    """
    if not records:
        raise ValueError("summarize needs at least one game record")
    a = records[0].white if agent is None else agent
    side = []
    for r in records:
        if r.white == a:
            side.append(0)
        elif r.black == a:
            side.append(1)
        else:
            raise ValueError(f"agent {a!r} did not play game {r.game} ({r.white} vs {r.black})")
    b = next((r.black if s == 0 else r.white for r, s in zip(records, side)), a)
    n = len(records)
    won = np.array([r.winner == s for r, s in zip(records, side)])
    pts = np.array([r.points for r in records], float) * np.where(won, 1.0, -1.0)

    levels: dict[str, int] = {}
    by_agent: list[dict[str, int]] = [{}, {}]
    for r, w in zip(records, won):
        key = str(r.level)
        levels[key] = levels.get(key, 0) + 1
        by_agent[0 if w else 1][key] = by_agent[0 if w else 1].get(key, 0) + 1
    return {
        "games": n,
        "agents": [a, b],
        "wins": [int(won.sum()), int(n - won.sum())],
        "win_rate": float(won.mean()),
        "win_rate_ci95": wilson_interval(int(won.sum()), n),
        "points_per_game": float(pts.mean()),
        "points_per_game_ci95": mean_ci95(pts) or [-math.inf, math.inf],
        "levels": dict(sorted(levels.items())),
        "levels_by_agent": [dict(sorted(d.items())) for d in by_agent],
        "mean_plies": float(np.mean([r.plies for r in records])),
    }
