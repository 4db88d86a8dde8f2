"""``nardy analyze``: the error of every decision of recorded games against a reference agent.

What is scored.  Games are replayed (:func:`nardy_ai.game.replay`; ``.mat`` files through
:mod:`nardy_ai.matfile`) and every decision of each player is valued by a *reference* agent
(default ``best@2ply``: the variant's champion searching two plies, through the registry):

``play``
    a checker play with more than one legal afterstate (a forced play, or no play, is no
    decision).  Error = the reference's equity of its best afterstate minus its equity of the
    afterstate played, both at the reference's depth: every candidate is valued at 0 ply, the
    reference's move filters (gnubg's, :data:`nardy_ai.search.DEFAULT_FILTERS`) keep the
    candidates valued deeper, and the play made always stays among them, so both sides of the
    difference are valued at full depth (gnubg's analysis does the same).  Cubeless equity,
    points per game (under dave the win chance, ``2p - 1``: what the neural agents play by).
``double``
    the player on roll who may double / offer (CUBE-1, CUBE-D) either did or did not.  With the
    reference's cubeful equities (:func:`nardy_ai.cubeful.double_equities`, units of the current
    stake): the right action is worth ``max(ND, min(DT, DP))``; no double is worth ND, a
    double ``min(DT, DP)`` (the opponent answering right), as gnubg scores it.
``take``
    the answer to a raise: take (a beaver counts as a take) is worth the taker's equity after
    the take, pass -1 (:func:`nardy_ai.cubeful.take_equities`); error = the better minus the
    one chosen.

Errors are in millipoints (mp): thousandths of a point per unit of the current stake (gnubg's
"normalised" equity).  Skill marks use gnubg's default thresholds (``arSkillLevel`` in gnubg's
``gnubg.c``: doubtful 0.04, bad 0.08, very bad 0.16; an error strictly above the threshold):
:data:`THRESHOLDS`.  Position classes are :mod:`nardy_ai.classes`' (short nardy: contact,
crashed, race, bearoff; long nardy: contact, race, bearoff), of the position before the
decision.

Statistics.  An agent's error rate is its total error over its decisions (mp per decision);
its standard error treats *games* as the independent units (decisions of one game are not
independent): the ratio estimator's ``sqrt(G / (G - 1) * sum_g (E_g - R n_g)^2) / sum_g n_g``.

Files (with ``out``).  ``analysis.jsonl`` gets one line per game as its analysis arrives
(append-only; ``resume`` skips the games already there); ``analysis_config.json`` holds the
reference (a resumed analysis must use the same); ``analysis.json`` the summary (atomic).
Games are analysed in tasks of a few games on :mod:`nardy_ai.backends` (local processes or
Ray), so results do not depend on the backend or the number of workers.
"""

from __future__ import annotations

import functools
import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from .backends import Backend, check_backend_choice, make_backend, progress_bar
from .board import OFF, flip
from .classes import class_names, position_classes
from .cube import NOBODY, Stakes, apply as cube_apply, may_double
from .errors import FormatError, IllegalPlay, NardyError
from .files import FolderLock, append_durably, cut_torn_tail, make_folder, read_appended_first, read_text, write_atomic
from .game import GameRecord, read_jsonl, replay
from .movegen import generate, segment_argmax, segment_ids
from .search import afterstate_values, cubeless, filter_candidates
from .tournament.settings import GAMES_FILE

#: gnubg's default skill thresholds in millipoints (an error strictly above marks the decision).
THRESHOLDS = {"doubtful": 40.0, "bad": 80.0, "very_bad": 160.0}
#: The default reference: the variant's champion at 2 plies (registry name).
DEFAULT_REFERENCE = "best@2ply"
#: Games per task handed to a worker.
DEFAULT_TASK_GAMES = 8
ANALYSIS_FILE = "analysis.jsonl"
ANALYSIS_CONFIG = "analysis_config.json"
ANALYSIS_SUMMARY = "analysis.json"
KINDS = ("play", "double", "take")
STANDARD_ERROR_METHOD = ("error rate = total error / decisions (mp per decision); standard error "
                         "with games as the independent units (ratio estimator)")


class AnalysisError(NardyError):
    """Bad analysis input or settings (a reference without equities, a changed reference on
    resume, a games file that cannot be read)."""


# --- reading games ---------------------------------------------------------------------------

def _jsonl_games(path: Path) -> list[tuple[str, GameRecord]]:
    """The games of a tournament ``games.jsonl`` (keys ``A|B|index``) or of a plain file of
    game records (keys ``FILE:N``, N counted from 0)."""
    from .board import parse_json
    text = read_text(path, AnalysisError)
    first = next((ln for ln in text.splitlines() if ln.strip()), None)
    if first is None:
        return []
    try:
        head = parse_json(first)
    except FormatError as e:
        raise FormatError(f"{path} line 1: {e}") from None
    if isinstance(head, dict) and "pairing" in head:
        from .tournament.gamesfile import read_games
        games = read_games(path)
        return [(f"{a}|{b}|{i}", r) for (a, b, i), r in sorted(games.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2]))]
    try:
        records = read_jsonl(path)
    except FormatError as e:
        raise FormatError(f"{path}: {e}") from None
    return [(f"{path.name}:{i}", r) for i, r in enumerate(records)]


def _mat_games(path: Path, variant: str) -> list[tuple[str, GameRecord]]:
    """The games of a gnubg ``.mat`` file (cubeless short nardy) as game records: each play
    is matched to the legal afterstate it leads to; left column = white.  Keys ``FILE#N``."""
    from .matfile import read_mat, replay_mat_game
    from .scoring import result_levels
    from .variants import variant_options, with_options
    v = with_options(variant)
    if v.is_long:
        raise AnalysisError(f"{path}: .mat files hold short nardy games, not {v.id}")
    _, games = read_mat(read_text(path, AnalysisError))
    out = []
    for n, g in enumerate(games, 1):
        if not g.turns:
            continue
        try:
            boards = replay_mat_game(g, variant=v)
        except (NardyError, ValueError, IndexError) as e:
            raise FormatError(f"{path} game {n}: {e}") from None
        turns = []
        for k, t in enumerate(g.turns):
            after = generate(boards[k][None], np.array([t.dice]), v)
            played = boards[k + 1] if k == len(g.turns) - 1 else flip(boards[k + 1], v)
            rows = np.flatnonzero((after.boards == played).all(axis=1))
            if not len(rows):
                raise IllegalPlay(f"{path} game {n}, turn {k + 1}: {t.play!r} with dice {list(t.dice)} "
                                  f"is not a legal play")
            turns.append(type(t)(t.player, t.dice, after.notation(rows[:1])[0]))
        final = boards[-1]
        if final[OFF] != 15:
            raise FormatError(f"{path} game {n}: the game does not end with a bear-off (resigned?)")
        level = int(result_levels(final[None], v)[0])
        winner = g.turns[-1].player
        out.append((f"{path.name}#{n}", GameRecord(v.id, v.version, 0, n - 1, g.names[0], g.names[1],
                                                   g.turns[0].player, winner, level, int(v.scoring[level - 1]),
                                                   len(turns), variant_options(v), [], turns)))
    return out


def load_games(paths: Sequence[str | os.PathLike], variant: str = "backgammon") -> list[tuple[str, GameRecord]]:
    """``(key, record)`` of every game of ``paths``: tournament folders (their ``games.jsonl``),
    games files (a tournament's, or game records one per line) and ``.mat`` files (played
    under ``variant``); a folder without ``games.jsonl`` is searched for ``.mat`` files."""
    out: list[tuple[str, GameRecord]] = []
    for p in map(Path, paths):
        if p.is_dir():
            if (p / GAMES_FILE).exists():
                out += _jsonl_games(p / GAMES_FILE)
                continue
            mats = sorted(p.glob("*.mat"))
            if not mats:
                raise AnalysisError(f"{p} holds neither {GAMES_FILE} nor .mat files")
            for m in mats:
                out += _mat_games(m, variant)
        elif p.suffix.lower() == ".mat":
            out += _mat_games(p, variant)
        elif p.exists():
            out += _jsonl_games(p)
        else:
            raise AnalysisError(f"no such file or folder: {p}")
    seen: set[str] = set()
    for k, _ in out:
        if k in seen:
            raise AnalysisError(f"two games have the key {k!r}: analyse the files one at a time")
        seen.add(k)
    return out


# --- the reference ---------------------------------------------------------------------------

class Reference:
    """How the analysis asks a reference agent for equities: ``values(boards, depth)`` (cubeless
    equity of afterstates at ``depth`` plies, side that just moved), its ``plies`` and move
    ``filters``, and its cube decisions (``double`` / ``take`` with equities, or none)."""

    def __init__(self, agent, variant):
        self.agent, self.variant = agent, variant
        if hasattr(agent, "rank_for") and hasattr(agent, "filters"):              # neural
            ev, rank = agent.evaluator, agent.rank_for(variant) or cubeless(agent.evaluator)
            self.plies, self.filters = agent.plies, tuple(agent.filters)
            self.values = lambda b, d: rank(afterstate_values(b, ev, d, rank))
        elif hasattr(agent, "equities") and hasattr(agent, "filters"):           # gnubg
            self.plies, self.filters = agent.plies, tuple(agent.filters)
            self.values = lambda b, d: np.asarray(agent.equities(b, variant, d), float)
        else:
            self.plies, self.filters = 0, ()
            probe = agent.equity(np.zeros((0, 28), np.int8), variant)
            if probe is None:
                raise AnalysisError(f"reference {agent.name!r} gives no equities: use a neural agent "
                                    f"(best, td:PATH[@Nply]) or gnubg:Nply")
            self.values = lambda b, d: np.asarray(agent.equity(b, variant), float)

    def play_equities(self, after, played: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(best, chosen, best_row)`` per position of ``after``: the reference's equity of its
        best afterstate and of the ``played`` row (absolute rows), and the best row."""
        offsets = after.offsets
        seg = segment_ids(offsets)
        eq = np.asarray(self.values(after.boards, 0), float)
        alive = np.ones(len(eq), bool)
        must = np.zeros(len(eq), bool)
        must[played] = True
        for depth, f in enumerate(self.filters, start=1):
            alive = filter_candidates(eq, offsets, alive, f) | must
            open_pos = np.bincount(seg[alive], minlength=len(offsets) - 1) > 1
            rows = np.flatnonzero(alive & open_pos[seg])
            if len(rows):
                eq[rows] = self.values(after.boards[rows], depth)
        best_row = segment_argmax(np.where(alive, eq, -np.inf), offsets)
        return eq[best_row], eq[played], best_row

    def cube_equities(self, op: str, boards: np.ndarray, cubes: Stakes) -> list[dict] | None:
        """The reference's equities for ``double`` or ``take`` questions (None without them)."""
        fn = getattr(self.agent, op, None)
        if fn is None or not len(boards):
            return None
        _, eq = fn(boards, cubes, self.variant)
        if not eq or any(e is None for e in eq):
            return None
        if op == "take" and "take" not in eq[0] and "double_take" in eq[0]:
            # gnubg answers in the doubler's view: the taker gets the negatives (a doubler
            # answering a beaver is itself on roll: its own double/take, or -1 for the pass)
            eq = [{"take": e["double_take"], "pass": -1.0} if on else
                  {"take": -e["double_take"], "pass": -e["double_pass"]} for e, on in zip(eq, cubes.on_roll)]
        if ("no_double" if op == "double" else "take") not in eq[0]:
            return None
        return eq


_REFERENCES: dict[tuple[str, str], Reference] = {}


def reference_for(spec: str, variant) -> Reference:
    """The :class:`Reference` of an agent spec in games of ``variant`` (built once per process)."""
    from .agents import make_agent
    from .variants import variant_options
    key = (spec, variant.id, json.dumps(variant_options(variant), sort_keys=True))
    if key not in _REFERENCES:
        _REFERENCES[key] = Reference(make_agent(spec, variant), variant)
    return _REFERENCES[key]


# --- one task: a few games -------------------------------------------------------------------

@dataclass(frozen=True)
class Task:
    """Games to analyse: ``games`` ``(key, record JSON line)``, all of one rules group, and the
    reference spec (already resolved to ``td:PATH...`` for registry names)."""
    reference: str
    games: tuple[tuple[str, str], ...]

    def label(self) -> str:
        return f"analysis of games {self.games[0][0]} .. {self.games[-1][0]}"


def _views(states: list[Stakes], viewers: list[int], on_roll: list[bool]) -> Stakes:
    """One batch of the one-game stakes ``states`` as ``viewers`` see them."""
    return Stakes.concat(states).views(np.arange(len(states)), viewers, on_roll)


def _cube_decisions(r: GameRecord, hist: np.ndarray, v) -> list[tuple]:
    """The cube decisions of one game: ``(turn, player, kind, board (decider's view), state,
    on_roll, action)`` with ``kind`` ``double`` (action ``double`` / ``no double``) or
    ``take`` (``take`` / ``pass``; a beaver is a take)."""
    if r.stakes == "none":
        return []
    by_ply: dict[int, list] = {}
    for ply, player, action, _ in r.cube:
        by_ply.setdefault(int(ply), []).append((int(player), action))
    state = Stakes.start(v, 1)
    out = []
    last = r.plies if r.passed else r.plies - 1
    for k in range(last + 1):
        mover = r.turns[k].player if k < r.plies else (1 - r.turns[-1].player if r.plies else r.first)
        actions = by_ply.get(k, [])
        while actions and actions[0][1] == "auto":
            state = cube_apply(state, NOBODY, "auto")
            actions = actions[1:]
        if k == 0 and v.opening == "opening_roll" or state.winner[0] != NOBODY:
            continue
        board = hist[k]
        if may_double(state, mover)[0]:
            doubled = bool(actions) and actions[0] == (mover, "double")
            out.append((k, mover, "double", board, state, False, "double" if doubled else "no double"))
        before = None
        for player, action in actions:
            if action in ("take", "pass", "beaver"):
                on_roll = before == "beaver"
                out.append((k, player, "take", board if on_roll else flip(board[None], v)[0],
                            state, on_roll, "pass" if action == "pass" else "take"))
            state = cube_apply(state, player, action)
            before = action
    return out


def analyse_task(task: Task) -> tuple[Task, list[tuple[str, dict]]]:
    """Analyse a task's games: ``(task, [(key, per-game result), ...])`` (see :func:`game_result`)."""
    keys = [k for k, _ in task.games]
    records = [GameRecord.from_json(line) for _, line in task.games]
    v = records[0].rules()
    ref = reference_for(task.reference, v)
    hists = replay(records)
    classes = class_names(v)

    # checker plays: every turn of every game in one generator call
    pos, dice, played_boards, owner = [], [], [], []
    for g, (r, h) in enumerate(zip(records, hists)):
        for k, t in enumerate(r.turns):
            pos.append(h[k])
            dice.append(t.dice)
            final = k == r.plies - 1 and not r.passed
            played_boards.append(h[k + 1] if final else flip(h[k + 1][None], v)[0])
            owner.append((g, k, t.player))
    decisions: list[list] = [[] for _ in records]
    mistakes: list[list] = [[] for _ in records]
    if pos:
        pos_a = np.array(pos, np.int8)
        after = generate(pos_a, np.array(dice, np.int64), v)
        counts = np.diff(after.offsets)
        seg = segment_ids(after.offsets)
        same = (after.boards == np.array(played_boards, np.int8)[seg]).all(axis=1)
        same_row = np.full(len(pos), -1, np.int64)
        hit = np.flatnonzero(same)
        same_row[seg[hit[::-1]]] = hit[::-1]          # the first matching row of each position
        if (same_row < 0).any():
            g, k, _ = owner[int(np.flatnonzero(same_row < 0)[0])]
            raise IllegalPlay(f"game {keys[g]}, turn {k + 1}: the play is not a legal afterstate")
        real = np.flatnonzero(counts > 1)              # forced plays are no decisions
        if len(real):
            sub, rows = after.select(real)
            local = np.searchsorted(rows, same_row[real])
            best, chosen, best_row = ref.play_equities(sub, local)
            err = np.maximum(best - chosen, 0.0) * 1000.0
            cls = position_classes(pos_a[real], v)
            for j, i in enumerate(real.tolist()):
                g, k, p = owner[i]
                e = round(float(err[j]), 2)
                decisions[g].append([p, k, "play", classes[cls[j]], e])
                if e > THRESHOLDS["doubtful"]:
                    r = records[g]
                    mistakes[g].append({"player": p, "turn": k, "kind": "play", "class": classes[cls[j]],
                                        "error": e, "dice": list(r.turns[k].dice), "played": r.turns[k].play,
                                        "best": sub.notation([best_row[j]])[0]})

    # cube decisions
    cube = [(g,) + d for g, (r, h) in enumerate(zip(records, hists)) for d in _cube_decisions(r, h, v)]
    for kind in ("double", "take"):
        items = [c for c in cube if c[3] == kind]
        if not items:
            continue
        boards = np.array([c[4] for c in items], np.int8)
        views = _views([c[5] for c in items], [c[2] for c in items], [c[6] for c in items])
        eq = ref.cube_equities(kind, boards, views)
        if eq is None:
            continue
        cls = position_classes(boards, v)
        for j, (g, k, p, _, _, _, _, action) in enumerate(items):
            e = eq[j]
            if kind == "double":
                values = {"no double": e["no_double"], "double": min(e["double_take"], e["double_pass"])}
            else:
                values = {"take": e["take"], "pass": e["pass"]}
            right = max(values, key=values.get)
            err = round(max(values[right] - values[action], 0.0) * 1000.0, 2)
            decisions[g].append([p, k, kind, classes[cls[j]], err])
            if err > THRESHOLDS["doubtful"]:
                mistakes[g].append({"player": p, "turn": k, "kind": kind, "class": classes[cls[j]], "error": err,
                                    "played": action, "best": right,
                                    "equities": {a: round(float(x), 4) for a, x in values.items()}})
    out = []
    for g, (key, r) in enumerate(zip(keys, records)):
        decisions[g].sort(key=lambda d: (d[1], KINDS.index(d[2])))
        out.append((key, {"key": key, "variant": v.id, "stakes": r.stakes, "agents": [r.white, r.black],
                          "winner": r.winner, "points": r.points, "decisions": decisions[g],
                          "mistakes": sorted(mistakes[g], key=lambda m: (m["turn"], KINDS.index(m["kind"])))}))
    return task, out


def analyse_task_with_files(files: dict[str, tuple[str, bytes]], task: Task):
    """:func:`analyse_task` on a worker that may lack the reference's checkpoint (a Ray node
    without the shared disk): the driver's copy is used."""
    from .agents.neural import parse_td_spec
    from .shipping import local_copy
    ref = task.reference
    if ref.startswith("td:"):
        path = parse_td_spec(ref[3:])[0]
        if path in files:
            local = local_copy(path, *files[path])
            ref = f"td:{local}" + ref[3 + len(path):]
    return task, analyse_task(Task(ref, task.games))[1]


# --- statistics ------------------------------------------------------------------------------

def _rate(per_game: list[tuple[int, float]]) -> dict:
    """Error rate of decisions grouped by game: ``n``, ``total`` mp, ``mean`` mp per decision,
    ``se`` (games as units; None under two games with decisions)."""
    per_game = [(n, e) for n, e in per_game if n]
    n = sum(k for k, _ in per_game)
    total = sum(e for _, e in per_game)
    if not n:
        return {"n": 0, "total": 0.0, "mean": None, "se": None}
    mean = total / n
    g = len(per_game)
    se = None
    if g >= 2:
        se = math.sqrt(g / (g - 1) * sum((e - mean * k) ** 2 for k, e in per_game)) / n
    return {"n": n, "total": round(total, 2), "mean": round(mean, 3), "se": None if se is None else round(se, 3)}


def summarize(results: Iterable[dict], reference: str = "") -> dict:
    """The JSON-ready summary of per-game results: per agent its error rates (all decisions,
    checker plays, by position class, the cube: doubles and takes), counts of doubtful / bad /
    very bad decisions (:data:`THRESHOLDS`), and per game each side's decisions and error."""
    results = list(results)
    agents: dict[str, dict] = {}
    games_out = []
    classes: list[str] = []
    for res in results:
        names = class_names(res["variant"])
        classes += [c for c in names if c not in classes]
        sides = []
        for p, name in enumerate(res["agents"]):
            mine = [d for d in res["decisions"] if d[0] == p]
            a = agents.setdefault(name, {"games": 0, "groups": {}, "marks": {k: 0 for k in THRESHOLDS}})
            a["games"] += 1
            groups = {"all": mine, "play": [d for d in mine if d[2] == "play"],
                      "cube": [d for d in mine if d[2] != "play"],
                      "double": [d for d in mine if d[2] == "double"], "take": [d for d in mine if d[2] == "take"]}
            for c in names:
                groups["play:" + c] = [d for d in groups["play"] if d[3] == c]
            for gname, ds in groups.items():
                a["groups"].setdefault(gname, []).append((len(ds), sum(d[4] for d in ds)))
            for m, t in THRESHOLDS.items():
                a["marks"][m] += sum(d[4] > t for d in mine)
            sides.append({"agent": name, "decisions": len(mine), "error": round(sum(d[4] for d in mine), 2)})
        games_out.append({"key": res["key"], "winner": res["winner"], "points": res["points"], "sides": sides})
    table = {}
    for name, a in agents.items():
        rates = {g: _rate(v) for g, v in a["groups"].items()}
        n = rates["all"]["n"]
        table[name] = {
            "games": a["games"], "all": rates["all"], "play": rates["play"], "cube": rates["cube"],
            "double": rates["double"], "take": rates["take"],
            "by_class": {c: rates["play:" + c] for c in classes if "play:" + c in rates},
            **{m: cnt for m, cnt in a["marks"].items()},
            "per_1000_decisions": {m: (round(1000.0 * cnt / n, 2) if n else None) for m, cnt in a["marks"].items()},
        }
    return {"reference": reference, "games": len(results), "units": "millipoints per decision",
            "thresholds_mp": dict(THRESHOLDS), "thresholds_source": "gnubg defaults (arSkillLevel in gnubg.c)",
            "method": STANDARD_ERROR_METHOD, "classes": classes, "agents": table, "per_game": games_out}


def _pm(r: dict) -> str:
    if r["mean"] is None:
        return "-"
    return f"{r['mean']:.1f}" + (f" ± {r['se']:.1f}" if r["se"] is not None else "")


def format_analysis(s: dict, names: dict[str, str] | None = None) -> str:
    """The text ``nardy analyze`` prints: per agent its error rates (mp per decision ± 1
    standard error), checker plays by position class, the cube, and the marks."""
    names = names or {}
    rows = sorted(s["agents"].items(), key=lambda kv: (kv[1]["all"]["mean"] is None, kv[1]["all"]["mean"] or 0))
    w = max([5] + [len(names.get(a, a)) for a, _ in rows])
    t = s["thresholds_mp"]
    lines = [f"analysis of {s['games']} games by {s['reference']}: error in millipoints per decision "
             f"(± 1 standard error, games as units)",
             f"{'agent':<{w}}  {'decisions':>9}  {'all':>13}  {'checker':>13}  {'cube':>13}  "
             f"{'doubtful':>8}  {'bad':>5}  {'very bad':>8}"]
    for a, r in rows:
        lines.append(f"{names.get(a, a):<{w}}  {r['all']['n']:>9}  {_pm(r['all']):>13}  {_pm(r['play']):>13}  "
                     f"{_pm(r['cube']):>13}  {r['doubtful']:>8}  {r['bad']:>5}  {r['very_bad']:>8}")
    lines.append(f"marks (gnubg's default thresholds): doubtful > {t['doubtful']:.0f} mp, bad > {t['bad']:.0f} mp, "
                 f"very bad > {t['very_bad']:.0f} mp")
    classes = s["classes"]
    if classes:
        lines.append("checker plays by position class (mp per play; plays):")
        lines.append(f"{'agent':<{w}}  " + "  ".join(f"{c:>18}" for c in classes))
        for a, r in rows:
            cells = []
            for c in classes:
                x = r["by_class"].get(c, {"n": 0, "mean": None, "se": None})
                cells.append(f"{_pm(x) + ' (' + str(x['n']) + ')':>18}" if x["n"] else f"{'-':>18}")
            lines.append(f"{names.get(a, a):<{w}}  " + "  ".join(cells))
    if any(r["cube"]["n"] for _, r in rows):
        lines.append("cube (mp per decision; decisions): double / no double, take / pass")
        for a, r in rows:
            lines.append(f"{names.get(a, a):<{w}}  doubling {_pm(r['double'])} ({r['double']['n']})   "
                         f"answering {_pm(r['take'])} ({r['take']['n']})")
    return "\n".join(lines)


def format_standings(standings: dict | None, s: dict, names: dict[str, str] | None = None) -> str:
    """Points per game with their 95 % intervals (a tournament's ``summary.json``, when given)
    next to each agent's error rates, in the tournament's ranking order, then the analysis
    table by class and the cube (:func:`format_analysis`)."""
    names = names or {}
    if not standings:
        return format_analysis(s, names)
    order = [r["agent"] for r in standings.get("ranking", [])]
    order += [a for a in s["agents"] if a not in order]
    ranking = {r["agent"]: r for r in standings.get("ranking", [])}
    w = max([5] + [len(names.get(a, a)) for a in order])
    lines = [f"standings and error rates ({s['games']} games analysed by {s['reference']}; errors in mp per "
             f"decision ± 1 standard error)",
             f"{'agent':<{w}}  {'ppg':>7}  {'95% interval':>17}  {'error':>13}  {'checker':>13}  {'cube':>13}  "
             f"{'bad':>5}  {'very bad':>8}"]
    for a in order:
        r, e = ranking.get(a), s["agents"].get(a)
        ppg = f"{r['points_per_game']:+.3f}" if r else "-"
        ci = f"[{r['points_per_game_ci95'][0]:+.3f}, {r['points_per_game_ci95'][1]:+.3f}]" if r else "-"
        if e:
            lines.append(f"{names.get(a, a):<{w}}  {ppg:>7}  {ci:>17}  {_pm(e['all']):>13}  {_pm(e['play']):>13}  "
                         f"{_pm(e['cube']):>13}  {e['bad']:>5}  {e['very_bad']:>8}")
        else:
            lines.append(f"{names.get(a, a):<{w}}  {ppg:>7}  {ci:>17}  {'(no games analysed)':>13}")
    return "\n".join(lines) + "\n" + format_analysis(s, names)


# --- the job ---------------------------------------------------------------------------------

def _read_done(path: Path) -> dict[str, dict]:
    """Per-game results already in ``analysis.jsonl`` (a torn last line is dropped)."""
    def parse(line: str) -> tuple[str, dict]:
        d = json.loads(line)
        return str(d["key"]), d

    return read_appended_first(path, parse, "an analysis line", AnalysisError)


def _tasks(games: Sequence[tuple[str, GameRecord]], reference: str, per_task: int) -> list[Task]:
    """Tasks of at most ``per_task`` games of one rules group, the reference resolved per group
    (a registry name to the ``td:`` spec of that variant's net)."""
    from . import registry
    groups: dict[tuple, list] = {}
    for key, r in games:
        groups.setdefault((r.variant, json.dumps(r.options, sort_keys=True), r.variant_version), []).append((key, r))
    out = []
    for members in groups.values():
        v = members[0][1].rules()
        spec = registry.resolve(reference, v)
        for i in range(0, len(members), per_task):
            out.append(Task(spec, tuple((k, r.to_json()) for k, r in members[i:i + per_task])))
    return out


def sample_games(games: Sequence[tuple[str, GameRecord]], n: int | None, seed: int = 0):
    """``n`` of the games drawn without replacement with ``seed`` (all when ``n`` is None or at
    least their number), in their order."""
    if n is None or n >= len(games):
        return list(games)
    pick = np.sort(np.random.default_rng(seed).choice(len(games), size=n, replace=False))
    return [games[i] for i in pick.tolist()]


def run_analysis(games: Sequence[tuple[str, GameRecord]], reference: str = DEFAULT_REFERENCE,
                 out: str | os.PathLike | None = None, resume: bool = False, jobs: int | None = None,
                 backend: str | Backend = "local", address: str | None = None,
                 task_games: int = DEFAULT_TASK_GAMES, progress: bool = True,
                 log: Callable[[str], None] = print, analyse: Callable | None = None) -> dict:
    """Analyse ``games`` (``(key, record)``, :func:`load_games`) against ``reference`` and return
    the summary (:func:`summarize`).  With ``out`` the per-game results go to ``out/analysis.jsonl``
    as they arrive and the summary to ``out/analysis.json``; ``resume`` keeps the games already
    analysed there (with the same reference).  ``analyse`` replaces :func:`analyse_task` (tests)."""
    games = list(games)
    if not games:
        raise AnalysisError("no games to analyse")
    for _, r in games:
        r.rules()                                   # a record of another rules version fails here
    own = check_backend_choice(backend, jobs, address)
    tasks_all = _tasks(games, reference, max(1, task_games))
    for t in {t.reference: t for t in tasks_all}.values():       # a bad reference fails here
        reference_for(t.reference, GameRecord.from_json(t.games[0][1]).rules())
    done: dict[str, dict] = {}
    lock = None
    path = None
    if out is not None:
        out = Path(out)
        make_folder(out, AnalysisError)
        lock = FolderLock(out, "nardy analyze", AnalysisError)
        path = out / ANALYSIS_FILE
        cfg_path = out / ANALYSIS_CONFIG
        config = {"reference": reference}
        if path.exists() or cfg_path.exists():
            if not resume:
                lock.release()
                raise AnalysisError(f"{out} already holds an analysis; continue it with --resume or "
                                    f"choose another --out")
            try:
                saved = json.loads(cfg_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                saved = None
            if saved is not None and saved != config:
                lock.release()
                raise AnalysisError(f"--resume: the reference {reference!r} differs from the one saved in "
                                    f"{cfg_path} ({saved.get('reference')!r})")
            cut_torn_tail(path, AnalysisError)
            done = _read_done(path)
        write_atomic(cfg_path, json.dumps(config) + "\n")
    wanted = {k for k, _ in games}
    todo = [t for t in tasks_all if any(k not in done for k, _ in t.games)]
    todo = [Task(t.reference, tuple(g for g in t.games if g[0] not in done)) for t in todo]
    remaining = sum(len(t.games) for t in todo)
    if done and remaining:
        log(f"resuming {out}: {len(wanted & set(done))} games already analysed, {remaining} to go")
    fn = analyse or analyse_task
    runner = make_backend(backend, jobs, address, log) if own else backend
    try:
        if fn is analyse_task and runner.name == "ray":
            from .shipping import checkpoint_files
            fn = functools.partial(analyse_task_with_files, checkpoint_files(sorted({t.reference for t in todo})))
        start = time.perf_counter()
        f = open(path, "a", encoding="utf-8") if path is not None else None
        try:
            with progress_bar(remaining, "analysis", progress) as bar:
                for _, (_, results) in runner.run(fn, todo):
                    lines = []
                    for key, res in results:
                        if key in done:
                            continue
                        done[key] = res
                        lines.append(json.dumps(res, separators=(",", ":"), ensure_ascii=False) + "\n")
                    if f is not None:
                        append_durably(f, lines)
                    bar.update(len(lines))
        finally:
            if f is not None:
                f.close()
        elapsed = time.perf_counter() - start
        if remaining:
            n_dec = sum(len(done[k]["decisions"]) for t in todo for k, _ in t.games)
            log(f"analysed {remaining} games ({n_dec} decisions) in {elapsed:.1f} s "
                f"({n_dec / max(elapsed, 1e-9):.1f} decisions/s, {runner.describe()})")
        summary = summarize([done[k] for k, _ in games], reference)
        if out is not None:
            write_atomic(out / ANALYSIS_SUMMARY, json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
        return summary
    finally:
        if own:
            runner.close()
        if lock is not None:
            lock.release()


__all__ = ["ANALYSIS_CONFIG", "ANALYSIS_FILE", "ANALYSIS_SUMMARY", "AnalysisError", "DEFAULT_REFERENCE",
           "KINDS", "Reference", "THRESHOLDS", "Task", "analyse_task", "format_analysis", "format_standings", "load_games",
           "reference_for", "run_analysis", "sample_games", "summarize"]
