"""Pooling tournaments: one figure per pairing from the games of several tournament folders
(other seeds, or a match stopped part-way), see :mod:`nardy_ai.tournament`.

A pairing's estimate from one 4,000-game match is often too wide to decide a question; a
second match on other dice narrows it.  :func:`pool_tournaments` reads each folder's
``tournament.json`` and ``games.jsonl`` (a finished or an interrupted tournament alike),
keeps the *complete duplicate pairs* of every pairing (games ``2k`` and ``2k + 1`` both
played: an interrupted match contributes the pairs it finished), and summarises each pairing
over all folders together with the statistics of a single tournament
(:func:`~nardy_ai.stats.side_stats`: points per game with its interval over duplicate pairs,
the pairs won and lost, result levels), plus each folder's own figure.

A pairing is the same agents in either order (a folder that played ``B`` vs ``A`` counts with
its points negated).  The folders must agree on the rules (variant, its version and options)
and the stakes.  Two folders may not hold the same pairing in the same order with the same
seed: their dice would be the same (:func:`~.schedule.chunk_seed`), and pooling them would
count one sample twice; on shared dice (``--dice shared``, the seed alone) not in either order.
A match on shared dice and one on each pairing's own dice roll other dice and pool.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import FormatError
from ..scoring import level_names
from ..stats import side_stats
from ..variants import parse_variant_spec, variant_options
from .gamesfile import read_games
from .settings import CONFIG_FILE, GAMES_FILE, TournamentConfig, TournamentError, read_settings
from .statistics import PPG_METHOD

POOL_METHOD = ("complete duplicate pairs of every folder pooled per pairing (either seat order; points of "
               "a reversed pairing negated); " + PPG_METHOD + "; decided pairs: 95% Wilson interval")


def _folder(path: str | os.PathLike) -> tuple[TournamentConfig, dict, dict]:
    """The settings (parsed and as saved) and the games of one tournament folder."""
    config, saved = read_settings(path, f"{path}: not a tournament folder ({CONFIG_FILE} is missing)")
    games_path = Path(path) / GAMES_FILE
    try:
        games = read_games(games_path)
    except FileNotFoundError:
        games = {}
    except FormatError as e:
        raise FormatError(f"{games_path}: {e}") from None
    return config, saved, games


def _points(config: TournamentConfig, games: dict, a: str, b: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Signed points from ``a``'s side and result levels of the complete duplicate pairs of
    pairing ``(a, b)`` (pairs adjacent), and the number of games of the pairing on file."""
    played = {i for (x, y, i) in games if (x, y) == (a, b) and i < config.games}
    pairs = sorted(k for k in {i // 2 for i in played} if 2 * k in played and 2 * k + 1 in played)
    recs = [games[(a, b, i)] for k in pairs for i in (2 * k, 2 * k + 1)]
    pts = np.array([r.points_for(a) for r in recs], float)
    lev = np.array([r.level for r in recs], np.int64)
    return pts, lev, len(played)


def pool_tournaments(folders: Sequence[str | os.PathLike], aliases: dict[str, str] | None = None) -> dict:
    """The JSON-ready pooled summary of the tournament ``folders`` (at least two): per pairing
    found in any of them, its statistics over all their complete duplicate pairs and each
    folder's share.  ``aliases`` maps an agent spec to the name it is pooled under (the same
    net called by a path in one folder and by its registry name in another).  Raises
    :class:`TournamentError` for folders of other rules or stakes, the same dice twice, or no
    pairing held by two folders."""
    folders = [str(f) for f in folders]
    aliases = dict(aliases or {})
    if len(folders) < 2:
        raise TournamentError(f"pooling needs at least two tournament folders, got {len(folders)}")
    if len(set(map(os.path.realpath, folders))) < len(folders):
        raise TournamentError("a tournament folder is named twice: its games would count twice")
    loaded = [(f, *_folder(f)) for f in folders]
    f0, c0, s0, _ = loaded[0]
    v = c0.rules()
    ref = {"variant": v.id, "variant_version": s0.get("variant_version"), "options": variant_options(v),
           "stakes": c0.stakes}
    for f, c, s, _ in loaded[1:]:
        w = c.rules()
        have = {"variant": w.id, "variant_version": s.get("variant_version"), "options": variant_options(w),
                "stakes": c.stakes}
        for key in ref:
            if have[key] != ref[key]:
                raise TournamentError(f"{f} was played with {key} {have[key]!r}, {f0} with {ref[key]!r}: "
                                      "only tournaments of the same rules and stakes pool")
    names = level_names(parse_variant_spec(c0.variant))
    pooled: dict[frozenset, dict] = {}
    seen_dice: dict[tuple, str] = {}
    for f, c, _, games in loaded:
        for a, b in c.pairings():
            # shared dice follow the seed alone: either seat order replays the same duplicate pairs
            key = (c.seed, a, b, "pairing") if c.dice == "pairing" else (c.seed, frozenset((a, b)), c.dice)
            if key in seen_dice:
                raise TournamentError(f"{f} and {seen_dice[key]} both played {a} vs {b} with seed "
                                      f"{c.seed}: the same dice, which pool as one sample counted twice")
            seen_dice[key] = f
            na, nb = aliases.get(a, a), aliases.get(b, b)
            if na == nb:
                raise TournamentError(f"{f}: --alias makes {a} and {b} the same agent")
            entry = pooled.setdefault(frozenset((na, nb)), {"agents": [na, nb], "parts": []})
            pts, lev, on_file = _points(c, games, a, b)
            sign = 1.0 if entry["agents"] == [na, nb] else -1.0
            entry["parts"].append((f, c, sign * pts, lev, on_file, (a, b)))
    if not any(len(e["parts"]) > 1 for e in pooled.values()):
        raise TournamentError("no pairing is held by two of the folders: nothing to pool")
    pairings = []
    for e in pooled.values():
        pts = np.concatenate([p for _, _, p, _, _, _ in e["parts"]])
        lev = np.concatenate([lv for _, _, _, lv, _, _ in e["parts"]])
        parts = []
        for f, c, p, lv, on_file, (a, b) in e["parts"]:
            one = side_stats(p, lv, names) if len(p) else None
            parts.append({"folder": f, "agents": [a, b], "seed": c.seed, "games_per_pairing": c.games,
                          "games_on_file": on_file, "games": len(p), "complete": len(p) == c.games,
                          "points_per_game": one["points_per_game"] if one else None,
                          "points_per_game_ci95": one["points_per_game_ci95"] if one else None})
        if not len(pts):
            pairings.append({"agents": e["agents"], "games": 0, "folders": parts})
            continue
        pairings.append({"agents": e["agents"], **side_stats(pts, lev, names), "folders": parts})
    return {"variant": v.id, "variant_version": ref["variant_version"], "options": ref["options"],
            **({"stakes": c0.stakes} if c0.stakes != "none" else {}),
            "folders": folders, **({"aliases": aliases} if aliases else {}), "result_levels": list(names),
            "method": POOL_METHOD, "pairings": pairings}


def format_pool(pool: dict) -> str:
    """The pooled figures as text: one block per pairing, its pooled line, then each folder's."""
    from .outputs import _prose, display_names, fold_table, NAME_WIDTH

    lines = _prose(f"{pool['variant']} v{pool['variant_version']}"
                   + (f" {pool['options']}" if pool["options"] else "")
                   + (f", stakes {pool['stakes']}" if "stakes" in pool else "")
                   + f": {len(pool['folders'])} tournament folders pooled")
    lines += _prose("Points per game of the first agent with 95% CI over duplicate pairs; complete duplicate "
                    "pairs only (a match stopped part-way counts the pairs it finished); decided pairs: the "
                    "pairs with a non-zero sum, won by the first agent (95% Wilson interval).")

    def ci(pair, fmt):
        return f"[{fmt % pair[0]}, {fmt % pair[1]}]" if pair else "n/a"

    for p in pool["pairings"]:
        a, b = p["agents"]
        shown = display_names([a, b], NAME_WIDTH, pool["variant"])
        lines += ["", f"{shown[a]} vs {shown[b]}"]
        keys = [f"{Path(q['folder']).name or q['folder']}, seed {q['seed']}"
                + ("" if q["complete"] else f" ({q['games']} of {q['games_per_pairing']})")
                for q in p["folders"]] + ["pooled"]
        rows = p["folders"] + [p]
        lines += fold_table("games of", keys, [
            ("games", [str(r["games"]) for r in rows]),
            ("pts/game", ["n/a" if r.get("points_per_game") is None else f"{r['points_per_game']:+.3f}"
                          for r in rows]),
            ("95% CI", [ci(r.get("points_per_game_ci95"), "%+.3f") for r in rows])])
        if p.get("decided_pairs_won_ci95"):
            lines.append(f"decided pairs won: {p['pairs_won']} of {p['pairs_won'] + p['pairs_lost']} "
                         f"({100 * p['decided_pairs_won_share']:.1f}%, 95% CI "
                         f"{ci([100 * x for x in p['decided_pairs_won_ci95']], '%.1f')})")
    return "\n".join(lines)
