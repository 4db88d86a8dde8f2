"""training/plan.py: ``nardy train --plan`` for the shipped champion recipes (rates given, so
nothing is measured or run) and the stages' hours following those rates."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from training.config import config_from_dict, load_config
from training.plan import net_shapes, search_targets_stages, starting_netset, train_plan

ROOT = Path(__file__).resolve().parent.parent
RATES = {"sample_per_s": 500.0, "label_per_s": 400.0, "label2_per_s": 20.0, "rivals_per_s": 5000.0,
         "gate_games_per_s": 100.0, "fit_rows_per_s": {}}


def test_the_backgammon_recipe_plan_lists_three_rounds_of_the_cards_sizes():
    cfg, _ = load_config(str(ROOT / "experiments/backgammon_champion.toml"))
    text = train_plan(cfg, jobs=2, rates=RATES)
    lines = text.splitlines()
    assert [r.name for r in cfg.rounds] == ["candidates", "iter2", "iter3"]
    stages = [x.split()[2] for x in lines if x[:2].strip().isdigit()]
    assert stages == ["sample", "rivals", "label", "fit", "gate"] * 3
    assert any("1,500,000" in x and "sample" in x for x in lines)
    sample = next(x for x in lines if "candidates" in x and "sample" in x)
    assert f"{1_500_000 / (500 * 2) / 3600:.2f}" in sample          # rows / (rate x jobs)
    assert "[512]" in text and "at most 100 epochs" in text and lines[-1].startswith("total:")


def test_the_long_recipe_plan_has_seven_generations_following_the_rates():
    cfg, _ = load_config(str(ROOT / "experiments/long_champion.toml"))
    netset = starting_netset(cfg)
    hidden, inputs = net_shapes(netset)
    assert hidden == {"contact": [128], "race": [80]}              # contact widened from 80
    rates = dict(RATES, fit_rows_per_s={f"{inputs[c]}x{'x'.join(map(str, h))}": 10000.0 for c, h in hidden.items()})
    stages = search_targets_stages(cfg, rates, hidden, inputs, jobs=2, threads=1)
    assert len(stages) == 4 * 7
    label = [s for s in stages if s["stage"].startswith("label")]
    assert label[0]["seconds"] == pytest.approx(120000 / (400 * 2))
    gate = [s for s in stages if s["stage"] == "gate"]
    assert gate[0]["seconds"] == pytest.approx(2000 / 100)
    fit = [s for s in stages if s["stage"] == "fit"][0]
    assert fit["seconds"] == pytest.approx(120000 * 40 / 10000)       # every row, max_epochs, one thread


def test_a_td_plan_times_the_recipe_on_its_first_games(tmp_path):
    from training.config import config_from_dict
    from training.plan import td_plan
    cfg = config_from_dict({"variant": "long", "seed": 1, "selfplay": {"parallel_games": 16, "total_games": 1000},
                            "run": {"eval_every": 0}})
    text = td_plan(cfg)
    rate = float(text.split("measured here: ")[1].split(" games per CPU second")[0].replace(",", ""))
    hours = float(text.splitlines()[-1].split("games")[1].split("hours")[0])
    assert rate > 0 and hours == pytest.approx(1000 / rate / 3600, abs=0.006)
    first = int(text.split("over the first ")[1].split(" games")[0].replace(",", ""))
    assert 16 <= first < 1000                         # one lockstep batch, not the recipe


@pytest.mark.parametrize("recipe", sorted(p.name for p in (ROOT / "experiments").glob("*.toml")))
def test_every_recipe_in_experiments_loads_and_names_a_start_it_can_find(recipe):
    """Each recipe passes the config check (no unknown key, every value in range), and its
    ``model.init_from`` is a file of this repository, or the recipe's first line says the net is
    no longer shipped and at which commit git holds it."""
    path = ROOT / "experiments" / recipe
    cfg, text = load_config(str(path))
    if "\nrounds_from = " in path.read_text(encoding="utf-8"):       # the named recipe's rounds copied in
        assert config_from_dict(tomllib.loads(text)).to_dict() == cfg.to_dict()
    else:
        assert text == path.read_text(encoding="utf-8")
    start = cfg.model.init_from
    if start and not (ROOT / start).is_file():
        first = text.splitlines()[0]
        assert "no longer shipped" in first and "git show " in text.split("\n", 3)[1], \
            f"{recipe}: model.init_from {start} is not in the repository and the recipe does not say where it is"
