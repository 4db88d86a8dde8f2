"""Tournament statistics from the games alone: points per game, win rates, Elo, cube actions (see :mod:`nardy_ai.tournament`)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..game import GameRecord
from ..scoring import level_names
from ..stats import Z95, mean_ci95, side_stats
from ..variants import variant_options
from .settings import ELO_PER_LOGIT, TournamentConfig, TournamentError


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
PAIRED_METHOD = ("difference of two agents' points per game against the gauntlet's first agent on the same "
                 "dice (--dice shared); 95% CI = mean +/- 1.96 standard errors of the duplicate pairs' "
                 "differences; unpaired_ci95: the interval the two matches would give on independent dice")
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
        pts = np.array([r.points_for(a) for r in recs])
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
    paired = config.dice == "shared" and config.gauntlet and len(config.agents) > 2
    return {
        "variant": v.id, "variant_version": v.version, "options": variant_options(v),
        "mode": "gauntlet" if config.gauntlet else "round robin",
        "agents": list(config.agents), "games_per_pairing": config.games, "seed": config.seed,
        "chunk_pairs": config.chunk, "games": config.games * len(pairings_out),
        "result_levels": list(names), "scoring": list(v.scoring),
        "methods": {"elo": ELO_METHOD, "points_per_game": PPG_METHOD, "win_rate": WIN_METHOD,
                    **({"paired": PAIRED_METHOD} if paired else {})},
        "ranking": ranking, "pairings": pairings_out, "cross_table": cross,
        **({"stakes": config.stakes} if config.stakes != "none" else {}),
        **({"dice": config.dice} if config.dice != "pairing" else {}),
        **({"paired": paired_differences(config, games)} if paired else {}),
    }


def paired_differences(config: TournamentConfig, games: dict[tuple[str, str, int], GameRecord]) -> list[dict]:
    """For a gauntlet on shared dice (``config.dice == "shared"``): every two of the first
    agent's opponents compared on the same dice.  Duplicate pair ``k`` of pairings ``(X, A)``
    and ``(X, B)`` rolled the same dice, so the difference of A's and B's mean points in it
    (from their side, against ``X``) is one sample of how much better A does than B against
    ``X``; what luck the two matches share cancels.  Each entry: ``agents [A, B]``,
    ``opponent X``, ``pairs``, ``difference`` (points per game, A minus B) with ``ci95`` over
    the pairs' differences, ``unpaired_ci95`` (the interval of the same difference from two
    matches on independent dice: the two standard errors added in quadrature) and
    ``correlation`` of the pairs' results (what the shared dice bought)."""
    x, others = config.agents[0], config.agents[1:]
    per_pair = {}
    for b in others:
        pts = np.array([games[(x, b, i)].points_for(b) for i in range(config.games)], float)
        per_pair[b] = pts.reshape(-1, 2).mean(axis=1)
    out = []
    for i, a in enumerate(others):
        for b in others[i + 1:]:
            pa, pb = per_pair[a], per_pair[b]
            n, mean = len(pa), float((pa - pb).mean())
            ci_u = corr = None
            if n >= 2:
                half_u = Z95 * float(np.sqrt((pa.var(ddof=1) + pb.var(ddof=1)) / n))
                ci_u = [mean - half_u, mean + half_u]
                if pa.std() > 0 and pb.std() > 0:
                    corr = float(np.corrcoef(pa, pb)[0, 1])
            out.append({"agents": [a, b], "opponent": x, "pairs": n, "difference": mean,
                        "ci95": mean_ci95(pa - pb), "unpaired_ci95": ci_u, "correlation": corr})
    return out


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
