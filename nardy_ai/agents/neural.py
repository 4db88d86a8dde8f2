"""Neural agents: play the afterstate with the best equity according to an evaluator
(:class:`~nardy_ai.evaluator.Evaluator`: a net, a net set, or any other), at 0 ply
(greedy: every afterstate of the whole batch in one forward pass) or with an n-ply expectimax
search (:mod:`nardy_ai.search`: 21 rolls per level, gnubg-style move filters).

Spec: ``td:PATH`` (a checkpoint written by ``nardy train``), ``td:PATH@1ply``,
``td:PATH@2ply`` (``@0ply`` is the default).  Afterstates that bear off the last checker
are valued exactly, not by the net.  The cube (or dave) is decided at the same depth by
:mod:`nardy_ai.cubeful` (Janowski at the leaves, both players' cube decisions inside the
lookahead); ``td:PATH[@Nply]+cubeMply`` decides the cube at M plies instead (e.g. checker
play at 0 ply, the cube at 1 ply: cube decisions are few), and ``td:PATH[@Nply]+pipcube``
decides it by the pip-count rule of the bots without an evaluator
(:mod:`nardy_ai.agents.cube_rule`): the baseline the cubeful decisions are measured against.
"""

from __future__ import annotations

import numpy as np

from ..agent_spec import split_spec
from ..cube import Stakes
from ..cubeful import afterstate_values as cubeful_afterstates
from ..cubeful import double_equities, take_equities
from ..errors import UnknownAgent
from ..evaluator import Evaluator, load_evaluator
from ..movegen import Afterstates, segment_ids
from ..search import (MAX_AGENT_PLIES, MoveFilter, Rank, best_afterstates, filtered_choice, filters_for,
                      search_equity)
from ..variants import Variant, get_variant
from .base import Agent
from .cube_rule import PipCountCube

class NeuralAgent(Agent):
    """Player on an :class:`~nardy_ai.evaluator.Evaluator` searching ``plies`` deep
    (0 = greedy), with the move filters of :data:`nardy_ai.search.DEFAULT_FILTERS` unless
    ``filters`` are given."""

    def __init__(self, evaluator: Evaluator, name: str = "td", plies: int = 0,
                 filters: tuple[MoveFilter, ...] | None = None, cube_plies: int | None = None,
                 stakes_aware: bool = True, cubeful_play: bool = False):
        self.evaluator = evaluator
        self.stakes_aware = stakes_aware
        self.cubeful_play = cubeful_play
        self.name = name
        self.filters = filters_for(plies, filters)
        self.plies = plies
        self.cube_plies = plies if cube_plies is None else cube_plies
        filters_for(self.cube_plies)                     # checks the depth

    def rank_for(self, variant: Variant) -> Rank | None:
        """How the search ranks plays in a game of ``variant``: under dave (LN-8: no mars, oin
        or koks; the winner takes the stake) by the win chance (cubeless equity ``2p - 1``),
        not by the evaluator's own result levels; otherwise None, the evaluator's cubeless
        equity (``stakes_aware=False`` keeps that under dave too)."""
        if isinstance(variant, str):
            variant = get_variant(variant)
        if self.stakes_aware and variant.stakes == "dave" and len(self.evaluator.variant.scoring) > 1:
            return win_equity
        return None

    def choose(self, after: Afterstates, variant: Variant, rng: np.random.Generator,
               stakes: Stakes | None = None) -> np.ndarray:
        """The row of the best afterstate of each position of ``after``.  Cubeless (by
        :meth:`rank_for`) unless the agent was made with ``cubeful_play`` (``+cubefulplay``) and
        ``stakes`` are given (a game with the cube or dave: the stakes of each position as the
        mover sees them, as the game driver passes them to an agent with ``plays_cubeful``):
        then by cubeful equity (:func:`nardy_ai.cubeful.afterstate_values`) at this agent's
        depth, the move filters pruning on the 0-ply cubeful values."""
        if stakes is None or not self.cubeful_play:
            return best_afterstates(after, self.evaluator, self.plies, self.filters, rng, self.rank_for(variant))
        per_row = stakes.select(segment_ids(after.offsets))
        ev = self.evaluator
        eq0 = cubeful_afterstates(after.boards, per_row, ev, 0, variant)
        return filtered_choice(eq0, after.offsets, self.filters,
                               lambda rows, depth: cubeful_afterstates(after.boards[rows], per_row.select(rows),
                                                                       ev, depth, variant), rng)

    @property
    def plays_cubeful(self) -> bool:
        """Whether the game driver should pass the stakes to :meth:`choose` (see there)."""
        return self.cubeful_play

    def equity(self, boards: np.ndarray, variant: Variant) -> np.ndarray:
        """Cubeless equity of afterstates for the side that just played, at this agent's depth
        (under dave: ``2p - 1``, :meth:`rank_for`)."""
        return search_equity(boards, self.evaluator, self.plies, rank=self.rank_for(variant))

    def double(self, boards: np.ndarray, cubes, variant: Variant):
        """Double / offer (CUBE-1, CUBE-D) when the cubeful equities at ``cube_plies`` say
        so: ``min(double/take, double/pass) > no double`` (:func:`nardy_ai.cubeful.double_equities`)."""
        return double_equities(boards, Stakes.from_dicts(cubes, variant), self.evaluator, self.cube_plies,
                               variant)

    def take(self, boards: np.ndarray, cubes, variant: Variant):
        """Take when the cubeful equity after the take is at least -1 stake
        (:func:`nardy_ai.cubeful.take_equities`); the doubler is on roll unless ``on_roll``."""
        return take_equities(boards, Stakes.from_dicts(cubes, variant), self.evaluator, self.cube_plies,
                             variant)

    def beaver(self, boards: np.ndarray, cubes, variant: Variant):
        """Beaver (BG-B) when the equity after the take is positive: the double was a mistake."""
        _, eq = self.take(boards, cubes, variant)
        return np.array([e["take"] > 0 for e in eq], bool), eq


def win_equity(probs: np.ndarray) -> np.ndarray:
    """Cubeless equity of a game where only the win counts (dave, LN-8): ``2p - 1``."""
    return 2.0 * np.asarray(probs)[..., 0] - 1.0


class PipCubeNeuralAgent(PipCountCube, NeuralAgent):
    """A neural agent's checker play with the pip-count cube rule (``td:PATH+pipcube``)."""


def parse_td_spec(arg: str) -> tuple[str, int, str | int]:
    """``PATH[@Nply][+pipcube|+cubeMply][+cubefulplay]`` -> ``(PATH, N, cube)``: cube
    ``"pip"`` or the plies of the cube decisions (N unless ``+cubeMply``).  ``+cubefulplay``
    (:func:`cubeful_play_spec`) is not part of the answer."""
    path, mods = split_spec(arg)
    plies = mods.plies or 0
    cube = plies if mods.cube is None else mods.cube
    for depth in (plies, cube if isinstance(cube, int) else 0):
        if depth > MAX_AGENT_PLIES:
            raise UnknownAgent(f"td:{arg}: a {depth}-ply search is not offered; use 0 to "
                               f"{MAX_AGENT_PLIES} plies (@1ply, +cube1ply)")
    return path, plies, cube


def td_factory(arg: str, variant: Variant) -> NeuralAgent:
    """``td:PATH[@Nply]`` -> an agent on the checkpoint at PATH: a net of the variant, or of
    another variant of its family, which plays the game's rules (its moves come from the game's
    move generator) and values positions with its own result levels (under dave by the win
    chance: :meth:`NeuralAgent.rank_for`); a net of the other family is refused."""
    if not arg:
        raise UnknownAgent("agent 'td' needs a checkpoint: td:checkpoints/<variant>/<file>.pt[@1ply][+cube1ply|+pipcube]")
    from .. import registry
    if registry.is_name(arg):           # td:best, td:bg-champion@1ply
        arg = registry.resolve(arg, variant)[3:]
    path, plies, cube = parse_td_spec(arg)
    cubeful = cubeful_play_spec(arg)
    ev = load_evaluator(path, variant, siblings="keep")
    if cube == "pip":
        return PipCubeNeuralAgent(ev, name=f"td:{arg}", plies=plies, cubeful_play=cubeful)
    return NeuralAgent(ev, name=f"td:{arg}", plies=plies, cube_plies=cube, cubeful_play=cubeful)


def cubeful_play_spec(arg: str) -> bool:
    """Whether a ``td:`` spec ends in ``+cubefulplay``: in a game with stakes, checker play by
    cubeful equity (:meth:`NeuralAgent.choose`) instead of the default cubeless equity."""
    return split_spec(arg)[1].cubeful_play
