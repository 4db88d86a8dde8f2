"""Feature encoders: positions (``int8`` boards, :mod:`nardy_ai.board` layout) to network inputs.

Every encoder has a name and a version; checkpoints record both and refuse to load under
another.  All encoders are vectorized over a batch of boards (no Python loop over positions)
and return ``float32`` arrays ``(M, n_features)``.

The board given to an encoder is an *afterstate* seen by the player who has just moved (the
opponent is to roll next); the evaluator's outputs are that player's outcome probabilities.

Encoders
--------
``tdgammon`` (backgammon family, 198 inputs): Tesauro's TD-Gammon encoding.  For each point
and side four truncated-unary units (``n >= 1``, ``n >= 2``, ``n >= 3``, ``(n - 3) / 2``), the
bar (``n / 2``) and borne-off checkers (``n / 15``) per side, and two side-to-move units.
``extended`` (backgammon family, 198 + 12): adds hand-made features in the spirit of gnubg:
pip counts and their difference, blots and the opponent checkers that can hit them directly,
the longest prime of each side, points made in the home board, a race flag, and checkers
back in the opponent's home.
``expert`` (backgammon family, 198 + 40): ``tdgammon`` followed by the expert features of
:mod:`nardy_ai.features_short` for both sides (exact hit chances on one and two blots, pip loss
to hits, escapes, containment, mobility, timing, primes, anchors, back game, entering, pips,
break-contact and free pips, race lead, contact).
``long`` (long nardy, 212 inputs): per point and side four truncated-unary units; checkers
still on each side's head, borne off, pip counts and their difference, the longest block
of each side, how many checkers of each side are home, and whether each side may bear off.
``long_expert`` (long nardy, 212 + 33): ``long`` followed by the expert features of
:mod:`nardy_ai.features_long` (blocks and what they hold back, escapes, mobility, head exits,
progress, race lead, LN-5 block threats, contact).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .board import BAR, OFF, OPP_BAR, OPP_OFF, pip_counts
from .errors import NardyError
from .features_long import N_FEATURES as _LONG_EXPERT_N, long_features
from .features_short import N_FEATURES as _SHORT_EXPERT_N, expert_features_t
from .variants import Variant, get_variant


class UnknownEncoder(NardyError):
    """An encoder name that is not registered, or one for another family of variants."""


def _unary_table() -> np.ndarray:
    """``(31, 8)``: for a signed point count ``c`` (index ``c + 15``) the 4 units of the mover
    (``c > 0``) followed by the 4 units of the opponent (``c < 0``)."""
    t = np.zeros((31, 8), np.float32)
    for c in range(-15, 16):
        n = abs(c)
        units = [n >= 1, n >= 2, n >= 3, max(n - 3, 0) / 2.0]
        if c > 0:
            t[c + 15, :4] = units
        elif c < 0:
            t[c + 15, 4:] = units
    return t


_UNARY = _unary_table()


def _points_unary(boards: np.ndarray) -> np.ndarray:
    """``(M, 192)``: 8 units per point (4 mover, 4 opponent), points 1..24."""
    idx = boards[:, :24].astype(np.intp) + 15
    return np.take(_UNARY, idx, axis=0).reshape(len(boards), 192)


def _longest_run(held: np.ndarray) -> np.ndarray:
    """Longest run of consecutive True along axis 1 of a ``(M, 24)`` bool array, ``(M,)``.

    On 24-bit masks: each ``x &= x >> 1`` shortens every run by one, so the number of rounds
    until nothing is left is the longest run (a handful of rounds, not 24 columns).
    """
    packed = np.packbits(held, axis=1, bitorder="little").astype(np.uint32)
    x = packed[:, 0] | (packed[:, 1] << 8) | (packed[:, 2] << 16)
    best = np.zeros(len(held), np.int32)
    while True:
        alive = x != 0
        if not alive.any():
            return best
        best += alive
        x &= x >> 1


def encode_tdgammon(boards: np.ndarray) -> np.ndarray:
    """TD-Gammon's 198 inputs for backgammon-family afterstates (module docstring)."""
    m = len(boards)
    out = np.empty((m, 198), np.float32)
    out[:, :192] = _points_unary(boards)
    _bar_off_and_turn(boards, out)
    return out


def _bar_off_and_turn(boards: np.ndarray, out: np.ndarray) -> None:
    """Columns 192-197 of TD-Gammon's inputs into ``out``: the bar (per 2 checkers) and borne-off
    (per 15) counts of both sides, and the side to move."""
    out[:, 192] = boards[:, BAR] / 2.0
    out[:, 193] = boards[:, OPP_BAR] / 2.0
    out[:, 194] = boards[:, OFF] / 15.0
    out[:, 195] = boards[:, OPP_OFF] / 15.0
    out[:, 196] = 0.0          # side to move: always the opponent of the player who moved
    out[:, 197] = 1.0


def _hit_numbers(opp_points: np.ndarray, blot: np.ndarray) -> np.ndarray:
    """Opponent checkers (not on the bar) 1-6 pips behind each mover blot: a rough shot count."""
    opp = opp_points.astype(np.int32)
    shots = np.zeros(len(blot), np.int32)
    for d in range(1, 7):
        # The opponent moves towards the mover's point 24: it hits point p from point p - d.
        shifted = np.zeros_like(opp)
        shifted[:, d:] = opp[:, :-d]
        shots += (shifted * blot).sum(axis=1)
    return shots


def encode_extended(boards: np.ndarray) -> np.ndarray:
    """``tdgammon`` plus 12 hand-made features (module docstring), 210 inputs."""
    m = len(boards)
    base = encode_tdgammon(boards)
    pts = boards[:, :24].astype(np.int32)
    mover = np.maximum(pts, 0)
    opp = np.maximum(-pts, 0)
    pips = pip_counts(boards, "backgammon").astype(np.float32)
    mover_blot = mover == 1
    opp_blot = opp == 1
    # The opponent can also hit from its bar (entering on the mover's points 19-24).
    extra = np.empty((m, 12), np.float32)
    extra[:, 0] = pips[:, 0] / 167.0
    extra[:, 1] = pips[:, 1] / 167.0
    extra[:, 2] = (pips[:, 1] - pips[:, 0]) / 50.0
    extra[:, 3] = mover_blot.sum(1) / 5.0
    extra[:, 4] = np.minimum(_hit_numbers(opp, mover_blot), 15) / 15.0
    extra[:, 5] = opp_blot.sum(1) / 5.0
    extra[:, 6] = _longest_run(mover >= 2) / 6.0
    extra[:, 7] = _longest_run(opp >= 2) / 6.0
    extra[:, 8] = (mover[:, :6] >= 2).sum(1) / 6.0
    extra[:, 9] = (opp[:, 18:] >= 2).sum(1) / 6.0
    # Race: no contact left (every mover checker is past every opponent checker).
    mover_back = np.where(mover.any(1), 23 - np.argmax(mover[:, ::-1] > 0, axis=1), -1)
    mover_back = np.where(boards[:, BAR] > 0, 24, mover_back)
    opp_back = np.where(opp.any(1), np.argmax(opp > 0, axis=1), 24)
    opp_back = np.where(boards[:, OPP_BAR] > 0, -1, opp_back)
    extra[:, 10] = (mover_back < opp_back).astype(np.float32)
    extra[:, 11] = opp[:, :6].sum(1) / 5.0 + boards[:, OPP_BAR] / 5.0
    return np.concatenate([base, extra], axis=1)


def _long_linear_weights() -> np.ndarray:
    """``(96, 13)``: the long-nardy features that are linear in the per-point checker counts
    and held-point indicators ``[mover counts | opponent counts | mover held | opponent held]``
    (mover's numbering; the opponent's own point index of mover index i is (i + 12) mod 24)."""
    W = np.zeros((96, 13), np.float32)
    mc, oc, mh, oh = 0, 24, 48, 72
    pip = np.arange(1, 25, dtype=np.float32)
    opp_pip = ((np.arange(24) + 12) % 24 + 1).astype(np.float32)
    W[mc + 23, 0] = 1 / 15                       # mover's head
    W[oc + 11, 1] = 1 / 15                       # opponent's head (mover point 12)
    W[mc:mc + 24, 2] = pip / 360                 # pip counts
    W[oc:oc + 24, 3] = opp_pip / 360
    W[mc:mc + 24, 4] = -pip / 60                 # pip lead of the opponent's ... difference
    W[oc:oc + 24, 4] = opp_pip / 60
    W[mc:mc + 6, 5] = 1 / 15                     # checkers home (off added separately)
    W[oc + 12:oc + 18, 6] = 1 / 15
    W[mh:mh + 24, 7] = 1 / 12                    # points held
    W[oh:oh + 24, 8] = 1 / 12
    W[mc + 12:mc + 24, 9] = 1 / 15               # checkers still in the first half
    W[oc:oc + 12, 10] = 1 / 15
    W[mh + 12:mh + 18, 11] = 1 / 6               # points held in the other side's home
    W[oh:oh + 6, 12] = 1 / 6
    return W


_LONG_W = _long_linear_weights()
_ROT12 = (np.arange(24) + 12) % 24


def encode_long(boards: np.ndarray) -> np.ndarray:
    """Long-nardy inputs (module docstring), 212 inputs."""
    m = len(boards)
    pts = boards[:, :24]
    own, opp = pts > 0, pts < 0
    x = np.empty((m, 96), np.float32)
    np.maximum(pts, 0, out=x[:, :24], casting="unsafe")
    np.negative(np.minimum(pts, 0), out=x[:, 24:48], casting="unsafe")
    x[:, 48:72] = own
    x[:, 72:] = opp
    lin = x @ _LONG_W
    out = np.empty((m, 212), np.float32)
    out[:, :192] = _points_unary(boards)
    out[:, 192:194] = lin[:, 0:2]
    out[:, 194] = boards[:, OFF] / 15.0
    out[:, 195] = boards[:, OPP_OFF] / 15.0
    out[:, 196:199] = lin[:, 2:5]
    out[:, 199] = _longest_run(own) / 6.0
    out[:, 200] = _longest_run(opp[:, _ROT12]) / 6.0     # in the opponent's own order
    out[:, 201] = lin[:, 5] + out[:, 194]
    out[:, 202] = lin[:, 6] + out[:, 195]
    out[:, 203] = out[:, 201] > 0.999
    out[:, 204] = out[:, 202] > 0.999
    out[:, 205:211] = lin[:, 7:13]
    out[:, 211] = 1.0                                     # constant: the opponent is to roll
    return out


@dataclass(frozen=True)
class Encoder:
    """A named, versioned feature encoder for one family of variants."""

    name: str
    version: str
    family: str
    n_features: int
    fn: Callable[[np.ndarray], np.ndarray]
    #: The encoder whose inputs are exactly this one's first inputs ("" = none): a net on the
    #: base encoder warm-starts a net on this one exactly (new first-layer columns zero).
    extends: str = ""

    def __call__(self, boards: np.ndarray) -> np.ndarray:
        """Encode ``(M, 28)`` afterstates to ``(M, n_features)`` float32."""
        return self.fn(np.asarray(boards))


def extends(encoder: Encoder | str, base: Encoder | str) -> bool:
    """Whether ``base``'s inputs are exactly the first inputs of ``encoder`` (declared by
    ``Encoder.extends``, followed through chains); an encoder extends itself."""
    name = encoder if isinstance(encoder, str) else encoder.name
    target = base if isinstance(base, str) else base.name
    while name:
        if name == target:
            return True
        name = ENCODERS[name].extends if name in ENCODERS else ""
    return False


def encode_expert(boards: np.ndarray) -> np.ndarray:
    """The ``expert`` encoder: TD-Gammon's 198 inputs, then :func:`nardy_ai.features_short.expert_features`."""
    b = np.asarray(boards)
    m = len(b)
    out = np.empty((m, 198 + _SHORT_EXPERT_N), np.float32)
    # The 198 inputs of encode_tdgammon (a test checks they are equal), written into ``out``
    # a few hundred rows at a time: a small buffer instead of two arrays of the whole batch.
    units = out[:, :192].reshape(m, 24, 8)                    # a view: rows of 24 x 8 units
    buf = np.empty((256, 24, 8), np.float32)
    for s in range(0, m, 256):
        rows = b[s:s + 256, :24].astype(np.intp) + 15
        np.take(_UNARY, rows, axis=0, out=buf[:len(rows)])
        units[s:s + len(rows)] = buf[:len(rows)]
    _bar_off_and_turn(b, out)
    out[:, 198:] = expert_features_t(b).T
    return out


def encode_long_expert(boards: np.ndarray) -> np.ndarray:
    """The ``long_expert`` inputs: the ``long`` encoder's 212 followed by
    :func:`nardy_ai.features_long.long_features`, ``(M, 212 + N_FEATURES)`` float32."""
    boards = np.asarray(boards)
    return np.concatenate([encode_long(boards), long_features(boards)], axis=1)


ENCODERS: dict[str, Encoder] = {
    e.name: e for e in (
        Encoder("tdgammon", "1", "short", 198, encode_tdgammon),
        Encoder("extended", "1", "short", 210, encode_extended, extends="tdgammon"),
        Encoder("expert", "1", "short", 198 + _SHORT_EXPERT_N, encode_expert, extends="tdgammon"),
        Encoder("long", "1", "long", 212, encode_long),
        Encoder("long_expert", "1", "long", 212 + _LONG_EXPERT_N, encode_long_expert, extends="long"),
    )
}
DEFAULT_ENCODER = {"short": "tdgammon", "long": "long"}


def get_encoder(name: str | None, variant: str | Variant) -> Encoder:
    """The encoder called ``name`` (default: the family's default), checked against the variant."""
    v = get_variant(variant)
    name = name or DEFAULT_ENCODER[v.family]
    if name not in ENCODERS:
        raise UnknownEncoder(f"unknown encoder {name!r}; known: {', '.join(ENCODERS)}")
    enc = ENCODERS[name]
    if enc.family != v.family:
        raise UnknownEncoder(f"encoder {name!r} is for {enc.family} nardy, not {v.id}")
    return enc
