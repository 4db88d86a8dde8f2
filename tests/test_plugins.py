"""Agents as plug-ins (issue #13): an installed package's ``nardy_ai.agents`` entry point adds
an agent prefix that works in this process and in a tournament's spawned workers."""

from __future__ import annotations

import json
import textwrap

import pytest

from nardy_ai import tournament as tm
from nardy_ai.agents import AGENTS, ENTRY_POINT_GROUP, make_agent, plugin_agents
from nardy_ai.errors import UnknownAgent

PLUGIN = textwrap.dedent('''
    import numpy as np
    from nardy_ai.agents.base import Agent

    class LastPlay(Agent):
        """Always the last legal afterstate of each position."""
        name = "lastplay"

        def __init__(self, arg=""):
            if arg:
                self.name = f"lastplay:{arg}"

        def choose(self, after, variant, rng):
            return after.offsets[1:] - 1

    def factory(arg, variant):
        return LastPlay(arg)

    broken = 42
''')


@pytest.fixture
def installed_plugin(tmp_path, monkeypatch):
    """A package installed the way pip installs one: a module and a dist-info folder with
    entry points, on sys.path (spawned workers inherit the path)."""
    (tmp_path / "nardy_test_plugin.py").write_text(PLUGIN)
    info = tmp_path / "nardy_test_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: nardy-test-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nlastplay = nardy_test_plugin:factory\n"
        "notafactory = nardy_test_plugin:broken\nmissing = nardy_test_plugin_gone:factory\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in ("lastplay", "notafactory", "missing"):
        AGENTS.pop(name, None)


def test_plugin_prefix_builds_its_agent(installed_plugin):
    assert {"lastplay", "notafactory", "missing"} <= set(plugin_agents())
    agent = make_agent("lastplay:x", "backgammon")
    assert agent.name == "lastplay:x"


@pytest.mark.parametrize("spec,message", [
    ("notafactory", "not a factory"),
    ("missing", "'missing'.*failed to load: ModuleNotFoundError"),
    ("nosuchbot", "known: .*lastplay"),
])
def test_a_broken_or_unknown_plugin_is_refused(installed_plugin, spec, message):
    with pytest.raises(UnknownAgent, match=message):
        make_agent(spec, "backgammon")


def test_plugin_agent_plays_a_tournament_in_spawned_workers(installed_plugin, tmp_path):
    cfg = tm.TournamentConfig("backgammon", ("lastplay", "random"), 8, seed=2, chunk=2)
    two = tm.run_tournament(cfg, tmp_path / "two", jobs=2, progress=False, log=lambda s: None)
    one = tm.run_tournament(cfg, tmp_path / "one", jobs=1, progress=False, log=lambda s: None)
    games = [json.loads(line) for line in (tmp_path / "two" / "games.jsonl").read_text().splitlines()]
    assert len(games) == 8 and {g["white"] for g in games} == {"lastplay", "random"}
    assert json.dumps(two["pairings"], sort_keys=True) == json.dumps(one["pairings"], sort_keys=True)
