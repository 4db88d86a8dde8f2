"""GNU Backgammon ``.mat`` match files (the Jellyfish text format) for short nardy games.

An adapter at the edge: it turns :class:`~nardy_ai.game.GameRecord` objects of a short-nardy
variant into a text file gnubg imports (``import mat FILE``), and reads such a file back into
turns (for tests and for checking a file).

The format has no formal definition; this follows what gnubg's own exporter writes and what
its importer (``import.c``: ``ImportMatVariation``, ``ImportGame``, ``ParseMatMove``) reads:

- ``; [Key "Value"]`` comment lines, then `` N point match`` (``0``: a money session).
- `` Game N``, then the score line ``name : score`` twice on one line (the right one at
  column 32); names may not hold ``:`` (gnubg splits the score line at the colons).
- One line per pair of turns: ``%3d) `` and the left player's turn padded to 27 characters,
  a space, then the right player's turn.  A turn is the dice and the play, ``52: 13/8 13/11``;
  a roll with no legal play is the dice alone (``43:``).  When the right player moves first,
  the first line's left half is blank.  gnubg splits a line at two characters before its
  second colon, or (with one colon) at the first double space after column 15.
- Plays are one checker hop per die, from the mover's view (points 1-24 as ours), the bar
  written ``25`` and off ``0``, ``*`` for a hit, no ``(2)`` repeats; gnubg's importer only
  expands a combined move such as ``24/13`` in simple cases, so every hop is written out.
- The game ends with ``Wins N point(s)`` in the winner's column.

Left column = player 0 of gnubg = the first agent of the pairing, in every game, whichever
seat (white or black) it had in our record.  Scores on the score lines are the points each
had won in the earlier games of the file.  gnubg replays the plays under its own backgammon
rules: Caucasian games (BG-HH) import as backgammon games, and trictrac's 4- and 8-point
results (BG-TT) are written on the ``Wins`` lines but gnubg scores by its own rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .board import BAR, OFF, OPP_BAR, OPP_OFF, flip, start_board
from .errors import FormatError
from .game import GameRecord, Turn
from .notation import apply_moves, move_checker, parse_play
from .variants import Variant, with_options

LEFT_WIDTH = 27      # gnubg writes the left turn with "%-27s "
NAME_WIDTH = 31      # gnubg's player names hold at most 31 characters


def mat_name(name: str) -> str:
    """A player name gnubg can read back: no ``:`` (agent specs have one), single spaces,
    at most 31 characters (a long checkpoint path keeps its last two parts)."""
    prefix, sep, arg = name.partition(":")
    if sep and "/" in arg:
        arg = "/".join(arg.split("/")[-2:])
    text = f"{prefix}={arg}" if sep else name
    text = " ".join(text.replace(":", "=").split())
    text = text.replace("Game ", "Game_")     # gnubg starts a new game at any "Game " in a line
    return text[:NAME_WIDTH] or "player"


def _may_bear_off(b: list[int], src: int, die: int) -> bool:
    """COM-5: every mover checker home and none on the bar; a larger die only from the
    highest occupied point."""
    if b[BAR] > 0 or any(x > 0 for x in b[6:24]):
        return False
    return die == src or (die > src and not any(x > 0 for x in b[src:6]))


def _hop(b: list[int], src: int, tgt: int) -> list[int] | None:
    """The board after one checker hop (hitting a blot), or None if no checker is on ``src``."""
    i = BAR if src == 25 else src - 1
    if b[i] <= 0:
        return None
    b = b.copy()
    move_checker(b, src, tgt, hits=True)
    return b


def _hops(b: list[int], segments: list[tuple[int, int]],
          dice: list[int]) -> tuple[list[tuple[int, int, bool]], list[int]] | None:
    """Split written moves into one legal hop per die: ``(hops, board after)``, by a
    depth-first search over which move goes next and with which die.  Written order is tried
    first, but a bear-off written as one move (``4/off`` with 3-3 is ``4/1 1/off``) may have
    to wait until higher checkers are off.  Points inside a written move are never hits (our
    notation writes every point that hit); BG-4: checkers on the bar move first."""
    if not segments:
        return [], b
    for s, (src, dst) in enumerate(segments):
        if b[BAR] > 0 and src != 25:
            continue
        for die in sorted(set(dice), reverse=True):
            tgt = src - die
            if dst == 0 and tgt <= 0:
                if not _may_bear_off(b, src, die):
                    continue
                hop, rest = (src, 0, False), []
            elif tgt >= max(dst, 1):
                if b[tgt - 1] < -1 or (b[tgt - 1] == -1 and tgt != dst):
                    continue
                hop, rest = (src, tgt, b[tgt - 1] == -1), ([] if tgt == dst else [(tgt, dst)])
            else:
                continue
            after = _hop(b, src, hop[1])
            if after is None:
                continue                      # the checker of this move has not arrived yet
            left = list(dice)
            left.remove(die)
            found = _hops(after, rest + segments[:s] + segments[s + 1:], left)
            if found is not None:
                return [hop] + found[0], found[1]
    return None


def _jf_turn(b: list[int], dice: tuple[int, int], play: str) -> tuple[str, list[int]]:
    pool = [dice[0]] * 4 if dice[0] == dice[1] else list(dice)
    found = _hops(b, parse_play(play), pool) if play else ([], b)
    if found is None:
        raise FormatError(f"cannot write the play {play!r} with dice {dice[0]}{dice[1]} as one hop per die")
    return " ".join(f"{a}/{t}{'*' if hit else ''}" for a, t, hit in found[0]), found[1]


def jf_play(board: np.ndarray, dice: tuple[int, int], play: str) -> str:
    """A short-nardy play in our notation (``24/13``, ``bar/20*``, ``6/off``, ``8/5(2)``) as
    gnubg's ``.mat`` writes it: one hop per die, bar 25, off 0 (``24/18 18/13``, ``25/20*``,
    ``6/0``).  ``board`` is the position before the play, from the mover's view."""
    return _jf_turn([int(x) for x in board], dice, play)[0]


def _game_lines(record: GameRecord, left: str, scores: tuple[int, int], names: tuple[str, str],
                number: int) -> list[str]:
    v = record.rules()
    column = {0: 0 if record.white == left else 1}
    column[1] = 1 - column[0]
    board = [int(x) for x in start_board(v)]
    cells: list[tuple[int, str]] = []                 # (column, text) in turn order
    for t in record.turns:
        text, after = _jf_turn(board, t.dice, t.play)
        cells.append((column[t.player], f"{t.dice[0]}{t.dice[1]}: {text}".rstrip()))
        board = [-x for x in after[23::-1]] + [after[OPP_BAR], after[BAR], after[OPP_OFF], after[OFF]]  # flip (BG-1)
    head = f"{names[0]} : {scores[0]}"
    lines = [f" Game {number}", f" {head:<{NAME_WIDTH - 1}} {names[1]} : {scores[1]}"]
    row = 1
    current = ""
    if cells and cells[0][0] == 1:
        current = f"{row:3d}) {'':<{LEFT_WIDTH}} "
    for col, text in cells:
        if col == 0:
            current = f"{row:3d}) {text:<{LEFT_WIDTH}} "
        else:
            lines.append((current + text).rstrip())
            current = ""
            row += 1
    if current:
        lines.append(current.rstrip())
    win_col = column[record.winner]
    s = "" if record.points == 1 else "s"
    lines.append(f"{'':>34}Wins {record.points} point{s}" if win_col else f"      Wins {record.points} point{s}")
    return lines + [""]


def write_mat(records: Sequence[GameRecord], left: str, right: str, event: str = "") -> str:
    """The text of a money-session ``.mat`` file (``0 point match``) holding ``records``.

    ``left``/``right`` are the agent names as in the records' ``white``/``black``; ``left``
    is gnubg's player 0.  Records must be of a short-nardy variant and carry their turns.
    """
    names = (mat_name(left), mat_name(right))
    if names[0] == names[1]:
        names = (names[0][:NAME_WIDTH - 2] + " 1", names[1][:NAME_WIDTH - 2] + " 2")
    out = ["; [Site \"nardy_ai\"]"]
    if event:
        out.append(f"; [Event \"{event.replace(chr(34), chr(39))}\"]")
    if records:
        v = records[0].rules()
        out.append(f"; [Transcriber \"nardy_ai, variant {v.id} v{v.version}\"]")
    out += ["", " 0 point match", ""]
    scores = [0, 0]
    for number, r in enumerate(records, 1):
        if r.rules().is_long:
            raise FormatError(f"game {r.game} is long nardy ({r.variant}): .mat files hold backgammon games")
        if {r.white, r.black} != {left, right}:
            raise FormatError(f"game {r.game} is {r.white} vs {r.black}, not {left} vs {right}")
        if len(r.turns) != r.plies:
            raise FormatError(f"game {r.game} was recorded without its turns")
        out += _game_lines(r, left, (scores[0], scores[1]), names, number)
        scores[0 if (r.winner == 0) == (r.white == left) else 1] += r.points
    return "\n".join(out) + "\n"


# --- reading ------------------------------------------------------------------------------

@dataclass
class MatGame:
    """One game of a ``.mat`` file: names and scores of [left, right], the turns (``player``
    is the column, 0 left / 1 right; ``play`` in the file's notation), and the result."""
    names: tuple[str, str]
    scores: tuple[int, int]
    turns: list[Turn] = field(default_factory=list)
    winner: int | None = None
    points: int | None = None


_SCORE = re.compile(r"^\s*(.+?)\s*:\s*(-?\d+)\s+(.+?)\s*:\s*(-?\d+)\s*$")
_TURN = re.compile(r"^([1-6])([1-6]):(.*)$")
_WINS = re.compile(r"^wins\s+(\d+)\s+points?", re.IGNORECASE)
_LENGTH = re.compile(r"^\s*(\d+)\s+point\s+match", re.IGNORECASE)


def _halves(line: str) -> tuple[str, str | None]:
    """Split a move line as gnubg's ``ImportGame`` does."""
    c1 = line.find(":")
    c2 = line.find(":", c1 + 1) if c1 >= 0 else -1
    if c1 >= 0 and c2 > 3:
        left, right = line[:c2 - 3], line[c2 - 2:]
    elif len(line) > 15 and (k := line.find("  ", 15)) >= 0:
        left, right = line[:k], line[k + 1:]
    else:
        left, right = line, None
    paren = left.find(")")
    return (left[paren + 1:] if paren >= 0 else left), right


def read_mat(text: str) -> tuple[int, list[MatGame]]:
    """Parse a ``.mat`` file: ``(match length, games)``.  Raises :class:`FormatError` on a
    file without the ``N point match`` line, a game without its score line, or a line that
    is neither a turn, a ``Wins`` line nor blank."""
    lines = [ln.rstrip("\r\n") for ln in text.splitlines()]
    length = None
    i = 0
    while i < len(lines):
        s = lines[i].strip()
        i += 1
        if not s or s[0] in ";#":
            continue
        m = _LENGTH.match(s)
        if not m:
            raise FormatError(f".mat line {i}: expected 'N point match', got {s!r}")
        length = int(m.group(1))
        break
    if length is None:
        raise FormatError(".mat file without an 'N point match' line")
    games: list[MatGame] = []
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip():
            continue
        if "Game " in line:
            while i < len(lines) and not lines[i].strip():
                i += 1
            m = _SCORE.match(lines[i]) if i < len(lines) else None
            if not m:
                raise FormatError(f".mat line {i + 1}: expected the score line 'name : n   name : n'")
            i += 1
            games.append(MatGame((m.group(1), m.group(3)), (int(m.group(2)), int(m.group(4)))))
            continue
        if not games:
            raise FormatError(f".mat line {i}: a move line before the first 'Game N'")
        game = games[-1]
        for col, half in enumerate(_halves(line)):
            half = (half or "").strip()
            if not half:
                continue
            if t := _TURN.match(half):
                game.turns.append(Turn(col, (int(t.group(1)), int(t.group(2))), " ".join(t.group(3).split())))
            elif w := _WINS.match(half):
                game.winner, game.points = col, int(w.group(1))
            else:
                raise FormatError(f".mat line {i}: cannot read {half!r}")
    return length, games


def replay_mat_game(game: MatGame, first_board: np.ndarray | None = None,
                    variant: str | Variant = "backgammon") -> list[np.ndarray]:
    """Apply a game's plays literally from the start position: the board before each turn
    (mover's view) and, last, the board after the final play.  For checking a file."""
    v = with_options(variant)
    board = start_board(v) if first_board is None else np.asarray(first_board, np.int8)
    boards = [board]
    for k, t in enumerate(game.turns):
        after = apply_moves(board, parse_play(t.play), v)
        boards.append(after if k == len(game.turns) - 1 else flip(after, v))
        board = boards[-1]
    return boards
