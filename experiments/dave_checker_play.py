"""Does a long-nardy net need another checker play under dave (issue #15, LN-8)?

    python experiments/dave_checker_play.py [--games 4000] [--net checkpoints/long/search_targets/current.pt]

Under dave there is no mars: the winner takes the stake, so a play should be chosen for its
win chance.  A long net is trained for long nardy, where a mars counts double, and ranks plays
by that equity.  Here the same net plays itself in duplicate-dice pairs, one side ranking plays
by the win chance (``NeuralAgent`` under dave, ``stakes_aware``), the other by the net's own
mars-weighted equity (``stakes_aware=False``); with stakes at 1 and no raises, only wins count,
so the win rate of the first side is the measure (and its points under long's own scoring,
mars counted, show what it gives up).  Writes ``experiments/results/dave_checker_play.json``.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from nardy_ai.agents.neural import NeuralAgent  # noqa: E402
from nardy_ai.cube import stakes_variant  # noqa: E402
from nardy_ai.game import play_games  # noqa: E402
from nardy_ai.evaluator import load_evaluator  # noqa: E402
from nardy_ai.stats import side_stats, wilson_interval  # noqa: E402


class NoRaise(NeuralAgent):
    """Never offers a raise, always accepts: dave stakes stay at 1 (LN-8 scoring, no mars)."""

    def double(self, boards, cubes, variant):
        return np.zeros(len(boards), bool), None

    def take(self, boards, cubes, variant):
        return np.ones(len(boards), bool), None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--net", default="checkpoints/long/search_targets/current.pt")
    ap.add_argument("--games", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=11)
    a = ap.parse_args(argv)
    v = stakes_variant("long", "dave-geometric")
    ev = load_evaluator(a.net, "long", device="cpu")
    win = NoRaise(ev, name="win-chance play")
    mars = NoRaise(ev, name="mars-weighted play", stakes_aware=False)
    points, levels, wins = [], [], 0
    batch = 200
    for k in range(0, a.games // 2, batch):
        n = min(batch, a.games // 2 - k)
        s = a.seed * 1_000_003 + k
        white = play_games(v, (win, mars), n, seed=s, record=True, stakes="dave-geometric")
        black = play_games(v, (mars, win), n, seed=s, record=True, stakes="dave-geometric")
        for r1, r2 in zip(white, black):
            for r, me in ((r1, 0), (r2, 1)):
                points.append(r.points if r.winner == me else -r.points)
                levels.append(r.level)
                wins += r.winner == me
    st = side_stats(np.array(points, float), np.array(levels), ("oin", "mars"))
    out = {"net": a.net, "games": len(points), "seed": a.seed,
           "win_rate_of_win_chance_play": st["win_rate"], "win_rate_ci95": st["win_rate_ci95"],
           "dave_points_per_game": st["points_per_game"], "dave_points_per_game_ci95": st["points_per_game_ci95"],
           "decided_pairs_won_share": st["decided_pairs_won_share"],
           "decided_pairs_won_ci95": st["decided_pairs_won_ci95"],
           "mars_won": st["levels_won"].get("mars"), "mars_lost": st["levels_lost"].get("mars"),
           "method": "the same net both sides, duplicate-dice pairs, dave stakes at 1 (no raises): "
                     "win-chance ranking vs the net's mars-weighted ranking"}
    path = os.path.join(ROOT, "experiments", "results", "dave_checker_play.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
