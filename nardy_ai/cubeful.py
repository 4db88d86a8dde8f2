"""Cubeful equity: Janowski's model at the leaves, an n-ply lookahead over the rolls with the
cube (or dave) decisions of both players inside, for the cube decisions of the neural agents
and their checker play in games with stakes (:func:`afterstate_values`).

Units.  Every value here is *points* for the player on roll before the roll (a position,
not an afterstate), counting the stake: a game won at stake 2 is worth 2.  The public
functions convert to units of the current stake, as :func:`nardy_ai.cube.janowski_equity`
and the agents' ``double`` / ``take`` report them.

A node is a position with its stake seen by the player on roll: ``value`` (the stake),
``access`` (+1 the player holds the cube / the right to offer, 0 centred, -1 the opponent),
``next`` (the stake after a raise: CUBE-1 ×2, CUBE-D ×2 or +1) and ``turned`` (BG-J).  Its
values are

no double (ND)
    at 0 ply Janowski's cubeful equity ``value × E(p, W, L, x, access)``
    (:func:`nardy_ai.cube.janowski_equity`; BG-J: a centred never-turned cube counts gammons
    as single games), the cube life ``x`` by position class (:func:`nardy_ai.cube.cube_life`);
    at n plies the mean over the 21 rolls of the player's best play, each afterstate valued as
    the opponent's node at n - 1 plies (negated), a play that bears off the last checker at
    its exact points (BG-6 with BG-J, LN-7, LN-8 dave: the stake).  Plays are chosen by their
    0-ply cubeful value (gnubg's convention: one play per roll is searched deeper).
double / take (DT)
    the same with the stake raised to ``next``, the opponent holding it (it may re-raise to
    the next stake of the progression inside the lookahead);
double / pass (DP)
    ``value``: the opponent gives up the current stake;

and the node is worth ``max(ND, min(DT, DP))`` where the player may raise (the opponent
answers with the better of take and pass), else ND.  So at 1 ply the opponent's replies are
valued with its own cube decision at 0 ply, and at 2 plies the player's next decisions as well.
No beaver and no automatic double inside the lookahead (BG-B, BG-M are options of the
game, not of money equity here).

Dave (CUBE-D, LN-8): W = L = 1 (the stake decides, no mars); a raise multiplies the stake by
``next / value`` (2 for the geometric progression; 2/1, 3/2, 4/3 ... for the arithmetic), and
the re-raise inside the lookahead follows the progression.
"""

from __future__ import annotations

import numpy as np

from .board import CHECKERS, OFF, flip
from .cube import Stakes, cube_life, janowski_equity, next_stake, progression, win_values
from .movegen import generate, segment_argmax, segment_ids
from .scoring import result_levels, stake_points
from .evaluator import Evaluator
from .model import flip_outcomes, n_outputs
from .search import MAX_PLIES, MAX_POSITIONS, ROLLS, ROLL_WEIGHTS, _check_plies
from .variants import Variant


def outcome_values(probs: np.ndarray, v: Variant, net_variant: Variant | None = None):
    """``(p, W, L)`` (:func:`nardy_ai.cube.win_values`) of outcome probabilities laid out as
    ``net_variant``'s (the evaluator's own; default ``v``) in a game of ``v``: under dave
    (LN-8) W = L = 1 whatever levels the net knows (a long net playing long nardy with dave)."""
    p, W, L = win_values(probs, net_variant or v)
    if v.stakes == "dave":
        W, L = np.ones_like(p), np.ones_like(p)
    return p, W, L


def leaf_values(probs: np.ndarray, x: np.ndarray, s: Stakes, v: Variant, net_variant: Variant | None = None):
    """0-ply ``(nd, dt, best)`` in points for the player on roll with outcome probabilities
    ``probs`` ``(N, K)`` (its own side, ``net_variant``'s layout) and cube life ``x`` in a game
    of ``v``; ``dt`` is NaN where the player may not raise."""
    p, W, L = outcome_values(probs, v, net_variant)
    untouched = (s.access == 0) & ~s.turned & bool(v.jacoby)
    value = s.value.astype(float)
    r = s.next / value
    nd = value * janowski_equity(p, np.where(untouched, 1.0, W), np.where(untouched, 1.0, L), x, s.access, r)
    after = next_stake(s.next, progression(v))
    dt = s.next * janowski_equity(p, W, L, x, -1, after / s.next.astype(float))
    dt = np.where(s.may_raise(), dt, np.nan)
    return nd, dt, _best(nd, dt, s)


def _best(nd: np.ndarray, dt: np.ndarray, s: Stakes) -> np.ndarray:
    """A node's worth: ``max(ND, min(DT, DP))`` where the player may raise (DP: the stake),
    else ND."""
    value = s.value.astype(float)
    return np.where(s.may_raise(), np.maximum(nd, np.minimum(np.nan_to_num(dt, nan=-np.inf), value)), nd)


def _on_roll_probs(boards: np.ndarray, ev: Evaluator) -> np.ndarray:
    """Outcome probabilities ``(N, K)`` of positions for the player on roll (0 ply)."""
    v = ev.variant
    return flip_outcomes(ev.probabilities(flip(boards, v)), v)


def node_values(boards: np.ndarray, s: Stakes, ev: Evaluator, plies: int, v: Variant | None = None):
    """``(nd, dt, best)`` points ``(N,)`` of positions ``boards`` (the player on roll's view,
    nobody finished) with stakes ``s`` at ``plies`` (module docstring); ``dt`` NaN where the
    player may not raise.  ``v`` is the game's variant with its stakes and options (dave: W = L
    = 1 and the progression; BG-J), default the evaluator's own."""
    boards = np.asarray(boards, np.int8)
    v = v or ev.variant
    if plies == 0:
        return leaf_values(_on_roll_probs(boards, ev), cube_life(boards, v), s, v, ev.variant)
    n = len(boards)
    nd, dt = np.empty(n), np.full(n, np.nan)
    step = max(1, MAX_POSITIONS // len(ROLLS))
    for lo in range(0, n, step):
        rows = np.arange(lo, min(n, lo + step))
        nd[rows], dt[rows] = _lookahead(boards[rows], s.select(rows), ev, plies, v)
    return nd, dt, _best(nd, dt, s)


def _lookahead(boards: np.ndarray, s: Stakes, ev: Evaluator, plies: int, v: Variant):
    """ND and DT points of nodes at ``plies >= 1`` (one chunk of positions)."""
    m = len(boards)
    after = generate(np.repeat(boards, len(ROLLS), axis=0), np.tile(ROLLS, (m, 1)), v)
    node = segment_ids(after.offsets) // len(ROLLS)          # the node of each afterstate
    done = after.boards[:, OFF] == CHECKERS
    live = np.flatnonzero(~done)
    children = flip(after.boards[live], v)                  # the opponent on roll
    probs = np.empty((len(live), n_outputs(ev.variant)))
    if len(live):
        probs = flip_outcomes(ev.probabilities(after.boards[live]), ev.variant)
    x = cube_life(children, v)
    levels = result_levels(after.boards[done], v) if done.any() else np.zeros(0, np.int64)
    may = s.may_raise()
    out = []
    for branch in ("nd", "dt"):
        # the stake of the opponent's nodes: unchanged (seen by it), or raised and held by it
        if branch == "nd":
            child = s.opponent()
            win_value, win_turned = s.value, s.turned
        else:
            if not may.any():
                out.append(np.full(m, np.nan))
                continue
            child = s.raised()
            win_value, win_turned = s.next, np.ones(m, bool)
        mine = np.empty(len(after.boards))
        if done.any():
            idx = node[done]
            mine[done] = stake_points(levels, win_value[idx], win_turned[idx], v)
        if len(live):
            cs = child.select(node[live])
            mine[live] = -leaf_values(probs, x, cs, v, ev.variant)[2]
        best = segment_argmax(mine, after.offsets)           # one play per (node, roll)
        chosen = mine[best]
        if plies > 1:
            deep = np.flatnonzero(~done[best])
            if len(deep):
                rows = best[deep]
                cs = child.select(node[rows])
                chosen[deep] = -node_values(flip(after.boards[rows], v), cs, ev, plies - 1, v)[2]
        vals = chosen.reshape(m, len(ROLLS)) @ ROLL_WEIGHTS
        if branch == "dt":
            vals = np.where(may, vals, np.nan)
        out.append(vals)
    return out[0], out[1]


def _per_stake(points: np.ndarray, value: np.ndarray) -> np.ndarray:
    return points / value.astype(float)


def double_equities(boards: np.ndarray, cubes: Stakes, ev: Evaluator, plies: int = 0,
                    v: Variant | None = None):
    """The doubling decision of the players on roll of ``boards`` ``(N, 28)`` (their view)
    with stakes ``cubes`` (their view) at ``plies``: ``(decisions (N,) bool, equities)``, each
    a dict of ``no_double``, ``double_take``, ``double_pass`` (= 1) in units of the current
    stake and ``p`` (the 0-ply cubeless win chance).  Doubles when ``min(DT, DP) > ND``;
    a player who may not raise gets ``double_take`` NaN and False.  ``v``: the game's variant
    (:func:`node_values`)."""
    plies = _check_plies(plies)
    v = v or ev.variant
    boards = np.asarray(boards, np.int8)
    probs = _on_roll_probs(boards, ev)                # one evaluation at 0 ply serves both
    if plies == 0:
        nd, dt, _ = leaf_values(probs, cube_life(boards, v), cubes, v, ev.variant)
    else:
        nd, dt, _ = node_values(boards, cubes, ev, plies, v)
    nd, dt = _per_stake(nd, cubes.value), _per_stake(dt, cubes.value)
    p = probs[:, 0]
    decisions = np.nan_to_num(np.minimum(dt, 1.0), nan=-np.inf) > nd
    eq = [{"no_double": float(a), "double_take": float(b), "double_pass": 1.0, "p": float(q)}
          for a, b, q in zip(nd, dt, p)]
    return decisions, eq


def take_equities(boards: np.ndarray, cubes: Stakes, ev: Evaluator, plies: int = 0,
                  v: Variant | None = None):
    """The answer to a raise of the players of ``boards`` ``(N, 28)`` (their view) offered
    ``cubes`` (their view, before the raise): the equity after the take in units of the
    current stake (``take``; passing gives up the stake: ``pass`` = -1) and ``p``.  The doubler
    is on roll unless ``cubes.on_roll`` (a doubler answering a beaver, BG-B: it is on roll and
    the beaverer keeps the cube).  Takes when ``take >= -1``.  ``v``: the game's variant."""
    plies = _check_plies(plies)
    v = v or ev.variant
    boards = np.asarray(boards, np.int8)
    take = np.empty(len(boards))
    p = np.empty(len(boards))
    for on_roll in (False, True):
        rows = np.flatnonzero(cubes.on_roll == on_roll)
        if not len(rows):
            continue
        sub = cubes.select(rows)
        # The player on roll after the take holds no cube: the doubler (the taker holds it),
        # or, answering a beaver, the decider itself (the beaverer keeps the cube).
        stake = sub.raised(access=-1)
        pos, sign = (boards[rows], 1.0) if on_roll else (flip(boards[rows], v), -1.0)
        take[rows] = sign * node_values(pos, stake, ev, plies, v)[2] / sub.value
        q = _on_roll_probs(pos, ev)[:, 0]
        p[rows] = q if on_roll else 1 - q
    return take >= -1.0, [{"take": float(a), "pass": -1.0, "p": float(q)} for a, q in zip(take, p)]


def afterstate_values(boards: np.ndarray, stakes: Stakes, ev: Evaluator, plies: int = 0,
                      v: Variant | None = None) -> np.ndarray:
    """Cubeful equity ``(M,)``, in units of the current stake, of afterstates ``boards``
    ``(M, 28)`` for the player who just moved (its view), ``stakes`` a row per afterstate as
    that player sees them: the checker play of a money game with the cube (gnubg's cubeful
    evaluation).  An afterstate is the opponent's node at ``plies`` with the same stakes seen
    by it (:func:`node_values`, negated: its own cube decision is inside, so a play that lets
    it double the mover out is worth one stake lost however bad the position); a play that
    bears off the last checker counts its exact points (BG-6 with BG-J, LN-7, LN-8)."""
    v = v or ev.variant
    boards = np.asarray(boards, np.int8)
    out = np.empty(len(boards))
    done = boards[:, OFF] == CHECKERS
    if done.any():
        sd = stakes.select(np.flatnonzero(done))
        out[done] = stake_points(result_levels(boards[done], v), sd.value, sd.turned, v)
    live = np.flatnonzero(~done)
    if len(live):
        sl = stakes.select(live)
        out[live] = -node_values(flip(boards[live], v), sl.opponent(), ev, plies, v)[2]
    return out / stakes.value.astype(float)


__all__ = ["outcome_values", "leaf_values", "node_values", "double_equities", "take_equities",
           "afterstate_values", "MAX_PLIES"]
