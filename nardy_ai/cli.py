"""The ``nardy`` command: argument parsing and one-line error messages only.

Every subcommand calls into the library; a :class:`~nardy_ai.errors.NardyError` raised
anywhere becomes ``nardy: error: <message>`` on stderr with exit status 2 and no traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import IO, Any, Callable, Iterable, Iterator

import numpy as np

from . import registry
from .errors import FormatError, NardyError

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors.  Every ``type=int`` option of the command is a count, a
    size or a seed, so it reads a non-negative integer (:func:`_count`); every ``type=float``
    option a finite non-negative number (:func:`_amount`): commands added later inherit it."""

    def error(self, message: str):  # one line, exit status 2 (argparse prints usage too)
        # main() prints "nardy: error: "; a sub-command's parser adds its name once
        # ("nardy: error: play: argument --games: ..."), the top-level parser nothing.
        _, _, command = self.prog.partition(" ")
        raise NardyError(f"{command}: {message}" if command else message)

    def add_argument(self, *args, **kwargs):
        if kwargs.get("type") in (int, float):
            kwargs["type"] = _count if kwargs["type"] is int else _amount
        return super().add_argument(*args, **kwargs)


#: Largest integer an option takes (seeds are 63-bit; counts and sizes stop far below).
MAX_OPTION_INT = 2 ** 63 - 1


def _option_number(text: str, parse: Callable[[str], Any], what: str, ok: Callable[[Any], bool], rule: str):
    """``parse(text)``, an option's value; an ``ArgumentTypeError`` when ``text`` is not
    ``what`` (``an integer``) or its value breaks ``ok`` (``must be RULE, got TEXT``)."""
    try:
        x = parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not {what}") from None
    if not ok(x):
        raise argparse.ArgumentTypeError(f"must be {rule}, got {text[:40]}")
    return x


def _count(text: str) -> int:
    """An integer option: 0 <= n <= 2**63 - 1."""
    return _option_number(text, int, "an integer", lambda n: 0 <= n <= MAX_OPTION_INT, "between 0 and 2**63 - 1")


def _positive(text: str) -> int:
    """An integer option that must be at least 1."""
    n = _count(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def _amount(text: str) -> float:
    """A number option (seconds, ...): finite and >= 0."""
    import math
    return _option_number(text, float, "a number", lambda x: math.isfinite(x) and x >= 0, "a finite number >= 0")


def _sizes(largest: int):
    """An option type for comma-separated sizes ``1 <= n <= largest`` (``64,1024``); the
    value stays the text, so commands split it as before."""
    def sizes(text: str) -> str:
        parts = [p.strip() for p in text.split(",")]
        if not all(p.isascii() and p.isdigit() and len(p) < 20 and 1 <= int(p) <= largest for p in parts):
            raise argparse.ArgumentTypeError(f"must be whole numbers from 1 to {largest} separated by "
                                             f"commas, e.g. 64,1024; got {text[:40]!r}")
        return ",".join(parts)
    return sizes


# --- nardy moves ------------------------------------------------------------------------

def answer_move_requests(lines: Iterable[str | None], default_variant: str | None,
                         chunk: int = 4096) -> Iterator[str]:
    """Answer POSITIONS.md requests for legal plays, one JSON line per request, in order.

    Lines are read in chunks and answered with one batched call of the move generator per
    variant; a line that cannot be read (None: too long to read) gets ``{"error": ...}``
    naming its line number, and the rest go on.
    """
    from .board import MAX_LINE_CHARS, board_from_json, board_to_json, parse_json
    from .movegen import generate

    def answer(batch: list[tuple[int, str | None]]) -> list[str]:
        out: list[str | None] = [None] * len(batch)
        by_variant: dict[str, list[tuple[int, np.ndarray, tuple[int, int]]]] = {}
        for i, (number, line) in enumerate(batch):
            try:
                if line is None:
                    raise FormatError(f"the line is longer than {MAX_LINE_CHARS} characters")
                obj = parse_json(line)
                named = not isinstance(obj, dict) or "variant" in obj
                v, board, dice, _ = board_from_json(obj, variant=None if named else default_variant)
                if dice is None:
                    raise FormatError("missing field 'dice' (two numbers 1-6)")
                by_variant.setdefault(v.id, []).append((i, board, dice))
            except NardyError as e:
                out[i] = json.dumps({"error": f"line {number}: {e}"})
        for vid, items in by_variant.items():
            res = generate(np.stack([b for _, b, _ in items]), np.array([d for _, _, d in items]),
                           vid, notation=True)
            for j, (i, _, _) in enumerate(items):
                lo, hi = res.offsets[j], res.offsets[j + 1]
                out[i] = json.dumps({"afterstates": [
                    board_to_json(res.boards[r], play=res.plays[r]) for r in range(lo, hi)]})
        return out  # type: ignore[return-value]

    batch: list[tuple[int, str | None]] = []
    for number, line in enumerate(lines, 1):
        if line is not None and not line.strip():
            continue
        batch.append((number, line))
        if len(batch) >= chunk:
            yield from answer(batch)
            batch = []
    if batch:
        yield from answer(batch)


def _stdin() -> IO[str]:
    """Standard input as UTF-8 text; bytes that are not UTF-8 are kept (surrogateescape) for
    the JSON reader to refuse line by line instead of ending the stream."""
    if hasattr(sys.stdin, "reconfigure"):
        sys.stdin.reconfigure(encoding="utf-8", errors="surrogateescape")
    return sys.stdin


def _open_in(path: str | None) -> IO[str]:
    if path in (None, "-"):
        return _stdin()
    try:
        return open(path, encoding="utf-8", errors="surrogateescape")
    except OSError as e:
        raise NardyError(f"cannot read {path}: {e.strerror}") from None


def cmd_moves(args) -> int:
    from .variants import get_variant
    if args.variant:
        get_variant(args.variant)
    from .board import numbered_lines
    src = _open_in(args.jsonl)
    for answer in answer_move_requests((line for _, line in numbered_lines(src)), args.variant):
        print(answer, flush=False)
    sys.stdout.flush()
    return 0


# --- nardy show -------------------------------------------------------------------------

def _read_position(args):
    """The position named on the command line: JSON text/file, gnubg Position ID or XGID."""
    import os
    from .board import board_from_json, parse_json
    from .variants import get_variant
    text = args.position
    given = [name for name, value in (("a JSON position", text), ("--gnubg-id", args.gnubg_id),
                                      ("--xgid", args.xgid)) if value is not None]
    if len(given) > 1:
        raise NardyError(f"give one position, not {' and '.join(given)}")
    if args.gnubg_id is not None or args.xgid is not None:
        from . import formats
        v = get_variant(args.variant or "backgammon")
        if args.gnubg_id is not None:
            return v, formats.board_from_position_id(args.gnubg_id, v), None, None
        board, info = formats.board_from_xgid(args.xgid, v)
        return v, board, info["dice"], info["cube"]
    if text is None or text == "-":
        text = _read_text(_stdin(), "standard input")
    elif text.lstrip()[:1] not in ("{", "[", '"') and (os.path.exists(text) or not _is_json(text)):
        with _open_in(text) as f:                 # a file (JSON text never names one)
            text = _read_text(f, text)
    obj = parse_json(text)
    named = isinstance(obj, dict) and "variant" in obj
    return board_from_json(obj, variant=args.variant if args.variant and not named else None)


#: Largest position file or stdin text read (one JSON position is a few hundred characters).
MAX_POSITION_CHARS = 2 ** 20


def _read_text(f: IO[str], name: str) -> str:
    """The text of a position file, refusing endless or huge ones (``/dev/zero``)."""
    from .files import read_at_most
    return read_at_most(f, MAX_POSITION_CHARS, name, f"holds more than {MAX_POSITION_CHARS} characters: a "
                        f"position file holds one JSON position", too_long_error=FormatError)


def _is_json(text: str) -> bool:
    from .board import parse_json
    try:
        parse_json(text)
    except FormatError:
        return False
    return True


def cmd_show(args) -> int:
    from . import render
    v, board, dice, cube = _read_position(args)
    print(render.text_board(board, v, dice=dice, cube=cube))
    if args.svg:
        svg = render.svg_board(board, v, dice=dice, cube=cube)
        from .files import write_atomic
        write_atomic(args.svg, svg, fsync=False)
        print(f"SVG written to {args.svg}")
    if v.family == "short":
        from . import formats
        print(f"Position ID: {formats.position_id(board, v)}")
    return 0


def _bench_checkpoint(given: str | None, variant: str) -> str | None:
    """The checkpoint file a benchmark times: a path, a registry name, or by default the
    variant's champion; None for ``untrained``."""
    if given == "untrained":
        return None
    if given is None or registry.is_name(given):
        return str(registry.entry(given or "best", variant).path)
    return given


# --- nardy hint ---------------------------------------------------------------------------

def cmd_hint(args) -> int:
    from .agents import make_agent
    from .board import validate_dice
    from .hint import cube_hint, format_hint, play_hint
    v, board, dice, cube = _read_position(args)
    if args.dice is not None and args.dice.strip().lower() == "none":
        dice = None                                  # the cube decision only
    elif args.dice is not None:
        try:
            dice = validate_dice(tuple(int(x) for x in args.dice.replace(",", "-").split("-")))
        except (ValueError, NardyError) as e:
            raise NardyError(f"--dice {args.dice!r}: give two dice 1-6, e.g. 6-5, or none for the "
                             f"cube decision only ({e})") from None
    spec = args.agent or "best"
    agent = make_agent(spec, v)
    out = {"agent": spec, "cube": cube_hint(agent, board, v, cube), "dice": list(dice) if dice else None,
           "plays": play_hint(agent, board, v, dice, args.top) if dice else None}
    print(json.dumps(out) if args.json else format_hint(out))
    return 0


# --- nardy rollout ----------------------------------------------------------------------

def cmd_rollout(args) -> int:
    from .agents import make_agent
    from .backends import make_backend
    from .rollout import format_result, result_json, rollout
    from .variants import parse_variant_spec
    spec = parse_variant_spec(args.variant) if args.variant else None
    args.variant = spec.id if spec else None          # the position reader knows plain ids
    v, board, dice, _ = _read_position(args)
    if spec is not None:
        if spec.id != v.id:
            raise NardyError(f"--variant {spec.id} but the position is for {v.id}")
        v = spec
    make_agent(args.agent, v)                            # a bad spec fails before any worker starts
    from functools import partial
    with make_backend(args.backend, args.jobs, args.address, log=partial(print, file=sys.stderr)) as backend:
        res = rollout(board, v, args.agent, games=args.games, truncate=args.truncate, seed=args.seed,
                      backend=backend, dice=dice)
        runs = backend.describe()
    first = (f"the player on roll plays {dice[0]}-{dice[1]} first" if dice
             else "the player on roll rolls first")
    if args.json:
        print(json.dumps(result_json(res, agent=args.agent, seed=args.seed, truncate=args.truncate,
                                     dice=list(dice) if dice else None, runs=runs)))
        return 0
    how = f"truncated after {args.truncate} plies (then the evaluator's value)" if args.truncate is not None \
        else "played to the end"
    print(format_result(res, header=f"rollout, {v.id}, agent {args.agent}, cubeless: {first}; games {how}, "
                                    f"seed {args.seed}, first rolls rotated over the 36; {runs}"))
    return 0


# --- nardy play -------------------------------------------------------------------------

class _Output:
    """A file the command appends to, opened before the work starts so that a path that
    cannot be written fails before anything is computed; a file opened here and never written
    to is removed again when the process ends."""

    def __init__(self, path: str):
        import atexit
        import os
        self.path, self.created = path, not os.path.exists(path)
        try:
            self.file = open(path, "a", encoding="utf-8")
        except OSError as e:
            raise NardyError(f"cannot write {path}: {e.strerror}") from None
        self.written = False
        atexit.register(self._close)

    def write(self, fn) -> None:
        """Call ``fn(file)`` and close the file."""
        try:
            fn(self.file)
            self.file.close()
        except OSError as e:
            raise NardyError(f"cannot write {self.path}: {e.strerror}") from None
        self.written = True

    def _close(self) -> None:
        import os
        self.file.close()
        if self.created and not self.written:
            try:
                if os.path.getsize(self.path) == 0:
                    os.remove(self.path)
            except OSError:
                pass

def cmd_play(args) -> int:
    from .agents import make_agent
    from .game import play_games, summarize, write_jsonl
    from .variants import parse_variant_spec
    v = parse_variant_spec(args.variant)
    if len(args.agents) != 2:
        raise NardyError("--agents takes exactly two agent specs, e.g. --agents heuristic random")
    a = make_agent(args.agents[0], v)
    b = make_agent(args.agents[1], v)
    if args.games < 1:
        raise NardyError("--games must be at least 1")
    out = _Output(args.jsonl) if args.jsonl else None      # a path that cannot be written fails now
    # Seats alternate: the first half with A as white, the second with B as white.
    first = (args.games + 1) // 2
    records = play_games(v, (a, b), first, seed=args.seed, record=bool(args.jsonl), stakes=args.stakes)
    if args.games - first:
        records += play_games(v, (b, a), args.games - first, seed=args.seed + 1,
                              record=bool(args.jsonl), stakes=args.stakes)
    if out is not None:
        out.write(lambda f: write_jsonl(records, f))
    s = summarize(records)
    if args.stakes not in (None, "none"):
        # Cube statistics per seat of --agents (A first): relabelled so equal specs stay apart.
        from dataclasses import replace
        from .tournament import cube_stats
        tagged = [replace(r, white="A", black="B") if i < first else replace(r, white="B", black="A")
                  for i, r in enumerate(records)]
        s["stakes"] = args.stakes
        s["cube"] = [cube_stats(tagged, "A"), cube_stats(tagged, "B")]
    print(json.dumps(s, indent=1) if args.json else format_summary(s, v))
    return 0


_LEVEL_NAMES = {"short": ("single", "gammon", "backgammon"), "long": ("oin", "mars", "koks")}


def format_summary(s: dict, variant=None) -> str:
    """Human-readable lines for a match summary (see :func:`nardy_ai.game.summarize`)."""
    a, b = s["agents"]
    level_names = _LEVEL_NAMES.get(variant.family if variant else "", ())
    lo, hi = s["win_rate_ci95"]
    plo, phi = s["points_per_game_ci95"]
    lines = [f"{a} vs {b}{', ' + variant.id if variant else ''}: {s['games']} games, "
             f"{s['mean_plies']:.1f} plies per game on average",
             f"  {a} wins {s['wins'][0]}, {b} wins {s['wins'][1]}: win rate of {a} "
             f"{100 * s['win_rate']:.1f}% (95% CI {100 * lo:.1f}-{100 * hi:.1f}%)",
             f"  points per game for {a}: {s['points_per_game']:+.3f} (95% CI {plo:+.3f} to {phi:+.3f})"]
    for who, levels in zip((a, b), s["levels_by_agent"]):
        if levels:
            parts = ", ".join(
                f"{n} x{variant.scoring[int(k) - 1]}" + (
                    f" ({level_names[int(k) - 1]})" if len(variant.scoring) <= 3 and level_names else "")
                if variant else f"{n} at level {k}" for k, n in levels.items())
            lines.append(f"  {who} won: {parts}")
    if "cube" in s:
        c0 = s["cube"][0]
        lines.append(f"  stakes {s['stakes']}: mean final stake {c0['mean_stake']:.2f}, "
                     f"{c0['games_passed']} of {s['games']} games ended by a pass")
        for who, c in zip((a, b), s["cube"]):
            lines.append(f"  {who}: {c['doubles']} doubles offered, {c['takes']} takes, "
                         f"{c['passes']} passes, {c['beavers']} beavers")
    return "\n".join(lines)


# --- nardy bench ------------------------------------------------------------------------

def cmd_bench(args) -> int:
    from .bench import speed
    from .variants import get_variant
    if args.what == "movegen":
        sizes = tuple(int(x) for x in args.batch_sizes.split(","))
        variants = args.variant or ["backgammon", "long"]
        rows = []
        for name in variants:
            rows += speed.bench_movegen(get_variant(name), sizes, repeats=args.repeats)
        print(json.dumps(rows) if args.json else speed.format_movegen(rows))
    elif args.what == "train":
        hidden = tuple(int(x) for x in args.hidden.split(","))
        rows = [speed.bench_train(get_variant(name), args.seconds, hidden, args.parallel_games)
                for name in (args.variant or ["backgammon"])]
        print(json.dumps(rows) if args.json else speed.format_train(rows))
    elif args.what == "agents":
        hidden = tuple(int(x) for x in args.hidden.split(","))
        for name in args.variant or ["backgammon"]:
            checkpoint = _bench_checkpoint(args.checkpoint, name)
            row = speed.bench_agents(get_variant(name), checkpoint, hidden, args.games or 512,
                                     repeats=args.repeats)
            print(json.dumps(row) if args.json else speed.format_agents(row))
    elif args.what == "evaluators":
        from .bench.evaluators import bench_evaluators, format_evaluators
        for name in args.variant or ["backgammon"]:
            v = get_variant(name)
            specs = args.agents or ["random", "heuristic"] + ([] if v.is_long else ["pubeval"])
            row = bench_evaluators(v, specs, args.reference, args.seed or 0, args.positions,
                                   args.set_version)
            print(json.dumps(row) if args.json else format_evaluators(row))
    elif args.what == "backends":
        from .bench.backends import bench_backends, format_backends
        hidden = tuple(int(x) for x in args.hidden.split(","))
        for name in args.variant or ["backgammon"]:
            row = bench_backends(get_variant(name), args.agents, args.games or 100, jobs=args.jobs,
                                 train_seconds=args.seconds, hidden=hidden)
            print(json.dumps(row) if args.json else format_backends(row))
    elif args.what == "bearoff":
        row = speed.bench_bearoff(args.variant or ["backgammon", "long"], repeats=args.repeats)
        print(json.dumps(row) if args.json else speed.format_bearoff(row))
    elif args.what == "cube":
        from .bench.cube import bench_cube, format_cube
        variants = args.variant or ["backgammon"]
        if len(variants) != 1 or get_variant(variants[0]).id not in ("backgammon", "long"):
            raise NardyError("bench cube: one --variant, backgammon (the cube, gnubg reference) or long "
                             "(dave, own cubeful rollouts as the reference)")
        name = get_variant(variants[0]).id
        default = {"backgammon": ["best", "best+cube0ply", "heuristic", "pubeval"],
                   "long": ["best", "best+cube1ply", "heuristic"]}[name]
        row = bench_cube(args.agents or default, args.positions, args.set_version, args.clear_margin, name)
        print(json.dumps(row) if args.json else format_cube(row))
    elif args.what == "rollout":
        for name in args.variant or ["backgammon"]:
            row = speed.bench_rollout(get_variant(name), args.agents, args.seconds)
            print(json.dumps(row) if args.json else speed.format_rollout(row))
    elif args.what == "features":
        for name in args.variant or ["backgammon"]:
            row = speed.bench_features(get_variant(name), args.batch, repeats=args.repeats)
            print(json.dumps(row) if args.json else speed.format_features(row))
    elif args.what == "env":
        from .bench.env import SIZES, bench_env, format_env
        sizes = tuple(int(x) for x in args.num_envs.split(",")) if args.num_envs else SIZES
        row = bench_env([get_variant(n).id for n in args.variant or ["backgammon", "long"]], sizes,
                        args.opponent, args.seconds)
        print(json.dumps(row) if args.json else format_env(row))
    elif args.what == "labels":
        from .bench.labels import bench_labels, format_labels
        for name in args.variant or ["backgammon"]:
            row = bench_labels(get_variant(name), _bench_checkpoint(args.checkpoint, name) or
                               str(registry.champion(name).path), args.seconds, args.jobs, args.plies)
            print(json.dumps(row) if args.json else format_labels(row))
    return 0


def cmd_train(args) -> int:
    import os
    from training.config import load_config
    from training.run_options import load_options, merge_options, resume_command, save_options
    from .variants import parse_variant_spec
    if args.resume and not args.config:
        if not args.out:
            raise NardyError("--resume needs --out DIR, the run folder to continue")
        args.config = os.path.join(args.out, "config.toml")
        if not os.path.exists(args.config):
            raise NardyError(f"{args.out} holds no run to resume (no config.toml)")
    elif not args.config:
        raise NardyError("--config is required (or --resume --out DIR to continue a run)")
    cfg, text = load_config(args.config)
    if cfg.variant and args.variant and parse_variant_spec(cfg.variant).id != parse_variant_spec(args.variant).id:
        raise NardyError(f"--variant {args.variant} but the config {args.config} trains {cfg.variant}")
    if not cfg.variant:
        if not args.variant:
            raise NardyError("the variant is missing: give --variant or set variant in the config")
        cfg.variant = args.variant
        # The run's copy of the config names the variant, so that it alone resumes the run.
        text = f"variant = {json.dumps(args.variant)}   # from --variant\n{text}"
        from training.config import config_from_dict
        import tomllib
        cfg = config_from_dict(tomllib.loads(text))     # the [[rounds]] classes checked for it
    parse_variant_spec(cfg.variant)
    if args.games is not None and args.games < 1:
        raise NardyError(f"--games must be at least 1, got {args.games}")
    name = cfg.name or os.path.splitext(os.path.basename(args.config))[0]
    out = args.out or os.path.join("runs", name)
    if getattr(args, "plan", False):
        return _train_plan(cfg, args)
    saved = load_options(out) if args.resume else {}
    opts = merge_options(args, saved)
    args.backend, args.jobs, args.address = opts["backend"], opts["jobs"], opts["address"]
    again = resume_command(out)
    same_config = os.path.abspath(args.config) == os.path.abspath(os.path.join(out, "config.toml"))

    def remember() -> None:
        """The options of this session, and the config it runs, kept in the run folder."""
        save_options(out, opts)
        if args.resume and not same_config:
            from nardy_ai.files import write_atomic
            write_atomic(os.path.join(out, "config.toml"), text)

    from training.run import cli_train
    if cfg.method.kind == "distill":
        from training.distill import DistillRun as method
    elif cfg.method.kind == "search_targets":
        from training.search_targets import SearchTargetsRun as method
    else:
        from training.td import Trainer as method
    return cli_train(method, args, cfg, text, out, again, on_start=remember, games=opts["games"])


def _train_plan(cfg, args) -> int:
    """``nardy train --config R --plan``: the stages of a recipe, their sizes and the hours and
    disk they take on this machine (measured rates), without running anything."""
    from training.plan import train_plan
    print(train_plan(cfg, jobs=args.jobs or 1))
    return 0


def cmd_serve(args) -> int:
    from .agents import make_agent
    from .protocol import serve
    from .variants import parse_variant_spec
    v = parse_variant_spec(args.variant)
    agent = make_agent(args.agent, v)
    serve(agent, v, _stdin(), sys.stdout, seed=args.seed)
    return 0


def cmd_tournament(args) -> int:
    import os
    import time
    from . import tournament as tm
    from .variants import parse_variant_spec
    v = parse_variant_spec(args.variant)
    if args.resume:
        if not args.out:
            raise NardyError("--resume needs --out DIR, the folder of the tournament to continue")
        out = args.out
        config = tm.resume_config(out, args.variant, args.agents, args.games, args.seed, args.gauntlet, args.chunk,
                                  args.stakes, args.mat, args.dice)
    else:
        agents = args.agents or tm.default_agents(v)
        games = tm.even_games(tm.DEFAULT_GAMES if args.games is None else args.games)
        if args.games is not None and games != args.games:
            print(f"--games {args.games} rounded up to {games}: games are played in duplicate-dice pairs")
        out = args.out or os.path.join("tournaments", f"{v.id}-{time.strftime('%Y%m%d-%H%M%S')}")
        config = tm.TournamentConfig(args.variant, tuple(agents), games, 0 if args.seed is None else args.seed,
                                     bool(args.gauntlet), tm.DEFAULT_CHUNK if args.chunk is None else args.chunk,
                                     args.stakes or "none", bool(args.mat), args.dice or "pairing")
    import signal

    def terminate(signum, frame):       # SIGTERM stops like Ctrl-C: workers ended, files complete
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        tm.run_tournament(config, out, resume=args.resume, jobs=args.jobs, progress=not args.no_progress,
                          backend=args.backend, address=args.address)
    except KeyboardInterrupt:
        import shlex
        if os.path.exists(os.path.join(out, tm.CONFIG_FILE)):
            again = shlex.join(["nardy", "tournament", "--variant", args.variant, "--out", out, "--resume"])
            print(f"nardy: interrupted; continue with: {again}", file=sys.stderr)
        else:
            print("nardy: interrupted before the tournament started; nothing was played, nothing to resume",
                  file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    if args.analyze or args.analyze_games is not None or args.analyze_reference != "best@2ply":
        _analyze_tournament(args, out)
    return 0


def cmd_analyze(args) -> int:
    from . import analysis
    if args.resume and not args.out:
        raise NardyError("--resume needs --out DIR, the folder of the analysis to continue")
    from .tournament.outputs import display_names
    games = analysis.load_games(args.games, args.variant)
    games = analysis.sample_games(games, args.sample, args.seed)
    try:
        summary = analysis.run_analysis(games, args.reference, out=args.out, resume=args.resume, jobs=args.jobs,
                                        backend=args.backend, address=args.address, progress=not args.no_progress,
                                        log=(lambda m: print(m, file=sys.stderr)) if args.json else print)
    except KeyboardInterrupt:
        if args.out:
            import shlex
            again = shlex.join(["nardy", "analyze", *args.games, "--reference", args.reference, "--out", args.out,
                                "--resume"])
            print(f"nardy: interrupted; continue with: {again}", file=sys.stderr)
            return 130
        raise
    if args.json:
        print(json.dumps(summary, indent=1, ensure_ascii=False))
    else:
        print(analysis.format_analysis(summary, display_names(list(summary["agents"]), 28)))
    return 0


def _analyze_tournament(args, out: str) -> None:
    """``nardy tournament --analyze``: the analysis of the tournament's games (or a seeded
    sample of ``--analyze-games``) in its folder, printed with the standings."""
    import os
    from . import analysis
    from . import tournament as tm
    from .tournament.outputs import display_names
    games = analysis.load_games([out])
    config = tm.load_config(out)
    games = analysis.sample_games(games, args.analyze_games, config.seed)
    summary = analysis.run_analysis(games, args.analyze_reference, out=out, resume=True, jobs=args.jobs,
                                    backend=args.backend, address=args.address, progress=not args.no_progress)
    try:
        with open(os.path.join(out, tm.SUMMARY_JSON), encoding="utf-8") as f:
            standings = json.load(f)
    except (OSError, ValueError):
        standings = None
    names = display_names(list(config.agents), 28, config.rules().id)
    print(analysis.format_standings(standings, summary, names))


def cmd_pool(args) -> int:
    import json
    from .files import write_atomic
    from .tournament.pool import format_pool, pool_tournaments
    aliases = {}
    for item in args.alias or []:
        spec, sep, name = item.partition("=")
        if not sep or not spec or not name:
            raise NardyError(f"--alias: expected SPEC=NAME, got {item!r}")
        aliases[spec] = name
    pool = pool_tournaments(args.folders, aliases)
    text = json.dumps(pool, indent=1)
    if args.out:
        write_atomic(args.out, text + "\n")
    print(text if args.json else format_pool(pool))
    if args.out and not args.json:
        print(f"wrote {args.out}")
    return 0


def cmd_report(args) -> int:
    from .report import write_report
    print(f"wrote {write_report(args.folder, args.out, args.plots)}")
    return 0


def cmd_bearoff(args) -> int:
    from . import bearoff
    db = bearoff.build_database()
    path = bearoff.save_database(db, args.out or bearoff.default_path())
    print(f"wrote {path}: {len(db.off):,} one-sided positions, K = {db.K} rolls, "
          f"{path.stat().st_size / 2**20:.1f} MiB, built in {db.build_seconds:.1f} s")
    return 0


def _figure(f: dict) -> str:
    """``+0.003 [-0.016, +0.022] vs gnubg:0ply, 16,000 games (cubeless, both 0 ply)``."""
    ci = f" [{f['low']:+.3f}, {f['high']:+.3f}]" if "low" in f and "high" in f else ""
    note = f" ({f['note']})" if f.get("note") else ""
    return f"{f['ppg']:+.3f}{ci} vs {f['against']}, {f['games']:,} games{note}"


def _where(e) -> str:
    """An entry's file relative to the registry's folder (``checkpoints/...``)."""
    root = registry.load().root
    try:
        return f"{root.name}/{e.path.relative_to(root).as_posix()}"
    except ValueError:
        return str(e.path)


def format_agents(entries, detail: bool = False, width: int = 100) -> str:
    """The registry as text.  A line per agent (variant, name, role, search depths, its first
    figure); with ``detail``, its summary, every figure and its file under it."""
    import textwrap
    lines = [f"{'variant':<16}{'name':<25}{'role':<10}{'ply/cube':<9}headline (points per game, 95% CI)"]
    for e in entries:
        depth = "" if e.path is None else f"{e.plies} / {e.cube_plies}"
        if e.figures:
            f = e.figures[0]
            head = f"{f['ppg']:+.3f} vs {f['against']} ({f['games']:,} games)"
        else:
            head = e.summary
        line = f"{e.variant:<16}{e.name:<25}{e.role:<10}{depth:<9}{head}"
        lines.append(line if len(line) <= width else line[:width - 3] + "...")
        if detail:
            body = [e.summary] + [_figure(f) for f in e.figures]
            if e.path is not None:
                body.append(f"{_where(e)}, sha256 {e.sha256[:12]}... (checked)")
            if e.recipe:
                body.append(f"made by: {e.recipe}")
            for text in body:
                lines += textwrap.wrap(text, width, initial_indent="    ", subsequent_indent="      ")
    return "\n".join(lines)


def cmd_agents(args) -> int:
    from .variants import parse_variant_spec
    entries = registry.verify_all()              # every shipped file against its hash
    if args.variant:
        v = parse_variant_spec(args.variant)
        wanted = registry.tournament_agents(v)
        entries = [e for e in entries if (e.variant == v.id or e.name in wanted) and e.plays(v)]
        entries.sort(key=lambda e: wanted.index(e.name) if e.name in wanted else len(wanted))
    if args.json:
        print(json.dumps([e.as_json() for e in entries]))
        return 0
    print(format_agents(entries, detail=bool(args.variant)))
    files = sum(e.path is not None for e in registry.load().entries)
    if args.variant:
        print(f"\nbest = {registry.champion(v).name} (play it with --agents best or --agent best); "
              f"{files} shipped files match their sha256")
    else:
        print(f"\n{files} shipped files match their sha256. best = each variant's champion.\n"
              "Every figure, the summary and the file of each: nardy agents --variant V")
    return 0


def variant_lines() -> list[str]:
    """What ``nardy variants`` prints: each variant with its rules version, then the rule options
    that apply to it (name, type, the variant's default, the rule that defines it)."""
    from .variants import DAVE_PROGRESSIONS, OPTIONS, STAKES, VARIANTS
    choices = {"stakes": STAKES, "dave_progression": DAVE_PROGRESSIONS}

    def text(value) -> str:
        return str(value).lower() if isinstance(value, bool) else str(value)

    lines = ["Variants and their rule options; set options with --variant ID,NAME=VALUE "
             "(e.g. backgammon,jacoby=true).", ""]
    for v in VARIANTS.values():
        lines.append(v.describe())
        rows = [(name, " | ".join(choices[name]) if name in choices else kind.__name__,
                 text(getattr(v, name)), rule)
                for name, (kind, families, rule) in OPTIONS.items() if v.family in families]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        for name, kind, default, rule in rows:
            lines.append(f"  {name:<{widths[0]}}  {kind:<{widths[1]}}  default {default:<{widths[2]}}  {rule}")
    return lines


def cmd_variants(args) -> int:
    print("\n".join(variant_lines()))
    return 0


def _add_backend_options(p: argparse.ArgumentParser) -> None:
    """``--jobs``, ``--backend`` and ``--address`` of a command whose tasks run on a backend
    (:func:`nardy_ai.backends.make_backend`: local processes or Ray tasks)."""
    p.add_argument("--jobs", type=int, help="local worker processes (default 1), or the CPUs of a local Ray "
                   "instance (default all); results do not depend on it")
    p.add_argument("--backend", choices=("local", "ray"), default="local",
                   help="local processes (default) or Ray tasks; results do not depend on it")
    p.add_argument("--address", help="--backend ray: the cluster to join (e.g. auto or HOST:6379; "
                   "default: start a local Ray instance)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="nardy", description="Bots that play nardy: rules engine, games, benchmarks.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    m = sub.add_parser("moves", help="answer JSON-lines requests for legal plays (docs/rules-and-formats.md)")
    m.add_argument("--variant", help="variant of lines that do not name one")
    m.add_argument("--jsonl", default="-", help="request file, or - for stdin (default)")
    m.set_defaults(func=cmd_moves)

    def position_arguments(p: argparse.ArgumentParser) -> None:
        """The ways to name one position (read by :func:`_read_position`)."""
        p.add_argument("position", nargs="?", help="JSON position, a file holding one, or - for stdin")
        p.add_argument("--variant", help="variant (default: the position's own, or backgammon for IDs)")
        p.add_argument("--gnubg-id", help="a GNU Backgammon Position ID instead of JSON")
        p.add_argument("--xgid", help="an eXtreme Gammon XGID instead of JSON")

    s = sub.add_parser("show", help="draw a position as text (and SVG)")
    position_arguments(s)
    s.add_argument("--svg", help="also write an SVG picture to this file")
    s.set_defaults(func=cmd_show)

    h = sub.add_parser("hint", help="an agent's cube decision and ranked checker plays for a position")
    position_arguments(h)
    h.add_argument("--agent", default=None, help="agent spec (default: best, the variant's champion "
                   "at its recommended depths)")
    h.add_argument("--dice", help="the roll, e.g. 6-5 (default: the position's dice; none: cube only)")
    h.add_argument("--top", type=_positive, default=10, help="plays shown (default 10)")
    h.add_argument("--json", action="store_true")
    h.set_defaults(func=cmd_hint)

    ro = sub.add_parser("rollout", help="play a position out many times (cubeless): outcome "
                        "probabilities and equity with standard errors")
    ro.add_argument("position", nargs="?", help="JSON position (with dice: that roll is played "
                    "first), a file holding one, or - for stdin")
    ro.add_argument("--variant", help="variant, optionally with rule options (default: the position's "
                    "own, or backgammon for IDs)")
    ro.add_argument("--gnubg-id", help="a GNU Backgammon Position ID instead of JSON")
    ro.add_argument("--xgid", help="an eXtreme Gammon XGID instead of JSON")
    ro.add_argument("--agent", default="best", help="agent spec playing both sides (default: best, the "
                    "variant's champion), e.g. td:PATH@0ply, pubeval")
    ro.add_argument("--games", type=int, default=1296, help="games (default 1296 = 36 x 36)")
    ro.add_argument("--truncate", type=int, help="stop each game after this many plies and score it "
                    "by the agent's evaluator (neural agents)")
    ro.add_argument("--seed", type=int, default=0, help="dice seed; results do not depend on the backend")
    _add_backend_options(ro)
    ro.add_argument("--json", action="store_true", help="print the figures as JSON")
    ro.set_defaults(func=cmd_rollout)

    g = sub.add_parser("play", help="play games between two agents and print the result")
    g.add_argument("--variant", required=True,
                   help="variant id, optionally with rule options: backgammon,jacoby=true")
    g.add_argument("--agents", nargs="+", required=True, help="two agent specs, e.g. heuristic random")
    g.add_argument("--games", type=int, default=100)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--jsonl", help="append every game record to this JSON-lines file")
    g.add_argument("--json", action="store_true", help="print the summary as JSON")
    g.add_argument("--stakes", choices=("none", "cube", "dave-geometric", "dave-arithmetic"),
                   help="play for stakes (CUBE-1 / CUBE-D); points per game include the stake")
    g.set_defaults(func=cmd_play)

    b = sub.add_parser("bench", help="benchmarks (figures with units and the machine)")
    b.add_argument("what", choices=["movegen", "train", "agents", "evaluators", "backends", "bearoff", "rollout",
                                    "features", "labels", "cube", "env"])
    b.add_argument("--variant", action="append",
                   help="variant (repeatable; default: backgammon and long for movegen, backgammon for train)")
    b.add_argument("--batch-sizes", default="64,1024,8192", type=_sizes(2 ** 20), help="movegen: batch sizes")
    b.add_argument("--num-envs", type=_sizes(2 ** 16),
                   help="env: games in lockstep of the vector environment (default 1,64,1024)")
    b.add_argument("--opponent", default="random", help="env: the opponent agent (default random)")
    b.add_argument("--seconds", type=float, default=30.0, help="train, backends: measuring time of training; "
                   "rollout: of all its measurements together; env: of each measurement")
    b.add_argument("--hidden", default="80", type=_sizes(8192), help="train, agents: hidden layer sizes, e.g. 80 or 128,64")
    b.add_argument("--parallel-games", type=int, default=512, help="train: games in lockstep")
    b.add_argument("--checkpoint", help="agents, labels: the net to time, a path or a registry name "
                   "(default: best, the variant's champion; agents: 'untrained' for an untrained MLP of --hidden)")
    b.add_argument("--games", type=int, help="agents: games in lockstep for games/s (default 512); "
                   "backends: tournament games per pairing (default 100)")
    b.add_argument("--jobs", type=int, help="backends: local processes and Ray CPUs; labels: local "
                   "processes (default: all cores)")
    b.add_argument("--repeats", type=_positive, default=5)
    b.add_argument("--plies", type=int, choices=(1, 2), default=1,
                   help="labels: search depth of the labels (default 1)")
    b.add_argument("--batch", type=_positive, default=16384,
                   help="features: afterstates encoded per call (default 16384)")
    b.add_argument("--agents", nargs="+", help="evaluators: agent specs to judge (default: random, "
                   "heuristic, and pubeval on backgammon-family variants); backends: tournament agents "
                   "(default: the registry's defaults: best, baselines); rollout: agents to time "
                   "(default: best at 0 ply, pubeval, heuristic)")
    b.add_argument("--reference", help="evaluators: recompute the reference with this agent spec "
                   "(td:PATH[@Nply], gnubg:Nply) instead of the stored one")
    b.add_argument("--positions", help="evaluators, cube: a position set file (default: the shipped one)")
    b.add_argument("--set-version", type=int, help="evaluators: which shipped position set "
                   "(1 or 2; long also 3; default: the variant's newest: backgammon 2, long 3)")
    b.add_argument("--seed", type=int, help="evaluators: seed of the agents' tie-breaking (default 0)")
    b.add_argument("--clear-margin", type=float, default=0.08,
                   help="cube: a reference decision won by at least this (units of the stake) is clear")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=cmd_bench)

    t = sub.add_parser("train", help="training from a TOML config: TD(lambda) self-play, or "
                       "generations of search targets ([method] kind)")
    t.add_argument("--variant", help="variant to train (must match the config's, if it has one)")
    t.add_argument("--config", help="experiments/<name>.toml (with --resume: default --out's config.toml)")
    t.add_argument("--resume", action="store_true", help="continue the run in --out (the folder remembers its "
                   "config, variant, backend, jobs and target)")
    t.add_argument("--plan", action="store_true", help="print the recipe's stages, their sizes and the estimated "
                   "hours and disk on this machine (a few seconds of measurement); run nothing")
    t.add_argument("--out", help="run folder (default runs/<config name>)")
    t.add_argument("--games", type=int, help="stop at this many games (default: the config's)")
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.add_argument("--backend", choices=("local", "ray"),
                   help="self-play in this process (default local) or on Ray actors feeding this learner")
    t.add_argument("--address", help="--backend ray: the cluster to join (default: a local Ray instance)")
    t.add_argument("--actors", type=int, help="--backend ray: self-play actors (default: the config's "
                   "[ray] actors, 0 = one per CPU of the cluster)")
    t.add_argument("--jobs", type=int, help="search targets, distill: sampling and labelling processes "
                   "(default 1), or the CPUs of a local Ray instance")
    t.set_defaults(func=cmd_train)

    bo = sub.add_parser("bearoff", help="the one-sided bear-off database (COM-5)")
    bo.add_argument("action", choices=["build"], help="build: compute it and write the file")
    bo.add_argument("--out", help="file or folder to write (default: $NARDY_CACHE or "
                    "~/.cache/nardy_ai, file bearoff_os6_v1.npz)")
    bo.set_defaults(func=cmd_bearoff)

    v = sub.add_parser("variants", help="list the variants, their versions and rule options")
    v.set_defaults(func=cmd_variants)

    ag = sub.add_parser("agents", help="the shipped agents: champions, baselines, milestones, with "
                        "their figures; checks every file's hash")
    ag.add_argument("--variant", help="only the agents of this variant (its champion, references, baselines)")
    ag.add_argument("--json", action="store_true", help="a JSON list of objects (name, variant, role, "
                    "path, spec, plies, cube_plies, card, sha256, summary, figures)")
    ag.set_defaults(func=cmd_agents)

    tn = sub.add_parser("tournament", help="round robin or gauntlet with duplicate dice, Elo and cross-table")
    tn.add_argument("--variant", required=True, help="variant id, optionally with rule options")
    tn.add_argument("--agents", nargs="+",
                    help="agent specs (default: the variant's list in the agent registry: its champion, the "
                    "references it is measured against, pubeval, heuristic, random; nardy agents --variant V)")
    tn.add_argument("--games", type=int, help="games per pairing, played in duplicate-dice pairs (default 400)")
    _add_backend_options(tn)
    tn.add_argument("--seed", type=int, help="tournament seed (default 0)")
    tn.add_argument("--out", help="output folder (default tournaments/<variant>-<date>-<time>)")
    tn.add_argument("--resume", action="store_true", help="continue the tournament in --out")
    tn.add_argument("--gauntlet", action="store_true", default=None,
                    help="the first agent against each of the others (default: round robin)")
    tn.add_argument("--chunk", type=int, help="duplicate pairs played in lockstep per task (default 100)")
    tn.add_argument("--no-progress", action="store_true", help="no progress bar")
    tn.add_argument("--stakes", choices=("none", "cube", "dave-geometric", "dave-arithmetic"),
                    help="play for stakes: the doubling cube (CUBE-1 with the variant's jacoby, beaver, "
                         "murphy_cap options) or dave (CUBE-D, LN-8); default none (stake 1)")
    tn.add_argument("--mat", action="store_true", default=None,
                    help="also write each pairing's games as a GNU Backgammon .mat file in matches/ (short "
                         "nardy without stakes; bulky: about 1.4 MB per 1,000 games); --resume keeps the choice")
    tn.add_argument("--dice", choices=("pairing", "shared"),
                    help="pairing (default): each pairing rolls its own dice; shared: game i of every pairing "
                         "rolls the same dice, and a gauntlet's summary compares every two opponents of its first "
                         "agent pair by pair (put the common opponent first); --resume keeps the choice")
    tn.add_argument("--analyze", action="store_true",
                    help="when the games are played, score every decision against the variant's champion at "
                         "2 ply (nardy analyze) and print error rates next to the standings")
    tn.add_argument("--analyze-games", type=_positive, metavar="N",
                    help="analyse a sample of N games (drawn with the tournament seed) instead of all")
    tn.add_argument("--analyze-reference", metavar="SPEC", default="best@2ply",
                    help="the reference agent of --analyze (default best@2ply)")
    tn.set_defaults(func=cmd_tournament)

    an = sub.add_parser("analyze", help="error rates of every decision of recorded games against a reference "
                        "agent, per agent, position class and the cube")
    an.add_argument("games", nargs="+", metavar="GAMES",
                    help="a tournament folder, a games file (games.jsonl, game records) or gnubg .mat files")
    an.add_argument("--reference", default="best@2ply",
                    help="the agent that values the decisions (default best@2ply: the variant's champion at 2 "
                         "ply; any spec: td:PATH@1ply, gnubg:2ply)")
    an.add_argument("--variant", default="backgammon",
                    help="the variant of .mat files (default backgammon); records carry their own")
    an.add_argument("--out", help="folder for analysis.jsonl (one line per game, appended as analysed) and "
                    "analysis.json (the summary)")
    an.add_argument("--resume", action="store_true", help="keep the games already analysed in --out")
    an.add_argument("--sample", type=_positive, metavar="N", help="analyse N games drawn with --seed")
    an.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    an.add_argument("--json", action="store_true", help="print the summary as JSON")
    _add_backend_options(an)
    an.add_argument("--no-progress", action="store_true", help="no progress bar")
    an.set_defaults(func=cmd_analyze)

    pl = sub.add_parser("pool", help="one figure per pairing from several tournament folders (other seeds, or "
                        "a match stopped part-way): pooled points per game over their duplicate pairs")
    pl.add_argument("folders", nargs="+", metavar="DIR", help="tournament folders of the same rules and stakes "
                    "(finished or interrupted); a pairing may appear in either seat order")
    pl.add_argument("--alias", action="append", metavar="SPEC=NAME", help="pool agent SPEC under NAME (the "
                    "same net called by a path in one folder and by its registry name in another); repeatable")
    pl.add_argument("--json", action="store_true", help="print the pooled summary as JSON")
    pl.add_argument("--out", metavar="FILE", help="also write the pooled summary as JSON to FILE (atomically)")
    pl.set_defaults(func=cmd_pool)

    rp = sub.add_parser("report", help="one self-contained HTML page (figures as inline SVG) for a tournament "
                        "folder or a training run folder")
    rp.add_argument("folder", metavar="DIR", help="a tournament folder or a training run folder (metrics.jsonl)")
    rp.add_argument("--out", metavar="FILE", help="the page to write (default DIR/report.html)")
    rp.add_argument("--plots", choices=("auto", "builtin", "matplotlib"), default="auto",
                    help="who draws the figures: matplotlib (the report extra), the built-in SVG writer, or "
                    "auto (default: matplotlib when installed)")
    rp.set_defaults(func=cmd_report)

    sv = sub.add_parser("serve", help="answer agent-protocol JSON lines on stdin/stdout (docs/environments.md)")
    sv.add_argument("--agent", required=True, help="agent spec, e.g. heuristic or td:checkpoints/...pt")
    sv.add_argument("--variant", default="backgammon",
                    help="variant, optionally with rule options (default backgammon)")
    sv.add_argument("--seed", type=int, default=0, help="seed of the agent's random choices")
    sv.set_defaults(func=cmd_serve)
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except NardyError as e:
        msg = str(e)
        print(f"nardy: error: {msg}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("nardy: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except MemoryError:
        print("nardy: error: out of memory: ask for less at once (fewer games, smaller batches "
              "or nets)", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
