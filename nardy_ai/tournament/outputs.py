"""Tournament outputs: summary JSON and CSV, the printed table, the plot, the match files (see :mod:`nardy_ai.tournament`)."""

from __future__ import annotations

import csv
import io
import json
import re
import textwrap
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..errors import NardyError
from ..files import write_atomic
from ..game import GameRecord
from ..registry import short_name
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


#: Columns of the printed summary: every line of :func:`format_summary` fits a terminal this wide.
SCREEN_WIDTH = 100
#: Longest agent name in the printed tables; a longer one is cut in the middle (the summary's
#: list of agents gives the whole spec).
NAME_WIDTH = 32
#: Widest cross-table cell (``+0.12±0.05``): names at most this long head the columns, else ranks.
CELL_WIDTH = 12


def _registry_name(spec: str, variant: str | None) -> str | None:
    """The registry's name of a ``td:`` spec on a registered net (``bg-champion``, search
    suffix kept: ``bg-champion@1ply``); None for any other spec."""
    try:
        return short_name(spec, variant)
    except NardyError:                   # a name is a nicety: an unknown variant gives none
        return None


def _path_parts(spec: str) -> tuple[str, list[str]] | None:
    """``(prefix, parts of the argument split at /)`` for a spec whose argument is a path
    (no spaces or quotes, at least one ``/``); None for others (``ext:"cmd"``, ``random``)."""
    prefix, sep, arg = spec.partition(":")
    if not sep or "/" not in arg or any(c in arg for c in " \t\"'"):
        return None
    return prefix, arg.split("/")


def _cut(name: str, width: int) -> str:
    """``name`` cut to ``width`` characters.  A path-like name (``td:a/b/c.pt``) loses the middle
    of its longest folders first, down to 4 characters each, so that every part keeps its head
    and end and the file name stays whole where it can; any other name (or a path still too
    long) loses its middle, so that its kind (the prefix) and its end both stay readable."""
    if len(name) <= width:
        return name
    parts = re.split(r"(?<=[:/])", name)          # "td:", "a/", "b/", "c.pt": the separators kept
    keep = [len(p) for p in parts]
    folders = range(1, len(parts) - 1)
    while sum(keep) > width and folders:
        i = max(folders, key=lambda j: (keep[j], j))
        if keep[i] <= 4:
            break
        keep[i] -= 1
    if sum(keep) <= width:
        return "".join(_cut_middle(p, k) for p, k in zip(parts, keep))
    return _cut_middle(name, width)


def _cut_middle(text: str, width: int) -> str:
    """``text`` with its middle replaced by ``…`` so that it is ``width`` characters long."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def display_name(spec: str, width: int | None = None, variant: str | None = None) -> str:
    """One agent spec shortened for benchmark tables: its registry name, or for a path argument
    its last two parts (``td:runs/x/td80/checkpoint.pt`` -> ``td:td80/checkpoint.pt``), cut to
    ``width`` characters when given.  Tables of several agents use :func:`display_names`, which
    keeps their names distinct."""
    return display_names([spec], width, variant)[spec]


def display_names(specs: Sequence[str], width: int | None = None,
                  variant: str | None = None) -> dict[str, str]:
    """Distinct short names of agents for tables and the progress bar.

    A registered net's registry name (``bg-champion``, search suffix kept: ``bg-champion@1ply``;
    where two variants' entries share a file, ``variant``'s); else a path argument's shortest
    distinct tail of at least two parts (``td:td80/checkpoint.pt``, or
    ``td:backgammon/td80/checkpoint.pt`` where another variant's ``td80`` is among ``specs``);
    else the spec.  With ``width``, longer names are cut (:func:`_cut`); names that would then
    coincide end in their position in ``specs`` (``#3``)."""
    specs = list(dict.fromkeys(specs))
    names = {s: _registry_name(s, variant) for s in specs}
    parts = {s: _path_parts(s) for s in specs}
    depth = {s: 2 for s in specs if names[s] is None and parts[s] is not None}

    def tail(s: str) -> str:
        if s in depth:
            prefix, p = parts[s]
            return f"{prefix}:{'/'.join(p[-depth[s]:])}"
        return names[s] or s

    while True:                          # lengthen the tails of names that coincide
        shown = {s: tail(s) for s in specs}
        seen = list(shown.values())
        clash = [s for s in depth if seen.count(shown[s]) > 1 and depth[s] < len(parts[s][1])]
        if not clash:
            break
        for s in clash:
            depth[s] += 1
    seen = list(shown.values())
    shown = {s: n if seen.count(n) == 1 else s for s, n in shown.items()}    # a name that is a spec
    if width is not None:
        cut = {s: _cut(n, width) for s, n in shown.items()}
        seen = list(cut.values())
        for i, s in enumerate(specs, 1):
            if seen.count(cut[s]) > 1:
                mark = f"#{i}"
                cut[s] = _cut_middle(shown[s], width - len(mark)) + mark
        shown = cut
    return shown


def fold_table(key_head: str, keys: Sequence[str], columns: Sequence[tuple[str, Sequence[str]]],
               width: int = SCREEN_WIDTH) -> list[str]:
    """A table as lines no longer than ``width``: a key column (left-aligned) and the
    ``(header, cells)`` columns (right-aligned), folded into blocks of columns that fit, each
    block repeating the key column, blocks separated by an empty line.  (A single column wider
    than ``width`` gets a block of its own.)"""
    kw = max([len(key_head), *map(len, keys)])
    widths = [max([len(h), *map(len, cells)]) for h, cells in columns]
    blocks, block, used = [], [], kw
    for j, w in enumerate(widths):
        if block and used + 2 + w > width:
            blocks.append(block)
            block, used = [], kw
        block.append(j)
        used += 2 + w
    if block or not blocks:
        blocks.append(block)
    lines: list[str] = []
    for b in blocks:
        if lines:
            lines.append("")
        lines.append((f"{key_head:<{kw}}" + "".join(f"  {columns[j][0]:>{widths[j]}}" for j in b)).rstrip())
        for i, k in enumerate(keys):
            lines.append((f"{k:<{kw}}" + "".join(f"  {columns[j][1][i]:>{widths[j]}}" for j in b)).rstrip())
    return lines


def _prose(text: str, indent: str = "") -> list[str]:
    """A sentence wrapped to :data:`SCREEN_WIDTH` (long words broken)."""
    return textwrap.wrap(text, SCREEN_WIDTH, subsequent_indent=indent, break_on_hyphens=False) or [""]


def format_summary(summary: dict) -> str:
    """The ranking (Elo), the cross-table and (with stakes) the cube figures as text for a
    terminal :data:`SCREEN_WIDTH` columns wide, whatever the number of agents: names shortened
    (:func:`display_names`, at most :data:`NAME_WIDTH`), wide tables folded (:func:`fold_table`)."""
    names = summary["result_levels"]
    ranking = summary["ranking"]
    order = [r["agent"] for r in ranking]
    shown = display_names(order, NAME_WIDTH, summary["variant"])
    pairs = summary["games_per_pairing"] // 2
    lines = _prose(f"{summary['variant']} v{summary['variant_version']}"
                   + (f" {summary['options']}" if summary["options"] else "")
                   + f", {summary['mode']}: {len(ranking)} agents,")
    lines.append(f"{summary['games_per_pairing']} games per pairing ({pairs} duplicate-dice "
                 f"pair{'s' * (pairs != 1)}), {summary['games']} games, seed {summary['seed']}"
                 + (", dice shared by the pairings" if summary.get("dice") == "shared" else ""))
    renamed = [a for a in order if shown[a] != a]
    if renamed:
        lines.append("Agents named here by short names:")
        for a in renamed:
            lines += _prose(f"  {shown[a]} = {a}", "      ")
    lines.append("")
    lines += _prose("Ranking. Elo: maximum likelihood on wins, mean 0, 95% interval from the Hessian. "
                    "Points per game with 95% CI over duplicate pairs.")
    if len(names) > 1:
        lines += _prose(f"{', '.join(n + ' %' for n in names[1:])}: share of games won at that level or higher.")

    def ci(pair, fmt):
        return f"[{fmt % pair[0]}, {fmt % pair[1]}]" if pair else "n/a"

    keys = [f"{r['rank']:>2}  {shown[r['agent']]}" for r in ranking]
    columns = [("Elo", [f"{r['elo']:+.0f}" for r in ranking]),
               ("95% CI", [ci(r["elo_ci95"], "%+.0f") for r in ranking]),
               ("games", [str(r["games"]) for r in ranking]),
               ("pts/game", [f"{r['points_per_game']:+.3f}" for r in ranking]),
               ("95% CI", [ci(r["points_per_game_ci95"], "%+.2f") for r in ranking]),
               ("win %", [f"{100 * r['win_rate']:.1f}" for r in ranking]),
               *[(n + " %", [f"{100 * r['win_rates_by_level'][n]:.1f}" for r in ranking]) for n in names[1:]]]
    lines += fold_table(" #  agent", keys, columns)

    half = {}
    for p in summary["pairings"]:
        pci = p["points_per_game_ci95"]
        h = (pci[1] - pci[0]) / 2 if pci else float("nan")
        half[tuple(p["agents"])] = half[tuple(p["agents"][::-1])] = h
    by_name = all(len(shown[a]) <= CELL_WIDTH for a in order)
    lines += [""] + _prose("Cross-table: points per game of the row agent against the column agent "
                           "(± 95% CI half-width)" + ("" if by_name else "; columns by rank"))
    columns = []
    for y in order:
        cells = []
        for x in order:
            v = summary["cross_table"][x][y]
            cells.append("·" if x == y else "" if v is None else f"{v:+.2f}±{half[(x, y)]:.2f}")
        columns.append((shown[y] if by_name else f"#{order.index(y) + 1}", cells))
    lines += fold_table("", keys if not by_name else [shown[x] for x in order], columns)

    if "stakes" in summary:
        lines += [""] + _prose(f"Stakes ({summary['stakes']}): raises offered, and taken / passed / beavered "
                               f"when offered; mean final stake of the agent's games")
        cube = [r["cube"] for r in ranking]
        lines += fold_table("", [shown[a] for a in order], [
            ("offered", [str(c["doubles"]) for c in cube]), ("received", [str(c["doubles_received"]) for c in cube]),
            ("takes", [str(c["takes"]) for c in cube]), ("passes", [str(c["passes"]) for c in cube]),
            ("beavers", [str(c["beavers"]) for c in cube]),
            ("mean stake", [f"{c['mean_stake']:.2f}" for c in cube])])
        lines += [""] + _prose("Duplicate pairs won by the first agent of each pairing, of the pairs decided (95% "
                               "Wilson interval): a figure that a few games at huge stakes cannot swamp"
                               + ("" if by_name else "; agents by rank"))
        label = {a: shown[a] if by_name else f"#{order.index(a) + 1}" for a in order}
        decided = [p for p in summary["pairings"] if p.get("decided_pairs_won_ci95")]
        lines += fold_table("pairing", [f"{label[p['agents'][0]]} vs {label[p['agents'][1]]}" for p in decided], [
            ("won", [str(p["pairs_won"]) for p in decided]), ("lost", [str(p["pairs_lost"]) for p in decided]),
            ("won %", [f"{100 * p['decided_pairs_won_share']:.1f}" for p in decided]),
            ("95% CI", [ci([100 * x for x in p["decided_pairs_won_ci95"]], "%.1f") for p in decided])])
    if summary.get("paired"):
        opp = summary["paired"][0]["opponent"]
        lines += [""] + _prose(f"Paired on shared dice: points per game of the first agent minus the second "
                               f"against {shown.get(opp, opp)}, 95% CI over the duplicate pairs' differences; "
                               f"'unpaired' is the interval of two matches on independent dice")
        rows = summary["paired"]
        lines += fold_table("agents", [f"{shown[p['agents'][0]]} - {shown[p['agents'][1]]}" for p in rows], [
            ("diff", [f"{p['difference']:+.3f}" for p in rows]),
            ("95% CI", [ci(p["ci95"], "%+.3f") for p in rows]),
            ("unpaired", [ci(p["unpaired_ci95"], "%+.3f") for p in rows]),
            ("corr", ["n/a" if p["correlation"] is None else f"{p['correlation']:.2f}" for p in rows])])
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
    short, shorter = display_names(order, 24, summary["variant"]), display_names(order, 22, summary["variant"])
    ax_elo.set_yticks(y, [short[a] for a in order])
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
    ax_x.set_xticks(range(k), [shorter[a] for a in order], rotation=30, ha="right")
    ax_x.set_yticks(range(k), [shorter[a] for a in order])
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
    """Write summary.json, summary.csv, the picture and, when ``config.mat`` asks for them (short
    nardy, no stakes), the .mat files; the paths written."""
    written = [out / SUMMARY_JSON, out / SUMMARY_CSV]
    write_atomic(written[0], json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    write_atomic(written[1], summary_csv(summary))
    if plot_summary(summary, out / PICTURE):
        written.append(out / PICTURE)
    else:
        log("no picture: matplotlib is not installed (pip install 'nardy-ai[plot]')")
    if config.mat and (config.rules().is_long or config.stakes != "none"):
        log(".mat files: not written (gnubg money sessions hold cubeless short-nardy games only)")
    elif config.mat:
        from ..matfile import write_mat
        (out / MATCH_DIR).mkdir(exist_ok=True)
        for n, (a, b) in enumerate(config.pairings(), 1):
            path = out / MATCH_DIR / f"{n:02d}-{_file_stem(a)}-vs-{_file_stem(b)}.mat"
            text = write_mat([games[(a, b, i)] for i in range(config.games)], a, b,
                             event=f"nardy tournament, seed {config.seed}: {a} vs {b}")
            write_atomic(path, text)
            written.append(path)
    return written


def _size(n: int) -> str:
    """A file size for people: ``812 B``, ``4.2 kB``, ``3.1 MB`` (powers of 1000)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def written_summary(out: Path, paths: Sequence[Path]) -> str:
    """The files a tournament wrote, summarised by folder for the terminal:
    ``written: tournaments/x/ (games.jsonl 3.1 MB, summary.json, ..., matches/ 190 files 103.2 MB)``.
    Files in ``out`` are named (with their size from 100 kB up); a subfolder is counted, with
    its total size; a path outside ``out`` is named whole."""
    out = Path(out)
    parts: list[str] = []
    folders: dict[str, list[int]] = {}

    def size(p: Path) -> int:
        try:
            return p.stat().st_size
        except OSError:
            return 0

    for p in paths:
        p = Path(p)
        try:
            rel = p.relative_to(out)
        except ValueError:
            parts.append(str(p))
            continue
        if len(rel.parts) == 1:
            n = size(p)
            parts.append(f"{rel} {_size(n)}" if n >= 100_000 else str(rel))
        else:
            if rel.parts[0] not in folders:
                parts.append(rel.parts[0] + "/")
                folders[rel.parts[0]] = []
            folders[rel.parts[0]].append(size(p))
    text = []
    for part in parts:
        if part.endswith("/") and part[:-1] in folders:
            sizes = folders[part[:-1]]
            part += f" {len(sizes)} file{'s' * (len(sizes) != 1)} {_size(sum(sizes))}"
        text.append(part)
    return f"written: {out.as_posix().rstrip('/')}/ ({', '.join(text)})"
