"""The two-player (self-play) form as a PettingZoo AEC environment (issue #13; optional extra
``pettingzoo``): both seats are agents of the environment, ``"white"`` and ``"black"``.

    from nardy_ai.aec import env
    e = env("backgammon")
    e.reset(seed=0)
    for agent in e.agent_iter():
        obs, reward, terminated, truncated, info = e.last()
        action = None if terminated or truncated else int(obs["action_mask"].nonzero()[0][0])
        e.step(action)

Each agent observes ``{"observation": {"board", "dice"[, "features"]}, "action_mask"}``, as in
PettingZoo's classic board games: the board from its own view, its roll and the mask of its
legal afterstates when it is on roll (zeros otherwise).  An action is an index into the legal
afterstates of the roll (``Discrete(MAX_ACTIONS)``, the order of :func:`nardy_ai.core.legal`);
``infos[agent]["afterstates"]`` and ``["plays"]`` give them.  The game ends with the winner's
points as its reward and the loser's negative (cubeless: the level's points, BG-6, BG-TT, LN-7);
an index with no afterstate raises :class:`~nardy_ai.errors.IllegalPlay` (``illegal="raise"``,
the default) or, with ``illegal="lose"``, loses the game at the variant's highest result.
``reset(seed=s)`` rolls the dice of ``nardy_ai.game.play_games(..., seed=s)`` for one game.
Stakes are not part of this form (use :mod:`nardy_ai.env` or the core's stakes steps).
"""

from __future__ import annotations

import numpy as np

try:
    from gymnasium import spaces
    from pettingzoo import AECEnv
except ImportError as e:                                   # pragma: no cover - the extra is missing
    raise ImportError("nardy_ai.aec needs PettingZoo: pip install -e '.[pettingzoo]'") from e

from . import core, driver
from .encoding import get_encoder
from .env import (MAX_ACTIONS, LazyPlays, action_mask, check_seat_and_illegal, observation, observation_space,
                  rendered, seat_board)
from .errors import IllegalPlay
from .render import text_board
from .variants import parse_variant_spec

SEATS = ("white", "black")


def env(variant: str = "backgammon", encoder: str | None = None, render_mode: str | None = None,
        max_plies: int = 5000, illegal: str = "raise") -> "NardyAEC":
    """A :class:`NardyAEC` (PettingZoo's ``env()`` convention)."""
    return NardyAEC(variant, encoder, render_mode, max_plies, illegal)


class NardyAEC(AECEnv):
    """Both seats of one game of ``variant`` as PettingZoo agents (module documentation)."""

    metadata = {"render_modes": ["ansi", "human"], "name": "nardy_v0", "is_parallelizable": False}

    def __init__(self, variant: str = "backgammon", encoder: str | None = None,
                 render_mode: str | None = None, max_plies: int = 5000, illegal: str = "raise"):
        super().__init__()
        check_seat_and_illegal(None, illegal)
        self.illegal = illegal
        self.variant = parse_variant_spec(variant)
        self.render_mode = render_mode
        self.max_plies = int(max_plies)
        self.encoder = get_encoder(encoder, self.variant) if encoder else None
        space = spaces.Dict({"observation": observation_space(self.encoder),
                             "action_mask": spaces.Box(0, 1, (MAX_ACTIONS,), np.int8)})
        self.possible_agents = list(SEATS)
        self._obs_spaces = {a: space for a in SEATS}
        self._act_spaces = {a: spaces.Discrete(MAX_ACTIONS) for a in SEATS}
        self.games = None

    def observation_space(self, agent):
        return self._obs_spaces[agent]

    def action_space(self, agent):
        return self._act_spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        game_seed = int(seed) if seed is not None else int(np.random.default_rng().integers(2 ** 62))
        self.dice_rng = np.random.default_rng(game_seed)
        self.games, _ = core.start(self.variant, 1, self.dice_rng)
        self._dice = driver.SeededDice(self.dice_rng)
        self.agents = list(SEATS)
        self.rewards = {a: 0.0 for a in SEATS}
        self._cumulative_rewards = {a: 0.0 for a in SEATS}
        self.terminations = {a: False for a in SEATS}
        self.truncations = {a: False for a in SEATS}
        self.infos = {a: {} for a in SEATS}
        self._next_turn()

    def _next_turn(self) -> None:
        """Roll for the player on roll and list its legal afterstates: a step of the game
        driver with both seats decided outside it."""
        rec = driver.run(self.games, self._dice, (None, None), ply=int(self.games.plies[0])).pending
        self.dice, self.after = rec.dice[0], rec.after
        seat = SEATS[int(self.games.turn[0])]
        self.agent_selection = seat
        for a in SEATS:
            self.infos[a] = {}
        self.infos[seat] = {"afterstates": self.after.boards, "plays": LazyPlays(self.after)}

    def observe(self, agent):
        seat = SEATS.index(agent)
        on_roll = self.games.turn[0] == seat and not self.games.over[0]
        obs = observation(seat_board(self.games, seat), self.dice if on_roll else (0, 0), self.encoder)
        return {"observation": obs, "action_mask": action_mask(len(self.after.boards) if on_roll else 0)}

    def step(self, action) -> None:
        seat = self.agent_selection
        if self.terminations[seat] or self.truncations[seat]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[seat] = 0.0
        me = SEATS.index(seat)
        a = int(action)
        if not 0 <= a < len(self.after.boards):
            if self.illegal == "raise":
                raise IllegalPlay(f"action {a}: this roll has {len(self.after.boards)} legal afterstates "
                                  f"(0..{len(self.after.boards) - 1})")
            worst = float(max(self.variant.scoring))
            self._end(winner=1 - me, points=worst)
            self.infos[seat]["illegal_action"] = True
        else:
            self.games = core.play(self.games, np.array([0]), self.after.boards[a:a + 1])
            if self.games.over[0]:
                self._end(int(self.games.winner[0]), float(self.games.points[0]))
            elif self.games.plies[0] >= self.max_plies:
                self.truncations = {s: True for s in SEATS}
                self._clear_rewards()
            else:
                self._clear_rewards()
                self._next_turn()
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _end(self, winner: int, points: float) -> None:
        self.rewards = {SEATS[winner]: points, SEATS[1 - winner]: -points}
        self.terminations = {s: True for s in SEATS}

    def render(self):
        if self.games is None:
            return None
        text = text_board(self.games.board[0], self.variant,
                          dice=None if self.games.over[0] else tuple(int(d) for d in self.dice),
                          labels=(f"X {SEATS[int(self.games.turn[0])]} (on roll)", "O"))
        return rendered(text, self.render_mode)

    def close(self) -> None:
        pass
