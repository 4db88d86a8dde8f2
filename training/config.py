"""The training configuration: a TOML file, validated against this schema.

Every key is declared here with its type and default; an unknown section or key, or a value
of the wrong type, is an error naming it (``td.lamda: unknown key``).  A run is reproducible
from its config file and seed; the trainer copies the file into the run folder.

Example (``experiments/backgammon_td80.toml``)::

    variant = "backgammon"
    seed = 1
    [model]
    hidden = [80]
    [selfplay]
    total_games = 200000

Net sets (:mod:`nardy_ai.netset`): ``[model.classes.<class>]`` gives a position class of the
variant's family (:mod:`nardy_ai.classes`: contact, crashed, race, bearoff; long nardy
contact, race, bearoff) its own member: a net (``kind = "net"``, the default, with its own
``encoder``, ``hidden`` and ``activation``; each left out takes the ``[model]`` value) or,
for ``bearoff`` only, the exact bear-off database (``kind = "database"``).  The ``[model]``
net is then the fallback for the classes without a member (none is made when every class has
one); ``model.init_from`` starts every net of the set from a checkpoint (see ``Trainer``)::

    [model.classes.race]
    encoder = "expert"
    hidden = [64]
    [model.classes.bearoff]
    kind = "database"

Without ``[model.classes]`` the run trains one net, as before.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import asdict, dataclass, field, fields

from nardy_ai.errors import NardyError
from nardy_ai.files import read_at_most


class ConfigError(NardyError):
    """A config file that cannot be read or breaks the schema."""


@dataclass
class ClassConfig:
    """One position class's member of a net set (``[model.classes.<class>]``)."""
    kind: str = "net"               # net | database (the bear-off database: class bearoff only)
    encoder: str = ""               # "" = [model] encoder
    hidden: list[int] = field(default_factory=list)     # [] = [model] hidden
    activation: str = ""            # "" = [model] activation


@dataclass
class ModelConfig:
    encoder: str = ""               # "" = the variant family's default (tdgammon / long)
    hidden: list[int] = field(default_factory=lambda: [80])
    activation: str = "sigmoid"
    init_from: str = ""             # a checkpoint whose weights start the run ("" = random init)
    classes: dict[str, ClassConfig] = field(default_factory=dict)   # class name -> member (net sets)


@dataclass
class TDConfig:
    lambda_: float = 0.7            # TOML key "lambda"
    optimizer: str = "adam"         # adam | sgd
    learning_rate: float = 3e-3
    lr_halflife_games: int = 0      # > 0: the learning rate halves every this many games (0 = constant)
    learning_rate_min: float = 0.0  # floor of the decaying learning rate
    momentum: float = 0.0           # sgd only
    batch_size: int = 64            # positions per gradient step
    update_games: int = 64          # finished games whose lambda-returns make one update
    epochs: int = 1                 # passes over each update's positions
    loss: str = "mse"               # mse | bce


@dataclass
class SelfPlayConfig:
    parallel_games: int = 512       # games played in lockstep
    total_games: int = 100000
    epsilon: float = 0.0            # probability of a uniformly random play (exploration)
    temperature: float = 0.0        # > 0: softmax over equity (points) instead of greedy


@dataclass
class RunConfig:
    checkpoint_every: int = 5000    # games
    eval_every: int = 5000          # games; 0 = never
    eval_games: int = 400           # per opponent, seats alternating, fixed dice seed
    eval_opponents: list[str] = field(default_factory=lambda: ["random", "heuristic"])
    log_every: int = 1000           # games between training-scalar log lines
    threads: int = 1                # torch CPU threads (0 = torch's default); one is as fast here
    device: str = "auto"            # auto | cpu | cuda


@dataclass
class RayConfig:
    """How self-play runs with ``nardy train --backend ray`` (ignored by the local backend)."""
    actors: int = 0                 # self-play actors (0 = one per CPU of the cluster)
    weights_every: int = 1          # learner updates between weight publications to the actors
    parallel_games: int = 0         # games in lockstep per actor (0 = selfplay.parallel_games)
    games_per_call: int = 0         # finished games an actor returns per batch (0 = td.update_games)


@dataclass
class MethodConfig:
    """How ``nardy train`` trains: ``td`` (TD(lambda) self-play, training/td.py; the default),
    ``search_targets`` (generations of sample, label, fit, gate: training/search_targets.py,
    which reads the ``[sample]``, ``[label]``, ``[fit]`` and ``[gate]`` sections) or
    ``distill`` (rounds of sample, rivals, label, fit, gate, each student the next round's
    teacher: training/distill.py, which reads the ``[[rounds]]`` tables)."""
    kind: str = "td"                # td | search_targets | distill
    generations: int = 10           # search_targets: generations to run (a resumed run may raise it)


@dataclass
class SampleConfig:
    """search_targets: the afterstates of a generation, from self-play of the current evaluator."""
    positions: int = 200000         # distinct afterstates per generation, split by the quotas
    quotas: dict[str, float] = field(default_factory=dict)   # class -> share ({} = the fitted classes, equally)
    parallel_games: int = 512       # self-play games in lockstep
    epsilon: float = 0.05           # probability of a uniformly random play (exploration)
    temperature: float = 0.0        # > 0: softmax over equity (points) instead of greedy
    keep: float = 0.25              # probability that a played afterstate is a candidate
    max_games: int = 0              # stop after this many games with quotas short (0 = positions)
    oversample: float = 1.0         # > 1: draw this times each quota, keep the most 0-/1-ply disagreeing
    candidates: int = 1             # > 1: each sample is a decision: its best plays at 0 ply (up to this many)
    candidate_threshold: float = 0.1    # candidates: within this equity (points) of the 0-ply best


@dataclass
class LabelConfig:
    """search_targets: how the frozen current evaluator labels the sampled afterstates."""
    kind: str = "search"            # search (n-ply expectimax) | rollout (truncated rollouts)
    plies: int = 1                  # search: depth of the labels (1 or 2)
    two_ply_fraction: float = 0.0   # search at 1 ply: this share of the rows (seeded) at 2 plies
    rollout_games: int = 36         # rollout: games per afterstate
    rollout_truncate: int = 7       # rollout: plies before the evaluator scores a game
    chunk: int = 10000              # afterstates per chunk (one task, one file)


@dataclass
class FitConfig:
    """search_targets: fitting the next evaluator to the labels (BCE on soft targets, Adam)."""
    learning_rate: float = 1e-3
    batch_size: int = 256
    max_epochs: int = 30
    patience: int = 3               # epochs without a better validation loss before stopping
    lr_halvings: int = 0            # on such a plateau: back to the best weights, half the step, this many times
    validation: float = 0.1         # share of each net's afterstates held out
    history: int = 0                # earlier generations of the run whose labels join the fit


@dataclass
class GateConfig:
    """search_targets: the candidate against the current evaluator before it becomes current."""
    games: int = 2000               # duplicate-dice games at 0 ply (rounded up to even)
    threshold: float = 0.0          # promoted when its points per game are >= this


@dataclass
class RoundSampleConfig:
    """distill: a round's afterstates, fresh self-play of the teacher at 0 ply."""
    positions: int = 100000         # distinct afterstates drawn (before the rivals)
    quotas: dict[str, float] = field(default_factory=dict)   # class -> share ({} = the fitted nets' classes, equally)
    parallel_games: int = 512       # self-play games in lockstep per task
    epsilon: float = 0.05           # probability of a uniformly random play (exploration)
    temperature: float = 0.0        # > 0: softmax over equity (points) instead of greedy
    keep: float = 0.5               # probability that a played afterstate is a candidate
    part: int = 50000               # afterstates per self-play task (one task, one file)
    decisions: int = 0              # sampled afterstates turned into decisions whose rivals join (0 = none)
    candidates: int = 5             # rivals: the best this many plays at 0 ply of each decision
    candidate_threshold: float = 0.1    # rivals: within this equity (points) of the 0-ply best


@dataclass
class RoundLabelConfig:
    """distill: the teacher's labels of the round's afterstates."""
    plies: int = 1                  # n-ply expectimax (1 or 2)
    chunk: int = 10000              # afterstates per chunk (one task, one file)
    two_ply: str = ""               # "decisions": the decisions and their rivals at 2 plies, the rest at 1
    decision_plies: int = 2         # with two_ply = "decisions": the plies of those rows (2, or 3: 20-30x the CPU)


@dataclass
class RoundFitConfig:
    """distill: which nets of the teacher the student refits, and how."""
    nets: list[str] = field(default_factory=list)        # classes whose nets are refitted ([] = all fitted ones)
    hidden: list[int] = field(default_factory=list)      # new nets' hidden layers ([] = the teacher's: warm start)
    activation: str = ""            # new nets' activation ("" = the teacher net's)
    warm_nets: list[str] = field(default_factory=list)   # of nets: fine-tuned at their own size
    grow_nets: list[str] = field(default_factory=list)   # of nets: the teacher's net widened to fit.hidden
    learning_rate: float = 1e-3     # new and grown nets
    warm_learning_rate: float = 2e-4    # warm-started nets
    batch_size: int = 512
    max_epochs: int = 60
    patience: int = 4               # epochs without a better validation loss before stopping (or halving)
    lr_halvings: int = 0            # on a plateau: back to the best weights, half the step, this many times
    validation: float = 0.02        # share of each net's afterstates held out
    history: int = 0                # earlier rounds of the run whose labelled rows join the fit
    rank_weight: float = 0.0        # > 0: + this times the ranking loss among each decision's plays


@dataclass
class RoundConfig:
    """distill: one round (``[[rounds]]``): the student of this round teaches the next."""
    name: str = ""
    sample: RoundSampleConfig = field(default_factory=RoundSampleConfig)
    label: RoundLabelConfig = field(default_factory=RoundLabelConfig)
    fit: RoundFitConfig = field(default_factory=RoundFitConfig)
    gate: GateConfig = field(default_factory=GateConfig)


@dataclass
class TrainConfig:
    variant: str = ""
    seed: int = 0
    name: str = ""
    model: ModelConfig = field(default_factory=ModelConfig)
    td: TDConfig = field(default_factory=TDConfig)
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    run: RunConfig = field(default_factory=RunConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    method: MethodConfig = field(default_factory=MethodConfig)
    sample: SampleConfig = field(default_factory=SampleConfig)
    label: LabelConfig = field(default_factory=LabelConfig)
    fit: FitConfig = field(default_factory=FitConfig)
    gate: GateConfig = field(default_factory=GateConfig)
    rounds: list[RoundConfig] = field(default_factory=list)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["td"]["lambda"] = d["td"].pop("lambda_")
        return d


_SECTIONS = {"model": ModelConfig, "td": TDConfig, "selfplay": SelfPlayConfig, "run": RunConfig,
             "ray": RayConfig, "method": MethodConfig, "sample": SampleConfig, "label": LabelConfig,
             "fit": FitConfig, "gate": GateConfig}
#: Keys whose value is a table of named sections of one schema.
_SECTION_MAPS = {"classes": ClassConfig}
#: Keys whose value is an array of tables (``[[rounds]]``) of one schema.
_SECTION_LISTS = {"rounds": RoundConfig}
#: Sub-sections of a round (``[rounds.sample]`` ...).
_ROUND_SECTIONS = {"sample": RoundSampleConfig, "label": RoundLabelConfig, "fit": RoundFitConfig,
                   "gate": GateConfig}
#: The keys of a schema whose value is a ``[section]`` of another schema.
_SECTIONS_OF = {TrainConfig: _SECTIONS, RoundConfig: _ROUND_SECTIONS}


def _key(f) -> str:
    return "lambda" if f.name == "lambda_" else f.name


#: Every integer of the schema is a count, a size or a seed: 0 <= n <= MAX_INT (exact in a
#: float, far beyond any run); keys with a tighter range say so in ``_validate``.
MAX_INT = 2 ** 53
#: Largest hidden layer and most hidden layers of a net (beyond them torch cannot allocate
#: the net on any machine we train on).
MAX_HIDDEN, MAX_LAYERS = 8192, 16
#: Most games in lockstep (self-play, an update's games, an actor's batch): memory grows with it.
MAX_LOCKSTEP = 65536
#: Longest config file read (a config is a few hundred bytes; /dev/zero is endless).
MAX_CONFIG_BYTES = 2 ** 20


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


#: The rules of each value type of the schema, in order: (what a value must be, its test);
#: the first rule a value breaks is the error (``td.epochs: must be an integer, got 'x'``).
_TYPE_RULES = {
    "int": (("an integer", _is_int), ("an integer from 0 to 2**53", lambda v: 0 <= v <= MAX_INT)),
    "float": (("a number", _is_number), ("a finite number", math.isfinite)),
    "str": (("a string", lambda v: isinstance(v, str)),),
    "bool": (("true or false", lambda v: isinstance(v, bool)),),
    "list[int]": (("a list of integers", lambda v: isinstance(v, list) and all(map(_is_int, v))),
                  ("a list of integers from 0 to 2**53", lambda v: all(0 <= x <= MAX_INT for x in v))),
    "list[str]": (("a list of strings", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v)),),
}


def _check(value, annotation: str, where: str):
    """``value`` of the key ``where`` checked against its type ``annotation`` (a
    :class:`ConfigError` naming the key and the first rule it breaks); numbers as floats."""
    if annotation == "dict[str, float]":
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: must be a table of numbers, e.g. {{contact = 0.6, race = 0.4}}")
        return {k: _check(x, "float", f"{where}.{k}") for k, x in value.items()}
    for what, ok in _TYPE_RULES.get(annotation, ()):
        if not ok(value):
            raise ConfigError(f"{where}: must be {what}, got {value!r}")
    return float(value) if annotation == "float" else value


def _fill(cls, data: dict, prefix: str):
    known = {_key(f): f for f in fields(cls)}
    sections = _SECTIONS_OF.get(cls, {})
    values = {}
    for key, value in data.items():
        where = f"{prefix}{key}"
        if key not in known:
            raise ConfigError(f"{where}: unknown key (known: {', '.join(known)})")
        f = known[key]
        if f.name in sections:
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: must be a [section]")
            values[f.name] = _fill(sections[f.name], value, f"{where}.")
        elif f.name in _SECTION_LISTS:
            if not isinstance(value, list) or any(not isinstance(v, dict) for v in value):
                raise ConfigError(f"{where}: must be [[{where}]] tables")
            values[f.name] = [_fill(_SECTION_LISTS[f.name], sub, f"{where}[{i + 1}].")
                              for i, sub in enumerate(value)]
        elif f.name in _SECTION_MAPS:
            if not isinstance(value, dict) or any(not isinstance(v, dict) for v in value.values()):
                raise ConfigError(f"{where}: must be [{where}.<name>] sections")
            values[f.name] = {name: _fill(_SECTION_MAPS[f.name], sub, f"{where}.{name}.")
                              for name, sub in value.items()}
        else:
            values[f.name] = _check(value, f.type, where)
    return cls(**values)


def _validate(cfg: TrainConfig) -> None:
    big_class = next((name for name, c in cfg.model.classes.items()
                      if len(c.hidden) > MAX_LAYERS or any(h > MAX_HIDDEN for h in c.hidden)), None)
    checks = [
        (cfg.td.optimizer in ("adam", "sgd"), "td.optimizer: must be adam or sgd"),
        (cfg.td.loss in ("mse", "bce"), "td.loss: must be mse or bce"),
        (0.0 <= cfg.td.lambda_ <= 1.0, "td.lambda: must be between 0 and 1"),
        (cfg.td.learning_rate > 0, "td.learning_rate: must be positive"),
        (cfg.td.lr_halflife_games >= 0, "td.lr_halflife_games: must be >= 0 (0 = constant)"),
        (0 <= cfg.td.learning_rate_min <= cfg.td.learning_rate,
         "td.learning_rate_min: must be between 0 and td.learning_rate"),
        (cfg.td.batch_size > 0, "td.batch_size: must be positive"),
        (cfg.td.update_games > 0, "td.update_games: must be positive"),
        (cfg.td.epochs > 0, "td.epochs: must be positive"),
        (cfg.selfplay.parallel_games > 0, "selfplay.parallel_games: must be positive"),
        (cfg.selfplay.total_games > 0, "selfplay.total_games: must be positive"),
        (0.0 <= cfg.selfplay.epsilon <= 1.0, "selfplay.epsilon: must be between 0 and 1"),
        (cfg.selfplay.temperature >= 0, "selfplay.temperature: must be >= 0"),
        (cfg.run.checkpoint_every > 0, "run.checkpoint_every: must be positive"),
        (cfg.run.eval_every >= 0, "run.eval_every: must be >= 0"),
        (cfg.run.eval_games >= 2, "run.eval_games: must be at least 2"),
        (cfg.run.log_every > 0, "run.log_every: must be positive"),
        (cfg.run.device in ("auto", "cpu", "cuda"), "run.device: must be auto, cpu or cuda"),
        (all(h > 0 for h in cfg.model.hidden), "model.hidden: sizes must be positive"),
        (cfg.ray.actors >= 0, "ray.actors: must be >= 0 (0 = one per CPU of the cluster)"),
        (cfg.ray.weights_every > 0, "ray.weights_every: must be positive"),
        (cfg.ray.parallel_games >= 0, "ray.parallel_games: must be >= 0"),
        (cfg.ray.games_per_call >= 0, "ray.games_per_call: must be >= 0"),
        # Upper bounds: beyond them a run cannot allocate its games or its net.
        (len(cfg.model.hidden) <= MAX_LAYERS and all(h <= MAX_HIDDEN for h in cfg.model.hidden),
         f"model.hidden: at most {MAX_LAYERS} layers of at most {MAX_HIDDEN} units"),
        (big_class is None, f"model.classes.{big_class}.hidden: at most {MAX_LAYERS} layers of at most "
                            f"{MAX_HIDDEN} units"),
        (cfg.selfplay.parallel_games <= MAX_LOCKSTEP, f"selfplay.parallel_games: at most {MAX_LOCKSTEP}"),
        (cfg.ray.parallel_games <= MAX_LOCKSTEP, f"ray.parallel_games: at most {MAX_LOCKSTEP}"),
        (cfg.td.update_games <= MAX_LOCKSTEP, f"td.update_games: at most {MAX_LOCKSTEP}"),
        (cfg.ray.games_per_call <= MAX_LOCKSTEP, f"ray.games_per_call: at most {MAX_LOCKSTEP}"),
        (cfg.td.epochs <= 1000, "td.epochs: at most 1000"),
        (cfg.run.eval_games <= 100_000, "run.eval_games: at most 100000"),
        (cfg.run.threads <= 1024, "run.threads: at most 1024 (0 = torch's default)"),
        (cfg.ray.actors <= 4096, "ray.actors: at most 4096"),
    ]
    _first_failing(checks)
    for name, c in cfg.model.classes.items():
        where = f"model.classes.{name}"
        if c.kind not in ("net", "database"):
            raise ConfigError(f"{where}.kind: must be net or database, got {c.kind!r}")
        if c.kind == "database":
            if name != "bearoff":
                raise ConfigError(f"{where}.kind: the database values the bearoff class only")
            for key in ("encoder", "hidden", "activation"):
                if getattr(c, key):
                    raise ConfigError(f"{where}.{key}: a database member has no {key}")
        if any(h <= 0 for h in c.hidden):
            raise ConfigError(f"{where}.hidden: sizes must be positive")
    if cfg.variant and cfg.model.classes:
        check_classes(cfg, cfg.variant)
    _validate_search_targets(cfg)
    _validate_rounds(cfg)


def _first_failing(checks: list[tuple[bool, str]], prefix: str = "") -> None:
    """A :class:`ConfigError` ``prefix + message`` of the first check that fails."""
    for ok, msg in checks:
        if not ok:
            raise ConfigError(prefix + msg)


def _shared_checks(s, lb, ft, gt) -> dict[str, tuple[bool, str]]:
    """The checks that [sample], [label], [fit], [gate] (search targets) and each [[rounds]]
    table (distillation) share, by name: ``(ok, "key: message")``."""
    return {
        "positions": (1 <= s.positions <= 10 ** 8, "sample.positions: must be 1 to 100000000"),
        "quotas": (all(x >= 0 for x in s.quotas.values()), "sample.quotas: shares must be >= 0"),
        "quota_sum": (not s.quotas or sum(s.quotas.values()) > 0, "sample.quotas: at least one share must be positive"),
        "parallel_games": (1 <= s.parallel_games <= MAX_LOCKSTEP, f"sample.parallel_games: must be 1 to {MAX_LOCKSTEP}"),
        "epsilon": (0.0 <= s.epsilon <= 1.0, "sample.epsilon: must be between 0 and 1"),
        "temperature": (s.temperature >= 0, "sample.temperature: must be >= 0"),
        "keep": (0.0 < s.keep <= 1.0, "sample.keep: must be above 0 and at most 1"),
        "candidate_threshold": (0.0 <= s.candidate_threshold <= 10.0, "sample.candidate_threshold: must be 0 to 10 points"),
        "plies": (1 <= lb.plies <= 2, "label.plies: must be 1 or 2"),
        "chunk": (1 <= lb.chunk <= 10 ** 6, "label.chunk: must be 1 to 1000000"),
        "learning_rate": (ft.learning_rate > 0, "fit.learning_rate: must be positive"),
        "batch_size": (1 <= ft.batch_size <= MAX_LOCKSTEP, f"fit.batch_size: must be 1 to {MAX_LOCKSTEP}"),
        "max_epochs": (1 <= ft.max_epochs <= 10_000, "fit.max_epochs: must be 1 to 10000"),
        "patience": (ft.patience >= 1, "fit.patience: must be at least 1"),
        "lr_halvings": (0 <= ft.lr_halvings <= 20, "fit.lr_halvings: must be 0 to 20"),
        "validation": (0.0 < ft.validation <= 0.5, "fit.validation: must be above 0 and at most 0.5"),
        "games": (2 <= gt.games <= 10 ** 6, "gate.games: must be 2 to 1000000"),
        "threshold": (-3.0 <= gt.threshold <= 3.0, "gate.threshold: must be -3 to 3 points per game"),
    }


_SAMPLE = ("positions", "quotas", "quota_sum", "parallel_games", "epsilon", "temperature", "keep")
_FIT = ("batch_size", "max_epochs", "patience", "lr_halvings", "validation")


def _validate_rounds(cfg: TrainConfig) -> None:
    """The ``[[rounds]]`` tables of ``[method] kind = "distill"`` (errors name ``rounds[i].key``)."""
    if cfg.method.kind == "distill" and not cfg.rounds:
        raise ConfigError('rounds: [method] kind = "distill" needs at least one [[rounds]] table')
    if cfg.method.kind != "distill" and cfg.rounds:
        raise ConfigError('rounds: [[rounds]] tables are for [method] kind = "distill"')
    for i, r in enumerate(cfg.rounds):
        w = f"rounds[{i + 1}]"
        s, lb, ft, gt = r.sample, r.label, r.fit, r.gate
        c = _shared_checks(s, lb, ft, gt)
        _first_failing([
            *(c[k] for k in _SAMPLE),
            (1 <= s.part <= 10 ** 7, "sample.part: must be 1 to 10000000"),
            (s.decisions <= s.positions, "sample.decisions: at most sample.positions"),
            (2 <= s.candidates <= 64, "sample.candidates: must be 2 to 64"),
            c["candidate_threshold"], c["plies"], c["chunk"],
            (lb.two_ply in ("", "decisions"), f'label.two_ply: must be "" or "decisions", got {lb.two_ply!r}'),
            (not lb.two_ply or lb.plies == 1, "label.two_ply: only with label.plies = 1"),
            (not lb.two_ply or s.decisions > 0, "label.two_ply: needs sample.decisions > 0 (the rows it deepens)"),
            (lb.decision_plies in (2, 3), f"label.decision_plies: must be 2 or 3, got {lb.decision_plies!r}"),
            (lb.decision_plies == 2 or lb.two_ply == "decisions",
             'label.decision_plies: only with label.two_ply = "decisions" (the rows it searches)'),
            (len(ft.hidden) <= MAX_LAYERS and all(0 < h <= MAX_HIDDEN for h in ft.hidden),
             f"fit.hidden: at most {MAX_LAYERS} layers of 1 to {MAX_HIDDEN} units"),
            (set(ft.warm_nets) <= set(ft.nets) or not ft.nets, "fit.warm_nets: every net named must be in fit.nets"),
            (set(ft.grow_nets) <= set(ft.nets) or not ft.nets, "fit.grow_nets: every net named must be in fit.nets"),
            (not set(ft.grow_nets) & set(ft.warm_nets), "fit.grow_nets: a net is grown or warm-started, not both"),
            (bool(ft.hidden) or not ft.grow_nets, "fit.grow_nets: needs fit.hidden, the size the nets grow to"),
            (0 <= ft.history <= i, f"fit.history: must be 0 to {i} (the rounds before round {i + 1})"),
            (0.0 <= ft.rank_weight <= 1000.0, "fit.rank_weight: must be 0 to 1000"),
            (ft.rank_weight == 0 or s.decisions > 0,
             "fit.rank_weight: needs sample.decisions > 0 (the decisions whose plays it ranks)"),
            c["learning_rate"],
            (ft.warm_learning_rate > 0, "fit.warm_learning_rate: must be positive"),
            *(c[k] for k in _FIT), c["games"], c["threshold"],
        ], f"{w}.")
        if ft.activation and ft.activation not in ("sigmoid", "relu", "tanh", "elu"):
            raise ConfigError(f"{w}.fit.activation: must be sigmoid, relu, tanh or elu")
    if cfg.variant and cfg.rounds:
        check_round_classes(cfg, cfg.variant)


def _family_classes(variant) -> tuple[str, ...]:
    """The position classes of ``variant``'s family (a name or a :class:`Variant`)."""
    from nardy_ai.classes import class_names
    from nardy_ai.variants import parse_variant_spec
    return class_names(parse_variant_spec(variant) if isinstance(variant, str) else variant)


def check_round_classes(cfg: TrainConfig, variant) -> None:
    """Refuse class names in ``rounds[i].sample.quotas``, ``fit.nets``, ``fit.warm_nets`` and ``fit.grow_nets``
    that are not position classes of ``variant``'s family."""
    names = _family_classes(variant)
    for i, r in enumerate(cfg.rounds):
        for key, values in (("sample.quotas", list(r.sample.quotas)), ("fit.nets", r.fit.nets),
                            ("fit.warm_nets", r.fit.warm_nets), ("fit.grow_nets", r.fit.grow_nets)):
            bad = [n for n in values if n not in names]
            if bad:
                raise ConfigError(f"rounds[{i + 1}].{key}: {', '.join(bad)} is not a position class of "
                                  f"{cfg.variant or variant} (classes: {', '.join(names)})")


def _validate_search_targets(cfg: TrainConfig) -> None:
    """The ``[method]``, ``[sample]``, ``[label]``, ``[fit]`` and ``[gate]`` sections."""
    s, lb, ft = cfg.sample, cfg.label, cfg.fit
    c = _shared_checks(s, lb, ft, cfg.gate)
    _first_failing([
        (cfg.method.kind in ("td", "search_targets", "distill"),
         "method.kind: must be td, search_targets or distill"),
        (1 <= cfg.method.generations <= 100_000, "method.generations: must be 1 to 100000"),
        *(c[k] for k in _SAMPLE),
        (1.0 <= s.oversample <= 100.0, "sample.oversample: must be 1 to 100 (1 = off)"),
        (1 <= s.candidates <= 64, "sample.candidates: must be 1 to 64 (1 = off)"),
        c["candidate_threshold"],
        (s.candidates == 1 or s.oversample == 1, "sample.candidates: not with sample.oversample > 1"),
        (lb.kind in ("search", "rollout"), "label.kind: must be search or rollout"),
        c["plies"],
        (0.0 <= lb.two_ply_fraction <= 1.0, "label.two_ply_fraction: must be between 0 and 1"),
        (lb.two_ply_fraction == 0 or lb.plies == 1, "label.two_ply_fraction: only with label.plies = 1"),
        (1 <= lb.rollout_games <= 100_000, "label.rollout_games: must be 1 to 100000"),
        (lb.rollout_truncate <= 1000, "label.rollout_truncate: at most 1000 plies"),
        c["chunk"], c["learning_rate"], *(c[k] for k in _FIT),
        (0 <= ft.history <= 1000, "fit.history: must be 0 to 1000 generations"),
        c["games"], c["threshold"],
    ])
    if cfg.variant and s.quotas:
        check_quotas(cfg, cfg.variant)


def _check_class_keys(cfg: TrainConfig, variant, key: str, keys) -> None:
    """Refuse the first of ``keys`` (the names under the config key ``key``) that is not a
    position class of ``variant``'s family, naming ``key.<name>``."""
    names = _family_classes(variant)
    for name in keys:
        if name not in names:
            raise ConfigError(f"{key}.{name}: not a position class of {cfg.variant or variant} "
                              f"(classes: {', '.join(names)})")


def check_quotas(cfg: TrainConfig, variant) -> None:
    """Refuse ``sample.quotas`` keys that are not position classes of ``variant``'s family."""
    _check_class_keys(cfg, variant, "sample.quotas", cfg.sample.quotas)


def check_classes(cfg: TrainConfig, variant) -> None:
    """Refuse ``[model.classes.<name>]`` sections that are not classes of ``variant``'s family
    (the variant may come from the command line, so the trainer calls this too)."""
    _check_class_keys(cfg, variant, "model.classes", cfg.model.classes)


def config_from_dict(data: dict) -> TrainConfig:
    """A validated :class:`TrainConfig` from a parsed TOML table."""
    cfg = _fill(TrainConfig, data, "")
    _validate(cfg)
    return cfg


#: The top-level key of a distillation recipe that begins with another recipe's rounds.
ROUNDS_FROM = "rounds_from"
#: What must agree between a recipe and the one its ``rounds_from`` names.
_SHARED_WITH_ROUNDS_FROM = ("variant", "seed", "method", "model")


def _read_toml(path: str) -> tuple[dict, str]:
    raw = read_at_most(path, MAX_CONFIG_BYTES, f"config {path}",
                       f"is longer than {MAX_CONFIG_BYTES} bytes: not a training config", ConfigError)
    try:
        text = raw.decode("utf-8")
        return tomllib.loads(text), text
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"config {path} is not valid TOML: {e}") from None


def load_config(path: str) -> tuple[TrainConfig, str]:
    """Read and validate a TOML config file.  Returns the config and its text: the file's own,
    or for a distillation recipe with ``rounds_from = "OTHER.toml"`` (a path relative to the
    recipe's folder) the recipe with OTHER's ``[[rounds]]`` tables copied in before its own
    (:func:`expand_rounds_from`), so that a run folder's copy of the text resumes alone."""
    data, text = _read_toml(path)
    if ROUNDS_FROM in data:
        data, text = expand_rounds_from(path, data, text)
    return config_from_dict(data), text


def expand_rounds_from(path: str, data: dict, text: str) -> tuple[dict, str]:
    """A recipe that begins with the rounds of another (``rounds_from``: its path, relative to
    ``path``'s folder): that recipe's ``[[rounds]]`` first, then this one's, as one recipe, so a
    recipe that goes on from a finished run of another need not copy its rounds (a resumed run
    must match its begun rounds).  The two must agree on ``variant``, ``seed``, ``[method]`` and
    ``[model]`` (the rounds are the same only then), and the other may not itself use
    ``rounds_from``.  Returns the joined data and text: this file's text with the
    ``rounds_from`` line made a comment and the other's ``[[rounds]]`` text (everything from its
    first ``[[rounds]]`` line) put before this file's first ``[[rounds]]`` line."""
    ref = data.pop(ROUNDS_FROM)
    if not isinstance(ref, str) or not ref:
        raise ConfigError(f"{ROUNDS_FROM}: must be the path of a recipe (relative to {path}'s folder)")
    other_path = os.path.join(os.path.dirname(os.path.abspath(path)), ref)
    if not os.path.isfile(other_path):
        raise ConfigError(f"{ROUNDS_FROM}: {ref} is not a file (paths are relative to the folder of {path})")
    other, other_text = _read_toml(other_path)
    if ROUNDS_FROM in other:
        raise ConfigError(f"{ROUNDS_FROM}: {ref} has its own {ROUNDS_FROM}; name a recipe whose rounds are "
                          f"all written out")
    for key in _SHARED_WITH_ROUNDS_FROM:
        if data.get(key) != other.get(key):
            raise ConfigError(f"{ROUNDS_FROM}: {ref} has {key} {other.get(key)!r}, this recipe "
                              f"{data.get(key)!r}; its rounds are the same rounds only with the same "
                              f"{', '.join(_SHARED_WITH_ROUNDS_FROM)}")
    if not isinstance(other.get("rounds"), list) or not other["rounds"]:
        raise ConfigError(f"{ROUNDS_FROM}: {ref} has no [[rounds]] tables")
    joined = dict(data, rounds=list(other["rounds"]) + list(data.get("rounds", [])))
    lines = text.splitlines(keepends=True)
    first = next((i for i, x in enumerate(lines) if x.strip() == "[[rounds]]"), len(lines))
    key_line = next((i for i, x in enumerate(lines[:first]) if re.match(rf"\s*{ROUNDS_FROM}\s*=", x)), None)
    other_lines = other_text.splitlines(keepends=True)
    other_first = next(i for i, x in enumerate(other_lines) if x.strip() == "[[rounds]]")
    if key_line is None:
        raise ConfigError(f"{ROUNDS_FROM}: write it as a top-level key on a line of its own, before the [[rounds]] tables")
    lines[key_line] = f"# {lines[key_line].strip()}: its {len(other['rounds'])} round(s) copied below\n"
    copied = "".join(other_lines[other_first:])
    if not copied.endswith("\n"):
        copied += "\n"
    out = "".join(lines[:first]) + copied + "\n" + "".join(lines[first:])
    try:
        again = tomllib.loads(out)
    except tomllib.TOMLDecodeError:
        again = None
    if again != joined:
        raise ConfigError(f"{ROUNDS_FROM}: the rounds of {ref} cannot be copied into {path} as text: "
                          f"both files must end with their [[rounds]] tables")
    return joined, out



def require_same_config(saved: dict, now: dict, run_dir: str) -> None:
    """Refuse to resume ``run_dir`` with a config (:meth:`TrainConfig.to_dict`, the sections a
    resume may change already removed from both) other than the one it was started with,
    naming the changed keys (``section.key`` or a top-level ``key``)."""
    if saved == now:
        return
    changed = sorted(f"{sec}.{k}" for sec in now if isinstance(now[sec], dict)
                     for k in now[sec] if now[sec][k] != saved.get(sec, {}).get(k))
    changed += sorted(k for k in now if not isinstance(now[k], dict) and now[k] != saved.get(k))
    raise NardyError(f"the config differs from the one {run_dir} was started with "
                     f"({', '.join(changed)}); resume with the run's own config "
                     f"({run_dir}/config.toml) or start a new run with --out")
