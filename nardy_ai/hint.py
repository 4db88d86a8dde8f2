"""``nardy hint``: an agent's cube decision and ranked checker plays for one position (issue #12).

The cube decision is the player on roll's, before the roll (CUBE-1 / CUBE-D: double or offer,
then the opponent's take or pass); with an evaluator behind the agent it comes with the
cubeful equities the agent decided on, in units of the current stake.  The checker plays are
every legal play of the roll ranked by the agent's equity of its afterstate (cubeless, points
per game; the side that just moved).
"""

from __future__ import annotations

import numpy as np

from .board import flip
from .cube import Stakes
from .driver import ask_cube
from .movegen import generate
from .variants import Variant

#: The cube decisions ``nardy hint`` names.
ACTIONS = ("no double", "double, take", "double, pass", "too good", "no double available")


def cube_hint(agent, board: np.ndarray, v: Variant, cube: dict | None) -> dict:
    """The agent's cube decision for the player on roll in ``board`` with ``cube``
    (``{"value", "owner"}``, default centred): ``action`` (one of :data:`ACTIONS`) and, when the
    agent gives them, its equities."""
    views = Stakes.from_dicts([cube or {"value": 1, "owner": "centre"}], v)
    if not views.may_raise()[0]:
        return {"action": "no double available", "reason": "the opponent holds the cube"}
    out: dict = {}
    doubles, eq = ask_cube(agent, "double", board[None], views, v, False)
    takes, teq = ask_cube(agent, "take", flip(board[None], v), views.opponent(), v, True)
    if eq:
        out["equities"] = {k: round(float(x), 4) for k, x in eq[0].items()}
    if teq:
        out["taker"] = {k: round(float(x), 4) for k, x in teq[0].items()}
    if doubles[0]:
        out["action"] = "double, take" if takes[0] else "double, pass"
    elif eq and eq[0].get("no_double", 0.0) > eq[0].get("double_pass", 1.0) and not takes[0]:
        out["action"] = "too good"
    else:
        out["action"] = "no double"
    return out


def play_hint(agent, board: np.ndarray, v: Variant, dice, top: int = 10) -> list[dict]:
    """The legal plays of ``dice`` ranked by the agent's equity of their afterstates (highest
    first; an agent without equities ranks its own choice first, the rest as generated)."""
    after = generate(board[None], np.array([dice]), v, notation=True)
    n = len(after.boards)
    eq = agent.equity(after.boards, v)          # None from agents without an evaluator
    if eq is None:
        choice = int(agent.choose(after, v, np.random.default_rng(0))[0])
        order = [choice] + [i for i in range(n) if i != choice]
        return [{"play": after.plays[i] or "(no move)"} for i in order[:top]]
    order = np.argsort(-np.asarray(eq), kind="stable")[:top]
    best = float(eq[order[0]])
    return [{"play": after.plays[i] or "(no move)", "equity": round(float(eq[i]), 4),
             "loss": round(best - float(eq[i]), 4)} for i in order]


def format_hint(h: dict) -> str:
    """The text ``nardy hint`` prints."""
    lines = [f"agent: {h['agent']}", f"cube (before the roll): {h['cube']['action']}"]
    e = h["cube"].get("equities")
    if e and "no_double" in e:
        lines.append(f"  no double {e['no_double']:+.3f}   double, take {e['double_take']:+.3f}   "
                     f"double, pass {e['double_pass']:+.3f}   (cubeful, units of the stake; win chance {e['p']:.3f})")
    if h["cube"].get("reason"):
        lines.append(f"  {h['cube']['reason']}")
    if h.get("plays") is not None:
        lines.append(f"plays of {h['dice'][0]}-{h['dice'][1]}:")
        for i, p in enumerate(h["plays"], 1):
            if "equity" in p:
                lines.append(f"  {i:>2}. {p['play']:<28} {p['equity']:+.4f}" + (f"  ({-p['loss']:+.4f})" if i > 1 else ""))
            else:
                lines.append(f"  {i:>2}. {p['play']}")
    return "\n".join(lines)
