"""The nardy variants as data: rule flags, start position, scoring and stakes (RULES.md).

A variant is a frozen dataclass; the registry ``VARIANTS`` holds every variant the platform
knows, keyed by its id.  Each variant carries a ``version`` string that checkpoints and game
records store, so a change of rules is never silently mixed with data from the old rules.
Options (BG-J, BG-M, BG-B, LN-7 koks) are fields of the same dataclass, set with
:func:`with_options` and validated there.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from .errors import UnknownOption, UnknownVariant

#: BG-1: from each player's view, 2 on 24, 5 on 13, 3 on 8, 5 on 6 (index i is point i + 1).
BACKGAMMON_START = (
    -2, 0, 0, 0, 0, 5,
    0, 3, 0, 0, 0, -5,
    5, 0, 0, 0, -3, 0,
    -5, 0, 0, 0, 0, 2,
)
#: LN-1: all 15 on the head (point 24); the opponent's head is the mover's point 12.
LONG_START = (
    0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, -15,
    0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 15,
)


@dataclass(frozen=True)
class Variant:
    """Rules of one variant.  Every field is a rule flag or a setting named after its rule id.

    family
        ``"short"`` (backgammon geometry: opposite directions, hitting, bar) or ``"long"``
        (same direction, no hitting, head).
    scoring
        Points for the winner by result level, lowest first: backgammon ``(1, 2, 3)``
        (BG-6), trictrac ``(1, 2, 4, 8)`` (BG-TT), long ``(1, 2)`` (LN-7), dave ``(1,)`` (LN-8).
    opening
        COM-7: ``"opening_roll"`` (first mover plays the two numbers of the lot),
        ``"lot_then_roll"`` (winner of the lot rolls both dice), ``"white_first"`` (BG-TT).
    stakes
        ``"none"``, ``"cube"`` (CUBE-1) or ``"dave"`` (CUBE-D); ``dave_progression`` is
        ``"geometric"`` or ``"arithmetic"`` (CUBE-D).  Games are played with stakes only when
        the runner is asked to (``play_games(..., stakes=...)``, :mod:`nardy_ai.cube`).
    """

    id: str
    version: str
    family: str
    start: tuple[int, ...]
    scoring: tuple[int, ...]
    opening: str
    stakes: str = "none"
    no_hit_and_hide: bool = False   # BG-HH
    jacoby: bool = False            # BG-J
    murphy_cap: int = 0             # BG-M: automatic doubles per game (0 = off)
    beaver: bool = False            # BG-B
    koks: bool = False              # LN-7 setting: a third result level in long nardy
    dave_progression: str = "geometric"   # CUBE-D: stakes 1, 2, 4, 8 ... or 1, 2, 3, 4 ...

    @property
    def is_long(self) -> bool:
        return self.family == "long"

    @property
    def hitting(self) -> bool:
        """BG-2/BG-3 (short) vs LN-2 (long): may a checker land on a lone opponent checker."""
        return self.family == "short"

    @property
    def head_rule(self) -> bool:
        """LN-3/LN-4: at most one checker leaves the head per turn (two on a first-turn double)."""
        return self.family == "long"

    @property
    def six_block_rule(self) -> bool:
        """LN-5: no six-point block without an opponent checker ahead of it."""
        return self.family == "long"

    @property
    def max_result_level(self) -> int:
        return len(self.scoring)

    def describe(self) -> str:
        flags = [f.name for f in fields(self) if f.type == "bool" and getattr(self, f.name)]
        if self.murphy_cap:
            flags.append(f"murphy_cap={self.murphy_cap}")
        extra = f" [{', '.join(flags)}]" if flags else ""
        stakes = f"dave {self.dave_progression}" if self.stakes == "dave" else self.stakes
        return f"{self.id} v{self.version} ({self.family} nardy, stakes: {stakes}){extra}"


VARIANTS: dict[str, Variant] = {
    v.id: v
    for v in (
        Variant("backgammon", "1", "short", BACKGAMMON_START, (1, 2, 3), "opening_roll", "cube"),
        Variant("short_caucasian", "1", "short", BACKGAMMON_START, (1, 2, 3), "opening_roll",
                "cube", no_hit_and_hide=True),
        Variant("short_trictrac", "1", "short", BACKGAMMON_START, (1, 2, 4, 8), "white_first"),
        Variant("long", "1", "long", LONG_START, (1, 2), "lot_then_roll"),
        Variant("long_dave", "1", "long", LONG_START, (1,), "lot_then_roll", "dave"),
    )
}

#: Options that may be set on top of a variant, with the families they apply to.
OPTIONS: dict[str, tuple[type, tuple[str, ...], str]] = {
    "jacoby": (bool, ("short",), "BG-J"),
    "murphy_cap": (int, ("short",), "BG-M"),
    "beaver": (bool, ("short",), "BG-B"),
    "koks": (bool, ("long",), "LN-7"),
    "stakes": (str, ("short", "long"), "CUBE-1/CUBE-D"),
    "dave_progression": (str, ("short", "long"), "CUBE-D"),
}
STAKES = ("none", "cube", "dave")
DAVE_PROGRESSIONS = ("geometric", "arithmetic")


def get_variant(variant: str | Variant) -> Variant:
    """Look up a variant by id (a :class:`Variant` passes through)."""
    if isinstance(variant, Variant):
        return variant
    try:
        return VARIANTS[variant]
    except KeyError:
        raise UnknownVariant(
            f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}") from None


def with_options(variant: str | Variant, **options) -> Variant:
    """Return the variant with rule options set, checking each name, type and family.

    ``koks`` is only meaningful for long nardy without dave (LN-8 abolishes mars and oin).
    """
    v = get_variant(variant)
    changes = {}
    for name, value in options.items():
        if name not in OPTIONS:
            raise UnknownOption(f"unknown rule option {name!r}; known: {', '.join(OPTIONS)}")
        kind, families, rule = OPTIONS[name]
        if kind is bool and not isinstance(value, bool) or kind is int and (
                isinstance(value, bool) or not isinstance(value, int)) or kind is str and not isinstance(value, str):
            raise UnknownOption(f"option {name} ({rule}) must be {kind.__name__}, got {value!r}")
        if v.family not in families:
            raise UnknownOption(f"option {name} ({rule}) does not apply to {v.family} nardy ({v.id})")
        if name == "murphy_cap" and value < 0:
            raise UnknownOption(f"option murphy_cap (BG-M) must be >= 0, got {value}")
        if name == "stakes" and value not in STAKES:
            raise UnknownOption(f"option stakes must be one of {', '.join(STAKES)}, got {value!r}")
        if name == "dave_progression" and value not in DAVE_PROGRESSIONS:
            raise UnknownOption(f"option dave_progression (CUBE-D) must be one of "
                                f"{', '.join(DAVE_PROGRESSIONS)}, got {value!r}")
        if name == "koks" and value and v.stakes == "dave":
            raise UnknownOption("option koks (LN-7) does not exist with dave (LN-8)")
        changes[name] = value
    scoring = v.scoring
    if changes.get("koks") and len(scoring) == 2:
        scoring = (1, 2, 3)
    elif "koks" in changes and not changes["koks"] and v.is_long and v.stakes != "dave":
        scoring = (1, 2)
    return replace(v, scoring=scoring, **changes)


def variant_options(v: Variant) -> dict:
    """The rule options of ``v`` that differ from its registered variant (for records)."""
    base = VARIANTS[v.id]
    return {k: getattr(v, k) for k in OPTIONS if getattr(v, k) != getattr(base, k)}


def parse_variant_spec(spec: str) -> Variant:
    """Parse ``id[,option=value,...]``, e.g. ``backgammon,jacoby=true,murphy_cap=2``."""
    name, *opts = [s.strip() for s in spec.split(",") if s.strip()] or [""]
    options = {}
    for opt in opts:
        if "=" not in opt:
            raise UnknownOption(f"rule option {opt!r} must be written name=value")
        key, raw = (s.strip() for s in opt.split("=", 1))
        low = raw.lower()
        if low in ("true", "yes", "on", "1") and OPTIONS.get(key, (None,))[0] is bool:
            value = True
        elif low in ("false", "no", "off", "0") and OPTIONS.get(key, (None,))[0] is bool:
            value = False
        elif raw.lstrip("-").isdigit() and OPTIONS.get(key, (None,))[0] is int:
            value = int(raw)
        else:
            value = raw
        options[key] = value
    return with_options(name, **options)
