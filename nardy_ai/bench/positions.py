"""Positions met in play, for the benchmarks and the tests: random play
(:func:`random_positions`, :func:`random_afterstates`) and an agent's self-play
(:func:`self_play_decisions`, :func:`strong_play_positions`), each a run of the game driver
(:func:`nardy_ai.driver.run`) with a hook that keeps positions.

The samplers' dice are ordinary rolls on every turn (``SeededDice(rng, opening=None)``, the
opening-roll rule not applied): the shipped evaluator position sets and the pinned digests of
``tests/data/pinned_loops.json`` were drawn that way.
"""

from __future__ import annotations

import numpy as np

from .. import core, driver
from ..errors import NardyError
from ..movegen import generate
from ..variants import Variant, get_variant


def random_positions(variant, n_games: int = 256, plies: int = 200, seed: int = 0) -> np.ndarray:
    """Positions (mover on roll) met in random play: ``n_games`` games in lockstep for
    ``plies`` plies each (finished games restart from the start position)."""
    rng = np.random.default_rng(seed)
    seen = []
    driver.run(core.fresh(variant, n_games), driver.SeededDice(rng, opening=None), _RandomChoice(), rng,
               plies=plies, restart=True, on_ply=lambda rec, _: seen.append(rec.boards))
    return np.concatenate(seen)


class _RandomChoice:
    """The samplers' random play (:func:`nardy_ai.core.random_choice`) as a driver policy."""
    name = "random"

    def choose(self, after, variant, rng) -> np.ndarray:
        return core.random_choice(after, rng)


def self_play_decisions(agent, v: Variant, rng: np.random.Generator, games: int, every: int,
                        max_plies: int) -> tuple[np.ndarray, np.ndarray]:
    """Every ``every``-th position with its roll (from the second ply on) of ``games`` games of
    ``agent``'s self-play in lockstep for ``max_plies`` plies (finished games restart), keeping
    only real decisions (at least 2 legal plays)."""
    pool_b, pool_d = [], []

    def keep(rec, _) -> None:
        if rec.ply % every == 1:
            real = rec.after.counts() >= 2
            pool_b.append(rec.boards[real])
            pool_d.append(rec.dice[real])

    driver.run(core.fresh(v, games), driver.SeededDice(rng, opening=None), agent, rng, plies=max_plies,
               restart=True, on_ply=keep)
    return np.concatenate(pool_b), np.concatenate(pool_d)


def distinct_decisions(boards: np.ndarray, dice: np.ndarray) -> np.ndarray:
    """Ascending indices of the first of every distinct decision: the same position with the
    same roll (the order of the two dice ignored) counts once."""
    key = np.concatenate([np.asarray(boards, np.int8), np.sort(dice, axis=1).astype(np.int8)], axis=1)
    _, first = np.unique(key, axis=0, return_index=True)
    return np.sort(first)


def strong_play_positions(agent, variant, n: int | None = None, seed: int = 0, games: int = 64,
                          every: int = 3, max_plies: int = 240,
                          quotas: dict[str, int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``n`` positions with dice ``((n, 28), (n, 2))`` from ``agent``'s self-play: ``games``
    games in lockstep (finished games restart), every ``every``-th ply from the second on,
    keeping only positions with at least 2 legal plays; drawn without replacement by ``seed``.

    With ``quotas`` (``{class name: count}``, names of :func:`nardy_ai.classes.class_names`;
    ``n`` then is their sum or ``None``), repeated decisions are removed first
    (:func:`distinct_decisions`) and each class of the position on roll
    (:func:`nardy_ai.classes.position_classes`) gets exactly its count, drawn without
    replacement within the class; the result keeps the order of play.  :class:`NardyError`
    when a class is unknown or self-play met too few distinct decisions of it (play more
    ``games`` or ``max_plies``)."""
    v = get_variant(variant)
    rng = np.random.default_rng(seed)
    pool_b, pool_d = self_play_decisions(agent, v, rng, games, every, max_plies)
    if quotas is None:
        idx = np.sort(rng.choice(len(pool_b), n, replace=False))
        return pool_b[idx], pool_d[idx]
    from ..classes import class_names, position_classes
    names = class_names(v)
    if set(quotas) - set(names):
        raise NardyError(f"quotas name unknown classes {sorted(set(quotas) - set(names))}; "
                         f"{v.id} has {', '.join(names)}")
    if n is not None and n != sum(quotas.values()):
        raise NardyError(f"n = {n} but the quotas add up to {sum(quotas.values())}")
    distinct = distinct_decisions(pool_b, pool_d)
    cls = position_classes(pool_b[distinct], v)
    picks = []
    for name, count in quotas.items():
        rows = distinct[cls == names.index(name)]
        if len(rows) < count:
            raise NardyError(f"self-play met {len(rows)} distinct {name} decisions, fewer than "
                             f"its quota {count}: play more games or plies")
        picks.append(rng.choice(rows, count, replace=False))
    idx = np.sort(np.concatenate(picks))
    return pool_b[idx], pool_d[idx]



def random_afterstates(variant, n: int, seed: int = 0) -> np.ndarray:
    """``n`` afterstates met in random play (:func:`random_positions`, each position with a
    random roll and all its afterstates), shuffled; repeated when random play gives fewer."""
    v = get_variant(variant)
    rng = np.random.default_rng(seed)
    pool = random_positions(v, n_games=64, plies=64, seed=seed)
    after = generate(pool, rng.integers(1, 7, (len(pool), 2)), v).boards
    return after[rng.permutation(np.resize(np.arange(len(after)), n))]

