"""The agent registry (nardy_ai/registry.py, checkpoints/agents.toml): names a user types,
the champion of every variant, hash checks, and the checkpoints folder it describes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from nardy_ai import registry
from nardy_ai.agents import make_agent
from nardy_ai.board import start_board
from nardy_ai.cli import main
from nardy_ai.errors import UnknownAgent
from nardy_ai.movegen import generate
from nardy_ai.registry import RegistryError, parse_registry
from nardy_ai.variants import VARIANTS, get_variant

REG = registry.load()


def test_every_variant_has_a_champion_that_plays_it():
    for vid in VARIANTS:
        v = get_variant(vid)
        champ = registry.champion(v)
        assert champ.role == "champion" and champ.path.is_file()
        agent = make_agent("best", v)
        after = generate(start_board(v)[None], np.array([[6, 5]]), v)
        assert agent.choose(after, v, np.random.default_rng(0)).shape == (1,)
        assert agent.plies == champ.plies and agent.cube_plies == champ.cube_plies
        assert agent.name == "best"


def test_names_and_modifiers_resolve_to_the_registry_files():
    champ = registry.champion("backgammon")
    assert champ.name == "bg-champion"
    assert registry.resolve("best", "backgammon") == champ.spec
    assert registry.resolve("td:best", "backgammon") == champ.spec
    assert registry.resolve("bg-champion@2ply", "backgammon").endswith("current.pt@2ply+cube1ply")
    assert registry.resolve("best+cube0ply", "backgammon").endswith("current.pt+cube0ply")
    assert registry.resolve("best@1ply", "backgammon").endswith("current.pt@1ply")   # cube 1 = plies
    assert registry.resolve("best+pipcube", "long").endswith("current.pt+pipcube")
    assert registry.resolve("pubeval", "backgammon") == "pubeval"           # built-ins stay themselves
    assert registry.resolve("td:some/file.pt", "backgammon") == "td:some/file.pt"
    a = make_agent("td-gammon@1ply", "backgammon")
    assert (a.plies, a.cube_plies) == (1, 0)
    assert make_agent("td:bg-champion", "backgammon").cube_plies == 1
    # a net of the family plays the family's other variants; another family is refused
    assert make_agent("bg-champion", "short_trictrac").evaluator.variant.id == "backgammon"
    with pytest.raises(UnknownAgent, match="cannot play backgammon"):
        make_agent("long-champion", "backgammon")
    with pytest.raises(UnknownAgent, match="unknown agent"):
        registry.entry("no-such-bot", "backgammon")


def test_short_names_for_display():
    champ = registry.champion("backgammon")
    assert registry.short_name(f"td:{champ.path}") == "bg-champion"
    assert registry.short_name(f"td:{champ.path}@1ply+cube2ply") == "bg-champion@1ply+cube2ply"
    assert registry.short_name("td:elsewhere/x.pt") is None and registry.short_name("pubeval") is None
    shared = registry.champion("long_dave").path        # one file, two entries: the variant's wins
    assert registry.short_name(f"td:{shared}", "long_dave") == "long-dave-champion"
    # ... and for long the long entry of that file (long-twoply, a former long champion)
    assert registry.short_name(f"td:{shared}", "long") == "long-twoply" != registry.champion("long").name
    former = registry.entry("long-search-targets").path
    assert registry.short_name(f"td:{former}", "long_dave") == "long-search-targets"   # its only entry


def test_the_checkpoints_folder_holds_what_the_registry_names():
    named = {e.path.parent for e in REG.entries if e.path is not None}
    shipped = {p for p in REG.root.glob("*/*") if p.is_dir()}
    assert shipped == named
    for vid in VARIANTS:
        # a few milestones a variant (the recipe chain's starting nets, the former champions), not 30 nets
        assert sum(e.role == "milestone" and e.variant == vid for e in REG.entries) <= 4
    for e in REG.entries:
        if e.path is not None:
            e.verify()
            assert e.card.is_file(), e.name
    assert {"bg-champion", "long-champion", "td-gammon"} <= set(REG.names())


def _copy_registry(tmp_path: Path, entry_name: str) -> tuple[registry.Registry, Path]:
    """A copy of the registry and its files under ``tmp_path``; the file of ``entry_name``."""
    for e in REG.entries:
        if e.path is not None:
            target = tmp_path / e.path.relative_to(REG.root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(e.path, target)
    text = (REG.root / registry.REGISTRY_FILE).read_text()
    return parse_registry(text, tmp_path), tmp_path / REG.get(entry_name).path.relative_to(REG.root)


def test_a_changed_or_missing_file_is_named(tmp_path, monkeypatch, capsys):
    reg, target = _copy_registry(tmp_path, "td-gammon")
    reg.get("td-gammon").verify()
    target.write_bytes(target.read_bytes() + b"x")
    with pytest.raises(RegistryError, match="td-gammon.*changed or replaced"):
        reg.get("td-gammon").verify()
    monkeypatch.setattr(registry, "load", lambda: reg)
    assert main(["agents"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("nardy: error: ") and str(target) in err[0]
    target.unlink()
    with pytest.raises(RegistryError, match="cannot read"):
        reg.get("td-gammon").verify()


@pytest.mark.parametrize("edit,says", [
    (lambda t: t.replace('role = "champion"', 'role = "king"', 1), "role must be one of"),
    (lambda t: t.replace('plies = 0', 'plies = 9', 1), "plies must be an integer"),
    (lambda t: t.replace('sha256 = "', 'sha256 = "zz', 1), "sha256 must be 64 hex"),
    (lambda t: t.replace('name = "td-gammon"', 'name = "bg-champion"'), "appears twice"),
    (lambda t: t.replace('best = "long-champion"', 'best = "nobody"'), "best names no agent"),
    (lambda t: t.replace('summary = "TD-Gammon', 'colour = "red"\nsummary = "TD-Gammon'), "unknown key 'colour'"),
    (lambda t: t + "\n[extra]\n", "unknown table 'extra'"),
    (lambda t: t.replace("[variants.long]", "[variants.longer]"), "unknown variant"),
    (lambda t: t.replace('variant = "long_dave"', 'variant = "chess"'), "variant 'chess' is unknown"),
    (lambda t: t + "\n[[agent]\n", "not valid TOML"),
    (lambda t: t.replace('recipe = "nardy train', 'recipe = 3 #', 1), "recipe must be a string"),
])
def test_a_malformed_registry_names_the_key(edit, says, tmp_path):
    text = (REG.root / registry.REGISTRY_FILE).read_text()
    with pytest.raises(RegistryError, match=says):
        parse_registry(edit(text), tmp_path)


def test_champions_name_the_recipe_that_makes_them(capsys):
    """Each recipe an entry names is a shipped file, and `nardy agents --variant V` prints it."""
    with_recipe = [e for e in REG.entries if e.recipe]
    assert {e.name for e in with_recipe} >= {"bg-champion", "long-champion", "caucasian-champion", "trictrac-champion"}
    root = REG.root.parent
    for e in with_recipe:
        config = e.recipe.split("--config ")[1].split()[0]
        assert (root / config).is_file(), (e.name, config)
    assert main(["agents", "--variant", "backgammon"]) == 0
    assert "made by: nardy train --config experiments/backgammon_champion.toml" in capsys.readouterr().out


def test_nardy_agents_lists_and_checks(capsys):
    assert main(["agents", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"name", "variant", "role", "path", "spec"} <= set(rows[0])
    assert {r["name"] for r in rows} == set(REG.names())
    assert main(["agents"]) == 0
    out = capsys.readouterr().out
    assert "bg-champion" in out and "files match their sha256" in out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert main(["agents", "--variant", "short_trictrac"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[1]
    assert first.split()[1] == "trictrac-champion" and "bg-champion" in out and "long-champion" not in out
    assert main(["agents", "--variant", "chess"]) == 2
    assert "unknown variant" in capsys.readouterr().err
