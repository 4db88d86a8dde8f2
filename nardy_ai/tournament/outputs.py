"""Tournament outputs: summary JSON and CSV, the printed table, the plot, the match files (see :mod:`nardy_ai.tournament`)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..files import write_atomic
from ..game import GameRecord
from .settings import MATCH_DIR, PICTURE, SUMMARY_CSV, SUMMARY_JSON, TournamentConfig


def summary_csv(summary: dict) -> str:
    """One row per agent (``kind`` = agent, with Elo) and per pairing (``kind`` = pairing,
    from the first agent's side)."""
    names = summary["result_levels"]
    head = ["kind", "rank", "agent", "opponent", "games", "points_per_game", "ppg_ci95_low", "ppg_ci95_high",
            "win_rate", "win_ci95_low", "win_ci95_high", "elo", "elo_ci95_low", "elo_ci95_high",
            *[f"won_{n}" for n in names], *[f"lost_{n}" for n in names]]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(head)

    def row(kind, rank, agent, opponent, s, elo=("", "", "")):
        ci = s["points_per_game_ci95"] or ["", ""]
        w.writerow([kind, rank, agent, opponent, s["games"], s["points_per_game"], *ci, s["win_rate"],
                    *s["win_rate_ci95"], *elo, *[s["levels_won"][n] for n in names],
                    *[s["levels_lost"][n] for n in names]])

    for r in summary["ranking"]:
        row("agent", r["rank"], r["agent"], "", r, (r["elo"], *r["elo_ci95"]))
    for p in summary["pairings"]:
        row("pairing", "", p["agents"][0], p["agents"][1], p)
    return buf.getvalue()


def display_name(spec: str, width: int | None = None) -> str:
    """An agent spec shortened for tables: a path argument keeps its last two parts
    (``td:checkpoints/backgammon/td80/checkpoint.pt`` -> ``td:td80/checkpoint.pt``).  Only
    with ``width`` (pictures, the progress bar) is a longer name cut, in the middle, so that
    its kind (the prefix) and its end both stay readable."""
    prefix, sep, arg = spec.partition(":")
    if sep and "/" in arg:
        spec = f"{prefix}:{'/'.join(arg.split('/')[-2:])}"
    if width is None or len(spec) <= width:
        return spec
    head = (width - 1) // 2
    return spec[:head] + "…" + spec[len(spec) - (width - 1 - head):]


def display_names(specs: Sequence[str]) -> dict[str, str]:
    """The names tables print for agents: :func:`display_name` (never cut), or the whole spec
    where two agents' shortened names would be the same."""
    short = {s: display_name(s) for s in specs}
    seen = list(short.values())
    return {s: n if seen.count(n) == 1 else s for s, n in short.items()}


def format_summary(summary: dict) -> str:
    """The ranking (Elo) and the cross-table as text for the terminal."""
    names = summary["result_levels"]
    ranking = summary["ranking"]
    shown = display_names([r["agent"] for r in ranking])
    w = max(5, max(len(shown[r["agent"]]) for r in ranking))
    lines = [f"{summary['variant']} v{summary['variant_version']}"
             + (f" {summary['options']}" if summary["options"] else "")
             + f", {summary['mode']}: {len(ranking)} agents, {summary['games_per_pairing']} games per pairing "
             f"({summary['games_per_pairing'] // 2} duplicate-dice pairs), {summary['games']} games, seed {summary['seed']}",
             "",
             "Ranking. Elo: maximum likelihood on wins, mean 0, 95% interval from the Hessian. "
             "Points per game with 95% CI over duplicate pairs.",
             f"{', '.join(n + ' %' for n in names[1:])}: share of games won at that level or higher."
             if len(names) > 1 else "",
             f" #  {'agent':<{w}}  {'Elo':>5}  {'95% CI':<13}  {'games':>5}  {'pts/game':>8}  {'95% CI':<15}  {'win %':>5}"
             + "".join(f"  {n + ' %':>{max(len(n) + 2, 6)}}" for n in names[1:])]
    for r in ranking:
        ci = r["points_per_game_ci95"]
        ci_text = f"[{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "n/a"
        lines.append(f"{r['rank']:>2}  {shown[r['agent']]:<{w}}  {r['elo']:>+5.0f}  "
                     f"{'[%+.0f, %+.0f]' % tuple(r['elo_ci95']):<13}  {r['games']:>5}  "
                     f"{r['points_per_game']:>+8.3f}  {ci_text:<15}  {100 * r['win_rate']:>5.1f}"
                     + "".join(f"  {100 * r['win_rates_by_level'][n]:>{max(len(n) + 2, 6)}.1f}" for n in names[1:]))
    order = [r["agent"] for r in ranking]
    cw = {c: max(10, len(shown[c])) for c in order}
    lines += ["", "Cross-table: points per game of the row agent against the column agent (± 95% CI half-width)",
              f"{'':<{w}}" + "".join(f"  {shown[c]:>{cw[c]}}" for c in order)]
    half = {}
    for p in summary["pairings"]:
        ci = p["points_per_game_ci95"]
        h = (ci[1] - ci[0]) / 2 if ci else float("nan")
        half[tuple(p["agents"])] = half[tuple(p["agents"][::-1])] = h
    for x in order:
        cells = []
        for y in order:
            v = summary["cross_table"][x][y]
            cells.append("·" if x == y else "" if v is None else f"{v:+.2f}±{half[(x, y)]:.2f}")
        lines.append(f"{shown[x]:<{w}}" + "".join(f"  {c:>{cw[y]}}" for c, y in zip(cells, order)))
    if "stakes" in summary:
        lines += ["", f"Stakes ({summary['stakes']}): raises offered, and taken / passed / beavered "
                      f"when offered; mean final stake of the agent's games",
                  f"{'':<{w}}  {'offered':>7}  {'received':>8}  {'takes':>5}  {'passes':>6}  "
                  f"{'beavers':>7}  {'mean stake':>10}"]
        for r in ranking:
            c = r["cube"]
            lines.append(f"{shown[r['agent']]:<{w}}  {c['doubles']:>7}  {c['doubles_received']:>8}  "
                         f"{c['takes']:>5}  {c['passes']:>6}  {c['beavers']:>7}  {c['mean_stake']:>10.2f}")
        lines += ["", "Duplicate pairs won by the first agent of each pairing, of the pairs decided (95% "
                      "Wilson interval): a figure that a few games at huge stakes cannot swamp"]
        for p in summary["pairings"]:
            sci = p.get("decided_pairs_won_ci95")
            if sci:
                a, b = p["agents"]
                lines.append(f"{shown[a]} vs {shown[b]}: {p['pairs_won']} won, {p['pairs_lost']} lost: "
                             f"{100 * p['decided_pairs_won_share']:.1f}% [{100 * sci[0]:.1f}, {100 * sci[1]:.1f}]")
    return "\n".join(lines)


def plot_summary(summary: dict, path: Path) -> bool:
    """Draw the Elo table and the cross-table into a PNG; False when matplotlib is missing."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return False
    ranking = summary["ranking"]
    order = [r["agent"] for r in ranking]
    k = len(order)
    fig = Figure(figsize=(6 + 1.1 * k, 1.2 + 0.55 * k + 1.5), layout="constrained")
    ax_elo, ax_x = fig.subplots(1, 2, width_ratios=[1, 1.3])
    y = np.arange(k)[::-1]
    elo = np.array([r["elo"] for r in ranking])
    ci = np.array([r["elo_ci95"] for r in ranking])
    ax_elo.errorbar(elo, y, xerr=[elo - ci[:, 0], ci[:, 1] - elo], fmt="o", capsize=4, color="tab:blue")
    ax_elo.set_yticks(y, [display_name(a, 24) for a in order])
    ax_elo.set_ylim(-0.7, k - 0.3)
    ax_elo.axvline(0, color="grey", lw=0.8, ls=":")
    ax_elo.set_xlabel("Elo (mean 0), 95% interval")
    ax_elo.set_title("Elo")
    grid = np.array([[np.nan if summary["cross_table"][a][b] is None else summary["cross_table"][a][b]
                      for b in order] for a in order], float)
    lim = max(float(np.nanmax(np.abs(grid))) if np.isfinite(grid).any() else 1.0, 1e-9)
    im = ax_x.imshow(grid, cmap="RdBu", vmin=-lim, vmax=lim)
    for i in range(k):
        for j in range(k):
            if np.isfinite(grid[i, j]):
                ax_x.text(j, i, f"{grid[i, j]:+.2f}", ha="center", va="center", fontsize=9,
                          color="white" if abs(grid[i, j]) > 0.6 * lim else "black")
    ax_x.set_xticks(range(k), [display_name(a, 22) for a in order], rotation=30, ha="right")
    ax_x.set_yticks(range(k), [display_name(a, 22) for a in order])
    ax_x.set_title("points per game, row vs column")
    fig.colorbar(im, ax=ax_x, shrink=0.8)
    fig.suptitle(f"{summary['variant']}: {summary['mode']}, {summary['games_per_pairing']} games per pairing")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    write_atomic(path, buf.getvalue())
    return True


def _file_stem(name: str) -> str:
    from ..matfile import mat_name
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "_", mat_name(name)).strip("_") or "agent"


def write_outputs(out: Path, config: TournamentConfig, summary: dict,
                  games: dict[tuple[str, str, int], GameRecord], log: Callable[[str], None]) -> list[Path]:
    """Write summary.json, summary.csv, the picture and the .mat files; the paths written."""
    written = [out / SUMMARY_JSON, out / SUMMARY_CSV]
    write_atomic(written[0], json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    write_atomic(written[1], summary_csv(summary))
    if plot_summary(summary, out / PICTURE):
        written.append(out / PICTURE)
    else:
        log("no picture: matplotlib is not installed (pip install 'nardy-ai[plot]')")
    if not config.rules().is_long and config.stakes == "none":   # .mat files: cubeless games only
        from ..matfile import write_mat
        (out / MATCH_DIR).mkdir(exist_ok=True)
        for n, (a, b) in enumerate(config.pairings(), 1):
            path = out / MATCH_DIR / f"{n:02d}-{_file_stem(a)}-vs-{_file_stem(b)}.mat"
            text = write_mat([games[(a, b, i)] for i in range(config.games)], a, b,
                             event=f"nardy tournament, seed {config.seed}: {a} vs {b}")
            write_atomic(path, text)
            written.append(path)
    return written
