"""Helpers shared by the expert-feature tests (backgammon family and long nardy)."""

from __future__ import annotations

import pytest


def assert_features(f: dict[str, float], expected: dict[str, float]) -> None:
    """Each feature named in ``expected`` has its value in ``f`` (features by name), to
    pytest.approx; a failure lists every named feature that differs, not only the first."""
    assert {name: f[name] for name in expected} == pytest.approx(expected)
