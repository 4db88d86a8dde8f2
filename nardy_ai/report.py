"""``nardy report``: one self-contained HTML page for a tournament folder or a training run folder.

The page needs no network and no script: tables in HTML, figures as inline SVG. The figures
are drawn by matplotlib where it is installed (the ``report`` extra; ``--plots matplotlib``),
else by the small SVG writer here (``--plots builtin``, whose marks carry ``<title>``
tooltips); ``--plots auto`` (the default) takes matplotlib when it imports.

Tournament folder (``tournament.json``, ``summary.json``, ``games.jsonl``; ``analysis.json``
when ``nardy analyze`` or ``nardy tournament --analyze`` ran there): the standings (points per
game with 95 % intervals, Elo, win rate; error rates when analysed), points per game with
intervals, the cross-table as a heat map, each agent's running points per game against the
games it played, and, when analysed, error rates per agent by position class and for the cube.

Training run folder (``metrics.jsonl``, :mod:`training.metrics_log`): losses (the TD loss
against games and against CPU-hours; the fits' training and validation losses against
CPU-hours), gate results with their intervals per generation or round, and strength checks
(points per game against each opponent) against games (or generations, rounds) and against
CPU-hours. CPU-hours come from the lines' ``cpu_seconds`` (the run's CPU time, its worker
processes included, over every session); a run logged before that field existed is plotted
against wall-clock hours since its first line instead, and the axis says so.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import os
import re
import time
from pathlib import Path
from typing import Sequence

from .errors import NardyError
from .files import read_text, write_atomic

#: The ways ``nardy report`` draws its figures (``--plots``).
PLOTS = ("auto", "builtin", "matplotlib")
#: Series colours (colour-blind-safe, Okabe-Ito).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
WIDTH, HEIGHT = 640, 320
MARGIN = (60, 20, 30, 50)         # left, right, top, bottom (pixels)


class ReportError(NardyError):
    """A folder that holds neither a tournament nor a training run, or files that cannot be read."""


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _fmt(x: float) -> str:
    if x == 0 or not math.isfinite(x):
        return "0"
    a = abs(x)
    if a >= 1000 or a < 0.01:
        return f"{x:.3g}"
    return f"{x:.3f}".rstrip("0").rstrip(".")


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values covering ``[lo, hi]``."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step) * step
    out, t = [], start
    while t <= hi + 1e-9 * step:
        out.append(round(t, 12))
        t += step
    return out


def _range(values: Sequence[float], pad: float = 0.05) -> tuple[float, float]:
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return 0.0, 1.0
    lo, hi = min(vals), max(vals)
    if hi == lo:
        lo, hi = lo - 0.5 if lo else -0.5, hi + 0.5 if hi else 0.5
    d = (hi - lo) * pad
    return lo - d, hi + d


class _Axes:
    """Linear x/y scales of one figure and the SVG of its frame, ticks and labels."""

    def __init__(self, xr, yr, xlabel: str, ylabel: str, w=WIDTH, h=HEIGHT):
        self.xr, self.yr, self.w, self.h = xr, yr, w, h
        self.l, self.r, self.t, self.b = MARGIN
        self.xlabel, self.ylabel = xlabel, ylabel

    def x(self, v: float) -> float:
        lo, hi = self.xr
        return self.l + (v - lo) / (hi - lo) * (self.w - self.l - self.r)

    def y(self, v: float) -> float:
        lo, hi = self.yr
        return self.h - self.b - (v - lo) / (hi - lo) * (self.h - self.t - self.b)

    def frame(self, xticks: bool = True) -> list[str]:
        out = [f'<rect x="{self.l}" y="{self.t}" width="{self.w - self.l - self.r}" '
               f'height="{self.h - self.t - self.b}" fill="none" stroke="#999"/>']
        for v in _ticks(*self.yr):
            y = self.y(v)
            out.append(f'<line x1="{self.l}" x2="{self.w - self.r}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>'
                       f'<text x="{self.l - 4}" y="{y + 4:.1f}" text-anchor="end">{_fmt(v)}</text>')
        if xticks:
            for v in _ticks(*self.xr):
                x = self.x(v)
                out.append(f'<text x="{x:.1f}" y="{self.h - self.b + 16}" text-anchor="middle">{_fmt(v)}</text>')
        out.append(f'<text x="{(self.l + self.w - self.r) / 2:.0f}" y="{self.h - 8}" text-anchor="middle">'
                   f'{_e(self.xlabel)}</text>')
        out.append(f'<text transform="translate(14 {(self.t + self.h - self.b) / 2:.0f}) rotate(-90)" '
                   f'text-anchor="middle">{_e(self.ylabel)}</text>')
        return out


def _svg(body: list[str], title: str, w=WIDTH, h=HEIGHT) -> str:
    return (f'<figure><svg class="figure" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
            f'viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="11" role="img" aria-label="{_e(title)}">'
            f'<rect width="{w}" height="{h}" fill="#fff"/>' + "".join(body) + f"</svg><figcaption>{_e(title)}</figcaption></figure>")


def _legend(names: Sequence[str], x: float, y: float) -> list[str]:
    out = []
    for i, n in enumerate(names):
        c = PALETTE[i % len(PALETTE)]
        out.append(f'<rect x="{x}" y="{y + 14 * i - 8}" width="10" height="10" fill="{c}"/>'
                   f'<text x="{x + 14}" y="{y + 14 * i + 1}">{_e(n)}</text>')
    return out


def line_figure(series: dict[str, tuple[Sequence[float], Sequence[float]]], title: str, xlabel: str,
                ylabel: str, bands: dict[str, tuple[Sequence[float], Sequence[float]]] | None = None,
                plots: str = "builtin") -> str:
    """Lines (one per series ``name -> (xs, ys)``), with optional interval ``bands`` per
    series (``name -> (lows, highs)``, drawn as whiskers at each point); ``plots``: who draws
    it, ``"builtin"`` or ``"matplotlib"``."""
    bands = bands or {}
    if plots == "matplotlib":
        return _mpl_line(series, title, xlabel, ylabel, bands)
    xs = [x for s in series.values() for x in s[0]]
    ys = [y for s in series.values() for y in s[1]] + [v for b in bands.values() for part in b for v in part]
    ax = _Axes(_range(xs, 0.02), _range(ys), xlabel, ylabel)
    body = ax.frame()
    for i, (name, (sx, sy)) in enumerate(series.items()):
        c = PALETTE[i % len(PALETTE)]
        pts = [(ax.x(a), ax.y(b)) for a, b in zip(sx, sy) if b is not None and math.isfinite(b)]
        if len(pts) > 1:
            body.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.5" points="'
                        + " ".join(f"{a:.1f},{b:.1f}" for a, b in pts) + '"/>')
        if name in bands:
            for a, lo, hi in zip(sx, *bands[name]):
                body.append(f'<line x1="{ax.x(a):.1f}" x2="{ax.x(a):.1f}" y1="{ax.y(lo):.1f}" y2="{ax.y(hi):.1f}" '
                            f'stroke="{c}"/>')
        if len(pts) <= 60:
            for (a, b), vx, vy in zip(pts, sx, sy):
                body.append(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="2.5" fill="{c}"><title>{_e(name)}: '
                            f'{_fmt(vx)}, {_fmt(vy)}</title></circle>')
    body += _legend(list(series), ax.l + 8, ax.t + 12)
    return _svg(body, title)


def interval_figure(labels: Sequence[str], values: Sequence[float], lows: Sequence[float],
                    highs: Sequence[float], title: str, xlabel: str, plots: str = "builtin") -> str:
    """One row per label: a dot at the value and a whisker over its interval."""
    if plots == "matplotlib":
        return _mpl_interval(labels, values, lows, highs, title, xlabel)
    h = MARGIN[2] + MARGIN[3] + 24 * len(labels)
    left = 12 + 7 * max([4] + [len(s) for s in labels])
    ax = _Axes(_range(list(lows) + list(highs) + [0.0]), (0, len(labels)), xlabel, "", h=h)
    ax.l = left
    body = [f'<rect x="{ax.l}" y="{ax.t}" width="{ax.w - ax.l - ax.r}" height="{h - ax.t - ax.b}" '
            f'fill="none" stroke="#999"/>']
    for v in _ticks(*ax.xr):
        body.append(f'<line x1="{ax.x(v):.1f}" x2="{ax.x(v):.1f}" y1="{ax.t}" y2="{h - ax.b}" stroke="#eee"/>'
                    f'<text x="{ax.x(v):.1f}" y="{h - ax.b + 16}" text-anchor="middle">{_fmt(v)}</text>')
    body.append(f'<line x1="{ax.x(0):.1f}" x2="{ax.x(0):.1f}" y1="{ax.t}" y2="{h - ax.b}" stroke="#666"/>')
    body.append(f'<text x="{(ax.l + ax.w - ax.r) / 2:.0f}" y="{h - 8}" text-anchor="middle">{_e(xlabel)}</text>')
    for i, (lab, v, lo, hi) in enumerate(zip(labels, values, lows, highs)):
        y = ax.t + 24 * i + 12
        c = PALETTE[0]
        body.append(f'<text x="{ax.l - 6}" y="{y + 4}" text-anchor="end">{_e(lab)}</text>'
                    f'<line x1="{ax.x(lo):.1f}" x2="{ax.x(hi):.1f}" y1="{y}" y2="{y}" stroke="{c}" stroke-width="2"/>'
                    f'<circle cx="{ax.x(v):.1f}" cy="{y}" r="4" fill="{c}"><title>{_e(lab)}: {_fmt(v)} '
                    f'[{_fmt(lo)}, {_fmt(hi)}]</title></circle>')
    return _svg(body, title, h=h)


def heatmap_figure(labels: Sequence[str], matrix: Sequence[Sequence[float | None]], title: str,
                   plots: str = "builtin") -> str:
    """A square table of numbers coloured by sign and size (blue: the row agent wins points,
    red: it loses them), the value written in each cell."""
    if plots == "matplotlib":
        return _mpl_heatmap(labels, matrix, title)
    n = len(labels)
    cell = 56
    left = 12 + 7 * max([4] + [len(s) + 4 for s in labels])
    top = 30
    w, h = left + cell * n + 10, top + cell * n + 10
    vals = [abs(v) for row in matrix for v in row if v is not None]
    scale = max(vals) if vals and max(vals) > 0 else 1.0
    body = []
    for j, lab in enumerate(labels):
        body.append(f'<text x="{left + cell * j + cell / 2:.0f}" y="{top - 8}" text-anchor="middle">#{j + 1}</text>')
    for i, lab in enumerate(labels):
        y = top + cell * i
        body.append(f'<text x="{left - 6}" y="{y + cell / 2 + 4:.0f}" text-anchor="end">#{i + 1} {_e(lab)}</text>')
        for j in range(n):
            v = matrix[i][j]
            x = left + cell * j
            if v is None:
                body.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="#f4f4f4" stroke="#fff"/>')
                continue
            a = min(1.0, abs(v) / scale)
            rgb = (int(255 - a * (255 - 0)), int(255 - a * (255 - 114)), int(255 - a * (255 - 178))) if v >= 0 else \
                (int(255 - a * (255 - 213)), int(255 - a * (255 - 94)), int(255 - a * (255 - 0)))
            body.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="rgb{rgb}" stroke="#fff">'
                        f'<title>{_e(labels[i])} vs {_e(labels[j])}: {v:+.3f}</title></rect>'
                        f'<text x="{x + cell / 2:.0f}" y="{y + cell / 2 + 4:.0f}" text-anchor="middle">{v:+.2f}</text>')
    return _svg(body, title, w=w, h=h)


def bar_figure(groups: Sequence[str], series: dict[str, tuple[Sequence[float | None], Sequence[float | None]]],
               title: str, ylabel: str, plots: str = "builtin") -> str:
    """Grouped bars: per group one bar per series (``name -> (values, standard errors)``), with
    ± 1 standard error whiskers; a missing value leaves a gap."""
    if plots == "matplotlib":
        return _mpl_bar(groups, series, title, ylabel)
    tops = [(v or 0) + (e or 0) for vs, es in series.values() for v, e in zip(vs, es)]
    ax = _Axes((0, len(groups)), (0, max([1.0] + tops) * 1.08), "", ylabel)
    body = ax.frame(xticks=False)
    k = max(1, len(series))
    width = 0.8 / k
    for gi, g in enumerate(groups):
        body.append(f'<text x="{ax.x(gi + 0.5):.1f}" y="{ax.h - ax.b + 16}" text-anchor="middle">{_e(g)}</text>')
    for si, (name, (vs, es)) in enumerate(series.items()):
        c = PALETTE[si % len(PALETTE)]
        for gi, (v, e) in enumerate(zip(vs, es)):
            if v is None:
                continue
            x0 = ax.x(gi + 0.1 + si * width)
            x1 = ax.x(gi + 0.1 + (si + 1) * width)
            body.append(f'<rect x="{x0:.1f}" y="{ax.y(v):.1f}" width="{max(x1 - x0 - 1, 1):.1f}" '
                        f'height="{max(ax.y(0) - ax.y(v), 0.5):.1f}" fill="{c}"><title>{_e(name)}, {_e(groups[gi])}: '
                        f'{_fmt(v)}' + (f' ± {_fmt(e)}' if e is not None else "") + '</title></rect>')
            if e:
                xm = (x0 + x1) / 2
                body.append(f'<line x1="{xm:.1f}" x2="{xm:.1f}" y1="{ax.y(v - e):.1f}" y2="{ax.y(v + e):.1f}" '
                            f'stroke="#333"/>')
    body += _legend(list(series), ax.w - ax.r - 200, ax.t + 12)
    return _svg(body, title)


# --- the same figures drawn by matplotlib ----------------------------------------------------

def matplotlib_version() -> str | None:
    """The installed matplotlib's version, None when it does not import."""
    try:
        import matplotlib
    except ImportError:
        return None
    return matplotlib.__version__


def resolve_plots(plots: str = "auto") -> str:
    """``"builtin"`` or ``"matplotlib"``: who draws the figures for ``--plots plots``
    (``auto``: matplotlib when it imports). ReportError when matplotlib is asked for and missing."""
    if plots not in PLOTS:
        raise ReportError(f"--plots: {plots!r} is not one of {', '.join(PLOTS)}")
    if plots == "builtin":
        return plots
    if matplotlib_version() is None:
        if plots == "auto":
            return "builtin"
        raise ReportError("--plots matplotlib: matplotlib is not installed (pip install -e '.[report]' "
                          "from the repository, or --plots builtin)")
    return "matplotlib"


def _mpl_figure(w: float = WIDTH, h: float = HEIGHT):
    """A matplotlib Figure of ``w`` x ``h`` CSS pixels (no pyplot: no global state, no window)."""
    from matplotlib.figure import Figure
    return Figure(figsize=(w / 96, h / 96), layout="constrained")


_MPL_RC = {"svg.fonttype": "none", "font.size": 8, "font.family": "sans-serif", "axes.edgecolor": "#999",
           "axes.grid": True, "grid.color": "#eee", "axes.axisbelow": True, "legend.frameon": False}


def _mpl_svg(fig, title: str) -> str:
    """The figure as inline SVG text (text kept as text, no metadata, ids made from the title:
    unique on the page and the same every time), wrapped like the built-in figures."""
    import io

    import matplotlib
    buf = io.StringIO()
    with matplotlib.rc_context({**_MPL_RC, "svg.hashsalt": title}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    svg = text[text.index("<svg"):]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    # matplotlib numbers its elements the same way in every figure: one prefix a figure keeps
    # the ids of a page unique (the references follow)
    p = "f" + hashlib.sha1(title.encode()).hexdigest()[:6] + "-"
    svg = svg.replace(' id="', f' id="{p}').replace("url(#", f"url(#{p}").replace('href="#', f'href="#{p}')
    svg = svg.replace("<svg ", f'<svg class="figure" role="img" aria-label="{_e(title)}" ', 1)
    return f"<figure>{svg}<figcaption>{_e(title)}</figcaption></figure>"


def _mpl(draw, title: str, w: float = WIDTH, h: float = HEIGHT) -> str:
    """Make a figure, let ``draw(fig)`` fill it under the report's style, return its SVG."""
    import matplotlib
    with matplotlib.rc_context(_MPL_RC):
        fig = _mpl_figure(w, h)
        draw(fig)
    return _mpl_svg(fig, title)


def _mpl_line(series, title, xlabel, ylabel, bands) -> str:
    def draw(fig):
        ax = fig.add_subplot()
        for i, (name, (sx, sy)) in enumerate(series.items()):
            c = PALETTE[i % len(PALETTE)]
            pts = [(a, b) for a, b in zip(sx, sy) if b is not None and math.isfinite(b)]
            ax.plot([a for a, _ in pts], [b for _, b in pts], color=c, lw=1.5, label=name,
                    marker="o" if len(pts) <= 60 else None, ms=3)
            if name in bands:
                ax.vlines(list(sx), *bands[name], color=c, lw=1)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend(loc="best")
    return _mpl(draw, title)


def _mpl_interval(labels, values, lows, highs, title, xlabel) -> str:
    def draw(fig):
        ax = fig.add_subplot()
        ys = list(range(len(labels)))
        ax.hlines(ys, lows, highs, color=PALETTE[0], lw=2)
        ax.plot(values, ys, "o", color=PALETTE[0], ms=5)
        ax.axvline(0, color="#666", lw=1)
        ax.set_yticks(ys, labels)
        ax.set_ylim(len(labels) - 0.5, -0.5)          # the first row at the top
        ax.set_xlabel(xlabel)
        ax.grid(axis="y", visible=False)
    return _mpl(draw, title, h=MARGIN[2] + MARGIN[3] + 24 * max(3, len(labels)))


def _mpl_heatmap(labels, matrix, title) -> str:
    import numpy as np
    from matplotlib.colors import LinearSegmentedColormap
    n = len(labels)
    cell = 56

    def draw(fig):
        ax = fig.add_subplot()
        vals = np.array([[np.nan if v is None else v for v in row] for row in matrix], dtype=float)
        scale = float(np.nanmax(np.abs(vals))) if np.isfinite(vals).any() and np.nanmax(np.abs(vals)) > 0 else 1.0
        cmap = LinearSegmentedColormap.from_list("winloss", ["#D55E00", "#ffffff", "#0072B2"])
        cmap = cmap.with_extremes(bad="#f4f4f4")
        ax.imshow(np.ma.masked_invalid(vals), cmap=cmap, vmin=-scale, vmax=scale)
        for i in range(n):
            for j in range(n):
                if np.isfinite(vals[i, j]):
                    ax.text(j, i, f"{vals[i, j]:+.2f}", ha="center", va="center",
                            color="#fff" if abs(vals[i, j]) > 0.6 * scale else "#222")
        ax.set_xticks(range(n), [f"#{j + 1}" for j in range(n)])
        ax.xaxis.tick_top()
        ax.set_yticks(range(n), [f"#{i + 1} {lab}" for i, lab in enumerate(labels)])
        ax.grid(False)
    left = 12 + 7 * max([4] + [len(s) + 4 for s in labels])
    return _mpl(draw, title, w=left + cell * n + 40, h=30 + cell * n + 20)


def _mpl_bar(groups, series, title, ylabel) -> str:
    def draw(fig):
        ax = fig.add_subplot()
        k = max(1, len(series))
        width = 0.8 / k
        for si, (name, (vs, es)) in enumerate(series.items()):
            xs = [gi + 0.1 + (si + 0.5) * width for gi, v in enumerate(vs) if v is not None]
            ys = [v for v in vs if v is not None]
            err = [e or 0 for v, e in zip(vs, es) if v is not None]
            ax.bar(xs, ys, width * 0.95, yerr=err, color=PALETTE[si % len(PALETTE)], label=name,
                   error_kw={"ecolor": "#333", "lw": 1})
        ax.set_xticks([gi + 0.5 for gi in range(len(groups))], groups)
        ax.set_xlim(0, len(groups))
        ax.set_ylabel(ylabel)
        ax.legend(loc="best")
        ax.grid(axis="x", visible=False)
    return _mpl(draw, title)


# --- pages -----------------------------------------------------------------------------------

STYLE = """body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right}
td,th{white-space:nowrap}.l{text-align:left}figure{margin:1.5em 0}figcaption{color:#555;font-size:90%}
.note{color:#555;font-size:90%}div.t{overflow-x:auto}"""


def _page(title: str, parts: list[str], plots: str = "builtin") -> str:
    who = f"matplotlib {matplotlib_version()}" if plots == "matplotlib" else "nardy report's own SVG writer"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + _e(title) +
            "</title><style>" + STYLE + "</style></head><body><h1>" + _e(title) + "</h1>\n" +
            "\n".join(parts) + f'\n<p class="note">Figures drawn by {_e(who)}.</p>\n</body></html>\n')


def _table(header: Sequence[str], rows: Sequence[Sequence], left: int = 1) -> str:
    """An HTML table; the first ``left`` columns (names) aligned left, the numbers right."""
    def cell(tag: str, i: int, c) -> str:
        return f'<{tag} class="l">{_e(c)}</{tag}>' if i < left else f"<{tag}>{_e(c)}</{tag}>"
    return ('<div class="t"><table><tr>' + "".join(cell("th", i, h) for i, h in enumerate(header)) + "</tr>" +
            "".join("<tr>" + "".join(cell("td", i, c) for i, c in enumerate(r)) + "</tr>" for r in rows)
            + "</table></div>")


def _read_json(path: Path):
    text = read_text(path, ReportError)
    try:
        return json.loads(text)
    except ValueError as e:
        raise ReportError(f"{path} is not JSON: {e}") from None


def _pm(r: dict | None) -> str:
    if not r or r.get("mean") is None:
        return "-"
    return f"{r['mean']:.1f}" + (f" ± {r['se']:.1f}" if r.get("se") is not None else "")


def tournament_page(folder: Path, plots: str = "builtin") -> str:
    """The report page of a tournament folder (figures drawn by ``plots``: builtin or matplotlib)."""
    from .tournament.gamesfile import read_games
    from .tournament.outputs import display_names
    s = _read_json(folder / "summary.json")
    agents = list(s["agents"])
    names = display_names(agents, 28, s.get("variant"))
    ranking = s["ranking"]
    found = [f for f in (folder / "analysis.json", folder / "analysis" / "analysis.json") if f.exists()]
    analysed = _read_json(found[0]) if found else None     # nardy analyze DIR --out DIR[/analysis]
    header = ["#", "agent", "points/game", "95% interval", "Elo", "Elo 95%", "win rate", "games"]
    cube = bool(analysed) and any(e["cube"]["n"] for e in analysed["agents"].values())
    if analysed:
        header += ["error mp", "checker mp"] + (["cube mp"] if cube else [])
    rows = []
    for r in ranking:
        row = [r["rank"], names[r["agent"]], f"{r['points_per_game']:+.3f}",
               f"[{r['points_per_game_ci95'][0]:+.3f}, {r['points_per_game_ci95'][1]:+.3f}]",
               f"{r['elo']:+.0f}", f"[{r['elo_ci95'][0]:+.0f}, {r['elo_ci95'][1]:+.0f}]",
               f"{r['win_rate']:.3f}", r["games"]]
        if analysed:
            e = analysed["agents"].get(r["agent"])
            row += [_pm(e and e["all"]), _pm(e and e["play"])] + ([_pm(e and e["cube"])] if cube else [])
        rows.append(row)
    mode = s.get("mode", "")
    parts = [f'<p class="note">{_e(s.get("variant", ""))} v{_e(s.get("variant_version", ""))}, {_e(mode)}, '
             f'{s.get("games", 0):,} games ({s.get("games_per_pairing", 0):,} per pairing, seed {s.get("seed", 0)})'
             + (f', stakes {_e(s["stakes"])}' if s.get("stakes") else "")
             + (", dice shared by the pairings" if s.get("dice") == "shared" else "") + '.</p>',
             "<h2>Standings</h2>", _table(header, rows, left=2),
             f'<p class="note">{_e(s.get("methods", {}).get("points_per_game", ""))}</p>']
    labels = [names[r["agent"]] for r in ranking]
    parts.append(interval_figure(labels, [r["points_per_game"] for r in ranking],
                                 [r["points_per_game_ci95"][0] for r in ranking],
                                 [r["points_per_game_ci95"][1] for r in ranking],
                                 "Points per game with 95% intervals", "points per game", plots=plots))
    order = [r["agent"] for r in ranking]
    cross = s.get("cross_table", {})
    matrix = [[cross.get(a, {}).get(b) if a != b else None for b in order] for a in order]
    parts += ["<h2>Cross-table</h2>",
              heatmap_figure(labels, matrix, "Points per game of the row agent against the column agent",
                             plots=plots)]
    if s.get("paired"):
        opp = s["paired"][0]["opponent"]

        def interval(ci):
            return f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "-"

        rows = [[f"{names.get(p['agents'][0], p['agents'][0])} - {names.get(p['agents'][1], p['agents'][1])}",
                 f"{p['difference']:+.3f}", interval(p["ci95"]), interval(p["unpaired_ci95"]),
                 "-" if p["correlation"] is None else f"{p['correlation']:.2f}", p["pairs"]] for p in s["paired"]]
        parts += [f"<h2>Paired on shared dice: against {_e(names.get(opp, opp))}</h2>",
                  _table(["agents (A - B)", "points/game", "95% interval", "unpaired 95%", "correlation",
                          "pairs"], rows),
                  f'<p class="note">{_e(s.get("methods", {}).get("paired", ""))}</p>']
    games = read_games(folder / "games.jsonl")
    if games:
        running: dict[str, tuple[list, list]] = {a: ([], []) for a in order}
        total = {a: 0.0 for a in order}
        for (a, b, _), r in games.items():        # the file's order: as the games arrived
            pts = r.points_for(a)
            for who, p in ((a, pts), (b, -pts)):
                if who in running:
                    total[who] += p
                    xs, ys = running[who]
                    xs.append(len(xs) + 1)
                    ys.append(total[who] / len(xs))
        step = max(1, max(len(v[0]) for v in running.values()) // 400)
        series = {names[a]: (xs[::step] + xs[-1:], ys[::step] + ys[-1:]) for a, (xs, ys) in running.items() if xs}
        parts += ["<h2>Points per game against games played</h2>",
                  line_figure(series, "Running points per game of each agent, in the order the games were played",
                              "games played by the agent", "points per game", plots=plots)]
    if analysed:
        parts += ["<h2>Error rates</h2>", _analysis_part(analysed, names, plots)]
    return _page(f"Tournament: {folder.name}", parts, plots)


def _analysis_part(a: dict, names: dict[str, str], plots: str = "builtin") -> str:
    """Error rates per agent by position class and for the cube (the analysis summary)."""
    agents = sorted(a["agents"], key=lambda x: a["agents"][x]["all"]["mean"] if a["agents"][x]["all"]["mean"]
                    is not None else math.inf)
    cube = any(a["agents"][ag]["cube"]["n"] for ag in agents)
    groups = list(a["classes"]) + (["cube"] if cube else [])
    series = {}
    for ag in agents:
        row = a["agents"][ag]
        cells = [row["by_class"].get(c) for c in a["classes"]] + ([row["cube"]] if cube else [])
        series[names.get(ag, ag)] = ([c["mean"] if c and c["n"] else None for c in cells],
                                     [c["se"] if c and c["n"] else None for c in cells])
    t = a["thresholds_mp"]
    rows = [[names.get(ag, ag), a["agents"][ag]["all"]["n"], _pm(a["agents"][ag]["all"]),
             _pm(a["agents"][ag]["play"]), _pm(a["agents"][ag]["double"]), _pm(a["agents"][ag]["take"]),
             a["agents"][ag]["doubtful"], a["agents"][ag]["bad"], a["agents"][ag]["very_bad"]] for ag in agents]
    return (f'<p class="note">{a["games"]} games analysed by {_e(a["reference"])}: error of each decision in '
            f'millipoints (equity of the reference\'s best choice minus that of the choice made, both valued by '
            f'the reference), ± 1 standard error with games as units. Marks: doubtful &gt; {t["doubtful"]:.0f}, '
            f'bad &gt; {t["bad"]:.0f}, very bad &gt; {t["very_bad"]:.0f} mp (gnubg\'s defaults).</p>'
            + _table(["agent", "decisions", "all", "checker", "doubling", "answering", "doubtful", "bad",
                      "very bad"], rows)
            + bar_figure(groups, series, "Error per decision by position class (checker plays) and for the cube",
                         "millipoints per decision", plots=plots))


def _metrics(path: Path) -> list[dict]:
    out = []
    lines = read_text(path, ReportError).splitlines()
    for n, line in enumerate(lines, 1):
        if line.strip():
            try:
                d = json.loads(line)
            except ValueError:
                if n == len(lines):
                    continue                    # a torn last line
                raise ReportError(f"{path} line {n}: not JSON") from None
            if isinstance(d, dict):
                out.append(d)
    return out


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


class _Hours:
    """The time axis of a training page: CPU-hours from the lines' ``cpu_seconds`` when the file
    has them, else wall-clock hours since its first line's ``time`` (runs logged before the
    CPU time was), else none (``label`` None)."""

    def __init__(self, lines: list[dict]):
        self.cpu = any(_number(d.get("cpu_seconds")) for d in lines)
        times = [d["time"] for d in lines if _number(d.get("time"))]
        self.t0 = min(times) if times else None
        if self.cpu:
            self.label, self.words = "CPU-hours", "CPU-hours (the run's processes and its workers)"
            missing = sum(not _number(d.get("cpu_seconds")) for d in lines)
            self.note = (f"CPU-hours: the lines' cpu_seconds, the CPU time of the run's processes and workers "
                         f"over every session" + (f"; {missing:,} lines logged before the run recorded CPU time "
                                                  f"are not on these axes" if missing else "") + ".")
        elif self.t0 is not None:
            self.label = "hours since the run started (wall clock: this run records no CPU time)"
            self.words = "wall-clock hours since the run started (no CPU time in this file)"
            self.note = ("This metrics file records no CPU time (written before nardy logged it): time axes show "
                         "wall-clock hours since its first line, stops and resumes included.")
        else:
            self.label = self.words = self.note = None

    def __call__(self, d: dict) -> float | None:
        """Hours at line ``d`` on this axis, None when the line has no such value."""
        if self.cpu:
            return d["cpu_seconds"] / 3600 if _number(d.get("cpu_seconds")) else None
        if self.t0 is not None and _number(d.get("time")):
            return (d["time"] - self.t0) / 3600
        return None

    def series(self, lines: list[dict], key: str) -> tuple[list, list]:
        """``(hours, values)`` of the lines that have both."""
        pts = [(self(d), d[key]) for d in lines if _number(d.get(key))]
        pts = [(x, y) for x, y in pts if x is not None]
        return [x for x, _ in pts], [y for _, y in pts]


def _step_of(d: dict) -> tuple[str, float] | None:
    """Where a line stands in the run: games of self-play, else the generation or the round."""
    for key, name in (("games", "games of self-play"), ("generation", "generation"), ("round", "round")):
        if _number(d.get(key)):
            return name, d[key]
    return None


def training_page(folder: Path, plots: str = "builtin") -> str:
    """The report page of a training run folder (its ``metrics.jsonl``; figures drawn by
    ``plots``: builtin or matplotlib)."""
    m = _metrics(folder / "metrics.jsonl")
    hours = _Hours(m)
    parts = [f'<p class="note">{len(m):,} lines of {_e(folder / "metrics.jsonl")}.'
             + (f" {_e(hours.note)}" if hours.note else "") + "</p>"]
    figures = 0
    # losses
    td = [d for d in m if d.get("kind") == "train" and _number(d.get("loss"))]
    if td:
        parts += ["<h2>Losses</h2>", line_figure({"TD loss": ([d.get("games", i) for i, d in enumerate(td)],
                                                               [d["loss"] for d in td])},
                                                  "Training loss against games of self-play", "games", "loss",
                                                  plots=plots)]
        figures += 1
        xs, ys = hours.series(td, "loss")
        if xs:
            parts.append(line_figure({"TD loss": (xs, ys)}, f"Training loss against {hours.words}", hours.label,
                                     "loss", plots=plots))
            figures += 1
    fits = [d for d in m if _number(d.get("val_loss")) and _number(d.get("train_loss"))]
    if fits:
        timed = all(hours(d) is not None for d in fits)
        series: dict[str, tuple[list, list]] = {}
        for i, d in enumerate(fits, 1):
            net = d.get("net", "net")
            for part in ("train", "val"):
                xs, ys = series.setdefault(f"{net} {part}", ([], []))
                xs.append(hours(d) if timed else i)
                ys.append(d[f"{part}_loss"])
        if not td:
            parts.append("<h2>Losses</h2>")
        if timed:
            parts.append(line_figure(series, f"Training and validation loss of each fit epoch against {hours.words}",
                                     hours.label, "loss", plots=plots))
        else:
            parts.append(line_figure(series, "Training and validation loss of each fit epoch (in the order they "
                                     "ran)", "fit epochs", "loss", plots=plots))
        figures += 1
    gates = [d for d in m if d.get("kind") == "gate" and _number(d.get("points_per_game"))]
    if gates:
        steps = [_step_of(d) for d in gates]
        gname = next((s[0] for s in steps if s and s[0] != "games of self-play"), "gate")
        xs = [s[1] if s and s[0] == gname else i + 1 for i, (s, d) in enumerate(zip(steps, gates))]
        parts += ["<h2>Gates</h2>",
                  line_figure({"candidate vs current": (xs, [d["points_per_game"] for d in gates])},
                              "Gate: points per game of each candidate against the current net (95% intervals)",
                              gname, "points per game",
                              {"candidate vs current": ([d.get("ci95_low", d["points_per_game"]) for d in gates],
                                                        [d.get("ci95_high", d["points_per_game"]) for d in gates])},
                              plots=plots),
                  _table([gname, "points/game", "95% interval", "promoted"],
                         [[x, f"{d['points_per_game']:+.4f}",
                           f"[{d.get('ci95_low', float('nan')):+.4f}, {d.get('ci95_high', float('nan')):+.4f}]",
                           "yes" if d.get("promoted") else "no"] for x, d in zip(xs, gates)])]
        figures += 1
    evals = [d for d in m if d.get("kind") == "eval"]
    if evals:
        opponents = sorted({k.split("/")[0] for d in evals for k in d if k.endswith("/points_per_game")})
        steps = [_step_of(d) for d in evals]
        xlabel = next((s[0] for s in steps if s), None)
        by_step: dict[str, tuple[list, list]] = {}
        by_hours: dict[str, tuple[list, list]] = {}
        for d, st in zip(evals, steps):
            for o in opponents:
                v = d.get(f"{o}/points_per_game")
                if not _number(v):
                    continue
                if st and st[0] == xlabel:
                    by_step.setdefault(o, ([], []))[0].append(st[1])
                    by_step[o][1].append(v)
                if hours(d) is not None:
                    by_hours.setdefault(o, ([], []))[0].append(hours(d))
                    by_hours[o][1].append(v)
        parts.append("<h2>Strength checks</h2>")
        if by_step:
            parts.append(line_figure(by_step, f"Points per game against each opponent by {xlabel}", xlabel,
                                     "points per game", plots=plots))
            figures += 1
        if by_hours:
            parts.append(line_figure(by_hours, f"Points per game against each opponent by {hours.words}",
                                     hours.label, "points per game", plots=plots))
            figures += 1
    if not figures:
        parts.append('<p class="note">No losses, gates or strength checks in this metrics file.</p>')
    parts += _sessions_part(m)
    return _page(f"Training run: {folder.name}", parts, plots)


def _sessions_part(m: list[dict]) -> list[str]:
    """The run's sessions (its ``session`` lines: each start or resume), with where each began
    and the backend and machine it ran on, so that rates measured in one run on different
    machines can be told apart; nothing for a file without them."""
    sessions = [d for d in m if d.get("kind") == "session"]
    if not sessions:
        return []
    rows = []
    for d in sessions:
        at = d.get("time")
        start = time.strftime("%Y-%m-%d %H:%M", time.gmtime(at)) if _number(at) else ""
        unit = next(((k, d[k]) for k in ("round", "generation", "games") if k in d), None)
        where = f"{unit[0]} {unit[1]:,}" if unit and isinstance(unit[1], int) else ""
        if d.get("phase_at_start"):
            where += f", {d['phase_at_start']}"
        rows.append([start, where, d.get("backend", ""), d.get("machine", "(not recorded)")])
    return ["<h2>Sessions</h2>", _table(["started (UTC)", "at", "backend", "machine"], rows, left=4)]


def write_report(folder: str | os.PathLike, out: str | os.PathLike | None = None, plots: str = "auto") -> Path:
    """Write the report page of ``folder`` (a tournament folder or a training run folder) to
    ``out`` (default ``folder/report.html``), its figures drawn as ``plots`` says (one of
    :data:`PLOTS`; :func:`resolve_plots`); the path written."""
    folder = Path(folder)
    plots = resolve_plots(plots)
    if (folder / "summary.json").exists() and (folder / "games.jsonl").exists():
        page = tournament_page(folder, plots)
    elif (folder / "metrics.jsonl").exists():
        page = training_page(folder, plots)
    elif not folder.is_dir():
        raise ReportError(f"no such folder: {folder}")
    else:
        raise ReportError(f"{folder} holds neither a finished tournament (summary.json, games.jsonl) nor a "
                          f"training run (metrics.jsonl)")
    path = Path(out) if out is not None else folder / "report.html"
    write_atomic(path, page, ReportError)
    return path


__all__ = ["PLOTS", "ReportError", "bar_figure", "heatmap_figure", "interval_figure", "line_figure",
           "matplotlib_version", "resolve_plots", "tournament_page", "training_page", "write_report"]
