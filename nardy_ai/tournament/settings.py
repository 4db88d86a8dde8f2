"""Tournament settings: the config, its checks, default agents and the files of a tournament folder (see :mod:`nardy_ai.tournament`)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence


from ..agents import AGENTS
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


class TournamentError(NardyError):
    """Settings a tournament cannot run with, or a folder that holds another tournament."""




@dataclass(frozen=True)
class TournamentConfig:
    """What a tournament plays.  ``games`` is per pairing and even (duplicate pairs);
    ``chunk`` is the number of duplicate pairs played in lockstep by one task."""

    variant: str
    agents: tuple[str, ...]
    games: int = DEFAULT_GAMES
    seed: int = 0
    gauntlet: bool = False
    chunk: int = DEFAULT_CHUNK
    stakes: str = "none"

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
                **({"stakes": self.stakes} if self.stakes != "none" else {})}

    @classmethod
    def from_json(cls, d: dict) -> TournamentConfig:
        try:
            return cls(str(d["variant"]), tuple(str(a) for a in d["agents"]), int(d["games_per_pairing"]),
                       int(d["seed"]), d["mode"] == "gauntlet", int(d["chunk_pairs"]),
                       str(d.get("stakes", "none")))
        except (KeyError, TypeError, ValueError) as e:
            raise FormatError(f"{CONFIG_FILE}: missing or bad field {e}") from None


def even_games(n: int) -> int:
    """Games per pairing rounded up to even, so that every game has its duplicate."""
    if n < 1:
        raise TournamentError(f"--games must be at least 1, got {n}")
    return n + (n % 2)


#: The net a variant without nets of its own plays with: its parent's best (same board and
#: checker rules family; issue #15), and the parent net an own net is measured against.
#: ``td:`` accepts a net of another variant of the same family
#: (:func:`nardy_ai.agents.neural.td_factory`).  Backgammon's best is the third distillation
#: round (level with gnubg 0-ply); it also plays BG-HH and BG-TT better than the rollout net
#: the variants' first own nets were measured against (by +0.02 to +0.05 ppg).
PARENT_NETS = {"short_caucasian": "checkpoints/backgammon/search_targets_distill_iter3/current.pt",
               "short_trictrac": "checkpoints/backgammon/search_targets_distill_iter3/current.pt",
               "long_dave": "checkpoints/long/search_targets/current.pt"}


def default_agents(variant: str | Variant, roots: Sequence[str | os.PathLike] | None = None) -> list[str]:
    """The shipped agents and the baselines: ``td:`` for every
    ``checkpoints/<variant>/*/checkpoint.pt`` (a TD run) and ``*/current.pt`` (a search-targets
    run; looked for in the current folder, then next to the package) or, for a variant without
    nets of its own, its parent's (:data:`PARENT_NETS`); ``pubeval`` for short nardy when an
    agent of that name is registered, then ``heuristic`` and ``random``."""
    v = parse_variant_spec(variant) if isinstance(variant, str) else variant
    if roots is None:
        roots = [Path.cwd(), Path(__file__).resolve().parents[2]]   # the repository of the package
    def spec(p: Path) -> str:               # relative to the current folder where it lies inside
        try:
            p = p.relative_to(Path.cwd())
        except ValueError:
            pass
        return f"td:{p.as_posix()}"

    specs: list[str] = []
    for root in roots:
        found = sorted([*Path(root).glob(f"checkpoints/{v.id}/*/checkpoint.pt"),
                        *Path(root).glob(f"checkpoints/{v.id}/*/current.pt")])
        if found:
            specs += [spec(p) for p in found]
            break
    if not specs and v.id in PARENT_NETS:
        for root in roots:                  # no net of its own yet: the parent variant's best
            p = Path(root) / PARENT_NETS[v.id]
            if p.exists():
                specs.append(spec(p))
                break
    if not v.is_long and "pubeval" in AGENTS:
        specs.append("pubeval")
    return specs + ["heuristic", "random"]


def load_config(out: str | os.PathLike) -> TournamentConfig:
    """The settings saved in ``out``; refuses a tournament played under other rules versions."""
    path = Path(out) / CONFIG_FILE
    try:
        saved = parse_json(path.read_bytes())
    except (FileNotFoundError, NotADirectoryError):
        raise TournamentError(f"--resume: {out} holds no tournament ({CONFIG_FILE} is missing)") from None
    except OSError as e:
        raise TournamentError(f"--resume: cannot read {path}: {e.strerror}") from None
    except FormatError as e:
        raise FormatError(f"{path}: {e}") from None
    if not isinstance(saved, dict):
        raise FormatError(f"{path}: the settings must be a JSON object")
    config = TournamentConfig.from_json(saved)
    v = config.rules()
    if saved.get("variant_version") != v.version:
        raise TournamentError(f"--resume: {out} was played under {v.id} v{saved.get('variant_version')}; "
                              f"this platform has v{v.version}")
    return config


def resume_config(out: str | os.PathLike, variant: str | None = None, agents: Sequence[str] | None = None,
                  games: int | None = None, seed: int | None = None, gauntlet: bool | None = None,
                  chunk: int | None = None, stakes: str | None = None) -> TournamentConfig:
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
    return saved
