"""Pictures of a position: an ASCII board for terminals and logs, an SVG board for papers.

Both draw the physical board from the mover's side, numbered in the mover's numbering
(RULES.md §0): points 13-24 along the top from left to right, 12-1 along the bottom, the mover
bearing off on the right below point 1. X is the mover (on roll), O the opponent.

In short nardy (backgammon) the opponent's home is the top right (mover's 19-24). In long
nardy both sides travel counter-clockwise (LN-1): the mover from its head, point 24 at the top
right, to its home 1-6 at the bottom right; the opponent from its head, the mover's point 12 at
the bottom left, to its home, the mover's 13-18 at the top left. There is no bar in long nardy.
"""

from __future__ import annotations

from typing import Any
from xml.sax.saxutils import escape

import numpy as np

from .board import BAR, CUBE_OWNERS, OFF, OPP_BAR, OPP_OFF, pip_counts, validate, validate_dice
from .errors import InvalidPosition
from .variants import Variant, get_variant

__all__ = ["text_board", "svg_board"]

_STACK = 5          # checkers drawn per point; the outermost carries the count beyond that


def _prepare(board: Any, variant: str | Variant, dice: Any, cube: Any
             ) -> tuple[np.ndarray, Variant, tuple[int, int] | None, dict | None]:
    v = get_variant(variant)
    b = np.asarray(board)
    validate(b, v)
    b = b.astype(int)
    d = validate_dice(dice) if dice is not None else None
    if cube is not None:
        if not isinstance(cube, dict):
            raise InvalidPosition("cube must be {'value': int, 'owner': 'centre' | 'mover' | 'opponent'}")
        value, owner = cube.get("value", 1), cube.get("owner", "centre")
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InvalidPosition(f"cube.value = {value!r} must be a positive integer")
        if owner not in CUBE_OWNERS:
            raise InvalidPosition(f"cube.owner = {owner!r} must be one of {', '.join(CUBE_OWNERS)}")
        cube = {"value": int(value), "owner": owner}
    return b, v, d, cube


def _top_points() -> list[int]:
    return list(range(13, 25))


def _bottom_points() -> list[int]:
    return list(range(12, 0, -1))


def _homes_and_heads(v: Variant) -> dict[str, Any]:
    """Mover's numbering of each side's home quadrant and head (None in short nardy)."""
    if v.is_long:
        return {"mover_home": (1, 6), "opp_home": (13, 18), "mover_head": 24, "opp_head": 12}
    return {"mover_home": (1, 6), "opp_home": (19, 24), "mover_head": None, "opp_head": None}


def _caption(glyph: str, label: str) -> str:
    """The label, prefixed with its glyph unless it already starts with it."""
    return label if label.split()[:1] == [glyph] else f"{glyph}: {label}"


def _cube_text(cube: dict) -> str:
    return f"cube {cube['value']}"


# --- text ----------------------------------------------------------------------------------

def text_board(board: np.ndarray, variant: str | Variant, dice: tuple[int, int] | None = None,
               cube: dict | None = None, labels: tuple[str, str] = ("X (on roll)", "O")) -> str:
    """An ASCII board in the style of gnubg's text board.

    Five checkers are drawn per point; beyond five the fifth row shows the count. Pip counts
    come from :func:`nardy_ai.board.pip_counts`. ``cube`` is ``{"value", "owner"}`` as in
    POSITIONS.md; ``dice`` the mover's roll.
    """
    b, v, d, cube = _prepare(board, variant, dice, cube)
    pips = pip_counts(b, v)
    marks = _homes_and_heads(v)

    def cell(point: int, row: int) -> str:
        c = int(b[point - 1])
        return stack_cell(abs(c), "X" if c > 0 else "O", row)

    def stack_cell(count: int, glyph: str, row: int) -> str:
        """Row ``row`` (0 = the edge) of a stack of ``count`` checkers drawn as ``glyph``."""
        if count <= row:
            return "   "
        if row == _STACK - 1 and count > _STACK:
            return f"{count:^3}"
        return f" {glyph} "

    def number_line(points: list[int]) -> str:
        left = "-".join(f"{p:->2}" for p in points[:6])
        right = "-".join(f"{p:->2}" for p in points[6:])
        return f" +{left}------{right}-+"

    top, bottom = _top_points(), _bottom_points()
    bar_mid = "   " if v.is_long else "BAR"
    lines = [number_line(top)]
    for row in range(_STACK):
        lines.append(" |" + "".join(cell(p, row) for p in top[:6]) + "|"
                     + stack_cell(int(b[OPP_BAR]), "O", row) + "|"
                     + "".join(cell(p, row) for p in top[6:]) + "|")
    lines.append(" |" + " " * 18 + "|" + bar_mid + "|" + " " * 18 + "|")
    for row in reversed(range(_STACK)):
        lines.append(" |" + "".join(cell(p, row) for p in bottom[:6]) + "|"
                     + stack_cell(int(b[BAR]), "X", row) + "|"
                     + "".join(cell(p, row) for p in bottom[6:]) + "|")
    lines.append(number_line(bottom))

    notes = [""] * len(lines)
    notes[0] = _caption("O", labels[1])
    notes[1] = f"pips {pips[1]}  off {b[OPP_OFF]}" + (f"  bar {b[OPP_BAR]}" if b[OPP_BAR] else "")
    notes[-2] = f"pips {pips[0]}  off {b[OFF]}" + (f"  bar {b[BAR]}" if b[BAR] else "")
    notes[-1] = _caption("X", labels[0])
    middle = []
    if d is not None:
        middle.append(f"rolled {d[0]}-{d[1]}")
    if cube is not None:
        if cube["owner"] == "centre":
            middle.append(_cube_text(cube) + " (centred)")
        elif cube["owner"] == "opponent":
            notes[2] = _cube_text(cube) + " (O owns)"
        else:
            notes[-3] = _cube_text(cube) + " (X owns)"
    notes[_STACK + 1] = "  ".join(middle)
    out = [line + ("     " + note if note else "") for line, note in zip(lines, notes)]
    out.append(f" {v.id}: pip counts X {pips[0]}, O {pips[1]}")
    if v.is_long:
        out.append(f" X: head {marks['mover_head']}, home {marks['mover_home'][0]}-{marks['mover_home'][1]}, "
                   f"moves 24 -> 1 (counter-clockwise)")
        out.append(f" O: head {marks['opp_head']}, home {marks['opp_home'][0]}-{marks['opp_home'][1]} "
                   f"(X's numbering), moves 12 -> 1 -> 24 -> 13 (counter-clockwise)")
    return "\n".join(out) + "\n"


# --- SVG -----------------------------------------------------------------------------------

# Geometry in SVG user units.
_P = 40.0                   # point width
_R = 17.5                   # checker radius
_FRAME = 14.0
_BAR_W = 48.0
_TRAY_W = 50.0
_CUBE_W = 58.0              # strip left of the board for the cube
_GAP = 92.0                 # between the two rows of points, for the dice
_TOP = 64.0                 # caption, home/head labels and numbers above the frame
_BOTTOM = 64.0
_STACK_H = _STACK * 2 * _R
_TRI_H = _STACK_H - 4

_COLOURS = {
    "frame": "#6b4a2f",
    "field": "#f2ead8",
    "bar": "#6b4a2f",
    "tray": "#e6dcc4",
    "point_dark": "#9c4a34",
    "point_light": "#cdb48d",
    "mover": "#fbf8f1",
    "mover_edge": "#3a3a3a",
    "mover_text": "#222222",
    "opp": "#2d2d2d",
    "opp_edge": "#000000",
    "opp_text": "#f4f4f4",
    "text": "#222222",
    "muted": "#6f6256",
    "cube": "#ffffff",
}


def _fmt(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


class _Layout:
    def __init__(self) -> None:
        self.frame_left = _CUBE_W
        self.field_left = self.frame_left + _FRAME
        self.bar_left = self.field_left + 6 * _P
        self.right_left = self.bar_left + _BAR_W
        self.field_right = self.right_left + 6 * _P
        self.tray_left = self.field_right + _FRAME
        self.frame_right = self.tray_left + _TRAY_W + _FRAME
        self.width = self.frame_right + 12
        self.frame_top = _TOP
        self.field_top = self.frame_top + _FRAME
        self.field_bottom = self.field_top + 2 * _STACK_H + _GAP
        self.frame_bottom = self.field_bottom + _FRAME
        self.height = self.frame_bottom + _BOTTOM
        self.mid_y = (self.field_top + self.field_bottom) / 2

    def column_x(self, point: int) -> float:
        """Centre x of a point column (mover's numbering)."""
        k = point - 13 if point >= 13 else 12 - point
        x = self.field_left + k * _P + _P / 2
        return x + (_BAR_W if k >= 6 else 0)

    @staticmethod
    def is_top(point: int) -> bool:
        return point >= 13

    def checker_y(self, point: int, j: int) -> float:
        if self.is_top(point):
            return self.field_top + _R + j * 2 * _R
        return self.field_bottom - _R - j * 2 * _R


def _checker(x: float, y: float, mover: bool, label: str | None, cls: str) -> str:
    fill = _COLOURS["mover"] if mover else _COLOURS["opp"]
    edge = _COLOURS["mover_edge"] if mover else _COLOURS["opp_edge"]
    side = "mover" if mover else "opponent"
    parts = [f'<circle class="checker {side}{cls}" cx="{_fmt(x)}" cy="{_fmt(y)}" r="{_fmt(_R - 0.5)}" '
             f'fill="{fill}" stroke="{edge}" stroke-width="1.2"/>',
             f'<circle cx="{_fmt(x)}" cy="{_fmt(y)}" r="{_fmt(_R - 5)}" fill="none" '
             f'stroke="{edge}" stroke-opacity="0.25" stroke-width="1"/>']
    if label is not None:
        colour = _COLOURS["mover_text"] if mover else _COLOURS["opp_text"]
        parts.append(f'<text class="count" x="{_fmt(x)}" y="{_fmt(y + 5)}" text-anchor="middle" '
                     f'font-size="14" font-weight="bold" fill="{colour}">{label}</text>')
    return "".join(parts)


def _die(x: float, y: float, value: int, size: float = 34.0) -> str:
    spots = {1: [(1, 1)], 2: [(0, 0), (2, 2)], 3: [(0, 0), (1, 1), (2, 2)],
             4: [(0, 0), (2, 0), (0, 2), (2, 2)], 5: [(0, 0), (2, 0), (1, 1), (0, 2), (2, 2)],
             6: [(0, 0), (0, 1), (0, 2), (2, 0), (2, 1), (2, 2)]}[value]
    q = size / 4
    parts = [f'<g class="die" data-value="{value}">',
             f'<rect x="{_fmt(x)}" y="{_fmt(y)}" width="{_fmt(size)}" height="{_fmt(size)}" rx="6" '
             f'fill="{_COLOURS["mover"]}" stroke="{_COLOURS["mover_edge"]}" stroke-width="1.5"/>']
    for cx, cy in spots:
        parts.append(f'<circle cx="{_fmt(x + q * (cx + 1))}" cy="{_fmt(y + q * (cy + 1))}" r="3.2" '
                     f'fill="{_COLOURS["mover_text"]}"/>')
    parts.append("</g>")
    return "".join(parts)


def svg_board(board: np.ndarray, variant: str | Variant, dice: tuple[int, int] | None = None,
              cube: dict | None = None, labels: tuple[str, str] = ("X (on roll)", "O"),
              title: str | None = None, scale: float = 1.0) -> str:
    """A standalone SVG picture of the position (mover at the bottom, bearing off right).

    Up to five checkers are drawn per point, the fifth labelled with the stack's count when
    there are more. Borne-off checkers are slabs in the tray on the right (opponent top, mover
    bottom) with their count; checkers on the bar sit on the bar (opponent above the middle,
    mover below). ``cube`` (``{"value", "owner"}``) is drawn left of the board: in the middle
    when centred, at the owner's side otherwise. ``scale`` sets the displayed size only.
    """
    b, v, d, cube = _prepare(board, variant, dice, cube)
    pips = pip_counts(b, v)
    marks = _homes_and_heads(v)
    L = _Layout()
    C = _COLOURS
    out: list[str] = []
    add = out.append

    add(f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_fmt(L.width)} {_fmt(L.height)}" '
        f'width="{_fmt(L.width * scale)}" height="{_fmt(L.height * scale)}" '
        f'font-family="Helvetica, Arial, sans-serif">')
    add(f"<title>{escape(title or f'{v.id} position, X on roll')}</title>")
    add(f'<rect width="{_fmt(L.width)}" height="{_fmt(L.height)}" fill="#ffffff"/>')

    # Frame, playing field, bar and tray.
    add(f'<rect class="frame" x="{_fmt(L.frame_left)}" y="{_fmt(L.frame_top)}" '
        f'width="{_fmt(L.frame_right - L.frame_left)}" height="{_fmt(L.frame_bottom - L.frame_top)}" '
        f'rx="6" fill="{C["frame"]}"/>')
    for x0, x1 in ((L.field_left, L.bar_left), (L.right_left, L.field_right)):
        add(f'<rect class="field" x="{_fmt(x0)}" y="{_fmt(L.field_top)}" width="{_fmt(x1 - x0)}" '
            f'height="{_fmt(L.field_bottom - L.field_top)}" fill="{C["field"]}"/>')
    add(f'<rect class="{"centre" if v.is_long else "bar"}" x="{_fmt(L.bar_left)}" y="{_fmt(L.field_top)}" '
        f'width="{_fmt(_BAR_W)}" height="{_fmt(L.field_bottom - L.field_top)}" fill="{C["bar"]}"/>')
    half = (L.field_bottom - L.field_top - 6) / 2
    for y0, who in ((L.field_top, "opponent"), (L.field_top + half + 6, "mover")):
        add(f'<rect class="tray {who}" x="{_fmt(L.tray_left)}" y="{_fmt(y0)}" width="{_fmt(_TRAY_W)}" '
            f'height="{_fmt(half)}" fill="{C["tray"]}"/>')

    # Points: colours alternate along each row, and differ from the point opposite.
    for row, points in enumerate((_top_points(), _bottom_points())):
        for k, p in enumerate(points):
            x = L.column_x(p) - _P / 2
            colour = C["point_dark"] if (k + row) % 2 == 0 else C["point_light"]
            if row == 0:
                y0, tip = L.field_top, L.field_top + _TRI_H
            else:
                y0, tip = L.field_bottom, L.field_bottom - _TRI_H
            add(f'<polygon class="point" data-point="{p}" points="{_fmt(x + 1)},{_fmt(y0)} '
                f'{_fmt(x + _P - 1)},{_fmt(y0)} {_fmt(x + _P / 2)},{_fmt(tip)}" fill="{colour}"/>')

    # Point numbers, home quadrants and heads.
    num_top_y, num_bottom_y = L.frame_top - 8, L.frame_bottom + 18
    lab_top_y, lab_bottom_y = L.frame_top - 26, L.frame_bottom + 36
    heads = {marks["mover_head"], marks["opp_head"]} - {None}
    for p in range(1, 25):
        y = num_top_y if L.is_top(p) else num_bottom_y
        weight = ' font-weight="bold"' if p in heads else ""
        add(f'<text class="point-number" x="{_fmt(L.column_x(p))}" y="{_fmt(y)}" text-anchor="middle" '
            f'font-size="12"{weight} fill="{C["text"]}">{p}</text>')

    def quadrant_label(lo: int, hi: int, text: str) -> None:
        x0, x1 = sorted((L.column_x(lo), L.column_x(hi)))
        top = L.is_top(lo)
        y = lab_top_y if top else lab_bottom_y
        line_y = y + (6 if top else -14)
        add(f'<line x1="{_fmt(x0 - _P / 2 + 4)}" y1="{_fmt(line_y)}" x2="{_fmt(x1 + _P / 2 - 4)}" '
            f'y2="{_fmt(line_y)}" stroke="{C["muted"]}" stroke-width="1"/>')
        add(f'<text class="home-label" x="{_fmt((x0 + x1) / 2)}" y="{_fmt(y)}" text-anchor="middle" '
            f'font-size="11" font-style="italic" fill="{C["muted"]}">{escape(text)}</text>')

    quadrant_label(*marks["mover_home"], "X home")
    quadrant_label(*marks["opp_home"], "O home")
    for p, who in ((marks["mover_head"], "X"), (marks["opp_head"], "O")):
        if p is None:
            continue
        y = lab_top_y if L.is_top(p) else lab_bottom_y
        add(f'<text class="head-label" x="{_fmt(L.column_x(p))}" y="{_fmt(y)}" text-anchor="middle" '
            f'font-size="11" font-style="italic" fill="{C["muted"]}">{who} head</text>')

    # Checkers on the points.
    for p in range(1, 25):
        c = int(b[p - 1])
        n = abs(c)
        for j in range(min(n, _STACK)):
            label = str(n) if j == _STACK - 1 and n > _STACK else None
            add(_checker(L.column_x(p), L.checker_y(p, j), c > 0, label, ""))

    # Checkers on the bar: the opponent's above the middle, the mover's below it.
    bar_x = L.bar_left + _BAR_W / 2
    for count, mover in ((int(b[OPP_BAR]), False), (int(b[BAR]), True)):
        for j in range(min(count, 4)):
            y = L.mid_y + (1 if mover else -1) * (_R + 4 + j * 2 * _R)
            label = str(count) if j == 3 and count > 4 else None
            add(_checker(bar_x, y, mover, label, " on-bar"))

    # Borne-off checkers: slabs from the outer edge of each tray, with the count.
    slab_h, slab_gap = 9.0, 1.6
    for count, mover in ((int(b[OPP_OFF]), False), (int(b[OFF]), True)):
        who = "mover" if mover else "opponent"
        fill, edge = (C["mover"], C["mover_edge"]) if mover else (C["opp"], C["opp_edge"])
        for j in range(count):
            y = (L.field_bottom - 4 - (j + 1) * slab_h - j * slab_gap) if mover \
                else (L.field_top + 4 + j * (slab_h + slab_gap))
            add(f'<rect class="off {who}" x="{_fmt(L.tray_left + 7)}" y="{_fmt(y)}" '
                f'width="{_fmt(_TRAY_W - 14)}" height="{_fmt(slab_h)}" rx="2" fill="{fill}" '
                f'stroke="{edge}" stroke-width="1"/>')
        if count:
            y = L.mid_y + (30 if mover else -20)
            add(f'<text class="off-count {who}" x="{_fmt(L.tray_left + _TRAY_W / 2)}" y="{_fmt(y)}" '
                f'text-anchor="middle" font-size="13" font-weight="bold" fill="{C["text"]}">{count}</text>')

    # Dice, on the mover's (right) half.
    if d is not None:
        size = 34.0
        cx = L.right_left + 3 * _P
        add(_die(cx - size - 6, L.mid_y - size / 2, d[0], size))
        add(_die(cx + 6, L.mid_y - size / 2, d[1], size))

    # Cube, left of the board.
    if cube is not None:
        size = 38.0
        y = {"centre": L.mid_y - size / 2, "opponent": L.field_top,
             "mover": L.field_bottom - size}[cube["owner"]]
        face = 64 if cube["value"] == 1 and cube["owner"] == "centre" else cube["value"]
        x = (_CUBE_W - size) / 2
        add(f'<g class="cube" data-value="{cube["value"]}" data-owner="{cube["owner"]}">'
            f'<rect x="{_fmt(x)}" y="{_fmt(y)}" width="{_fmt(size)}" height="{_fmt(size)}" rx="5" '
            f'fill="{C["cube"]}" stroke="{C["text"]}" stroke-width="1.5"/>'
            f'<text x="{_fmt(x + size / 2)}" y="{_fmt(y + size / 2 + 6)}" text-anchor="middle" '
            f'font-size="{16 if face < 100 else 13}" font-weight="bold" fill="{C["text"]}">{face}</text></g>')

    # Captions: who is who, pip counts, off counts.
    for mover, y in ((False, 16.0), (True, L.height - 8)):
        idx = 0 if mover else 1
        name = labels[idx]
        fill, edge = (C["mover"], C["mover_edge"]) if mover else (C["opp"], C["opp_edge"])
        off = int(b[OFF] if mover else b[OPP_OFF])
        add(f'<circle cx="{_fmt(L.frame_left + 7)}" cy="{_fmt(y - 4.5)}" r="6.5" fill="{fill}" '
            f'stroke="{edge}" stroke-width="1.2"/>')
        add(f'<text class="caption {"mover" if mover else "opponent"}" x="{_fmt(L.frame_left + 20)}" '
            f'y="{_fmt(y)}" font-size="13" fill="{C["text"]}">{escape(name)}'
            f'<tspan dx="14" fill="{C["muted"]}">pips {pips[idx]} &#183; off {off}</tspan></text>')
    add("</svg>")
    return "\n".join(out) + "\n"
