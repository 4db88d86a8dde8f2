"""Self-play on Ray: many self-play actors feed one learner.

The learner is the :class:`~training.td.Trainer` in the driver process: it receives finished
games, computes their lambda-returns, takes the gradient steps, logs, evaluates and writes
checkpoints exactly as a local run does (same folder layout, same checkpoint, ``--resume``
works across backends).  Only where the games come from changes:

- each actor (:class:`SelfPlayActor`, one CPU) holds its own copy of the network and plays
  ``parallel_games`` games in lockstep with it (:class:`~training.selfplay.SelfPlay`), returning
  its finished games in batches of at least ``games_per_call``;
- the learner publishes its weights every ``weights_every`` updates (an update: fitting one
  batch of ``td.update_games`` finished games; one ``ray.put``); an actor takes the newest
  published weights with its next batch request, so a game may be played by weights a few
  updates old (the mean lag of the games received is logged as ``weights_lag``, in updates);
- an actor that dies (killed, out of memory, lost node) loses only the games it was playing:
  none of them has been counted, and a fresh actor with the current weights takes its place.

Games are counted when the learner receives them, so nothing is counted twice.  Actor dice
come from ``SeedSequence([seed, games so far, actor slot, restarts])``; unlike a local run, a
Ray run is not reproducible game for game (actors race), only in distribution.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np
import torch

from nardy_ai.backends import BackendError, ray_lost_work_errors, ray_task_error, require_ray, start_ray
from nardy_ai.evaluator import evaluator_from_state
from nardy_ai.variants import parse_variant_spec


class SelfPlayActor:
    """A self-play worker: its own network copy and ``parallel_games`` games in lockstep.

    A plain class; :class:`RaySelfPlay` turns it into a Ray actor.
    """

    def __init__(self, variant: str, evaluator_state: dict, weights: dict, version: int,
                 parallel_games: int, epsilon: float, temperature: float, seed: list[int]):
        from .selfplay import SelfPlay
        torch.set_num_threads(1)
        self.ev = evaluator_from_state(evaluator_state, parse_variant_spec(variant), "cpu")
        self.set_weights(weights, version)
        self.play = SelfPlay(self.ev, parallel_games, np.random.default_rng(np.random.SeedSequence(seed)),
                             epsilon, temperature)

    def set_weights(self, weights: dict, version: int) -> None:
        self.ev.net.load_state_dict(weights)
        self.ev.net.eval()
        self.version = version

    def play_games(self, games: int, weights: dict | None = None, version: int = 0) -> dict:
        """Play until at least ``games`` games have finished (taking ``weights`` first, if
        given); the finished games, the weights version that played them and the seconds."""
        if weights is not None:
            self.set_weights(weights, version)
        t0 = time.perf_counter()
        finished = []
        while len(finished) < games:
            finished += self.play.ply()
        return {"games": finished, "version": self.version, "seconds": time.perf_counter() - t0}


def _weights(ev) -> dict:
    return {k: v.detach().to("cpu").clone() for k, v in ev.net.state_dict().items()}


class RaySelfPlay:
    """The learner's side of Ray self-play: starts the actors, hands out weights, collects
    finished games (:meth:`games`), replaces dead actors."""

    retries = 10        # actor deaths tolerated per run session before giving up

    def __init__(self, trainer, address: str | None = None, actors: int = 0, weights_every: int = 1,
                 parallel_games: int = 0, games_per_call: int = 0, log: Callable[[str], None] = print,
                 actor_class: type | None = None):
        self.ray = ray = require_ray()
        self.trainer = trainer
        self.log = log
        self.owns = start_ray(address)
        cfg = trainer.cfg
        cpus = int(ray.cluster_resources().get("CPU", 1))
        # One actor per CPU: the learner (this process, outside Ray's accounting) waits for
        # games much of the time; on 2 cores 2 actors gave 451 games/s, 1 actor 332.
        self.n = actors or max(1, cpus)
        self.weights_every = weights_every
        self.parallel_games = parallel_games or cfg.selfplay.parallel_games
        self.games_per_call = games_per_call or cfg.td.update_games
        self.remote_class = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(
            actor_class or SelfPlayActor)
        self.address = address
        self.deaths = 0
        self.started = 0
        self.updates = 0            # learner updates this session (the weights' version)
        self.version = -1
        self.weights_ref = None
        self.publish()
        self.actors: list = [None] * self.n
        self.actor_version = [0] * self.n
        self.calls: dict = {}
        for slot in range(self.n):
            self._start(slot)

    def describe(self) -> str:
        where = f"cluster {self.address}" if self.address else "local Ray instance"
        return f"Ray {self.ray.__version__}, {where}, {self.n} self-play actor{'s' if self.n > 1 else ''}"

    def publish(self) -> None:
        """Put the learner's current weights where the actors fetch them."""
        self.weights_ref = self.ray.put(_weights(self.trainer.ev))
        self.version = self.updates

    def _start(self, slot: int) -> None:
        t, cfg = self.trainer, self.trainer.cfg
        seed = [cfg.seed, t.games, slot, self.started]
        self.started += 1
        self.actors[slot] = self.remote_class.remote(
            t.cfg.variant, t.ev.state(), self.weights_ref, self.version, self.parallel_games,
            cfg.selfplay.epsilon, cfg.selfplay.temperature, seed)
        self.actor_version[slot] = self.version
        self._request(slot)

    def _request(self, slot: int) -> None:
        fresh = self.actor_version[slot] != self.version
        ref = self.actors[slot].play_games.remote(self.games_per_call, self.weights_ref if fresh else None,
                                                  self.version)
        self.actor_version[slot] = self.version
        self.calls[ref] = slot

    def games(self) -> list:
        """The finished games of the next actor batch to arrive (empty if its actor died)."""
        ray = self.ray
        from ray import exceptions as rex
        ready, _ = ray.wait(list(self.calls), num_returns=1)
        ref = ready[0]
        slot = self.calls.pop(ref)
        try:
            out = ray.get(ref)
        except rex.RayTaskError as e:                      # the actor's code raised
            raise ray_task_error(e, f"self-play actor {slot}") from None
        except ray_lost_work_errors() as e:
            self.deaths += 1
            if self.deaths > self.retries:
                raise BackendError(f"self-play actors died {self.deaths} times; giving up ({type(e).__name__})") from None
            self.log(f"self-play actor {slot} died ({type(e).__name__}); its unfinished games are "
                     f"dropped and a new actor takes its place")
            ray.kill(self.actors[slot], no_restart=True)
            self._start(slot)
            return []
        self._request(slot)
        self.trainer.recent["weights_lag"].append(self.updates - out["version"])
        return out["games"]

    def after_update(self) -> None:
        """The learner has fitted one batch: publish every ``weights_every`` updates."""
        self.updates += 1
        if self.updates - self.version >= self.weights_every:
            self.publish()

    def close(self) -> None:
        for a in self.actors:
            if a is not None:
                try:
                    self.ray.kill(a, no_restart=True)
                except Exception:
                    pass
        self.calls.clear()
        if self.owns and self.ray.is_initialized():
            self.ray.shutdown()
