"""What a run folder remembers of the command line that started it, so that
``nardy train --out DIR --resume`` alone continues it.

``DIR/options.json`` (written atomically by ``nardy train``) holds the options that are not
in the recipe: the backend, ``--jobs``, ``--address`` and, for TD runs, the ``--games``
target.  The recipe itself is ``DIR/config.toml`` (with a ``--variant`` from the command line
written into it).  On ``--resume`` an option given on the command line replaces the
remembered one (and is remembered from then on).
"""

from __future__ import annotations

import json
import os

from nardy_ai.errors import NardyError
from nardy_ai.files import write_atomic

#: Version of ``options.json``.
OPTIONS_FORMAT = 1
#: The remembered options (``nardy train`` flags without the dashes).
KEYS = ("backend", "jobs", "address", "games")


def options_path(run_dir: str) -> str:
    return os.path.join(run_dir, "options.json")


def load_options(run_dir: str) -> dict:
    """The options remembered in ``run_dir`` ({} for a folder without ``options.json``, as
    runs started before it existed)."""
    path = options_path(run_dir)
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise NardyError(f"cannot read {path}: {e}") from None
    if not isinstance(data, dict) or data.get("format") != OPTIONS_FORMAT:
        raise NardyError(f"{path} is not a nardy train options file (format {OPTIONS_FORMAT})")
    return {k: data.get(k) for k in KEYS}


def save_options(run_dir: str, options: dict) -> None:
    """Remember ``options`` (keys of :data:`KEYS`) in ``run_dir``."""
    write_atomic(options_path(run_dir),
                 json.dumps({"format": OPTIONS_FORMAT, **{k: options.get(k) for k in KEYS}}, indent=1) + "\n",
                 NardyError)


def merge_options(args, saved: dict) -> dict:
    """The options of this session: those given on the command line (``args``), the others
    as ``saved``; the backend ``local`` when neither names one."""
    out = {}
    for k in KEYS:
        given = getattr(args, k, None)
        out[k] = given if given is not None else saved.get(k)
    out["backend"] = out["backend"] or "local"
    return out


def resume_command(run_dir: str) -> list[str]:
    """The command that continues the run in ``run_dir`` (the folder remembers the rest)."""
    return ["nardy", "train", "--out", run_dir, "--resume"]
