"""What machine a figure was measured on: benchmarks, tournament summaries and model cards
print :func:`machine_description` next to every speed or strength they report."""

from __future__ import annotations

import os
import platform

import numpy as np


#: x86 vector extensions, widest first: the one a CPU offers bounds the speed of the float
#: matrix products the nets run on, so figures of two machines are compared knowing it.
VECTOR_EXTENSIONS = (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"), ("sse4_2", "SSE4.2"))


def vector_extension(flags: str) -> str | None:
    """The widest of :data:`VECTOR_EXTENSIONS` in a ``/proc/cpuinfo`` flags line, or None."""
    have = set(flags.split())
    return next((name for flag, name in VECTOR_EXTENSIONS if flag in have), None)


def machine_description() -> str:
    """One line naming the CPU (with its widest vector extension where Linux says), core count,
    Python and NumPy versions."""
    cpu, vector = platform.processor() or platform.machine(), None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:                       # the first processor's block
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    cpu = value.strip()
                elif key.strip() == "flags":
                    vector = vector_extension(value)
    except OSError:
        pass
    if vector:
        cpu = f"{cpu} ({vector})"
    return (f"{cpu}, {os.cpu_count()} logical cores, Python {platform.python_version()}, "
            f"NumPy {np.__version__}")
