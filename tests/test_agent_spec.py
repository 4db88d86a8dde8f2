"""The agent-spec modifier grammar (nardy_ai/agent_spec.py), shared by the neural agent's
factory, the registry's name resolution and the tournament's short names."""

import pytest

from nardy_ai import registry
from nardy_ai.agent_spec import SpecModifiers, split_spec
from nardy_ai.agents.neural import cubeful_play_spec, parse_td_spec


@pytest.mark.parametrize("spec, base, mods", [
    ("bg-champion", "bg-champion", SpecModifiers()),
    ("bg-champion@1ply", "bg-champion", SpecModifiers(plies=1, suffix="@1ply")),
    ("a/b.pt@2ply+cube0ply", "a/b.pt", SpecModifiers(plies=2, cube=0, suffix="@2ply+cube0ply")),
    ("a/b.pt+pipcube", "a/b.pt", SpecModifiers(cube="pip", suffix="+pipcube")),
    ("a/b.pt@0ply+cube1ply+cubefulplay", "a/b.pt",
     SpecModifiers(plies=0, cube=1, cubeful_play=True, suffix="@0ply+cube1ply+cubefulplay")),
    ("a/b.pt+cubefulplay", "a/b.pt", SpecModifiers(cubeful_play=True, suffix="+cubefulplay")),
    # modifiers out of order are not modifiers: they stay in the base
    ("a/b.pt+cube1ply@1ply", "a/b.pt+cube1ply", SpecModifiers(plies=1, suffix="@1ply")),
    ("runs/x@home/current.pt", "runs/x@home/current.pt", SpecModifiers()),
    ("a.pt@1plyx", "a.pt@1plyx", SpecModifiers()),
])
def test_split_spec(spec, base, mods):
    assert split_spec(spec) == (base, mods)


def test_neural_factory_and_registry_read_the_same_grammar():
    path, plies, cube = parse_td_spec("x/y.pt@1ply+pipcube+cubefulplay")
    assert (path, plies, cube) == ("x/y.pt", 1, "pip")
    assert parse_td_spec("x/y.pt@1ply") == ("x/y.pt", 1, 1)          # the cube follows the play's depth
    assert parse_td_spec("x/y.pt") == ("x/y.pt", 0, 0)
    assert cubeful_play_spec("x/y.pt@1ply+cubefulplay") and not cubeful_play_spec("x/y.pt@1ply")
    assert registry.is_name("bg-champion@1ply+cube0ply+cubefulplay")
    assert not registry.is_name("bg-champion@1plyx")
    assert not registry.is_name("checkpoints/backgammon/x.pt@1ply")
    resolved = registry.resolve("bg-champion@1ply+pipcube+cubefulplay", "backgammon")
    assert resolved.startswith("td:") and resolved.endswith("@1ply+pipcube+cubefulplay")
    assert registry.short_name(resolved, "backgammon") == "bg-champion@1ply+pipcube+cubefulplay"
