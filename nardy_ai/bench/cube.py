"""``nardy bench cube``: an agent's double and take decisions against a reference.

The set: money-game positions before the roll, each with its stake (centred at 1, or held by
the player on roll at 2) and the reference's cubeful equities from the doubler's side, in units
of the current stake: ``no_double``, ``double_take`` and ``double_pass`` (= +1).  Sets are
versioned and shipped (``nardy_ai/data/cube_positions_<variant>_v1.jsonl``), so scoring an
agent needs no outside engine:

backgammon
    the cube (no Jacoby, no beaver); reference GNU Backgammon at 2 ply, cubeful (the optional
    ``gnubg`` extra, needed only to build the set: :func:`build_cube_set`);
long (with dave, the header's ``stakes``)
    no outside reference exists: the reference is our own cubeful rollouts
    (:mod:`nardy_ai.cube_rollout`: both branches played out on the same dice by the source net
    deciding raises at 0 ply, truncated and scored by its cubeful value;
    :func:`build_rollout_cube_set`).

The reference's proper actions: **double** when ``min(double_take, double_pass) >
no_double`` (by the margin ``min(DT, DP) - ND``), else no double (too good when ``no_double >
double_pass``: playing on for the gammon); **take** when ``double_take < double_pass`` (the
doubler's equity is lower after a take; margin ``|DP - DT|``).  A decision is *clear* when its
margin is at least :data:`CLEAR_MARGIN`.

Scoring an agent: its ``double`` on every position (cube as the player on roll sees it) and its
``take`` on every position where the reference would double or is within
:data:`TAKE_WINDOW` of doubling (the taker sees the position with the doubler on roll).
Figures are also given per position class (:mod:`nardy_ai.classes`).  Cost of a double decision: the reference's equity of its best action minus that of the chosen
one (a double answered by the reference's own take or pass); of a take decision: the
doubler's equity after the chosen answer minus after the best one.  Rates: missed doubles
(no double where the reference doubles), early doubles (double where it does not), wrong takes
(take where it passes), wrong passes (pass where it takes), each over the reference's
decisions of that kind.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from importlib.resources import files

import numpy as np

from ..board import board_from_json, board_to_json, flip
from ..classes import class_names, position_classes
from ..cube import Stakes, stakes_variant
from ..errors import FormatError
from ..files import write_atomic
from ..driver import ask_cube
from ..machine import machine_description
from .sets import read_set, require_set
from ..variants import Variant, get_variant

#: The set version ``nardy bench cube`` reads by default.
CUBE_SET_VERSION = 1
#: A decision whose reference margin is at least this (units of the stake) is clear.
CLEAR_MARGIN = 0.08
#: Take decisions are scored where the reference doubles or misses a double by less than this.
TAKE_WINDOW = 0.10


def source_net(source: str | None, variant: str | Variant) -> str:
    """The net whose self-play a new set's positions come from: ``source``, else the
    variant's champion in the agent registry.  (The shipped backgammon set v1 was drawn from
    an earlier search-target net, kept in the results guide's list of former nets.)"""
    from .. import registry
    return source or str(registry.champion(variant).path)


def cube_positions_path(variant, version: int | None = None) -> str:
    """The shipped cube set of a variant and version."""
    v = get_variant(variant)
    return str(files("nardy_ai") / "data" / f"cube_positions_{v.id}_v{version or CUBE_SET_VERSION}.jsonl")


@dataclass
class CubeSet:
    """A cube position set: ``boards`` ``(N, 28)`` (the player on roll's view), ``value``
    and ``owner`` (``"centre"`` / ``"mover"``) of each cube, and the reference's equities
    ``nd``, ``dt``, ``dp`` ``(N,)`` from the doubler's side."""
    variant: Variant
    header: dict
    boards: np.ndarray
    value: np.ndarray
    owner: list
    nd: np.ndarray
    dt: np.ndarray
    dp: np.ndarray

    def views(self) -> Stakes:
        """The stakes as the doubler sees them (the taker's: ``.opponent()``): centred at 1, or
        the doubler's at 2 after a taken raise; the next stake by the set's progression."""
        return Stakes.from_dicts([{"value": int(x), "owner": o, "turned": bool(x > 1)}
                                  for x, o in zip(self.value, self.owner)], self.variant)

    def reference(self) -> dict:
        """The reference's proper actions and margins."""
        best_double = np.minimum(self.dt, self.dp)
        double = best_double > self.nd
        take = self.dt < self.dp
        return {"double": double, "double_margin": np.abs(best_double - self.nd),
                "take": take, "take_margin": np.abs(self.dp - self.dt),
                "take_scored": double | (self.nd - best_double < TAKE_WINDOW)}


def load_cube_positions(variant="backgammon", path: str | None = None, version: int | None = None) -> CubeSet:
    """Read a cube set (the shipped one of ``version`` unless ``path``); a clear
    :class:`~nardy_ai.errors.FormatError` naming the line for anything malformed."""
    v = get_variant(variant)
    path = path or cube_positions_path(v, version)
    require_set(path, "cube position set", v.id,
                " (build one with nardy_ai.bench.cube.build_cube_set, which needs the gnubg extra)")

    def position(obj: dict) -> tuple:
        _, board, _, cube = board_from_json(obj, v)
        ref = obj.get("reference")
        if cube is None or cube.get("owner") not in ("centre", "mover") or not isinstance(ref, dict):
            raise FormatError("a position needs \"cube\" (owner centre or mover) and \"reference\"")
        e = [ref.get(k) for k in ("no_double", "double_take", "double_pass")]
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in e):
            raise FormatError("reference needs numbers no_double, double_take, double_pass")
        return board, int(cube.get("value", 1)), cube["owner"], e

    header, rows = read_set(path, "cube position set", position)
    boards, value, owner, eq = zip(*rows)
    if header.get("stakes"):
        v = stakes_variant(v, header["stakes"])
    eq = np.array(eq, float)
    return CubeSet(v, header, np.array(boards, np.int8), np.array(value, np.int64), list(owner),
                   eq[:, 0], eq[:, 1], eq[:, 2])


# --- building the set --------------------------------------------------------------------------

#: Bins of the sampling measure: the cubeless equity of the player on roll (the cube), or its
#: win chance (dave: the stake decides, LN-8).
EQUITY_BINS = (-0.2, 0.2, 0.5, 0.8, 1.2, 2.01)
WIN_BINS = (0.45, 0.6, 0.7, 0.8, 0.9, 1.01)


def sample_cube_candidates(n: int, seed: int = 1, source: str | None = None,
                           games: int = 256, plies: int = 600,
                           variant: str | Variant = "backgammon") -> tuple[np.ndarray, np.ndarray]:
    """``n`` positions before the roll from self-play of ``source`` (0 ply), spread over the
    doubling window by the net's view of the player on roll: with the cube a fifth each by
    cubeless equity in [-0.2, 0.2), [0.2, 0.5), [0.5, 0.8), [0.8, 1.2) and [1.2, 2.0]
    (:data:`EQUITY_BINS`); with dave by win chance in [0.45, 0.6), [0.6, 0.7), [0.7, 0.8),
    [0.8, 0.9), [0.9, 1.0] (:data:`WIN_BINS`); duplicates removed.  Returns the boards and
    that measure.

    The self-play is a run of the game driver (:func:`nardy_ai.driver.run`): ``games`` games
    in lockstep for ``plies`` plies, finished games started again at once, the positions of
    every second ply from the fourth kept; each game's first roll follows the variant's
    opening rule (COM-7: one of the 30 unequal rolls under ``opening_roll``)."""
    from .. import core, driver
    from ..agents.neural import NeuralAgent
    from ..evaluator import load_evaluator
    v = get_variant(variant)
    rng = np.random.default_rng(seed)
    ev = load_evaluator(source_net(source, v), v, device="cpu")
    pool = []

    def keep(rec, _) -> None:                        # the positions before the roll of plies 4, 6, ...
        if rec.ply >= 4 and rec.ply % 2 == 0:
            pool.append(rec.boards)

    # 0-ply play with the evaluator loaded once; finished games start again at once.
    driver.run(core.fresh(v, games), driver.SeededDice(rng, opening="random"), NeuralAgent(ev), rng,
               plies=plies, restart=True, on_ply=keep)
    boards = np.unique(np.concatenate(pool), axis=0)
    boards = boards[boards[:, :24].clip(0).sum(1) + boards[:, 24] > 0]     # both sides still playing
    if v.stakes == "dave":                           # the player on roll's win chance
        eq = 1.0 - ev.probabilities(flip(boards, v))[:, 0]
        edges = WIN_BINS
    else:                                            # the player on roll's cubeless equity
        eq = -ev.equity(flip(boards, v))
        edges = EQUITY_BINS
    picked = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        idx = np.flatnonzero((eq >= lo) & (eq < hi))
        picked.append(rng.choice(idx, min(len(idx), n // 5), replace=False))
    keep = np.sort(np.concatenate(picked))
    return boards[keep], eq[keep]


def build_cube_set(path: str, n: int = 1500, seed: int = 1, plies: int = 2, source: str | None = None,
                   owned_share: float = 0.3, progress: bool = True) -> dict:
    """Sample ``n`` positions (:func:`sample_cube_candidates`), give a share ``owned_share``
    of them a cube owned by the player on roll at 2 (the rest centred at 1) and label each with
    gnubg's cubeful equities at ``plies``; write the set to ``path`` atomically."""
    from ..agents.gnubg_agent import gnubg_factory
    from tqdm import tqdm
    v = get_variant("backgammon")
    rng = np.random.default_rng(seed + 1)
    source = source_net(source, "backgammon")
    boards, eq = sample_cube_candidates(n, seed, source)
    owned = rng.random(len(boards)) < owned_share
    gnubg = gnubg_factory(f"{plies}ply", v)
    lines = []
    for b, own, e in tqdm(list(zip(boards, owned, eq)), desc="gnubg cube references", disable=not progress):
        cube = {"value": 2, "owner": "mover"} if own else {"value": 1, "owner": "centre"}
        ref = gnubg.cube_equities(b, cube, v, 1 if own else 0)
        lines.append(json.dumps(board_to_json(b, cube=cube, reference=ref, net_equity=round(float(e), 4))))
    header = {"set": "cube_positions", "variant": v.id, "version": CUBE_SET_VERSION,
              "variant_version": v.version, "positions": len(lines), "source": f"td:{source}",
              "seed": seed, "sampling": "self-play of the source at 0 ply (256 games in lockstep, every "
              "2nd ply from the 4th, a game's first roll one of the 30 unequal rolls), positions before "
              "the roll, duplicates removed, a fifth each by the "
              "source's cubeless equity of the player on roll in [-0.2,0.2), [0.2,0.5), [0.5,0.8), "
              "[0.8,1.2), [1.2,2.0]; cube centred at 1, or owned by the player on roll at 2 "
              f"({owned_share:.0%})", "reference": f"gnubg {plies}-ply cubeful (money, no Jacoby, no beaver)",
              "machine": machine_description(), "date": datetime.date.today().isoformat()}
    write_atomic(path, "\n".join([json.dumps({"header": header})] + lines) + "\n")
    return header


def build_rollout_cube_set(path: str, variant: str = "long", stakes: str = "dave-geometric", n: int = 1000,
                           seed: int = 1, source: str | None = None,
                           games: int = 288, truncate: int = 12, owned_share: float = 0.3,
                           progress: bool = True) -> dict:
    """A cube set whose reference is our own cubeful rollouts (:mod:`nardy_ai.cube_rollout`):
    ``n`` positions sampled as :func:`sample_cube_candidates` does (by win chance with dave),
    a share ``owned_share`` with the stake at 2 held by the player on roll (else centred at 1),
    each rolled out ``games`` times per branch (no double / double-take, the same dice) by
    ``source`` at 0 ply deciding the stakes, truncated after ``truncate`` plies; written to
    ``path`` atomically with the rollouts' standard errors."""
    from tqdm import tqdm
    from ..agents.neural import NeuralAgent
    from ..cube_rollout import cubeful_rollout
    from ..evaluator import load_evaluator
    v = stakes_variant(variant, stakes)
    rng = np.random.default_rng(seed + 1)
    source = source_net(source, v)
    boards, measure = sample_cube_candidates(n, seed, source, variant=v)
    owned = rng.random(len(boards)) < owned_share
    cubes = [{"value": 2, "owner": "mover"} if own else {"value": 1, "owner": "centre"} for own in owned]
    cset = CubeSet(v, {}, boards, np.array([c["value"] for c in cubes], np.int64),
                   [c["owner"] for c in cubes], *(np.zeros(len(boards)),) * 3)
    agent = NeuralAgent(load_evaluator(source, v, device="cpu"))
    step = 40
    res = []
    for lo in tqdm(range(0, len(boards), step), desc="cubeful rollouts", disable=not progress):
        rows = np.arange(lo, min(len(boards), lo + step))
        res.append(cubeful_rollout(boards[rows], cset.views().select(rows), v, agent, games=games,
                                   truncate=truncate, seed=seed))
    nd, dt = np.concatenate([r.no_double for r in res]), np.concatenate([r.double_take for r in res])
    nd_se, dt_se = np.concatenate([r.no_double_se for r in res]), np.concatenate([r.double_take_se for r in res])
    lines = []
    for i, (b, cube) in enumerate(zip(boards, cubes)):
        ref = {"no_double": round(float(nd[i]), 5), "double_take": round(float(dt[i]), 5), "double_pass": 1.0,
               "no_double_se": round(float(nd_se[i]), 5), "double_take_se": round(float(dt_se[i]), 5)}
        lines.append(json.dumps(board_to_json(b, cube=cube, reference=ref,
                                              net_win_chance=round(float(measure[i]), 4))))
    header = {"set": "cube_positions", "variant": get_variant(variant).id, "stakes": stakes,
              "version": CUBE_SET_VERSION, "variant_version": v.version, "positions": len(lines),
              "source": f"td:{source}", "seed": seed,
              "sampling": "self-play of the source at 0 ply (256 games in lockstep, every 2nd ply from the 4th), "
              "positions before the roll, duplicates removed, a fifth each by the source's win chance of the "
              "player on roll in [0.45,0.6), [0.6,0.7), [0.7,0.8), [0.8,0.9), [0.9,1.0]; stake centred at 1, "
              f"or held by the player on roll at 2 ({owned_share:.0%})",
              "reference": f"own cubeful rollouts ({games} games per branch on the same dice, the source at "
              f"0 ply deciding the stakes, truncated after {truncate} plies at its cubeful 0-ply value)",
              "machine": machine_description(), "date": datetime.date.today().isoformat()}
    write_atomic(path, "\n".join([json.dumps({"header": header})] + lines) + "\n")
    return header


# --- scoring an agent ---------------------------------------------------------------------------

def score_agent(agent, cset: CubeSet, clear_margin: float = CLEAR_MARGIN) -> dict:
    """The agent's double and take decisions on the set against the reference (module
    docstring): agreement, mean cost (units of the stake) and error rates, on all decisions
    and on the clear ones."""
    v = cset.variant
    ref = cset.reference()
    views = cset.views()
    double = ask_cube(agent, "double", cset.boards, views, v, False)[0]
    scored = ref["take_scored"]
    take_boards = flip(cset.boards[scored], v)
    take = np.ones(len(cset.boards), bool)
    take[scored] = ask_cube(agent, "take", take_boards, views.opponent().select(scored), v, True)[0]
    best_double = np.minimum(cset.dt, cset.dp)
    chosen_d = np.where(double, best_double, cset.nd)
    cost_d = np.maximum(cset.nd, best_double) - chosen_d
    chosen_t = np.where(take, cset.dt, cset.dp)
    cost_t = chosen_t - np.minimum(cset.dt, cset.dp)

    def rows(mask_d, mask_t) -> dict:
        d_ok = double[mask_d] == ref["double"][mask_d]
        t_ok = take[mask_t] == ref["take"][mask_t]
        decisions = int(mask_d.sum() + mask_t.sum())
        rd, rt = ref["double"], ref["take"]

        def rate(num, den):
            return float(num.sum() / den.sum()) if den.sum() else None
        return {
            "double_decisions": int(mask_d.sum()), "take_decisions": int(mask_t.sum()),
            "agreement": float((d_ok.sum() + t_ok.sum()) / max(decisions, 1)),
            "double_agreement": float(d_ok.mean()) if len(d_ok) else None,
            "take_agreement": float(t_ok.mean()) if len(t_ok) else None,
            "mean_cost": float((cost_d[mask_d].sum() + cost_t[mask_t].sum()) / max(decisions, 1)),
            "missed_doubles": rate(mask_d & rd & ~double, mask_d & rd),
            "early_doubles": rate(mask_d & ~rd & double, mask_d & ~rd),
            "wrong_takes": rate(mask_t & ~rt & take, mask_t & ~rt),
            "wrong_passes": rate(mask_t & rt & ~take, mask_t & rt),
        }

    everything = np.ones(len(cset.boards), bool)
    clear_d = ref["double_margin"] >= clear_margin
    clear_t = scored & (ref["take_margin"] >= clear_margin)
    cls = position_classes(cset.boards, v)
    by_class = {name: rows(clear_d & (cls == i), clear_t & (cls == i))
                for i, name in enumerate(class_names(v)) if (cls == i).any()}
    return {"agent": agent.name, "all": rows(everything, scored), "clear": rows(clear_d, clear_t),
            "clear_by_class": by_class}


def bench_cube(agents: list[str], path: str | None = None, version: int | None = None,
               clear_margin: float = CLEAR_MARGIN, variant: str = "backgammon") -> dict:
    """``nardy bench cube``: every agent scored on the variant's set."""
    from ..agents import make_agent
    cset = load_cube_positions(variant, path, version)
    ref = cset.reference()
    return {"machine": machine_description(), "set": cset.header, "clear_margin": clear_margin,
            "reference_actions": {"double": int(ref["double"].sum()), "no_double": int((~ref["double"]).sum()),
                                  "too_good": int((cset.nd > cset.dp).sum()),
                                  "take": int((ref["take"] & ref["take_scored"]).sum()),
                                  "pass": int((~ref["take"] & ref["take_scored"]).sum())},
            "rows": [score_agent(make_agent(a, cset.variant), cset, clear_margin) for a in agents]}


def format_cube(r: dict) -> str:
    """The table ``nardy bench cube`` prints."""
    s = r["set"]
    ra = r["reference_actions"]
    lines = [f"machine: {r['machine']}",
             f"cube set v{s['version']} ({s['variant']}): {s['positions']} positions, reference {s['reference']}; "
             f"reference actions: double {ra['double']}, no double {ra['no_double']} (too good {ra['too_good']}), "
             f"take {ra['take']}, pass {ra['pass']}; clear = margin >= {r['clear_margin']}",
             f"{'agent':<44}{'decisions':>10}{'agree':>8}{'cost mp':>9}{'missed D':>10}{'early D':>9}"
             f"{'wrong T':>9}{'wrong P':>9}"]

    def pct(x):
        return "-" if x is None else f"{100 * x:.1f}%"
    from ..tournament import display_name
    for row in r["rows"]:
        for which in ("clear", "all"):
            x = row[which]
            lines.append(f"{(display_name(row['agent']) + ' (' + which + ')')[:43]:<44}"
                         f"{x['double_decisions'] + x['take_decisions']:>10}{pct(x['agreement']):>8}"
                         f"{1000 * x['mean_cost']:>9.1f}{pct(x['missed_doubles']):>10}{pct(x['early_doubles']):>9}"
                         f"{pct(x['wrong_takes']):>9}{pct(x['wrong_passes']):>9}")
        lines.append("    clear, by class of the position: " + ", ".join(
            f"{c} {x['double_decisions'] + x['take_decisions']} / {pct(x['agreement'])} / {1000 * x['mean_cost']:.1f} mp"
            for c, x in row["clear_by_class"].items()))
    return "\n".join(lines)
