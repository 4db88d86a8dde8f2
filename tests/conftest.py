"""Make the package importable without installing it, and the test helpers importable."""

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
for path in (_ROOT, _ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


import pytest


@pytest.fixture(scope="session")
def ray_instance():
    """A small local Ray instance with 2 CPUs, shared by every Ray test of the session
    (skipped where Ray is not installed)."""
    ray = pytest.importorskip("ray")
    import logging

    import ray.cloudpickle

    import backend_helpers
    ray.cloudpickle.register_pickle_by_value(backend_helpers)   # workers do not see tests/
    ray.init(num_cpus=2, object_store_memory=100 * 2**20, include_dashboard=False,
             log_to_driver=False, logging_level=logging.ERROR)
    yield ray
    ray.shutdown()
