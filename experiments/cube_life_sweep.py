"""Check the cube life (Janowski's x) per position class by our own measurement (issue #12).

    python experiments/cube_life_sweep.py [--variant backgammon|long] [--agent td:...]

For each class of :data:`nardy_ai.cube.CUBE_LIFE` (and the race, whose x grows with the pip
count, :data:`nardy_ai.cube.RACE_LIFE`) the class's x is set to each value of a grid, the
others kept at the published ones, and the agent's 0-ply cube decisions are scored on the
variant's ``nardy bench cube`` set: the clear decisions of that class, agreement and mean cost.
Backgammon's reference is gnubg 2-ply (independent of our x); long nardy's is our own cubeful
rollouts, whose truncation leaves use the published x (a bias toward it).
Writes ``experiments/results/cube_life_sweep_<variant>.json``.
"""

from __future__ import annotations

import argparse
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from nardy_ai import cube  # noqa: E402
from nardy_ai.agents import make_agent  # noqa: E402
from nardy_ai.bench.cube import load_cube_positions, score_agent  # noqa: E402
from nardy_ai.files import write_atomic  # noqa: E402

DEFAULT_AGENT = {"backgammon": "td:checkpoints/backgammon/search_targets_rollout/current.pt",
                 "long": "td:checkpoints/long/search_targets/current.pt"}
GRID = (0.5, 0.6, 0.68, 0.75, 0.85)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variant", default="backgammon")
    ap.add_argument("--agent", default=None)
    a = ap.parse_args(argv)
    cset = load_cube_positions(a.variant)
    agent = make_agent(a.agent or DEFAULT_AGENT[a.variant], cset.variant)
    published = dict(cube.CUBE_LIFE)
    race = cube.RACE_LIFE
    out = {"variant": a.variant, "agent": agent.name, "set": cset.header.get("reference"), "classes": {}}
    for cls in list(published) + ["race"]:
        rows = []
        for x in GRID + (("pips",) if cls == "race" else ()):
            cube.CUBE_LIFE.clear()
            cube.CUBE_LIFE.update(published)
            cube.RACE_LIFE = race
            if cls == "race":
                if x != "pips":
                    cube.RACE_LIFE = (x, 0.0, x, x)
            else:
                cube.CUBE_LIFE[cls] = x
            r = score_agent(agent, cset)["clear_by_class"].get(cls)
            if r is None:
                break
            rows.append({"x": x, "decisions": r["double_decisions"] + r["take_decisions"],
                         "agreement": r["agreement"], "mean_cost_mp": 1000 * r["mean_cost"]})
            print(f"{cls:8s} x={x!s:5s} decisions {rows[-1]['decisions']:5d} agree {100 * r['agreement']:5.1f}% "
                  f"cost {1000 * r['mean_cost']:6.2f} mp", flush=True)
        out["classes"][cls] = rows
    cube.CUBE_LIFE.clear()
    cube.CUBE_LIFE.update(published)
    cube.RACE_LIFE = race
    path = os.path.join(ROOT, "experiments", "results", f"cube_life_sweep_{a.variant}.json")
    write_atomic(path, json.dumps(out, indent=1))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
