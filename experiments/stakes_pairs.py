"""Robust figures of a stakes match (issue #12): from a tournament's ``games.jsonl``, the duplicate
pairs (games ``2k`` and ``2k + 1`` of a chunk share their dice, seats swapped) of one agent.

    python experiments/stakes_pairs.py tournaments/X/games.jsonl 'td:PATH' [--cap 64] [--json OUT]

With geometric dave (CUBE-D sets no limit) two players who misjudge a position in opposite
directions raise and accept every turn, and a few games end at stakes of 2^30 and more: the
mean points per game is then ruled by a handful of games and its interval is useless.  Beside
the plain mean this prints the share of decided pairs the agent won (Wilson 95% interval), and
the mean with each game's points clipped to +-cap stakes (an analysis of the same games, not
another rule of play).
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import sys

import numpy as np


from nardy_ai.stats import Z95 as Z, wilson_interval as wilson  # noqa: E402


def pair_figures(path: str, agent: str, cap: int = 64) -> dict:
    pairs, capped = collections.defaultdict(float), collections.defaultdict(float)
    games = wins = 0
    stakes = []
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        if agent not in (r["white"], r["black"]):
            continue
        me = 0 if r["white"] == agent else 1
        pts = r["points"] * (1 if r["winner"] == me else -1)
        key = (tuple(r["pairing"]), r["seed"], r["index"] // 2)
        pairs[key] += pts
        capped[key] += max(-cap, min(cap, pts))
        games += 1
        wins += r["winner"] == me
        stakes.append(r.get("stake", 1))
    if not games:
        raise SystemExit(f"no games of {agent} in {path}")
    p, c = np.array(list(pairs.values())), np.array(list(capped.values()))
    won, lost = int((p > 0).sum()), int((p < 0).sum())
    half = lambda x: Z * x.std(ddof=1) / math.sqrt(len(x)) / 2          # pair sums -> per game
    stakes = np.array(stakes, float)
    return {"games": games, "pairs": len(p), "game_win_rate": wins / games,
            "points_per_game": float(p.sum() / games), "points_per_game_ci95_half": float(half(p)),
            "pairs_won": won, "pairs_lost": lost, "pairs_tied": int((p == 0).sum()),
            "decided_pairs_won_share": won / max(won + lost, 1),
            "decided_pairs_won_ci95": list(wilson(won, won + lost)) if won + lost else None,
            "cap": cap, "capped_points_per_game": float(c.sum() / games),
            "capped_points_per_game_ci95_half": float(half(c)),
            "stake_median": float(np.median(stakes)), "stake_max": float(stakes.max()),
            "games_with_stake_over_cap": int((stakes > cap).sum())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("games")
    ap.add_argument("agent")
    ap.add_argument("--cap", type=int, default=64)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    r = pair_figures(a.games, a.agent, a.cap)
    print(f"{r['games']} games (win rate {r['game_win_rate']:.3f}), {r['pairs']} pairs: won {r['pairs_won']}, "
          f"lost {r['pairs_lost']}, tied {r['pairs_tied']}; decided pairs won {r['decided_pairs_won_share']:.3f} "
          f"[{r['decided_pairs_won_ci95'][0]:.3f}, {r['decided_pairs_won_ci95'][1]:.3f}]")
    print(f"points per game {r['points_per_game']:+.3f} ± {r['points_per_game_ci95_half']:.3f}; clipped to "
          f"±{a.cap} stakes {r['capped_points_per_game']:+.3f} ± {r['capped_points_per_game_ci95_half']:.3f}; "
          f"stake median {r['stake_median']:.0f}, max {r['stake_max']:.3g}, {r['games_with_stake_over_cap']} games over {a.cap}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
