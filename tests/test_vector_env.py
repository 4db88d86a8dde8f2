"""The batched vector environment (nardy_ai/vector_env.py): made by gymnasium.make_vec for every
id, it plays the single environment's games for the same seed, autoresets on the next step,
reproduces its games from a seed, refuses illegal actions by default, and offers masks,
afterstates, their notation and the project's encoders."""

from __future__ import annotations

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

import nardy_ai  # noqa: E402,F401  (registers the environments)
from nardy_ai.encoding import get_encoder  # noqa: E402
from nardy_ai.env import ENV_IDS, MAX_ACTIONS, NardyEnv  # noqa: E402
from nardy_ai.errors import IllegalPlay, NardyError  # noqa: E402
from nardy_ai.vector_env import NardyVectorEnv  # noqa: E402


def _random_actions(info, rng):
    return (rng.random(len(info["n_legal"])) * np.maximum(info["n_legal"], 1)).astype(np.int64)


@pytest.mark.parametrize("name", sorted(ENV_IDS))
def test_make_vec_gives_the_native_vector_env_for_every_id(name):
    """Every variant: make_vec with the vector entry point returns the batched class, with
    batched spaces, and random legal play ends games with points at a known result level."""
    envs = gym.make_vec(f"nardy_ai/{name}", num_envs=8, vectorization_mode="vector_entry_point",
                        opponent="heuristic")
    assert isinstance(envs, NardyVectorEnv) and envs.num_envs == 8
    assert envs.variant.id == ENV_IDS[name][0]
    assert envs.action_space.shape == (8,) and envs.observation_space["board"].shape == (8, 28)
    obs, info = envs.reset(seed=1)
    assert obs in envs.observation_space
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(150):
        obs, rewards, term, trunc, info = envs.step(_random_actions(info, rng))
        assert obs["board"].dtype == np.int8 and rewards.shape == (8,)
        if term.any():
            assert (np.abs(rewards[term]) >= 1).all() and (rewards[~term] == 0).all()
            assert set(info["level"][term].tolist()) <= set(range(1, len(envs.variant.scoring) + 1))
            ended += int(term.sum())
    assert ended > 0


@pytest.mark.parametrize("variant,stakes,opponent,seat", [
    ("backgammon", None, "heuristic", 0), ("short_trictrac", None, "random", 1),
    ("long", None, "random", 1), ("backgammon", "cube", "pubeval", 1), ("long_dave", "dave", "heuristic", 0)])
def test_one_game_is_the_single_envs_game(variant, stakes, opponent, seat):
    """num_envs=1 with a fixed seat: the first episode is NardyEnv's for the same seed, step by
    step (observations, masks, afterstates, rewards, result)."""
    for seed in range(2):
        single = NardyEnv(variant, opponent=opponent, seat=seat, stakes=stakes)
        vec = NardyVectorEnv(1, variant, opponent=opponent, seat=seat, stakes=stakes)
        o1, i1 = single.reset(seed=seed)
        o2, i2 = vec.reset(seed=seed)
        rng = np.random.default_rng(seed)
        while True:
            assert np.array_equal(o1["board"], o2["board"][0]) and np.array_equal(o1["dice"], o2["dice"][0])
            assert np.array_equal(i1["action_mask"], i2["action_mask"][0])
            assert np.array_equal(i1["afterstates"], i2["afterstates"])
            assert list(i1["plays"]) == vec.plays(0)
            a = int(rng.integers(i1["action_mask"].sum()))
            o1, r1, t1, tr1, i1 = single.step(a)
            o2, r2, t2, tr2, i2 = vec.step([a])
            assert (r1, t1, tr1) == (r2[0], t2[0], tr2[0])
            if t1 or tr1:
                assert np.array_equal(o1["board"], o2["board"][0])
                assert (i1["winner"], i1["level"], i1["points"]) == (i2["winner"][0], i2["level"][0], i2["points"][0])
                break


def test_next_step_autoreset_and_seeds():
    """Gymnasium's next-step autoreset: the step after a game ends ignores its action and
    starts a new game (reward 0, not ended); the same seed and actions give the same games."""
    def play(seed):
        envs = NardyVectorEnv(16, "backgammon", opponent="random")
        obs, info = envs.reset(seed=seed)
        rng = np.random.default_rng(5)
        out, just_ended = [], np.zeros(16, bool)
        for _ in range(120):
            actions = _random_actions(info, rng)
            actions[just_ended] = MAX_ACTIONS - 1          # ignored: those games are reset
            obs, rewards, term, trunc, info = envs.step(actions)
            if just_ended.any():
                assert not term[just_ended].any() and (rewards[just_ended] == 0).all()
                assert (info["ply"][just_ended] <= 1).all()
                assert (np.abs(obs["board"][just_ended][:, :24]).sum(1) == 30).all()
            just_ended = term | trunc
            out += [obs["board"], obs["dice"], rewards]
        assert metadata_mode(envs) == "NextStep"
        return out

    a, b, c = play(3), play(3), play(4)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def metadata_mode(envs) -> str:
    return envs.metadata["autoreset_mode"].value


def test_illegal_actions_raise_unless_told_to_lose():
    envs = NardyVectorEnv(4, "backgammon", seat=0)
    obs, info = envs.reset(seed=0)
    bad = np.zeros(4, np.int64)
    bad[2] = info["n_legal"][2]
    with pytest.raises(IllegalPlay, match="game 2"):
        envs.step(bad)
    with pytest.raises(NardyError, match="4 actions"):
        envs.step(np.zeros(3, np.int64))
    lenient = NardyVectorEnv(4, "backgammon", seat=0, illegal="lose")
    obs, info = lenient.reset(seed=0)
    obs, rewards, term, trunc, info = lenient.step(bad)
    assert term[2] and rewards[2] == -3.0 and info["illegal_action"].tolist() == [False, False, True, False]
    assert info["winner"][2] == 1


def test_masks_afterstates_notation_and_features_per_game():
    envs = NardyVectorEnv(6, "backgammon", opponent="heuristic", encoder="expert")
    obs, info = envs.reset(seed=2)
    off = info["afterstate_offsets"]
    assert np.array_equal(np.diff(off), info["n_legal"]) and off[-1] == len(info["afterstates"])
    assert np.array_equal(info["action_mask"].sum(1), info["n_legal"])
    enc = get_encoder("expert", "backgammon")
    assert np.allclose(obs["features"], enc(obs["board"]))
    assert np.allclose(envs.features(info["afterstates"]), enc(info["afterstates"]))
    for i in range(6):
        rows = info["afterstates"][off[i]:off[i + 1]]
        assert len(envs.plays(i)) == len(rows) == len(set(envs.plays(i)))
        own = np.where(rows[:, :24] > 0, rows[:, :24], 0).sum(1) + rows[:, 24] + rows[:, 26]
        assert (own == 15).all()                                  # the learner's 15, not flipped
    bare = NardyVectorEnv(2, "long", action_masks=False)
    obs, info = bare.reset(seed=0)
    assert "action_mask" not in info and "features" not in obs
    with pytest.raises(NardyError, match="num_envs"):
        NardyVectorEnv(0)


def test_bench_env_reports_single_and_vector_rows(capsys):
    """`nardy bench env`: the baseline row (the single environment as before its speed work,
    measured in the same run), the single environment and one row per vector size, with steps
    and games counted and ratios to the baseline (OpenSpiel's row only when it is installed);
    the baseline leaves the move generator's one-position path as it found it."""
    from nardy_ai import movegen
    from nardy_ai.bench.env import bench_env, format_env, open_spiel_available
    from nardy_ai.cli import main
    r = bench_env(["long"], sizes=(1, 4), seconds=0.9)
    assert movegen.ONE_POSITION_PATH
    envs = [(row["env"], row["games_in_lockstep"]) for row in r["rows"]]
    assert envs[:4] == [("single-before", 1), ("single", 1), ("vector", 1), ("vector", 4)]
    assert (("open_spiel", 1) in envs) == open_spiel_available() == r["open_spiel"]
    assert all(row["steps"] > 0 and row["steps_per_s"] > 0 for row in r["rows"])
    assert r["rows"][0]["vs_before"] == 1.0 and all(row["vs_before"] > 0 for row in r["rows"][:4])
    single = r["rows"][:2]                          # games/s: steps/s over the single rows' steps per game
    per_game = sum(x["steps"] for x in single) / max(1, sum(x["games"] for x in single))
    assert r["steps_per_game"] == {"long": per_game}
    assert all(abs(row["games_per_s"] * per_game - row["steps_per_s"]) < 1e-6 * row["steps_per_s"]
               for row in r["rows"][:4])
    assert "vector" in format_env(r) and "single-before" in format_env(r)
    assert main(["bench", "env", "--variant", "backgammon", "--num-envs", "2", "--seconds", "0.4",
                 "--opponent", "heuristic", "--json"]) == 0
    out = capsys.readouterr().out
    import json
    rows = json.loads(out)["rows"]
    assert [(x["env"], x["games_in_lockstep"]) for x in rows][:3] == [("single-before", 1), ("single", 1),
                                                                      ("vector", 2)]


def test_a_greedy_lookahead_learner():
    """The environments guide's learner: value every game's afterstates with an encoder and a
    linear value in one call, play each game's best (checked against a loop over games)."""
    import gymnasium
    envs = gymnasium.make_vec("nardy_ai/Backgammon-v0", num_envs=32, vectorization_mode="vector_entry_point",
                              opponent="random", encoder="expert")
    obs, info = envs.reset(seed=0)
    w = np.random.default_rng(0).normal(size=envs.single_observation_space["features"].shape[0])
    games = points = 0.0
    for _ in range(120):
        values = envs.features(info["afterstates"]) @ w        # every game's afterstates at once
        actions = envs.best_actions(values)
        off = info["afterstate_offsets"]
        loop = [int(np.argmax(values[a:b])) if b > a else 0 for a, b in zip(off[:-1], off[1:])]
        assert actions.tolist() == loop
        obs, rewards, terminated, truncated, info = envs.step(actions)
        games += terminated.sum()
        points += rewards.sum()
    assert games > 0 and abs(points) <= 3 * games
    with pytest.raises(NardyError, match="one value per afterstate"):
        envs.best_actions(np.zeros(3))


def test_environments_give_the_pinned_games():
    """The vector environment (several games with autoresets, seats drawn) and the single
    environment with drawn seats give, for fixed seeds and seeded random legal actions, the
    observations, masks, afterstates, plays, rewards and results they gave before their speed
    work (digests written by tests/make_pinned_envs.py)."""
    import json
    import os

    import make_pinned_envs as pins
    with open(os.path.join(os.path.dirname(__file__), "data", "pinned_envs.json"), encoding="utf-8") as f:
        pinned = json.load(f)
    got = pins.all_digests()
    assert set(got) == set(pinned)
    for key, value in got.items():
        assert value == pinned[key], key
