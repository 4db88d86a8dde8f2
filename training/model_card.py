"""Write the model card of a training run: how it was trained and how strong it is.

    python -m training.model_card checkpoints/backgammon/td80 [--games 2000]

Reads the run folder (``config.toml``, ``checkpoint.pt``, ``metrics.jsonl``; for a
search-targets run ``current.pt`` and ``state.json``), plays a
fixed-seed match of ``--games`` games (seats alternating) against each baseline bot, and writes
``MODEL_CARD.md`` beside the checkpoint with 95% confidence intervals.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from nardy_ai.agents import make_agent
from nardy_ai.agents.neural import NeuralAgent
from nardy_ai.errors import NardyError
from nardy_ai.files import write_atomic
from nardy_ai.machine import machine_description
from nardy_ai.game import play_match, summarize
from nardy_ai.model import NeuralEvaluator, load_checkpoint, n_outputs
from nardy_ai.evaluator import evaluator_from_state
from nardy_ai.netset import NetSet


def training_wall_hours(metrics_path: str, gap_s: float = 600.0) -> float:
    """Hours of training from the metrics log's timestamps, not counting gaps over ``gap_s``
    (the run was stopped and resumed later)."""
    times = []
    with open(metrics_path, encoding="utf-8") as f:
        for line in f:
            try:
                times.append(json.loads(line)["time"])
            except (ValueError, KeyError):
                continue
    total = sum(b - a for a, b in zip(times, times[1:]) if b - a < gap_s)
    return total / 3600


def self_play_sessions(metrics_path: str) -> list[str]:
    """Where the run's self-play ran, one entry per distinct setting (metrics.jsonl sessions)."""
    seen: list[str] = []
    try:
        with open(metrics_path, encoding="utf-8") as f:
            for line in f:
                if '"session"' in line:
                    d = json.loads(line)
                    where = d.get("self_play")      # search-targets sessions name none
                    if d.get("kind") == "session" and where and where not in seen:
                        seen.append(where)
    except (OSError, ValueError):
        pass
    return seen


def run_machines(metrics_path: str) -> str:
    """The machines the run's sessions ran on (their ``machine``, in order of first use), or
    this machine for a run whose session lines name none (written before they did)."""
    seen: list[str] = []
    try:
        with open(metrics_path, encoding="utf-8") as f:
            for line in f:
                if '"session"' in line:
                    d = json.loads(line)
                    where = d.get("machine")
                    if d.get("kind") == "session" and where and where not in seen:
                        seen.append(where)
    except (OSError, ValueError):
        pass
    return "; ".join(seen) if seen else f"{machine_description()} (where this card was written)"


def evaluate(agent, variant, opponent: str, games: int, seed: int = 20261129) -> dict:
    """``games`` games against a baseline, seats alternating, fixed dice seeds."""
    recs = play_match(variant, agent, make_agent(opponent, variant), games, seed)
    return summarize(recs, agent=agent.name)


def evaluator_line(ev: NeuralEvaluator | NetSet) -> str:
    """The card's line on the evaluator: the net, or each member of a net set."""
    outputs = f"{n_outputs(ev.variant)} sigmoid outcome outputs; cubeless, 0-ply (greedy) play"
    if isinstance(ev, NetSet):
        return (f"- **Evaluator**: a net set (one evaluator per position class, nardy_ai/netset.py), "
                f"{outputs}:\n" + "\n".join(f"  - {line}" for line in ev.describe()))
    return (f"- **Evaluator**: MLP {list(ev.hidden)} {ev.activation}, encoder `{ev.encoder.name}` "
            f"v{ev.encoder.version} ({ev.encoder.n_features} inputs), {outputs}")


def search_targets_line(run_dir: str, state: dict, hours: float) -> str:
    """The card's training line for a search-targets run (training/search_targets.py) or a
    distillation run (training/distill.py), from the run's ``state.json`` (``state``)."""
    distill = state.get("method") == "distill"
    step = "round" if distill else "generation"
    gens = ", ".join(f"{h[step]}: {h['points_per_game']:+.3f} "
                     f"({'promoted' if h['promoted'] else 'rejected'})" for h in state["history"])
    secs = ", ".join(f"{k} {v / 60:.1f} min" for k, v in state.get("seconds", {}).items())
    if distill:
        what = (f"distillation (training/distill.py): {len(state['history'])} round(s) of self-play "
                f"afterstates and close rivals of decisions, search labels by the teacher, per-class fit "
                f"and a duplicate-dice gate against the teacher")
    else:
        what = (f"search targets (training/search_targets.py): {len(state['history'])} "
                f"generations of self-play sampling, n-ply labels, per-class fit and a duplicate-dice gate "
                f"against the current evaluator")
    return (f"- **Training**: {what} (gate points per game by {step}: {gens}); "
            f"time by phase: {secs}; about {hours:.2f} h of wall time on "
            f"{run_machines(os.path.join(run_dir, 'metrics.jsonl'))}")


def _from_side(p: dict, me: str) -> dict:
    """A tournament pairing seen from agent ``me``'s side: as stored when ``me`` is its first
    agent, otherwise with points per game, win rate and decided-pairs share mirrored (the
    intervals too), so that every row of a card reads as this net's result."""
    if p["agents"][0] == me:
        return p
    lo, hi = p["points_per_game_ci95"]
    wlo, whi = p["win_rate_ci95"]
    q = dict(p, agents=[me, p["agents"][0]], points_per_game=-p["points_per_game"],
             points_per_game_ci95=[-hi, -lo], win_rate=1 - p["win_rate"], win_rate_ci95=[1 - whi, 1 - wlo])
    if p.get("decided_pairs_won_ci95"):
        slo, shi = p["decided_pairs_won_ci95"]
        q.update(decided_pairs_won_share=1 - p["decided_pairs_won_share"], decided_pairs_won_ci95=[1 - shi, 1 - slo])
    return q


def measured_lines(result_files: list[str], names: list[str] | None = None) -> list[str]:
    """A table of the pairings of tournament summaries (``nardy tournament`` output,
    ``summary.json``) that this net played: duplicate-dice matches with intervals, each from the
    net's side. ``names``: the agent specs this net has in those files (it may have moved since
    they were played); default each file's first agent."""
    if not result_files:
        return []
    lines = ["", "## Measured matches (duplicate-dice pairs; 95% CI over the pairs)", "",
             "| agent | opponent | stakes | games | points per game (95% CI) | decided pairs won (95% CI) "
             "| win rate (95% CI) | result file |",
             "|---|---|---|---|---|---|---|---|"]
    for path in result_files:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        mine = set(names) if names else {d["agents"][0]}
        for p in d["pairings"]:
            me = next((a for a in p["agents"] if a in mine), None)
            if me is None:
                continue
            p = _from_side(p, me)
            lo, hi = p["points_per_game_ci95"]
            wlo, whi = p["win_rate_ci95"]
            share, sci = p.get("decided_pairs_won_share"), p.get("decided_pairs_won_ci95")
            pairs = f"{100 * share:.1f}% ({100 * sci[0]:.1f}-{100 * sci[1]:.1f}%)" if sci else "-"
            ppg = (f"{p['points_per_game']:+.3f} ({lo:+.3f} to {hi:+.3f})" if abs(p["points_per_game"]) < 1e4
                   else f"{p['points_per_game']:+.3g} ({lo:+.3g} to {hi:+.3g})")
            lines.append(f"| {me} | {p['agents'][1]} | {d.get('stakes', 'none')} | {p['games']:,} | {ppg} | {pairs} "
                         f"| {100 * p['win_rate']:.1f}% ({100 * wlo:.1f}-{100 * whi:.1f}%) | `{os.path.relpath(path)}` |")
    return lines


def cube_lines(ev, v) -> list[str]:
    """The net's double / take decisions on the variant's cube position set (``nardy bench
    cube``, gnubg 2-ply references), cubeful at 0 ply (Janowski) and 1 ply (nardy_ai/cubeful.py),
    when the variant has a set."""
    from nardy_ai.bench.cube import CLEAR_MARGIN, cube_positions_path, load_cube_positions, score_agent
    if not os.path.exists(cube_positions_path(v)):
        return []
    cset = load_cube_positions(v.id)
    lines = ["", f"## Cube decisions (`nardy bench cube`, set v{cset.header['version']}: "
             f"{len(cset.boards):,} money positions, reference {cset.header['reference']})", "",
             "| cube decided at | decisions | number | agreement | mean cost (milli-stakes) | missed doubles "
             "| early doubles | wrong takes | wrong passes |",
             "|---|---|---|---|---|---|---|---|---|"]

    def pct(x):
        return "-" if x is None else f"{100 * x:.1f}%"
    for plies, how in ((0, "0 ply (Janowski)"), (1, "1 ply (cubeful lookahead)")):
        r = score_agent(NeuralAgent(ev, name="td", plies=plies), cset)
        for which, label in (("clear", f"clear (margin >= {CLEAR_MARGIN})"), ("all", "all")):
            x = r[which]
            lines.append(f"| {how} | {label} | {x['double_decisions'] + x['take_decisions']:,} | {pct(x['agreement'])} | "
                         f"{1000 * x['mean_cost']:.1f} | {pct(x['missed_doubles'])} | {pct(x['early_doubles'])} | "
                         f"{pct(x['wrong_takes'])} | {pct(x['wrong_passes'])} |")
    return lines


def write_card(run_dir: str, games: int, result_files: list[str] | None = None, cube: bool = False,
               names: list[str] | None = None) -> str:
    search_targets = os.path.exists(os.path.join(run_dir, "state.json"))
    ckpt = os.path.join(run_dir, "current.pt" if search_targets else "checkpoint.pt")
    data = load_checkpoint(ckpt)
    ev = evaluator_from_state(data["evaluator"], device="cpu")
    v = ev.variant
    agent = NeuralAgent(ev, name="td")
    t0 = time.time()
    opponents = ("random", "heuristic") + (() if v.is_long else ("pubeval",))
    results = {opp: evaluate(agent, v, opp, games) for opp in opponents}
    eval_s = time.time() - t0
    cfg = open(os.path.join(run_dir, "config.toml"), encoding="utf-8").read()
    hours = training_wall_hours(os.path.join(run_dir, "metrics.jsonl"))
    rel = os.path.relpath(ckpt)
    where = self_play_sessions(os.path.join(run_dir, "metrics.jsonl"))
    init_from = data["config"].get("model", {}).get("init_from", "")
    state = None
    if search_targets:
        with open(os.path.join(run_dir, "state.json"), encoding="utf-8") as f:
            state = json.load(f)
    method = ("distilled" if state.get("method") == "distill" else "search-targets") if state is not None else "TD(lambda)"
    lines = [
        f"# Model card: {v.id} {method} evaluator ({os.path.basename(run_dir)})",
        "",
        f"- **Checkpoint**: `{rel}` (use as agent `td:{rel}`; resume training with "
        f"`nardy train --config {run_dir}/config.toml --out {run_dir} --resume`)",
        f"- **Variant**: {v.describe()}",
        evaluator_line(ev),
        search_targets_line(run_dir, state, hours) if state is not None else
        f"- **Training**: TD(lambda) self-play with lambda-returns (training/td.py), "
        f"{data['games']:,} games, {data['positions']:,} positions, {data['updates']:,} gradient steps, "
        f"about {hours:.2f} h of wall time on {run_machines(os.path.join(run_dir, 'metrics.jsonl'))}; self-play: "
        + ("; ".join(where) if where else "this process (one torch thread)"),
    ]
    if init_from:
        lines.append(f"- **Warm start**: the run began from the weights of `{init_from}` "
                     f"(see that run's model card); the games above are this run's only")
    lines += [
        "",
        f"## Strength (0-ply, {games} games per opponent, seats alternating, fixed dice seeds)",
        "",
        "| opponent | win rate (95% CI) | points per game (95% CI) | results won (level: games) |",
        "|---|---|---|---|",
    ]
    for opp, s in results.items():
        lo, hi = s["win_rate_ci95"]
        plo, phi = s["points_per_game_ci95"]
        lines.append(f"| {opp} | {100 * s['win_rate']:.1f}% ({100 * lo:.1f}-{100 * hi:.1f}%) | "
                     f"{s['points_per_game']:+.3f} ({plo:+.3f} to {phi:+.3f}) | "
                     + ", ".join(f"{k}: {n}" for k, n in s["levels_by_agent"][0].items()) + " |")
    lines += ["", f"Evaluation took {eval_s:.0f} s. `heuristic` is the platform's greedy "
              "rule-of-thumb bot (agents/heuristic.py), `random` plays uniformly among legal plays."]
    lines += measured_lines(result_files or [], names)
    if cube:
        lines += cube_lines(ev, v)
    lines += ["", "## Config", "", "```toml", cfg.strip(), "```", ""]
    text = "\n".join(lines)
    path = os.path.join(run_dir, "MODEL_CARD.md")
    write_atomic(path, text)
    return text


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir")
    p.add_argument("--games", type=int, default=2000)
    p.add_argument("--results", nargs="*", default=[],
                   help="tournament summary.json files in which this net played (e.g. vs gnubg:0ply)")
    p.add_argument("--agent", action="append", default=None, metavar="SPEC",
                   help="the agent spec this net has in the --results files, repeatable (default: each "
                        "file's first agent); its pairings are shown from its side")
    p.add_argument("--cube", action="store_true",
                   help="add the net's cube decisions on the variant's `nardy bench cube` set (backgammon)")
    args = p.parse_args(argv)
    try:
        print(write_card(args.run_dir, args.games, args.results, args.cube, args.agent))
    except (NardyError, OSError) as e:           # a missing run, checkpoint or results file
        print(f"model_card: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
