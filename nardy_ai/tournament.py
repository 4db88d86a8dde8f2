"""Tournaments: scheduling with duplicate dice, parallel workers, statistics and outputs.

Schedule.  Round robin (every pair of agents) or gauntlet (the first agent against each of the
others).  A pairing ``(A, B)`` plays its ``N`` games (``N`` even) as duplicate pairs: game
``2k`` has A as white, game ``2k + 1`` replays exactly the same dice with B as white.  Pairs
are grouped in chunks of ``chunk`` pairs; a chunk is two calls of
:func:`~nardy_ai.game.play_games` with the same seed and batch size, the second with the agents
swapped.  (In ``play_games`` the dice of a game depend on the seed and the batch size, never on
the plays, so both calls roll the same dice game for game.)  The seed of a chunk depends only
on the tournament seed, the two agent specs and the chunk number, so the games are the same
whatever runs them (this process, ``--jobs`` local processes or a Ray cluster: see
:mod:`nardy_ai.backends`), the order in which chunks finish, or how often the tournament was
stopped and resumed.  Workers build their agents from the specs, so outside this process every
agent must be known to :func:`~nardy_ai.agents.make_agent` in a fresh interpreter (and a
checkpoint path must be readable where the worker runs).  A worker that dies loses only its
chunk, which is played again; a game is written once, when its chunk's results arrive.

Statistics (all from the games alone, so a resumed tournament gives the same summary).

- Points per game of a side: mean of its signed points (won +, lost -).  95 % interval:
  mean ± 1.96 standard errors, the standard error taken over *duplicate pairs* (the mean of
  the two games that share their dice), which are independent where the two games of a pair
  are not.
- Win rate with its 95 % Wilson interval over games (treating games as independent; with
  duplicate dice this errs on the wide side).
- Result levels (gammon / backgammon, mars / koks, ...): counts of games won and lost at each
  level, and the rate of games won (lost) at that level or higher.
- Elo: a Bradley-Terry (logistic) model of wins and losses, ``P(i beats j) =
  1 / (1 + 10 ** (-(R_i - R_j) / 400))``, fitted by maximum likelihood (Newton's method) with
  one virtual draw per pairing (half a win to each side) so that a clean sweep keeps a finite
  rating; ratings are shifted to mean 0.  95 % intervals: rating ± 1.96 standard errors from
  the inverse of the information matrix (the negative Hessian of the log-likelihood) at the
  fit, i.e. Wald intervals relative to the mean.  They take games as independent, which
  with duplicate dice errs on the wide side.  Points are not used by the Elo fit.

Files in the tournament folder.

- ``tournament.json``: the settings (variant, agents, games, seed, mode, chunk size);
  ``--resume`` refuses other settings.
- ``games.jsonl``: every game as one JSON line, append-only, written as each chunk finishes:
  a :class:`~nardy_ai.game.GameRecord` with ``pairing`` ``[A, B]`` and ``index`` (the game's
  number within the pairing) added; ``white``/``black`` are the agent specs.  On resume the
  games already there are skipped (a chunk missing some of its games is replayed whole, as its
  dice depend on its batch, and only the missing games are added).
- ``summary.json`` and ``summary.csv`` (written atomically), ``summary.png`` (Elo with
  intervals and the cross-table; needs matplotlib, the ``plot`` extra).  The summary depends
  on the games only; ``sessions.jsonl`` gets one line per run with its games/s and machine;
  ``.lock`` keeps a second process out of a folder in use.
- ``matches/NN-A-vs-B.mat`` for short nardy: each pairing's games as one GNU Backgammon money
  session (``0 point match``), see :mod:`nardy_ai.matfile`.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import math
import os
import re
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .agents import AGENTS, Agent, make_agent
from .backends import Backend, check_backend, make_backend, require_ray
from .files import FolderLock, write_atomic  # noqa: F401  (FolderLock's home was here)
from .machine import machine_description
from .board import parse_json
from .errors import FormatError, NardyError
from .cube import stakes_variant
from .game import GameRecord, play_games
from .scoring import level_names  # noqa: F401  (its home was here)
from .stats import Z95, side_stats  # noqa: F401  (side_stats' home was here)
from .variants import Variant, parse_variant_spec, variant_options

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


# --- settings -------------------------------------------------------------------------------

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


def default_agents(variant: str | Variant, roots: Sequence[str | os.PathLike] | None = None) -> list[str]:
    """The shipped agents and the baselines: ``td:`` for every
    ``checkpoints/<variant>/*/checkpoint.pt`` (a TD run) and ``*/current.pt`` (a search-targets
    run; looked for in the current folder, then next to the package), ``pubeval`` for short
    nardy when an agent of that name is registered, then ``heuristic`` and ``random``."""
    v = parse_variant_spec(variant) if isinstance(variant, str) else variant
    if roots is None:
        roots = [Path.cwd(), Path(__file__).resolve().parent.parent]
    specs: list[str] = []
    for root in roots:
        found = sorted([*Path(root).glob(f"checkpoints/{v.id}/*/checkpoint.pt"),
                        *Path(root).glob(f"checkpoints/{v.id}/*/current.pt")])
        if found:
            for p in found:
                try:
                    p = p.relative_to(Path.cwd())
                except ValueError:
                    pass
                specs.append(f"td:{p.as_posix()}")
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


# --- schedule and workers -------------------------------------------------------------------

@dataclass(frozen=True)
class Chunk:
    """One task: ``pairs`` duplicate pairs of pairing ``(a, b)`` from pair ``first_pair`` on,
    games ``2 * first_pair`` .. ``2 * (first_pair + pairs) - 1`` of the pairing."""
    variant: str
    a: str
    b: str
    number: int
    first_pair: int
    pairs: int
    seed: int
    stakes: str = "none"

    def indices(self) -> range:
        return range(2 * self.first_pair, 2 * (self.first_pair + self.pairs))

    def label(self) -> str:
        first = 2 * self.first_pair
        return f"games {first}-{first + 2 * self.pairs - 1} of {self.a} vs {self.b}"


def chunk_seed(seed: int, a: str, b: str, number: int) -> int:
    """The dice seed of chunk ``number`` of pairing ``(a, b)`` (63 bits)."""
    h = int.from_bytes(hashlib.sha256(json.dumps([a, b]).encode()).digest()[:8], "little")
    state = np.random.SeedSequence([seed, h, number]).generate_state(1, np.uint64)[0]
    return int(state >> np.uint64(1))


def schedule(config: TournamentConfig) -> list[Chunk]:
    """Every chunk, chunk number first so that all pairings progress together."""
    total = config.games // 2
    out = []
    for number in range((total + config.chunk - 1) // config.chunk):
        first = number * config.chunk
        for a, b in config.pairings():
            out.append(Chunk(config.variant, a, b, number, first, min(config.chunk, total - first),
                             chunk_seed(config.seed, a, b, number), config.stakes))
    return out


_AGENTS: dict[tuple[str, str], Agent] = {}


def _agent(variant: str, spec: str) -> Agent:
    """Agents are built once per process (a neural agent loads its checkpoint once)."""
    key = (variant, spec)
    if key not in _AGENTS:
        _AGENTS[key] = make_agent(spec, parse_variant_spec(variant))
    return _AGENTS[key]


# --- checkpoints shipped to workers that cannot read them (a cluster without shared disk) ----

def checkpoint_files(specs: Sequence[str]) -> dict[str, tuple[str, bytes]]:
    """``{path: (sha256, bytes)}`` of the checkpoint each ``td:`` spec reads (read here, on
    the driver, so that workers elsewhere can play it)."""
    from .agents.neural import parse_td_spec
    files = {}
    for spec in specs:
        if spec.startswith("td:"):
            path = parse_td_spec(spec[3:])[0]
            try:
                data = Path(path).read_bytes()
            except OSError:
                continue                # make_agent has already said what is wrong with it
            files[path] = (hashlib.sha256(data).hexdigest(), data)
    return files


def _local_copy(path: str, sha: str, data: bytes) -> str:
    """``path`` if this machine has that file with that content, else a cached copy of it."""
    try:
        if hashlib.sha256(Path(path).read_bytes()).hexdigest() == sha:
            return path
    except OSError:
        pass
    import tempfile
    cache = Path(tempfile.gettempdir()) / "nardy-checkpoints" / sha          # content-addressed
    target = cache / Path(path).name
    if not target.exists():
        cache.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)        # atomic: concurrent workers agree on the content
    return str(target)


def play_chunk_with_files(files: dict[str, tuple[str, bytes]], chunk: Chunk) -> tuple[Chunk, list]:
    """:func:`play_chunk` on a worker that may lack the checkpoints: each ``td:`` agent whose
    file is missing here (or differs) is built from the driver's copy.  Records keep the
    original specs, so the games are those of :func:`play_chunk`."""
    from .agents.neural import parse_td_spec
    for spec in (chunk.a, chunk.b):
        key = (chunk.variant, spec)
        if spec.startswith("td:") and key not in _AGENTS:
            path, plies = parse_td_spec(spec[3:])
            if path in files:
                local = _local_copy(path, *files[path])
                built = spec if local == path else f"td:{local}" + (f"@{plies}ply" if plies else "")
                _AGENTS[key] = make_agent(built, parse_variant_spec(chunk.variant))
    return play_chunk(chunk)


def play_chunk(chunk: Chunk) -> tuple[Chunk, list[tuple[int, GameRecord]]]:
    """Play a chunk: ``(chunk, [(index in the pairing, record), ...])``.  Records name the
    agents by their specs."""
    v = parse_variant_spec(chunk.variant)
    a, b = _agent(chunk.variant, chunk.a), _agent(chunk.variant, chunk.b)
    first = play_games(v, (a, b), chunk.pairs, chunk.seed, stakes=chunk.stakes)
    second = play_games(v, (b, a), chunk.pairs, chunk.seed, stakes=chunk.stakes)   # same dice
    out = []
    for j, (r1, r2) in enumerate(zip(first, second)):
        k = chunk.first_pair + j
        out.append((2 * k, replace(r1, white=chunk.a, black=chunk.b)))
        out.append((2 * k + 1, replace(r2, white=chunk.b, black=chunk.a)))
    return chunk, out


# --- the games file -------------------------------------------------------------------------

def game_line(a: str, b: str, index: int, record: GameRecord) -> str:
    """One line of ``games.jsonl`` (no newline)."""
    d = json.loads(record.to_json())
    return json.dumps({"pairing": [a, b], "index": index, **d}, separators=(",", ":"), ensure_ascii=False)


def read_games(path: str | os.PathLike) -> dict[tuple[str, str, int], GameRecord]:
    """The games of a ``games.jsonl``, keyed ``(A, B, index)``.  A game that appears twice is
    counted once (the first line); a last line cut short by a kill (no newline) is ignored; any
    other bad line raises :class:`FormatError` naming its line number."""
    games: dict[tuple[str, str, int], GameRecord] = {}
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    except FileNotFoundError:
        return games
    except OSError as e:
        raise FormatError(f"cannot read {path}: {e.strerror}") from None
    lines = text.split("\n")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            d = parse_json(line)
            (a, b), index = d.pop("pairing"), int(d.pop("index"))
            record = GameRecord.from_json(json.dumps(d))
        except (AttributeError, KeyError, TypeError, ValueError, FormatError) as e:
            if n == len(lines):
                continue                       # the torn tail of an interrupted write
            raise FormatError(f"{path} line {n}: not a tournament game: {e}") from None
        games.setdefault((str(a), str(b), index), record)
    return games


def _cut_torn_tail(path: Path) -> None:
    """Drop a last line without its newline (a write cut short), so appends start clean."""
    if not path.exists():
        return
    try:
        with open(path, "rb+") as f:
            data = f.read()
            if data and not data.endswith(b"\n"):
                f.truncate(data.rfind(b"\n") + 1)
    except OSError as e:
        raise TournamentError(f"cannot repair {path}: {e.strerror}") from None


# --- statistics -----------------------------------------------------------------------------

def fit_elo(n_agents: int, pairs: Sequence[tuple[int, int]], wins: Sequence[float], games: Sequence[float],
            prior_draws: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-likelihood Elo ratings ``(n_agents,)`` with mean 0, and their covariance.

    ``pairs`` ``(P, 2)`` agent indices ``(i, j)``; ``wins`` ``(P,)`` games won by ``i``;
    ``games`` ``(P,)`` games played; ``prior_draws`` virtual draws per pairing keep a sweep
    finite.  Newton's method on the logistic log-likelihood.  The information matrix is
    singular along "add a constant to every rating"; the step adds the all-ones matrix (so the
    mean stays 0) and the covariance is its Moore-Penrose inverse (the covariance of ratings
    constrained to mean 0), both in Elo units.
    """
    pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
    m = np.zeros((len(pairs), n_agents))
    m[np.arange(len(pairs)), pairs[:, 0]] = 1.0
    m[np.arange(len(pairs)), pairs[:, 1]] = -1.0
    w_obs = np.asarray(wins, float) + prior_draws / 2
    n_obs = np.asarray(games, float) + prior_draws
    r = np.zeros(n_agents)
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(m @ r)))
        info = (m.T * (n_obs * p * (1 - p))) @ m
        step = np.clip(np.linalg.solve(info + 1.0, m.T @ (w_obs - n_obs * p)), -2.0, 2.0)
        r = r + step - step.mean()
        if np.abs(step).max() < 1e-12:
            break
    p = 1.0 / (1.0 + np.exp(-(m @ r)))
    cov = np.linalg.pinv((m.T * (n_obs * p * (1 - p))) @ m)
    return r * ELO_PER_LOGIT, cov * ELO_PER_LOGIT ** 2


def elo_table(agents: Sequence[str], pairings: Sequence[tuple[str, str]], wins: Sequence[int],
              games: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Elo ratings ``(k,)`` and their 95 % intervals ``(k, 2)``: rating ± 1.96 standard
    errors from the inverse information matrix (Wald), relative to the mean of all agents.
    ``wins[p]`` are the games of pairing ``p`` won by its first agent."""
    idx = [(agents.index(a), agents.index(b)) for a, b in pairings]
    elo, cov = fit_elo(len(agents), idx, wins, games)
    half = Z95 * np.sqrt(np.clip(np.diag(cov), 0.0, None))
    return elo, np.stack([elo - half, elo + half], axis=1)


ELO_METHOD = ("Bradley-Terry (logistic) maximum likelihood on wins and losses (points ignored), one "
              "virtual draw per pairing, ratings shifted to mean 0; 95% interval = rating +/- 1.96 "
              "standard errors from the inverse information matrix (Wald, games taken as independent)")
PPG_METHOD = "mean points per game; 95% CI = mean +/- 1.96 standard errors over duplicate pairs"
WIN_METHOD = "share of games won; 95% Wilson interval over games"


def summarize_tournament(config: TournamentConfig, games: dict[tuple[str, str, int], GameRecord]) -> dict:
    """The JSON-ready summary of a finished tournament (every game of every pairing present)."""
    v = config.check()
    names = level_names(v)
    per_agent: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {a: [] for a in config.agents}
    pairings_out, wins = [], []
    for a, b in config.pairings():
        try:
            recs = [games[(a, b, i)] for i in range(config.games)]
        except KeyError as e:
            raise TournamentError(f"game {e.args[0][2]} of {a} vs {b} has not been played yet") from None
        pts = np.array([r.points if (r.winner == 0) == (r.white == a) else -r.points for r in recs])
        lev = np.array([r.level for r in recs])
        per_agent[a].append((pts, lev))
        per_agent[b].append((-pts, lev))
        wins.append(int((pts > 0).sum()))
        pairings_out.append({"agents": [a, b], **side_stats(pts, lev, names),
                             "mean_plies": float(np.mean([r.plies for r in recs])),
                             **({"cube": cube_stats(recs, a)} if config.stakes != "none" else {})})
    elo, elo_ci = elo_table(list(config.agents), config.pairings(), wins, [config.games] * len(wins))
    ranking = []
    for i, a in enumerate(config.agents):
        pts = np.concatenate([p for p, _ in per_agent[a]])
        lev = np.concatenate([lv for _, lv in per_agent[a]])
        ranking.append({"agent": a, "elo": float(elo[i]), "elo_ci95": [float(x) for x in elo_ci[i]],
                        **side_stats(pts, lev, names)})
        if config.stakes != "none":
            ranking[-1]["cube"] = cube_stats([r for (x, y, _), r in games.items()
                                              if a in (x, y) and (x, y) in config.pairings()], a)
    ranking.sort(key=lambda r: (-r["elo"], config.agents.index(r["agent"])))
    for rank, r in enumerate(ranking, 1):
        r["rank"] = rank
    order = [r["agent"] for r in ranking]
    cross: dict[str, dict[str, float | None]] = {x: {y: None for y in order} for x in order}
    for p in pairings_out:
        a, b = p["agents"]
        cross[a][b] = p["points_per_game"]
        cross[b][a] = -p["points_per_game"]
    return {
        "variant": v.id, "variant_version": v.version, "options": variant_options(v),
        "mode": "gauntlet" if config.gauntlet else "round robin",
        "agents": list(config.agents), "games_per_pairing": config.games, "seed": config.seed,
        "chunk_pairs": config.chunk, "games": config.games * len(pairings_out),
        "result_levels": list(names), "scoring": list(v.scoring),
        "methods": {"elo": ELO_METHOD, "points_per_game": PPG_METHOD, "win_rate": WIN_METHOD},
        "ranking": ranking, "pairings": pairings_out, "cross_table": cross,
        **({"stakes": config.stakes} if config.stakes != "none" else {}),
    }


def cube_stats(records: Sequence[GameRecord], agent: str) -> dict:
    """Stakes statistics of ``agent`` over games played with stakes (CUBE-1, CUBE-D): its raises
    offered, the takes, passes and beavers it answered with, the raises its opponents offered
    it, and the mean final stake of the games (automatic doubles included)."""
    out = {"doubles": 0, "takes": 0, "passes": 0, "beavers": 0, "doubles_received": 0,
           "games_passed": 0}
    stakes = []
    for r in records:
        side = 0 if r.white == agent else 1
        stakes.append(r.stake)
        out["games_passed"] += r.passed
        for _, player, action, _ in r.cube:
            mine = player == side
            if action == "double":
                out["doubles" if mine else "doubles_received"] += 1
            elif mine and action in ("take", "pass", "beaver"):
                out[action + ("s" if action != "pass" else "es")] += 1
    out["mean_stake"] = float(np.mean(stakes)) if stakes else 0.0
    return out


# --- outputs --------------------------------------------------------------------------------

def summary_csv(summary: dict) -> str:
    """One row per agent (``kind`` = agent, with Elo) and per pairing (``kind`` = pairing,
    from the first agent's side)."""
    names = summary["result_levels"]
    head = ["kind", "rank", "agent", "opponent", "games", "points_per_game", "ppg_ci95_low", "ppg_ci95_high",
            "win_rate", "win_ci95_low", "win_ci95_high", "elo", "elo_ci95_low", "elo_ci95_high",
            *[f"won_{n}" for n in names], *[f"lost_{n}" for n in names]]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(head)

    def row(kind, rank, agent, opponent, s, elo=("", "", "")):
        ci = s["points_per_game_ci95"] or ["", ""]
        w.writerow([kind, rank, agent, opponent, s["games"], s["points_per_game"], *ci, s["win_rate"],
                    *s["win_rate_ci95"], *elo, *[s["levels_won"][n] for n in names],
                    *[s["levels_lost"][n] for n in names]])

    for r in summary["ranking"]:
        row("agent", r["rank"], r["agent"], "", r, (r["elo"], *r["elo_ci95"]))
    for p in summary["pairings"]:
        row("pairing", "", p["agents"][0], p["agents"][1], p)
    return buf.getvalue()


def display_name(spec: str, width: int | None = None) -> str:
    """An agent spec shortened for tables: a path argument keeps its last two parts
    (``td:checkpoints/backgammon/td80/checkpoint.pt`` -> ``td:td80/checkpoint.pt``).  Only
    with ``width`` (pictures, the progress bar) is a longer name cut, in the middle, so that
    its kind (the prefix) and its end both stay readable."""
    prefix, sep, arg = spec.partition(":")
    if sep and "/" in arg:
        spec = f"{prefix}:{'/'.join(arg.split('/')[-2:])}"
    if width is None or len(spec) <= width:
        return spec
    head = (width - 1) // 2
    return spec[:head] + "…" + spec[len(spec) - (width - 1 - head):]


def display_names(specs: Sequence[str]) -> dict[str, str]:
    """The names tables print for agents: :func:`display_name` (never cut), or the whole spec
    where two agents' shortened names would be the same."""
    short = {s: display_name(s) for s in specs}
    seen = list(short.values())
    return {s: n if seen.count(n) == 1 else s for s, n in short.items()}


def format_summary(summary: dict) -> str:
    """The ranking (Elo) and the cross-table as text for the terminal."""
    names = summary["result_levels"]
    ranking = summary["ranking"]
    shown = display_names([r["agent"] for r in ranking])
    w = max(5, max(len(shown[r["agent"]]) for r in ranking))
    lines = [f"{summary['variant']} v{summary['variant_version']}"
             + (f" {summary['options']}" if summary["options"] else "")
             + f", {summary['mode']}: {len(ranking)} agents, {summary['games_per_pairing']} games per pairing "
             f"({summary['games_per_pairing'] // 2} duplicate-dice pairs), {summary['games']} games, seed {summary['seed']}",
             "",
             "Ranking. Elo: maximum likelihood on wins, mean 0, 95% interval from the Hessian. "
             "Points per game with 95% CI over duplicate pairs.",
             f"{', '.join(n + ' %' for n in names[1:])}: share of games won at that level or higher."
             if len(names) > 1 else "",
             f" #  {'agent':<{w}}  {'Elo':>5}  {'95% CI':<13}  {'games':>5}  {'pts/game':>8}  {'95% CI':<15}  {'win %':>5}"
             + "".join(f"  {n + ' %':>{max(len(n) + 2, 6)}}" for n in names[1:])]
    for r in ranking:
        ci = r["points_per_game_ci95"]
        ci_text = f"[{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "n/a"
        lines.append(f"{r['rank']:>2}  {shown[r['agent']]:<{w}}  {r['elo']:>+5.0f}  "
                     f"{'[%+.0f, %+.0f]' % tuple(r['elo_ci95']):<13}  {r['games']:>5}  "
                     f"{r['points_per_game']:>+8.3f}  {ci_text:<15}  {100 * r['win_rate']:>5.1f}"
                     + "".join(f"  {100 * r['win_rates_by_level'][n]:>{max(len(n) + 2, 6)}.1f}" for n in names[1:]))
    order = [r["agent"] for r in ranking]
    cw = {c: max(10, len(shown[c])) for c in order}
    lines += ["", "Cross-table: points per game of the row agent against the column agent (± 95% CI half-width)",
              f"{'':<{w}}" + "".join(f"  {shown[c]:>{cw[c]}}" for c in order)]
    half = {}
    for p in summary["pairings"]:
        ci = p["points_per_game_ci95"]
        h = (ci[1] - ci[0]) / 2 if ci else float("nan")
        half[tuple(p["agents"])] = half[tuple(p["agents"][::-1])] = h
    for x in order:
        cells = []
        for y in order:
            v = summary["cross_table"][x][y]
            cells.append("·" if x == y else "" if v is None else f"{v:+.2f}±{half[(x, y)]:.2f}")
        lines.append(f"{shown[x]:<{w}}" + "".join(f"  {c:>{cw[y]}}" for c, y in zip(cells, order)))
    if "stakes" in summary:
        lines += ["", f"Stakes ({summary['stakes']}): raises offered, and taken / passed / beavered "
                      f"when offered; mean final stake of the agent's games",
                  f"{'':<{w}}  {'offered':>7}  {'received':>8}  {'takes':>5}  {'passes':>6}  "
                  f"{'beavers':>7}  {'mean stake':>10}"]
        for r in ranking:
            c = r["cube"]
            lines.append(f"{shown[r['agent']]:<{w}}  {c['doubles']:>7}  {c['doubles_received']:>8}  "
                         f"{c['takes']:>5}  {c['passes']:>6}  {c['beavers']:>7}  {c['mean_stake']:>10.2f}")
    return "\n".join(lines)


def plot_summary(summary: dict, path: Path) -> bool:
    """Draw the Elo table and the cross-table into a PNG; False when matplotlib is missing."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return False
    ranking = summary["ranking"]
    order = [r["agent"] for r in ranking]
    k = len(order)
    fig = Figure(figsize=(6 + 1.1 * k, 1.2 + 0.55 * k + 1.5), layout="constrained")
    ax_elo, ax_x = fig.subplots(1, 2, width_ratios=[1, 1.3])
    y = np.arange(k)[::-1]
    elo = np.array([r["elo"] for r in ranking])
    ci = np.array([r["elo_ci95"] for r in ranking])
    ax_elo.errorbar(elo, y, xerr=[elo - ci[:, 0], ci[:, 1] - elo], fmt="o", capsize=4, color="tab:blue")
    ax_elo.set_yticks(y, [display_name(a, 24) for a in order])
    ax_elo.set_ylim(-0.7, k - 0.3)
    ax_elo.axvline(0, color="grey", lw=0.8, ls=":")
    ax_elo.set_xlabel("Elo (mean 0), 95% interval")
    ax_elo.set_title("Elo")
    grid = np.array([[np.nan if summary["cross_table"][a][b] is None else summary["cross_table"][a][b]
                      for b in order] for a in order], float)
    lim = max(float(np.nanmax(np.abs(grid))) if np.isfinite(grid).any() else 1.0, 1e-9)
    im = ax_x.imshow(grid, cmap="RdBu", vmin=-lim, vmax=lim)
    for i in range(k):
        for j in range(k):
            if np.isfinite(grid[i, j]):
                ax_x.text(j, i, f"{grid[i, j]:+.2f}", ha="center", va="center", fontsize=9,
                          color="white" if abs(grid[i, j]) > 0.6 * lim else "black")
    ax_x.set_xticks(range(k), [display_name(a, 22) for a in order], rotation=30, ha="right")
    ax_x.set_yticks(range(k), [display_name(a, 22) for a in order])
    ax_x.set_title("points per game, row vs column")
    fig.colorbar(im, ax=ax_x, shrink=0.8)
    fig.suptitle(f"{summary['variant']}: {summary['mode']}, {summary['games_per_pairing']} games per pairing")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    write_atomic(path, buf.getvalue())
    return True


def _file_stem(name: str) -> str:
    from .matfile import mat_name
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "_", mat_name(name)).strip("_") or "agent"


def write_outputs(out: Path, config: TournamentConfig, summary: dict,
                  games: dict[tuple[str, str, int], GameRecord], log: Callable[[str], None]) -> list[Path]:
    """Write summary.json, summary.csv, the picture and the .mat files; the paths written."""
    written = [out / SUMMARY_JSON, out / SUMMARY_CSV]
    write_atomic(written[0], json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    write_atomic(written[1], summary_csv(summary))
    if plot_summary(summary, out / PICTURE):
        written.append(out / PICTURE)
    else:
        log("no picture: matplotlib is not installed (pip install 'nardy-ai[plot]')")
    if not config.rules().is_long and config.stakes == "none":   # .mat files: cubeless games only
        from .matfile import write_mat
        (out / MATCH_DIR).mkdir(exist_ok=True)
        for n, (a, b) in enumerate(config.pairings(), 1):
            path = out / MATCH_DIR / f"{n:02d}-{_file_stem(a)}-vs-{_file_stem(b)}.mat"
            text = write_mat([games[(a, b, i)] for i in range(config.games)], a, b,
                             event=f"nardy tournament, seed {config.seed}: {a} vs {b}")
            write_atomic(path, text)
            written.append(path)
    return written


# --- running --------------------------------------------------------------------------------

def _leader(tally: dict[str, list[float]]) -> str:
    played = {a: p / n for a, (p, n) in tally.items() if n}
    if not played:
        return ""
    best = max(played, key=lambda a: played[a])
    return f"leader {display_name(best, 24)} {played[best]:+.2f} pts/game"


def run_tournament(config: TournamentConfig, out: str | os.PathLike, resume: bool = False, jobs: int | None = None,
                   progress: bool = True, log: Callable[[str], None] = print, backend: str | Backend = "local",
                   address: str | None = None, play: Callable[[Chunk], tuple] | None = None) -> dict:
    """Play (or finish) a tournament in folder ``out`` and write its outputs; the summary.

    Without ``resume`` the folder must not hold a tournament yet; with it, ``config`` must be
    the saved one (see :func:`resume_config`) and the games already in ``games.jsonl`` are
    kept.  Chunks run on ``backend`` (see :mod:`nardy_ai.backends`: ``local`` with ``jobs``
    spawned processes, default 1, or ``ray`` at ``address``, or a :class:`Backend` object);
    results do not depend on the backend or ``jobs``.  ``play`` replaces :func:`play_chunk`
    (tests use it to kill workers).
    """
    config.check()
    for spec in config.agents:          # a bad spec fails here, before any file is written
        _agent(config.variant, spec)
    own = not isinstance(backend, Backend)
    if own:                             # so do bad backend options and a missing Ray
        check_backend(backend, jobs, address)
        if backend == "ray":
            require_ray()
    out = Path(out)
    if resume and load_config(out) != config:
        raise TournamentError(f"--resume: the settings differ from those saved in {out / CONFIG_FILE}")
    runner = make_backend(backend, jobs, address, log) if own else backend    # Ray joins or fails here
    try:
        if not resume:
            try:
                out.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise TournamentError(f"cannot create {out}: {e.strerror}") from None
        with FolderLock(out, "nardy tournament", TournamentError):
            if play is None and runner.name == "ray":     # cluster nodes may not have the checkpoints
                play = functools.partial(play_chunk_with_files, checkpoint_files(config.agents))
            return _play(config, out, resume, runner, play or play_chunk, progress, log)
    finally:
        if own:
            runner.close()


def _play(config: TournamentConfig, out: Path, resume: bool, backend: Backend, play: Callable,
          progress: bool, log: Callable[[str], None]) -> dict:
    from tqdm import tqdm

    games_path = out / GAMES_FILE
    if resume:
        _cut_torn_tail(games_path)
        done = read_games(games_path)
    else:
        if (out / CONFIG_FILE).exists() or games_path.exists():
            raise TournamentError(f"{out} already holds a tournament; continue it with --resume or choose another --out")
        write_atomic(out / CONFIG_FILE, json.dumps(config.to_json(), indent=1, ensure_ascii=False) + "\n")
        done = {}
    chunks = schedule(config)
    expected = {(c.a, c.b, i) for c in chunks for i in c.indices()}
    stray = next((k for k in done if k not in expected), None)
    if stray:
        raise TournamentError(f"{games_path} holds game {stray[2]} of {stray[0]} vs {stray[1]}, "
                              f"which is not part of this tournament")
    todo = [c for c in chunks if any((c.a, c.b, i) not in done for i in c.indices())]
    remaining = sum(1 for c in todo for i in c.indices() if (c.a, c.b, i) not in done)
    tally = {a: [0.0, 0] for a in config.agents}

    def count(a: str, b: str, r: GameRecord) -> None:
        pts = r.points if (r.winner == 0) == (r.white == a) else -r.points
        tally[a][0] += pts
        tally[a][1] += 1
        tally[b][0] -= pts
        tally[b][1] += 1

    for (a, b, _), r in done.items():
        count(a, b, r)
    if done and remaining:
        log(f"resuming {out}: {len(done)} games already played, {remaining} to go")
    start = time.perf_counter()
    with open(games_path, "a", encoding="utf-8") as f, \
            tqdm(total=remaining, unit="game", desc="tournament", disable=not progress or not remaining,
                 file=sys.stderr, dynamic_ncols=True) as bar:
        for chunk, (_, results) in backend.run(play, todo):
            lines = []
            for index, record in results:
                key = (chunk.a, chunk.b, index)
                if key in done:
                    continue
                done[key] = record
                count(chunk.a, chunk.b, record)
                lines.append(game_line(chunk.a, chunk.b, index, record) + "\n")
            f.write("".join(lines))
            f.flush()
            os.fsync(f.fileno())
            bar.update(len(lines))
            bar.set_postfix_str(_leader(tally), refresh=False)
    elapsed = time.perf_counter() - start
    summary = summarize_tournament(config, done)
    if remaining:
        log(f"{remaining} games in {elapsed:.1f} s ({remaining / max(elapsed, 1e-9):.1f} games/s, "
            f"{backend.describe()})")
        session = {"finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "games": remaining,
                   "seconds": round(elapsed, 3), "games_per_s": round(remaining / max(elapsed, 1e-9), 2),
                   "backend": backend.name, "workers": backend.workers, "runs": backend.describe(),
                   "tasks_rerun": backend.restarts, "machine": machine_description()}
        with open(out / SESSIONS_FILE, "a", encoding="utf-8") as f:
            f.write(json.dumps(session) + "\n")
    written = write_outputs(out, config, summary, done, log)     # files first: printing may fail
    log(format_summary(summary))
    log("written: " + ", ".join(str(p) for p in [games_path, *written]))
    return summary
