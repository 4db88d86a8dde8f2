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
from dataclasses import asdict, dataclass, field
from typing import IO, Iterable, NamedTuple, Sequence

import numpy as np

from .agents.base import Agent, subset
from .board import OFF, OPP_BAR, OPP_OFF, flip, parse_json, start_board
from .cube import CENTRE, CubeState, apply as cube_apply, game_points, new_state, next_stake, \
    stakes_name, stakes_variant
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

    ``points = variant.scoring[level - 1]`` times a stake of 1: a cubeless game (games with
    stakes are scored by :func:`nardy_ai.cube.game_points`).  Because no cube is ever turned
    here, the Jacoby option (BG-J) scores every game as 1 point while ``level`` still reports
    the gammon or backgammon.
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
    ``"dave-arithmetic"`` (CUBE-D, LN-8) play for stakes (the cube stage: :class:`_Cubes`).
    """
    v = stakes_variant(variant, stakes)
    staked = stakes not in (None, "none")
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
    cube = _Cubes(n, v, lots) if staked else None
    passed = np.zeros(n, bool)
    for ply in range(max_plies + 1):
        idx = np.flatnonzero(active)
        if not len(idx):
            break
        if ply == max_plies:
            raise GameTooLong(f"game {idx[0]} (seed {seed}, {v.id}) has no winner after "
                              f"max_plies={max_plies} plies (COM-6); {len(idx)} games unfinished")
        roll = dice_rng.integers(1, 7, (n, 2))           # drawn for every game, cube or not
        if ply == 0 and v.opening == "opening_roll":
            roll = lot_dice                                  # COM-7: play the lot numbers
        elif cube is not None:
            ended = cube.stage(ply, idx, boards, turn, agents)
            if len(ended):
                winner[ended], level[ended], active[ended] = cube.winner[ended], 1, False
                points[ended], passed[ended] = cube.value[ended], True
                idx = np.flatnonzero(active)
                if not len(idx):
                    break
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
            if cube is None:
                points[g] = scoring[0] if v.jacoby else scoring[lv - 1]
            else:
                points[g] = cube.points(g, lv)
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
    recs = [GameRecord(v.id, v.version, seed, g, names[0], names[1], int(first[g]),
                       int(winner[g]), int(level[g]), int(points[g]), int(plies[g]),
                       variant_options(v), opening[g], turns[g]) for g in range(n)]
    if cube is not None:
        for g, r in enumerate(recs):
            r.stakes, r.stake, r.passed = stakes_name(v, stakes), int(cube.value[g]), bool(passed[g])
            r.cube = cube.history[g]
    return recs


#: Stakes are int64: no raise is offered from this stake on (CUBE-1 sets no limit; 2**61 is ours).
MAX_STAKE = 2 ** 61


class _Cubes:
    """The cube or dave state of every game of a batch, as arrays (rules: :mod:`nardy_ai.cube`).

    ``owner`` is :data:`~nardy_ai.cube.CENTRE` or the player with access; ``history[g]``
    lists ``[ply, player, action, stake after it]`` (player -1 for automatic doubles, BG-M).
    """

    def __init__(self, n: int, v: Variant, lots):
        self.v = v
        self.value = np.ones(n, np.int64)
        self.owner = np.full(n, CENTRE, np.int64)
        self.turned = np.zeros(n, bool)
        self.winner = np.zeros(n, np.int64)
        self.history: list[list] = [[] for _ in range(n)]
        if v.stakes == "cube" and v.murphy_cap and lots:
            ties = np.zeros(n, np.int64)              # BG-M: equal lot dice, up to the cap
            for games, r in lots:
                ties[games] += r[:, 0] == r[:, 1]
            for g in np.flatnonzero(ties):
                for _ in range(min(int(ties[g]), v.murphy_cap)):
                    self.value[g] *= 2
                    self.history[g].append([0, -1, "auto", int(self.value[g])])

    def _next(self, values):
        return next_stake(values, self.v.dave_progression if self.v.stakes == "dave" else "geometric")

    def _dicts(self, games: np.ndarray, viewer: np.ndarray, raised: bool = False) -> list[dict]:
        out = []
        for g, p in zip(games.tolist(), viewer.tolist()):
            o = int(self.owner[g])
            owner = "centre" if o == CENTRE else ("mover" if o == p else "opponent")
            value = int(self.value[g])
            out.append({"value": value, "owner": owner, "next": int(self._next(value)),
                        "turned": bool(self.turned[g]), "stakes": self.v.stakes})
        return out

    def _ask(self, agent: Agent, op: str, boards: np.ndarray, cubes: list[dict], default: bool):
        fn = getattr(agent, op, None)
        if fn is None or not len(boards):
            return np.full(len(boards), default)       # no cube logic: never doubles, always takes
        out = np.asarray(fn(boards, cubes, self.v)[0], bool)
        if out.shape != (len(boards),):
            raise IllegalPlay(f"agent {agent.name!r} answered {op} for {out.shape} positions, "
                              f"not {len(boards)}")
        return out

    def stage(self, ply: int, idx: np.ndarray, boards: np.ndarray, turn: np.ndarray,
              agents: tuple[Agent, Agent]) -> np.ndarray:
        """Before the roll of ``ply``: offers, takes, beavers and passes in the games ``idx``.
        One agent call per seat and question.  Returns the games a pass ended."""
        mover = turn[idx]
        can = ((self.owner[idx] == CENTRE) | (self.owner[idx] == mover)) & (self.value[idx] < MAX_STAKE)
        ended = []
        for seat in (0, 1):
            g = idx[can & (mover == seat)]
            if not len(g):
                continue
            who = np.full(len(g), seat)
            doubled = g[self._ask(agents[seat], "double", boards[g], self._dicts(g, who), False)]
            if not len(doubled):
                continue
            other = np.full(len(doubled), 1 - seat)
            # The taker sees the position from its side with the doubler on roll.
            took = self._ask(agents[1 - seat], "take", flip(boards[doubled], self.v),
                             self._dicts(doubled, other), True)
            for g_ in doubled.tolist():
                self.history[g_].append([ply, seat, "double", int(self.value[g_])])
            gone = doubled[~took]
            for g_ in gone.tolist():
                self.history[g_].append([ply, 1 - seat, "pass", int(self.value[g_])])
            self.winner[gone] = seat
            ended.append(gone)
            kept = doubled[took]
            beaver = np.zeros(len(kept), bool)
            if self.v.beaver and self.v.stakes == "cube" and len(kept):
                beaver = self._ask(agents[1 - seat], "beaver", flip(boards[kept], self.v),
                                   self._dicts(kept, np.full(len(kept), 1 - seat)), False)
            plain = kept[~beaver]
            self.value[plain] = self._next(self.value[plain])
            self.owner[plain] = 1 - seat
            self.turned[plain] = True
            for g_ in plain.tolist():
                self.history[g_].append([ply, 1 - seat, "take", int(self.value[g_])])
            bv = kept[beaver]
            if len(bv):                             # BG-B: take and redouble, keeping the cube
                self.value[bv] *= 2
                self.owner[bv] = 1 - seat
                self.turned[bv] = True
                for g_ in bv.tolist():
                    self.history[g_].append([ply, 1 - seat, "beaver", int(self.value[g_])])
                cubes = self._dicts(bv, np.full(len(bv), seat))
                for c in cubes:
                    c["on_roll"] = True            # the doubler answers, on roll
                again = self._ask(agents[seat], "take", boards[bv], cubes, True)
                self.winner[bv[~again]] = 1 - seat
                for g_ in bv[~again].tolist():
                    self.history[g_].append([ply, seat, "pass", int(self.value[g_])])
                ended.append(bv[~again])
                self.value[bv[again]] *= 2
                for g_ in bv[again].tolist():
                    self.history[g_].append([ply, seat, "take", int(self.value[g_])])
        return np.concatenate(ended) if ended else np.zeros(0, np.int64)

    def points(self, games: np.ndarray, levels: np.ndarray) -> np.ndarray:
        """Points of games won by bearing off at ``levels`` (BG-J, LN-8, times the stake)."""
        return np.array([game_points(CubeState(self.v.stakes, value=int(self.value[g]),
                                               turned=bool(self.turned[g])), int(lv), self.v)
                         for g, lv in zip(games.tolist(), np.asarray(levels).tolist())], np.int64)


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
        if len(r.turns) != r.plies or r.plies == 0 and not r.passed:
            raise FormatError(f"game {r.game}: {len(r.turns)} turns recorded for {r.plies} plies")
        groups.setdefault((r.variant, json.dumps(r.options, sort_keys=True), r.variant_version), []).append(i)
    for members in groups.values():
        v = records[members[0]].rules()
        recs = [records[i] for i in members]
        plies = np.array([r.plies for r in recs])
        passed = np.array([r.passed for r in recs], bool)
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
            last = (plies[act] == k + 1) & ~passed[act]     # a pass ends a game before a roll
            if np.any((new[:, OFF] == 15) != last):
                j = act[np.flatnonzero((new[:, OFF] == 15) != last)[0]]
                raise FormatError(f"game {recs[j].game}: the game does not end at its last turn (COM-6)")
            hist[act[last], k + 1] = new[last]
            boards[act] = flip(new, v)
        for j, r in enumerate(recs):
            if passed[j]:
                hist[j, r.plies] = boards[j]
            final = hist[j, r.plies]
            if r.stakes != "none":
                state = _replay_cube(r, v)
                if r.passed:
                    lv, pt, won = 1, state.points, state.winner
                else:
                    lv = int(result_levels(final[None], v)[0])
                    pt, won = game_points(state, lv, v), r.turns[-1].player
                if r.winner != won or (lv, pt) != (r.level, r.points):
                    raise FormatError(f"game {r.game}: recorded winner {r.winner}, level {r.level}, "
                                      f"{r.points} points; replay gives {won}, {lv}, {pt}")
                out[members[j]] = hist[j, :r.plies + 1]
                continue
            lv, pt = result_points(final, v)
            if r.winner != r.turns[-1].player or (lv, pt) != (r.level, r.points):
                raise FormatError(f"game {r.game}: recorded winner {r.winner}, level {r.level}, "
                                  f"{r.points} points; replay gives {r.turns[-1].player}, {lv}, {pt}")
            out[members[j]] = hist[j, :r.plies + 1]
    return out


def _replay_cube(r: GameRecord, v: Variant) -> CubeState:
    """The final stake of a record's cube history, each action checked by :func:`nardy_ai.cube.apply`
    (an illegal one raises :class:`~nardy_ai.errors.IllegalCubeAction`)."""
    state = new_state(v)
    for ply, player, action, value in r.cube:
        state = cube_apply(state, player, action, v)
        if action != "double" and state.value != value and state.winner is None:
            raise FormatError(f"game {r.game}, ply {ply}: stake {value} after {action}; the rules "
                              f"give {state.value}")
    if state.value != r.stake or state.offer is not None:
        raise FormatError(f"game {r.game}: recorded stake {r.stake}; its cube history gives "
                          f"{state.value}" + (" with a raise unanswered" if state.offer is not None else ""))
    return state


# --- statistics -----------------------------------------------------------------------------

def wilson_interval(k: int, n: int) -> list[float]:
    """95 % Wilson score interval of a proportion ``k / n`` (stays inside [0, 1] even at 0 %
    or 100 %)."""
    z = 1.959963984540054          # the 97.5 % normal quantile
    p, z2 = k / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return [max(0.0, centre - half), min(1.0, centre + half)]


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
        "win_rate_ci95": wilson_interval(int(won.sum()), n),
        "points_per_game": float(pts.mean()),
        "points_per_game_ci95": ci(pts),
        "levels": dict(sorted(levels.items())),
        "levels_by_agent": [dict(sorted(d.items())) for d in by_agent],
        "mean_plies": float(np.mean([r.plies for r in records])),
    }
