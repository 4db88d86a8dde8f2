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

Records.  A :class:`GameRecord` is one JSON line (:meth:`GameRecord.to_json`);
:func:`write_jsonl` only appends, so records already written are never lost.
:func:`replay` re-plays records against the move generator.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from typing import IO, Iterable, NamedTuple, Sequence

import numpy as np

from .agents.base import Agent, subset
from .board import OFF, OPP_BAR, OPP_OFF, flip, start_board
from .errors import FormatError, IllegalPlay, NardyError, UnknownVariant
from .movegen import generate
from .variants import Variant, get_variant, variant_options, with_options


class GameTooLong(NardyError):
    """A game reached the ``max_plies`` safety cap without a winner."""


# --- results (BG-6, BG-TT, LN-7, LN-8) ------------------------------------------------------

def result_levels(boards: np.ndarray, variant: str | Variant) -> np.ndarray:
    """Result level (1 = lowest) of finished games, ``(N,)`` int64, from the winner's view.

    ``boards`` ``(N, 28)`` are the positions right after the winning play, not flipped: the
    mover is the winner (``board[26] == 15``) and negative counts, ``board[25]`` and
    ``board[27]`` are the loser's checkers, bar and borne-off checkers.

    - Stakes with dave (LN-8, CUBE-D): always 1; mars and oin do not exist.
    - Long nardy (LN-7): 1 oin; 2 mars if the loser has borne off none; with the ``koks``
      option, 3 if moreover a loser checker stands on the winner's points 1-12.  Our reading
      of koks: the loser still has a checker in the winner's home (winner's 1-6) or in its own
      first quarter (its points 19-24, the winner's 7-12; LN-1 geometry).
    - Trictrac (BG-TT, four levels): 1; 2 if the loser has borne off none; 3 (4 points) if
      moreover a loser checker is not in the loser's home (the winner's points 19-24), i.e.
      stands on the winner's points 1-18 or on the bar; 4 (8 points) if moreover one is on the
      bar.
    - Backgammon (BG-6): 1 single; 2 gammon if the loser has borne off none; 3 backgammon if
      moreover a loser checker is on the bar or in the winner's home (points 1-6).
    """
    v = get_variant(variant)
    b = np.asarray(boards)
    loser = b[:, :24] < 0
    none_off = b[:, OPP_OFF] == 0
    on_bar = b[:, OPP_BAR] > 0
    level = np.ones(len(b), np.int64)
    if v.stakes == "dave":
        return level
    level += none_off
    if v.is_long:
        if v.koks:
            level += none_off & loser[:, :12].any(1)
    elif len(v.scoring) == 4:
        outside_home = none_off & (loser[:, :18].any(1) | on_bar)
        level += outside_home
        level += outside_home & on_bar
    else:
        level += none_off & (loser[:, :6].any(1) | on_bar)
    return level


def result_points(board_after_winning_play: np.ndarray, variant: str | Variant) -> tuple[int, int]:
    """``(level, points)`` won by the side that just bore off its last checker (COM-6).

    ``points = variant.scoring[level - 1]`` times a stake of 1 (the cube and dave come with the
    stakes module).  Because no cube is ever turned here, the Jacoby option (BG-J) scores every
    game as 1 point while ``level`` still reports the gammon or backgammon.
    """
    v = get_variant(variant)
    b = np.asarray(board_after_winning_play)
    if b.shape != (28,) or b[OFF] != 15:
        raise ValueError("result_points needs one (28,) board whose mover has borne off 15 (COM-6)")
    level = int(result_levels(b[None], v)[0])
    points = v.scoring[0] if v.jacoby else v.scoring[level - 1]
    return level, int(points)


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
        return json.dumps(d, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str) -> GameRecord:
        """Read a line written by :meth:`to_json`."""
        try:
            d = json.loads(line)
            d["opening"] = [tuple(r) for r in d.get("opening", [])]
            d["turns"] = [Turn(int(p), (int(a), int(b)), str(s)) for p, (a, b), s in d.get("turns", [])]
            return cls(**d)
        except (json.JSONDecodeError, TypeError, ValueError, KeyError) as e:
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

def _opening_lots(rng: np.random.Generator, n: int):
    """COM-7 lot: each side rolls one die, ties rolled again.  Returns the deciding rolls
    ``(n, 2)`` [white, black], the first mover of each game and every roll (for records)."""
    decided = np.zeros((n, 2), np.int64)
    rolls: list[tuple[np.ndarray, np.ndarray]] = []
    pending = np.arange(n)
    while len(pending):
        r = rng.integers(1, 7, (len(pending), 2))
        rolls.append((pending, r))
        decided[pending] = r
        pending = pending[r[:, 0] == r[:, 1]]
    return decided, (decided[:, 1] > decided[:, 0]).astype(np.int64), rolls


def play_games(variant: str | Variant, agents: tuple[Agent, Agent], n_games: int, seed: int,
               record: bool = True, max_plies: int = 5000) -> list[GameRecord]:
    """Play ``n_games`` games in lockstep, ``agents[0]`` as white (player 0) in every game.

    Seat alternation is the caller's: play a second batch with the agents swapped.  Returns
    one :class:`GameRecord` per game, in game order; with ``record=False`` the records carry
    no turns or lot rolls (and no notation is computed).  Raises :class:`GameTooLong` when a
    game has not ended after ``max_plies`` plies.
    """
    v = get_variant(variant)
    n = int(n_games)
    dice_rng = np.random.default_rng(seed)
    agent_rng = dice_rng.spawn(1)[0]
    first = np.zeros(n, np.int64)
    lot_dice = lots = None
    if v.opening in ("opening_roll", "lot_then_roll"):
        lot_dice, first, lots = _opening_lots(dice_rng, n)
    elif v.opening != "white_first":
        raise UnknownVariant(f"variant {v.id}: unknown opening {v.opening!r} (COM-7)")

    boards = np.repeat(start_board(v)[None], n, axis=0)     # each from its mover's view
    turn = first.copy()
    active = np.ones(n, bool)
    winner = np.zeros(n, np.int64)
    level = np.zeros(n, np.int64)
    points = np.zeros(n, np.int64)
    plies = np.zeros(n, np.int64)
    scoring = np.asarray(v.scoring, np.int64)
    log = []
    for ply in range(max_plies + 1):
        idx = np.flatnonzero(active)
        if not len(idx):
            break
        if ply == max_plies:
            raise GameTooLong(f"game {idx[0]} (seed {seed}, {v.id}) has no winner after "
                              f"max_plies={max_plies} plies (COM-6); {len(idx)} games unfinished")
        roll = dice_rng.integers(1, 7, (n, 2))
        if ply == 0 and v.opening == "opening_roll":
            roll = lot_dice                                  # COM-7: play the lot numbers
        dice = roll[idx]
        after = generate(boards[idx], dice, v)
        chosen = np.empty(len(idx), np.int64)
        for seat in (0, 1):
            sel = np.flatnonzero(turn[idx] == seat)
            if not len(sel):
                continue
            sub, rows = (after, None) if len(sel) == len(idx) else subset(after, sel)
            pick = np.asarray(agents[seat].choose(sub, v, agent_rng), np.int64)
            if pick.shape != (len(sel),) or np.any(pick < sub.offsets[:-1]) or np.any(pick >= sub.offsets[1:]):
                raise IllegalPlay(f"agent {agents[seat].name!r} chose rows that are not afterstates "
                                  f"of its positions")
            chosen[sel] = pick if rows is None else rows[pick]
        new = after.boards[chosen]
        if record:
            log.append((idx, turn[idx], dice, after.notation(chosen)))
        won = new[:, OFF] == 15
        if won.any():
            g = idx[won]
            lv = result_levels(new[won], v)
            winner[g], level[g], active[g] = turn[g], lv, False
            points[g] = scoring[0] if v.jacoby else scoring[lv - 1]
        boards[idx] = flip(new, v)
        turn[idx] ^= 1
        plies[idx] += 1

    turns: list[list[Turn]] = [[] for _ in range(n)]
    opening: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    if record:
        for idx, players, dice, plays in log:
            for g, p, d, s in zip(idx.tolist(), players.tolist(), dice.tolist(), plays):
                turns[g].append(Turn(p, (d[0], d[1]), s))
        for games, r in lots or ():
            for g, d in zip(games.tolist(), r.tolist()):
                opening[g].append((d[0], d[1]))
    names = (agents[0].name, agents[1].name)
    return [GameRecord(v.id, v.version, seed, g, names[0], names[1], int(first[g]),
                       int(winner[g]), int(level[g]), int(points[g]), int(plies[g]),
                       variant_options(v), opening[g], turns[g]) for g in range(n)]


def replay(records: Sequence[GameRecord]) -> list[np.ndarray]:
    """Re-play recorded games against the move generator; the boards of each game.

    For each record returns ``(plies + 1, 28)`` int8: row ``k`` is the position before turn
    ``k`` from its mover's view, the last row the position after the winning play (winner's
    view).  Every play must be the notation of exactly one legal afterstate (else
    :class:`IllegalPlay`); turns must alternate from ``first`` and the game must end on the
    last turn with the recorded winner, level and points (else :class:`FormatError`).
    Games of the same rules are replayed together, one generator call per ply.
    """
    out: list[np.ndarray | None] = [None] * len(records)
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(records):
        if len(r.turns) != r.plies or r.plies == 0:
            raise FormatError(f"game {r.game}: {len(r.turns)} turns recorded for {r.plies} plies")
        groups.setdefault((r.variant, json.dumps(r.options, sort_keys=True), r.variant_version), []).append(i)
    for members in groups.values():
        v = records[members[0]].rules()
        recs = [records[i] for i in members]
        plies = np.array([r.plies for r in recs])
        hist = np.zeros((len(recs), plies.max() + 1, 28), np.int8)
        boards = np.repeat(start_board(v)[None], len(recs), axis=0)
        for k in range(plies.max()):
            act = np.flatnonzero(plies > k)
            for j in act:
                r = recs[j]
                if r.turns[k].player != (r.first + k) % 2:
                    raise FormatError(f"game {r.game}, turn {k + 1}: player {r.turns[k].player} "
                                      f"is not on roll")
            dice = np.array([recs[j].turns[k].dice for j in act])
            after = generate(boards[act], dice, v, notation=True)
            rows = np.empty(len(act), np.int64)
            for a, j in enumerate(act):
                lo, hi = int(after.offsets[a]), int(after.offsets[a + 1])
                play = recs[j].turns[k].play
                legal = after.plays[lo:hi]
                if legal.count(play) != 1:
                    raise IllegalPlay(f"game {recs[j].game}, turn {k + 1}: {play!r} with dice "
                                      f"{list(recs[j].turns[k].dice)} is not one legal play; "
                                      f"legal: {', '.join(repr(p) for p in legal)}")
                rows[a] = lo + legal.index(play)
            new = after.boards[rows]
            hist[act, k] = boards[act]
            last = plies[act] == k + 1
            if np.any((new[:, OFF] == 15) != last):
                j = act[np.flatnonzero((new[:, OFF] == 15) != last)[0]]
                raise FormatError(f"game {recs[j].game}: the game does not end at its last turn (COM-6)")
            hist[act[last], k + 1] = new[last]
            boards[act] = flip(new, v)
        for j, r in enumerate(recs):
            final = hist[j, r.plies]
            lv, pt = result_points(final, v)
            if r.winner != r.turns[-1].player or (lv, pt) != (r.level, r.points):
                raise FormatError(f"game {r.game}: recorded winner {r.winner}, level {r.level}, "
                                  f"{r.points} points; replay gives {r.turns[-1].player}, {lv}, {pt}")
            out[members[j]] = hist[j, :r.plies + 1]
    return out


# --- statistics -----------------------------------------------------------------------------

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

    def wilson(k: int, total: int) -> list[float]:
        # Wilson score interval: stays inside [0, 1] even at 0 % or 100 % wins.
        z, p = 1.96, k / total
        centre = (p + z * z / (2 * total)) / (1 + z * z / total)
        half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
        return [float(centre - half), float(centre + half)]

    def ci(x: np.ndarray) -> list[float]:
        half = 1.96 * (x.std(ddof=1) / math.sqrt(len(x)) if len(x) > 1 else math.inf)
        return [float(x.mean() - half), float(x.mean() + half)]

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
        "win_rate_ci95": wilson(int(won.sum()), n),
        "points_per_game": float(pts.mean()),
        "points_per_game_ci95": ci(pts),
        "levels": dict(sorted(levels.items())),
        "levels_by_agent": [dict(sorted(d.items())) for d in by_agent],
        "mean_plies": float(np.mean([r.plies for r in records])),
    }
