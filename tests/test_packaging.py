"""The installed package: every package of the tree is in the wheel, and the shipped agents
come with it, so a wheel installed outside the repository plays ``best`` for every variant."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_of_the_tree_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {p.parent.relative_to(ROOT).as_posix().replace("/", ".")
             for base in ("nardy_ai", "training") for p in (ROOT / base).rglob("__init__.py")}
    assert found <= listed, f"add {sorted(found - listed)} to [tool.setuptools] packages in pyproject.toml"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The project built as a wheel from a copy of its sources and installed into a folder
    of its own (dependencies are this environment's)."""
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("setuptools is not installed here: the wheel cannot be built without the network")
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    ignore = shutil.ignore_patterns("__pycache__", "tb", "*.jsonl", "*.log", "state.json", "generations")
    for name in ("nardy_ai", "training", "checkpoints"):
        shutil.copytree(ROOT / name, src / name, ignore=ignore if name == "checkpoints" else
                        shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    run = dict(capture_output=True, text=True, timeout=300)
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                            str(src), "-w", str(tmp / "dist")], **run)
    assert build.returncode == 0, build.stderr
    wheel = next((tmp / "dist").glob("*.whl"))
    target = tmp / "site"
    inst = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                           str(wheel)], **run)
    assert inst.returncode == 0, inst.stderr
    return target


def _outside(target: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(target))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=env)


def test_a_wheel_outside_the_repository_plays_best(installed, tmp_path):
    proc = _outside(installed, ["-m", "nardy_ai.cli", "play", "--variant", "backgammon", "--agents", "best",
                                "pubeval", "--games", "4"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "best vs pubeval" in proc.stdout
    code = ("import nardy_ai, sys\n"
            "from nardy_ai import registry\n"
            "from nardy_ai.agents import make_agent\n"
            "assert registry.registry_root().is_relative_to(sys.argv[1]), registry.registry_root()\n"
            "registry.verify_all()\n"
            "for v in ('backgammon', 'short_caucasian', 'short_trictrac', 'long', 'long_dave'):\n"
            "    print(v, make_agent('td:best', v).evaluator.variant.id)\n")
    proc = _outside(installed, ["-c", code, str(installed)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == 5
