"""The game driver: the loop every lockstep player of :mod:`nardy_ai.core` games runs.

:mod:`nardy_ai.core` holds a batch of games and the pure steps of the rules; this module plays
them.  A *dice source* gives the roll of each game; :func:`step` plays one ply of a batch: the
roll, the stakes stage (raises, takes, beavers, passes: :class:`CubeStage`), every legal
afterstate in one move-generator call, one question to the policy of each seat with its picks
checked once (:func:`choose`), and the play; :func:`run` repeats it with hooks (per-ply
records, finished games, restarts, truncation, a stop at an outside decision).  The game
runner (:func:`nardy_ai.game.play_games`, :func:`nardy_ai.game.replay`), TD self-play,
rollouts (:mod:`nardy_ai.rollout`, :mod:`nardy_ai.cube_rollout`), the benchmarks' samplers
and the environments (:mod:`nardy_ai.env`, :mod:`nardy_ai.aec`,
:mod:`nardy_ai.vector_env`) are calls of it:

>>> import numpy as np
>>> from nardy_ai import core, driver
>>> from nardy_ai.agents import make_agent
>>> rng = np.random.default_rng(0)
>>> games, _ = core.start("backgammon", 4, rng)
>>> agents = (make_agent("heuristic", "backgammon"), make_agent("random", "backgammon"))
>>> out = driver.run(games, driver.SeededDice(rng), agents, rng.spawn(1)[0], max_plies=5000)
>>> bool(out.games.over.all())
True

Policies.  A policy is anything with ``choose(afterstates, variant, rng) -> rows`` and a
``name`` (every agent of :mod:`nardy_ai.agents`): one policy plays both seats in one call per
ply; a pair ``(white's, black's)`` is asked seat by seat, white first; a seat whose policy is
None is decided outside the loop (a learner): :func:`step` leaves its games *pending* with
their roll and afterstates.

Dice.  :class:`SeededDice` draws every game's roll each ply from one generator (so game
``g``'s dice depend only on the seed and the batch), with the variant's opening (COM-7);
:class:`StratifiedDice` gives rollouts' rotated and stratified rolls from a counter-based hash
(any game's roll at any ply, without a stream); a source of recorded rolls is the replay's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from . import core
from .board import flip
from .errors import IllegalPlay, NardyError
from .movegen import Afterstates, generate


class GameTooLong(NardyError):
    """A game reached the ``max_plies`` safety cap without a winner."""


# --- dice sources ------------------------------------------------------------------------------

class SeededDice:
    """Dice from a generator: each ply a roll is drawn for *every* game of the batch (finished
    or not), so a game's dice depend only on the seed and the batch size.

    ``opening`` says what a game's first turn plays under the variant's ``opening_roll``
    (COM-7): ``"lot"`` the lot's two dice (:func:`nardy_ai.core.roll`; the games were started
    by :func:`nardy_ai.core.start`); ``"random"`` one of the 30 unequal rolls drawn after the
    batch's roll (:func:`nardy_ai.core.random_opening_rolls`: self-play, which draws no lot);
    None an ordinary roll whatever the variant (the benchmarks' samplers)."""

    def __init__(self, rng: np.random.Generator, opening: str | None = "lot"):
        if opening not in ("lot", "random", None):
            raise ValueError(f"opening must be 'lot', 'random' or None, got {opening!r}")
        self.rng, self.opening = rng, opening

    def __call__(self, games: core.Games, ply: int, idx: np.ndarray) -> np.ndarray:
        """The rolls ``(len(idx), 2)`` of the games ``idx`` at loop ply ``ply``."""
        if self.opening == "lot":
            dice = core.roll(games, self.rng)
        else:
            dice = self.rng.integers(1, 7, (games.n, 2))
            if self.opening == "random" and games.variant.opening == "opening_roll":
                first = games.plies == 0
                if first.any():
                    dice[first] = core.random_opening_rolls(self.rng, int(first.sum()))
        return dice if len(idx) == games.n else dice[idx]


#: The 36 ordered rolls; roll index ``i`` is ``(i // 6 + 1, i % 6 + 1)``.
ROLLS36 = np.array([(a, b) for a in range(1, 7) for b in range(1, 7)], np.int64)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_TAG_FIRST, _TAG_SECOND, _TAG_SHIFT, _TAG_LATER = 1, 2, 3, 4


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on uint64 arrays (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _hash(key: np.uint64, *parts) -> np.ndarray:
    """A 64-bit hash of the seed key and integer arrays (broadcast together)."""
    h = np.full(np.broadcast_shapes(*(np.shape(p) for p in parts)), key, np.uint64)
    for p in parts:
        h = _mix(h ^ _mix(np.asarray(p).astype(np.uint64) + _GOLDEN))
    return h


def _roll_index(h: np.ndarray) -> np.ndarray:
    """Hashes to roll indices 0..35 (multiply-shift; bias below 1e-8)."""
    return (((h >> np.uint64(32)) * np.uint64(36)) >> np.uint64(32)).astype(np.int64)


def dice_key(seed: int) -> np.uint64:
    """The 64-bit key of a stratified-dice seed (any non-negative integer)."""
    return np.random.SeedSequence(int(seed)).generate_state(1, np.uint64)[0]


def stratified_rolls(seed: int, games: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first and second random roll indices ``((G,), (G,))`` (0..35, into
    :data:`ROLLS36`) of games ``games`` (absolute game numbers): game ``g``'s first roll is
    ``FIRST[g mod 36]`` (a seeded order of the 36), its second ``SECOND[(g mod 36 + s_b) mod
    36]`` with a seeded shift ``s_b`` per block ``b = g // 36`` of each group of 36 blocks: every
    36 games play every first and every second roll once, every 1,296 every pair once."""
    key = dice_key(seed)
    g = np.asarray(games, np.int64)
    i = g % 36
    first = np.argsort(_hash(key, _TAG_FIRST, np.arange(36)))
    second = np.argsort(_hash(key, _TAG_SECOND, np.arange(36)))
    block = g // 36
    groups, where = np.unique(block // 36, return_inverse=True)
    shifts = np.argsort(_hash(key, _TAG_SHIFT, groups[:, None], np.arange(36)[None, :]), axis=1)
    s = shifts[where.reshape(-1), block % 36]
    return first[i], second[(i + s) % 36]


def later_rolls(seed: int, games: np.ndarray, roll: int) -> np.ndarray:
    """Roll indices ``(G,)`` of random roll number ``roll`` (>= 2) of games ``games``: a
    counter-based hash (splitmix64) of the seed, the game and the roll number."""
    return _roll_index(_hash(dice_key(seed), _TAG_LATER, np.asarray(games, np.int64), roll))


class StratifiedDice:
    """Rollouts' dice (variance reduction): batch row ``r`` plays game number
    ``games[r % len(games)]``, whose first two random rolls are stratified
    (:func:`stratified_rolls`) and later ones hashed (:func:`later_rolls`), so a game's dice
    depend only on the seed and its number, never on the position or the plays.  With
    ``given`` ``(N, 2)``, loop ply 0 plays row ``r``'s given roll and the random rolls start
    at ply 1.  The loop's ply counts the rolls (the core's ``plies`` are not read)."""

    def __init__(self, seed: int, games: np.ndarray, given: np.ndarray | None = None):
        self.seed = int(seed)
        self.key = dice_key(self.seed)
        self.games = np.asarray(games, np.int64)
        self.first, self.second = stratified_rolls(self.seed, self.games)
        self.given = given

    def __call__(self, games: core.Games, ply: int, idx: np.ndarray) -> np.ndarray:
        """The rolls ``(len(idx), 2)`` of the games ``idx`` at loop ply ``ply``."""
        c = idx % len(self.games)
        r = ply - (self.given is not None)
        if r < 0:
            return self.given[idx]
        if r == 0:
            return ROLLS36[self.first[c]]
        if r == 1:
            return ROLLS36[self.second[c]]
        return ROLLS36[_roll_index(_hash(self.key, _TAG_LATER, self.games[c], r))]   # later_rolls, key kept


# --- asking the policies ---------------------------------------------------------------------

def bad_rows(after: Afterstates, picks: np.ndarray) -> np.ndarray:
    """Whether each pick ``(N,)`` is *not* a row of its own position's afterstates."""
    return (picks < after.offsets[:-1]) | (picks >= after.offsets[1:])


def ask(policy, after: Afterstates, variant, rng, stakes=None) -> np.ndarray:
    """One policy's picks for every position of ``after``: the rows it chose, checked (each
    must be one of its own position's afterstates, else :class:`IllegalPlay` naming it).
    ``stakes`` (a game with the cube or dave: each position's stakes as its mover sees them) go
    to a policy whose ``plays_cubeful`` is true, as ``choose(..., stakes=)``: its checker play
    weighs the cube (:meth:`nardy_ai.agents.neural.NeuralAgent.choose`)."""
    if stakes is not None and getattr(policy, "plays_cubeful", False):
        pick = np.asarray(policy.choose(after, variant, rng, stakes=stakes), np.int64)
    else:
        pick = np.asarray(policy.choose(after, variant, rng), np.int64)
    if pick.shape != (len(after.offsets) - 1,) or bad_rows(after, pick).any():
        raise IllegalPlay(f"agent {policy.name!r} chose rows that are not afterstates of its positions")
    return pick


@dataclass
class Outside:
    """A policy for games with a learner: in game ``g`` the seat ``seat[g]`` is decided outside
    the loop (left pending), the other seat by ``policy``."""
    seat: np.ndarray
    policy: Any


def wants_stakes(policy) -> bool:
    """Whether any policy of ``policy`` (one, a pair, or :class:`Outside`'s) plays by the
    stakes (``plays_cubeful``): only then does a step make each position's view of them."""
    if isinstance(policy, Outside):
        policy = policy.policy
    seats = policy if isinstance(policy, (tuple, list)) else (policy,)
    return any(getattr(p, "plays_cubeful", False) for p in seats if p is not None)


def choose(after: Afterstates, policy, turn: np.ndarray, variant, rng, idx: np.ndarray | None = None,
           stakes=None) -> np.ndarray:
    """The chosen row of every position of ``after`` (``turn`` its player on roll, ``idx`` its
    game): one call of a single ``policy`` for all, or, for a pair, one call per seat (white
    first) on that seat's positions, or, for :class:`Outside`, one call for the positions not
    decided outside; ``-1`` where the position is decided outside the loop.  ``stakes``: a row
    per position, seen by its mover (:func:`ask`)."""
    def part(sel):
        return None if stakes is None else stakes.select(sel)

    if isinstance(policy, Outside):
        chosen = np.full(len(turn), -1, np.int64)
        sel = np.flatnonzero(turn != policy.seat[idx])
        if len(sel) == len(turn):
            chosen[:] = ask(policy.policy, after, variant, rng, stakes)
        elif len(sel):
            sub, rows = after.select(sel)
            chosen[sel] = rows[ask(policy.policy, sub, variant, rng, part(sel))]
        return chosen
    if not isinstance(policy, (tuple, list)):
        return ask(policy, after, variant, rng, stakes)
    chosen = np.full(len(turn), -1, np.int64)
    for seat in (0, 1):
        if policy[seat] is None:
            continue
        sel = np.flatnonzero(turn == seat)
        if not len(sel):
            continue
        if len(sel) == len(turn):
            chosen[:] = ask(policy[seat], after, variant, rng, stakes)
        else:
            sub, rows = after.select(sel)
            chosen[sel] = rows[ask(policy[seat], sub, variant, rng, part(sel))]
    return chosen


# --- the stakes stage (CUBE-1, CUBE-D, BG-B, BG-M) --------------------------------------------

def ask_cube(agent, op: str, boards: np.ndarray, cubes, v, default: bool) -> tuple[np.ndarray, list | None]:
    """One batched cube question (``double``, ``take``, ``beaver``) to an agent: its decisions
    ``(N,)`` bool and its equities (a dict per position, or None).  An agent without the method
    answers ``default`` (never doubles, always takes)."""
    fn = getattr(agent, op, None)
    if fn is None or not len(boards):
        return np.full(len(boards), default), None
    decisions, equities = fn(boards, cubes, v)
    out = np.asarray(decisions, bool)
    if out.shape != (len(boards),):
        raise IllegalPlay(f"agent {agent.name!r} answered {op} for {out.shape} positions, "
                          f"not {len(boards)}")
    return out, equities


def cube_stage(games: core.Games, idx: np.ndarray, agents: Sequence, history: list[list] | None = None,
               ply: np.ndarray | int | None = None) -> core.Games:
    """Before the roll: offers, takes, beavers and passes in the running games ``idx``, one
    question per seat and kind to ``agents`` (white's, black's), the core's checked stakes step
    (:func:`nardy_ai.core.cube_action`) applying the answers.  The taker sees the position
    from its own side.  With ``history``, appends ``[ply, player, action, stake after it]`` to
    ``history[g]`` (``ply``: the games' own plies when None)."""
    v = games.variant
    at = games.plies if ply is None else np.broadcast_to(np.asarray(ply), (games.n,))

    def note(gs: np.ndarray, player: int, action: str, stake: np.ndarray) -> None:
        """Log ``action`` of ``player`` in games ``gs``, with the stake ``stake[g]`` after it."""
        if history is not None:
            for g_ in gs.tolist():
                history[g_].append([int(at[g_]), player, action, int(stake[g_])])

    can = core.may_double(games, idx)
    mover = games.turn[idx]
    for seat in (0, 1):
        g = idx[can & (mover == seat)]
        if not len(g):
            continue
        st = games.stakes                       # the stakes before the raise: what both see
        doubled = g[ask_cube(agents[seat], "double", games.board[g], st.views(g, seat), v, False)[0]]
        if not len(doubled):
            continue
        took = ask_cube(agents[1 - seat], "take", flip(games.board[doubled], v),
                        st.views(doubled, 1 - seat), v, True)[0]
        games = core.cube_action(games, doubled, seat, "double")
        gone = doubled[~took]
        note(doubled, seat, "double", st.value)
        note(gone, 1 - seat, "pass", st.value)
        games = core.cube_action(games, gone, 1 - seat, "pass")
        kept = doubled[took]
        bv_mask = np.zeros(len(kept), bool)
        if v.beaver and v.stakes == "cube" and len(kept):
            bv_mask = ask_cube(agents[1 - seat], "beaver", flip(games.board[kept], v),
                               st.views(kept, 1 - seat), v, False)[0]
        plain = kept[~bv_mask]
        games = core.cube_action(games, plain, 1 - seat, "take")
        note(plain, 1 - seat, "take", games.stakes.value)
        bv = kept[bv_mask]
        if len(bv):                             # BG-B: take and redouble, keeping the cube
            games = core.cube_action(games, bv, 1 - seat, "beaver")
            note(bv, 1 - seat, "beaver", games.stakes.value)
            cubes = games.stakes.views(bv, seat, on_roll=True)   # the doubler, on roll
            again = ask_cube(agents[seat], "take", games.board[bv], cubes, v, True)[0]
            note(bv[~again], seat, "pass", games.stakes.value)
            games = core.cube_action(games, bv[~again], seat, "pass")
            games = core.cube_action(games, bv[again], seat, "take")
            note(bv[again], seat, "take", games.stakes.value)
    return games


@dataclass
class CubeStage:
    """The stakes stage of a run: :func:`cube_stage` with ``agents`` (white's, black's) before
    each roll of a game with stakes, except the first turn of an ``opening_roll`` game (the
    lot's dice are played at once, COM-7) and loop plies before ``from_ply``; cube actions are
    logged to ``history`` (a list per game) when given."""
    agents: Sequence
    history: list[list] | None = None
    from_ply: int = 0

    def __call__(self, games: core.Games, ply: int, idx: np.ndarray) -> core.Games:
        if games.stakes is None or ply < self.from_ply:
            return games
        if games.variant.opening == "opening_roll":
            idx = idx[games.plies[idx] > 0]
            if not len(idx):
                return games
        return cube_stage(games, idx, self.agents, self.history)


# --- one ply and the loop ----------------------------------------------------------------------

@dataclass
class Ply:
    """What one :func:`step` did.  ``idx`` the games that rolled and had a turn (a game ended by
    a pass in the stakes stage is not among them), ``turn`` their players on roll, ``boards``
    their positions before the play (mover's view), ``dice`` their rolls, ``after`` their
    afterstates, ``chosen`` the row of ``after`` each played (``-1``: pending, its seat decided
    outside the loop)."""
    ply: int
    idx: np.ndarray
    turn: np.ndarray
    boards: np.ndarray
    dice: np.ndarray
    after: Afterstates
    chosen: np.ndarray

    def pending(self) -> np.ndarray:
        """Positions (into ``idx``) waiting for a decision from outside the loop."""
        return np.flatnonzero(self.chosen < 0)


def step(games: core.Games, idx: np.ndarray, dice: Callable, policy, rng=None, *, ply: int = 0,
         cube: Callable | None = None, notation: bool = False) -> tuple[core.Games, Ply | None]:
    """One ply of the running games ``idx``: their rolls from ``dice`` (drawn before the stakes
    stage, which draws nothing), the stakes stage ``cube`` (e.g. :class:`CubeStage`), every
    legal afterstate in one generator call (with play notation when ``notation``), the
    policy's picks (:func:`choose`, checked once) and the plays (:func:`nardy_ai.core.play`).
    Games whose seat has no policy are left pending (not played; ``Ply.chosen`` -1).  Returns
    the games and the :class:`Ply` (None when the stakes stage ended every game)."""
    v = games.variant
    d = dice(games, ply, idx)
    if cube is not None:
        games = cube(games, ply, idx)
        live = ~games.over[idx]
        if not live.all():
            idx, d = idx[live], d[live]
            if not len(idx):
                return games, None
    boards = games.board if len(idx) == games.n else games.board[idx]
    after = generate(boards, d, v, notation=notation)
    turn = games.turn[idx]
    stakes = games.stakes.views(idx, turn) if games.stakes is not None and wants_stakes(policy) else None
    chosen = choose(after, policy, turn, v, rng, idx, stakes)
    played = chosen >= 0
    if played.all():
        games = core.play(games, idx, after.boards[chosen])
    elif played.any():
        games = core.play(games, idx[played], after.boards[chosen[played]])
    return games, Ply(ply, idx, turn, boards, d, after, chosen)


@dataclass
class Run:
    """The end of a :func:`run`: the games, the next loop ply, and the last :class:`Ply` when
    the run stopped at a decision taken outside the loop (``pending``), else None."""
    games: core.Games
    ply: int
    pending: Ply | None = None


def run(games: core.Games, dice: Callable, policy, rng=None, *, ply: int = 0, plies: int | None = None,
        max_plies: int | None = None, too_long: Callable | None = None, cube: Callable | None = None,
        on_ply: Callable | None = None, on_end: Callable | None = None, restart: bool = False,
        notation: bool = False) -> Run:
    """Play the games with :func:`step` until every one is over, or:

    - ``plies``: this many plies have been played (continuous loops: self-play, samplers);
    - ``max_plies``: the loop ply reached it with games still running: ``too_long(games,
      idx)`` gives the exception to raise (a safety cap: :class:`GameTooLong`), or, when
      None, the run just stops there (truncation: the caller scores the running games);
    - a step left games pending (a seat decided outside): returned as ``Run.pending``.

    Hooks: ``on_ply(ply_record, games)`` after each step (records, trajectories, samples);
    ``on_end(games, done)`` with the games that ended in the step (results); with
    ``restart`` those games start again at once (:func:`nardy_ai.core.restart`).  ``ply`` is
    the loop ply to start from (dice sources and the stakes stage read it)."""
    stop = None if plies is None else ply + plies
    while True:
        if stop is not None and ply >= stop:
            return Run(games, ply)
        idx = np.arange(games.n) if not games.over.any() else games.running()
        if not len(idx):
            return Run(games, ply)
        if max_plies is not None and ply >= max_plies:
            if too_long is None:
                return Run(games, ply)
            raise too_long(games, idx)
        before = games.over
        games, rec = step(games, idx, dice, policy, rng, ply=ply, cube=cube, notation=notation)
        ply += 1
        if rec is not None and on_ply is not None:
            on_ply(rec, games)
        if on_end is not None or restart:
            done = np.flatnonzero(games.over & ~before)
            if len(done):
                if on_end is not None:
                    on_end(games, done)
                if restart:
                    games = core.restart(games, done)
        if rec is not None and (rec.chosen < 0).any():
            return Run(games, ply, rec)


def plies_cap(max_plies: int, truncate: int | None, describe: Callable) -> tuple[int, Callable | None]:
    """A run's ``(max_plies, too_long)`` for a loop that stops at ``truncate`` plies (its
    running games then scored by the caller) or else raises :class:`GameTooLong` at
    ``max_plies``, with the message ``describe(games, idx)``."""
    if truncate is not None and truncate <= max_plies:
        return truncate, None
    return max_plies, lambda games, idx: GameTooLong(describe(games, idx))


def play_pending(games: core.Games, rec: Ply, picks: np.ndarray) -> core.Games:
    """Play outside decisions: ``picks`` (rows of ``rec.after``, one per pending position of
    ``rec``) checked, then played.  :class:`IllegalPlay` for a row of another position."""
    pend = rec.pending()
    picks = np.asarray(picks, np.int64)
    sub = rec.after.offsets
    bad = (picks < sub[pend]) | (picks >= sub[pend + 1])
    if picks.shape != pend.shape or bad.any():
        raise IllegalPlay("picked rows that are not afterstates of their positions")
    return core.play(games, rec.idx[pend], rec.after.boards[picks])
