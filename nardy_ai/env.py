"""Gymnasium environments: one learner's seat against an opponent agent (issue #13).

Needs the optional ``gym`` extra (``pip install -e '.[gym]'``).  Importing :mod:`nardy_ai`
registers the environments when Gymnasium is installed::

    import gymnasium, nardy_ai
    env = gymnasium.make("nardy_ai/Backgammon-v0", opponent="heuristic")
    obs, info = env.reset(seed=0)
    while True:
        legal = info["action_mask"].nonzero()[0]         # indices of the legal afterstates
        obs, reward, terminated, truncated, info = env.step(int(legal[0]))
        if terminated or truncated:
            break

Ids: ``nardy_ai/Backgammon-v0``, ``nardy_ai/ShortCaucasian-v0``, ``nardy_ai/ShortTrictrac-v0``,
``nardy_ai/Long-v0`` (cubeless) and ``nardy_ai/LongDave-v0`` (long nardy for dave stakes, LN-8).

- **Observation**: a dict with ``board`` (28 int8, POSITIONS.md's array, from the learner's
  view: positive = its checkers), ``dice`` (its roll; zeros once the game is over) and, with
  ``encoder=NAME``, ``features``: that encoder's inputs for the board.
- **Action**: an index into the legal afterstates of the roll (``Discrete(MAX_ACTIONS)``);
  ``info["action_mask"]`` (int8, ``MAX_ACTIONS``) marks the legal ones, ``info["afterstates"]``
  holds their boards (learner's view, before the opponent's turn) and ``info["plays"]`` their
  notation (worked out when read).  A forced or empty move (COM-4) is still one step with one
  legal action.  An index with no afterstate raises :class:`~nardy_ai.errors.IllegalPlay`
  (``illegal="raise"``, the default) or, with ``illegal="lose"``, ends the game lost at the
  variant's highest result (reward ``-max points``, ``info["illegal_action"]``).
  :meth:`NardyEnv.features` encodes afterstates with the project's encoders in one call.
- **Batched**: :mod:`nardy_ai.vector_env` steps ``N`` games per call
  (``gymnasium.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point")``).
- **Reward**: the points of the game once it ends (won: +, lost: -; stakes included), else 0.
- **Dice and seeds**: ``reset(seed=s)`` plays the dice and the opponent's random choices of
  ``nardy_ai.game.play_games(..., seed=s)``: the same game as the native runner when the
  learner plays as that runner's agent would (``env.unwrapped.agent_rng`` is the agents'
  random stream).  ``seat`` (0 white, 1 black) or None: drawn from the environment's own
  generator at each reset.
- **Stakes** (``stakes="cube"`` / ``"dave"`` / ...; LongDave-v0: ``"dave"``): raises and answers
  are not actions; the learner's seat decides them with ``learner_cube`` (an agent spec, default
  ``"heuristic"``: the pip-count rule), the opponent with its own cube logic.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

try:
    import gymnasium as gym
    from gymnasium import spaces
except ImportError as e:                                   # pragma: no cover - the extra is missing
    raise ImportError("nardy_ai.env needs Gymnasium: pip install -e '.[gym]'") from e

from . import GYM_ENVS, core, driver, register_gym_envs
from .agents import make_agent
from .board import flip
from .cube import stakes_variant
from .encoding import get_encoder
from .errors import IllegalPlay, NardyError
from .render import text_board
from .variants import parse_variant_spec

#: The action space's size: more than the distinct afterstates of any roll (random play meets
#: at most ~740 in backgammon; 15 checkers and a double give at most C(18, 4) = 3,060).
MAX_ACTIONS = 4096

#: Every encoder's inputs lie within +-this (checker counts are at most 15; the widest
#: inputs, TD-Gammon's count units, reach 6).
FEATURE_BOUND = 16.0

#: Registered ids (namespace ``nardy_ai``) -> the variant and stakes of the environment.
ENV_IDS = GYM_ENVS
register_envs = register_gym_envs


def observation_space(encoder) -> spaces.Dict:
    """The board (28 int8), the dice and, with an encoder, its ``features``: what one seat
    observes (this module's environments and :mod:`nardy_ai.aec`)."""
    obs = {"board": spaces.Box(-15, 15, (28,), np.int8), "dice": spaces.Box(0, 6, (2,), np.int64)}
    if encoder is not None:
        obs["features"] = spaces.Box(-FEATURE_BOUND, FEATURE_BOUND, (encoder.n_features,), np.float32)
    return spaces.Dict(obs)


def seat_board(games: core.Games, seat: int) -> np.ndarray:
    """Game 0's position ``(28,)`` from ``seat``'s view (the board is kept from the mover's)."""
    b = games.board[0]
    return b if games.turn[0] == seat else flip(b[None], games.variant)[0]


def observation(board: np.ndarray, dice, encoder) -> dict:
    """A fresh observation (new arrays every call, as Gymnasium asks) of ``observation_space``."""
    obs = {"board": np.array(board, np.int8), "dice": np.array(dice, np.int64)}
    if encoder is not None:
        obs["features"] = encoder(obs["board"][None])[0].astype(np.float32)
    return obs


def action_mask(n_legal: int) -> np.ndarray:
    """``(MAX_ACTIONS,)`` int8: 1 for the first ``n_legal`` actions (the legal afterstates)."""
    if n_legal > MAX_ACTIONS:
        raise NardyError(f"{n_legal} legal afterstates exceed MAX_ACTIONS={MAX_ACTIONS}")
    mask = np.zeros(MAX_ACTIONS, np.int8)
    mask[:n_legal] = 1
    return mask


def rendered(text: str, render_mode: str | None) -> str | None:
    """What ``render()`` answers for the board ``text``: printed, and None, in ``"human"`` mode;
    the text itself otherwise (``"ansi"``)."""
    if render_mode == "human":
        print(text)
        return None
    return text


def check_seat_and_illegal(seat, illegal) -> None:
    """The learner's ``seat`` (0, 1 or None: drawn) and the ``illegal`` action rule ('raise' or
    'lose') of an environment; :class:`NardyError` naming the bad one."""
    if seat not in (None, 0, 1):
        raise NardyError(f"seat must be 0 (white), 1 (black) or None (random), got {seat!r}")
    if illegal not in ("lose", "raise"):
        raise NardyError(f"illegal must be 'raise' or 'lose', got {illegal!r}")


def encode(boards: np.ndarray, encoder, variant) -> np.ndarray:
    """The inputs ``(M, F)`` float32 of an encoder (an encoder or its name, of the variant's
    family) for boards such as an environment's afterstates, in one call."""
    if encoder is None:
        raise NardyError("features() needs an encoder: pass its name or make the env with encoder=NAME")
    enc = get_encoder(encoder, variant) if isinstance(encoder, str) else encoder
    return enc(np.asarray(boards, np.int8)).astype(np.float32)


class LazyPlays(Sequence):
    """The play notation of a roll's legal afterstates (POSITIONS.md), in action order, worked
    out only when first read (``len`` needs none): ``info["plays"]``."""

    def __init__(self, after):
        self._after, self._plays = after, None

    def _list(self) -> list[str]:
        if self._plays is None:
            a = self._after
            self._plays = list(a.plays) if a.plays is not None else a.notation(np.arange(len(a.boards)))
        return self._plays

    def __len__(self) -> int:
        return len(self._after.boards)

    def __getitem__(self, i):
        return self._list()[i]

    def __eq__(self, other) -> bool:
        return list(self) == list(other)

    def __repr__(self) -> str:
        return repr(self._list())


class NardyEnv(gym.Env):
    """One game of ``variant`` per episode: the learner's seat against ``opponent`` (an agent
    spec, as ``nardy tournament`` takes: ``random``, ``heuristic``, ``pubeval``, ``td:PATH``...).
    See the module's documentation for the spaces, rewards and seeds."""

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 2}

    def __init__(self, variant: str = "backgammon", opponent: str = "random", seat: int | None = None,
                 encoder: str | None = None, stakes: str | None = None, learner_cube: str = "heuristic",
                 illegal: str = "raise", max_plies: int = 5000, render_mode: str | None = None):
        self.variant = stakes_variant(parse_variant_spec(variant), stakes)
        self.stakes = stakes
        check_seat_and_illegal(seat, illegal)
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise NardyError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.opponent = make_agent(opponent, self.variant)
        self.learner_cube = make_agent(learner_cube, self.variant)
        self.seat_choice, self.illegal, self.max_plies = seat, illegal, int(max_plies)
        self.render_mode = render_mode
        self.encoder = None if encoder is None else get_encoder(encoder, self.variant)
        self.observation_space = observation_space(self.encoder)
        self.action_space = spaces.Discrete(MAX_ACTIONS)
        self._worst = int(max(self.variant.scoring))
        self.games: core.Games | None = None
        self.seat = 0

    # --- the game ------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        game_seed = int(seed) if seed is not None else int(self.np_random.integers(2 ** 62))
        self.seat = int(self.np_random.integers(2)) if self.seat_choice is None else self.seat_choice
        self.dice_rng = np.random.default_rng(game_seed)
        self.agent_rng = self.dice_rng.spawn(1)[0]
        self.games, _ = core.start(self.variant, 1, self.dice_rng, self.stakes)
        self._advance()
        return self._observation(), self._info()

    def _cube_agents(self):
        return (self.learner_cube, self.opponent) if self.seat == 0 else (self.opponent, self.learner_cube)

    def _advance(self) -> None:
        """Play on (stakes, the opponent's turns) until the learner is to choose or the game
        ends: a run of the game driver with the learner's seat decided outside it."""
        g = self.games
        policy = (None, self.opponent) if self.seat == 0 else (self.opponent, None)
        cube = driver.CubeStage(self._cube_agents()) if g.stakes is not None else None
        out = driver.run(g, driver.SeededDice(self.dice_rng), policy, self.agent_rng, ply=int(g.plies[0]),
                         max_plies=self.max_plies, cube=cube)
        self.games = out.games
        if out.pending is not None:
            self.dice, self.after = out.pending.dice[0], out.pending.after
        else:
            self.dice, self.after = np.zeros(2, np.int64), None

    def step(self, action):
        if self.games is None:
            raise NardyError("call reset() before step()")
        if self.after is None:
            raise NardyError("the game is over: call reset()")
        a = int(action)
        n = len(self.after.boards)
        if not 0 <= a < n:
            if self.illegal == "raise":
                raise IllegalPlay(f"action {a}: this roll has {n} legal afterstates (0..{n - 1})")
            self.after = None
            info = self._info()
            info["illegal_action"] = True
            return self._observation(), -float(self._worst), True, False, info
        self.games = core.play(self.games, np.array([0]), self.after.boards[a:a + 1])
        self._advance()
        g = self.games
        terminated = bool(g.over[0])
        truncated = not terminated and g.plies[0] >= self.max_plies
        reward = 0.0
        if terminated:
            reward = float(g.points[0]) * (1.0 if g.winner[0] == self.seat else -1.0)
        if self.render_mode == "human":
            self.render()
        return self._observation(), reward, terminated, truncated, self._info()

    # --- what the learner sees -----------------------------------------------------------

    def board(self) -> np.ndarray:
        """The position ``(28,)`` from the learner's view."""
        return seat_board(self.games, self.seat)

    def _observation(self) -> dict:
        return observation(self.board(), self.dice, self.encoder)

    def _info(self) -> dict:
        n = 0 if self.after is None else len(self.after.boards)
        info = {"seat": self.seat, "ply": int(self.games.plies[0]), "action_mask": action_mask(n)}
        if self.after is not None:
            info["afterstates"] = self.after.boards
            info["plays"] = LazyPlays(self.after)
        if self.games.over[0]:
            info.update(winner=int(self.games.winner[0]), level=int(self.games.level[0]),
                        points=int(self.games.points[0]))
        if self.games.stakes is not None:
            info["stake"] = int(self.games.stakes.value[0])
        return info

    def features(self, boards: np.ndarray, encoder: str | None = None) -> np.ndarray:
        """The inputs ``(M, F)`` float32 of an encoder (by name; default the environment's) for
        boards such as ``info["afterstates"]`` (learner's view), in one call."""
        return encode(boards, self.encoder if encoder is None else encoder, self.variant)

    def render(self):
        if self.games is None:
            return None
        text = text_board(self.board(), self.variant,
                          dice=tuple(int(d) for d in self.dice) if self.after is not None else None,
                          labels=("X (learner)", "O"))
        return rendered(text, self.render_mode)
