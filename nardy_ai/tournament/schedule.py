"""The schedule of a tournament (chunks of duplicate pairs, their seeds) and the workers that play a chunk (see :mod:`nardy_ai.tournament`)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace

import numpy as np

from ..agents import Agent, make_agent
from ..shipping import shipped_spec
from ..game import GameRecord, play_games
from ..variants import parse_variant_spec
from .settings import TournamentConfig


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


def chunk_seed(seed: int, a: str, b: str, number: int, dice: str = "pairing") -> int:
    """The dice seed of chunk ``number`` of pairing ``(a, b)`` (63 bits).  ``dice="pairing"``:
    the seed, the pairing's names and the chunk number (each pairing its own dice);
    ``"shared"``: the seed and the chunk number only, so game ``i`` of every pairing rolls the
    same sequence of dice whatever the agents play (a game's dice follow the seed and the batch
    size alone, :class:`~nardy_ai.driver.SeededDice`)."""
    if dice == "shared":
        key = [seed, number]
    else:
        key = [seed, int.from_bytes(hashlib.sha256(json.dumps([a, b]).encode()).digest()[:8], "little"), number]
    state = np.random.SeedSequence(key).generate_state(1, np.uint64)[0]
    return int(state >> np.uint64(1))


def schedule(config: TournamentConfig) -> list[Chunk]:
    """Every chunk, chunk number first so that all pairings progress together."""
    total = config.games // 2
    out = []
    for number in range((total + config.chunk - 1) // config.chunk):
        first = number * config.chunk
        for a, b in config.pairings():
            out.append(Chunk(config.variant, a, b, number, first, min(config.chunk, total - first),
                             chunk_seed(config.seed, a, b, number, config.dice), config.stakes))
    return out


_AGENTS: dict[tuple[str, str], Agent] = {}


def _agent(variant: str, spec: str) -> Agent:
    """Agents are built once per process (a neural agent loads its checkpoint once)."""
    key = (variant, spec)
    if key not in _AGENTS:
        _AGENTS[key] = make_agent(spec, parse_variant_spec(variant))
    return _AGENTS[key]


# --- checkpoints shipped to workers that cannot read them (a cluster without shared disk) ----

def play_chunk_with_files(files: dict[str, tuple[str, bytes]], chunk: Chunk) -> tuple[Chunk, list]:
    """:func:`play_chunk` on a worker that may lack the checkpoints: each ``td:`` agent whose
    file is missing here (or differs) is built from the driver's copy.  Records keep the
    original specs, so the games are those of :func:`play_chunk`."""
    for spec in (chunk.a, chunk.b):
        key = (chunk.variant, spec)
        built = None if key in _AGENTS else shipped_spec(spec, files)
        if built is not None:
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
