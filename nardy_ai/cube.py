"""Stakes: the doubling cube (CUBE-1 with BG-J, BG-M, BG-B) and dave (CUBE-D, LN-8), as data and
pure functions, plus the cube-decision arithmetic the agents use.

Rules.  A :class:`Stakes` is the stake of a batch of games (a single game is a batch of one)
as arrays: each game's ``value``, who has *access* (``owner``: :data:`CENTRE` = both players,
else the player 0/1 who alone may double or offer next), a pending offer, whether the cube
was ever turned (BG-J), and, for cube questions, the player deciding (``viewer``).
:func:`apply` plays one action in some of its games and refuses an illegal one with
:class:`~nardy_ai.errors.IllegalCubeAction` naming the rule; :func:`may_double` and
:func:`game_points` are the other checks.  The cube and dave share one model: the taker of a
raise gets the access (CUBE-1: the taker owns the cube; CUBE-D: after a raise only the other
player may offer next).  They differ in the progression (cube ×2; dave geometric ×2 or
arithmetic +1), in the options (beaver, Jacoby and automatic doubles exist for the cube only) and in
scoring (dave: no mars, LN-8).

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


#: Stakes are int64: no raise is offered from this stake on (CUBE-1 sets no limit; 2**61 is ours).
MAX_STAKE = 2 ** 61
#: ``offer`` where no raise awaits an answer, ``winner`` where no pass ended the game.
NOBODY = -1


@dataclass(frozen=True, eq=False)
class Stakes:
    """The stakes of a batch of games, or of positions awaiting a cube decision (a single game
    is a batch of one): the game core's, the game runner's, the rules checker's and the agents'
    one representation of the cube (CUBE-1) and of dave (CUBE-D).  Every array is ``(N,)``, one
    row per game or position.

    The batch's rules, from its variant: ``kind`` ``"cube"`` or ``"dave"``; ``progression``
    ``"geometric"`` / ``"arithmetic"`` (:func:`progression`); ``beaver`` whether BG-B is on;
    ``murphy_cap`` the automatic doubles BG-M allows a game (0: off).

    Each row's stake: ``value`` int64 the stake; ``owner`` int64 :data:`CENTRE` or the player
    (0 white, 1 black) who alone may raise next; ``next`` int64 the stake after a raise (the
    progression's, unless the protocol's JSON said otherwise); ``turned`` bool a raise was ever
    taken (BG-J); ``offer`` int64 the player whose raise awaits an answer (:data:`NOBODY`);
    ``beavered`` bool that raise is a beaver (BG-B); ``autos`` int64 the automatic doubles so
    far (BG-M); ``winner`` int64 the player who won by a pass (:data:`NOBODY`).

    Who sees it: ``viewer`` int64 the player deciding, whose ``access`` is +1 when it holds the
    cube, -1 when the opponent does, 0 centred (:data:`~nardy_ai.board.CUBE_ACCESS`);
    ``on_roll`` bool the viewer is on roll when answering (a doubler answering a beaver).
    :meth:`views` sets them for cube questions; agents that want one dict per position iterate
    (or index) the batch: ``{"value", "owner", "next", "turned", "stakes"}`` (plus ``"on_roll":
    True``), the protocol's JSON form, which :meth:`from_dicts` reads back.

    The rules are pure functions of it: :func:`may_double`, :func:`apply` (refuses an illegal
    action naming the rule) and :func:`game_points`.
    """
    kind: str
    progression: str
    beaver: bool
    murphy_cap: int
    value: np.ndarray
    owner: np.ndarray
    next: np.ndarray
    turned: np.ndarray
    offer: np.ndarray
    beavered: np.ndarray
    autos: np.ndarray
    winner: np.ndarray
    viewer: np.ndarray
    on_roll: np.ndarray

    #: The per-row arrays, in field order.
    ROWS = ("value", "owner", "next", "turned", "offer", "beavered", "autos", "winner", "viewer", "on_roll")

    @classmethod
    def start(cls, v: Variant, n: int) -> Stakes:
        """``n`` games of a variant with stakes (cube or dave) at their start: stake 1, the cube
        in the centre (both may offer, CUBE-D), no raise pending."""
        if v.stakes not in ("cube", "dave"):
            raise UnknownOption(f"variant {v.id} has no stakes (stakes={v.stakes!r})")
        return _blank(v.stakes, progression(v), bool(v.beaver), int(v.murphy_cap), n)

    def fresh(self, n: int) -> Stakes:
        """``n`` games at their start under this batch's rules (stake 1, centred)."""
        return _blank(self.kind, self.progression, self.beaver, self.murphy_cap, n)

    @classmethod
    def from_dicts(cls, cubes, v: Variant) -> Stakes:
        """The stakes of cube dicts (the protocol's JSON ``cube`` objects, seen by the player
        deciding, missing keys defaulted: value 1, centred, the variant's next stake, not
        turned, not on roll) under ``v``'s rules; a :class:`Stakes` is returned as it is."""
        if isinstance(cubes, Stakes):
            return cubes
        prog = progression(v)
        value = np.array([int(c.get("value", 1)) for c in cubes], np.int64)
        access = np.array([CUBE_ACCESS[c.get("owner", "centre")] for c in cubes], np.int64)
        out = _blank(v.stakes if v.stakes in ("cube", "dave") else "cube", prog, bool(v.beaver),
                     int(v.murphy_cap), len(value))
        return replace(out, value=value, owner=np.where(access == 0, CENTRE, np.where(access > 0, 0, 1)),
                       next=np.array([int(c.get("next", next_stake(int(c.get("value", 1)), prog)))
                                      for c in cubes], np.int64),
                       turned=np.array([bool(c.get("turned", False)) for c in cubes], bool),
                       on_roll=np.array([bool(c.get("on_roll", False)) for c in cubes], bool))

    @classmethod
    def concat(cls, parts: list[Stakes]) -> Stakes:
        """One batch of the rows of ``parts`` (stakes under the same rules), in order."""
        first = parts[0]
        return replace(first, **{k: np.concatenate([getattr(p, k) for p in parts]) for k in cls.ROWS})

    @property
    def rule(self) -> str:
        """The rule id of this kind of stakes: ``CUBE-1`` or ``CUBE-D``."""
        return "CUBE-1" if self.kind == "cube" else "CUBE-D"

    @property
    def access(self) -> np.ndarray:
        """``(N,)`` int64: +1 the viewer holds the cube (may raise next), -1 the opponent does,
        0 centred."""
        return np.where(self.owner == CENTRE, 0, np.where(self.owner == self.viewer, 1, -1)).astype(np.int64)

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

    def select(self, rows) -> Stakes:
        """The stakes of some of the rows (an index array or a mask), as a new batch."""
        return replace(self, **{k: getattr(self, k)[rows] for k in self.ROWS})

    def put(self, rows, new: Stakes) -> Stakes:
        """This batch with ``rows`` replaced by the rows of ``new`` (``len(rows)`` of them)."""
        out = {}
        for k in self.ROWS:
            a = getattr(self, k).copy()
            a[rows] = getattr(new, k)
            out[k] = a
        return replace(self, **out)

    def views(self, games, viewer, on_roll=False) -> Stakes:
        """The stakes of ``games`` as the deciding ``viewer`` (a player per game, or one for all)
        sees them: the ``cubes`` argument of agents' ``double`` / ``take`` / ``beaver`` calls.
        ``on_roll``: the viewer is on roll (a doubler answering a beaver, BG-B)."""
        s = self.select(np.asarray(games, np.int64))
        n = len(s)
        return replace(s, viewer=np.broadcast_to(np.asarray(viewer, np.int64), (n,)).copy(),
                       on_roll=np.broadcast_to(np.asarray(on_roll, bool), (n,)).copy())

    def may_raise(self) -> np.ndarray:
        """Whether the viewer may double / offer now (:func:`may_double`)."""
        return may_double(self, self.viewer)

    def opponent(self) -> Stakes:
        """The same stakes seen by the other player (who answers the raise; not on roll)."""
        return replace(self, viewer=1 - self.viewer, on_roll=np.zeros(len(self), bool))

    def raised(self, access: int = 1) -> Stakes:
        """The stakes after a raise was taken, as the player then on roll sees them (not one
        answering a beaver): the stake is ``next``, ``access`` +1 that player holds the cube (it
        took the raise), -1 the other does; the next stake follows the progression."""
        n = len(self)
        owner = self.viewer if access > 0 else 1 - self.viewer
        return replace(self, value=self.next.copy(), next=np.asarray(next_stake(self.next, self.progression), np.int64),
                       owner=owner.copy(), turned=np.ones(n, bool), offer=np.full(n, NOBODY, np.int64),
                       beavered=np.zeros(n, bool), winner=np.full(n, NOBODY, np.int64),
                       on_roll=np.zeros(n, bool))

    def _set(self, rows: np.ndarray, **values) -> Stakes:
        """This batch with ``values`` (name -> array of ``len(rows)``) written into ``rows``."""
        out = {}
        for k, x in values.items():
            a = getattr(self, k).copy()
            a[rows] = x
            out[k] = a
        return replace(self, **out)


def _blank(kind: str, prog: str, beaver: bool, murphy_cap: int, n: int) -> Stakes:
    none = np.full(n, NOBODY, np.int64)
    return Stakes(kind, prog, beaver, murphy_cap, np.ones(n, np.int64), np.full(n, CENTRE, np.int64),
                  np.asarray(next_stake(np.ones(n, np.int64), prog), np.int64), np.zeros(n, bool),
                  none, np.zeros(n, bool), np.zeros(n, np.int64), none.copy(), np.zeros(n, np.int64),
                  np.zeros(n, bool))


def _rows(s: Stakes, games) -> np.ndarray:
    return np.arange(len(s)) if games is None else np.atleast_1d(np.asarray(games, np.int64))


def may_double(s: Stakes, player, games=None) -> np.ndarray:
    """Whether ``player`` (one per game, or one for all; on roll, before rolling) may double /
    offer now in each of ``games`` (default: every row): no pass ended the game, no raise
    awaits an answer, the cube is centred or theirs (CUBE-1; CUBE-D: the right alternates) and
    the stake is below :data:`MAX_STAKE`.  ``(len(games),)`` bool."""
    g = _rows(s, games)
    owner = s.owner[g]
    return ((s.winner[g] == NOBODY) & (s.offer[g] == NOBODY) & ((owner == CENTRE) | (owner == np.asarray(player)))
            & (s.value[g] < MAX_STAKE))


def _refuse(s: Stakes, g: np.ndarray, bad: np.ndarray, message) -> None:
    """Raise :class:`IllegalCubeAction` for the first game of ``g`` where ``bad``: ``message(j)``
    (``j`` its position in ``g``) names the rule."""
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise IllegalCubeAction(message(j) + (f" (game {int(g[j])})" if len(s) > 1 else ""))


def apply(s: Stakes, player, action: str, games=None) -> Stakes:
    """The stakes after ``player`` (one per game, or one for all) does ``action`` (one of
    :data:`ACTIONS`) in each of ``games`` (default: every row).  ``double`` offers a raise;
    ``take`` raises the stake to ``next`` and gives the taker the cube (CUBE-1; CUBE-D: only the
    other player may offer next), or after a beaver the beaverer keeps it (BG-B); ``pass`` ends
    the game, the raiser winning the current stake (``winner``); ``beaver`` takes and raises
    again at once, keeping the cube (BG-B); ``auto`` is an automatic double (BG-M; ``player``
    ignored).  An action illegal in any of the games raises :class:`IllegalCubeAction` naming
    the rule, and no game changes."""
    g = _rows(s, games)
    p = np.broadcast_to(np.asarray(player, np.int64), g.shape)
    if action not in ACTIONS:
        raise IllegalCubeAction(f"{s.rule}: unknown cube action {action!r}; known: {', '.join(ACTIONS)}")
    if not len(g):
        return s
    value, owner, offer, winner = s.value[g], s.owner[g], s.offer[g], s.winner[g]
    _refuse(s, g, winner != NOBODY, lambda j: f"{s.rule}: the game is over (player {winner[j]} won by a pass)")
    if action == "auto":
        autos = s.autos[g]
        _refuse(s, g, (s.kind != "cube") | (autos >= s.murphy_cap) | (offer != NOBODY) | s.turned[g],
                lambda j: f"BG-M: no automatic double here (stakes {s.kind}, {autos[j]} of {s.murphy_cap} done)")
        return s._set(g, value=value * 2, next=next_stake(value * 2, s.progression), autos=autos + 1)
    if action == "double":
        _refuse(s, g, offer != NOBODY, lambda j: f"{s.rule}: player {offer[j]}'s raise awaits an answer")
        why = ("the opponent owns the cube" if s.kind == "cube"
               else "after a raise only the other player may offer next")
        _refuse(s, g, (owner != CENTRE) & (owner != p), lambda j: f"{s.rule}: player {p[j]} may not double: {why}")
        _refuse(s, g, value >= MAX_STAKE,
                lambda j: f"{s.rule}: no raise from stake {value[j]} (the limit is {MAX_STAKE})")
        return s._set(g, offer=p)
    _refuse(s, g, (offer == NOBODY) | (offer == p), lambda j: f"{s.rule}: player {p[j]} has no raise to answer")
    if action == "pass":
        return s._set(g, offer=NOBODY, winner=offer)
    raised = s.next[g]
    after = np.asarray(next_stake(raised, s.progression), np.int64)
    if action == "take":
        # BG-B: after a beaver the beaverer keeps the cube; otherwise the taker owns it.
        return s._set(g, value=raised, next=after, owner=np.where(s.beavered[g], offer, p), offer=NOBODY,
                      beavered=False, turned=True)
    beavered = s.beavered[g]
    _refuse(s, g, np.full(len(g), s.kind != "cube" or not s.beaver) | beavered, lambda j: (
        "BG-B: no beaver " + ("with dave (CUBE-D)" if s.kind != "cube" else "here (the option is off)" if not s.beaver
                              else "here (a beaver is answered by take or pass)")))
    return s._set(g, value=raised, next=after, owner=p, offer=p, beavered=True, turned=True)


def game_points(s: Stakes, levels, v: Variant, games=None) -> np.ndarray:
    """Points ``(len(games),)`` int64 won by bearing off at result ``levels`` in ``games``
    (default: every row): BG-J (a single game while the cube was never turned, automatic
    doubles included), LN-8 (dave: win = stake), else the level's points times the stake
    (:func:`nardy_ai.scoring.stake_points`)."""
    g = _rows(s, games)
    return stake_points(np.broadcast_to(np.asarray(levels, np.int64), g.shape), s.value[g], s.turned[g], v)


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
    """``r`` per position: the stake after the raise over the stake now (a :class:`Stakes`
    or cube dicts)."""
    c = Stakes.from_dicts(cubes, v)
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
