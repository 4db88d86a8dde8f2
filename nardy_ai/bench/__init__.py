"""Benchmarks: figures with units and the machine they were measured on (never asserted in
tests), one module per suite of ``nardy bench``:

:mod:`~nardy_ai.bench.speed`
    ``movegen``, ``train``, ``agents``, ``bearoff``, ``rollout``, ``features``: how fast the
    move generator, training, the agents, the bear-off database, rollouts and the encoders run.
:mod:`~nardy_ai.bench.backends`
    ``backends``: the same tournament and training on one process, local processes and Ray.
:mod:`~nardy_ai.bench.evaluators`
    ``evaluators``: the quality of checker play on a versioned position set (its format, its
    builder and the scoring).
:mod:`~nardy_ai.bench.cube`
    ``cube``: double and take decisions on a versioned cube set (format, builder, scoring).
:mod:`~nardy_ai.bench.labels`
    ``labels``: how fast training on search targets labels afterstates.
:mod:`~nardy_ai.bench.positions`
    the positions the suites and the tests draw from play (random play, self-play).
:mod:`~nardy_ai.bench.sets`
    reading the files of the versioned position sets (a header line, then one position a line).
:mod:`~nardy_ai.bench.env`
    ``env``: Gymnasium environment steps/s, single and vector, beside OpenSpiel's backgammon.

Each suite has a ``bench_<what>``
function returning a dict of figures (``--json`` prints it) and a ``format_<what>`` that makes
the lines ``nardy bench <what>`` prints.  This package imports none of its modules: the cube set
(:mod:`~nardy_ai.bench.cube`, read by model cards), the samplers
(:mod:`~nardy_ai.bench.positions`) and the set reader (:mod:`~nardy_ai.bench.sets`) sit in
lower layers than the front-end suites and load without them.
"""
