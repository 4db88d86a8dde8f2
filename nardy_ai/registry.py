"""The registry of shipped agents: which net is each variant's champion, the baselines and
milestones, their recommended search depths, model cards, file hashes and headline figures.

One data file, ``checkpoints/agents.toml`` (in a repository checkout) or its copy shipped as
package data (``nardy_ai/checkpoints/agents.toml`` in an installed wheel), holds it.  Its names
are agent specs a user types anywhere a spec goes:

* ``best``: the variant's champion at its recommended depths (e.g. 0-ply checker play, cube
  decisions at 1 ply for short nardy);
* a registry name such as ``bg-champion``, ``td-gammon``, ``long-champion``;
* either with the ``td:`` modifiers: ``best@1ply``, ``bg-champion+cube2ply``, ``td:best``.

``NAME@Nply`` searches N plies; its cube stays at the registry's depth unless ``+cubeMply`` or
``+pipcube`` is given; ``+cubefulplay`` (last) plays checkers by cubeful equity in games with
stakes.  Every default of the ``nardy`` command reads the registry (the default
tournament, ``hint``, ``rollout``, ``bench cube``, ``bench agents``, the net a variant without
its own plays with).
"""

from __future__ import annotations

import functools
import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .agent_spec import split_spec
from .errors import NardyError, UnknownAgent
from .variants import VARIANTS, Variant, get_variant

#: Roles of the entries: the variant's strongest agent, the references it is compared with,
#: earlier nets kept for comparison (at most two a variant), and agents without a file.
ROLES = ("champion", "baseline", "milestone", "builtin")
REGISTRY_FILE = "agents.toml"
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_AGENT_KEYS = {"name", "variant", "role", "path", "card", "plies", "cube_plies", "sha256", "summary", "figures",
               "recipe"}
_FIGURE_KEYS = {"against", "ppg", "low", "high", "games", "note"}


class RegistryError(NardyError):
    """A registry file that is missing or malformed, or a shipped file that is missing or
    differs from the hash the registry holds."""


@dataclass(frozen=True)
class Entry:
    """One shipped agent.  ``path`` and ``card`` are absolute (None for built-in agents);
    ``plies`` / ``cube_plies`` its recommended search depths; ``figures`` its headline
    results (points per game with 95% intervals); ``recipe`` the ``nardy train`` command that
    makes the net again ("" when none does)."""

    name: str
    variant: str
    role: str
    summary: str
    path: Path | None = None
    card: Path | None = None
    plies: int = 0
    cube_plies: int = 0
    sha256: str | None = None
    figures: tuple[dict, ...] = field(default_factory=tuple)
    recipe: str = ""

    @property
    def spec(self) -> str:
        """The agent spec this entry plays as (a ``td:`` spec with its depths, or the
        built-in's own name)."""
        if self.path is None:
            return self.name
        s = f"td:{self.path.as_posix()}"
        if self.plies:
            s += f"@{self.plies}ply"
        if self.cube_plies != self.plies:
            s += f"+cube{self.cube_plies}ply"
        return s

    def plays(self, variant: Variant) -> bool:
        """Whether this entry can play games of ``variant`` (a net plays its own family)."""
        if self.variant == "any":
            return True
        if self.variant in ("short", "long"):
            return variant.family == self.variant
        return VARIANTS[self.variant].family == variant.family

    def verify(self) -> None:
        """Check the file against the registry's sha256 (:class:`RegistryError` naming it)."""
        if self.path is None:
            return
        try:
            data = self.path.read_bytes()
        except OSError as e:
            raise RegistryError(f"agent {self.name!r}: cannot read {self.path}: "
                                f"{e.strerror or e}") from None
        sha = hashlib.sha256(data).hexdigest()
        if sha != self.sha256:
            raise RegistryError(f"agent {self.name!r}: {self.path} has sha256 {sha[:12]}..., the "
                                f"registry says {self.sha256[:12]}... (the file was changed or replaced)")

    def as_json(self) -> dict:
        return {"name": self.name, "variant": self.variant, "role": self.role,
                "path": None if self.path is None else str(self.path), "spec": self.spec,
                "plies": self.plies, "cube_plies": self.cube_plies,
                "card": None if self.card is None else str(self.card),
                "sha256": self.sha256, "summary": self.summary, "figures": list(self.figures),
                "recipe": self.recipe}


@dataclass(frozen=True)
class Registry:
    """The parsed registry: entries by name, and per variant its ``best`` and default
    tournament."""

    root: Path
    entries: tuple[Entry, ...]
    best: dict[str, str]
    tournament: dict[str, tuple[str, ...]]

    def names(self) -> list[str]:
        return [e.name for e in self.entries]

    def get(self, name: str) -> Entry | None:
        for e in self.entries:
            if e.name == name:
                return e
        return None


def registry_root() -> Path:
    """The folder holding ``agents.toml``: the package's own copy (an installed wheel) or the
    repository's ``checkpoints/`` next to the package (a checkout or editable install)."""
    here = Path(__file__).resolve().parent
    for root in (here / "checkpoints", here.parent / "checkpoints"):
        if (root / REGISTRY_FILE).is_file():
            return root
    raise RegistryError(f"no agent registry: neither {here / 'checkpoints' / REGISTRY_FILE} nor "
                        f"{here.parent / 'checkpoints' / REGISTRY_FILE} exists (a broken install?)")


def parse_registry(text: str, root: Path, source: str = REGISTRY_FILE) -> Registry:
    """Parse and check the registry text; files are relative to ``root``.  Every fault raises
    :class:`RegistryError` naming the entry and the key."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise RegistryError(f"{source}: not valid TOML: {e}") from None
    unknown = set(data) - {"variants", "agent"}
    if unknown:
        raise RegistryError(f"{source}: unknown table {sorted(unknown)[0]!r} (known: variants, agent)")
    entries: list[Entry] = []
    for i, raw in enumerate(data.get("agent", [])):
        where = f"{source}: agent {i + 1} ({raw.get('name', '?')!r})"
        extra = set(raw) - _AGENT_KEYS
        if extra:
            raise RegistryError(f"{where}: unknown key {sorted(extra)[0]!r}")
        for key in ("name", "variant", "role", "summary"):
            if not isinstance(raw.get(key), str):
                raise RegistryError(f"{where}: {key} must be a string")
        if not isinstance(raw.get("recipe", ""), str):
            raise RegistryError(f"{where}: recipe must be a string (the nardy train command)")
        if not _NAME.match(raw["name"]) or raw["name"] == "best":
            raise RegistryError(f"{where}: name must be lower-case letters, digits and '-' (not 'best')")
        if raw["role"] not in ROLES:
            raise RegistryError(f"{where}: role must be one of {', '.join(ROLES)}")
        if raw["variant"] not in VARIANTS and raw["variant"] not in ("short", "long", "any"):
            raise RegistryError(f"{where}: variant {raw['variant']!r} is unknown")
        has_file = raw["role"] != "builtin"
        if has_file != ("path" in raw):
            raise RegistryError(f"{where}: " + ("path is missing" if has_file else "a builtin has no path"))
        for key in ("plies", "cube_plies"):
            if not isinstance(raw.get(key, 0), int) or not 0 <= raw.get(key, 0) <= 3:
                raise RegistryError(f"{where}: {key} must be an integer 0-3")
        if has_file and not re.fullmatch(r"[0-9a-f]{64}", str(raw.get("sha256", ""))):
            raise RegistryError(f"{where}: sha256 must be 64 hex digits")
        figures = raw.get("figures", [])
        for f in figures:
            if not isinstance(f, dict) or set(f) - _FIGURE_KEYS or not {"against", "ppg", "games"} <= set(f):
                raise RegistryError(f"{where}: figures need against, ppg, games (and optionally "
                                    f"low, high, note), got {f!r}")
        entries.append(Entry(name=raw["name"], variant=raw["variant"], role=raw["role"],
                             summary=raw["summary"],
                             path=(root / raw["path"]) if has_file else None,
                             card=(root / raw["card"]) if "card" in raw else None,
                             plies=raw.get("plies", 0), cube_plies=raw.get("cube_plies", 0),
                             sha256=raw.get("sha256"), figures=tuple(figures),
                             recipe=raw.get("recipe", "")))
    names = [e.name for e in entries]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise RegistryError(f"{source}: agent name {sorted(dup)[0]!r} appears twice")
    best, tournament = {}, {}
    for vid, table in data.get("variants", {}).items():
        where = f"{source}: [variants.{vid}]"
        if vid not in VARIANTS:
            raise RegistryError(f"{where}: unknown variant")
        if set(table) - {"best", "tournament"}:
            raise RegistryError(f"{where}: unknown key {sorted(set(table) - {'best', 'tournament'})[0]!r}")
        if table.get("best") not in names:
            raise RegistryError(f"{where}: best names no agent of the registry")
        for name in table.get("tournament", []):
            if name not in names:
                raise RegistryError(f"{where}: tournament names {name!r}, not an agent of the registry")
        best[vid] = table["best"]
        tournament[vid] = tuple(table.get("tournament", [table["best"]]))
    missing = set(VARIANTS) - set(best)
    if missing:
        raise RegistryError(f"{source}: no [variants.{sorted(missing)[0]}] table (every variant needs its best)")
    return Registry(root, tuple(entries), best, tournament)


@functools.lru_cache(maxsize=None)
def load() -> Registry:
    """The shipped registry (read once per process)."""
    root = registry_root()
    path = root / REGISTRY_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise RegistryError(f"cannot read {path}: {e}") from None
    return parse_registry(text, root, str(path))


def entry(name: str, variant: str | Variant | None = None) -> Entry:
    """The entry ``name`` names (``best``: the variant's champion); :class:`UnknownAgent`
    when there is none, or when the entry cannot play the variant."""
    reg = load()
    v = get_variant(variant) if variant is not None else None
    if name == "best":
        if v is None:
            raise UnknownAgent("'best' needs a variant: it is each variant's champion")
        name = reg.best[v.id]
    e = reg.get(name)
    if e is None:
        raise UnknownAgent(f"unknown agent {name!r}; registry names: best, {', '.join(reg.names())}")
    if v is not None and not e.plays(v):
        raise UnknownAgent(f"agent {name!r} is a {e.variant} agent; it cannot play {v.id} "
                           f"(another family); try 'best'")
    return e


def champion(variant: str | Variant) -> Entry:
    """The variant's champion (what ``best`` names)."""
    return entry("best", variant)


def is_name(spec: str) -> bool:
    """Whether ``spec`` (without ``td:``) is a registry name with optional ``@Nply`` /
    ``+cubeMply`` / ``+pipcube`` / ``+cubefulplay`` modifiers
    (:func:`~nardy_ai.agent_spec.split_spec`).  A name of a built-in agent (``pubeval``) is
    not: those are built by their own factories."""
    name = split_spec(spec.strip())[0]
    if not name or any(c in name for c in "@+:"):
        return False
    if name == "best":
        return True
    try:
        e = load().get(name)
    except RegistryError:
        return False
    return e is not None and e.path is not None


def resolve(spec: str, variant: str | Variant) -> str:
    """The ``td:PATH...`` spec a registry spec (``best``, ``bg-champion@1ply``, ``td:best``)
    plays as; any other spec is returned unchanged.  ``@Nply`` sets the checker play's depth;
    the cube keeps the registry's depth unless ``+cubeMply`` or ``+pipcube`` is given."""
    s = spec.strip()
    bare = s[3:] if s.startswith("td:") else s
    if not is_name(bare):
        return spec
    name, mods = split_spec(bare)
    e = entry(name, variant)
    plies = e.plies if mods.plies is None else mods.plies
    out = f"td:{e.path.as_posix()}"
    if plies:
        out += f"@{plies}ply"
    if mods.cube == "pip":
        out += "+pipcube"
    elif mods.cube is not None:
        out += f"+cube{mods.cube}ply"
    elif e.cube_plies != plies:
        out += f"+cube{e.cube_plies}ply"
    return out + ("+cubefulplay" if mods.cubeful_play else "")


def tournament_agents(variant: str | Variant) -> list[str]:
    """The default tournament's agents for a variant: its champion, the references the
    registry lists for it, the built-in baselines (registry names; gnubg is added by the
    tournament settings when installed)."""
    v = get_variant(variant)
    return list(load().tournament[v.id])


def short_name(spec: str, variant: str | Variant | None = None) -> str | None:
    """The registry name of a ``td:`` spec whose file is a registry entry's, with the spec's
    modifiers (``td:.../search_targets_distill_iter3/current.pt@1ply`` -> ``bg-champion@1ply``);
    None for other specs.  Where two entries share a file, the one of ``variant`` wins.  For
    display: tournaments print these."""
    if not spec.startswith("td:"):
        return None
    path, mods = split_spec(spec[3:])
    try:
        reg = load()
        target = Path(path).resolve()
    except (RegistryError, OSError):
        return None
    vid = get_variant(variant).id if variant is not None else None
    found = [e for e in reg.entries if e.path is not None and e.path.resolve() == target]
    found.sort(key=lambda e: e.variant != vid)
    return found[0].name + mods.suffix if found else None


def verify_all(variant: str | Variant | None = None) -> list[Entry]:
    """Check every shipped file of the registry (of one variant when given) against its
    sha256; returns the entries, or raises one :class:`RegistryError` naming every file that is
    missing or changed."""
    v = get_variant(variant) if variant is not None else None
    out, bad = [], []
    for e in load().entries:
        if v is None or e.variant == v.id or (e.role == "builtin" and e.plays(v)):
            try:
                e.verify()
            except RegistryError as err:
                bad.append(str(err))
            out.append(e)
    if bad:
        raise RegistryError("; ".join(bad))
    return out
