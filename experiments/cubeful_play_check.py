"""What cubeful checker play changes, decision by decision (money play with the cube).

Plays ``--games`` games of an agent against itself with the cube (CUBE-1, its cube decisions at
its own depth; checker play cubeful with ``+cubefulplay``, the default agent) and keeps every
checker-play decision with the stakes its mover saw.  For each, the play ranked first by cubeless
equity and the play ranked first by 0-ply cubeful equity
(:func:`nardy_ai.cubeful.afterstate_values`) are compared; where they differ, both afterstates
are valued by the cubeful lookahead at ``--reference-plies`` (the opponent's replies and both
players' cube decisions inside, Janowski at the leaves), in units of the stake, and the gain is
the cubeful play's value less the cubeless play's.  Printed and written to ``--out`` (JSON):
decisions seen, how many differ, the mean gain per differing decision with its 95% interval, and
the implied gain per game (sum of gains over games, cube value counted)::

    python experiments/cubeful_play_check.py --agent bg-champion+cubefulplay --games 400 --seed 1 \\
        --reference-plies 1 \\
        --out experiments/results/backgammon_cubeful_play_check.json
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from nardy_ai import core, driver
from nardy_ai.agents import make_agent
from nardy_ai.cube import Stakes
from nardy_ai.cubeful import afterstate_values
from nardy_ai.files import write_atomic
from nardy_ai.machine import machine_description
from nardy_ai.movegen import generate, segment_argmax
from nardy_ai.search import afterstate_values as cubeless_values, cubeless
from nardy_ai.variants import get_variant, with_options


def collect(agent, v, games: int, seed: int):
    """Every checker-play decision of ``games`` self-play games with the cube: positions
    (mover's view), rolls, the stakes seen by the mover, and the game of each."""
    rng = np.random.default_rng(seed)
    g, _ = core.start(v, games, rng, "cube")
    boards, dice, stakes, game = [], [], [], []

    def on_ply(rec, _games):
        boards.append(rec.boards.copy())
        dice.append(rec.dice.copy())
        stakes.append(_games.stakes.views(rec.idx, rec.turn))
        game.append(rec.idx.copy())

    # the stakes read after the step are those the mover saw: a play does not change them,
    # only the cube stage does, and it runs before the play
    driver.run(g, driver.SeededDice(rng), agent, rng.spawn(1)[0], max_plies=5000,
               cube=driver.CubeStage((agent, agent)), on_ply=on_ply)
    return (np.concatenate(boards), np.concatenate(dice), Stakes.concat(stakes), np.concatenate(game))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agent", default="bg-champion+cubefulplay")
    ap.add_argument("--variant", default="backgammon")
    ap.add_argument("--games", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reference-plies", type=int, default=1)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    v = get_variant(args.variant)
    vc = with_options(v.id, stakes="cube")
    agent = make_agent(args.agent, vc)
    ev = agent.evaluator
    t0 = time.time()
    boards, dice, stakes, game = collect(agent, vc, args.games, args.seed)
    t_play = time.time() - t0
    after = generate(boards, dice, vc)
    per_row = stakes.select(after.parent)
    eq_cl = cubeless(ev)(cubeless_values(after.boards, ev, 0))
    eq_cf = afterstate_values(after.boards, per_row, ev, 0, vc)
    pick_cl = segment_argmax(eq_cl, after.offsets)
    pick_cf = segment_argmax(eq_cf, after.offsets)
    differ = np.flatnonzero(pick_cl != pick_cf)
    t1 = time.time()
    ref = {}
    for name, picks in (("cubeless", pick_cl), ("cubeful", pick_cf)):
        rows = picks[differ]
        ref[name] = afterstate_values(after.boards[rows], per_row.select(rows), ev, args.reference_plies, vc)
    t_ref = time.time() - t1
    gain = ref["cubeful"] - ref["cubeless"]
    value = stakes.value[differ].astype(float)
    per_game = np.bincount(game[differ], weights=gain * value, minlength=args.games)
    n = len(differ)
    out = {
        "agent": args.agent, "variant": v.id, "games": args.games, "seed": args.seed,
        "decisions": int(len(boards)), "differing": int(n),
        "reference": f"cubeful lookahead at {args.reference_plies} plies",
        "mean_gain_per_differing_decision": float(gain.mean()) if n else 0.0,
        "ci95": [float(gain.mean() - 1.96 * gain.std(ddof=1) / np.sqrt(n)),
                 float(gain.mean() + 1.96 * gain.std(ddof=1) / np.sqrt(n))] if n > 1 else None,
        "cubeful_better": int((gain > 1e-9).sum()), "cubeless_better": int((gain < -1e-9).sum()),
        "gain_per_game": float(per_game.mean()),
        "gain_per_game_ci95": [float(per_game.mean() - 1.96 * per_game.std(ddof=1) / np.sqrt(args.games)),
                               float(per_game.mean() + 1.96 * per_game.std(ddof=1) / np.sqrt(args.games))],
        "seconds": {"play": round(t_play, 1), "reference": round(t_ref, 1)},
        "machine": machine_description(),
    }
    print(json.dumps(out, indent=1))
    if args.out:
        write_atomic(args.out, json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
