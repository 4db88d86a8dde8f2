"""Writes ``tests/data/pinned_games.jsonl`` (game records of the lockstep runner as it was
before the game core (issue #13)) and ``pinned_loops.json`` (digests of the
other lockstep loops' output), which ``tests/test_core.py`` replays to show the drivers of
:mod:`nardy_ai.core` play the same games for the same seeds.  Run once, from the repository
root, with the code whose games are to be pinned:  ``python tests/make_pinned_games.py``."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from nardy_ai.agents import make_agent  # noqa: E402
from nardy_ai.game import play_games, write_jsonl  # noqa: E402
from nardy_ai.variants import parse_variant_spec  # noqa: E402

#: (variant, white, black, games, seed, stakes)
CASES = [
    ("backgammon", "random", "heuristic", 3, 11, None),
    ("backgammon", "heuristic", "pubeval", 3, 12, "cube"),
    ("short_caucasian", "heuristic", "random", 2, 13, None),
    ("short_trictrac", "random", "heuristic", 3, 14, None),
    ("long", "heuristic", "random", 2, 15, None),
    ("long", "heuristic", "heuristic", 3, 16, "dave-arithmetic"),
    ("long_dave", "heuristic", "random", 2, 17, "dave"),
    ("backgammon,jacoby=true,murphy_cap=2", "heuristic", "heuristic", 4, 18, "cube"),
]


def digest(*arrays) -> str:
    """SHA-256 of the arrays' bytes, in order."""
    import hashlib

    import numpy as np
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def sampler_digests(variant: str) -> dict:
    """Digests of the benchmarks' random-play and self-play samplers for fixed seeds."""
    import numpy as np

    from nardy_ai.agents import make_agent
    from nardy_ai.bench.positions import random_positions, self_play_decisions
    from nardy_ai.variants import parse_variant_spec
    b, d = self_play_decisions(make_agent("heuristic", variant), parse_variant_spec(variant),
                               np.random.default_rng(4), 16, 3, 150)
    return {f"random_positions/{variant}": digest(random_positions(variant, 32, 120, seed=3)),
            f"self_play_decisions/{variant}": digest(b, d)}


def selfplay_digest(variant: str) -> dict:
    """Digest of TD self-play's first 12 finished games (an untrained 8-unit net, seeded)."""
    import numpy as np
    import torch

    from nardy_ai.model import NeuralEvaluator
    from training.td import SelfPlay
    torch.manual_seed(0)
    ev = NeuralEvaluator.create(variant, hidden=(8,))
    play = SelfPlay(ev, 16, np.random.default_rng(5), epsilon=0.3)
    games = []
    while len(games) < 12:
        games += play.ply()
    return {f"selfplay/{variant}": digest(*[g.boards for g in games[:12]],
                                          np.array([g.level for g in games[:12]]))}


def loop_digests() -> dict:
    """What the other lockstep loops produce for fixed seeds: TD self-play and the benchmarks'
    two samplers, for backgammon and long nardy."""
    out = {}
    for variant in ("backgammon", "long"):
        out.update(selfplay_digest(variant))
        out.update(sampler_digests(variant))
    return out


if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "pinned_games.jsonl")
    if os.path.exists(out):
        os.remove(out)
    for variant, white, black, n, seed, stakes in CASES:
        v = parse_variant_spec(variant)
        agents = (make_agent(white, v), make_agent(black, v))
        write_jsonl(play_games(v, agents, n, seed=seed, stakes=stakes), out)
    import json
    with open(out.replace("pinned_games.jsonl", "pinned_loops.json"), "w") as f:
        json.dump(loop_digests(), f, indent=1)
    print(out)
