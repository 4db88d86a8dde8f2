"""Gymnasium environments (issue #13): they pass Gymnasium's checker and play the games the
native runner plays for the same seeds."""

from __future__ import annotations

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

import nardy_ai  # noqa: E402,F401  (registers the environments)
from nardy_ai.agents import make_agent  # noqa: E402
from nardy_ai.encoding import ENCODERS, get_encoder  # noqa: E402
from nardy_ai.env import ENV_IDS, FEATURE_BOUND, MAX_ACTIONS, NardyEnv  # noqa: E402
from nardy_ai.errors import IllegalPlay, NardyError  # noqa: E402
from nardy_ai.game import play_games  # noqa: E402


@pytest.mark.parametrize("name", sorted(ENV_IDS))
def test_registered_envs_pass_the_checker(name):
    from gymnasium.utils.env_checker import check_env
    env = gym.make(f"nardy_ai/{name}", opponent="heuristic", illegal="lose")   # the checker ignores masks
    check_env(env.unwrapped, skip_render_check=False)
    assert env.unwrapped.variant.id == ENV_IDS[name][0]


def _play(env: NardyEnv, agent, seed: int):
    """One episode with the learner's choices made by ``agent`` from the environment's agent
    stream (as the native runner would make them)."""
    obs, info = env.reset(seed=seed)
    total, steps = 0.0, 0
    while True:
        assert info["action_mask"].sum() == len(env.after.boards)
        a = int(agent.choose(env.after, env.variant, env.agent_rng)[0])
        assert info["action_mask"][a] == 1
        obs, reward, terminated, truncated, info = env.step(a)
        total += reward
        steps += 1
        if terminated or truncated:
            return total, steps, info


@pytest.mark.parametrize("variant,stakes,learner,opponent", [
    ("backgammon", None, "random", "heuristic"),
    ("short_trictrac", None, "heuristic", "random"),
    ("long", None, "random", "heuristic"),
    ("long_dave", "dave", "heuristic", "heuristic"),
    ("backgammon", "cube", "heuristic", "pubeval"),
])
def test_env_plays_the_native_runners_games(variant, stakes, learner, opponent):
    """COM-6/7, BG-6, BG-TT, LN-7, LN-8, CUBE-1: for each seed and seat the episode ends with
    the native runner's winner, level, points and plies."""
    for seat in (0, 1):
        env = NardyEnv(variant, opponent=opponent, seat=seat, stakes=stakes, learner_cube=learner)
        agent = make_agent(learner, env.variant)
        for seed in range(4):
            total, steps, info = _play(env, agent, seed)
            pair = (agent, make_agent(opponent, env.variant))
            rec = play_games(variant, pair if seat == 0 else pair[::-1], 1, seed=seed, stakes=stakes)[0]
            assert (info["winner"], info["level"], info["points"]) == (rec.winner, rec.level, rec.points)
            assert env.games.plies[0] == rec.plies
            assert total == rec.points * (1 if rec.winner == seat else -1)
            assert steps == sum(t.player == seat for t in rec.turns)


def test_observation_is_the_learners_view_with_features():
    env = NardyEnv("backgammon", opponent="random", seat=1, encoder="expert")
    obs, info = env.reset(seed=5)
    own = obs["board"][:24][obs["board"][:24] > 0]
    assert obs["board"].dtype == np.int8 and own.sum() == 15          # the learner's 15 checkers
    assert 1 <= obs["dice"].min() and obs["dice"].max() <= 6
    assert np.allclose(obs["features"], get_encoder("expert", "backgammon")(obs["board"][None])[0])
    assert len(info["plays"]) == info["action_mask"].sum() == len(info["afterstates"])


def test_illegal_action_raises_or_loses():
    """By default an index with no afterstate raises; illegal="lose" ends the game lost at the
    variant's highest result."""
    strict = NardyEnv("backgammon", seat=0)
    strict.reset(seed=0)
    with pytest.raises(IllegalPlay, match="legal afterstates"):
        strict.step(MAX_ACTIONS - 1)
    env = NardyEnv("backgammon", seat=0, illegal="lose")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(MAX_ACTIONS - 1)
    assert terminated and reward == -3.0 and info["illegal_action"]
    with pytest.raises(NardyError, match="game is over"):
        env.step(0)
    with pytest.raises(NardyError, match="seat"):
        NardyEnv("backgammon", seat=2)
    with pytest.raises(NardyError, match="illegal"):
        NardyEnv("backgammon", illegal="ignore")


def test_features_encode_the_afterstates_in_one_call():
    env = NardyEnv("long", seat=0, encoder="long_expert")
    obs, info = env.reset(seed=3)
    name = next(n for n, e in ENCODERS.items() if e.family == "long")
    got = env.features(info["afterstates"], name)
    assert got.dtype == np.float32 and got.shape[0] == len(info["afterstates"])
    assert np.allclose(got, get_encoder(name, "long")(info["afterstates"]))
    plain = NardyEnv("backgammon", seat=0)
    plain.reset(seed=0)
    with pytest.raises(NardyError, match="encoder"):
        plain.features(np.zeros((1, 28), np.int8))


def test_encoders_stay_inside_the_feature_bound():
    from nardy_ai.bench.positions import random_positions
    for variant in ("backgammon", "long"):
        pos = random_positions(variant, 32, 150, seed=1)
        for name, enc in ENCODERS.items():
            if enc.family == ("long" if variant == "long" else "short"):
                assert np.abs(enc(pos)).max() <= FEATURE_BOUND, name

