"""nardy_ai: bots that play nardy (short nardy / backgammon and long nardy) against bots.

With Gymnasium installed (the ``gym`` extra), importing this package registers the
environments of :mod:`nardy_ai.env` (``gymnasium.make("nardy_ai/Backgammon-v0")``).
"""

import os as _os
from importlib.util import find_spec as _find_spec

# One BLAS thread per process: the parallelism of this package is its worker processes (and
# torch's own threads in a fit). NumPy's OpenBLAS otherwise starts a thread per core whose
# busy-wait after each small matrix product took about half of every worker's CPU on 2 cores
# (the worker processes inherit this; it takes effect in this process only where NumPy was not
# imported yet). A value set by the user is kept.
_os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"

#: Gymnasium ids (namespace ``nardy_ai``) -> (variant, stakes) of :class:`nardy_ai.env.NardyEnv`.
GYM_ENVS = {
    "Backgammon-v0": ("backgammon", None),
    "ShortCaucasian-v0": ("short_caucasian", None),
    "ShortTrictrac-v0": ("short_trictrac", None),
    "Long-v0": ("long", None),
    "LongDave-v0": ("long_dave", "dave"),
}


def register_gym_envs() -> None:
    """Register :data:`GYM_ENVS` with Gymnasium (entry point ``nardy_ai.env:NardyEnv``, vector
    entry point ``nardy_ai.vector_env:NardyVectorEnv`` for ``gymnasium.make_vec``; imported only
    when an environment is made); repeated calls are harmless."""
    import gymnasium
    for name, (variant, stakes) in GYM_ENVS.items():
        if f"nardy_ai/{name}" not in gymnasium.registry:
            gymnasium.register(id=f"nardy_ai/{name}", entry_point="nardy_ai.env:NardyEnv",
                               vector_entry_point="nardy_ai.vector_env:NardyVectorEnv",
                               kwargs={"variant": variant, "stakes": stakes})


if _find_spec("gymnasium") is not None:
    register_gym_envs()
