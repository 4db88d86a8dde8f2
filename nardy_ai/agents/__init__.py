"""Agents: who chooses the play.  :func:`make_agent` turns a spec string into an agent.

A spec is ``prefix`` or ``prefix:argument``; the prefix picks a factory from :data:`AGENTS`
and the factory reads the argument (e.g. later ``td:path.pt@2ply``, ``gnubg:0ply``,
``ext:"cmd"``).  Modules that add agents register them with :func:`register_agent`.
"""

from __future__ import annotations

from typing import Callable

from ..errors import UnknownAgent
from ..variants import Variant, get_variant
from .base import Agent, segment_argmax, segment_ids, subset
from .cube_rule import PipCountCube
from .external import ExternalAgent, ext_factory
from .heuristic import HeuristicAgent
from .human import HumanAgent
from .pubeval import PubevalAgent, pubeval_factory
from .random_agent import RandomAgent

#: A factory builds an agent from the argument after ``prefix:`` ("" when none) and the variant.
AgentFactory = Callable[[str, Variant], Agent]


def _no_argument(cls: type[Agent]) -> AgentFactory:
    def factory(arg: str, variant: Variant) -> Agent:
        if arg:
            raise UnknownAgent(f"agent {cls.name!r} takes no argument, got {cls.name}:{arg}")
        return cls()
    return factory


#: Known agent prefixes and their factories.
AGENTS: dict[str, AgentFactory] = {
    "random": _no_argument(RandomAgent),
    "heuristic": _no_argument(HeuristicAgent),
    "human": _no_argument(HumanAgent),
    "ext": ext_factory,
}


def _td(arg: str, variant: Variant) -> Agent:
    from .neural import td_factory       # imports torch only when a neural agent is asked for
    return td_factory(arg, variant)


AGENTS["td"] = _td


def _gnubg(arg: str, variant: Variant) -> Agent:
    from .gnubg_agent import gnubg_factory     # the optional gnubg package is imported only here
    return gnubg_factory(arg, variant)


class CubePubevalAgent(PipCountCube, PubevalAgent):
    """Pubeval's play with the pip-count cube rule (:mod:`nardy_ai.agents.cube_rule`); what
    ``pubeval`` specs build (kept here while agents/pubeval.py is another change's)."""


def _pubeval(arg: str, variant: Variant) -> Agent:
    pubeval_factory(arg, variant)                 # its checks of the spec and the variant
    return CubePubevalAgent()


AGENTS["pubeval"] = _pubeval
AGENTS["gnubg"] = _gnubg


def register_agent(prefix: str, factory: AgentFactory) -> None:
    """Make ``prefix`` / ``prefix:arg`` specs build agents with ``factory``."""
    AGENTS[prefix] = factory


def make_agent(spec: str, variant: str | Variant) -> Agent:
    """Build the agent a spec names for a variant; an unknown prefix raises :class:`UnknownAgent`."""
    v = get_variant(variant)
    prefix, _, arg = spec.strip().partition(":")
    factory = AGENTS.get(prefix)
    if factory is None:
        raise UnknownAgent(f"unknown agent {spec!r}; known: {', '.join(AGENTS)}")
    return factory(arg, v)


__all__ = ["AGENTS", "Agent", "AgentFactory", "CubePubevalAgent", "ExternalAgent", "HeuristicAgent", "HumanAgent",
           "PubevalAgent", "RandomAgent", "make_agent", "register_agent", "segment_argmax",
           "segment_ids", "subset"]
