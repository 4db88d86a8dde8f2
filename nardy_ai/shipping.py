"""Checkpoints shipped to workers that cannot read them (a Ray cluster without a shared disk).

The driver reads the file of every ``td:`` agent once (:func:`checkpoint_files`); a worker
plays from its own copy when it has the same content and from a content-addressed cached copy
of the driver's bytes otherwise (:func:`local_copy`).  Tournaments and rollouts use both.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Sequence

from .files import write_atomic

def bench_net(variant) -> str:
    """The shipped net the speed benchmarks (``nardy bench rollout``, ``nardy bench labels``)
    time for a variant: its champion in the agent registry (an absolute path)."""
    from . import registry
    return str(registry.champion(variant).path)


def checkpoint_files(specs: Sequence[str]) -> dict[str, tuple[str, bytes]]:
    """``{path: (sha256, bytes)}`` of the checkpoint each ``td:`` spec reads (read here, on
    the driver, so that workers elsewhere can play it)."""
    from .agents.neural import parse_td_spec     # torch only when a td: agent is shipped
    files = {}
    for spec in specs:
        if spec.startswith("td:"):
            path = parse_td_spec(spec[3:])[0]
            try:
                data = Path(path).read_bytes()
            except OSError:
                continue                # make_agent has already said what is wrong with it
            files[path] = (hashlib.sha256(data).hexdigest(), data)
    return files


def shipped_spec(spec: str, files: dict[str, tuple[str, bytes]]) -> str | None:
    """The spec a worker builds for agent ``spec`` when the driver shipped its checkpoint in
    ``files`` (from :func:`checkpoint_files`): the ``td:`` spec reading this machine's copy
    (:func:`local_copy`); None for a spec with no shipped file (build it as it is)."""
    if not spec.startswith("td:"):
        return None
    from .agents.neural import parse_td_spec
    path = parse_td_spec(spec[3:])[0]
    if path not in files:
        return None
    local = local_copy(path, *files[path])
    return spec if local == path else f"td:{local}" + spec[3 + len(path):]


def local_copy(path: str, sha: str, data: bytes) -> str:
    """``path`` if this machine has that file with that content, else a cached copy of it."""
    try:
        if hashlib.sha256(Path(path).read_bytes()).hexdigest() == sha:
            return path
    except OSError:
        pass
    import tempfile
    cache = Path(tempfile.gettempdir()) / "nardy-checkpoints" / sha          # content-addressed
    target = cache / Path(path).name
    if not target.exists():
        cache.mkdir(parents=True, exist_ok=True)
        write_atomic(target, data)     # atomic: concurrent workers agree on the content
    return str(target)
