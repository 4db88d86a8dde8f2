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
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field, fields

from nardy_ai.errors import NardyError


class ConfigError(NardyError):
    """A config file that cannot be read or breaks the schema."""


@dataclass
class ModelConfig:
    encoder: str = ""               # "" = the variant family's default (tdgammon / long)
    hidden: list[int] = field(default_factory=lambda: [80])
    activation: str = "sigmoid"
    init_from: str = ""             # a checkpoint whose weights start the run ("" = random init)


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
class TrainConfig:
    variant: str = ""
    seed: int = 0
    name: str = ""
    model: ModelConfig = field(default_factory=ModelConfig)
    td: TDConfig = field(default_factory=TDConfig)
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    run: RunConfig = field(default_factory=RunConfig)
    ray: RayConfig = field(default_factory=RayConfig)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["td"]["lambda"] = d["td"].pop("lambda_")
        return d


_SECTIONS = {"model": ModelConfig, "td": TDConfig, "selfplay": SelfPlayConfig, "run": RunConfig,
             "ray": RayConfig}


def _key(f) -> str:
    return "lambda" if f.name == "lambda_" else f.name


def _check(value, annotation: str, where: str):
    if annotation == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: must be an integer, got {value!r}")
    elif annotation == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: must be a number, got {value!r}")
        value = float(value)
    elif annotation == "str":
        if not isinstance(value, str):
            raise ConfigError(f"{where}: must be a string, got {value!r}")
    elif annotation == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: must be true or false, got {value!r}")
    elif annotation == "list[int]":
        if not isinstance(value, list) or any(isinstance(x, bool) or not isinstance(x, int) for x in value):
            raise ConfigError(f"{where}: must be a list of integers, got {value!r}")
    elif annotation == "list[str]":
        if not isinstance(value, list) or any(not isinstance(x, str) for x in value):
            raise ConfigError(f"{where}: must be a list of strings, got {value!r}")
    return value


def _fill(cls, data: dict, prefix: str):
    known = {_key(f): f for f in fields(cls)}
    values = {}
    for key, value in data.items():
        where = f"{prefix}{key}"
        if key not in known:
            raise ConfigError(f"{where}: unknown key (known: {', '.join(known)})")
        f = known[key]
        if f.name in _SECTIONS:
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: must be a [section]")
            values[f.name] = _fill(_SECTIONS[f.name], value, f"{where}.")
        else:
            values[f.name] = _check(value, f.type, where)
    return cls(**values)


def _validate(cfg: TrainConfig) -> None:
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
    ]
    for ok, msg in checks:
        if not ok:
            raise ConfigError(msg)


def config_from_dict(data: dict) -> TrainConfig:
    """A validated :class:`TrainConfig` from a parsed TOML table."""
    cfg = _fill(TrainConfig, data, "")
    _validate(cfg)
    return cfg


def load_config(path: str) -> tuple[TrainConfig, str]:
    """Read and validate a TOML config file.  Returns the config and the file's text."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ConfigError(f"cannot read config {path}: {e.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"config {path} is not valid TOML: {e}") from None
    return config_from_dict(data), raw.decode("utf-8")
