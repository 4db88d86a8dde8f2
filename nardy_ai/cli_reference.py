"""The command-line reference, ``docs/cli.md``, written from the argument parser.

    python -m nardy_ai.cli_reference > docs/cli.md       # or: python -m nardy_ai.cli_reference docs/cli.md

``tests/test_cli_reference.py`` fails when ``docs/cli.md`` differs from :func:`reference`, so
a change to :func:`nardy_ai.cli.build_parser` (a command, an option, a default, a help text)
is followed by that command.  The page is Markdown built from the parser's own data (names,
values, choices, defaults, help texts), not from argparse's help screens, so it does not
depend on the terminal's width or on how a Python version lays out ``--help``.
"""

from __future__ import annotations

import argparse
import sys

from .cli import build_parser
from .files import write_atomic

#: The command that rewrites the page (printed in its header and in the test's message).
COMMAND = "python -m nardy_ai.cli_reference > docs/cli.md"


def _actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The parser's arguments, in the order they were added, without ``-h``.  argparse keeps
    them only in the attribute ``_actions`` (no public accessor; stable since Python 3.2)."""
    return [a for a in parser._actions if a.dest != "help"]


def _commands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each sub-command, in the parser's order."""
    out = []
    for action in _actions(parser):
        if action.nargs == argparse.PARSER:        # the sub-commands; their help texts live
            helps = {a.dest: a.help or "" for a in action._choices_actions}    # only there
            out += [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return out


def _cell(text: str) -> str:
    """Text for a Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _value(action: argparse.Action) -> str:
    """What follows the option on the command line ('' for a flag)."""
    if action.nargs == 0:
        return ""
    if action.choices is not None:
        name = "|".join(str(c) for c in action.choices)
    else:
        name = action.metavar or (action.dest if not action.option_strings else action.dest.upper())
    if action.nargs == "+":
        return f"{name} [{name} ...]"
    if action.nargs == "*":
        return f"[{name} ...]"
    return name


def _usage_part(action: argparse.Action) -> str:
    """The argument as it appears in the usage line."""
    value = _value(action)
    if not action.option_strings:
        return f"[{value}]" if action.nargs == "?" else value
    text = f"{action.option_strings[0]} {value}".strip()
    return text if action.required else f"[{text}]"


def _default(action: argparse.Action) -> str:
    """The default worth showing ('' for none, for False flags and for suppressed ones)."""
    d = action.default
    if d is None or d is False or d == argparse.SUPPRESS or action.nargs == 0:
        return ""
    return str(d)


def command_section(name: str, help_text: str, parser: argparse.ArgumentParser) -> list[str]:
    """The page's section of one sub-command: its help, usage line and table of arguments."""
    actions = _actions(parser)
    usage = " ".join([f"nardy {name}"] + [_usage_part(a) for a in actions])
    lines = [f"## nardy {name}", "", help_text[:1].upper() + help_text[1:] + ("" if help_text.endswith(".") else "."),
             "", "```", usage, "```", ""]
    if not actions:
        return lines + ["No options.", ""]
    lines += ["| argument | value | default | what it is |", "|---|---|---|---|"]
    for a in actions:
        names = ", ".join(a.option_strings) if a.option_strings else a.dest
        # a plain positional's value is its name, already in the first column
        value = _value(a) if a.option_strings or a.choices is not None else ""
        flags = [] if not a.required or not a.option_strings else ["required"]
        if a.nargs == "?" and not a.option_strings:
            flags.append("optional")
        text = (a.help or "") + (f" ({', '.join(flags)})" if flags else "")
        lines.append(f"| `{_cell(names)}` | {'`' + _cell(value) + '`' if value else ''} | "
                     f"{'`' + _cell(_default(a)) + '`' if _default(a) else ''} | {_cell(text.strip())} |")
    return lines + [""]


def reference(parser: argparse.ArgumentParser | None = None) -> str:
    """The whole page (Markdown) for ``parser`` (default: the ``nardy`` command's)."""
    parser = parser or build_parser()
    commands = _commands(parser)
    lines = ["# Command-line reference", "",
             "<!-- Generated from the argument parser (nardy_ai.cli.build_parser); do not edit by hand. -->",
             f"<!-- Regenerate: {COMMAND} (tests/test_cli_reference.py checks it is current). -->", "",
             f"`nardy`: {parser.description} Every command prints its own help with "
             "`nardy COMMAND --help`; `python -m nardy_ai` is the same program.", "",
             "Agent specs (`--agent`, `--agents`) and variants with rule options (`--variant`) "
             "are described in the [README](../README.md#agents) and in "
             "[rules and formats](rules-and-formats.md). Bad input gets a one-line "
             "`nardy: error: ...` and exit status 2; integer options take 0 to 2^63 - 1.", "",
             "| command | what it does |", "|---|---|"]
    lines += [f"| [`nardy {name}`](#nardy-{name}) | {_cell(help_text)} |" for name, help_text, _ in commands]
    lines.append("")
    for name, help_text, sub in commands:
        lines += command_section(name, help_text, sub)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print the page, or write it (atomically) to the one path given."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) > 1 or (argv and argv[0].startswith("-")):
        print(f"usage: {COMMAND}  (or: python -m nardy_ai.cli_reference PATH)", file=sys.stderr)
        return 2
    text = reference()
    if argv:
        write_atomic(argv[0], text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
