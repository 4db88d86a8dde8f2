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
import os
import resource
import shutil
import time
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import torch

from nardy_ai.agents import make_agent
from nardy_ai.agents.base import segment_argmax
from nardy_ai.agents.neural import NeuralAgent
from nardy_ai.board import OFF, flip, start_board
from nardy_ai.errors import NardyError
from nardy_ai.game import play_match, result_levels, summarize
from nardy_ai.model import (CheckpointError, NeuralEvaluator, equity, flip_outcomes,
                            load_checkpoint, outcome_targets, save_checkpoint)
from nardy_ai.movegen import generate
from nardy_ai.variants import parse_variant_spec

from .config import TrainConfig, config_from_dict

# Opening rolls of backgammon-family variants (COM-7): two different numbers.
_OPENING_ROLLS = np.array([(a, b) for a in range(1, 7) for b in range(1, 7) if a != b])


@dataclass
class Timers:
    """Seconds spent per stage of training (for the benchmark's profile)."""

    seconds: dict = field(default_factory=lambda: defaultdict(float))

    def add(self, stage: str, t0: float) -> float:
        now = time.perf_counter()
        self.seconds[stage] += now - t0
        return now


@dataclass
class FinishedGame:
    """A finished self-play game: its afterstates (each from its mover's side), the values
    the network gave them during play, and the result level the last mover won."""

    boards: np.ndarray      # (T, 28) int8
    values: np.ndarray      # (T, K) float32
    level: int


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


class SelfPlay:
    """``n`` self-play games in lockstep; :meth:`ply` advances every game by one move."""

    def __init__(self, evaluator: NeuralEvaluator, n: int, rng: np.random.Generator,
                 epsilon: float = 0.0, temperature: float = 0.0, timers: Timers | None = None):
        self.ev = evaluator
        self.v = evaluator.variant
        self.n = n
        self.rng = rng
        self.epsilon = epsilon
        self.temperature = temperature
        self.timers = timers or Timers()
        self.start = start_board(self.v)
        self.boards = np.repeat(self.start[None], n, axis=0)
        self.length = np.zeros(n, np.int64)
        self.cap = 256
        self.k = evaluator.net.net[-1].out_features
        self.traj_boards = np.zeros((n, self.cap, 28), np.int8)
        self.traj_values = np.zeros((n, self.cap, self.k), np.float32)
        self.plies = 0

    def _grow(self) -> None:
        self.cap *= 2
        tb = np.zeros((self.n, self.cap, 28), np.int8)
        tv = np.zeros((self.n, self.cap, self.k), np.float32)
        tb[:, :self.cap // 2] = self.traj_boards
        tv[:, :self.cap // 2] = self.traj_values
        self.traj_boards, self.traj_values = tb, tv

    def _roll(self) -> np.ndarray:
        dice = self.rng.integers(1, 7, (self.n, 2))
        if self.v.opening == "opening_roll":
            first = self.length == 0
            if first.any():
                dice[first] = _OPENING_ROLLS[self.rng.integers(0, len(_OPENING_ROLLS), first.sum())]
        return dice

    def _choose(self, after, values: np.ndarray) -> np.ndarray:
        eq = equity(values, self.v)
        if self.temperature > 0:
            key = eq / self.temperature + self.rng.gumbel(size=len(eq))
            pick = segment_argmax(key, after.offsets)
        else:
            pick = segment_argmax(eq, after.offsets, self.rng)
        if self.epsilon > 0:
            explore = self.rng.random(self.n) < self.epsilon
            if explore.any():
                counts = after.counts()[explore]
                pick[explore] = after.offsets[:-1][explore] + (self.rng.random(explore.sum()) * counts).astype(np.int64)
        return pick

    def ply(self) -> list[FinishedGame]:
        """Every game plays one move; returns the games that ended with it."""
        tm = self.timers
        t0 = time.perf_counter()
        after = generate(self.boards, self._roll(), self.v)
        t0 = tm.add("move generation", t0)
        x = torch.from_numpy(self.ev.encoder(after.boards)).to(self.ev.device)
        t0 = tm.add("encoding", t0)
        with torch.no_grad():
            values = self.ev.net(x).float().cpu().numpy()
        t0 = tm.add("forward", t0)
        pick = self._choose(after, values)
        chosen = after.boards[pick]
        if self.length.max() >= self.cap:
            self._grow()
        rows = np.arange(self.n)
        self.traj_boards[rows, self.length] = chosen
        self.traj_values[rows, self.length] = values[pick]
        self.length += 1
        self.plies += 1
        done = np.flatnonzero(chosen[:, OFF] == 15)
        finished = []
        if len(done):
            levels = result_levels(chosen[done], self.v)
            for g, lv in zip(done.tolist(), levels.tolist()):
                T = int(self.length[g])
                finished.append(FinishedGame(self.traj_boards[g, :T].copy(),
                                             self.traj_values[g, :T].copy(), int(lv)))
            chosen[done] = flip(self.start[None], self.v)[0]     # a new game: flipped below
            self.length[done] = 0
        self.boards = flip(chosen, self.v)
        tm.add("self-play other", t0)
        return finished


class LocalSelfPlay:
    """Self-play in this process: the learner's own network plays (the local backend)."""

    def __init__(self, play: SelfPlay):
        self.play = play

    def describe(self) -> str:
        return f"this process, {self.play.n} games in lockstep"

    def games(self) -> list[FinishedGame]:
        return self.play.ply()

    def after_update(self) -> None:
        pass

    def close(self) -> None:
        pass


class Trainer:
    """A training run in a folder: config copy, checkpoints, TensorBoard events, metrics.jsonl."""

    def __init__(self, cfg: TrainConfig, run_dir: str, config_text: str | None = None,
                 resume: bool = False, log: bool = True, backend: str = "local",
                 address: str | None = None, print_fn=print):
        self.cfg = cfg
        self.v = parse_variant_spec(cfg.variant)
        self.run_dir = run_dir
        self.ckpt_path = os.path.join(run_dir, "checkpoint.pt")
        self.log_enabled = log
        from nardy_ai.backends import check_backend, require_ray
        check_backend(backend, address=address)
        if backend == "ray":
            require_ray()                 # before any file is written
        self.backend, self.address, self.print = backend, address, print_fn
        if cfg.run.threads:
            torch.set_num_threads(cfg.run.threads)
        device = None if cfg.run.device == "auto" else cfg.run.device
        self.timers = Timers()
        self.wall_before = 0.0
        self.session_start = time.time()
        self.games = 0
        self.positions = 0
        self.updates = 0
        if resume:
            self._resume(device)
        else:
            if os.path.exists(self.ckpt_path):
                raise NardyError(f"{run_dir} already holds a run; use --resume to continue it "
                                 f"or --out to start a new one")
            self.ev = NeuralEvaluator.create(self.v, cfg.model.encoder or None, cfg.model.hidden,
                                             cfg.model.activation, seed=cfg.seed, device=device)
            if cfg.model.init_from:
                self._warm_start(cfg.model.init_from)
            self.opt = self._optimizer()
            self.rng = np.random.default_rng(cfg.seed)
        os.makedirs(run_dir, exist_ok=True)
        if config_text is not None and not resume:
            with open(os.path.join(run_dir, "config.toml"), "w", encoding="utf-8") as f:
                f.write(config_text)
        self.writer = None
        if log:
            from torch.utils.tensorboard import SummaryWriter
            self.writer = SummaryWriter(os.path.join(run_dir, "tb"), purge_step=self.games or None)
        self.play = SelfPlay(self.ev, cfg.selfplay.parallel_games, self.rng,
                             cfg.selfplay.epsilon, cfg.selfplay.temperature, self.timers)
        self.pending: list[FinishedGame] = []
        self.recent: dict = defaultdict(list)
        self.last_eval: dict = {}
        self.stop_requested = False

    def request_stop(self) -> None:
        """Finish the current ply, write a checkpoint and return from :meth:`run` (signals)."""
        self.stop_requested = True

    # --- state -----------------------------------------------------------------------

    def _warm_start(self, path: str) -> None:
        """Start from the weights of checkpoint ``path`` (same variant, encoder and net shape)."""
        from .config import ConfigError
        try:
            other = NeuralEvaluator.from_state(load_checkpoint(path)["evaluator"], self.v, "cpu")
        except (CheckpointError, KeyError) as e:
            raise ConfigError(f"model.init_from: {e}") from None
        mine = self.ev.state()
        for key in ("encoder", "encoder_version", "hidden", "activation"):
            theirs = other.state()[key]
            if theirs != mine[key]:
                raise ConfigError(f"model.init_from: {path} has {key} {theirs!r}, this config {mine[key]!r}")
        self.ev.net.load_state_dict(other.net.state_dict())

    def learning_rate(self) -> float:
        """The learning rate at the current game count (td.lr_halflife_games, td.learning_rate_min)."""
        td = self.cfg.td
        if not td.lr_halflife_games:
            return td.learning_rate
        return max(td.learning_rate * 0.5 ** (self.games / td.lr_halflife_games), td.learning_rate_min)

    def _optimizer(self) -> torch.optim.Optimizer:
        td = self.cfg.td
        params = self.ev.net.parameters()
        if td.optimizer == "sgd":
            return torch.optim.SGD(params, lr=td.learning_rate, momentum=td.momentum)
        return torch.optim.Adam(params, lr=td.learning_rate)

    def _resume(self, device) -> None:
        data = load_checkpoint(self.ckpt_path)
        if data.get("kind") != "training":
            raise CheckpointError(f"{self.ckpt_path} is not a training checkpoint")
        self.ev = NeuralEvaluator.from_state(data["evaluator"], self.v, device)
        saved = config_from_dict(data["config"]).to_dict()
        now = self.cfg.to_dict()
        # A resumed run may be extended or watched differently (total games, [run] cadence,
        # threads, device) or run elsewhere ([ray]); anything that changes what is learned
        # must stay as it was.
        for d in (saved, now):
            d.pop("run")
            d.pop("ray")
            d["selfplay"].pop("total_games")
        if saved != now:
            changed = sorted(f"{sec}.{k}" for sec in now if isinstance(now[sec], dict)
                             for k in now[sec] if now[sec][k] != saved.get(sec, {}).get(k))
            changed += sorted(k for k in now if not isinstance(now[k], dict) and now[k] != saved.get(k))
            raise NardyError(f"the config differs from the one {self.run_dir} was started with "
                             f"({', '.join(changed)}); resume with the run's own config "
                             f"({self.run_dir}/config.toml) or start a new run with --out")
        self.opt = self._optimizer()
        self.opt.load_state_dict(data["optimizer"])
        self.games, self.positions, self.updates = data["games"], data["positions"], data["updates"]
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = json.loads(data["numpy_rng"])
        torch.set_rng_state(data["torch_rng"])
        self.wall_before = float(data.get("wall_seconds", 0.0))

    def checkpoint(self) -> None:
        """Write the checkpoint atomically (a kill never leaves a half-written file)."""
        save_checkpoint(self.ckpt_path, {
            "kind": "training",
            "evaluator": self.ev.state(),
            "optimizer": self.opt.state_dict(),
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
        for k, val in scalars.items():
            self.writer.add_scalar(f"{kind}/{k}", val, self.games)
        line = json.dumps({"kind": kind, "games": self.games, "time": round(time.time(), 3), **scalars})
        with open(os.path.join(self.run_dir, "metrics.jsonl"), "a", encoding="utf-8") as f:
            f.write(line + "\n")

    # --- learning --------------------------------------------------------------------

    def update(self, games: list[FinishedGame]) -> dict:
        """Fit the lambda-returns of finished games: one pass of minibatch steps."""
        t0 = time.perf_counter()
        targets = lambda_returns(games, self.cfg.td.lambda_, self.v)
        boards = np.concatenate([g.boards for g in games])
        values = np.concatenate([g.values for g in games])
        y = np.concatenate(targets)
        x = self.ev.encoder(boards)
        t0 = self.timers.add("lambda-returns + encoding", t0)
        td_error = float(np.abs(y[:, 0] - values[:, 0]).mean())
        xt = torch.from_numpy(x).to(self.ev.device)
        yt = torch.from_numpy(y).to(self.ev.device)
        bs = self.cfg.td.batch_size
        for group in self.opt.param_groups:
            group["lr"] = self.learning_rate()
        self.ev.net.train()
        losses = []
        for _ in range(self.cfg.td.epochs):
            order = torch.from_numpy(self.rng.permutation(len(x))).to(self.ev.device)
            for i in range(0, len(x), bs):
                idx = order[i:i + bs]
                logits = self.ev.net.logits(xt[idx])
                if self.cfg.td.loss == "bce":
                    loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, yt[idx])
                else:
                    loss = torch.mean((torch.sigmoid(logits) - yt[idx]) ** 2)
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                self.opt.step()
                losses.append(float(loss.detach()))
                self.updates += 1
        self.timers.add("backward + step", t0)
        self.positions += len(x)
        return {"loss": float(np.mean(losses)), "td_error": td_error}

    def evaluate(self) -> dict:
        """Fixed-seed matches against the configured opponents, seats alternating."""
        me = NeuralAgent(self.ev, name="td")
        out = {}
        n = self.cfg.run.eval_games
        for spec in self.cfg.run.eval_opponents:
            recs = play_match(self.v, me, make_agent(spec, self.v), n, seed=1234)
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
        """Train until ``total_games`` games (default: the config's) or ``seconds`` pass.
        ``on_update()`` is called after every update (benchmarks sample progress with it)."""
        from tqdm import tqdm
        cfg = self.cfg
        total = total_games or cfg.selfplay.total_games
        t_begin = time.perf_counter()
        games0 = self.games
        next_ckpt = (self.games // cfg.run.checkpoint_every + 1) * cfg.run.checkpoint_every
        next_eval = (self.games // cfg.run.eval_every + 1) * cfg.run.eval_every if cfg.run.eval_every else None
        next_log = (self.games // cfg.run.log_every + 1) * cfg.run.log_every
        recent = self.recent
        recent.clear()
        source = self.self_play()
        if self.log_enabled:
            with open(os.path.join(self.run_dir, "metrics.jsonl"), "a", encoding="utf-8") as f:
                f.write(json.dumps({"kind": "session", "games": self.games, "time": round(time.time(), 3),
                                    "backend": self.backend, "self_play": source.describe()}) + "\n")
        bar = tqdm(total=total, initial=self.games, unit="game", disable=not progress,
                   dynamic_ncols=True, desc=f"train {self.v.id}")
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
                    recent["loss"].append(stats["loss"])
                    recent["td_error"].append(stats["td_error"])
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
                        self._log("train", scal)
                        recent.clear()
                    if next_eval is not None and self.games >= next_eval:
                        next_eval += cfg.run.eval_every
                        self.last_eval = self.evaluate()
                        self._log("eval", self.last_eval)
                    if self.games >= next_ckpt:
                        next_ckpt += cfg.run.checkpoint_every
                        self.checkpoint()
        finally:
            bar.close()
            source.close()
        elapsed = time.perf_counter() - t_begin
        if self.log_enabled:
            self.checkpoint()
            self.writer.flush()
        return {"games": self.games, "seconds": elapsed,
                "games_per_s": (self.games - games0) / max(elapsed, 1e-9),
                "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "timers": dict(self.timers.seconds)}


def export_checkpoint(run_dir: str, dest: str) -> None:
    """Copy a run's checkpoint (for shipping under ``checkpoints/``)."""
    shutil.copyfile(os.path.join(run_dir, "checkpoint.pt"), dest)

