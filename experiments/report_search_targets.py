"""The report of issue #11: what each step of the evaluator machinery and of search-target
training gave, as tables and a plot of strength against machine-hours.

    python experiments/report_search_targets.py          # the plot needs the plot extra

Reads only committed files: the match and bench results in ``experiments/results/`` and the
model cards, ``state.json`` and ``metrics.jsonl`` of the shipped checkpoints; writes
``experiments/results/search_targets_report.md`` and ``search_targets_strength.png``.

Machine-hours are wall hours on the 2-core development machine (both cores busy: two label
processes, or Ray's two self-play actors), cumulative along each net's ancestry (every step
starts from the previous step's weights).  A TD run's hours come from its metrics log as its model card computes them; a
search-targets run's from its metrics log (the time between consecutive records, without the
gaps between sessions)."""
from __future__ import annotations

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "experiments", "results")
#: Wall hours of the replay fit, measured by hand (it is a script, not a run with a metrics
#: log): the wide run's generation 1 that it also reads (sample, label, fit, gate: 0.17 h)
#: and its two fitting passes (0.15 h).
REPLAY_HOURS = 0.32


def td_hours(ckpt_dir: str) -> float:
    """Wall hours of a TD run: its metrics log's, as its model card reports them."""
    from training.model_card import training_wall_hours
    return training_wall_hours(os.path.join(ROOT, ckpt_dir, "metrics.jsonl"))


def generation_hours(ckpt_dir: str) -> dict[int, float]:
    """Wall hours of a search-targets run up to the end of each generation's gate (from the
    metrics log: time between consecutive records, not counting the gap before a session)."""
    out, total, last = {}, 0.0, None
    with open(os.path.join(ROOT, ckpt_dir, "metrics.jsonl"), encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r["kind"] == "session":
                last = r["time"]
                continue
            if last is not None:
                total += r["time"] - last
            last = r["time"]
            if r["kind"] in ("gate", "eval"):
                out[r["generation"]] = total / 3600
    return out


def pairing(result_file: str, agent_part: str, opponent: str) -> dict | None:
    """The pairing of a tournament summary whose first agent contains ``agent_part`` and whose
    other agent is ``opponent`` (points per game from the first agent's side)."""
    path = os.path.join(RESULTS, result_file)
    if not os.path.exists(path):
        return None
    for p in json.load(open(path, encoding="utf-8"))["pairings"]:
        a, b = p["agents"]
        if agent_part in a and b == opponent:
            return p
        if agent_part in b and a == opponent:
            lo, hi = p["points_per_game_ci95"]
            return {**p, "points_per_game": -p["points_per_game"], "points_per_game_ci95": [-hi, -lo]}
    return None


def pooled(result_files: list[str], agent_part: str, opponent: str) -> dict | None:
    """One pairing measured in several tournaments on independent dice (different seeds):
    points per game weighted by games, the interval from the pooled standard errors."""
    parts = [p for p in (pairing(f, agent_part, opponent) for f in result_files) if p]
    if not parts:
        return None
    n = sum(p["games"] for p in parts)
    mean = sum(p["points_per_game"] * p["games"] for p in parts) / n
    se = sum(((p["points_per_game_ci95"][1] - p["points_per_game_ci95"][0]) / 3.92 * p["games"]) ** 2
             for p in parts) ** 0.5 / n
    return {"points_per_game": mean, "points_per_game_ci95": [mean - 1.96 * se, mean + 1.96 * se], "games": n}


def bench(result_file: str, agent_part: str) -> dict | None:
    """An agent's row of a `nardy bench evaluators --json` result."""
    path = os.path.join(RESULTS, result_file)
    if not os.path.exists(path):
        return None
    for a in json.load(open(path, encoding="utf-8"))["agents"]:
        if agent_part in a["agent"]:
            return a
    return None


def pooled_step(step: str, hours: float, gnubg_files: list[str], agent_part: str, bench_row: tuple,
                pubeval: tuple | None = None) -> dict:
    """A step measured against gnubg 0-ply on several seeds (``gnubg_files``, pooled), its v2
    bench row ``(file, agent part)`` and optionally its pubeval pairing ``(file, agent part)``."""
    return {"step": step, "hours": hours, "gnubg": (gnubg_files[0], agent_part), "gnubg_pool": gnubg_files,
            "pubeval": pubeval, "bench": bench_row}


# --- backgammon: the ancestry of the shipped nets ---------------------------------------------

def backgammon_steps() -> list[dict]:
    """Each step: what it added, its checkpoint, cumulative machine-hours, where its figures are."""
    h_td80 = td_hours("checkpoints/backgammon/td80")
    h_anneal = h_td80 + td_hours("checkpoints/backgammon/td80_anneal")
    h_classes = h_anneal + td_hours("checkpoints/backgammon/expert_classes")
    race = generation_hours("checkpoints/backgammon/expert_classes_race")
    h_race = h_classes + max(race.values())
    st = generation_hours("checkpoints/backgammon/search_targets")
    steps = [
        {"step": "TD(lambda), tdgammon inputs, one net [80] (td80)", "hours": h_td80,
         "gnubg": ("backgammon_td80_vs_pubeval_gnubg0.json", "td80/"), "pubeval": ("backgammon_td80_vs_pubeval_gnubg0.json", "td80/"),
         "bench": None},
        {"step": "+ annealed learning rate (td80_anneal)", "hours": h_anneal,
         "gnubg": ("backgammon_td80_anneal_gauntlet.json", "td80_anneal"), "pubeval": ("backgammon_td80_anneal_gauntlet.json", "td80_anneal"),
         "bench": ("backgammon_v2_evaluator_ablation.json", "td80_anneal")},
        {"step": "+ expert inputs, a net per class, bear-off database, TD (expert_classes)", "hours": h_classes,
         "gnubg": ("backgammon_expert_classes_vs_gnubg0.json", "ec_final"), "pubeval": None,
         "bench": ("backgammon_v2_evaluator_ablation.json", "ec_final")},
        {"step": "+ race net on 1-ply search targets, 6 generations (expert_classes_race)", "hours": h_race,
         "gnubg": ("backgammon_expert_classes_race_gauntlet.json", "expert_classes_race"),
         "pubeval": ("backgammon_expert_classes_race_gauntlet.json", "expert_classes_race"),
         "bench": ("backgammon_v2_expert_classes_race.json", "race_final")},
    ]
    for g, name in ((4, "g4"), (12, "g12")):
        if g in st:
            steps.append({"step": f"+ contact/crashed nets widened to 128, 1-ply search targets, generation {g}",
                          "hours": h_race + st[g],
                          "gnubg": (f"backgammon_search_targets_{name}.json", f"st_{name}"),
                          "pubeval": (f"backgammon_search_targets_{name}.json", f"st_{name}"),
                          "bench": ("backgammon_v2_search_targets.json", f"st_{name}")})
    st2 = generation_hours("checkpoints/backgammon/search_targets_2ply")
    if st and st2:
        h_2ply = h_race + max(st.values()) + max(st2.values())
        steps.append({"step": f"+ 2-ply search targets for contact/crashed, {max(st2)} generations",
                      "hours": h_2ply, "gnubg": ("backgammon_search_targets_2ply.json", "search_targets_2ply"),
                      "pubeval": ("backgammon_search_targets_2ply.json", "search_targets_2ply"),
                      "bench": ("backgammon_v2_search_targets.json", "st2")})
        # The replay fit: the wide run's generation 1 (its labels; 0.17 h) and two passes of
        # fitting over the 2.3 M labelled afterstates (0.15 h), experiments/backgammon_replay_fit.py.
        steps.append({"step": "+ 256-unit contact/crashed nets fitted on all 2.3 M labels at once (replay)",
                      "hours": h_2ply + REPLAY_HOURS,
                      "gnubg": ("backgammon_search_targets_replay.json", "replay2"),
                      "pubeval": ("backgammon_search_targets_replay.json", "replay2"),
                      "bench": ("backgammon_v2_search_targets.json", "replay")})
        # From the replay nets: 1-ply generations that also fit the 4 generations before
        # (history), then generations labelled by 36-game rollouts truncated at 7 plies.
        hist = generation_hours("checkpoints/backgammon/search_targets_history")
        h_hist = h_2ply + REPLAY_HOURS + (max(hist.values()) if hist else 0.0)
        steps.append({"step": "+ 1-ply generations fitting the labels of the 4 before (history), "
                              f"generation 2 measured (of {max(hist) if hist else 0} run)",
                      "hours": h_2ply + REPLAY_HOURS + hist.get(2, 0.0),
                      "gnubg": ("backgammon_search_targets_history.json", "search_targets_history"),
                      "pubeval": None, "bench": None})
        roll = generation_hours("checkpoints/backgammon/search_targets_rollout")
        if roll:
            steps.append({"step": f"+ rollout labels (36 games, truncated at 7 plies), {max(roll)} generations "
                                  "(search_targets_rollout; the last promoted is current)",
                          "hours": h_hist + max(roll.values()),
                          "gnubg": ("backgammon_search_targets_rollout.json", "search_targets_rollout"),
                          "pubeval": ("backgammon_search_targets_rollout.json", "search_targets_rollout"),
                          "bench": None})
        r72 = generation_hours("checkpoints/backgammon/search_targets_rollout72")
        if roll and r72:
            # From rollout generation 8: 72 games a label, 60,000 afterstates a generation, the
            # labels of the two generations before fitted too; gnubg measured on two seeds.
            steps.append(pooled_step(f"+ rollout labels of 72 games (half the noise), {max(r72)} generations "
                                     "(search_targets_rollout72; generation 6 current)",
                                     h_hist + max(roll.values()) + max(r72.values()),
                                     ["backgammon_search_targets_rollout72_g6.json",
                                      "backgammon_search_targets_rollout72_g6_s9.json"], "rollout72",
                                     ("backgammon_v2_search_targets_rollout72.json", "rollout72"),
                                     pubeval=("backgammon_search_targets_rollout72_g6_s9.json", "rollout72")))
            # Session 8: 2 generations of 2-ply labels from rollout72, then 512-unit nets
            # fitted from scratch on its 1-ply labels (experiments/distill.py: labelling 13 min,
            # fits 5 min; with the decisions' rivals another 5.5 + 3 min).
            h72 = h_hist + max(roll.values()) + max(r72.values())
            two = generation_hours("checkpoints/backgammon/search_targets_2ply_r72")
            if two:
                h2 = h72 + max(two.values())
                steps.append({"step": f"+ 2-ply labels, {max(two)} generations (search_targets_2ply_r72)",
                              "hours": h2,
                              "gnubg": ("backgammon_search_targets_2ply_r72_g2_s12.json", "2ply_r72"),
                              "pubeval": None,
                              "bench": ("backgammon_v2_search_targets_session8.json", "2ply_r72")})
                s8, s9 = "backgammon_v2_search_targets_session8.json", "backgammon_v2_search_targets_session9.json"
                # (step, hours after 2ply_r72, result-file stem, seeds, agent key, bench, pubeval).
                # Session 9 iterated the distillation, the student of the round before as teacher:
                # round 2 labels 17 min + candidates and fits 6; round 3 labels 25 min + fits with
                # three learning-rate halvings 11; round 4 the race net on 2-ply labels (20 min),
                # then 30 min labels + 18 min fits.
                distilled = (
                    ("+ 512-unit nets fitted from scratch on 1.5 M of its 1-ply labels (distill)",
                     0.30, "distill", (10, 11), "distill/", (s8, "distill/"), None),
                    ("+ the close rivals of 300,000 decisions in the data (distill_candidates)",
                     0.45, "distill_candidates", (13, 14), "distill_candidates", (s8, "distill_candidates"), None),
                    ("+ a second round: distill_candidates as the teacher (distill_iter2)",
                     0.45 + 0.38, "distill_iter2", (15, 16), "iter2", (s9, "distill_iter2"), None),
                    ("+ a third round: 2.15 M rows, fits with 3 learning-rate halvings (distill_iter3)",
                     0.45 + 0.38 + 0.62, "distill_iter3", (19, 20), "iter3h", (s9, "distill_iter3/"),
                     ("backgammon_search_targets_distill_iter3_pubeval_s23.json", "distill_iter3")),
                    ("+ race net on 2-ply labels, a fourth round of 2.45 M rows (distill_iter4)",
                     0.45 + 0.38 + 0.62 + 1.1, "distill_iter4", (21, 22), "iter4", (s9, "distill_iter4/"), None),
                )
                for step, hours, stem, seeds, agent, bench_row, pubeval in distilled:
                    files = [f"backgammon_search_targets_{stem}_s{seed}.json" for seed in seeds]
                    steps.append(pooled_step(step, h2 + hours, files, agent, bench_row, pubeval))
    for s in steps:
        s["vs_gnubg"] = pairing(s["gnubg"][0], s["gnubg"][1], "gnubg:0ply") if s["gnubg"] else None
        if s.get("gnubg_pool"):
            s["vs_gnubg"] = pooled(s["gnubg_pool"], s["gnubg"][1], "gnubg:0ply") or s["vs_gnubg"]
        s["vs_pubeval"] = pairing(s["pubeval"][0], s["pubeval"][1], "pubeval") if s["pubeval"] else None
        s["v2"] = bench(*s["bench"]) if s["bench"] else None
    return steps


def fmt_pair(p: dict | None) -> str:
    if not p:
        return "-"
    if not p["games"]:
        return "(the reference)"
    lo, hi = p["points_per_game_ci95"]
    return f"{p['points_per_game']:+.3f} [{lo:+.3f}, {hi:+.3f}] ({p['games']:,})"


def fmt_bench(b: dict | None) -> str:
    if not b:
        return "- | - | - | - | -"
    c = b["classes"]
    return " | ".join([f"{b['loss_mp']:.2f}"] + [f"{c[k]['loss_mp']:.2f}" for k in ("contact", "crashed", "race", "bearoff")])


def write(steps: list[dict], long_rows: list[dict]) -> str:
    lines = ["# Issue #11: what each step gave", "",
             "Generated by `python experiments/report_search_targets.py` from the committed results "
             "(experiments/results/*.json) and the shipped checkpoints' logs.  All play is 0-ply and "
             "cubeless, in duplicate-dice pairs; intervals are 95% (1.96 standard errors over the pairs).  "
             "Machine-hours: wall hours on the 2-core development machine (AMD EPYC, 2 logical cores, "
             "both busy), cumulative along the ancestry.", "",
             "## Backgammon", "",
             "v2 bench: mean equity lost per decision against gnubg 2-ply, milli-points, on 1,200 "
             "decisions (contact 450, crashed 250, race 300, bear-off 200); gnubg 0-ply itself makes "
             "2.7 / 2.6 / 0.3 / 0.0 on the four classes (same set).", "",
             "| step | machine-hours | vs gnubg 0-ply ppg [95%] (games) | vs pubeval ppg [95%] (games) "
             "| v2 overall | contact | crashed | race | bearoff |",
             "|---|---|---|---|---|---|---|---|---|"]
    for s in steps:
        lines.append(f"| {s['step']} | {s['hours']:.2f} | {fmt_pair(s['vs_gnubg'])} | {fmt_pair(s['vs_pubeval'])} "
                     f"| {fmt_bench(s['v2'])} |")
    if long_rows:
        lines += ["", "## Long nardy", "",
                  "Targets: >= +0.30 against long td80 at 0-ply, >= +0.20 when both search 1 ply "
                  "(4,000 games each).", "",
                  "| step | machine-hours | vs long td80, 0-ply, ppg [95%] (games) "
                  "| both at 1-ply, ppg [95%] (games) |", "|---|---|---|---|"]
        for r in long_rows:
            lines.append(f"| {r['step']} | {r['hours']:.2f} | {fmt_pair(r['vs_td80'])} "
                         f"| {fmt_pair(r.get('vs_td80_1ply'))} |")
    return "\n".join(lines) + "\n"


def long_steps() -> list[dict]:
    """Long nardy: the TD net set and the search-target generations against long td80."""
    h_td80 = td_hours("checkpoints/long/td80")
    h_classes = h_td80 + td_hours("checkpoints/long/expert_classes")
    rows = [{"step": "TD(lambda), long inputs, one net [80] (td80)", "hours": h_td80,
             "vs_td80": {"points_per_game": 0.0, "points_per_game_ci95": [0.0, 0.0], "games": 0}},
            {"step": "+ long_expert inputs, a net per class, bear-off database, TD (expert_classes; "
                     "189,910 games, measured at about 160k)",
             "hours": h_classes, "vs_td80": pairing("long_expert_classes_vs_td80.json", "expert_classes", "td:checkpoints/long/td80/checkpoint.pt")}]
    path = os.path.join(ROOT, "checkpoints/long/search_targets/metrics.jsonl")
    if os.path.exists(path):
        st = generation_hours("checkpoints/long/search_targets")
        if st:
            g = max(st)
            rows.append({"step": f"+ contact net widened to 128, 1-ply search targets, {g} generation(s)",
                         "hours": h_classes + st[g],
                         "vs_td80": pairing("long_search_targets_vs_td80.json", "search_targets", "td:checkpoints/long/td80/checkpoint.pt"),
                         "vs_td80_1ply": pooled(["long_search_targets_1ply_vs_td80_1ply_a.json",
                                                 "long_search_targets_1ply_vs_td80_1ply_b.json"],
                                                "search_targets", "td:checkpoints/long/td80/checkpoint.pt@1ply")})
    return rows


def plot(steps: list[dict], long_rows: list[dict], path: str) -> bool:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        print("no plot: matplotlib is not installed (pip install 'nardy-ai[plot]')", file=sys.stderr)
        return False
    fig = Figure(figsize=(10, 4.2))
    ax, bx = fig.subplots(1, 2)
    for key, label, marker in (("vs_gnubg", "vs gnubg 0-ply", "o"), ("vs_pubeval", "vs pubeval", "s")):
        pts = [(s["hours"], s[key]) for s in steps if s[key]]
        if pts:
            xs = [h for h, _ in pts]
            ys = [p["points_per_game"] for _, p in pts]
            err = [[y - p["points_per_game_ci95"][0] for y, (_, p) in zip(ys, pts)],
                   [p["points_per_game_ci95"][1] - y for y, (_, p) in zip(ys, pts)]]
            ax.errorbar(xs, ys, yerr=err, marker=marker, capsize=3, label=label)
    ax.axhline(0.0, color="grey", lw=0.8, ls="--", label="targets: 0.00 vs gnubg, +0.60 vs pubeval")
    ax.axhline(0.60, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("machine-hours (2-core machine, cumulative)")
    ax.set_ylabel("points per game (0-ply, cubeless)")
    ax.set_title("backgammon")
    ax.legend(loc="best")
    pts = [(r["hours"], r["vs_td80"]) for r in long_rows if r["vs_td80"]]
    if pts:
        ys = [p["points_per_game"] for _, p in pts]
        err = [[y - p["points_per_game_ci95"][0] for y, (_, p) in zip(ys, pts)],
               [p["points_per_game_ci95"][1] - y for y, (_, p) in zip(ys, pts)]]
        bx.errorbar([h for h, _ in pts], ys, yerr=err, marker="o", capsize=3, label="vs long td80")
        bx.axhline(0.30, color="grey", lw=0.8, ls="--", label="target +0.30")
        bx.legend(loc="best")
    bx.set_xlabel("machine-hours (2-core machine, cumulative)")
    bx.set_title("long nardy")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main() -> int:
    steps, long_rows = backgammon_steps(), long_steps()
    md = write(steps, long_rows)
    out = os.path.join(RESULTS, "search_targets_report.md")
    if plot(steps, long_rows, os.path.join(RESULTS, "search_targets_strength.png")):
        md += "\n![strength against machine-hours](search_targets_strength.png)\n"
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(md)
    os.replace(tmp, out)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
