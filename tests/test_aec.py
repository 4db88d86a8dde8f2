"""The two-player PettingZoo form (issue #13): passes PettingZoo's API test and plays the
native runner's games when both seats choose as the runner's agents would."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test  # noqa: E402

from nardy_ai.agents import make_agent  # noqa: E402
from nardy_ai.aec import SEATS, env  # noqa: E402
from nardy_ai.env import MAX_ACTIONS  # noqa: E402
from nardy_ai.errors import IllegalPlay  # noqa: E402
from nardy_ai.game import play_games  # noqa: E402


@pytest.mark.parametrize("variant,encoder", [("backgammon", "expert"), ("short_trictrac", None), ("long", None)])
def test_api(variant, encoder):
    api_test(env(variant, encoder=encoder), num_cycles=300, verbose_progress=False)


@pytest.mark.parametrize("variant", ["backgammon", "short_caucasian", "long"])
def test_both_seats_play_the_native_runners_games(variant):
    """COM-6/7, BG-6, LN-7: same winner, level, points and plies as play_games for each seed."""
    agents = (make_agent("heuristic", variant), make_agent("random", variant))
    for seed in range(3):
        e = env(variant)
        e.reset(seed=seed)
        agent_rng = np.random.default_rng(seed).spawn(1)[0]    # play_games' agents' stream
        total = {s: 0.0 for s in SEATS}
        for seat in e.agent_iter():
            obs, reward, terminated, truncated, info = e.last()
            total[seat] += reward
            if terminated or truncated:
                e.step(None)
                continue
            assert obs["action_mask"].sum() == len(e.after.boards) == len(info["plays"])
            e.step(int(agents[SEATS.index(seat)].choose(e.after, e.variant, agent_rng)[0]))
        rec = play_games(variant, agents, 1, seed=seed)[0]
        winner = SEATS[rec.winner]
        assert total[winner] == rec.points and total[SEATS[1 - rec.winner]] == -rec.points
        assert e.games.plies[0] == rec.plies


def test_illegal_action_raises_or_loses_the_game():
    strict = env("backgammon")
    strict.reset(seed=1)
    with pytest.raises(IllegalPlay, match="legal afterstates"):
        strict.step(MAX_ACTIONS - 1)
    e = env("backgammon", illegal="lose")
    e.reset(seed=1)
    seat = e.agent_selection
    e.step(MAX_ACTIONS - 1)
    assert all(e.terminations.values())
    assert e.rewards[seat] == -3.0 and e.infos[seat]["illegal_action"]
