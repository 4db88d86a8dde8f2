"""Does `nardy analyze` rank agents as long tournaments do?  Rank correlation between the mean
error per decision of each agent (one or more analyses of the same games) and a ranking by
long matches (points per game against a common opponent, from the agent registry's figures
or given on the command line).

    nardy tournament --variant backgammon --agents bg-champion bg-2ply-r72 bg-expert-classes \\
        td-gammon pubeval heuristic random --games 200 --seed 7 --jobs 2 --out /tmp/val
    nardy analyze /tmp/val --reference gnubg:2ply --sample 280 --seed 3 --jobs 2 --out /tmp/val/an_gnubg2
    nardy analyze /tmp/val --reference best@1ply --sample 280 --seed 3 --jobs 2 --out /tmp/val/an_best1
    python experiments/validate_analysis.py /tmp/val/an_gnubg2 /tmp/val/an_best1 \\
        --out experiments/results/analysis_validation_backgammon.json

The long-match ranking: the registry's figures against gnubg 0-ply (16,000 / 8,000 / 4,000 /
2,000 games), then the built-ins by their long head-to-head results (pubeval loses to
td-gammon by 0.49 and beats heuristic by 0.51 over thousands of games; random last).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from nardy_ai import registry
from nardy_ai.files import write_atomic

#: Agents ranked by long matches, strongest first, when the registry holds no common figure.
BUILTIN_ORDER = ["pubeval", "heuristic", "random"]


def long_match_order(agents: list[str], against: str = "gnubg:0ply") -> list[str]:
    """The agents ordered by their registry figure against ``against`` (nets), then the
    built-ins in :data:`BUILTIN_ORDER`."""
    scored = []
    for name in agents:
        e = registry.load().get(name)
        figs = [f for f in (e.figures if e else ()) if f["against"] == against and "cubeless" in f.get("note", "")]
        if figs:
            scored.append((-max(figs, key=lambda f: f["games"])["ppg"], name))
    nets = [n for _, n in sorted(scored)]
    rest = [n for n in BUILTIN_ORDER if n in agents]
    missing = set(agents) - set(nets) - set(rest)
    if missing:
        raise SystemExit(f"no long-match figure for {sorted(missing)}")
    return nets + rest


def spearman(a: list[str], b: list[str]) -> float:
    """Spearman's rank correlation of two orderings of the same names (no ties)."""
    ra = {n: i for i, n in enumerate(a)}
    d = np.array([ra[n] - i for i, n in enumerate(b)], float)
    n = len(a)
    return float(1 - 6 * (d ** 2).sum() / (n * (n * n - 1)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("analyses", nargs="+", help="folders (or analysis.json files) of nardy analyze --out")
    ap.add_argument("--out", help="write the figures as JSON here")
    args = ap.parse_args(argv)
    rows = []
    for a in args.analyses:
        path = Path(a) / "analysis.json" if Path(a).is_dir() else Path(a)
        summary = json.loads(path.read_text())
        agents = summary["agents"]
        by_error = sorted(agents, key=lambda n: agents[n]["all"]["mean"])
        truth = long_match_order(list(agents))
        rho = spearman(truth, by_error)
        rows.append({"reference": summary["reference"], "games": summary["games"],
                     "decisions": sum(v["all"]["n"] for v in agents.values()),
                     "long_match_order": truth, "error_order": by_error, "spearman": rho,
                     "mean_error_mp": {n: agents[n]["all"]["mean"] for n in by_error},
                     "se_mp": {n: agents[n]["all"]["se"] for n in by_error}})
        print(f"{summary['reference']}: {summary['games']} games, Spearman {rho:+.3f}")
        for n in by_error:
            print(f"  {n:<20} {agents[n]['all']['mean']:7.1f} +/- {agents[n]['all']['se']:.1f} mp")
    if len(rows) > 1:
        common = set(rows[0]["error_order"]) & set(rows[1]["error_order"])
        cross = spearman(*[[n for n in r["error_order"] if n in common] for r in rows[:2]])
        print(f"{rows[0]['reference']} vs {rows[1]['reference']}: Spearman {cross:+.3f}")
        rows.append({"between": [rows[0]["reference"], rows[1]["reference"]], "spearman": cross})
    if args.out:
        write_atomic(args.out, json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
