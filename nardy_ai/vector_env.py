"""A batched Gymnasium vector environment: ``N`` games of one learner against an opponent agent,
stepped together on the game driver (:mod:`nardy_ai.driver`).

Needs the optional ``gym`` extra.  Every id of :mod:`nardy_ai.env` is registered with this
class as its ``vector_entry_point``::

    import gymnasium, nardy_ai
    envs = gymnasium.make_vec("nardy_ai/Backgammon-v0", num_envs=256,
                              vectorization_mode="vector_entry_point", opponent="heuristic")
    obs, info = envs.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(1000):
        actions = (rng.random(envs.num_envs) * info["n_legal"]).astype(int)   # random legal plays
        obs, rewards, terminations, truncations, info = envs.step(actions)

The conventions are :class:`nardy_ai.env.NardyEnv`'s, batched:

- **Observation**: ``board`` ``(N, 28)`` int8 (each game from its learner's view: positive =
  the learner's checkers, index 24 its bar, 25 the opponent's bar (a count, 0 or more), 26 and
  27 the checkers borne off), ``dice`` ``(N, 2)`` (zeros once a game is over) and, with
  ``encoder=NAME``, ``features``.
- **Action**: ``(N,)`` indices, each into its game's legal afterstates.  ``info["n_legal"]``
  ``(N,)`` counts them; ``info["afterstates"]`` ``(M, 28)`` holds every game's afterstates
  (learner's view, before the opponent's turn, *not* flipped), game ``i``'s being rows
  ``info["afterstate_offsets"][i]:[i + 1]``; ``info["action_mask"]`` ``(N, MAX_ACTIONS)`` int8
  (``action_masks=False`` leaves it out).  :meth:`NardyVectorEnv.features` encodes
  afterstates with the project's encoders in one call, :meth:`NardyVectorEnv.best_actions`
  picks each game's best afterstate by a value per row, :meth:`NardyVectorEnv.plays` gives a
  game's play notation on request.  An index with no afterstate raises
  :class:`~nardy_ai.errors.IllegalPlay` (``illegal="raise"``, the default) or ends that game
  lost at the variant's highest result (``illegal="lose"``; ``info["illegal_action"]``).
- **Reward**: the game's points when it ends (won +, lost -; stakes included), else 0.
- **Autoreset**: Gymnasium's next-step mode (``metadata["autoreset_mode"]``): the step after a
  game ended ignores that game's action and starts a new one (reward 0, not terminated).
- **Seeds**: ``reset(seed=s)`` seeds the dice of the whole batch and the opponent's random
  stream (spawned from it); the same seed and actions give the same games.  With
  ``num_envs=1`` and a fixed ``seat``, the first episode is :class:`~nardy_ai.env.NardyEnv`'s
  for the same seed.  ``seat`` None: each game's seat is drawn at each (auto)reset.
- **Stakes**: as :class:`~nardy_ai.env.NardyEnv` (``stakes=``, ``learner_cube=``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

try:
    from gymnasium import spaces
    from gymnasium.utils import seeding
    from gymnasium.vector import AutoresetMode, VectorEnv
    from gymnasium.vector.utils import batch_space
except ImportError as e:                                   # pragma: no cover - the extra is missing
    raise ImportError("nardy_ai.vector_env needs Gymnasium: pip install -e '.[gym]'") from e

from . import core, driver
from .agents import make_agent
from .board import flip
from .cube import stakes_variant
from .encoding import get_encoder
from .env import MAX_ACTIONS, check_seat_and_illegal, encode, observation_space
from .errors import IllegalPlay, NardyError
from .movegen import segment_argmax
from .variants import parse_variant_spec



def action_masks(counts: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``(N, MAX_ACTIONS)`` int8: 1 for the first ``counts[i]`` actions of game ``i`` (its legal
    afterstates; ``offsets`` their cumulative counts, ``(N + 1,)``), set one legal action at a
    time rather than compared over every column."""
    if len(counts) and counts.max() > MAX_ACTIONS:
        raise NardyError(f"{int(counts.max())} legal afterstates exceed MAX_ACTIONS={MAX_ACTIONS}")
    mask = np.zeros((len(counts), MAX_ACTIONS), np.int8)
    total = int(offsets[-1])
    if total:
        at = np.repeat(np.arange(len(counts)) * MAX_ACTIONS - offsets[:-1], counts) + np.arange(total)
        mask.reshape(-1)[at] = 1
    return mask

_FIELDS = ("board", "turn", "first", "plies", "over", "winner", "level", "points", "passed", "lot")


def put(games: core.Games, idx: np.ndarray, new: core.Games) -> core.Games:
    """``games`` with the games ``idx`` replaced by the batch ``new`` (``len(idx)`` games)."""
    out = {}
    for name in _FIELDS:
        a = getattr(games, name).copy()
        a[idx] = getattr(new, name)
        out[name] = a
    if games.stakes is not None:
        out["stakes"] = games.stakes.put(idx, new.stakes)
    return replace(games, dice=None, **out)


class NardyVectorEnv(VectorEnv):
    """``num_envs`` games of ``variant``, the learner's seat against ``opponent`` (an agent
    spec) in each, stepped in lockstep (module documentation)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, variant: str = "backgammon", opponent: str = "random",
                 seat: int | None = None, encoder: str | None = None, stakes: str | None = None,
                 learner_cube: str = "heuristic", illegal: str = "raise", max_plies: int = 5000,
                 action_masks: bool = True, render_mode: str | None = None):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise NardyError(f"num_envs must be an integer of at least 1, got {num_envs!r}")
        check_seat_and_illegal(seat, illegal)
        if render_mode is not None:
            raise NardyError("the vector environment does not render; use nardy_ai.env.NardyEnv")
        self.num_envs = int(num_envs)
        self.variant = stakes_variant(parse_variant_spec(variant), stakes)
        self.stakes = stakes
        self.opponent = make_agent(opponent, self.variant)
        self.learner_cube = make_agent(learner_cube, self.variant)
        self.seat_choice, self.illegal, self.max_plies = seat, illegal, int(max_plies)
        self.action_masks = bool(action_masks)
        self.encoder = None if encoder is None else get_encoder(encoder, self.variant)
        self.single_observation_space = observation_space(self.encoder)
        self.single_action_space = spaces.Discrete(MAX_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._worst = int(max(self.variant.scoring))
        self.games: core.Games | None = None

    # --- the games -------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """New games in every slot; ``seed`` seeds the dice and the opponent's stream."""
        if seed is not None:
            self._np_random, self._np_random_seed = seeding.np_random(seed)
        game_seed = int(seed) if seed is not None else int(self.np_random.integers(2 ** 62))
        n = self.num_envs
        self.dice_rng = np.random.default_rng(game_seed)
        self.agent_rng = self.dice_rng.spawn(1)[0]
        self.dice = driver.SeededDice(self.dice_rng)
        self.seat = self._seats(n)
        self.games, _ = core.start(self.variant, n, self.dice_rng, self.stakes)
        self._autoreset = np.zeros(n, bool)
        self._truncated = np.zeros(n, bool)
        self._advance()
        return self._observation(), self._info(np.zeros(n, bool))

    def _seats(self, k: int) -> np.ndarray:
        if self.seat_choice is None:
            return self.np_random.integers(2, size=k).astype(np.int64)
        return np.full(k, self.seat_choice, np.int64)

    def _restart(self, idx: np.ndarray) -> None:
        """New games in the slots ``idx`` (the next-step autoreset): a fresh lot and seat each."""
        new, _ = core.start(self.variant, len(idx), self.dice_rng, self.stakes)
        self.games = put(self.games, idx, new)
        self.seat[idx] = self._seats(len(idx))
        self._truncated[idx] = False

    def _cube(self, games: core.Games, ply: int, idx: np.ndarray) -> core.Games:
        """The stakes stage, the learner's seat deciding with ``learner_cube``."""
        for s in (0, 1):
            sub = idx[self.seat[idx] == s]
            if len(sub):
                agents = (self.learner_cube, self.opponent) if s == 0 else (self.opponent, self.learner_cube)
                games = driver.CubeStage(agents)(games, ply, sub)
        return games

    def _advance(self) -> None:
        """Step the games (stakes, the opponent's turns) until each running one waits for the
        learner or reached ``max_plies``; keeps the learner's rolls and afterstates."""
        n = self.num_envs
        policy = driver.Outside(self.seat, self.opponent)
        cube = self._cube if self.games.stakes is not None else None
        waiting = np.zeros(n, bool)
        parts = []
        while True:
            g = self.games
            need = ~g.over & ~waiting
            cap = need & (g.plies >= self.max_plies)
            if cap.any():
                self._truncated |= cap
                need &= ~cap
            idx = np.flatnonzero(need)
            if not len(idx):
                break
            self.games, rec = driver.step(g, idx, self.dice, policy, self.agent_rng, cube=cube)
            if rec is None:
                continue
            pend = rec.pending()
            if len(pend):
                waiting[rec.idx[pend]] = True
                parts.append((rec, pend))
        self._waiting = waiting
        self._store(parts)

    def _store(self, parts) -> None:
        """Every waiting game's roll and afterstates, in game order."""
        n = self.num_envs
        self._dice = np.zeros((n, 2), np.int64)
        counts = np.zeros(n, np.int64)
        self._parts = []
        whole = len(parts) == 1 and len(parts[0][1]) == len(parts[0][0].idx)
        first = np.zeros(n, np.int64)       # each game's first row in the parts' rows end to end
        chunks, base = [], 0
        for rec, pend in parts:
            gid, off = rec.idx[pend], rec.after.offsets
            counts[gid] = off[pend + 1] - off[pend]
            first[gid] = base + off[pend]
            chunks.append(rec.after.boards)
            base += len(rec.after.boards)
            self._dice[gid] = rec.dice[pend]
            self._parts.append((gid, rec.after, pend))
        self._counts = counts
        self._offsets = np.zeros(n + 1, np.int64)
        np.cumsum(counts, out=self._offsets[1:])
        if whole:                           # every game of the one part waits, in game order
            boards = chunks[0]
        elif chunks:                        # one gather puts every game's rows in game order
            rows = np.repeat(first - self._offsets[:-1], counts) + np.arange(int(self._offsets[-1]))
            boards = np.take(chunks[0] if len(chunks) == 1 else np.concatenate(chunks), rows, axis=0)
        else:
            boards = np.zeros((0, 28), np.int8)
        self._boards = boards

    def step(self, actions):
        """Play each waiting game's chosen afterstate, start new games where the last step
        ended one (its action ignored), and play on to the learner's next decisions."""
        if self.games is None:
            raise NardyError("call reset() before step()")
        n = self.num_envs
        a = np.asarray(actions).reshape(-1)
        if a.shape != (n,):
            raise NardyError(f"step needs {n} actions, one per game, got shape {np.shape(actions)}")
        a = a.astype(np.int64)
        reset_idx = np.flatnonzero(self._autoreset)
        play = np.flatnonzero(self._waiting & ~self._autoreset)
        illegal = np.zeros(n, bool)
        if len(play):
            act = a[play]
            bad = (act < 0) | (act >= self._counts[play])
            if bad.any():
                g = int(play[np.flatnonzero(bad)[0]])
                if self.illegal == "raise":
                    raise IllegalPlay(f"game {g}: action {int(a[g])}: this roll has {self._counts[g]} legal "
                                      f"afterstates (0..{self._counts[g] - 1})")
                lost = play[bad]
                illegal[lost] = True
                g = self.games
                over, winner, level, points = g.over.copy(), g.winner.copy(), g.level.copy(), g.points.copy()
                over[lost], winner[lost] = True, 1 - self.seat[lost]
                level[lost], points[lost] = len(self.variant.scoring), self._worst
                self.games = replace(g, over=over, winner=winner, level=level, points=points)
                play, act = play[~bad], act[~bad]
            self.games = core.play(self.games, play, self._boards[self._offsets[play] + act])
        if len(reset_idx):
            self._restart(reset_idx)
        self._advance()
        g = self.games
        active = np.ones(n, bool)
        active[reset_idx] = False
        ended = g.over & active
        terminated = ended.copy()
        truncated = self._truncated & active & ~ended
        rewards = np.where(ended, g.points * np.where(g.winner == self.seat, 1.0, -1.0), 0.0)
        self._autoreset = terminated | truncated
        info = self._info(ended)
        if self.illegal == "lose":
            info["illegal_action"] = illegal
        return self._observation(), rewards, terminated, truncated, info

    # --- what the learner sees ---------------------------------------------------------------

    def boards(self) -> np.ndarray:
        """``(N, 28)`` every game's position from its learner's view."""
        b = self.games.board.copy()
        other = self.games.turn != self.seat
        if other.any():
            b[other] = flip(b[other], self.variant)
        return b

    def _observation(self) -> dict:
        b = self.boards()
        obs = {"board": b, "dice": self._dice.copy()}
        if self.encoder is not None:
            obs["features"] = self.encoder(b).astype(np.float32)
        return obs

    def _info(self, ended: np.ndarray) -> dict:
        g = self.games
        info = {"seat": self.seat.copy(), "ply": g.plies.copy(), "n_legal": self._counts.copy(),
                "afterstates": self._boards, "afterstate_offsets": self._offsets.copy()}
        if self.action_masks:
            info["action_mask"] = action_masks(self._counts, self._offsets)
        if ended.any():
            for name in ("winner", "level", "points"):
                info[name] = np.where(ended, getattr(g, name), 0)
                info[f"_{name}"] = ended.copy()
        if g.stakes is not None:
            info["stake"] = g.stakes.value.copy()
        return info

    def features(self, boards: np.ndarray, encoder: str | None = None) -> np.ndarray:
        """The inputs ``(M, F)`` float32 of an encoder (by name; default the environment's) for
        boards such as ``info["afterstates"]``, in one call."""
        return encode(boards, self.encoder if encoder is None else encoder, self.variant)

    def best_actions(self, values: np.ndarray) -> np.ndarray:
        """``(N,)`` each game's action with the highest ``values`` ``(M,)`` (one per row of
        ``info["afterstates"]``, e.g. a value net's equity for the learner; the first best on
        ties); 0 for a game with no decision waiting: a greedy lookahead learner's step."""
        values = np.asarray(values)
        if values.shape != (len(self._boards),):
            raise NardyError(f"best_actions needs one value per afterstate, ({len(self._boards)},), "
                             f"got {values.shape}")
        actions = np.zeros(self.num_envs, np.int64)
        live = np.flatnonzero(self._counts > 0)
        if len(live):                               # the non-empty segments lie end to end
            bounds = np.append(self._offsets[live], self._offsets[-1])
            actions[live] = segment_argmax(values, bounds) - self._offsets[live]
        return actions

    def plays(self, i: int) -> list[str]:
        """The play notation of game ``i``'s legal afterstates (the order of its actions;
        empty when the game is not waiting for the learner)."""
        for gid, after, positions in self._parts:
            hit = np.flatnonzero(gid == i)
            if len(hit):
                p = int(positions[hit[0]])
                return after.notation(np.arange(after.offsets[p], after.offsets[p + 1]))
        return []
