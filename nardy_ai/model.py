"""Neural evaluators: an MLP from encoded afterstates to outcome probabilities, the equity
derived from them, and checkpoints.

Outcomes (one sigmoid output each, as gnubg does), for a variant whose scoring has ``L``
result levels (``variant.scoring``): ``P(win)``, then ``P(win at level >= l)`` for
``l = 2..L``, then ``P(lose at level >= l)`` for ``l = 2..L``.  Backgammon (L = 3): win,
gammon win, backgammon win, gammon loss, backgammon loss; long nardy (L = 2): win, mars win,
mars loss; trictrac (L = 4) its four levels; dave (L = 1): win only.  All probabilities are
for the player who has just moved (the afterstate's mover).

Equity is in points per game (cubeless): the expected points won minus lost with the
variant's scoring.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from .encoding import Encoder, get_encoder
from .errors import NardyError
from .files import atomic_file
from .scoring import result_levels
from .variants import Variant, get_variant, variant_options, with_options

CHECKPOINT_FORMAT = 1


class CheckpointError(NardyError):
    """A checkpoint that cannot be used: corrupt, another variant, another encoder version."""


def n_outputs(variant: str | Variant) -> int:
    """Number of outcome outputs for a variant: ``1 + 2 (L - 1)``."""
    return 2 * len(get_variant(variant).scoring) - 1


def equity(probs: torch.Tensor | np.ndarray, variant: str | Variant):
    """Cubeless equity (points per game) of outcome probabilities ``(..., n_outputs)``.

    ``E = sum_l (s_l - s_{l-1}) [P(win >= l) - P(lose >= l)]`` with ``s_0 = 0``, where
    ``P(win >= 1) = P(win)`` and ``P(lose >= 1) = 1 - P(win)``.
    """
    s = get_variant(variant).scoring
    L = len(s)
    e = probs[..., 0] * s[0] - (1 - probs[..., 0]) * s[0]
    for lv in range(2, L + 1):
        step = s[lv - 1] - s[lv - 2]
        e = e + step * (probs[..., lv - 1] - probs[..., L - 1 + lv - 1])
    return e


def flip_outcomes(probs, variant: str | Variant):
    """The same outcome probabilities seen by the other player (wins and losses swap)."""
    L = len(get_variant(variant).scoring)
    if isinstance(probs, torch.Tensor):
        out = probs.clone()
    else:
        out = np.array(probs, copy=True)
    out[..., 0] = 1 - probs[..., 0]
    out[..., 1:L] = probs[..., L:2 * L - 1]
    out[..., L:2 * L - 1] = probs[..., 1:L]
    return out


def outcome_targets(levels: np.ndarray, variant: str | Variant) -> np.ndarray:
    """Exact outcome vectors ``(N, n_outputs)`` for games the mover has just won at ``levels``
    (1-based result levels, as :func:`nardy_ai.scoring.result_levels` returns)."""
    L = len(get_variant(variant).scoring)
    levels = np.asarray(levels)
    out = np.zeros((len(levels), 2 * L - 1), np.float32)
    out[:, 0] = 1.0
    for lv in range(2, L + 1):
        out[:, lv - 1] = levels >= lv
    return out


def terminal_outcomes(afterstates: np.ndarray, variant: str | Variant) -> np.ndarray:
    """Exact outcome vectors ``(M, n_outputs)`` float32 of finished afterstates (the mover has
    borne off every checker): the game's result at its level, never an evaluator's guess.
    :func:`nardy_ai.evaluator.outcomes` applies it to every evaluator."""
    return outcome_targets(result_levels(afterstates, variant), variant)


#: Rows per forward pass of a net on the CPU (:meth:`NeuralEvaluator.probabilities`), at most.
CPU_ROWS = 2048
#: Hidden activations (floats, about 2 MiB) per forward pass on the CPU: a wide net takes
#: fewer rows a pass (:func:`cpu_rows`) so that its activations stay in the core's cache.
CPU_ACTIVATIONS = 1 << 19


def cpu_rows(hidden) -> int:
    """Rows per forward pass on the CPU of a net with hidden layers ``hidden``: the power of
    two (256 to :data:`CPU_ROWS`) that keeps the widest layer within :data:`CPU_ACTIVATIONS`.
    An 80-unit net takes 2,048 rows, 512 units 1,024 and 1,024 units 512 (on 1 core of an
    Intel Xeon, a 1,024-unit net over 2,048 rows a pass took 1.7x the time of 512 rows)."""
    widest = max((int(h) for h in hidden), default=1)
    rows = 1 << max(0, (CPU_ACTIVATIONS // max(widest, 1)).bit_length() - 1)
    return int(min(CPU_ROWS, max(256, rows)))

_ACTIVATIONS = {"sigmoid": nn.Sigmoid, "relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU}
#: The activations applied in place (:meth:`MLP.infer`).
_IN_PLACE = {nn.Sigmoid: torch.sigmoid_, nn.ReLU: torch.relu_, nn.Tanh: torch.tanh_,
             nn.ELU: torch.nn.functional.elu_}


class MLP(nn.Module):
    """The network of a :class:`NeuralEvaluator`: encoded afterstates ``(M, n_features)`` to
    outcome probabilities.

    ``hidden`` lists the hidden layer sizes, ``activation`` one of sigmoid, relu, tanh, elu.
    """

    def __init__(self, n_features: int, n_out: int, hidden=(80,), activation: str = "sigmoid"):
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise NardyError(f"unknown activation {activation!r}; known: {', '.join(_ACTIVATIONS)}")
        layers: list[nn.Module] = []
        width = n_features
        for h in hidden:
            layers += [nn.Linear(width, h), _ACTIVATIONS[activation]()]
            width = h
        layers.append(nn.Linear(width, n_out))
        self.net = nn.Sequential(*layers)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.net(x))

    def infer(self, x: torch.Tensor) -> torch.Tensor:
        """:meth:`forward` for inference (no gradients): the same values, each activation
        applied in place on its layer's fresh output (one buffer a layer fewer)."""
        h = x
        for layer in self.net:
            if isinstance(layer, nn.Linear):
                h = layer(h)
            else:
                h = _IN_PLACE[type(layer)](h)
        return h.sigmoid_()


def default_device() -> torch.device:
    """CUDA when present, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class NeuralEvaluator:
    """A net bound to its variant and encoder: an :class:`~nardy_ai.evaluator.Evaluator`
    (afterstates in, outcome probabilities out) that can be trained and checkpointed."""

    variant: Variant
    encoder: Encoder
    net: MLP
    hidden: tuple = (80,)
    activation: str = "sigmoid"
    device: torch.device = field(default_factory=default_device)

    @classmethod
    def create(cls, variant, encoder: str | None = None, hidden=(80,), activation="sigmoid",
               seed: int | None = None, device: str | torch.device | None = None) -> "NeuralEvaluator":
        """A freshly initialised evaluator (seeded when ``seed`` is given)."""
        v = get_variant(variant)
        enc = get_encoder(encoder, v)
        if seed is not None:
            torch.manual_seed(seed)
        dev = torch.device(device) if device else default_device()
        net = MLP(enc.n_features, n_outputs(v), tuple(hidden), activation).to(dev)
        return cls(v, enc, net, tuple(hidden), activation, dev)

    @torch.no_grad()
    def probabilities(self, boards: np.ndarray, chunk: int = 8192) -> np.ndarray:
        """Outcome probabilities ``(M, n_outputs)`` float32 of afterstates (mover's view).

        Encoded ``chunk`` rows at a time; on the CPU the net runs on :data:`CPU_ROWS` rows at
        a time, so that inputs and activations stay in cache and no large fresh buffers are
        faulted in (1-ply search, 80-unit nets: about 1.25x faster than one pass over 65,536
        rows; the same values); a wide net takes fewer rows a pass (:func:`cpu_rows`)."""
        self.net.eval()
        out = np.empty((len(boards), n_outputs(self.variant)), np.float32)
        rows = cpu_rows(self.hidden) if self.device.type == "cpu" else chunk
        for i in range(0, len(boards), chunk):
            x = torch.from_numpy(self.encoder(boards[i:i + chunk])).to(self.device)
            for j in range(0, len(x), rows):
                out[i + j:i + j + rows] = self.net.infer(x[j:j + rows]).float().cpu().numpy()
        return out

    def equity(self, boards: np.ndarray) -> np.ndarray:
        """Cubeless equity (points per game) of afterstates for the player who moved."""
        return equity(self.probabilities(boards), self.variant)

    # --- checkpoints -----------------------------------------------------------------

    def state(self) -> dict:
        """What a checkpoint stores about the evaluator (plain types and tensors only)."""
        return {
            "variant": self.variant.id, "variant_version": self.variant.version,
            "options": variant_options(self.variant),
            "encoder": self.encoder.name, "encoder_version": self.encoder.version,
            "hidden": list(self.hidden), "activation": self.activation,
            "weights": {k: v.detach().cpu() for k, v in self.net.state_dict().items()},
        }

    @classmethod
    def from_state(cls, state: dict, variant=None, device=None):
        """Rebuild a single net from :meth:`state`, refusing another variant or encoder version.
        Any evaluator's state (a net set's too): :func:`nardy_ai.evaluator.evaluator_from_state`."""
        kind = state.get("kind") if isinstance(state, dict) else None
        if kind is not None:
            raise CheckpointError(f"kind: {kind!r} is not a single net (any evaluator: "
                                  f"nardy_ai.evaluator.evaluator_from_state)")
        try:
            vid = state["variant"]
            v = with_options(vid, **state.get("options", {}))
            if variant is not None and get_variant(variant).id != v.id:
                raise CheckpointError(f"checkpoint is for variant {vid!r}, not {get_variant(variant).id!r}")
            if state["variant_version"] != v.version:
                raise CheckpointError(f"checkpoint is for {vid} rules version {state['variant_version']}, "
                                      f"this engine has version {v.version}")
            enc = get_encoder(state["encoder"], v)
            if state["encoder_version"] != enc.version:
                raise CheckpointError(f"checkpoint uses encoder {enc.name} version {state['encoder_version']}, "
                                      f"this code has version {enc.version}")
            ev = cls.create(v, enc.name, tuple(state["hidden"]), state["activation"], device=device)
            ev.net.load_state_dict(state["weights"])
        except CheckpointError:
            raise
        except (KeyError, TypeError, RuntimeError, ValueError) as e:
            raise CheckpointError(f"checkpoint is malformed: {type(e).__name__}: {e}") from None
        return ev


def save_checkpoint(path: str | os.PathLike, payload: dict) -> None:
    """Write a checkpoint atomically: to a temporary file, then rename over ``path``."""
    path = os.fspath(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with atomic_file(path, CheckpointError) as f:
        torch.save(dict(payload, format=CHECKPOINT_FORMAT), f)


def read_torch_file(source, unreadable: str):
    """What torch's safe (weights-only) loader reads from ``source`` (a path or a binary file
    object), on the CPU; a file it cannot read is a :class:`CheckpointError` saying
    ``unreadable`` and the kind of failure."""
    try:
        return torch.load(source, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many types for a damaged or foreign file
        raise CheckpointError(f"{unreadable} ({type(e).__name__})") from None


def load_checkpoint(path, name: str | None = None) -> dict:
    """Read a checkpoint (a path, or a binary file object named ``name`` in errors) with
    torch's safe (weights-only) loader; clear errors otherwise."""
    if isinstance(path, (str, os.PathLike)):
        path = name = os.fspath(path)
        if not os.path.exists(path):
            raise CheckpointError(f"checkpoint {path} does not exist")
    data = read_torch_file(path, f"cannot read checkpoint {name}: not a nardy_ai checkpoint or corrupt")
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT or "evaluator" not in data:
        raise CheckpointError(f"{name} is not a nardy_ai checkpoint (format {CHECKPOINT_FORMAT})")
    return data
