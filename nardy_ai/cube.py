"""Stakes: the doubling cube (CUBE-1 with BG-J, BG-M, BG-B) and dave (CUBE-D, LN-8), as data and
pure functions, plus the cube-decision arithmetic the agents use.

Rules.  A :class:`CubeState` is the stake of one game: its ``value``, who has *access*
(``owner``: :data:`CENTRE` = both players, else the player 0/1 who alone may double or offer
next), a pending offer, and whether the cube was ever turned (BG-J).  :func:`apply` plays one
action on it and refuses an illegal one with :class:`~nardy_ai.errors.IllegalCubeAction`
naming the rule.  The cube and dave share one model: the taker of a raise gets the access
(CUBE-1: the taker owns the cube; CUBE-D: after a raise only the other player may offer).  They
differ in the progression (cube ×2; dave geometric ×2 or arithmetic +1), in the options (beaver,
Jacoby and automatic doubles exist for the cube only) and in scoring (dave: no mars, LN-8).

Decisions.  :func:`janowski_equity` turns cubeless outcome probabilities (as
:mod:`nardy_ai.model` defines them) into cubeful money equity with Janowski's model: a mix of
the dead-cube equity and the piecewise-linear live-cube equity, weighted by the cube life
``x`` (:func:`cube_life`: by position class, gnubg's published values).  A raise to ``r``
times the stake (``r = 2`` for the cube, ``(v + 1) / v`` for arithmetic dave) enters the take
and cash points as ``1 / r`` in place of Janowski's ``1 / 2``.  The decisions themselves (no
double, double/take, double/pass, at 0 ply or with a lookahead) are :mod:`nardy_ai.cubeful`'s.
:func:`race_win_chance` is the pip-count rule of the bots without an evaluator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .board import CUBE_ACCESS, CUBE_OWNERS, pip_counts
from .classes import class_names, position_classes
from .errors import IllegalCubeAction, UnknownOption
from .scoring import stake_points
from .variants import Variant, get_variant, with_options

#: ``owner`` of a centred cube (CUBE-1) or of a dave game where both may offer (CUBE-D).
CENTRE = -1
#: The stakes ``play_games`` and ``nardy tournament --stakes`` accept.
PLAY_STAKES = ("none", "cube", "dave", "dave-geometric", "dave-arithmetic")
ACTIONS = ("double", "take", "pass", "beaver", "auto")


def stakes_variant(variant: str | Variant, stakes: str | None) -> Variant:
    """The variant a game is played under with ``stakes`` (one of :data:`PLAY_STAKES`; None =
    cubeless, as before stakes existed): ``stakes`` and ``dave_progression`` set as options."""
    v = get_variant(variant)
    if stakes is None or stakes == "none":
        return v
    if stakes not in PLAY_STAKES:
        raise UnknownOption(f"stakes must be one of {', '.join(PLAY_STAKES)}, got {stakes!r}")
    if stakes == "cube":
        if v.stakes == "dave":
            raise UnknownOption(f"stakes cube (CUBE-1) on {v.id}, a dave variant (LN-8): "
                                f"play the cube on {v.id.replace('_dave', '')}")
        return with_options(v, stakes="cube")
    options = {"stakes": "dave"}
    if stakes != "dave":
        options["dave_progression"] = stakes.split("-", 1)[1]
    if v.koks:
        options["koks"] = False                  # LN-8: no mars, oin or koks with dave
    return with_options(v, **options)


def stakes_name(v: Variant, stakes: str | None) -> str:
    """``"none"``, ``"cube"``, ``"dave-geometric"`` or ``"dave-arithmetic"`` for records."""
    if stakes is None or stakes == "none":
        return "none"
    return "cube" if v.stakes == "cube" else f"dave-{v.dave_progression}"


def progression(v: Variant) -> str:
    """How the stake grows in games of ``v``: ``"geometric"`` (the cube, CUBE-1) or the
    variant's dave progression (CUBE-D)."""
    return v.dave_progression if v.stakes == "dave" else "geometric"


def next_stake(value, progression: str = "geometric"):
    """The stake after a raise (int or int array): ×2, or +1 for arithmetic dave (CUBE-D)."""
    return value + 1 if progression == "arithmetic" else value * 2


@dataclass(frozen=True)
class CubeState:
    """The stake of one game.

    kind ``"cube"`` or ``"dave"``; value the current stake; owner :data:`CENTRE` or the player
    (0, 1) with access; offer the player whose raise awaits an answer (None when none);
    beavered: the pending offer is a beaver (BG-B); turned: a raise was ever taken (BG-J);
    autos: automatic doubles so far (BG-M); winner/points once a pass ended the game.
    """
    kind: str = "cube"
    progression: str = "geometric"
    value: int = 1
    owner: int = CENTRE
    offer: int | None = None
    beavered: bool = False
    turned: bool = False
    autos: int = 0
    winner: int | None = None
    points: int = 0

    @property
    def rule(self) -> str:
        return "CUBE-1" if self.kind == "cube" else "CUBE-D"

    @property
    def next_value(self) -> int:
        return int(next_stake(self.value, self.progression))


def new_state(v: Variant) -> CubeState:
    """The stake at the start of a game of a variant with ``stakes`` cube or dave."""
    if v.stakes not in ("cube", "dave"):
        raise UnknownOption(f"variant {v.id} has no stakes (stakes={v.stakes!r})")
    return CubeState(v.stakes, progression(v))


def may_double(s: CubeState, player: int) -> bool:
    """Whether ``player`` (on roll, before rolling) may double / offer now."""
    return s.winner is None and s.offer is None and s.owner in (CENTRE, player)


def apply(s: CubeState, player: int, action: str, v: Variant | None = None,
          cap: int | None = None) -> CubeState:
    """The state after ``player`` does ``action`` (one of :data:`ACTIONS`); ``v`` gives the
    options (beaver, murphy_cap).  ``auto`` is an automatic double (BG-M; ``player`` ignored).
    Raises :class:`IllegalCubeAction` naming the rule."""
    beaver = bool(v and v.beaver)
    cap = (v.murphy_cap if v else 0) if cap is None else cap
    if s.winner is not None:
        raise IllegalCubeAction(f"{s.rule}: the game is over (player {s.winner} won by a pass)")
    if action == "auto":
        if s.kind != "cube" or s.autos >= cap or s.offer is not None or s.turned:
            raise IllegalCubeAction(f"BG-M: no automatic double here (cube {s.kind}, "
                                    f"{s.autos} of {cap} done)")
        return replace(s, value=s.value * 2, autos=s.autos + 1)
    if action == "double":
        if s.offer is not None:
            raise IllegalCubeAction(f"{s.rule}: player {s.offer}'s raise awaits an answer")
        if s.owner not in (CENTRE, player):
            raise IllegalCubeAction(
                f"{s.rule}: player {player} may not double: "
                + ("the opponent owns the cube" if s.kind == "cube"
                   else "after a raise only the other player may offer next"))
        return replace(s, offer=player)
    if s.offer is None or s.offer == player:
        raise IllegalCubeAction(f"{s.rule}: player {player} has no raise to answer")
    if action == "pass":
        return replace(s, offer=None, winner=s.offer, points=s.value)
    if action == "take":
        # BG-B: after a beaver the beaverer keeps the cube; otherwise the taker owns it.
        owner = s.offer if s.beavered else player
        return replace(s, value=s.next_value, owner=owner, offer=None, beavered=False, turned=True)
    if action == "beaver":
        if s.kind != "cube" or not beaver or s.beavered:
            raise IllegalCubeAction("BG-B: no beaver here" + (" (the option is off)" if not beaver
                                                              else " (a beaver is answered by take or pass)"))
        return replace(s, value=s.next_value, owner=player, offer=player, beavered=True, turned=True)
    raise IllegalCubeAction(f"{s.rule}: unknown cube action {action!r}; known: {', '.join(ACTIONS)}")


def game_points(s: CubeState, level: int, v: Variant) -> int:
    """Points won by bearing off at result ``level``: BG-J (a single game while the cube was
    never turned, automatic doubles included), LN-8 (dave: win = stake), else the level's points
    times the stake."""
    if s.kind == "dave":
        return s.value
    return int(stake_points(np.array([level]), np.array([s.value]), np.array([s.turned]), v)[0])


#: Stakes are int64: no raise is offered from this stake on (CUBE-1 sets no limit; 2**61 is ours).
MAX_STAKE = 2 ** 61


@dataclass(frozen=True)
class Stakes:
    """The stake of every game of a batch, as arrays: the game core's, the game runner's and
    the agents' one representation of the cube and of dave (agents see it through
    :meth:`views`; :class:`CubeState` is the one-game form the rules checker :func:`apply` uses).

    ``kind`` ``"cube"`` or ``"dave"``, ``progression`` ``"geometric"`` / ``"arithmetic"``;
    ``value`` ``(N,)`` int64 the stake; ``owner`` ``(N,)`` int64 :data:`CENTRE` or the player
    (0 white, 1 black) with access; ``turned`` ``(N,)`` bool: a raise was ever taken (BG-J).
    """
    kind: str
    progression: str
    value: np.ndarray
    owner: np.ndarray
    turned: np.ndarray

    @classmethod
    def start(cls, v: Variant, n: int) -> Stakes:
        """Stake 1, cube in the centre, for ``n`` games of a variant with stakes."""
        s = new_state(v)
        return cls(s.kind, s.progression, np.ones(n, np.int64), np.full(n, CENTRE, np.int64),
                   np.zeros(n, bool))

    def next_value(self, games) -> np.ndarray:
        """The stake after a raise in ``games`` (CUBE-1 ×2, CUBE-D ×2 or +1)."""
        return next_stake(self.value[games], self.progression)

    def may_double(self, games: np.ndarray, player: np.ndarray) -> np.ndarray:
        """Whether ``player`` (on roll, before rolling) may double / offer in each of ``games``
        (:meth:`CubeViews.may_raise`)."""
        return self.views(games, player).may_raise()

    def views(self, games: np.ndarray, viewer: np.ndarray, on_roll: bool = False) -> CubeViews:
        """The stakes of ``games`` as the deciding ``viewer`` (one player per game) sees them:
        the ``cubes`` argument of agents' ``double`` / ``take`` / ``beaver`` calls.  ``on_roll``:
        the viewer is on roll (a doubler answering a beaver, BG-B)."""
        games = np.asarray(games, np.int64)
        o = self.owner[games]
        access = np.where(o == CENTRE, 0, np.where(o == np.asarray(viewer), 1, -1))
        return CubeViews(self.kind, self.value[games].copy(), access.astype(np.int64),
                         np.asarray(self.next_value(games), np.int64), self.turned[games].copy(),
                         np.full(len(games), bool(on_roll)))


@dataclass(frozen=True)
class CubeViews:
    """The stake of a batch of cube decisions, each seen by the player deciding: arrays of one
    row per position (a view of :class:`Stakes`, or read from the protocol's JSON ``cube``).

    ``value`` the stake; ``access`` +1 the decider holds the cube (may raise next), -1 the
    opponent does, 0 centred (:data:`~nardy_ai.board.CUBE_ACCESS`); ``next`` the stake after a
    raise; ``turned`` a raise was ever taken (BG-J); ``on_roll`` the decider is on roll (a
    doubler answering a beaver).  Agents that want one dict per position iterate over it (or
    index it): ``{"value", "owner", "next", "turned", "stakes"}`` (plus ``"on_roll": True``),
    the protocol's JSON form.
    """
    kind: str
    value: np.ndarray
    access: np.ndarray
    next: np.ndarray
    turned: np.ndarray
    on_roll: np.ndarray

    def __len__(self) -> int:
        return len(self.value)

    def __getitem__(self, i: int) -> dict:
        d = {"value": int(self.value[i]), "owner": CUBE_OWNERS[int(self.access[i])],
             "next": int(self.next[i]), "turned": bool(self.turned[i]), "stakes": self.kind}
        if self.on_roll[i]:
            d["on_roll"] = True
        return d

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def may_raise(self) -> np.ndarray:
        """Whether the decider may double / offer now (CUBE-1, CUBE-D: the cube is centred or
        theirs; the stake is below :data:`MAX_STAKE`)."""
        return (self.access >= 0) & (self.value < MAX_STAKE)

    def select(self, rows) -> CubeViews:
        """The views of some of the positions (an index or mask)."""
        return CubeViews(self.kind, self.value[rows], self.access[rows], self.next[rows],
                         self.turned[rows], self.on_roll[rows])

    def opponent(self) -> CubeViews:
        """The same stakes seen by the other player (who answers the raise; not on roll)."""
        return replace(self, access=-self.access, on_roll=np.zeros(len(self), bool))

    def raised(self, progression: str, access: int = 1) -> CubeViews:
        """The stakes after a raise was taken, seen by the player now on roll (not the one
        answering a beaver): the stake is ``next``, ``access`` +1 that player holds the cube
        (it took the raise), -1 the other does; its next stake follows ``progression``."""
        n = len(self)
        return CubeViews(self.kind, self.next.copy(), np.full(n, access, np.int64),
                         np.asarray(next_stake(self.next, progression), np.int64), np.ones(n, bool),
                         np.zeros(n, bool))

    @classmethod
    def from_dicts(cls, cubes, v: Variant) -> CubeViews:
        """Views of cube dicts (the protocol's JSON ``cube`` objects, missing keys defaulted:
        value 1, centred, the variant's next stake, not turned, not on roll); a
        :class:`CubeViews` is returned as it is."""
        if isinstance(cubes, CubeViews):
            return cubes
        prog = progression(v)
        value = np.array([int(c.get("value", 1)) for c in cubes], np.int64)
        nxt = np.array([int(c.get("next", next_stake(int(c.get("value", 1)), prog))) for c in cubes], np.int64)
        return cls(v.stakes if v.stakes in ("cube", "dave") else "cube", value,
                   np.array([CUBE_ACCESS[c.get("owner", "centre")] for c in cubes], np.int64), nxt,
                   np.array([bool(c.get("turned", False)) for c in cubes], bool),
                   np.array([bool(c.get("on_roll", False)) for c in cubes], bool))


# --- decisions --------------------------------------------------------------------------------

#: Cube life (Janowski's ``x``) per position class (:mod:`nardy_ai.classes`), gnubg's published
#: settings: contact and crashed 0.68, the one-sided bear-off 0.6; a race by pip count
#: (:data:`RACE_LIFE`).  Long nardy uses the same table for its classes (no published values
#: exist; ours are checked by the dave measurement of the model cards).
CUBE_LIFE = {"contact": 0.68, "crashed": 0.68, "bearoff": 0.6}
#: Race cube life ``a + b × pips`` of the player deciding, clipped to ``[lo, hi]`` (gnubg's
#: 0.55 + 0.00125 × pips within [0.6, 0.7]).
RACE_LIFE = (0.55, 0.00125, 0.6, 0.7)


def cube_life(boards: np.ndarray, v: Variant) -> np.ndarray:
    """Janowski's ``x`` ``(N,)`` for positions ``(N, 28)`` seen by the player deciding: by
    position class (:data:`CUBE_LIFE`, :data:`RACE_LIFE` from the decider's pip count)."""
    boards = np.asarray(boards, np.int8)
    names = class_names(v)
    classes = position_classes(boards, v)
    a, b, lo, hi = RACE_LIFE
    pips = pip_counts(boards, v)[:, 0]
    table = np.array([CUBE_LIFE.get(c, np.nan) for c in names])
    x = table[classes]
    race = classes == names.index("race")
    return np.where(race, np.clip(a + b * pips, lo, hi), x)


def win_values(probs: np.ndarray, v: Variant) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(p, W, L)`` from outcome probabilities ``(N, 2L - 1)`` (:mod:`nardy_ai.model` layout):
    the win chance and the mean points of a win and of a loss (cubeless, stake 1).  With dave
    (LN-8) or ``single=True`` games W = L = 1."""
    probs = np.asarray(probs, float)
    s = v.scoring
    levels = len(s)
    p = np.clip(probs[:, 0], 1e-6, 1 - 1e-6)
    win = p * s[0]
    lose = (1 - p) * s[0]
    for lv in range(2, levels + 1):
        step = s[lv - 1] - s[lv - 2]
        win = win + step * probs[:, lv - 1]
        lose = lose + step * probs[:, levels - 1 + lv - 1]
    if v.stakes == "dave":
        return p, np.ones_like(p), np.ones_like(p)
    return p, np.maximum(win / p, 1.0), np.maximum(lose / (1 - p), 1.0)


def take_cash_points(W, L, x, r=2.0):
    """Janowski's take point (the least win chance that takes a raise to ``r`` × the stake) and
    cash point of the player with ``W``/``L``: ``TP = (L - 1/r) / (W + L + x/r)``,
    ``CP = (L + 1/r + x/r) / (W + L + x/r)`` (``r = 2``: Janowski's formulas)."""
    W, L, x, r = (np.asarray(a, float) for a in (W, L, x, r))
    den = W + L + x / r
    tp = (L - 1 / r) / den
    cp = 1 - (W - 1 / r) / den
    return np.clip(tp, 0, 1), np.clip(cp, 0, 1)


def janowski_equity(p, W, L, x, access, r=2.0):
    """Cubeful equity in units of the current stake of the player with win chance ``p``:
    ``(1 - x) × dead + x × live``.  ``access`` ``(N,)`` int: 0 centred, 1 the player owns
    the cube / has the right to offer, -1 the opponent has it.  The live-cube equity is
    piecewise linear in ``p``: from -L at 0 through -1 at the take point (if the opponent has
    access), +1 at the cash point (if the player has access) to W at 1."""
    p, W, L, x, access, r = np.broadcast_arrays(*(np.asarray(a, float) for a in (p, W, L, x, access, r)))
    tp, cp = take_cash_points(W, L, x, r)
    dead = p * (W + L) - L
    lo_p = np.where(access <= 0, tp, 0.0)        # the opponent can cash below our take point
    hi_p = np.where(access >= 0, cp, 1.0)        # we can cash above our cash point
    lo_e = np.where(access <= 0, -1.0, -L)
    hi_e = np.where(access >= 0, 1.0, W)
    eps = 1e-9
    below = -L + (lo_e + L) * p / np.maximum(lo_p, eps)
    middle = lo_e + (hi_e - lo_e) * (p - lo_p) / np.maximum(hi_p - lo_p, eps)
    above = hi_e + (W - hi_e) * (p - hi_p) / np.maximum(1 - hi_p, eps)
    live = np.where(p < lo_p, below, np.where(p > hi_p, above, middle))
    return (1 - x) * dead + x * live


def raise_ratio(cubes, v: Variant) -> np.ndarray:
    """``r`` per position: the stake after the raise over the stake now (a :class:`CubeViews`
    or cube dicts)."""
    c = CubeViews.from_dicts(cubes, v)
    return c.next.astype(float) / c.value.astype(float)


# --- the pip-count rule of bots without an evaluator ---------------------------------------------

#: Pip-count cube rule: double from this estimated win chance, take down to :data:`RACE_TAKE`.
RACE_DOUBLE = 0.70
RACE_TAKE = 0.25


def race_win_chance(boards: np.ndarray, v: Variant, on_roll: bool = True) -> np.ndarray:
    """Estimated win chance ``(N,)`` of the player whose view ``boards`` are, from the pip
    counts alone: ``Φ((opp - me ± 4) / sqrt(2.6 (me + opp)))``, 4 pips being about the worth
    of being on roll (``on_roll``: the player; else the opponent).  A rough race formula: it
    gives about 70 % to an 8 % lead on roll at 100 pips."""
    pips = pip_counts(boards, v).astype(float)
    me, opp = pips[:, 0], pips[:, 1]
    d = opp - me + (4.0 if on_roll else -4.0)
    z = d / np.sqrt(2.6 * np.maximum(me + opp, 1.0))
    return 0.5 * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))
