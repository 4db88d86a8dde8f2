"""A bare checkpoint path as an agent spec plays as ``td:PATH``; a missing one says so."""

import pytest

from nardy_ai.agents import make_agent
from nardy_ai.errors import UnknownAgent

CHAMPION = "checkpoints/backgammon/search_targets_distill_iter3/current.pt"


@pytest.mark.parametrize("suffix, plies", [("", 0), ("@1ply", 1)])
def test_existing_checkpoint_path_plays_as_td(suffix, plies):
    bare = make_agent(CHAMPION + suffix, "backgammon")
    td = make_agent("td:" + CHAMPION + suffix, "backgammon")
    assert type(bare) is type(td)
    assert bare.name == CHAMPION + suffix
    assert bare.plies == td.plies == plies


@pytest.mark.parametrize("spec", ["runs/nowhere/current.pt", "nowhere.pt@1ply", "runs/x"])
def test_missing_checkpoint_path_is_named(spec):
    with pytest.raises(UnknownAgent, match=f"unknown agent '{spec}' \\(no such checkpoint file"):
        make_agent(spec, "backgammon")
