"""Net sets: an evaluator made of one evaluator per position class, as strong engines have.

A :class:`NetSet` holds, for each class of its variant's family (:mod:`nardy_ai.classes`:
contact, crashed, race, bearoff in short nardy; contact, race, bearoff in long nardy), either
its own :class:`~nardy_ai.model.NeuralEvaluator` (with its own encoder and hidden sizes), the
exact one-sided bear-off database (:class:`~nardy_ai.bearoff.BearoffEvaluator`, the
``bearoff`` class only), or nothing: such classes go to the set's *fallback* net, which is
required unless every class has its own member.  A single net is a set with only a fallback, and values exactly as the
net alone.

It is an :class:`~nardy_ai.evaluator.Evaluator` (``variant``, ``probabilities``) with what
training, benchmarks and model cards also use (``equity``, ``state``, ``from_state``,
``device``): :meth:`NetSet.probabilities` classifies a batch of afterstates once and gives
each member its rows in one call (one forward pass per net, no loop over positions).  ``net`` is a
``torch.nn.ModuleDict`` of every net of the set (labelled by class, ``"fallback"`` for the
fallback), so weights travel as one state dict (Ray self-play actors).

Checkpoints: :meth:`NetSet.state` is the ``evaluator`` entry of a checkpoint, marked
``"kind": "netset"`` with :data:`NETSET_FORMAT`, the variant, the class names and
:data:`~nardy_ai.classes.CLASSES_VERSION`, each member's state and the fallback's.
:func:`nardy_ai.evaluator.evaluator_from_state` (and so
:func:`nardy_ai.evaluator.load_evaluator` and ``td:`` agents) returns a net set for such a
state and a single net for a single net's.
"""

from __future__ import annotations

from typing import Union

import numpy as np
import torch
from torch import nn

from .bearoff import BearoffEvaluator
from .classes import CLASSES_VERSION, class_names, position_classes
from .errors import NardyError
from .model import CheckpointError, NeuralEvaluator, equity, n_outputs
from .variants import Variant, get_variant, variant_options, with_options

#: The version of the net-set checkpoint layout (:meth:`NetSet.state`).
NETSET_FORMAT = 1
#: The label of the fallback net (class members are labelled by their class name).
FALLBACK = "fallback"


class NetSetError(NardyError):
    """A net set that cannot be built: an unknown class, a member of another variant, a
    database for a class it cannot value, no fallback where one is needed."""


Member = Union[NeuralEvaluator, BearoffEvaluator]


class NetSet:
    """Evaluators per position class with a fallback net (module docstring).

    ``members`` maps class names of the variant's family to a :class:`NeuralEvaluator` or
    (``bearoff`` only) a :class:`BearoffEvaluator`; ``fallback`` values the other classes (it
    is dropped when every class has a member).
    """

    def __init__(self, variant: str | Variant, members: dict[str, Member] | None = None,
                 fallback: NeuralEvaluator | None = None):
        self.variant = v = get_variant(variant)
        self.classes = class_names(v)
        members = dict(members or {})
        for name, m in members.items():
            if name not in self.classes:
                raise NetSetError(f"members.{name}: unknown class {name!r} for {v.id} "
                                  f"(classes: {', '.join(self.classes)})")
            if isinstance(m, BearoffEvaluator):
                if name != "bearoff":
                    raise NetSetError(f"members.{name}: the bear-off database values the bearoff "
                                      f"class only")
            elif not isinstance(m, NeuralEvaluator):
                raise NetSetError(f"members.{name}: not an evaluator ({type(m).__name__})")
            if m.variant.id != v.id:
                raise NetSetError(f"members.{name}: a member for {m.variant.id}, not {v.id}")
        if fallback is not None and fallback.variant.id != v.id:
            raise NetSetError(f"fallback: a net for {fallback.variant.id}, not {v.id}")
        uncovered = [c for c in self.classes if c not in members]
        if uncovered and fallback is None:
            raise NetSetError(f"fallback: required for the classes without a member "
                              f"({', '.join(uncovered)})")
        # Members in class order, so that the set's state and nets are in a fixed order.
        self.members: dict[str, Member] = {c: members[c] for c in self.classes if c in members}
        self.fallback = fallback if uncovered else None
        self._class_ids = {c: i for i, c in enumerate(self.classes)}
        self.net = nn.ModuleDict({label: ev.net for label, ev in self.nets().items()})

    @classmethod
    def create(cls, variant: str | Variant, members: dict[str, dict | str] | None = None,
               fallback: dict | None = None, seed: int | None = None,
               device: str | torch.device | None = None) -> "NetSet":
        """A freshly initialised set: ``members`` maps class names to ``"database"`` or the
        keyword arguments of :meth:`NeuralEvaluator.create` (``encoder``, ``hidden``,
        ``activation``); ``fallback`` likewise (None: no fallback).  Nets are initialised in
        class order, then the fallback, from ``seed``."""
        v = get_variant(variant)
        names = class_names(v)
        if seed is not None:
            torch.manual_seed(seed)
        built: dict[str, Member] = {}
        for name in sorted(members or {}, key=lambda c: names.index(c) if c in names else len(names)):
            spec = members[name]
            built[name] = (BearoffEvaluator(v) if spec == "database"
                           else NeuralEvaluator.create(v, device=device, **spec))
        fb = NeuralEvaluator.create(v, device=device, **fallback) if fallback is not None else None
        return cls(v, built, fb)

    # --- the members ----------------------------------------------------------------

    def nets(self) -> dict[str, NeuralEvaluator]:
        """Every net of the set by label (class name, or :data:`FALLBACK`), in class order."""
        out = {c: m for c, m in self.members.items() if isinstance(m, NeuralEvaluator)}
        if self.fallback is not None:
            out[FALLBACK] = self.fallback
        return out

    def member_for(self, class_name: str) -> Member:
        """The evaluator that values positions of class ``class_name``."""
        return self.members.get(class_name, self.fallback)

    @property
    def device(self) -> torch.device:
        nets = list(self.nets().values())
        return nets[0].device if nets else torch.device("cpu")

    def classify(self, boards: np.ndarray) -> np.ndarray:
        """Class ids ``(M,)`` of afterstates (indices into ``self.classes``)."""
        return position_classes(np.asarray(boards), self.variant)

    def route(self, boards: np.ndarray, classes: np.ndarray | None = None
              ) -> list[tuple[str, Member, np.ndarray]]:
        """The batch split among the members: ``(label, member, rows)`` for every member
        with rows in the batch (rows ascending; label: a class name or :data:`FALLBACK`).
        A set with only a fallback gives it every row without classifying."""
        n = len(boards)
        if not self.members:
            return [(FALLBACK, self.fallback, np.arange(n))] if n else []
        ids = self.classify(boards) if classes is None else classes
        out = []
        for name, member in self.members.items():
            rows = np.flatnonzero(ids == self._class_ids[name])
            if len(rows):
                out.append((name, member, rows))
        if self.fallback is not None:
            own = np.array([self._class_ids[c] for c in self.members], np.int8)
            rows = np.flatnonzero(~np.isin(ids, own))
            if len(rows):
                out.append((FALLBACK, self.fallback, rows))
        return out

    # --- evaluation -----------------------------------------------------------------

    def probabilities(self, boards: np.ndarray) -> np.ndarray:
        """Outcome probabilities ``(M, n_outputs)`` float32 of afterstates (mover's view),
        each row from the member of its class."""
        boards = np.asarray(boards)
        if not self.members:
            return self.fallback.probabilities(boards)
        out = np.empty((len(boards), n_outputs(self.variant)), np.float32)
        for _, member, rows in self.route(boards):
            out[rows] = member.probabilities(boards[rows])
        return out

    def equity(self, boards: np.ndarray) -> np.ndarray:
        """Cubeless equity (points per game) of afterstates for the player who moved."""
        return equity(self.probabilities(boards), self.variant)

    def describe(self) -> list[str]:
        """One line per member (and the fallback) saying what it is, for model cards."""
        def net_text(ev: NeuralEvaluator) -> str:
            return (f"MLP {list(ev.hidden)} {ev.activation}, encoder `{ev.encoder.name}` "
                    f"v{ev.encoder.version} ({ev.encoder.n_features} inputs)")
        lines = []
        for c in self.classes:
            m = self.members.get(c)
            what = ("the one-sided bear-off database (exact)" if isinstance(m, BearoffEvaluator)
                    else net_text(m) if m is not None else "the fallback net")
            lines.append(f"{c}: {what}")
        if self.fallback is not None:
            lines.append(f"{FALLBACK}: {net_text(self.fallback)}")
        return lines

    # --- checkpoints ----------------------------------------------------------------

    def state(self) -> dict:
        """What a checkpoint stores about the set (plain types and tensors only)."""
        v = self.variant
        return {
            "kind": "netset", "netset_format": NETSET_FORMAT,
            "variant": v.id, "variant_version": v.version, "options": variant_options(v),
            "classes": list(self.classes), "classes_version": CLASSES_VERSION,
            "members": {c: m.state() for c, m in self.members.items()},
            "fallback": self.fallback.state() if self.fallback is not None else None,
        }

    @classmethod
    def from_state(cls, state: dict, variant=None, device=None) -> "NetSet":
        """Rebuild from :meth:`state`, refusing another variant, another version of the
        class definitions or of the layout, and members that do not fit (errors name the
        field)."""
        def field(key):
            if key not in state:
                raise CheckpointError(f"net set checkpoint is malformed: field {key!r} is missing")
            return state[key]

        if not isinstance(state, dict):
            raise CheckpointError("net set checkpoint is malformed: the evaluator is not a table")
        if field("netset_format") != NETSET_FORMAT:
            raise CheckpointError(f"netset_format: the checkpoint has net set format "
                                  f"{state['netset_format']!r}, this code reads {NETSET_FORMAT}")
        vid = field("variant")
        try:
            v = with_options(vid, **(field("options") or {}))
        except (NardyError, TypeError) as e:
            raise CheckpointError(f"variant: {e}") from None
        if variant is not None and get_variant(variant).id != v.id:
            raise CheckpointError(f"variant: checkpoint is for variant {vid!r}, not {get_variant(variant).id!r}")
        if field("variant_version") != v.version:
            raise CheckpointError(f"variant_version: checkpoint is for {vid} rules version "
                                  f"{state['variant_version']}, this engine has version {v.version}")
        if field("classes_version") != CLASSES_VERSION:
            raise CheckpointError(f"classes_version: checkpoint uses position classes version "
                                  f"{state['classes_version']!r}, this code has version {CLASSES_VERSION}")
        names = class_names(v)
        if field("classes") != list(names):
            raise CheckpointError(f"classes: checkpoint has classes {state['classes']!r}, "
                                  f"{v.id} has {list(names)}")
        members_state = field("members")
        if not isinstance(members_state, dict):
            raise CheckpointError("members: must be a table of class name -> member")
        members: dict[str, Member] = {}
        for name, ms in members_state.items():
            if name not in names:
                raise CheckpointError(f"members.{name}: unknown class {name!r} for {v.id} "
                                      f"(classes: {', '.join(names)})")
            members[name] = _member_from_state(ms, v, device, f"members.{name}")
        fb_state = field("fallback")
        fallback = None if fb_state is None else _net_from_state(fb_state, v, device, FALLBACK)
        try:
            return cls(v, members, fallback)
        except NetSetError as e:
            raise CheckpointError(str(e)) from None


def _net_from_state(state, variant: Variant, device, where: str) -> NeuralEvaluator:
    if not isinstance(state, dict) or state.get("kind") is not None:
        raise CheckpointError(f"{where}: not the state of a single net")
    try:
        return NeuralEvaluator.from_state(state, variant, device)
    except NardyError as e:             # CheckpointError, UnknownEncoder, UnknownVariant
        raise CheckpointError(f"{where}: {e}") from None


def _member_from_state(state, variant: Variant, device, where: str) -> Member:
    if isinstance(state, dict) and state.get("kind") == "database":
        if state.get("database") != "bearoff":
            raise CheckpointError(f"{where}.database: unknown database {state.get('database')!r} "
                                  f"(known: bearoff)")
        if where != "members.bearoff":
            raise CheckpointError(f"{where}: the bear-off database values the bearoff class only")
        return BearoffEvaluator(variant)
    return _net_from_state(state, variant, device, where)


def as_netset(evaluator: NeuralEvaluator | NetSet) -> NetSet:
    """A net set of ``evaluator``: itself, or a single net as a set with only a fallback."""
    return evaluator if isinstance(evaluator, NetSet) else NetSet(evaluator.variant, {}, evaluator)


#: How a net of one variant's result levels starts a sibling variant with more levels (issue
#: #15): for each level of the target (2 and up), the source level whose output rows it takes.
#: Backgammon's levels are single / gammon (the loser bore off none) / backgammon; trictrac's
#: (BG-TT) are 1 / 2 (bore off none) / 4 (moreover not all home: most gammons) / 8 (moreover a
#: checker on the bar: rarer than a backgammon).
LEVEL_MAPS = {((1, 2, 3), (1, 2, 4, 8)): {2: 2, 3: 2, 4: 3}}


def _map_outputs(member: dict, src: Variant, dst: Variant) -> dict:
    """A single net's state with its output layer's rows laid out for ``dst``'s levels."""
    level_map = LEVEL_MAPS.get((tuple(src.scoring), tuple(dst.scoring)))
    if level_map is None:
        raise CheckpointError(f"variant: no level map from {src.id}'s levels {tuple(src.scoring)} to "
                              f"{dst.id}'s {tuple(dst.scoring)}")
    Ls, Ld = len(src.scoring), len(dst.scoring)
    rows = [0] + [level_map[k] - 1 for k in range(2, Ld + 1)] + [Ls - 1 + level_map[k] - 1 for k in range(2, Ld + 1)]
    weights = dict(member["weights"])
    last = max((k for k in weights if k.endswith(".weight")), key=lambda k: int(k.split(".")[1]))
    bias = last[:-len("weight")] + "bias"
    weights[last] = weights[last][rows].clone()
    weights[bias] = weights[bias][rows].clone()
    return dict(member, weights=weights)


def adopt_state(state: dict, variant) -> dict:
    """An evaluator's state (single net or net set) relabelled for ``variant``, another variant
    of the same family (a backgammon net for short_caucasian or short_trictrac, issue #15): the
    starting point of the variant's own training.  Hidden layers unchanged; with the same
    outputs the net values exactly as before, with more result levels its output rows are
    copied by :data:`LEVEL_MAPS`.  Raises :class:`~nardy_ai.model.CheckpointError` for another
    family or levels without a map."""
    from .model import n_outputs
    v = get_variant(variant)
    try:
        src = with_options(state["variant"], **state.get("options", {}))
    except (KeyError, TypeError, NardyError) as e:
        raise CheckpointError(f"variant: cannot read the checkpoint's variant ({e})") from None
    if src.family != v.family:
        raise CheckpointError(f"variant: a {src.id} net cannot start a {v.id} one ({src.family} family, "
                              f"not {v.family})")
    remap = n_outputs(src) != n_outputs(v)
    if remap and (tuple(src.scoring), tuple(v.scoring)) not in LEVEL_MAPS:
        raise CheckpointError(f"variant: a {src.id} net ({n_outputs(src)} outputs) cannot start a {v.id} one "
                              f"({n_outputs(v)} outputs): no level map")

    def relabel(member):
        if not isinstance(member, dict) or "variant" not in member:
            return member
        out = dict(member, variant=v.id, variant_version=v.version, options={})
        return _map_outputs(out, src, v) if remap and "weights" in out else out

    out = relabel(state)
    if state.get("kind") == "netset":
        out["members"] = {c: relabel(m) for c, m in state["members"].items()}
        out["fallback"] = relabel(state.get("fallback"))
    return out
