"""Evaluators: what values afterstates for the search, the agents, rollouts and training.

An :class:`Evaluator` is anything with a ``variant`` and ``probabilities(afterstates)``:
afterstates ``(M, 28)`` int8 (the mover has just moved, the opponent is on roll) to outcome
probabilities ``(M, n_outputs)`` for the mover, in :mod:`nardy_ai.model`'s layout
(``P(win)``, ``P(win at level >= l)``, ``P(lose at level >= l)``).  Its cubeless equity,
the same numbers seen by the other side and the exact values of finished games follow from
the variant (:func:`nardy_ai.model.equity`, :func:`~nardy_ai.model.flip_outcomes`,
:func:`~nardy_ai.model.terminal_outcomes`), so an implementation gives only its
probabilities.  Implementations:

* :class:`~nardy_ai.model.NeuralEvaluator`: one net (trainable, checkpointed);
* :class:`~nardy_ai.netset.NetSet`: one evaluator per position class with a fallback net;
* :class:`~nardy_ai.bearoff.BearoffEvaluator`: the exact one-sided bear-off database
  (bear-off afterstates only);
* :class:`~nardy_ai.pubeval.PubevalEvaluator`: Tesauro's pubeval (a monotone map of its
  scores, not calibrated);
* :class:`~nardy_ai.agents.gnubg_agent.GnubgEvaluator`: gnubg's own evaluation at 0-2 plies;
* :class:`ExternalEvaluator`: another process's evaluator, asked through the agent
  protocol's ``evaluate`` op (``ext:CMD``, e.g. ``ext:"nardy serve --agent best"``).

Finished games (the mover has borne off every checker: won at a level, gammon / mars or
backgammon / koks included) are valued once, here: :func:`outcomes` gives them their exact
result and asks the evaluator about the others only.  The search and the cube decisions read
every evaluator through it, so no implementation needs to know about finished games.

:func:`load_evaluator` is the one loader: a checkpoint file (a net or a net set), a registry
name (``best``, ``bg-champion``), ``bearoff``, ``pubeval`` or ``ext:CMD``.
"""

from __future__ import annotations

import io
import json
import os
from typing import Protocol, runtime_checkable

import numpy as np

from .bearoff import BearoffEvaluator
from .board import CHECKERS, OFF, board_to_json
from .engine_process import TIMEOUT, EngineClient, UsesEngine
from .errors import EngineError
from .model import CheckpointError, NeuralEvaluator, load_checkpoint, n_outputs, terminal_outcomes
from .netset import NetSet, adopt_state
from .pubeval import PubevalEvaluator
from .variants import Variant, get_variant

#: What :func:`load_evaluator` accepts besides checkpoint files, registry names and ``ext:CMD``.
BUILTIN = ("bearoff", "pubeval")
#: The prefix of an external engine's evaluator in :func:`load_evaluator`.
EXTERNAL = "ext:"
#: How :func:`load_evaluator` treats a checkpoint of another variant of the same family:
#: refuse it, keep it (it values positions with its own result levels: ``td:`` agents), or
#: adopt it (relabelled for the variant, :func:`nardy_ai.netset.adopt_state`: a trainer's start).
SIBLINGS = ("refuse", "keep", "adopt")


@runtime_checkable
class Evaluator(Protocol):
    """Outcome probabilities of afterstates (module docstring)."""

    variant: Variant

    def probabilities(self, afterstates: np.ndarray) -> np.ndarray:
        """Outcome probabilities ``(M, n_outputs)`` of afterstates ``(M, 28)`` for the side that
        has just moved; callers (:func:`outcomes`) never pass finished games."""


def finished(afterstates: np.ndarray) -> np.ndarray:
    """``(M,)`` bool: the mover has borne off every checker (the game is over)."""
    return np.asarray(afterstates)[:, OFF] == CHECKERS


def outcomes(ev: Evaluator, afterstates: np.ndarray, values=None) -> np.ndarray:
    """Outcome probabilities ``(M, n_outputs)`` float64 of any afterstates for the side that
    has just moved: finished games their exact result, the others ``ev``'s probabilities (or
    ``values(afterstates)`` of the unfinished ones, when given: the search's deeper values)."""
    boards = np.asarray(afterstates, np.int8)
    out = np.empty((len(boards), n_outputs(ev.variant)))
    done = finished(boards)
    if done.any():
        out[done] = terminal_outcomes(boards[done], ev.variant)
    live = np.flatnonzero(~done)
    if len(live):
        out[live] = (values or ev.probabilities)(boards[live])
    return out


class ExternalEvaluator(UsesEngine):
    """The evaluator of an external engine (``ext:CMD``): a process speaking the agent protocol
    (:mod:`nardy_ai.engine_process`, the channel the ``ext:`` agent uses too) that answers its
    ``evaluate`` op, ``nardy serve --agent SPEC`` for any agent with an evaluator among them.
    One ``evaluate`` request per :meth:`probabilities` call, holding the whole batch; the engine
    plays ``variant`` (its ``info`` says so) and answers ``n_outputs(variant)`` probabilities
    per position.  A dead, silent or confused engine, or one that answers the request with an
    error (an agent without an evaluator), raises :class:`~nardy_ai.errors.EngineError`
    naming the evaluator and the op."""

    def __init__(self, command: str, variant: str | Variant, timeout: float = TIMEOUT,
                 name: str | None = None):
        self.client = EngineClient(command, variant, timeout, name, kind="evaluator", refuse=CheckpointError)
        self.variant, self.name = self.client.variant, self.client.name

    def probabilities(self, afterstates: np.ndarray) -> np.ndarray:
        """Outcome probabilities ``(M, n_outputs)`` float64 of afterstates ``(M, 28)`` for the
        side that has just moved, as the engine's evaluator gives them."""
        boards = np.asarray(afterstates, np.int8)
        k = n_outputs(self.variant)
        if not len(boards):
            return np.empty((0, k))
        ans = self.client.request({"op": "evaluate", "batch": [board_to_json(b, self.variant) for b in boards]})
        batch = ans.get("batch")
        try:
            probs = np.array([e["probabilities"] for e in batch], float)
            ok = probs.shape == (len(boards), k) and bool(np.all((probs >= 0) & (probs <= 1)))
        except (TypeError, KeyError, ValueError):
            ok = False
        if not ok:
            raise EngineError(f"{self.client.who}: the evaluate answer must hold a 'batch' list of "
                              f"{len(boards)} entries, each with 'probabilities': {k} numbers in 0-1, got "
                              f"{json.dumps(ans)[:200]}")
        return probs


def evaluator_from_state(state, variant=None, device=None) -> NeuralEvaluator | NetSet:
    """The evaluator of a checkpoint's ``evaluator`` entry: a :class:`~nardy_ai.netset.NetSet`
    for a net set's state (``"kind": "netset"``), a :class:`~nardy_ai.model.NeuralEvaluator`
    for a single net's; refuses another variant (:class:`~nardy_ai.model.CheckpointError`)."""
    kind = state.get("kind") if isinstance(state, dict) else None
    if kind == "netset":
        return NetSet.from_state(state, variant, device)
    if kind is not None:
        raise CheckpointError(f"kind: unknown evaluator kind {kind!r} (known: a single net, netset)")
    return NeuralEvaluator.from_state(state, variant, device)


def load_evaluator(source: str | os.PathLike | bytes, variant: str | Variant | None = None,
                   device=None, siblings: str = "refuse") -> Evaluator:
    """The evaluator ``source`` names, for games of ``variant``:

    * ``bearoff``: the one-sided bear-off database (needs ``variant``);
    * ``pubeval``: pubeval (``variant`` default backgammon; the backgammon family only);
    * ``ext:CMD``: the evaluator of the engine that the command line CMD starts
      (:class:`ExternalEvaluator`; needs ``variant``);
    * a registry name (``best``, ``bg-champion``; ``td:`` and search-depth modifiers are the
      agent's, not the evaluator's, and are refused): its checkpoint;
    * a checkpoint file's path, or its bytes: the net or net set it holds.

    A checkpoint of another variant raises :class:`~nardy_ai.model.CheckpointError` naming
    the file and the reason (as does a corrupt one), unless ``siblings`` (one of
    :data:`SIBLINGS`) accepts a variant of the same family.  ``variant`` None accepts the
    checkpoint's own."""
    if siblings not in SIBLINGS:
        raise ValueError(f"siblings must be one of {', '.join(SIBLINGS)}, got {siblings!r}")
    v = get_variant(variant) if variant is not None else None
    if isinstance(source, str) and source.startswith(EXTERNAL):
        if v is None:
            raise CheckpointError(f"{source}: an external engine's evaluator needs a variant")
        return ExternalEvaluator(source[len(EXTERNAL):], v, name=source.strip())
    if isinstance(source, str) and source in BUILTIN:
        if source == "pubeval":
            return PubevalEvaluator(v or "backgammon")
        if v is None:
            raise CheckpointError("bearoff: the bear-off database needs a variant")
        return BearoffEvaluator(v)
    if isinstance(source, bytes):
        name, data = "the checkpoint bytes", load_checkpoint(io.BytesIO(source), "the checkpoint bytes")
    else:
        name = _checkpoint_path(os.fspath(source), v)
        data = load_checkpoint(name)
    state = data["evaluator"]
    try:
        try:
            return evaluator_from_state(state, v, device)
        except CheckpointError as strict:
            if v is None or siblings == "refuse":
                raise
            try:
                if siblings == "adopt":
                    return evaluator_from_state(adopt_state(state, v), v, device)
                own = evaluator_from_state(state, None, device)
            except CheckpointError:
                raise strict from None
            if own.variant.family != v.family:
                raise strict from None
            return own
    except CheckpointError as e:
        raise CheckpointError(f"{name}: {e}") from None


def _checkpoint_path(source: str, variant: Variant | None) -> str:
    """The checkpoint file of a path or a registry name (a path that exists wins)."""
    from . import registry
    if os.path.exists(source) or not registry.is_name(source.removeprefix("td:")):
        return source
    spec = source.removeprefix("td:")
    if any(c in spec for c in "@+"):
        raise CheckpointError(f"{source}: an evaluator has no search depth or cube rule; name it "
                              f"without @Nply / +cubeMply / +pipcube")
    return str(registry.entry(spec, variant).path)
