"""Statistics of match results: intervals for win rates and points per game.

Points per game of duplicate-dice matches: games ``2k`` and ``2k + 1`` share their dice with
the seats swapped, so the standard error is taken over the pairs' means (independent, where
the two games of a pair are not).  All intervals are 95 %.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

#: The 97.5 % quantile of the standard normal distribution: 95 % intervals are ± Z95 s.e.
Z95 = 1.959963984540054


def wilson_interval(k: int, n: int) -> list[float]:
    """95 % Wilson score interval of a proportion ``k / n`` (stays inside [0, 1] even at 0 %
    or 100 %)."""
    z = Z95
    p, z2 = k / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return [max(0.0, centre - half), min(1.0, centre + half)]


def mean_ci95(x: np.ndarray) -> list[float] | None:
    """Mean ± :data:`Z95` standard errors of the values ``x`` (treated as independent); None for
    fewer than two values."""
    x = np.asarray(x, float)
    if len(x) < 2:
        return None
    mean, half = float(x.mean()), Z95 * float(x.std(ddof=1)) / math.sqrt(len(x))
    return [mean - half, mean + half]


def side_stats(points: np.ndarray, levels: np.ndarray, names: Sequence[str]) -> dict:
    """Results of one side.  ``points`` ``(n,)`` signed points per game from that side's view,
    duplicate pairs adjacent (games ``2k``, ``2k + 1``); ``levels`` the result level of each.
    Besides the mean (whose interval is the usual one), the duplicate pairs won and lost (a
    pair's two games summed) and the share of the decided ones won with its Wilson interval:
    a figure that heavy-tailed stakes (geometric dave with raise wars: stakes of 2^30 and
    more in a few games) cannot swamp."""
    points = np.asarray(points, float)
    levels = np.asarray(levels)
    n = len(points)
    won = points > 0
    ppg = float(points.mean())
    ci = mean_ci95(points.reshape(-1, 2).mean(axis=1))
    wins = int(won.sum())
    pair_sums = points.reshape(-1, 2).sum(axis=1)
    pairs_won, pairs_lost = int((pair_sums > 0).sum()), int((pair_sums < 0).sum())
    decided = pairs_won + pairs_lost

    def count(mask):
        return {name: int((mask & (levels == i + 1)).sum()) for i, name in enumerate(names)}

    return {
        "games": n,
        "points_per_game": ppg,
        "points_per_game_ci95": ci,
        "points_won": int(points[won].sum()),
        "points_lost": int(-points[~won].sum()),
        "wins": wins,
        "win_rate": wins / n,
        "win_rate_ci95": wilson_interval(wins, n),
        "levels_won": count(won),
        "levels_lost": count(~won),
        "pairs_won": pairs_won,
        "pairs_lost": pairs_lost,
        "decided_pairs_won_share": pairs_won / decided if decided else None,
        "decided_pairs_won_ci95": wilson_interval(pairs_won, decided) if decided else None,
        "win_rates_by_level": {names[i]: float((won & (levels > i)).mean()) for i in range(1, len(names))},
        "loss_rates_by_level": {names[i]: float((~won & (levels > i)).mean()) for i in range(1, len(names))},
    }
