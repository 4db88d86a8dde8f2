"""Tournament settings: the config, its checks, default agents and the files of a tournament folder (see :mod:`nardy_ai.tournament`)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence


from .. import registry
from ..board import parse_json
from ..errors import FormatError, NardyError
from ..cube import stakes_variant
from ..variants import Variant, parse_variant_spec, variant_options


DEFAULT_GAMES = 400          # games per pairing when --games is not given
DEFAULT_CHUNK = 100          # duplicate pairs per chunk: 2 x 100 games in lockstep (neural agents batch)
MAX_GAMES = 10 ** 8          # games per pairing: the schedule of a pairing is held in memory
MAX_CHUNK = 10 ** 5          # duplicate pairs per chunk: a chunk's games are played in lockstep
ELO_PER_LOGIT = 400 / math.log(10)

CONFIG_FILE = "tournament.json"
GAMES_FILE = "games.jsonl"
SESSIONS_FILE = "sessions.jsonl"
SUMMARY_JSON = "summary.json"
SUMMARY_CSV = "summary.csv"
PICTURE = "summary.png"
MATCH_DIR = "matches"
DICE_MODES = ("pairing", "shared")   # a chunk's dice follow the seed and the pairing, or the seed only


class TournamentError(NardyError):
    """Settings a tournament cannot run with, or a folder that holds another tournament."""




@dataclass(frozen=True)
class TournamentConfig:
    """What a tournament plays.  ``games`` is per pairing and even (duplicate pairs);
    ``chunk`` is the number of duplicate pairs played in lockstep by one task; ``mat``: also
    write each pairing's games as a GNU Backgammon ``.mat`` file (short nardy, no stakes);
    ``dice``: ``"pairing"`` (default) rolls each pairing its own dice (the chunk seed hashes the
    pairing's names), ``"shared"`` rolls game ``i`` of every pairing the same dice (the seed and
    the chunk number only), so that two agents' results against a third can be compared pair by
    pair (:func:`~.statistics.paired_differences`)."""

    variant: str
    agents: tuple[str, ...]
    games: int = DEFAULT_GAMES
    seed: int = 0
    gauntlet: bool = False
    chunk: int = DEFAULT_CHUNK
    stakes: str = "none"
    mat: bool = False
    dice: str = "pairing"

    def rules(self) -> Variant:
        return parse_variant_spec(self.variant)

    def check(self) -> Variant:
        """The variant; raises :class:`TournamentError` naming the first bad setting."""
        v = self.rules()
        if len(self.agents) < 2:
            raise TournamentError(f"a tournament needs at least two agents, got {list(self.agents)}")
        seen = set()
        for a in self.agents:
            if not a.strip():
                raise TournamentError("an agent spec is empty")
            if a in seen:
                raise TournamentError(f"agent {a!r} is listed twice")
            seen.add(a)
        if self.games < 2 or self.games % 2:
            raise TournamentError(f"games per pairing must be even and at least 2 (duplicate pairs), got {self.games}")
        if self.games > MAX_GAMES:
            raise TournamentError(f"--games: at most {MAX_GAMES:,} games per pairing, got {self.games:,}")
        if self.seed < 0:
            raise TournamentError(f"--seed must be >= 0, got {self.seed}")
        if not 1 <= self.chunk <= MAX_CHUNK:
            raise TournamentError(f"chunk must be 1 to {MAX_CHUNK:,} duplicate pairs, got {self.chunk}")
        if self.dice not in DICE_MODES:
            raise TournamentError(f"--dice must be one of {', '.join(DICE_MODES)}, got {self.dice!r}")
        stakes_variant(v, self.stakes)            # raises for unknown stakes or a cube on dave
        return v

    def pairings(self) -> list[tuple[str, str]]:
        a = self.agents
        if self.gauntlet:
            return [(a[0], b) for b in a[1:]]
        return [(a[i], a[j]) for i in range(len(a)) for j in range(i + 1, len(a))]

    def to_json(self) -> dict:
        v = self.rules()
        return {"variant": self.variant, "variant_id": v.id, "variant_version": v.version,
                "options": variant_options(v), "agents": list(self.agents),
                "games_per_pairing": self.games, "seed": self.seed,
                "mode": "gauntlet" if self.gauntlet else "round robin", "chunk_pairs": self.chunk,
                **({"stakes": self.stakes} if self.stakes != "none" else {}),
                **({"mat_files": True} if self.mat else {}),
                **({"dice": self.dice} if self.dice != "pairing" else {})}

    @classmethod
    def from_json(cls, d: dict) -> TournamentConfig:
        try:
            return cls(str(d["variant"]), tuple(str(a) for a in d["agents"]), int(d["games_per_pairing"]),
                       int(d["seed"]), d["mode"] == "gauntlet", int(d["chunk_pairs"]),
                       str(d.get("stakes", "none")), d.get("mat_files", False) is True,
                       str(d.get("dice", "pairing")))
        except (KeyError, TypeError, ValueError) as e:
            raise FormatError(f"{CONFIG_FILE}: missing or bad field {e}") from None


def even_games(n: int) -> int:
    """Games per pairing rounded up to even, so that every game has its duplicate."""
    if n < 1:
        raise TournamentError(f"--games must be at least 1, got {n}")
    return n + (n % 2)


def gnubg_installed() -> bool:
    """Whether the optional gnubg package can be imported (without importing it)."""
    import importlib.util
    return importlib.util.find_spec("gnubg") is not None


def default_agents(variant: str | Variant) -> list[str]:
    """The default tournament's agents: the shipped-agent registry's list for the variant
    (``checkpoints/agents.toml``: its champion, the references it is measured against, the
    built-in baselines; a variant without a net of its own plays its family's), plus
    ``gnubg:0ply`` in backgammon when the optional gnubg package is installed."""
    v = parse_variant_spec(variant) if isinstance(variant, str) else variant
    specs = registry.tournament_agents(v)
    if v.id == "backgammon" and gnubg_installed():
        specs.append("gnubg:0ply")
    return specs


def read_settings(out: str | os.PathLike, missing: str, prefix: str = "") -> tuple[TournamentConfig, dict]:
    """The settings saved in the folder ``out``, parsed and as saved (JSON object).  A missing
    file raises :class:`TournamentError` ``prefix + missing``; an unreadable one names it after
    ``prefix``; a malformed one raises :class:`FormatError` naming the file."""
    path = Path(out) / CONFIG_FILE
    try:
        saved = parse_json(path.read_bytes())
    except (FileNotFoundError, NotADirectoryError):
        raise TournamentError(prefix + missing) from None
    except OSError as e:
        raise TournamentError(f"{prefix}cannot read {path}: {e.strerror}") from None
    except FormatError as e:
        raise FormatError(f"{path}: {e}") from None
    if not isinstance(saved, dict):
        raise FormatError(f"{path}: the settings must be a JSON object")
    return TournamentConfig.from_json(saved), saved


def load_config(out: str | os.PathLike) -> TournamentConfig:
    """The settings saved in ``out``; refuses a tournament played under other rules versions."""
    config, saved = read_settings(out, f"{out} holds no tournament ({CONFIG_FILE} is missing)", "--resume: ")
    v = config.rules()
    if saved.get("variant_version") != v.version:
        raise TournamentError(f"--resume: {out} was played under {v.id} v{saved.get('variant_version')}; "
                              f"this platform has v{v.version}")
    return config


def resume_config(out: str | os.PathLike, variant: str | None = None, agents: Sequence[str] | None = None,
                  games: int | None = None, seed: int | None = None, gauntlet: bool | None = None,
                  chunk: int | None = None, stakes: str | None = None,
                  mat: bool | None = None, dice: str | None = None) -> TournamentConfig:
    """The saved settings of the tournament in ``out``; each setting given must equal the
    saved one (else :class:`TournamentError` naming it)."""
    saved = load_config(out)

    def differs(name: str, given, have) -> None:
        raise TournamentError(f"--resume: the tournament in {out} was started with {name} {have}, "
                              f"not {given}; resume it with the same settings or use another --out")

    if variant is not None:
        a, b = parse_variant_spec(variant), saved.rules()
        if (a.id, variant_options(a)) != (b.id, variant_options(b)):
            differs("--variant", variant, saved.variant)
    if agents is not None and tuple(agents) != saved.agents:
        differs("--agents", " ".join(agents), " ".join(saved.agents))
    if games is not None and even_games(games) != saved.games:
        differs("--games", even_games(games), saved.games)
    if seed is not None and seed != saved.seed:
        differs("--seed", seed, saved.seed)
    if gauntlet is not None and gauntlet != saved.gauntlet:
        differs("mode", "gauntlet" if gauntlet else "round robin", "gauntlet" if saved.gauntlet else "round robin")
    if chunk is not None and chunk != saved.chunk:
        differs("--chunk", chunk, saved.chunk)
    if stakes is not None and stakes != saved.stakes:
        differs("--stakes", stakes, saved.stakes)
    if dice is not None and dice != saved.dice:
        differs("--dice", dice, saved.dice)
    if mat is not None and mat != saved.mat:
        raise TournamentError(f"--resume: the tournament in {out} was started "
                              f"{'with' if saved.mat else 'without'} --mat; a resumed tournament keeps "
                              f"the choice (resume without --mat, or use another --out)")
    return saved
