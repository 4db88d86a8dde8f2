"""Helpers shared by the move-generation tests: building positions by hand, applying a play
written in notation (no legality check: the expectation of a test), and calling the fast and
the reference generators on one position."""

from __future__ import annotations

import re

import numpy as np

from nardy_ai.variants import get_variant
from reference_movegen import BAR, OFF, OPP_BAR, OPP_OFF, format_steps, reference_plays

_REPEAT = re.compile(r"^(.*)\((\d)\)$")


def pos(mover: dict[int, int], opp: dict[int, int] | None = None, bar: tuple[int, int] = (0, 0),
        opp_off: int | None = None) -> tuple[int, ...]:
    """A position from the mover's view.  ``mover`` / ``opp``: {mover's point number: count}
    (opponent counts given positive); checkers not on a point or the bar are borne off, except
    that ``opp_off`` may be given to check the total."""
    opp = opp or {}
    b = [0] * 28
    for p, n in mover.items():
        b[p - 1] += n
    for p, n in opp.items():
        assert b[p - 1] == 0, f"point {p} holds both colours"
        b[p - 1] = -n
    b[BAR], b[OPP_BAR] = bar
    b[OFF] = 15 - sum(mover.values()) - bar[0]
    b[OPP_OFF] = 15 - sum(opp.values()) - bar[1]
    assert b[OFF] >= 0 and b[OPP_OFF] >= 0, "more than 15 checkers"
    if opp_off is not None:
        assert b[OPP_OFF] == opp_off
    return tuple(b)


def hand_board(points: dict[int, int], bar: int = 0, opp_bar: int = 0, off: int = 0,
               opp_off: int = 0) -> np.ndarray:
    """An int8 board from {point number: signed count} and the four counters as given (no
    totals checked: for positions that need not be complete)."""
    b = np.zeros(28, np.int8)
    for p, n in points.items():
        b[p - 1] = n
    b[BAR], b[OPP_BAR], b[OFF], b[OPP_OFF] = bar, opp_bar, off, opp_off
    return b


def _point(s: str) -> int:
    return 25 if s == "bar" else 0 if s == "off" else int(s)


def play(board: tuple[int, ...], notation: str) -> tuple[int, ...]:
    """Apply a play in notation (``13/7 8/7``, ``24/18/13``, ``bar/22*``, ``6/off``,
    ``24/18(2)``) to ``board``.  A ``*`` must mark exactly the landings on a blot."""
    b = list(board)
    for token in notation.split():
        m = _REPEAT.match(token)
        times = int(m.group(2)) if m else 1
        token = m.group(1) if m else token
        for _ in range(times):
            parts = token.split("/")
            for a_s, t_s in zip(parts, parts[1:]):
                a, t = _point(a_s.rstrip("*")), _point(t_s.rstrip("*"))
                star = t_s.endswith("*")
                if a == 25:
                    assert b[BAR] > 0, f"{token}: no checker on the bar"
                    b[BAR] -= 1
                else:
                    assert b[a - 1] > 0, f"{token}: no checker on {a}"
                    b[a - 1] -= 1
                if t == 0:
                    b[OFF] += 1
                elif b[t - 1] == -1:
                    assert star, f"{token}: landing on the blot on {t} must be written {t}*"
                    b[t - 1] = 1
                    b[OPP_BAR] += 1
                else:
                    assert not star and b[t - 1] >= 0, f"{token}: point {t} holds {b[t - 1]}"
                    b[t - 1] += 1
    return tuple(b)


def plays(board: tuple[int, ...], *notations: str) -> set[tuple[int, ...]]:
    """The afterstates of the given plays; no notation at all means "no play" (COM-4)."""
    if not notations:
        return {tuple(board)}
    return {play(board, n) for n in notations}


def fast_generate(boards, dice, variant, notation: bool = False):
    from nardy_ai.movegen import generate
    return generate(np.asarray(boards, dtype=np.int8).reshape(-1, 28),
                    np.asarray(dice, dtype=np.int64).reshape(-1, 2), get_variant(variant),
                    notation=notation)


def fast_afterstates(board, dice, variant) -> set[tuple[int, ...]]:
    """The fast generator's afterstates of one position as a set of 28-tuples."""
    res = fast_generate([board], [dice], variant)
    rows = np.asarray(res.boards)[int(res.offsets[0]):int(res.offsets[1])]
    return {tuple(int(x) for x in r) for r in rows}


def reference_afterstates_of(board, dice, variant) -> set[tuple[int, ...]]:
    return set(reference_plays(board, dice, variant))


GENERATORS = {"reference": reference_afterstates_of, "fast": fast_afterstates}


def describe(board, states, variant) -> list[str]:
    """Readable afterstates: one reference step sequence each when it knows one, else the diff."""
    out = []
    for s in sorted(states):
        diff = {i + 1: (board[i], s[i]) for i in range(24) if board[i] != s[i]}
        extra = {k: s[i] for k, i in (("bar", BAR), ("opp_bar", OPP_BAR), ("off", OFF),
                                         ("opp_off", OPP_OFF)) if board[i] != s[i]}
        out.append(f"points {diff} {extra}")
    return out


def diff_message(board, dice, variant, got: set, expected: set) -> str:
    ref = reference_plays(board, dice, variant)
    name = lambda s: format_steps(ref[s]) if s in ref else "?"   # noqa: E731
    missing = [f"{name(s)}  {d}" for s, d in zip(sorted(expected - got), describe(board, sorted(expected - got), variant))]
    extra = [f"{name(s)}  {d}" for s, d in zip(sorted(got - expected), describe(board, sorted(got - expected), variant))]
    return (f"variant={get_variant(variant).id} dice={tuple(dice)}\nposition={list(board)}\n"
            f"missing ({len(missing)}):\n  " + "\n  ".join(missing) +
            f"\nextra ({len(extra)}):\n  " + "\n  ".join(extra))
