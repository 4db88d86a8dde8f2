"""Net sets (nardy_ai/netset.py): routing afterstates to the member of their class, the
bear-off database member, the fallback, checkpoints (new and today's), warm starts from a
single net, and TD training of a net set (training/td.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from nardy_ai.agents import make_agent
from nardy_ai.agents.base import segment_argmax
from nardy_ai.bench.positions import random_positions
from nardy_ai.board import flip
from nardy_ai.classes import CLASSES_VERSION, class_names, position_classes
from nardy_ai.encoding import ENCODERS, extends, get_encoder
from nardy_ai.model import CheckpointError, NeuralEvaluator, cpu_rows, equity, n_outputs, save_checkpoint
from nardy_ai.movegen import generate
from nardy_ai.bearoff import BearoffEvaluator
from nardy_ai.evaluator import evaluator_from_state, load_evaluator
from nardy_ai.netset import FALLBACK, NetSet, NetSetError, as_netset
from training.config import ConfigError, config_from_dict
from training.td import Trainer
from td_helpers import trained_weights

SHIPPED = "checkpoints/backgammon/td80_anneal/checkpoint.pt"


def constant_net(variant, level: float, encoder=None, hidden=(4,)) -> NeuralEvaluator:
    """A net whose every output is ``level`` whatever the input (zero weights, bias logit)."""
    ev = NeuralEvaluator.create(variant, encoder, hidden, device="cpu")
    with torch.no_grad():
        for p in ev.net.parameters():
            p.zero_()
        ev.net.net[-1].bias.fill_(float(np.log(level / (1 - level))))
    return ev


def afterstates(variant, n_games=16, plies=300, seed=1) -> np.ndarray:
    """Afterstates met in random play (positions flipped to the side that just moved)."""
    return flip(random_positions(variant, n_games=n_games, plies=plies, seed=seed), variant)


def count_calls(member) -> list:
    """Record the batches ``member`` is asked to value (its ``probabilities`` calls)."""
    calls, inner = [], member.probabilities

    def probabilities(boards):
        calls.append(np.array(boards))
        return inner(boards)
    member.probabilities = probabilities
    return calls


@pytest.mark.parametrize("variant", ["backgammon", "long"])
def test_each_afterstate_is_valued_by_the_member_of_its_class(variant):
    names = class_names(variant)
    boards = afterstates(variant)
    cls = position_classes(boards, variant)
    assert set(cls.tolist()) == set(range(len(names)))        # every class is met
    levels = {"contact": 0.2, "race": 0.6} if variant == "backgammon" else {"contact": 0.2}
    members = {c: constant_net(variant, x) for c, x in levels.items()}
    db_value = 0.9
    members["bearoff"] = BearoffEvaluator(variant, lambda b, v: np.full((len(b), n_outputs(v)), db_value))
    fallback = constant_net(variant, 0.4)
    ns = NetSet(variant, members, fallback)
    calls = {c: count_calls(m) for c, m in members.items()}
    calls[FALLBACK] = count_calls(fallback)
    out = ns.probabilities(boards)
    assert out.shape == (len(boards), n_outputs(variant)) and out.dtype == np.float32
    for i, name in enumerate(names):
        want = {"bearoff": db_value}.get(name, levels.get(name, 0.4))    # others: the fallback
        assert np.allclose(out[cls == i], want, atol=1e-6), name
    # One call per member, over exactly the rows of its classes.
    for label, batches in calls.items():
        assert len(batches) == 1, label
        got = position_classes(batches[0], variant)
        own = [names.index(label)] if label != FALLBACK else [i for i, c in enumerate(names) if c not in members]
        assert np.isin(got, own).all() and len(got) == np.isin(cls, own).sum()
    assert np.allclose(ns.equity(boards), equity(out, variant))


def test_bearoff_member_is_the_exact_database():
    from nardy_ai.bearoff import bearoff_outcomes
    v = "backgammon"
    boards = afterstates(v, n_games=32, plies=300)
    bear = position_classes(boards, v) == class_names(v).index("bearoff")
    live = bear & (boards[:, 26] < 15)
    assert live.sum() >= 10
    ns = NetSet(v, {"bearoff": BearoffEvaluator(v)}, constant_net(v, 0.5))
    out = ns.probabilities(boards)
    assert np.allclose(out[live], bearoff_outcomes(boards[live], v), atol=1e-7)
    # The mover has just borne off its last checker: a win, a gammon when the loser has none off (BG-6).
    done = np.zeros((2, 28), np.int8)
    done[:, 26] = 15
    done[0, 18], done[0, 27] = -15, 0
    done[1, 20], done[1, 27] = -5, 10
    assert ns.probabilities(done).tolist() == [[1, 1, 0, 0, 0], [1, 0, 0, 0, 0]]


def test_a_single_net_as_a_set_values_and_plays_exactly_as_the_net():
    ev = load_evaluator(SHIPPED, "backgammon", device="cpu")
    assert isinstance(ev, NeuralEvaluator)
    ns = as_netset(ev)
    boards = afterstates("backgammon", n_games=8, plies=100)
    assert np.array_equal(ns.probabilities(boards), ev.probabilities(boards))


def test_the_shipped_checkpoint_loads_and_plays_as_its_weights_say(tmp_path):
    """Today's single-net checkpoint through the new loading path: values bit-for-bit those
    of its stored weights applied by hand, and the same plays at 0 and 1 ply as a net set
    holding it as the fallback."""
    raw = torch.load(SHIPPED, map_location="cpu", weights_only=True)["evaluator"]
    assert raw.get("kind") is None and raw["encoder"] == "tdgammon"
    w = raw["weights"]
    v = "backgammon"
    positions = random_positions(v, n_games=8, plies=80, seed=4)
    dice = np.random.default_rng(4).integers(1, 7, (len(positions), 2))
    after = generate(positions, dice, v)
    x = torch.from_numpy(get_encoder("tdgammon", v)(after.boards))
    # By hand in the evaluator's blocks of model.cpu_rows rows: with several torch threads a
    # matrix product's rounding depends on the number of rows it is split over.
    blocks = []
    with torch.no_grad():
        for xb in torch.split(x, cpu_rows(raw["hidden"])):
            h = torch.sigmoid(torch.nn.functional.linear(xb, w["net.0.weight"], w["net.0.bias"]))
            blocks.append(torch.sigmoid(torch.nn.functional.linear(h, w["net.2.weight"], w["net.2.bias"])))
    by_hand = torch.cat(blocks).numpy()
    ev = load_evaluator(SHIPPED, v, device="cpu")
    assert np.array_equal(ev.probabilities(after.boards), by_hand)
    agent = make_agent(f"td:{SHIPPED}", v)
    assert np.array_equal(agent.choose(after, v, None), segment_argmax(equity(by_hand, v), after.offsets))
    wrapped = tmp_path / "wrapped.pt"
    save_checkpoint(wrapped, {"kind": "model", "evaluator": NetSet(v, {}, ev).state()})
    as_set = load_evaluator(wrapped, v, device="cpu")
    assert isinstance(as_set, NetSet) and not as_set.members
    assert np.array_equal(as_set.probabilities(after.boards), by_hand)
    few = generate(positions[:6], dice[:6], v)
    assert np.array_equal(make_agent(f"td:{wrapped}@1ply", v).choose(few, v, None),
                          make_agent(f"td:{SHIPPED}@1ply", v).choose(few, v, None))


def mixed_set(variant="backgammon", seed=3) -> NetSet:
    return NetSet.create(variant, {"contact": {"encoder": "extended", "hidden": (12,)},
                                   "race": {"hidden": (6, 5), "activation": "relu"},
                                   "bearoff": "database"},
                         fallback={"hidden": (8,)}, seed=seed, device="cpu")


def test_checkpoint_round_trip(tmp_path):
    ns = mixed_set()
    path = tmp_path / "set.pt"
    save_checkpoint(path, {"kind": "model", "evaluator": ns.state()})
    back = load_evaluator(path, "backgammon", device="cpu")
    assert isinstance(back, NetSet)
    assert list(back.members) == ["contact", "race", "bearoff"] and back.fallback is not None
    assert back.members["contact"].encoder.name == "extended" and back.members["race"].hidden == (6, 5)
    boards = afterstates("backgammon", n_games=16, plies=300, seed=2)
    assert np.array_equal(back.probabilities(boards), ns.probabilities(boards))
    state = ns.state()
    assert state["kind"] == "netset" and state["classes_version"] == CLASSES_VERSION
    assert state["classes"] == list(class_names("backgammon"))
    assert set(back.net.state_dict()) == set(ns.net.state_dict())
    # A set where every class has a member needs (and keeps) no fallback.
    full = NetSet("long", {c: constant_net("long", 0.3) for c in class_names("long")})
    assert full.fallback is None and full.state()["fallback"] is None
    assert NetSet.from_state(full.state()).fallback is None


def _broken(mutate):
    state = mixed_set().state()
    mutate(state)
    return state


@pytest.mark.parametrize("mutate,message", [
    (lambda s: s["members"].__setitem__("midgame", s["members"]["race"]), r"members\.midgame: unknown class"),
    (lambda s: s["members"].__setitem__("race", NeuralEvaluator.create("long", hidden=(4,), device="cpu").state()),
     r"members\.race: .*'long'"),
    (lambda s: s["members"]["race"].__setitem__("encoder", "long"), r"members\.race: .*long nardy"),
    (lambda s: s["members"].__setitem__("race", {"kind": "database", "database": "bearoff"}),
     r"members\.race: the bear-off database values the bearoff class only"),
    (lambda s: s["members"]["bearoff"].__setitem__("database", "tablebase"), r"members\.bearoff\.database"),
    (lambda s: s.pop("members"), r"'members' is missing"),
    (lambda s: s.__setitem__("netset_format", 99), r"netset_format"),
    (lambda s: s.__setitem__("classes_version", "0"), r"classes_version"),
    (lambda s: s.__setitem__("classes", ["contact", "race"]), r"classes: "),
    (lambda s: s.__setitem__("fallback", None), r"fallback: required .*crashed"),
    (lambda s: s["fallback"]["weights"].pop("net.0.weight"), r"fallback: .*malformed"),
    (lambda s: s.__setitem__("kind", "forest"), r"kind: unknown evaluator kind"),
])
def test_bad_netset_states_are_refused_naming_the_field(mutate, message):
    with pytest.raises(CheckpointError, match=message):
        evaluator_from_state(_broken(mutate), "backgammon", "cpu")


def test_a_netset_of_another_variant_is_refused(tmp_path):
    path = tmp_path / "set.pt"
    save_checkpoint(path, {"kind": "model", "evaluator": mixed_set().state()})
    with pytest.raises(CheckpointError, match="variant: .*not 'long'"):
        load_evaluator(path, "long")
    with pytest.raises(NetSetError, match="members.crashed: unknown class"):
        NetSet("long", {"crashed": constant_net("long", 0.5)}, constant_net("long", 0.5))
    with pytest.raises(NetSetError, match="members.race: a member for long"):
        NetSet("backgammon", {"race": constant_net("long", 0.5)}, constant_net("backgammon", 0.5))


@pytest.mark.parametrize("name", [n for n, e in ENCODERS.items() if e.extends])
def test_declared_extensions_hold(name):
    """An encoder that declares ``extends`` starts with exactly its base's inputs."""
    enc = ENCODERS[name]
    base = ENCODERS[enc.extends]
    variant = "long" if enc.family == "long" else "backgammon"
    boards = afterstates(variant, n_games=8, plies=150)
    assert np.array_equal(enc(boards)[:, :base.n_features], base(boards))
    assert extends(enc, base) and extends(name, name) and not extends(base, enc)


# --- training a net set ------------------------------------------------------------------------

SOURCES = {"backgammon": SHIPPED, "long": "checkpoints/long/td80/checkpoint.pt"}


def netset_config(variant="backgammon", **over):
    """A net set warm-started from the variant's shipped 80-unit net (a fresh net's games
    can take thousands of plies, a trained one's about 60): backgammon contact on the
    ``extended`` inputs, race on its own net, bear-off on the database, crashed on the
    fallback; long race on its own net, bear-off on the database, contact on the fallback."""
    classes = ({"contact": {"encoder": "extended"}, "race": {}, "bearoff": {"kind": "database"}}
               if variant == "backgammon" else {"race": {}, "bearoff": {"kind": "database"}})
    cfg = {"variant": variant, "seed": 5,
           "model": {"hidden": [80], "classes": classes, "init_from": SOURCES[variant]},
           "td": {"learning_rate": 0.001, "batch_size": 64},
           "selfplay": {"parallel_games": 64, "total_games": 200},
           "run": {"checkpoint_every": 100, "eval_every": 200, "eval_games": 10, "log_every": 100}}
    for section, values in over.items():
        cfg.setdefault(section, {}).update(values)
    return config_from_dict(cfg)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    run = tmp_path_factory.mktemp("netset") / "run"
    t = Trainer(netset_config(), str(run), config_text="# net set\n")
    init = {k: v.clone() for k, v in t.ev.net.state_dict().items()}
    t.run(progress=False)
    return run, t, init


def test_td_training_of_a_net_set_fits_each_net_on_its_classes(trained):
    run, t, init = trained
    assert isinstance(t.ev, NetSet) and set(t.opts) == {"contact", "race", FALLBACK}
    after = t.ev.net.state_dict()
    for label in t.opts:                                     # every net learned something
        assert any(not torch.equal(init[k], after[k]) for k in init if k.startswith(label + "."))
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    train = [x for x in lines if x["kind"] == "train" and "loss" in x]
    assert train and all(f"loss_{label}" in train[-1] for label in t.opts)
    assert "loss_bearoff" not in train[-1]                   # the database is not fitted
    shares = [train[-1][f"share_{c}"] for c in class_names("backgammon")]
    assert sum(shares) == pytest.approx(1.0) and all(s > 0 for s in shares)
    assert any(x["kind"] == "eval" for x in lines)
    device = next(t.ev.net.parameters()).device       # the trainer's (CUDA where present)
    back = load_evaluator(run / "checkpoint.pt", "backgammon", device=device)
    assert isinstance(back, NetSet)
    boards = afterstates("backgammon", n_games=8, plies=150)
    assert np.array_equal(back.probabilities(boards), t.ev.probabilities(boards))


def test_a_net_set_run_resumes(trained, tmp_path):
    import shutil
    run, t, _ = trained
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    r = Trainer(netset_config(), str(copy), resume=True)
    assert r.games == t.games and isinstance(r.ev, NetSet)
    mine, theirs = r.ev.net.state_dict(), t.ev.net.state_dict()
    assert all(torch.equal(mine[k], theirs[k]) for k in theirs)
    for label, opt in t.opts.items():
        a, b = opt.state_dict()["state"], r.opts[label].state_dict()["state"]
        assert a.keys() == b.keys() and all(torch.equal(a[i]["exp_avg"], b[i]["exp_avg"]) for i in a)
    r.run(total_games=t.games + 64, progress=False)
    assert r.games >= t.games + 64
    changed = netset_config(model={"classes": {"race": {"hidden": [7]}}})
    with pytest.raises(Exception, match=r"config differs .*model\.classes"):
        Trainer(changed, str(copy), resume=True)


def test_net_set_runs_are_reproducible_from_config_and_seed(tmp_path):
    cfg = netset_config("long", selfplay={"parallel_games": 32})
    a, b = (trained_weights(cfg, tmp_path / name) for name in ("a", "b"))
    assert set(a) == set(b) and any(k.startswith("race.") for k in a)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_td_agents_bench_and_model_card_take_a_net_set_checkpoint(trained):
    from nardy_ai.bench.evaluators import bench_evaluators
    from nardy_ai.search import best_afterstates
    from training.model_card import write_card
    run, t, _ = trained
    ckpt = str(run / "checkpoint.pt")
    v = "backgammon"
    positions = random_positions(v, n_games=4, plies=60, seed=8)[[30, 90, 150, 210]]
    after = generate(positions, np.array([[3, 1], [6, 6], [5, 2], [4, 4]]), v)
    for plies in (0, 1, 2):
        agent = make_agent(f"td:{ckpt}@{plies}ply", v)
        assert isinstance(agent.evaluator, NetSet)
        chosen = agent.choose(after, v, None)
        assert np.array_equal(chosen, best_afterstates(after, t.ev, plies))
    row = bench_evaluators(v, [f"td:{ckpt}"])["agents"][0]
    assert 0 <= row["agreement"] <= 1 and row["loss_mp"] >= 0
    text = write_card(str(run), games=10)
    assert "net set" in text and "bearoff: the one-sided bear-off database" in text and "| random |" in text


def test_warm_start_of_a_net_set_from_a_single_net_is_exact(tmp_path):
    warm = Trainer(netset_config(), str(tmp_path / "warm"), log=False)
    contact = warm.ev.members["contact"]
    assert contact.encoder.name == "extended"
    extra = contact.net.net[0].weight[:, 198:]
    assert extra.shape[1] == 12 and not extra.any()          # the new inputs start at zero weight
    source = load_evaluator(SHIPPED, "backgammon", device="cpu")
    boards = afterstates("backgammon", n_games=16, plies=300, seed=5)
    net_rows = position_classes(boards, "backgammon") != class_names("backgammon").index("bearoff")
    assert np.allclose(warm.ev.probabilities(boards[net_rows]), source.probabilities(boards[net_rows]),
                       rtol=0, atol=1e-6)
    with pytest.raises(ConfigError, match=r"model\.classes\.race\.hidden: .*\[80\], this net \[40\]"):
        Trainer(netset_config(model={"classes": {"race": {"hidden": [40]}}}), str(tmp_path / "x"), log=False)
    ext = tmp_path / "ext.pt"
    save_checkpoint(ext, {"kind": "model", "evaluator": NeuralEvaluator.create(
        "backgammon", "extended", (80,), device="cpu").state()})
    with pytest.raises(ConfigError, match=r"model\.classes\.race\.encoder: .*'extended'.*'tdgammon'"):
        Trainer(netset_config(model={"init_from": str(ext), "classes": {"race": {}}}),
                str(tmp_path / "y"), log=False)
    with pytest.raises(ConfigError, match=r"model\.classes\.contact\.activation: .*'sigmoid', this net 'relu'"):
        Trainer(netset_config(model={"activation": "relu"}), str(tmp_path / "z"), log=False)


@pytest.mark.parametrize("variant,classes,message", [
    ("long", {"crashed": {}}, r"model\.classes\.crashed: not a position class of long"),
    ("backgammon", {"race": {"kind": "database"}}, r"model\.classes\.race\.kind: .*bearoff class only"),
    ("backgammon", {"bearoff": {"kind": "database", "encoder": "tdgammon"}}, r"model\.classes\.bearoff\.encoder"),
    ("backgammon", {"race": {"kind": "forest"}}, r"model\.classes\.race\.kind: must be net or database"),
    ("backgammon", {"race": {"hiden": [3]}}, r"model\.classes\.race\.hiden: unknown key"),
    ("backgammon", {"race": 3}, r"model\.classes: must be"),
])
def test_config_errors_name_the_class_key(variant, classes, message):
    with pytest.raises(ConfigError, match=message):
        config_from_dict({"variant": variant, "model": {"classes": classes}})


def test_a_member_encoder_of_the_other_family_is_a_config_error(tmp_path):
    cfg = config_from_dict({"variant": "backgammon", "model": {"classes": {"race": {"encoder": "long"}}}})
    with pytest.raises(ConfigError, match=r"model\.classes\.race\.encoder: .*long nardy"):
        Trainer(cfg, str(tmp_path / "r"), log=False)


def test_a_sibling_variants_net_is_adopted_to_start_training_with_the_same_outputs():
    """Issue #15: a backgammon net starts a short_caucasian run (same family, five outputs),
    valuing positions exactly as before; a short_trictrac one (levels 1/2/4/8: seven outputs)
    with its output rows copied by the level map (x2 and x4 from the gammon, x8 from the
    backgammon); long (another family) refuses it."""
    from nardy_ai.netset import adopt_state
    net = NeuralEvaluator.create("backgammon", encoder="expert", hidden=(6,), seed=5, device="cpu")
    sset = mixed_set()
    boards = random_positions("backgammon", 64, seed=2)
    for ev in (net, sset):
        adopted = evaluator_from_state(adopt_state(ev.state(), "short_caucasian"), "short_caucasian")
        assert adopted.variant.id == "short_caucasian"
        assert np.allclose(adopted.probabilities(boards), ev.probabilities(boards))
        tt = evaluator_from_state(adopt_state(ev.state(), "short_trictrac"), "short_trictrac")
        mine, theirs = tt.probabilities(boards), ev.probabilities(boards)
        assert tt.variant.id == "short_trictrac" and mine.shape[1] == 7
        netted = position_classes(boards, "backgammon") != class_names("backgammon").index("bearoff")
        assert netted.sum() > 100                     # the database values by each variant's own levels
        assert np.allclose(mine[netted], theirs[netted][:, [0, 1, 1, 2, 3, 3, 4]])
        with pytest.raises(CheckpointError, match="cannot start"):
            adopt_state(ev.state(), "long")
