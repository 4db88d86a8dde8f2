"""nardy_ai/machine.py: the line naming the machine beside every speed or strength figure."""

from __future__ import annotations

import builtins
import io
import platform

from nardy_ai import machine
from nardy_ai.machine import machine_description, vector_extension


def test_the_widest_vector_extension_is_named():
    assert vector_extension("fpu sse sse2 sse4_2 avx avx2 fma avx512f avx512bw") == "AVX-512"
    assert vector_extension(" fpu sse4_2 avx fma avx2 ") == "AVX2"
    assert vector_extension("fpu sse4_1 sse4_2") == "SSE4.2"
    assert vector_extension("fp asimd evtstrm") is None           # an ARM core: none of them
    assert vector_extension("avx512_vnni") is None                  # a flag that only starts alike


def _cpuinfo(monkeypatch, text: str) -> None:
    real = builtins.open
    monkeypatch.setattr(machine, "open", lambda path, *a, **k: io.StringIO(text) if path == "/proc/cpuinfo"
                        else real(path, *a, **k), raising=False)


def test_the_first_processor_names_the_cpu_and_its_extension(monkeypatch):
    _cpuinfo(monkeypatch, "processor\t: 0\nmodel name\t: Test CPU 9000\nflags\t\t: fpu avx avx2\n\n"
                          "processor\t: 1\nmodel name\t: Other CPU\nflags\t\t: fpu avx512f\n")
    line = machine_description()
    assert line.startswith("Test CPU 9000 (AVX2), ") and "logical cores" in line
    assert f"Python {platform.python_version()}" in line


def test_without_cpuinfo_the_platform_names_the_cpu(monkeypatch):
    def missing(path, *a, **k):
        raise OSError("no /proc here")
    monkeypatch.setattr(machine, "open", missing, raising=False)
    assert machine_description().startswith(f"{platform.processor() or platform.machine()}, ")
