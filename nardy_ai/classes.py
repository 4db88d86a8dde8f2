"""Position classes: which kind of game a position is, so that each kind can have its own
evaluator (a net per class, the bear-off database), as strong engines do.

Classes are properties of the checkers only, symmetric in the two sides, and the same for a
position and its flip, so they apply to afterstates (the evaluator's input) and to positions
with the player on roll alike.  Pure batched functions on ``(M, 28)`` int8 boards
(:mod:`nardy_ai.board` layout).

Backgammon family (``backgammon``, ``short_caucasian``, ``short_trictrac``), in order of
precedence:

``bearoff``
    both sides have every checker still in play on their own home points (the mover's
    points 1-6, the opponent's own 1-6 = the mover's 19-24), none on the bar: the one-sided
    bear-off database (COM-5) values these exactly.
``race``
    no contact: every checker of the mover is past every checker of the opponent (the
    mover's rearmost checker, the bar counting as point 25, stands on a lower point than the
    opponent's rearmost one, the opponent's bar counting as point 0).  No hit can happen.
``crashed``
    contact, and one side's board has *crashed*: it has few checkers left in play outside the
    ones buried on its 1- and 2-points (gnubg's published definition, with N = 6: a side
    with ``t`` checkers not borne off, ``n1`` on its 1-point and ``n2`` on its 2-point has
    crashed when ``t <= 6``; or, with ``n1 >= 2``, when ``t <= 6 + n1`` or (``n2 >= 2`` and
    ``t + 1 - n1 - n2 <= 6``); or, with ``n1 <= 1``, when ``t <= 6 + n2 - 1``).  Such
    positions play very differently (the crashed side has no timing left) and a net for
    ordinary contact misjudges them.
``contact``
    everything else.

Long family (``long``, ``long_dave``): both sides travel the same way round (LN-1), so a
checker can be held up by any opponent checker ahead of it on its route.

``bearoff``
    both sides have every checker in play on their own home points (the mover's 1-6, the
    opponent's own 1-6 = the mover's 13-18).
``race``
    no checker of either side has an opponent checker ahead of it on its route: in the
    mover's numbering every opponent checker is behind the mover's rearmost one, and in the
    opponent's numbering every mover checker is behind the opponent's rearmost one.
``contact``
    everything else (some checker must still pass an opponent checker, LN-2 / LN-5 matter).
"""

from __future__ import annotations

import numpy as np

from .board import BAR, OPP_BAR, OPP_OFF, OFF, CHECKERS
from .variants import Variant, get_variant

#: The version of these definitions: evaluators trained per class (net sets) record it and
#: refuse to load under another.
CLASSES_VERSION = "1"

#: Class names per family, in the order of their integer ids.
CLASSES: dict[str, tuple[str, ...]] = {
    "short": ("contact", "crashed", "race", "bearoff"),
    "long": ("contact", "race", "bearoff"),
}

_POINTS = np.arange(1, 25)


def class_names(variant: str | Variant) -> tuple[str, ...]:
    """The position classes of a variant's family, in the order of their ids."""
    return CLASSES[get_variant(variant).family]


def _sides(boards: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pts = boards[:, :24].astype(np.int16)
    return np.maximum(pts, 0), np.maximum(-pts, 0)


def _rearmost(counts: np.ndarray, empty: int) -> np.ndarray:
    """The highest point (1-24) holding a checker in ``counts`` ``(M, 24)``, ``empty`` if none."""
    held = counts > 0
    top = 24 - np.argmax(held[:, ::-1], axis=1)
    return np.where(held.any(axis=1), top, empty)


def _lowest(counts: np.ndarray) -> np.ndarray:
    """The lowest point (1-24) holding a checker in ``counts`` ``(M, 24)``, 25 if none."""
    held = counts > 0
    return np.where(held.any(axis=1), np.argmax(held, axis=1) + 1, 25)


def short_contact(boards: np.ndarray, sides=None) -> np.ndarray:
    """``(M,)`` bool: a hit is still possible in a backgammon-family position (``sides``:
    the two sides' counts if already split)."""
    mover, opp = _sides(boards) if sides is None else sides
    mover_back = np.where(boards[:, BAR] > 0, 25, _rearmost(mover, 0))
    # The opponent's rearmost checker is its lowest point in the mover's numbering.
    opp_back = np.where(boards[:, OPP_BAR] > 0, 0, _lowest(opp))
    return mover_back > opp_back


def _crashed_side(own_points: np.ndarray, in_play: np.ndarray) -> np.ndarray:
    """gnubg's crashed test (module docstring) for one side: ``own_points`` ``(M, 24)`` its
    checkers in its own numbering (index 0 = its 1-point), ``in_play`` ``(M,)`` its checkers
    not borne off (bar included)."""
    t = in_play.astype(np.int32)
    n1 = own_points[:, 0].astype(np.int32)
    n2 = own_points[:, 1].astype(np.int32)
    many_on_ace = (t <= 6 + n1) | ((n2 >= 2) & (t + 1 - n1 - n2 <= 6))
    few_on_ace = t <= 6 + n2 - 1
    return (t <= 6) | np.where(n1 >= 2, many_on_ace, few_on_ace)


def long_contact(boards: np.ndarray, sides=None) -> np.ndarray:
    """``(M,)`` bool: some checker of a long-nardy position still has an opponent checker
    ahead of it on its route (module docstring; ``sides`` as for :func:`short_contact`)."""
    mover, opp = _sides(boards) if sides is None else sides
    # Mover's route: points 24 -> 1.  An opponent checker on a lower point than the mover's
    # rearmost checker stands in its way.
    mover_blocked = _lowest(opp) < _rearmost(mover, 0)
    # The opponent's route in its own numbering: mover point m is its point (m + 11) % 24 + 1,
    # i.e. index i -> (i + 12) % 24.  Re-index both sides into the opponent's numbering.
    rot = (np.arange(24) + 12) % 24          # opponent index j <- mover index rot[j]
    opp_blocked = _lowest(mover[:, rot]) < _rearmost(opp[:, rot], 0)
    return mover_blocked | opp_blocked


def bearoff_positions(boards: np.ndarray, variant: str | Variant, sides=None) -> np.ndarray:
    """``(M,)`` bool: both sides have every checker in play on their own home points
    (``sides`` as for :func:`short_contact`)."""
    v = get_variant(variant)
    boards = np.asarray(boards)
    mover, opp = _sides(boards) if sides is None else sides
    opp_home = slice(12, 18) if v.is_long else slice(18, 24)
    mover_home_only = mover[:, 6:].sum(axis=1) == 0
    opp_all = opp.sum(axis=1)
    opp_home_only = opp[:, opp_home].sum(axis=1) == opp_all
    no_bar = (boards[:, BAR] == 0) & (boards[:, OPP_BAR] == 0)
    return mover_home_only & opp_home_only & no_bar


def position_classes(boards: np.ndarray, variant: str | Variant) -> np.ndarray:
    """The class id ``(M,)`` int8 of every position, an index into :func:`class_names`."""
    v = get_variant(variant)
    boards = np.asarray(boards)
    names = CLASSES[v.family]
    out = np.zeros(len(boards), np.int8)               # contact
    sides = _sides(boards)
    if v.is_long:
        out[~long_contact(boards, sides)] = names.index("race")
    else:
        contact = short_contact(boards, sides)
        mover, opp = sides
        mover_in_play = CHECKERS - boards[:, OFF].astype(np.int32)
        opp_in_play = CHECKERS - boards[:, OPP_OFF].astype(np.int32)
        crashed = (_crashed_side(mover, mover_in_play)
                   | _crashed_side(opp[:, ::-1], opp_in_play))
        out[contact & crashed] = names.index("crashed")
        out[~contact] = names.index("race")
    out[bearoff_positions(boards, v, sides)] = names.index("bearoff")
    return out
