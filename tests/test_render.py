"""Text and SVG pictures of a position (nardy_ai/render.py)."""

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from nardy_ai.board import BAR, OFF, OPP_BAR, OPP_OFF, pip_counts, start_board, validate
from nardy_ai.errors import InvalidDice, InvalidPosition
from nardy_ai.render import svg_board, text_board

SVG = "{http://www.w3.org/2000/svg}"
BOARD_WIDTH = 44        # characters of a board line before the notes


def board(points, bar=(0, 0), off=(0, 0), variant="backgammon"):
    b = np.zeros(28, dtype=np.int8)
    b[:24] = points
    b[BAR], b[OPP_BAR] = bar
    b[OFF], b[OPP_OFF] = off
    validate(b, variant)
    return b


# Bear-off race: X 4 on 1, 3 on 3, 1 on 4, 7 off; O one checker on X's 23, 14 off.
BEAROFF = board([4, 0, 3, 1] + [0] * 18 + [-1, 0], off=(7, 14))
# Both sides on the bar, a stack of 7, and a blot.
BAR_POS = board([-2, 0, 0, 0, 0, 7, 0, 2, 0, 0, 0, -5, 3, 0, 0, 0, -3, 0, -3, 0, 0, 0, 1, 0],
                bar=(2, 1), off=(0, 1))


def board_part(text):
    return [line[:BOARD_WIDTH] for line in text.splitlines()[:13]]


def glyph_cells(text, glyph):
    return sum(line.count(glyph) for line in board_part(text))


def start_text(variant, **kw):
    """The text picture of ``variant``'s start position (``kw``: dice, cube, ... as text_board)."""
    return text_board(start_board(variant), variant, **kw)


# --- text ----------------------------------------------------------------------------------

def test_text_start_backgammon():
    t = start_text("backgammon")
    lines = t.splitlines()
    assert lines[0].startswith(" +13-14-15-16-17-18------19-20-21-22-23-24-+")
    assert lines[12].startswith(" +12-11-10--9--8--7-------6--5--4--3--2--1-+")
    assert "|BAR|" in lines[6]
    # Every stack of the start position is at most 5 high: all 30 checkers are drawn.
    assert glyph_cells(t, "X") == 15 and glyph_cells(t, "O") == 15
    assert t.count("pips 167") == 2
    assert "pip counts X 167, O 167" in t
    assert "off 0" in lines[1] and "off 0" in lines[11]


def test_text_start_rows_follow_points():
    t = start_text("backgammon")
    top, bottom = board_part(t)[1], board_part(t)[11]
    # Column of point p in the top row (13..24) and the bottom row (12..1).
    col = {p: 3 + 3 * (p - 13) + (5 if p >= 19 else 0) for p in range(13, 25)}
    col.update({p: 3 + 3 * (12 - p) + (5 if p <= 6 else 0) for p in range(1, 13)})
    assert top[col[13]] == "X" and top[col[17]] == "O" and top[col[19]] == "O" and top[col[24]] == "X"
    assert bottom[col[12]] == "O" and bottom[col[8]] == "X" and bottom[col[6]] == "X" and bottom[col[1]] == "O"
    # Point 13 holds 5 X: drawn in all five rows of the top half, none on 14.
    assert all(board_part(t)[r][col[13]] == "X" for r in range(1, 6))
    assert all(board_part(t)[r][col[14]] == " " for r in range(1, 6))


def test_text_start_long():
    t = start_text("long")
    lines = t.splitlines()
    assert "BAR" not in t
    # 15 on each head: four checkers and the count.
    assert glyph_cells(t, "X") == 4 and glyph_cells(t, "O") == 4
    assert "15" in lines[5][:BOARD_WIDTH] and "15" in lines[7][:BOARD_WIDTH]
    assert lines[5][:BOARD_WIDTH].rstrip().endswith("15 |")        # X's head: point 24, top right
    assert lines[7][:BOARD_WIDTH].startswith(" |15")                # O's head: X's 12, bottom left
    assert t.count("pips 360") == 2
    assert "head 24, home 1-6" in t and "head 12, home 13-18" in t


def test_text_counts_beyond_five_and_bar():
    t = text_board(BAR_POS, "backgammon")
    part = board_part(t)
    assert " 7 " in part[7]                     # fifth row above the bottom edge of point 6
    assert "|BAR|" in part[6]
    # The opponent's bar checker at the top of the bar, the mover's two at the bottom.
    assert part[1][20:25] == "| O |" and part[11][20:25] == "| X |" and part[10][20:25] == "| X |"
    pips = pip_counts(BAR_POS, "backgammon")
    assert f"pips {pips[1]}  off 1  bar 1" in t
    assert f"pips {pips[0]}  off 0  bar 2" in t


def test_text_dice_cube_and_off():
    t = text_board(BEAROFF, "backgammon", dice=(6, 2), cube={"value": 4, "owner": "mover"},
                   labels=("gnubg", "me"))
    assert "rolled 6-2" in t
    assert "cube 4 (X owns)" in t
    assert "off 7" in t and "off 14" in t
    assert "pips 17" in t and "pips 2" in t
    assert "X: gnubg" in t and "O: me" in t
    t2 = text_board(BEAROFF, "backgammon", cube={"value": 2, "owner": "opponent"})
    assert "cube 2 (O owns)" in t2.splitlines()[2]
    t3 = text_board(BEAROFF, "backgammon", cube={"value": 1, "owner": "centre"})
    assert "cube 1 (centred)" in t3.splitlines()[6]


def test_text_pip_counts_match_board_module():
    rng = np.random.default_rng(5)
    for _ in range(20):
        b = np.zeros(28, dtype=np.int8)
        mover_points = rng.choice(np.arange(12), size=4, replace=False)
        opp_points = rng.choice(np.arange(12, 24), size=4, replace=False)
        for k in range(15):
            b[mover_points[k % 4]] += 1
            b[opp_points[k % 4]] -= 1
        for variant in ("backgammon", "long"):
            pips = pip_counts(b, variant)
            t = text_board(b, variant)
            assert f"pip counts X {pips[0]}, O {pips[1]}" in t


def test_text_rejects_bad_input():
    b = start_board("backgammon")
    b[0] = 0
    with pytest.raises(InvalidPosition):
        text_board(b, "backgammon")
    with pytest.raises(InvalidDice):
        start_text("backgammon", dice=(0, 3))
    with pytest.raises(InvalidPosition, match="cube.owner"):
        start_text("backgammon", cube={"value": 2, "owner": "X"})


# --- SVG -----------------------------------------------------------------------------------

def parse(svg):
    root = ET.fromstring(svg)
    assert root.tag == SVG + "svg"
    return root


def by_class(root, tag, cls):
    return [e for e in root.iter(SVG + tag) if cls in e.get("class", "").split()]


def test_svg_start_backgammon():
    root = parse(svg_board(start_board("backgammon"), "backgammon"))
    checkers = by_class(root, "circle", "checker")
    assert len(checkers) == 30
    assert len(by_class(root, "circle", "mover")) == 15
    assert len(by_class(root, "circle", "opponent")) == 15
    assert len(by_class(root, "polygon", "point")) == 24
    numbers = sorted(int(e.text) for e in by_class(root, "text", "point-number"))
    assert numbers == list(range(1, 25))
    assert by_class(root, "rect", "bar")
    assert not by_class(root, "rect", "off")
    assert not by_class(root, "g", "die") and not by_class(root, "g", "cube")
    captions = "".join("".join(e.itertext()) for e in by_class(root, "text", "caption"))
    assert captions.count("pips 167") == 2


def test_svg_stacks_sit_on_their_points():
    root = parse(svg_board(start_board("backgammon"), "backgammon"))
    point_x = {}
    for poly in by_class(root, "polygon", "point"):
        xs = [float(pair.split(",")[0]) for pair in poly.get("points").split()]
        point_x[int(poly.get("data-point"))] = xs[2]            # the tip's x is the centre
    per_x = {}
    for c in by_class(root, "circle", "checker"):
        per_x.setdefault(float(c.get("cx")), []).append("mover" in c.get("class"))
    expected = {6: 5, 8: 3, 13: 5, 24: 2}
    for p, n in expected.items():
        assert per_x[point_x[p]].count(True) == n
    for q, n in expected.items():                              # the opponent's point q is our 25 - q
        assert per_x[point_x[25 - q]].count(False) == n


def test_svg_long_start_counts_stacks():
    root = parse(svg_board(start_board("long"), "long", dice=(6, 5)))
    assert len(by_class(root, "circle", "checker")) == 10
    counts = [e.text for e in by_class(root, "text", "count")]
    assert counts == ["15", "15"]
    heads = sorted(e.text for e in by_class(root, "text", "head-label"))
    assert heads == ["O head", "X head"]
    assert sorted(e.text for e in by_class(root, "text", "home-label")) == ["O home", "X home"]
    assert not by_class(root, "rect", "bar") and by_class(root, "rect", "centre")
    assert [g.get("data-value") for g in by_class(root, "g", "die")] == ["6", "5"]


def test_svg_bar_off_dice_cube():
    root = parse(svg_board(BAR_POS, "backgammon", dice=(3, 3), cube={"value": 2, "owner": "opponent"}))
    on_bar = by_class(root, "circle", "on-bar")
    assert sum("mover" in c.get("class") for c in on_bar) == 2
    assert sum("opponent" in c.get("class") for c in on_bar) == 1
    # The 7-stack: five circles, the outermost labelled 7.
    assert [e.text for e in by_class(root, "text", "count")] == ["7"]
    assert len(by_class(root, "circle", "checker")) == (5 + 2 + 3 + 1) + (2 + 5 + 3 + 3) + (2 + 1)
    assert len(by_class(root, "rect", "off")) == 1
    cube = by_class(root, "g", "cube")[0]
    assert cube.get("data-value") == "2" and cube.get("data-owner") == "opponent"
    assert [g.get("data-value") for g in by_class(root, "g", "die")] == ["3", "3"]


def test_svg_borne_off_trays():
    root = parse(svg_board(BEAROFF, "backgammon", cube={"value": 1, "owner": "centre"}))
    assert len(by_class(root, "rect", "off")) == 21
    mover_off = [e for e in by_class(root, "rect", "off") if "mover" in e.get("class")]
    assert len(mover_off) == 7
    texts = {e.get("class"): e.text for e in by_class(root, "text", "off-count")}
    assert texts == {"off-count mover": "7", "off-count opponent": "14"}
    cube_text = "".join(by_class(root, "g", "cube")[0].itertext())
    assert cube_text == "64"                                   # a centred 1-cube shows 64


def test_svg_escapes_labels_and_sets_size():
    svg = svg_board(start_board("backgammon"), "backgammon", labels=("<me> & co", "O \"bot\""),
                    title="Figure 1 <start>", scale=0.5)
    root = parse(svg)
    captions = ["".join(e.itertext()) for e in by_class(root, "text", "caption")]
    assert any(c.startswith("<me> & co") for c in captions)
    assert root.find(SVG + "title").text == "Figure 1 <start>"
    width = float(root.get("width"))
    view_w = float(root.get("viewBox").split()[2])
    assert width == pytest.approx(view_w / 2)


def test_svg_is_ascii_and_has_no_external_references():
    svg = svg_board(BAR_POS, "backgammon", dice=(1, 2))
    assert svg.isascii()
    assert not re.search(r"(href|url\(|<image|<script)", svg)


def test_svg_rejects_bad_input():
    with pytest.raises(InvalidPosition):
        svg_board(BAR_POS, "long")                             # no bar in long nardy (LN-2)
    with pytest.raises(InvalidDice):
        svg_board(start_board("long"), "long", dice=(7, 1))
