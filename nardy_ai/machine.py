"""What machine a figure was measured on: benchmarks, tournament summaries and model cards
print :func:`machine_description` next to every speed or strength they report."""

from __future__ import annotations

import os
import platform

import numpy as np


def machine_description() -> str:
    """One line naming the CPU, core count, Python and NumPy versions."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} logical cores, Python {platform.python_version()}, "
            f"NumPy {np.__version__}")
