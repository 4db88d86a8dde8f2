"""TD(lambda) self-play training of a neural evaluator, with many games in lockstep.

Read top to bottom: :class:`SelfPlay` plays ``parallel_games`` games at once with the
network on both sides (one move-generator call and one forward pass per ply for all games);
finished games go to :func:`lambda_returns`; :class:`Trainer` turns their positions and
returns into gradient steps, logs, evaluates and checkpoints.  With ``backend="ray"`` the
games come from self-play actors on a Ray cluster instead (:mod:`training.distributed`); the
learning, logging and checkpoints are the same.

Why lambda-returns and not eligibility traces: with hundreds of games in lockstep, per-game
traces would need a per-game copy of every weight and per-sample gradients.  The *forward
view* of TD(lambda) gives each position of a finished game the target

    G_t = (1 - lambda) * V(a_{t+1}) + lambda * G_{t+1},   G_{T-1} = the exact outcome,

(values of the next player's afterstate turned to this player's side), computed backwards
from the values the network gave during play; the positions and targets are then fitted in
minibatches, batched over many games (the offline lambda-return algorithm, which TD(lambda)
with traces approximates online).

The network plays both sides and always evaluates an afterstate for the player who has just
moved, so successive positions of a game alternate sides and are related by
:func:`nardy_ai.model.flip_outcomes`.
"""

from __future__ import annotations

import json
import math
import os
import resource
import shutil
import time
from collections import defaultdict

import numpy as np
import torch

from nardy_ai.agents.neural import NeuralAgent
from nardy_ai.board import start_board
from nardy_ai.classes import class_names
from nardy_ai.errors import NardyError
from nardy_ai.game import play_match, summarize
from nardy_ai.machine import machine_description
from nardy_ai.model import (CheckpointError, NeuralEvaluator, flip_outcomes, load_checkpoint,
                            outcome_targets, save_checkpoint)
from nardy_ai.evaluator import evaluator_from_state, load_evaluator
from nardy_ai.netset import FALLBACK, NetSet, as_netset

from .config import TrainConfig, config_from_dict
from .run import Run
from .selfplay import FinishedGame, LocalSelfPlay, SelfPlay, Timers  # noqa: F401  (their home was here)

class TrainingDiverged(NardyError):
    """A loss, statistic or weight that is not a finite number: the run stops."""


def lambda_returns(games: list[FinishedGame], lam: float, variant) -> list[np.ndarray]:
    """The lambda-return targets ``(T, K)`` of every afterstate of each finished game.

    Vectorized over games (padded to the longest), looping backwards over plies only.
    """
    if not games:
        return []
    lengths = np.array([len(g.boards) for g in games])
    B, T = len(games), int(lengths.max())
    K = games[0].values.shape[1]
    z = outcome_targets(np.array([g.level for g in games]), variant)
    V = np.zeros((B, T, K), np.float32)
    for i, g in enumerate(games):
        V[i, :lengths[i]] = g.values
        V[i, lengths[i] - 1] = z[i]           # the terminal afterstate's value is the outcome
    out = np.zeros((B, T, K), np.float32)
    G = np.zeros((B, K), np.float32)
    for t in range(T - 1, -1, -1):
        last = (lengths - 1 == t)[:, None]
        if t + 1 < T:
            nxt = (1 - lam) * flip_outcomes(V[:, t + 1], variant) + lam * flip_outcomes(G, variant)
        else:
            nxt = G
        G = np.where(last, z, nxt).astype(np.float32)
        out[:, t] = G
    return [out[i, :lengths[i]] for i in range(B)]


def can_widen(old: tuple[int, ...] | list[int], new: tuple[int, ...] | list[int]) -> bool:
    """Whether a net of hidden layers ``old`` can be copied into one of ``new`` (:func:`widen_copy`):
    as many layers, each at least as wide."""
    return len(old) == len(new) and all(n >= o for o, n in zip(old, new))


def widen_copy(src: NeuralEvaluator, dst: NeuralEvaluator, where: str, path: str) -> None:
    """Give ``dst`` the weights of ``src`` (a warm start; ``where`` names the config key):
    the same number of hidden layers, each at least as wide as ``src``'s, and the same
    activation; ``dst``'s encoder is ``src``'s or extends it.  ``dst`` then values exactly as
    ``src``: the first layer's weights of the extra inputs are zero, and a hidden unit ``dst``
    adds (a wider layer, as in Net2Net widening) keeps its random incoming weights but sends
    nothing on (zero outgoing weights) until training gives it a part."""
    from nardy_ai.encoding import extends

    from .config import ConfigError
    if not can_widen(src.hidden, dst.hidden):
        raise ConfigError(f"{where}.hidden: {path} has hidden {list(src.hidden)}, this net "
                          f"{list(dst.hidden)} (a warm start needs as many layers, each at least as wide)")
    if src.activation != dst.activation:
        raise ConfigError(f"{where}.activation: {path} has activation {src.activation!r}, "
                          f"this net {dst.activation!r}")
    if not extends(dst.encoder, src.encoder):
        raise ConfigError(f"{where}.encoder: {path} has encoder {src.encoder.name!r}, whose inputs "
                          f"are not the first inputs of {dst.encoder.name!r}")
    theirs, mine = src.net.state_dict(), dst.net.state_dict()
    out = {}
    with torch.no_grad():
        for key, w in mine.items():
            s = theirs[key]
            new = w.detach().clone()
            if key.endswith(".weight"):
                if key == "net.0.weight":
                    new[:s.shape[0], s.shape[1]:] = 0.0   # src's units ignore the extra inputs
                else:
                    new[:, s.shape[1]:] = 0.0             # nothing from the added units
                new[:s.shape[0], :s.shape[1]] = s
            else:
                new[:s.shape[0]] = s
            out[key] = new
    dst.net.load_state_dict(out)


class Trainer(Run):
    """A TD(lambda) training run in a folder: config copy, ``checkpoint.pt`` (its state: the
    nets, optimizers, random generators and counts), TensorBoard events, metrics.jsonl (the
    folder, resume, metrics and stops: :class:`training.run.Run`).  ``total_games``: the
    target (default ``selfplay.total_games``)."""

    STATE_FILE = "checkpoint.pt"

    def __init__(self, cfg: TrainConfig, run_dir: str, config_text: str | None = None,
                 resume: bool = False, log: bool = True, backend: str = "local",
                 address: str | None = None, print_fn=print, total_games: int | None = None):
        self._setup(cfg, run_dir, backend, None, address, log, print_fn)
        self.backend = backend
        self.ckpt_path = self.state_path
        self.total_games = total_games or cfg.selfplay.total_games
        self.timers = Timers()
        self.wall_before = 0.0
        self.session_start = time.time()
        self.games = 0
        self.positions = 0
        self.updates = 0
        self._open(resume, config_text)
        self.play = SelfPlay(self.ev, cfg.selfplay.parallel_games, self.rng,
                             cfg.selfplay.epsilon, cfg.selfplay.temperature, self.timers)
        self.pending: list[FinishedGame] = []
        self.recent: dict = defaultdict(list)
        self.last_eval: dict = {}

    @classmethod
    def from_cli(cls, args, cfg, text, out, games=None):
        """``nardy train`` of a TD recipe: ``--games`` (``games``: given or remembered) is the
        target; ``--actors`` the Ray actors; at or below the games played, a given ``--games``
        is an error that changes nothing."""
        if getattr(args, "jobs", None) is not None:
            raise NardyError('--jobs is for [method] kind = "search_targets" or "distill" (sampling and '
                             'labelling processes)')
        if getattr(args, "actors", None) is not None:
            if args.backend != "ray":
                raise NardyError("--actors is for --backend ray")
            if args.actors < 1:
                raise NardyError(f"--actors must be at least 1, got {args.actors}")
            cfg.ray.actors = args.actors
        t = cls(cfg, out, config_text=text, resume=args.resume, backend=args.backend, address=args.address,
                total_games=games)
        if args.resume and args.games is not None and args.games <= t.games:
            t.close()                     # the run is finished for this target: nothing written
            raise NardyError(f"--games {args.games}: the run in {out} has already played {t.games:,} games; "
                             f"give more than {t.games} to extend it")
        return t

    @property
    def finished(self) -> bool:
        return self.games >= self.total_games

    def finished_message(self) -> str:
        return (f"{self.run_dir} is finished: {self.games:,} games played (target {self.total_games:,}). To extend "
                f"it: nardy train --out {self.run_dir} --resume --games N (N > {self.games})")

    def summary(self, result: dict) -> str:
        return (f"{result['games']} games in {self.run_dir} ({result['games_per_s']:.1f} games/s this session); "
                f"checkpoint {self.ckpt_path}")

    def stopped_at(self, result: dict) -> str:
        return f"at game {result['games']} (checkpoint written)"

    # --- the run folder (training.run.Run) ---------------------------------------------

    def _no_run_error(self) -> NardyError:
        return CheckpointError(f"checkpoint {self.ckpt_path} does not exist")

    def _check_ahead(self) -> None:
        """The evaluation opponents, built now: a spec that names no agent for this variant
        fails before any training (run.eval_opponents), not at the first evaluation."""
        self.opponents = self.check_eval_opponents()

    def _start(self) -> None:
        self.ev = self._create(self.device)
        self.set = as_netset(self.ev)
        if self.cfg.model.init_from:
            self._warm_start(self.cfg.model.init_from)
        self.opts = self._optimizers()
        self.rng = np.random.default_rng(self.cfg.seed)

    def _load(self, config_text: str | None) -> None:
        self._resume(self.device)

    def _keep_line(self, line: dict) -> bool:
        """A resume keeps the lines logged up to the checkpoint's game count (its own too)."""
        games = line.get("games")
        return isinstance(games, int) and not isinstance(games, bool) and games <= self.games

    def _trimmed(self, path: str, dropped: int) -> None:
        self.print(f"{path}: {dropped} line(s) logged after the checkpoint of game {self.games} "
                   f"dropped (that session was stopped without a checkpoint)")

    def _purge_step(self, resume: bool) -> int | None:
        # TensorBoard drops the events a killed session logged after its checkpoint (the
        # steps from the checkpoint's game count + 1 on) and keeps those logged at it.
        return self.games + 1 if resume else None

    # --- safety ----------------------------------------------------------------------

    def check_finite(self, scalars: dict | None = None) -> None:
        """Stop the run (:class:`TrainingDiverged`) at the first statistic or weight that is
        not a finite number, before it reaches a log or the checkpoint: the checkpoint on disk
        stays the last good state (diverging training, e.g. a learning rate far too high)."""
        bad = next((k for k, x in (scalars or {}).items() if not math.isfinite(x)), None)
        if bad is None:
            bad = next((f"the weights of net {label}" for label, net in self.set.nets().items()
                        if not all(bool(torch.isfinite(w).all()) for w in net.net.parameters())), None)
        if bad is not None:
            raise TrainingDiverged(f"training stopped at game {self.games}: {bad} is not a finite number "
                                   f"(diverged; a lower td.learning_rate may help); {self.ckpt_path} "
                                   f"keeps the last good state")

    # --- state -----------------------------------------------------------------------

    def _create(self, device) -> NeuralEvaluator | NetSet:
        """A fresh evaluator from ``[model]``: one net, or with ``[model.classes]`` a net set
        (members in class order, then the ``[model]`` net as fallback if a class has none)."""
        from nardy_ai.encoding import get_encoder

        from .config import ConfigError, check_classes
        m, seed = self.cfg.model, self.cfg.seed
        if not m.classes:
            return NeuralEvaluator.create(self.v, m.encoder or None, m.hidden, m.activation,
                                          seed=seed, device=device)
        check_classes(self.cfg, self.v)
        members: dict = {}
        for name, c in m.classes.items():
            if c.kind == "database":
                members[name] = "database"
                continue
            encoder = c.encoder or m.encoder or None
            try:
                get_encoder(encoder, self.v)
            except NardyError as e:
                raise ConfigError(f"model.classes.{name}.encoder: {e}") from None
            members[name] = {"encoder": encoder, "hidden": tuple(c.hidden or m.hidden),
                             "activation": c.activation or m.activation}
        uncovered = [c for c in class_names(self.v) if c not in members]
        fallback = ({"encoder": m.encoder or None, "hidden": tuple(m.hidden), "activation": m.activation}
                    if uncovered else None)
        try:
            return NetSet.create(self.v, members, fallback, seed=seed, device=device)
        except NardyError as e:
            raise ConfigError(f"model.classes: {e}") from None

    def _warm_start(self, path: str) -> None:
        """Start from the weights of checkpoint ``path``.  A single net starts from a single
        net; every net of a net set from the source's net for its class (a single-net source:
        that net).  Each copy (:func:`widen_copy`) needs the same activation, as many hidden
        layers, each at least as wide, and the same encoder or one that extends the source's
        (:func:`nardy_ai.encoding.extends`); extra inputs and added units start at zero
        weight where they would change a value, so the copy values exactly as the source."""
        from .config import ConfigError
        try:
            other = load_evaluator(path, self.v, "cpu")
        except (CheckpointError, KeyError) as e:
            raise ConfigError(f"model.init_from: {e}") from None
        if isinstance(self.ev, NetSet):
            source = as_netset(other)
            for label, net in self.ev.nets().items():
                where = "model" if label == FALLBACK else f"model.classes.{label}"
                src = source.fallback if label == FALLBACK else source.member_for(label)
                if not isinstance(src, NeuralEvaluator):
                    raise ConfigError(f"{where}: {path} has no net for {label} to start it from")
                widen_copy(src, net, where, path)
            return
        if isinstance(other, NetSet):
            raise ConfigError(f"model.init_from: {path} holds a net set; a single net starts from a single net")
        from nardy_ai.encoding import extends
        mine, theirs = self.ev.state(), other.state()
        for key in ("encoder", "activation"):       # hidden sizes: widen_copy (wider is fine)
            if theirs[key] != mine[key] and not (key == "encoder" and extends(self.ev.encoder, other.encoder)):
                raise ConfigError(f"model.init_from: {path} has {key} {theirs[key]!r}, this config {mine[key]!r}")
        widen_copy(other, self.ev, "model", path)

    @property
    def opt(self) -> torch.optim.Optimizer:
        """The optimizer of a single-net run (a net set has one per net: :attr:`opts`)."""
        if len(self.opts) != 1:
            raise AttributeError("a net set has one optimizer per net: Trainer.opts")
        return next(iter(self.opts.values()))

    def learning_rate(self) -> float:
        """The learning rate at the current game count (td.lr_halflife_games, td.learning_rate_min)."""
        td = self.cfg.td
        if not td.lr_halflife_games:
            return td.learning_rate
        return max(td.learning_rate * 0.5 ** (self.games / td.lr_halflife_games), td.learning_rate_min)

    def _optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """One optimizer per net, by label (a single net: ``"fallback"``)."""
        td = self.cfg.td
        out = {}
        for label, net in self.set.nets().items():
            params = net.net.parameters()
            if td.optimizer == "sgd":
                out[label] = torch.optim.SGD(params, lr=td.learning_rate, momentum=td.momentum)
            else:
                out[label] = torch.optim.Adam(params, lr=td.learning_rate)
        return out

    def _resume(self, device) -> None:
        data = load_checkpoint(self.ckpt_path)
        if data.get("kind") != "training":
            raise CheckpointError(f"{self.ckpt_path} is not a training checkpoint")
        self.ev = evaluator_from_state(data["evaluator"], self.v, device)
        self.set = as_netset(self.ev)
        # A resumed run may be extended or watched differently (total games, [run] cadence,
        # threads, device) or run elsewhere ([ray]); anything that changes what is learned
        # must stay as it was.
        self._require_same_config(config_from_dict(data["config"]).to_dict(), self.cfg.to_dict(),
                                  ("run", "ray", "selfplay.total_games"))
        self.opts = self._optimizers()
        saved_opt = data["optimizer"]
        if isinstance(self.ev, NetSet):
            if not isinstance(saved_opt, dict) or set(saved_opt) != set(self.opts):
                raise CheckpointError(f"{self.ckpt_path}: optimizer: expected the states of "
                                      f"{', '.join(self.opts)}")
            for label, opt in self.opts.items():
                opt.load_state_dict(saved_opt[label])
        else:
            self.opt.load_state_dict(saved_opt)
        self.games, self.positions, self.updates = data["games"], data["positions"], data["updates"]
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = json.loads(data["numpy_rng"])
        torch.set_rng_state(data["torch_rng"])
        self.wall_before = float(data.get("wall_seconds", 0.0))

    def checkpoint(self) -> None:
        """Write the checkpoint atomically (a kill never leaves a half-written file); never
        one with weights that are not finite."""
        self.check_finite()
        save_checkpoint(self.ckpt_path, {
            "kind": "training",
            "evaluator": self.ev.state(),
            "optimizer": ({label: o.state_dict() for label, o in self.opts.items()}
                          if isinstance(self.ev, NetSet) else self.opt.state_dict()),
            "config": self.cfg.to_dict(),
            "games": self.games, "positions": self.positions, "updates": self.updates,
            "numpy_rng": json.dumps(self.rng.bit_generator.state),
            "torch_rng": torch.get_rng_state(),
            "wall_seconds": self.wall_seconds(),
        })

    def wall_seconds(self) -> float:
        """Wall-clock seconds of training so far, over every session of this run."""
        return self.wall_before + (time.time() - self.session_start)

    # --- logging ---------------------------------------------------------------------

    def _log(self, kind: str, scalars: dict) -> None:
        """One metrics.jsonl line and one TensorBoard scalar per value (numbers only)."""
        if not self.log_enabled:
            return
        self.check_finite(scalars)
        self.metrics.record(kind, self.games, scalars,
                            kind=kind, games=self.games, time=round(time.time(), 3))

    # --- learning --------------------------------------------------------------------

    def update(self, games: list[FinishedGame]) -> dict:
        """Fit the lambda-returns of finished games: one pass of minibatch steps per net,
        each net of a net set on the afterstates of its classes (the database is exact and
        not fitted).  Net sets also report ``loss_<net>`` and ``share_<class>`` (the share
        of the afterstates in each class)."""
        t0 = time.perf_counter()
        targets = lambda_returns(games, self.cfg.td.lambda_, self.v)
        boards = np.concatenate([g.boards for g in games])
        values = np.concatenate([g.values for g in games])
        y = np.concatenate(targets)
        classes = self.set.classify(boards) if self.set.members else None
        groups = [g for g in self.set.route(boards, classes) if g[0] in self.opts]
        td_error = float(np.abs(y[:, 0] - values[:, 0]).mean())
        bs = self.cfg.td.batch_size
        for opt in self.opts.values():
            for group in opt.param_groups:
                group["lr"] = self.learning_rate()
        losses, stats = [], {}
        for label, net, rows in groups:
            x = net.encoder(boards[rows])
            t0 = self.timers.add("lambda-returns + encoding", t0)
            xt = torch.from_numpy(x).to(net.device)
            yt = torch.from_numpy(y[rows]).to(net.device)
            opt = self.opts[label]
            net.net.train()
            mine = []
            for _ in range(self.cfg.td.epochs):
                order = torch.from_numpy(self.rng.permutation(len(x))).to(net.device)
                for i in range(0, len(x), bs):
                    idx = order[i:i + bs]
                    logits = net.net.logits(xt[idx])
                    if self.cfg.td.loss == "bce":
                        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, yt[idx])
                    else:
                        loss = torch.mean((torch.sigmoid(logits) - yt[idx]) ** 2)
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                    mine.append(float(loss.detach()))
                    self.updates += 1
            losses += mine
            stats[f"loss_{label}"] = float(np.mean(mine))
            t0 = self.timers.add("backward + step", t0)
        self.positions += len(boards)
        out = {"loss": float(np.mean(losses)) if losses else 0.0, "td_error": td_error}
        if classes is not None:
            out.update(stats)
            for i, name in enumerate(self.set.classes):
                out[f"share_{name}"] = float(np.mean(classes == i))
        return out

    def evaluate(self) -> dict:
        """Fixed-seed matches against the configured opponents, seats alternating."""
        me = NeuralAgent(self.ev, name="td")
        out = {}
        n = self.cfg.run.eval_games
        for spec in self.cfg.run.eval_opponents:
            recs = play_match(self.v, me, self.opponents[spec], n, seed=1234)
            s = summarize(recs, agent="td")
            out[f"vs_{spec}/win_rate"] = s["win_rate"]
            out[f"vs_{spec}/points_per_game"] = s["points_per_game"]
        return out

    def self_play(self):
        """Where this session's games come from: this process, or Ray actors."""
        if self.backend == "local":
            return LocalSelfPlay(self.play)
        from .distributed import RaySelfPlay
        r = self.cfg.ray
        return RaySelfPlay(self, self.address, r.actors, r.weights_every, r.parallel_games, r.games_per_call,
                           log=self.print)

    def start_equity(self) -> float:
        """Network equity (points per game) for the player about to roll at the start."""
        return float(-self.ev.equity(start_board(self.v)[None])[0])

    def run(self, total_games: int | None = None, progress: bool = True,
            seconds: float | None = None, on_update=None) -> dict:
        """Train until ``total_games`` games (default: the run's target) or ``seconds`` pass.
        ``on_update()`` is called after every update (benchmarks sample progress with it)."""
        cfg = self.cfg
        self._begin(progress)
        total = total_games or self.total_games
        t_begin = time.perf_counter()
        games0 = self.games
        next_ckpt = (self.games // cfg.run.checkpoint_every + 1) * cfg.run.checkpoint_every
        next_eval = (self.games // cfg.run.eval_every + 1) * cfg.run.eval_every if cfg.run.eval_every else None
        next_log = (self.games // cfg.run.log_every + 1) * cfg.run.log_every
        recent = self.recent
        recent.clear()
        source = self.self_play()
        if self.log_enabled:
            self.metrics.line({"kind": "session", "games": self.games, "time": round(time.time(), 3),
                               "backend": self.backend, "self_play": source.describe(),
                               "machine": machine_description()})
        bar = self.progress_bar(total, f"train {self.v.id}", "game", initial=self.games)
        if self.games == 0 and self.log_enabled:
            self._log("train", {"start_equity": self.start_equity()})
        try:
            while self.games < total and not self.stop_requested:
                if seconds is not None and time.perf_counter() - t_begin > seconds:
                    break
                finished = source.games()
                for g in finished:
                    recent["length"].append(len(g.boards))
                    recent["level"].append(g.level)
                self.pending += finished
                if len(self.pending) >= cfg.td.update_games:
                    batch, self.pending = self.pending, []
                    stats = self.update(batch)
                    self.check_finite(stats)
                    recent["loss"].append(stats["loss"])
                    recent["td_error"].append(stats["td_error"])
                    for k, val in stats.items():
                        if k.startswith(("loss_", "share_")):      # net sets: per net / class
                            recent[k].append(val)
                    self.games += len(batch)
                    source.after_update()
                    if on_update is not None:
                        on_update()
                    bar.update(len(batch))
                    rate = (self.games - games0) / max(time.perf_counter() - t_begin, 1e-9)
                    bar.set_postfix(games_s=f"{rate:.0f}", **{k.replace("/", "_"): f"{v:.3f}"
                                    for k, v in self.last_eval.items() if "win_rate" in k})
                    if self.games >= next_log:
                        next_log += cfg.run.log_every
                        levels = np.array(recent["level"])
                        scal = {"loss": float(np.mean(recent["loss"])),
                                "td_error": float(np.mean(recent["td_error"])),
                                "game_length": float(np.mean(recent["length"])),
                                "games_per_s": rate, "start_equity": self.start_equity(),
                                "learning_rate": self.learning_rate()}
                        for lv in range(1, len(self.v.scoring) + 1):
                            scal[f"outcome_level{lv}"] = float(np.mean(levels == lv))
                        if recent["weights_lag"]:
                            scal["weights_lag"] = float(np.mean(recent["weights_lag"]))
                        scal.update({k: float(np.mean(val)) for k, val in recent.items()
                                     if k.startswith(("loss_", "share_"))})
                        self._log("train", scal)
                        recent.clear()
                    if next_eval is not None and self.games >= next_eval:
                        next_eval += cfg.run.eval_every
                        self.last_eval = self.evaluate()
                        self._log("eval", self.last_eval)
                    if self.games >= next_ckpt:
                        next_ckpt += cfg.run.checkpoint_every
                        self.checkpoint()
            if self.log_enabled:              # the last state, written while the folder is ours
                self.checkpoint()
                self.metrics.flush()
        finally:
            bar.close()
            source.close()
            self.lock.release()
        elapsed = time.perf_counter() - t_begin
        return {"games": self.games, "seconds": elapsed,
                "games_per_s": (self.games - games0) / max(elapsed, 1e-9),
                "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "timers": dict(self.timers.seconds)}


def export_checkpoint(run_dir: str, dest: str) -> None:
    """Copy a run's checkpoint (for shipping under ``checkpoints/``)."""
    shutil.copyfile(os.path.join(run_dir, "checkpoint.pt"), dest)

