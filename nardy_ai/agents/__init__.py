"""Agents: who chooses the play.  :func:`make_agent` turns a spec string into an agent.

A spec is ``prefix`` or ``prefix:argument``; the prefix picks a factory from :data:`AGENTS`
and the factory reads the argument (e.g. ``td:path.pt@2ply``, ``gnubg:0ply``, ``ext:"cmd"``).
Modules that add agents register them with :func:`register_agent`.

Plug-ins: an installed package adds agents through the entry-point group
:data:`ENTRY_POINT_GROUP` (``nardy_ai.agents``); the entry point's name is the prefix and its
object a factory ``(argument, variant) -> Agent``.  In ``pyproject.toml``::

    [project.entry-points."nardy_ai.agents"]
    mybot = "mypackage.bots:mybot_factory"

Then ``mybot`` and ``mybot:ARG`` specs work everywhere a spec does (tournaments, their spawned
worker processes and Ray workers, ``nardy play``, ``nardy serve``), wherever the package is
installed.  Built-in prefixes win over plug-ins of the same name.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from .. import registry
from ..errors import UnknownAgent
from ..variants import Variant, get_variant
from .base import Agent, segment_argmax, segment_ids, subset
from .external import ExternalAgent, ext_factory
from .heuristic import HeuristicAgent
from .human import HumanAgent
from .pubeval import CubePubevalAgent, PubevalAgent, pubeval_factory
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


AGENTS["pubeval"] = pubeval_factory
AGENTS["gnubg"] = _gnubg


def register_agent(prefix: str, factory: AgentFactory) -> None:
    """Make ``prefix`` / ``prefix:arg`` specs build agents with ``factory``."""
    AGENTS[prefix] = factory


#: The entry-point group through which installed packages add agent prefixes.
ENTRY_POINT_GROUP = "nardy_ai.agents"


def plugin_agents() -> dict:
    """The installed plug-ins: ``{prefix: entry point}`` of :data:`ENTRY_POINT_GROUP`."""
    from importlib.metadata import entry_points
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _plugin_factory(prefix: str) -> AgentFactory | None:
    ep = plugin_agents().get(prefix)
    if ep is None:
        return None
    try:
        factory = ep.load()
    except Exception as e:          # a broken plug-in: say which, whatever it raised
        raise UnknownAgent(f"agent plug-in {prefix!r} ({ep.value}, entry point group "
                           f"{ENTRY_POINT_GROUP}) failed to load: {type(e).__name__}: {e}") from None
    if not callable(factory):
        raise UnknownAgent(f"agent plug-in {prefix!r} ({ep.value}) is not a factory (arg, variant) -> Agent")
    AGENTS[prefix] = factory
    return factory


def _is_checkpoint_path(spec: str) -> bool:
    """Whether a spec is the path of an existing checkpoint file (``*.pt``, with or without the
    ``@Nply`` / ``+cubeNply`` options of a ``td:`` spec) rather than a prefix."""
    path = _checkpoint_part(spec)
    return path.suffix == ".pt" and path.is_file()


def _checkpoint_part(spec: str) -> Path:
    """The file part of a spec: what comes before its ``@`` / ``+`` options."""
    return Path(re.split(r"[@+]", spec.strip(), maxsplit=1)[0])


def make_agent(spec: str, variant: str | Variant) -> Agent:
    """Build the agent a spec names for a variant; an unknown prefix raises :class:`UnknownAgent`.
    A name of the shipped-agent registry (``best``, ``bg-champion@1ply``, ``td:best``:
    :mod:`nardy_ai.registry`) plays that net at its recommended depths; the path of an existing
    checkpoint file (``runs/x/current.pt``, ``runs/x/current.pt@1ply``) plays as ``td:PATH``.  A prefix neither
    built in nor registered is looked up among the installed plug-ins."""
    v = get_variant(variant)
    bare = spec.strip()[3:] if spec.strip().startswith("td:") else spec.strip()
    if registry.is_name(bare):          # best, bg-champion@1ply, td:best: a shipped net
        agent = _td(registry.resolve(spec, v)[3:], v)
        agent.name = spec.strip()
        return agent
    if _is_checkpoint_path(spec):       # a bare checkpoint path plays as td:PATH
        agent = _td(spec.strip(), v)
        agent.name = spec.strip()
        return agent
    prefix, _, arg = spec.strip().partition(":")
    factory = AGENTS.get(prefix) or _plugin_factory(prefix)
    if factory is None:
        known = list(AGENTS) + [p for p in plugin_agents() if p not in AGENTS]
        hint = ""
        if _checkpoint_part(spec).suffix == ".pt" or "/" in spec:
            hint = " (no such checkpoint file: a checkpoint plays as td:PATH or as its path)"
        raise UnknownAgent(f"unknown agent {spec!r}{hint}; known: {', '.join(known)}")
    agent = factory(arg, v)
    if not isinstance(agent, Agent):
        raise UnknownAgent(f"agent {spec!r}: its factory returned {type(agent).__name__}, not an Agent")
    return agent


__all__ = ["AGENTS", "ENTRY_POINT_GROUP", "Agent", "AgentFactory", "CubePubevalAgent", "ExternalAgent", "HeuristicAgent", "HumanAgent",
           "PubevalAgent", "RandomAgent", "make_agent", "plugin_agents", "register_agent", "segment_argmax",
           "segment_ids", "subset"]
