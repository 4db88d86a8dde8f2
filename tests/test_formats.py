"""GNU Backgammon Position ID and XGID (nardy_ai/formats.py; POSITIONS.md "Backgammon interop").

The published examples below come from real program output, each with the board or the pip
counts printed next to the ID, so they pin the orientation (which side is the mover) as well
as the bit layout.
"""

import base64

import numpy as np
import pytest

from nardy_ai.board import BAR, OFF, OPP_BAR, OPP_OFF, flip, pip_counts, start_board, validate
from nardy_ai.errors import FormatError, InvalidPosition
from nardy_ai.formats import board_from_position_id, board_from_xgid, position_id, xgid

START_ID = "4HPwATDgc/ABMA"
START_XGID = "XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:0:0:10"


def board(points, bar=(0, 0), off=None):
    b = np.zeros(28, dtype=np.int8)
    b[:24] = points
    b[BAR], b[OPP_BAR] = bar
    pts = np.asarray(points)
    if off is None:
        off = (15 - pts[pts > 0].sum() - bar[0], 15 + pts[pts < 0].sum() - bar[1])
    b[OFF], b[OPP_OFF] = off
    validate(b, "backgammon")
    return b


def random_short_positions(n, seed=0):
    """Valid backgammon positions with blots, stacks over 5, checkers on the bar and off."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        b = np.zeros(28, dtype=np.int8)
        # 26 places per side: points 1..24, bar, off.  The opponent avoids the mover's points.
        for c in rng.choice(26, size=15, p=_weights(rng)):
            b[c if c < 24 else (BAR if c == 24 else OFF)] += 1
        free = [i for i in range(24) if b[i] == 0]
        places = free + ["bar", "off"]
        for k in rng.choice(len(places), size=15):
            where = places[k]
            if where == "bar":
                b[OPP_BAR] += 1
            elif where == "off":
                b[OPP_OFF] += 1
            else:
                b[where] -= 1
        if b[OFF] == 15 and b[OPP_OFF] == 15:
            continue
        validate(b, "backgammon")
        out.append(b)
    return out


def _weights(rng):
    w = rng.random(26) ** 3
    return w / w.sum()


POSITIONS = random_short_positions(300)


def pid_from_bits(bits: str) -> str:
    """Independent packing of a gnubg key: bit k is bit k % 8 of byte k // 8 (LSB first)."""
    bits = bits.ljust(80, "0")
    data = bytes(int(bits[8 * i:8 * i + 8][::-1], 2) for i in range(10))
    return base64.b64encode(data).decode()[:14]


def assert_refused(read, text: str, words: list[str]) -> None:
    """``read(text)`` raises FormatError whose message holds each of ``words``."""
    with pytest.raises(FormatError) as e:
        read(text)
    for w in words:
        assert w in str(e.value)


# --- Position ID ---------------------------------------------------------------------------

def test_start_position_id():
    b = start_board("backgammon")
    assert position_id(b) == START_ID
    assert np.array_equal(board_from_position_id(START_ID), b)


def test_start_id_bit_layout_matches_manual():
    # gnubg manual, "A technical description of the Position ID": per side, 5 empty points,
    # 5 on the 6, ... then the bar; the start position's key spelled out bit by bit.
    side = "00000" + "111110" + "0" + "1110" + "0000" + "111110" + "00000" + "00000" + "110" + "0"
    assert len(side) == 40
    assert pid_from_bits(side + side) == START_ID


@pytest.mark.parametrize("pid, points, bar, off, pips", [
    # gnubg text export (analysis of a 5-point match): "Move number 2: Lasse to play 41" after
    # "Magic moves 24/21 13/11"; "Pip counts: O 162, X 167". Lasse (on roll) is untouched.
    ("4HPkASLgc/ABMA",
     [-1, 0, 0, -1, 0, 5, 0, 3, 0, 0, 0, -4, 5, -1, 0, 0, -3, 0, -5, 0, 0, 0, 0, 2],
     (0, 0), (0, 0), (167, 162)),
    # BGWeb terminal test (gnubg-based): after "cpu moves 8/5 6/5" the other side is on roll.
    ("sGfwATDgc/ABMA",
     [-2, 0, 0, 0, 0, 5, 0, 3, 0, 0, 0, -5, 5, 0, 0, 0, -2, 0, -4, -2, 0, 0, 0, 2],
     (0, 0), (0, 0), (167, 163)),
    # gnubg board printed with a resignation offer: X on roll with 4 on 1, 3 on 3, 1 on 4 and
    # 7 off; O has one checker on its 2 point (X's 23) and 14 off.
    ("AgAAPBcAAAAAAA",
     [4, 0, 3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, 0],
     (0, 0), (7, 14), (17, 2)),
    # gnubg board quoted in a Perl backgammon module's documentation, X "At Roll",
    # "Pip counts: O 138, X 159".
    ("sOfgEwDg8+AIBg",
     [0, 0, 0, 0, 0, 5, 0, 4, 0, -1, 0, -5, 3, 0, 0, 1, -3, 0, -4, -2, 2, 0, 0, 0],
     (0, 0), (0, 0), (159, 138)),
])
def test_published_gnubg_ids(pid, points, bar, off, pips):
    expected = board(points, bar, off)
    got = board_from_position_id(pid)
    assert np.array_equal(got, expected)
    assert tuple(pip_counts(got, "backgammon")) == pips
    assert position_id(expected) == pid


def test_player_not_on_roll_is_encoded_first():
    # One mover checker on its point 1, one opponent checker on its point 1 (our 24); the rest
    # off. gnubg writes the opponent's 25 slots first.
    b = board([1] + [0] * 22 + [-1], off=(14, 14))
    opp_first = "10" + "0" * 24 + "10" + "0" * 24
    assert position_id(b) == pid_from_bits(opp_first)
    mover_moved = board([0, 1] + [0] * 21 + [-1], off=(14, 14))
    # Only the second half (the mover's) changes.
    assert position_id(mover_moved) == pid_from_bits("10" + "0" * 24 + "0" + "10" + "0" * 23)


@pytest.mark.parametrize("b", POSITIONS, ids=lambda b: position_id(b))
def test_position_id_round_trip(b):
    pid = position_id(b)
    assert len(pid) == 14
    assert np.array_equal(board_from_position_id(pid), b)


def test_random_positions_cover_bar_off_and_tall_stacks():
    stacked = np.stack(POSITIONS)
    assert (stacked[:, BAR] > 0).any() and (stacked[:, OPP_BAR] > 0).any()
    assert (stacked[:, OFF] > 0).any() and (stacked[:, OPP_OFF] > 0).any()
    assert (np.abs(stacked[:, :24]) > 5).any()


def test_position_id_distinguishes_sides():
    for b in POSITIONS[:50]:
        if not np.array_equal(flip(b, "backgammon"), b):
            assert position_id(flip(b, "backgammon")) != position_id(b)


def test_bar_checkers_encoded_in_bar_slot():
    b = board([0] * 24, bar=(2, 3), off=(13, 12))
    # Opponent: 24 empty points, then 3 on the bar; mover: 24 empty, then 2 on the bar.
    assert position_id(b) == pid_from_bits("0" * 24 + "1110" + "0" * 24 + "110")
    back = board_from_position_id(position_id(b))
    assert (back[BAR], back[OPP_BAR], back[OFF], back[OPP_OFF]) == (2, 3, 13, 12)


@pytest.mark.parametrize("pid, words", [
    ("4HPwATDgc/ABM", ["13 characters", "must have 14"]),
    ("4HPwATDgc/ABMAA", ["15 characters"]),
    ("4HPwATDgc/AB!A", ["character 13", "'!'", "base64"]),
    ("4HPwATDgc/ABMB", ["last character", "80-bit"]),
    ("4HPwATDgc/ABMA:cAkAAAAAAAAA", ["Match ID", "14-character Position ID alone"]),
])
def test_position_id_malformed(pid, words):
    assert_refused(board_from_position_id, pid, words)


def test_position_id_too_many_checkers():
    with pytest.raises(FormatError, match="16 checkers"):
        board_from_position_id(pid_from_bits("1" * 16 + "0" * 25 + "0" * 25))
    with pytest.raises(FormatError, match="more than 30 checkers"):
        board_from_position_id("/" * 13 + "w")


def test_position_id_both_sides_on_one_point():
    # Opponent one checker on its point 24 = the mover's point 1, where the mover also stands.
    bits = "0" * 23 + "10" + "0" + "10" + "0" * 24
    with pytest.raises(FormatError, match="both sides have checkers on point 1"):
        board_from_position_id(pid_from_bits(bits))


def test_position_id_bits_after_the_key():
    bits = "0" * 50 + "1"
    with pytest.raises(FormatError, match="bits are set after"):
        board_from_position_id(pid_from_bits(bits))


def test_position_id_both_sides_all_off_is_refused():
    with pytest.raises(FormatError, match="COM-6"):
        board_from_position_id("AAAAAAAAAAAAAA")


def test_position_id_fewer_checkers_means_off():
    b = board_from_position_id(pid_from_bits("10" + "0" * 24 + "10" + "0" * 24))
    assert b[0] == 1 and b[23] == -1
    assert b[OFF] == 14 and b[OPP_OFF] == 14


@pytest.mark.parametrize("variant", ["long", "long_dave"])
def test_long_nardy_refused(variant):
    with pytest.raises(FormatError, match="backgammon-family variants only"):
        position_id(start_board(variant), variant)
    with pytest.raises(FormatError, match="backgammon-family variants only"):
        board_from_position_id(START_ID, variant)
    with pytest.raises(FormatError, match="backgammon-family variants only"):
        xgid(start_board(variant), variant=variant)
    with pytest.raises(FormatError, match="backgammon-family variants only"):
        board_from_xgid(START_XGID, variant)


def test_short_variants_share_the_format():
    b = start_board("short_caucasian")
    assert position_id(b, "short_caucasian") == START_ID
    assert xgid(b, variant="short_trictrac") == START_XGID


def test_position_id_of_invalid_board():
    b = start_board("backgammon")
    b[5] += 1
    with pytest.raises(InvalidPosition):
        position_id(b)


# --- XGID ----------------------------------------------------------------------------------

def test_start_xgid():
    b = start_board("backgammon")
    assert xgid(b) == START_XGID
    got, info = board_from_xgid(START_XGID)
    assert np.array_equal(got, b)
    assert info["dice"] is None
    assert info["cube"] == {"value": 1, "owner": "centre"}
    assert info["turn"] == "bottom"
    assert info["match_length"] == 0 and info["max_cube"] == 1024


def test_xgid_published_xg_export():
    # eXtreme Gammon export posted by Tim Chow (rec.games.backgammon, "Backgamee boxcars",
    # Dec 2021): "Pip count X: 98 O: 174", "Cube: 2, O own cube", "X to play 66".
    s = "XGID=-AbcCBBBB-B--A--ababbb----:1:-1:1:66:0:0:0:0:10"
    b, info = board_from_xgid(s)
    expected = board([1, -2, -3, 3, 2, 2, 2, 2, 0, 2, 0, 0, 1, 0, 0, -1, -2, -1, -2, -2, -2, 0, 0, 0])
    assert np.array_equal(b, expected)
    assert tuple(pip_counts(b, "backgammon")) == (98, 174)
    assert info["dice"] == (6, 6)
    assert info["cube"] == {"value": 2, "owner": "opponent"}
    assert xgid(b, dice=(6, 6), cube_value=2, cube_owner="opponent") == s


def test_xgid_with_top_player_on_turn():
    # Worked example of the Open Backgammon Plugin Protocol draft: cube 2 owned by the bottom
    # player, the top player on turn with 63, 3-point match, max cube 2^8.
    s = "XGID=-a-B--E-B-a-dDB--b-bcb----:1:1:-1:63:0:0:0:3:8"
    b, info = board_from_xgid(s)
    # The top (lowercase) player is our mover: its checker on XG's point 1 is on its own 24.
    expected = board([0, 0, 0, 2, 3, 2, 0, 2, 0, 0, -2, -4, 4, 0, 1, 0, -2, 0, -5, 0, 0, -2, 0, 1])
    assert np.array_equal(b, expected)
    assert info["turn"] == "top"
    assert info["dice"] == (6, 3)
    assert info["cube"] == {"value": 2, "owner": "opponent"}
    assert info["match_length"] == 3 and info["max_cube"] == 256
    assert not info["crawford"]
    # Written back with our mover at the bottom: the same position, seen from the other side.
    out = xgid(b, dice=(6, 3), cube_value=2, cube_owner="opponent", match_length=3, max_cube=256)
    assert out == "XGID=----BCB-B--bdD-A-b-e--b-A-:1:-1:1:63:0:0:0:3:8"
    assert np.array_equal(board_from_xgid(out)[0], b)


def test_xgid_audited_position():
    # raccoon project's audit dump for this XGID: mover pips 162, opponent 111, 2 on the bar;
    # money game with Jacoby and beavers (rules field 3).
    b, info = board_from_xgid("XGID=-aaBBbBB-----D------AbbcdB:0:0:1:00:0:0:3:0:10")
    assert tuple(pip_counts(b, "backgammon")) == (162, 111)
    assert (b[BAR], b[OPP_BAR]) == (2, 0)
    assert info["jacoby"] and info["beaver"] and not info["crawford"]


@pytest.mark.parametrize("b", POSITIONS[:150])
def test_xgid_round_trip(b):
    s = xgid(b)
    back, info = board_from_xgid(s)
    assert np.array_equal(back, b)
    assert info["turn"] == "bottom"


@pytest.mark.parametrize("b", POSITIONS[150:])
def test_xgid_turn_minus_one_is_the_same_position(b):
    """The same physical position written with the mover on top (turn -1) reads the same."""
    s = xgid(b, dice=(4, 2), cube_value=4, cube_owner="mover", score=(3, 5), match_length=7)
    fields = s[5:].split(":")
    fields[0] = fields[0][::-1].swapcase()
    fields[2] = str(-int(fields[2]))
    fields[3] = "-1"
    fields[5], fields[6] = fields[6], fields[5]
    back, info = board_from_xgid("XGID=" + ":".join(fields))
    assert np.array_equal(back, b)
    assert info["turn"] == "top"
    assert info["cube"] == {"value": 4, "owner": "mover"}
    assert info["score"] == (3, 5)
    assert info["dice"] == (4, 2)


def test_xgid_fields():
    b = start_board("backgammon")
    s = xgid(b, dice=(3, 1), cube_value=8, cube_owner="mover", score=(2, 4), match_length=5,
             crawford=True, max_cube=64)
    assert s == "XGID=-b----E-C---eE---c-e----B-:3:1:1:31:2:4:1:5:6"
    _, info = board_from_xgid(s)
    assert info == {"dice": (3, 1), "cube": {"value": 8, "owner": "mover"}, "cube_action": None,
                    "turn": "bottom", "score": (2, 4), "match_length": 5, "crawford": True,
                    "jacoby": False, "beaver": False, "max_cube": 64}
    money = xgid(b, jacoby=True, beaver=True)
    assert money.split(":")[7] == "3"
    doubled = xgid(b, cube_value=2, cube_action="double")
    assert doubled.split(":")[4] == "D"
    assert board_from_xgid(doubled)[1]["cube_action"] == "double"


def test_xgid_short_forms_and_prefix():
    b, info = board_from_xgid("-b----E-C---eE---c-e----B-:0:0:1")
    assert np.array_equal(b, start_board("backgammon"))
    assert info["dice"] is None and info["score"] == (0, 0)


@pytest.mark.parametrize("s, words", [
    ("XGID=-b----E-C---eE---c-e----B-:0:0", ["3 fields"]),
    ("XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0", ["7 fields", "has 10", "cut off"]),
    ("XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:0:5", ["9 fields", "cut off"]),
    ("XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:0:0:10:1", ["11 fields"]),
    ("XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:0:0:10", None),
    ("XGID=-b----E-C---eE---c-e----B-:4:0:1:00:0:0:0:0:3", ["cube value exponent 4", "max cube exponent 3"]),
    ("XGID=-b----E-C---eE---c-e----B-:0:0:1:00:5:0:0:5:10", ["scores 5 and 0", "match length 5"]),
    ("XGID=-b----E-C---eE---c-e----B-:0:0:1:00:2:3:1:7:10", ["Crawford game", "at 6 of 7"]),
    ("XGID=-b----E-C---eE---c-e----B:0:0:1:00:0:0:0:0:10", ["25 characters", "26"]),
    ("XGID=-b----E-C---eE---c-e----B-?:0:0:1:00:0:0:0:0:10", ["27 characters"]),
    ("XGID=-b----E-C-?-eE---c-e----B-:0:0:1:00:0:0:0:0:10", ["character 11", "'?'"]),
    ("XGID=Ab----E-C---eE---c-e----B-:0:0:1:00:0:0:0:0:10", ["character 1", "bar"]),
    ("XGID=-b----E-C---eE---c-e----Ba:0:0:1:00:0:0:0:0:10", ["character 26", "bar"]),
    ("XGID=-b----E-C---eE---c-e----C-:0:0:1:00:0:0:0:0:10", ["mover has 16 checkers"]),
    ("XGID=-b----E-C---eE---c-f----B-:0:0:-1:00:0:0:0:0:10", ["mover has 16 checkers"]),
    ("XGID=-b----E-C---eE---c-e----B-:0:0:0:00:0:0:0:0:10", ["turn 0"]),
    ("XGID=-b----E-C---eE---c-e----B-:0:2:1:00:0:0:0:0:10", ["cube position 2"]),
    ("XGID=-b----E-C---eE---c-e----B-:x:0:1:00:0:0:0:0:10", ["cube value", "'x'"]),
    ("XGID=-b----E-C---eE---c-e----B-:0:0:1:07:0:0:0:0:10", ["dice '07'"]),
    ("XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:2:5:10", ["crawford/jacoby"]),
    ("XGID=--------------------------:0:0:1:00:0:0:0:0:10", ["COM-6"]),
])
def test_xgid_malformed(s, words):
    if words is None:                     # the whole XGID the cut-off ones come from reads
        board_from_xgid(s)
        return
    assert_refused(board_from_xgid, s, words)


def test_xgid_writer_errors():
    b = start_board("backgammon")
    with pytest.raises(FormatError, match="power of two"):
        xgid(b, cube_value=3)
    with pytest.raises(FormatError, match="cube_owner"):
        xgid(b, cube_owner="X")
    with pytest.raises(FormatError, match="crawford applies to matches"):
        xgid(b, crawford=True)
    with pytest.raises(FormatError, match="Crawford game needs a player at 4 of 5"):
        xgid(b, crawford=True, match_length=5, score=(1, 2))
    with pytest.raises(FormatError, match="below match_length"):
        xgid(b, match_length=5, score=(5, 2))
    with pytest.raises(FormatError, match="money-game rules"):
        xgid(b, jacoby=True, match_length=5)
    with pytest.raises(FormatError, match="dice"):
        xgid(b, dice=(0, 7))
    with pytest.raises(FormatError, match="not both"):
        xgid(b, dice=(3, 1), cube_action="double")
