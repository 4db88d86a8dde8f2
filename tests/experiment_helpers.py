"""Loading a script of ``experiments/`` (not a package) as a module, for its tests."""

from __future__ import annotations

import importlib.util
import os

EXPERIMENTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "experiments")


def load_experiment(name: str):
    """The module of ``experiments/NAME.py``, freshly executed."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXPERIMENTS, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
