"""The import graph (issue #13): layers that only point down, and no cycle.

Every import of the package and of ``training`` counts, at module level or inside a function
(a lazy import is still a dependency).  A module may import its own layer or a lower one.
"""

from __future__ import annotations

import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Layers, lowest first.  Rules and the small utilities everything uses; evaluation (encoders,
#: nets, search); agents; playing (the game runner and records, the environment, the protocol,
#: rollouts); the jobs (tournaments, training); the front ends (benchmarks, the CLI).
LAYERS = [
    ("rules", ["nardy_ai", "nardy_ai.errors", "nardy_ai.variants", "nardy_ai.board", "nardy_ai.movegen",
               "nardy_ai.movegen_jit",
               "nardy_ai.scoring", "nardy_ai.cube", "nardy_ai.core", "nardy_ai.driver", "nardy_ai.notation",
               "nardy_ai.formats", "nardy_ai.render", "nardy_ai.classes", "nardy_ai.files",
               "nardy_ai.machine", "nardy_ai.stats", "nardy_ai.backends", "nardy_ai.registry", "nardy_ai.agent_spec",
               "nardy_ai.engine_process"]),
    ("evaluation", ["nardy_ai.features_short", "nardy_ai.features_long", "nardy_ai.encoding",
                    "nardy_ai.bearoff", "nardy_ai.model", "nardy_ai.netset", "nardy_ai.pubeval",
                    "nardy_ai.evaluator", "nardy_ai.search", "nardy_ai.cubeful"]),
    ("agents", ["nardy_ai.agents", "nardy_ai.agents.*"]),
    ("play", ["nardy_ai.bench.positions", "nardy_ai.bench.sets", "nardy_ai.game", "nardy_ai.env", "nardy_ai.vector_env", "nardy_ai.aec", "nardy_ai.hint", "nardy_ai.protocol", "nardy_ai.rollout",
              "nardy_ai.matfile", "nardy_ai.shipping", "nardy_ai.cube_rollout"]),
    ("jobs", ["nardy_ai.tournament", "nardy_ai.tournament.*", "nardy_ai.analysis", "nardy_ai.bench.cube", "training", "training.*"]),
    ("front", ["nardy_ai.bench", "nardy_ai.bench.*", "nardy_ai.report", "nardy_ai.cli", "nardy_ai.cli_reference", "nardy_ai.__main__"]),
]


def _modules() -> dict[str, str]:
    out = {}
    for base in ("nardy_ai", "training"):
        for folder, _, files in os.walk(os.path.join(ROOT, base)):
            for f in files:
                if f.endswith(".py"):
                    path = os.path.join(folder, f)
                    name = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                    out[name[:-9] if name.endswith(".__init__") else name] = path
    return out


def import_graph() -> dict[str, set[str]]:
    """``{module: modules of the project it imports}``."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        package = mod.split(".") if path.endswith("__init__.py") else mod.split(".")[:-1]
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != mod:
                    graph[mod].add(t)
    return graph


def layer_of(module: str) -> int:
    for i, (_, members) in enumerate(LAYERS):
        for m in members:
            if module == m or (m.endswith(".*") and module.startswith(m[:-1])):
                return i
    raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")


def test_every_module_has_a_layer():
    for m in _modules():
        layer_of(m)


def test_no_module_imports_a_layer_above_it():
    bad = [f"{m} ({LAYERS[layer_of(m)][0]}) imports {t} ({LAYERS[layer_of(t)][0]})"
           for m, ts in import_graph().items() for t in sorted(ts) if layer_of(t) > layer_of(m)]
    assert not bad, "\n".join(bad)


def test_no_import_cycle():
    graph = import_graph()
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                return path[path.index(t):] + [t]
            if t not in state:
                cycle = visit(t)
                if cycle:
                    return cycle
        state[m] = 2
        path.pop()
        return None

    for m in sorted(graph):
        if m not in state:
            cycle = visit(m)
            assert cycle is None, " -> ".join(cycle)
