"""The human agent: a person plays in the terminal with the text board.

For each position it shows the board from the player's side (X, on roll; :func:`text_board`)
with the dice, numbers the legal plays in canonical notation and reads either a number or a
play in notation (:func:`nardy_ai.notation.find_play`: ``13/7 8/7``, ``8/5(2)``, ``bar/22*``),
asking again, with the rule-naming message, after an entry that is illegal or unreadable.
A forced play (or no move, COM-4) is shown and played without asking.

Stakes (CUBE-1, CUBE-D).  ``double`` ("Double?" / "Offer a raise?" with dave), ``take`` and
``beaver`` (BG-B) show the board from the player's side with the cube and ask a yes/no question
naming the stake now and after the raise; ``y``/``yes`` or ``n``/``no`` (any case) answer, other
entries ask again.
"""

from __future__ import annotations

import sys
from typing import IO

import numpy as np

from ..errors import FormatError, IllegalPlay, NardyError
from ..movegen import Afterstates
from ..notation import find_play
from ..render import text_board
from ..variants import Variant
from .base import Agent

_WIDTH = 78


class HumanAgent(Agent):
    """Reads plays from ``stdin`` (default: the process's) and writes to ``stdout``."""

    name = "human"

    def __init__(self, stdin: IO[str] | None = None, stdout: IO[str] | None = None):
        self._stdin = stdin
        self._stdout = stdout

    def choose(self, after: Afterstates, variant: Variant, rng: np.random.Generator) -> np.ndarray:
        if after.positions is None or after.dice is None:
            raise NardyError("agent human needs the positions and dice of the afterstates "
                             "(Afterstates.positions and .dice, as movegen.generate sets them)")
        n = len(after.offsets) - 1
        return np.array([self._choose_one(after, i, n, variant) for i in range(n)], np.int64)

    def _choose_one(self, after: Afterstates, i: int, n: int, v: Variant) -> int:
        inp = self._stdin or sys.stdin
        out = self._stdout or sys.stdout
        board = after.positions[i]
        dice = (int(after.dice[i][0]), int(after.dice[i][1]))
        lo, hi = int(after.offsets[i]), int(after.offsets[i + 1])
        plays = after.notation(np.arange(lo, hi))
        header = f"Position {i + 1} of {n}\n" if n > 1 else ""
        out.write("\n" + header + text_board(board, v, dice=dice, labels=("X (you, on roll)", "O")))
        if hi - lo == 1:
            out.write(f"No checker can move with {dice[0]}-{dice[1]} (COM-4).\n" if not plays[0]
                      else f"Only one legal play: {plays[0]}\n")
            out.flush()
            return lo
        out.write(_numbered(plays))
        while True:
            text = _ask(inp, out, f"Your play with {dice[0]}-{dice[1]} (1-{hi - lo}, or notation like {plays[0]}): ",
                        "a play")
            if not text:
                continue
            try:
                if text.isdigit():
                    row = lo + _pick(text, plays)
                else:
                    chosen, _ = find_play(board, dice, text, v)
                    row = lo + int(np.flatnonzero((after.boards[lo:hi] == chosen).all(axis=1))[0])
            except (IllegalPlay, FormatError) as e:
                out.write(f"  {e}\n")
                continue
            out.write(f"You play {after.notation(row)[0]}\n")
            out.flush()
            return row


    # --- cube and dave (CUBE-1, CUBE-D) ----------------------------------------------------------

    def double(self, boards: np.ndarray, cubes: list[dict], variant: Variant):
        """Ask, per position, whether to double (offer a raise, with dave) before rolling."""
        word = "Offer a raise" if variant.stakes == "dave" else "Double"
        return self._ask_each(boards, cubes, variant, lambda c: (
            ("X (you, on roll)", "O"), f"{word} from {c['value']} to {_next(c, variant)}? (y/n): "))

    def take(self, boards: np.ndarray, cubes: list[dict], variant: Variant):
        """Ask, per position, whether to take the opponent's raise (passing loses the stake)."""
        def ask(c: dict) -> tuple[tuple[str, str], str]:
            you = c.get("on_roll", False)
            labels = ("X (you, on roll)", "O (beavered)") if you else ("X (you)", "O (on roll, doubles)")
            return labels, f"Take at {_next(c, variant)} (pass loses {c['value']})? (y/n): "
        return self._ask_each(boards, cubes, variant, ask)

    def beaver(self, boards: np.ndarray, cubes: list[dict], variant: Variant):
        """Ask, per taken double, whether to beaver (BG-B: take and redouble at once)."""
        return self._ask_each(boards, cubes, variant, lambda c: (
            ("X (you)", "O (on roll, doubled)"),
            f"Beaver (redouble to {2 * _next(c, variant)} and keep the cube)? (y/n): "))

    def _ask_each(self, boards: np.ndarray, cubes: list[dict], variant: Variant, ask) -> tuple[np.ndarray, None]:
        """One yes/no question per position, in order: ``ask(cube)`` gives the board's labels and
        the question; the answers as a bool array, and no equities."""
        return np.array([self._yes_no(b, c, variant, *ask(c)) for b, c in zip(boards, cubes)], bool), None

    def _yes_no(self, board: np.ndarray, cube: dict, v: Variant, labels: tuple[str, str],
                question: str) -> bool:
        inp = self._stdin or sys.stdin
        out = self._stdout or sys.stdout
        shown = {"value": int(cube.get("value", 1)), "owner": cube.get("owner", "centre")}
        out.write("\n" + text_board(np.asarray(board), v, cube=shown, labels=labels))
        while True:
            text = _ask(inp, out, question, "a cube answer").lower()
            if text in ("y", "yes"):
                return True
            if text in ("n", "no"):
                return False
            if text:
                out.write("  answer y or n\n")


def _ask(inp, out, question: str, what: str) -> str:
    """Write ``question``, read one line of ``inp``: the answer stripped; a one-line error naming
    ``what`` was awaited when the input ends."""
    out.write(question)
    out.flush()
    line = inp.readline()
    if not line:
        raise NardyError(f"agent human: end of input while waiting for {what}")
    return line.strip()


def _next(cube: dict, v: Variant) -> int:
    """The stake after the raise (the runner's ``"next"``, else the variant's progression)."""
    if "next" in cube:
        return int(cube["next"])
    arithmetic = v.stakes == "dave" and v.dave_progression == "arithmetic"
    return int(cube.get("value", 1)) + 1 if arithmetic else 2 * int(cube.get("value", 1))


def _pick(text: str, plays: list[str]) -> int:
    k = int(text)
    if not 1 <= k <= len(plays):
        raise FormatError(f"there is no play number {k}: choose 1-{len(plays)} or write the play")
    return k - 1


def _numbered(plays: list[str]) -> str:
    """The plays as a numbered list in columns."""
    items = [f"{k:>3}. {p or '(no move)'}" for k, p in enumerate(plays, 1)]
    width = max(len(s) for s in items) + 2
    per_line = max(1, _WIDTH // width)
    lines = ["".join(s.ljust(width) for s in items[j:j + per_line]).rstrip()
             for j in range(0, len(items), per_line)]
    return "Legal plays:\n" + "\n".join(lines) + "\n"
