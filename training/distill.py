"""Distillation: rounds of sample, rivals, label, fit and gate, each student the next teacher.

``nardy train`` with ``[method] kind = "distill"`` runs the method that made the platform's
strongest nets (backgammon ``search_targets_distill_iter3``): a teacher's n-ply labels of many
afterstates of its own self-play and of the close rivals of its decisions, fitted by new
(often larger) nets from scratch with learning-rate halvings.  Each ``[[rounds]]`` table of
the recipe is one round; the round's student, when it passes the gate, is the next round's
teacher.  The first teacher is ``model.init_from`` (a net of a sibling variant with the same
family is adopted into this variant's outputs: :func:`nardy_ai.netset.adopt_state`).

A round runs five phases, each resumable after a kill -9 at any point:

sample
    Fresh self-play of the teacher at 0 ply with exploration (``sample.epsilon``,
    ``sample.temperature``), each played afterstate kept with probability ``sample.keep``,
    until each class has its quota (``sample.quotas``: shares of ``sample.positions``; default
    the classes of the nets refitted, equally) of distinct afterstates.  The work is cut into
    tasks of ``sample.part`` afterstates with their own seeds (:func:`sample_tasks`), run on
    the backend (``--jobs`` processes or Ray) and each written as ``sample/part_NNNN.npz``
    when it arrives; the parts are then merged, repeats across parts dropped
    (:func:`merge_parts`).  The result depends on the recipe and seed only, not on the backend
    or the number of jobs.
rivals
    ``sample.decisions`` of the sampled afterstates (a seeded choice) become the opponent's
    decisions (a seeded roll each); the best ``sample.candidates`` plays of each at the
    teacher's 0 ply within ``sample.candidate_threshold`` points are added to the rows
    (:func:`training.search_targets.decision_candidates`; tasks of ``sample.part`` decisions
    as ``rivals/part_NNNN.npz``).  Result: ``samples.npz`` (the sampled rows first, then the
    new rivals).
label
    The teacher's ``label.plies`` expectimax outcome probabilities of every row (bear-off
    afterstates: the database's exact values; with ``label.two_ply = "decisions"`` the
    decisions and their rivals at 2 plies -- or 3 with ``label.decision_plies = 3``, 20 to 30
    times the CPU of a 2-ply row -- the rows where the ranking of close plays is learnt), in
    chunks of ``label.chunk`` rows, one backend task each, each written atomically as
    ``labels/chunk_NNNN.npz`` when it arrives: a kill loses at most the chunks in flight.
fit
    The student is a copy of the teacher whose nets ``fit.nets`` are fitted on their classes'
    rows (:func:`fit_student`): new nets of ``fit.hidden`` (seeded) with
    ``fit.learning_rate``, grown (``fit.grow_nets``: the teacher's net widened to ``fit.hidden``,
    its added units sending nothing on at first, so training starts from the teacher's values)
    with ``fit.learning_rate``, or warm-started (``fit.warm_nets``, or all when ``fit.hidden`` is
    empty) with ``fit.warm_learning_rate``.  The rows: the round's own and those of the
    ``fit.history`` rounds before it (labelled by their own teachers).  Adam, binary
    cross-entropy against the soft labels, ``fit.validation`` held out, early stop after
    ``fit.patience`` epochs without a lower held-out loss, or first ``fit.lr_halvings``
    returns to the best weights with half the learning rate.  After each net the set so far
    is written (``partial.pt``), and after each epoch the state of the net being fitted
    (``fit_epoch.pt``: weights, best weights, optimizer, epoch, counters, random generators): a
    kill loses at most the epoch in progress, and the resumed fit ends with the same net as one
    that was not killed.  Result: ``candidate.pt``.
gate
    The student against the teacher at 0 ply, ``gate.games`` in duplicate-dice pairs; it
    becomes ``current.pt`` (the next teacher) when its points per game are at least
    ``gate.threshold``.  Then ``current.pt`` plays ``run.eval_opponents``.

The run folder::

    config.toml        the recipe (as given; a --variant from the command line prepended)
    options.json       the command line's variant, backend, jobs, address (``--resume`` alone continues)
    state.json         round, phase, results (written atomically)
    current.pt         the current teacher (``td:DIR/current.pt``); round 0 = the starting net
    metrics.jsonl, tb/ the one metrics writer (training.metrics_log.MetricsLog)
    rounds/NN/         sample/, rivals/, samples.npz, labels/, partial.pt, fit_epoch.pt, candidate.pt,
                       gate.json

To resume on another machine only ``config.toml``, ``options.json``, ``state.json``,
``current.pt``, ``metrics.jsonl`` and the finished rounds' ``candidate.pt`` / ``gate.json``
are needed: a round whose files are missing starts again at the first phase whose inputs are
gone (all phases are seeded, so it draws and labels the same rows).  A resumed run may add
rounds, and the round in progress may change its ``fit`` and ``gate`` until its fit begins.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import asdict, dataclass
from typing import Callable, Iterator

import numpy as np
import torch

from nardy_ai.errors import NardyError
from nardy_ai.files import write_atomic
from nardy_ai.model import NeuralEvaluator, load_checkpoint, save_checkpoint
from nardy_ai.evaluator import evaluator_from_state, load_evaluator
from nardy_ai.netset import as_netset
from nardy_ai.variants import Variant

from .config import ConfigError, RoundConfig, TrainConfig, config_from_dict
from .run import STATE_FORMAT
from .td import can_widen, widen_copy
from .search_targets import (DECISION_STEP, DecisionGroups, LabellingRun, class_counts, class_quotas, decision_candidates,
                             decision_rolls, derive_seed, distinct_boards, evaluator_from_bytes, evaluator_payload,
                             fit_net, fitted_classes, gate_match, initial_evaluator, joined_units, labelled_units,
                             load_fit_epoch, one_torch_thread, read_npz, sample_afterstates, save_fit_epoch,
                             write_npz)

#: Version of the part, samples and chunk files of a distillation run.
FORMAT = 1
#: The phases of a round, in order.
PHASES = ("sample", "rivals", "label", "fit", "gate")
#: Purposes of the seeds derived from the run seed.
SEED_SAMPLE, SEED_PICK, SEED_RIVALS, SEED_LABEL, SEED_FIT, SEED_GATE = range(101, 107)


class DistillError(NardyError):
    """A distillation run that cannot go on: a damaged run folder, another run's files."""


# --- the tasks of the sample and rivals phases ----------------------------------------------

@dataclass(frozen=True, eq=False)
class PartTask:
    """A backend task of a phase (:attr:`PHASE`) that makes one part file: part ``index``, with
    the teacher's checkpoint (sha256, bytes)."""

    index: int
    variant: Variant
    checkpoint: tuple[str, bytes]

    PHASE = ""

    def label(self) -> str:
        return f"{self.PHASE} part {self.index}"

    @contextlib.contextmanager
    def teacher(self) -> Iterator:
        """Inside the block: the teacher (built once per process) and one torch thread."""
        with one_torch_thread():
            yield evaluator_from_bytes(*self.checkpoint, self.variant)


# --- sample --------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class SampleTask(PartTask):
    """One self-play task: ``quotas`` distinct afterstates per class of the teacher's self-play
    (``index``: the part's number, ``seed`` its dice and exploration)."""

    quotas: dict
    seed: int
    parallel_games: int
    epsilon: float
    temperature: float
    keep: float

    PHASE = "sample"


def sample_tasks(positions: int, part: int, shares: dict[str, float], names: tuple[str, ...], seed: int,
                 variant: Variant, checkpoint: tuple[str, bytes], parallel_games: int = 512,
                 epsilon: float = 0.05, temperature: float = 0.0, keep: float = 0.5,
                 skip: set[int] = frozenset()) -> list[SampleTask]:
    """The self-play tasks of a sample of ``positions`` afterstates: parts of ``part`` (the
    last one shorter), each split by class as ``shares`` (:func:`class_quotas`), part ``k``
    seeded ``derive_seed(seed, k)``; the parts in ``skip`` left out."""
    out = []
    for k, lo in enumerate(range(0, positions, part)):
        if k in skip:
            continue
        n = min(part, positions - lo)
        out.append(SampleTask(k, variant, checkpoint, class_quotas(n, shares, names), derive_seed(seed, k),
                              parallel_games, epsilon, temperature, keep))
    return out


def sample_part(task: SampleTask) -> tuple[int, np.ndarray, np.ndarray, int]:
    """Run one :class:`SampleTask` (a backend task, one torch thread): ``(index, boards,
    classes, games)``.  Stops with quotas short after as many games as afterstates asked."""
    with task.teacher() as ev:
        s = sample_afterstates(ev, task.quotas, task.seed, task.parallel_games, task.epsilon,
                               task.temperature, task.keep, max_games=max(sum(task.quotas.values()), 100))
    return task.index, s.boards, s.classes, s.games


def merge_parts(parts: list[tuple[np.ndarray, np.ndarray]], exclude: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """The parts' boards and classes in part order, each board once (its first occurrence),
    boards also in ``exclude`` dropped."""
    if not parts:
        return np.zeros((0, 28), np.int8), np.zeros(0, np.int8)
    b = np.concatenate([p[0] for p in parts])
    c = np.concatenate([p[1] for p in parts])
    if exclude is not None and len(exclude):
        both = np.concatenate([np.asarray(exclude, np.int8), b])
        first = distinct_boards(both)
        first = first[first >= len(exclude)] - len(exclude)
    else:
        first = distinct_boards(b)
    return b[first], c[first]


# --- rivals --------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class RivalsTask(PartTask):
    """One task of the rivals phase: these afterstates as decisions (``seed``: their order
    and rolls), the best ``keep`` plays within ``threshold`` points of the classes ``classes``."""

    boards: np.ndarray
    classes: tuple[str, ...]
    keep: int
    threshold: float
    seed: int

    PHASE = "rivals"


def decision_rows(n: int, decisions: int, seed: int) -> np.ndarray:
    """The rows (ascending) of a sample of ``n`` afterstates that become decisions: a seeded
    random ``decisions`` of them (all when ``decisions >= n``)."""
    if decisions >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).permutation(n)[:decisions])


def rivals_part(task: RivalsTask) -> tuple[int, np.ndarray, np.ndarray, int]:
    """Run one :class:`RivalsTask` (a backend task, one torch thread): ``(index, boards,
    classes, decisions used)``."""
    with task.teacher() as ev:
        unlimited = {c: len(task.boards) * task.keep for c in task.classes}
        b, c, used = decision_candidates(ev, task.boards, unlimited, task.keep, task.threshold, task.seed)
    return task.index, b, c, used


def decision_groups(decided: np.ndarray, part: int, seed: int, rows: np.ndarray, variant: Variant
                    ) -> DecisionGroups:
    """The plays of the rivals phase's decisions found among ``rows`` (labelled afterstates):
    ``decided`` are the afterstates that became decisions (in the phase's order), cut into
    tasks of ``part`` with the seeds ``derive_seed(seed, k)``, each rebuilt as that task made it
    (:func:`training.search_targets.decision_rolls`) and all its legal plays generated; a
    decision's group is its plays that are rows (by board; the row of a play's first
    occurrence), kept when at least two; ``decisions``: each group's decision by its place
    among the decisions rebuilt, task after task, each task's in its shuffled order.  Costs
    seconds: no evaluator is needed, the rows hold the close rivals the teacher picked."""
    from nardy_ai.movegen import generate
    where = {}
    for i, b in enumerate(np.asarray(rows, np.int8)):
        where.setdefault(b.tobytes(), i)
    members, offsets, which = [], [0], []
    for k, lo in enumerate(range(0, len(decided), part)):
        positions, dice = decision_rolls(decided[lo:lo + part], derive_seed(seed, k), variant)
        for a in range(0, len(positions), DECISION_STEP):
            plays = generate(positions[a:a + DECISION_STEP], dice[a:a + DECISION_STEP], variant)
            for g in range(len(plays.offsets) - 1):
                found = {where.get(b.tobytes(), -1) for b in plays.boards[plays.offsets[g]:plays.offsets[g + 1]]}
                found.discard(-1)
                if len(found) >= 2:
                    members.extend(sorted(found))
                    offsets.append(len(members))
                    which.append(lo + a + g)
    return DecisionGroups(np.array(members, np.int64), np.array(offsets, np.int64), np.array(which, np.int64))


# --- fit -----------------------------------------------------------------------------------

@dataclass
class FitSettings:
    """What :func:`training.search_targets.fit_net` reads."""
    learning_rate: float
    batch_size: int
    max_epochs: int
    patience: int
    validation: float
    lr_halvings: int
    rank_weight: float = 0.0


def refit_hidden(fit, label: str, old: list[int]) -> list[int]:
    """The hidden layers a round's fit gives the net of class ``label`` whose hidden layers are
    ``old``: ``fit.hidden`` for new and grown nets, ``old`` for warm-started ones (``fit.warm_nets``,
    or every net when ``fit.hidden`` is empty)."""
    return list(old) if not fit.hidden or label in fit.warm_nets else list(fit.hidden)


def check_growth(cfg: TrainConfig, hidden: dict[str, list[int]], first: int = 1) -> None:
    """Refuse a round whose ``fit.grow_nets`` would shrink a net: ``hidden`` is the hidden
    layers by class of the net set round ``first`` starts from (the starting net set for
    round 1), followed through the rounds (:func:`refit_hidden`); a grown net needs as many
    layers as its teacher's, each at least as wide."""
    hidden = dict(hidden)
    for i, r in enumerate(cfg.rounds[first - 1:], start=first - 1):
        ft = r.fit
        for c in ft.nets or list(hidden):
            if c not in hidden:
                continue
            old, new = hidden[c], refit_hidden(ft, c, hidden[c])
            if c in ft.grow_nets and not can_widen(old, new):
                raise ConfigError(f"rounds[{i + 1}].fit.grow_nets: the {c} net has hidden {old} there, "
                                  f"fit.hidden {new} (growing needs as many layers, each at least as wide)")
            hidden[c] = new


def nets_to_fit(netset, fit) -> list[str]:
    """The labels of the nets a round refits: ``fit.nets`` or every class a net values."""
    return list(fit.nets) or fitted_classes(netset)


def fit_student(netset, boards: np.ndarray, classes: np.ndarray, labels: np.ndarray, fit, seed: int,
                done: dict | None = None, on_net: Callable[[str, dict], None] = lambda *a: None,
                on_epoch: Callable[[str, int, float, float, float], None] = lambda *a: None,
                stop: Callable[[], bool] = lambda: False, groups: DecisionGroups | None = None,
                on_checkpoint: Callable[[str, dict], None] | None = None,
                resume: tuple[str, dict] | None = None) -> dict | None:
    """Refit the nets ``fit.nets`` of ``netset`` (in place) on their classes' rows of
    ``boards`` / ``labels`` (:mod:`nardy_ai.model` outcome probabilities): new nets of
    ``fit.hidden`` (``fit.activation`` or the old net's) from ``derive_seed(seed, i)`` with
    ``fit.learning_rate`` (``fit.grow_nets``: the old net widened to ``fit.hidden`` first, see
    :func:`training.td.widen_copy`), or -- ``fit.warm_nets``, or every net when ``fit.hidden``
    is empty -- the net itself with ``fit.warm_learning_rate``.  ``groups`` (the plays of
    decisions, indices into ``boards``) with ``fit.rank_weight`` > 0 add the ranking loss among
    each decision's plays of a net's rows (:func:`training.search_targets.fit_net`).  Nets named
    in ``done`` (label -> their figures) are skipped (a resumed fit).  ``on_net(label, figures)`` after each net,
    ``on_epoch(label, epoch, train_loss, val_loss, val_excess)`` after each epoch.  Returns the
    figures by net (rows, warm, learning rate, losses, epochs, seconds), or None when ``stop()``
    turned true (the net being fitted left as it was).

    Within a net: ``on_checkpoint(label, state)`` after each epoch with the fit's whole state
    (:func:`training.search_targets.fit_net`; ``state["seconds"]``: the net's fit time so far),
    and ``resume = (label, state)`` continues that net's fit from such a state (its epoch and
    seconds), ending as the fit that was not interrupted."""
    out = dict(done or {})
    wanted = nets_to_fit(netset, fit)
    routes = {label: (member, rows) for label, member, rows in netset.route(boards, classes)}
    for i, label in enumerate(wanted):
        if label in out:
            continue
        if label not in routes:
            out[label] = {"rows": 0, "skipped": "no labelled afterstates of this class"}
            on_net(label, out[label])
            continue
        member, rows = routes[label]
        if not isinstance(member, NeuralEvaluator) or len(rows) < 2:
            out[label] = {"rows": int(len(rows)), "skipped": "not a net" if len(rows) >= 2 else "too few rows"}
            on_net(label, out[label])
            continue
        warm = not fit.hidden or label in fit.warm_nets
        grown = not warm and label in fit.grow_nets
        hidden = tuple(refit_hidden(fit, label, member.hidden))
        activation = member.activation if warm or grown else (fit.activation or member.activation)
        s = derive_seed(seed, i)
        if not warm:
            torch.manual_seed(s % 2 ** 63)
            teacher = member
            member = NeuralEvaluator.create(netset.variant, member.encoder.name, hidden, activation,
                                            device=member.device)
            if grown:
                widen_copy(teacher, member, f"fit.grow_nets ({label})", "the teacher")
        lr = fit.warm_learning_rate if warm else fit.learning_rate
        w = getattr(fit, "rank_weight", 0.0)
        settings = FitSettings(lr, fit.batch_size, fit.max_epochs, fit.patience, fit.validation, fit.lr_halvings, w)
        x = member.encoder(boards[rows])
        mine = groups.restricted(rows, len(boards)) if groups is not None and w > 0 else None
        state = resume[1] if resume is not None and resume[0] == label else None
        t0 = time.perf_counter() - (state.get("seconds", 0.0) if state else 0.0)
        save = None
        if on_checkpoint is not None:
            def save(st, label=label, t0=t0):
                on_checkpoint(label, dict(st, seconds=time.perf_counter() - t0))
        res = fit_net(member, x, labels[rows], settings, s,
                      lambda e, tl, vl, ex, label=label: on_epoch(label, e, tl, vl, ex), stop, mine,
                      on_checkpoint=save, resume=state)
        if res is None:
            return None
        if label in netset.members:
            netset.members[label] = member
        else:
            netset.fallback = member
        res.update(rows=int(len(rows)), hidden=list(hidden), activation=activation, warm=warm, grown=grown,
                   learning_rate=lr, seconds=time.perf_counter() - t0,
                   val_excess=res["val_loss"] - res["val_entropy"])
        out[label] = res
        on_net(label, res)
    return out


# --- measured rates and the plan -------------------------------------------------------------

#: Self-play games in lockstep that give :func:`measure_rates` its rows spread over whole games.
SPREAD_GAMES = 4

#: Bytes on disk per row: a part or samples file (board 28 + class 1), a label chunk (board,
#: class, 5 or 6 float32 labels), the encoded rows of a fit (in memory only).
BYTES_SAMPLE_ROW, BYTES_CHUNK_ROW = 29, 29 + 4 * 6


def measure_rates(checkpoint: str, variant: Variant, fits: list[tuple[str, list[int], int]] | None = None,
                  seconds: float = 3.0, seed: int = 0, shares: dict[str, float] | None = None,
                  keep: float = 0.5, epsilon: float = 0.05, parallel_games: int = 128,
                  sample_rows: int = 2000, candidates: int = 5, threshold: float = 0.1,
                  three_ply: bool = False) -> dict:
    """Rates of this machine for :func:`plan`, per CPU second of one process with one torch
    thread (CPU time, so that other work on the machine does not skew them; a few seconds
    each): self-play afterstates kept per second (``sample_per_s``: rows split as ``shares``,
    default the net classes equally, with the recipe's ``keep``, ``epsilon`` and
    ``parallel_games``, timed over ``parallel_games`` games played to their ends, the class
    slowest to fill its share setting the rate; ``sample_per_s_by_class``: each class's
    rows per second), 1-ply
    labels per second (``label_per_s``), decisions turned into rivals per second
    (``rivals_per_s``, with the recipe's ``candidates`` and ``threshold``) and the new rows each
    decision adds (``rivals_per_decision``, for those settings: ``rivals_settings``), 2-ply
    labels per second (``label2_per_s``, on rivals and sampled rows, at least 16; with
    ``three_ply`` also 3-ply labels, ``label3_per_s``, on 2 of those rows) -- these on
    rows of :data:`SPREAD_GAMES` games played to their ends, as a round's rows are -- duplicate gate games
    per second (``gate_games_per_s``) and, for ``fits`` (label, hidden, encoder inputs), the
    rows fitted per second and torch thread for one epoch (``fit_rows_per_s``)."""
    from nardy_ai.search import search_values
    ev = load_evaluator(checkpoint, variant, "cpu")
    netset = as_netset(ev)
    names = netset.classes
    shares = shares or {c: 1.0 for c in fitted_classes(netset)}
    rates = {}
    with one_torch_thread():
        # self-play is timed over whole games (one lockstep batch of ``parallel_games`` played to
        # their ends, every class kept): the classes fill at different plies (backgammon's
        # crashed rows late in a game), so a few thousand rows timed from the first ply gave
        # rates 7 times too low.  The sampler fills all its quotas at once; the slowest class
        # to fill its share sets the rate
        t0 = time.process_time()
        wanted = {c: 10 ** 9 for c in shares if shares[c] > 0}
        s = sample_afterstates(ev, wanted, seed, parallel_games, epsilon, 0.0, keep, max_games=parallel_games)
        cpu = time.process_time() - t0
        per_class = {c: float(np.sum(s.classes == names.index(c))) / cpu for c in wanted}
        total = sum(shares[c] for c in wanted)
        rates["sample_per_s_by_class"] = per_class
        rates["sample_per_s"] = 1.0 / max((shares[c] / total) / max(per_class[c], 1e-9) for c in wanted)
        # labels and rivals are timed on rows spread over whole games: a few games in lockstep
        # reach their ends, where rows cost several times more than the first plies' (long
        # nardy, 1-ply: about 150 rows per CPU second over whole games, 1,000 over the first)
        spread = sample_afterstates(ev, class_quotas(min(sample_rows, 600), shares, names), seed + 1,
                                    SPREAD_GAMES, epsilon, 0.0, keep, max_games=64).boards
        spread = spread[np.random.default_rng(seed).permutation(len(spread))]
        t0, n = time.process_time(), 0
        while time.process_time() - t0 < seconds and n < len(spread):
            search_values(spread[n:n + 100], ev, 1)
            n += len(spread[n:n + 100])
        rates["label_per_s"] = n / (time.process_time() - t0)
        t0 = time.process_time()
        cand, cand_classes, used = decision_candidates(ev, spread[:300], {c: 10 ** 6 for c in shares if shares[c] > 0},
                                                       candidates, threshold, seed)
        rates["rivals_per_s"] = min(300, len(spread)) / (time.process_time() - t0)
        # rivals are new rows: the candidates not already among the sampled afterstates, as the
        # rivals phase counts them
        rates["rivals_per_decision"] = len(merge_parts([(cand, cand_classes)], exclude=spread)[0]) / max(used, 1)
        rates["rivals_settings"] = [int(candidates), float(threshold)]
        # 2-ply labels on the rows a round searches deepest (rivals and the spread rows mixed),
        # for ``seconds`` and at least 16 rows: a few rows alone gave rates 1.5 times too high
        deep = np.concatenate([cand[:len(cand) // 2], spread[:len(cand) // 2 + 8]]) if len(cand) else spread
        deep = deep[np.random.default_rng(seed + 2).permutation(len(deep))]
        t0, n = time.process_time(), 0
        while n < len(deep) and (n < 16 or time.process_time() - t0 < seconds):
            search_values(deep[n:n + 8], ev, 2)
            n += len(deep[n:n + 8])
        rates["label2_per_s"] = n / (time.process_time() - t0)
        if three_ply:           # 3-5 CPU s a long contact row: two rows, one at a time
            t0 = time.process_time()
            for i in range(min(2, len(deep))):
                search_values(deep[i:i + 1], ev, 3)
            rates["label3_per_s"] = min(2, len(deep)) / (time.process_time() - t0)
        t0 = time.process_time()
        gate_match(ev, ev, 64, seed)
        rates["gate_games_per_s"] = 64 / (time.process_time() - t0)
    fit_rates = {}
    for label, hidden, inputs in fits or []:
        key = f"{inputs}x{'x'.join(map(str, hidden))}"
        if key in fit_rates:
            continue
        net = torch.nn.Sequential(*[m for h0, h1 in zip([inputs] + hidden, hidden + [5])
                                    for m in (torch.nn.Linear(h0, h1), torch.nn.Sigmoid())])
        opt = torch.optim.Adam(net.parameters(), 1e-3)
        x, y = torch.rand(512, inputs), torch.rand(512, 5)
        with one_torch_thread():
            t0, n = time.process_time(), 0
            while time.process_time() - t0 < seconds / 3:
                loss = torch.nn.functional.binary_cross_entropy(net(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                n += 512
            fit_rates[key] = n / (time.process_time() - t0)
    rates["fit_rows_per_s"] = fit_rates
    return rates


def rivals_per_decision(candidates: int, threshold: float, rates: dict) -> float:
    """New rows a decision adds as rivals: the rate :func:`measure_rates` measured when it used
    these ``candidates`` and ``threshold``, else about ``candidates`` - 2.6 (backgammon: 5
    rivals of 300,000 decisions gave 698,296 new rows; long nardy's decisions give more, 3.4
    of 5: 50,884 new rows from 15,000)."""
    if rates.get("rivals_settings") == [int(candidates), float(threshold)] and "rivals_per_decision" in rates:
        return float(rates["rivals_per_decision"])
    return max(candidates - 2.6, 0.5)


def label_stage(plies: int, deep: float, rates: dict, deep_plies: int = 2) -> tuple[str, float]:
    """A label stage's name in the plan and its CPU seconds a row when a share ``deep`` of its
    rows is searched at ``deep_plies`` (2 or 3) plies and the rest at ``plies`` (1 or 2)
    (``rates``: :func:`measure_rates`)."""
    per = {1: rates["label_per_s"], 2: rates["label2_per_s"], 3: rates.get("label3_per_s")}
    what = f"label ({plies}-ply)" if deep == 0 else f"label ({deep_plies}-ply)" if deep == 1 \
        else f"label ({deep:.0%} {deep_plies}-ply)"
    return what, (1 - deep) / per[plies] + (deep / per[deep_plies] if deep else 0.0)


def plan(cfg: TrainConfig, rates: dict, jobs: int = 1, threads: int = 1,
         teacher_hidden: dict[str, list[int]] | None = None,
         inputs: dict[str, int] | None = None) -> list[dict]:
    """The stages of a distillation recipe with their sizes and, from ``rates``
    (:func:`measure_rates`), estimated seconds on ``jobs`` processes (sample, rivals, label:
    the one-process rate times ``jobs``) and ``threads`` torch threads (fit: one epoch of a
    net's rows -- the round's and those of its ``fit.history`` rounds -- at the measured
    rows/s, times ``fit.max_epochs`` -- an upper bound, early stop usually ends sooner -- with
    threads counted at 0.7 each beyond the first), and the bytes they write.  Rivals add the
    new rows a decision measured here (:func:`rivals_per_decision`)."""
    out, round_rows = [], []
    teacher_hidden = teacher_hidden or {}
    sizes = dict(teacher_hidden)             # each net's hidden layers as the rounds leave them
    inputs = inputs or {}
    speedup = 1 + 0.7 * max(threads - 1, 0)
    for i, r in enumerate(cfg.rounds):
        s, lb, ft = r.sample, r.label, r.fit
        name = r.name or f"round {i + 1}"
        rivals = int(s.decisions * rivals_per_decision(s.candidates, s.candidate_threshold, rates)) \
            if s.decisions else 0
        rows = s.positions + rivals
        round_rows.append(rows)
        fit_rows = sum(round_rows[max(0, i - ft.history):])
        deep = 0 if lb.plies == 2 else (s.decisions + rivals if lb.two_ply else 0)
        out.append({"round": i + 1, "name": name, "stage": "sample", "rows": s.positions,
                    "seconds": s.positions / (rates["sample_per_s"] * jobs), "bytes": 2 * BYTES_SAMPLE_ROW * s.positions})
        if s.decisions:
            out.append({"round": i + 1, "name": name, "stage": "rivals", "rows": rivals, "decisions": s.decisions,
                        "seconds": s.decisions / (rates["rivals_per_s"] * jobs), "bytes": 2 * BYTES_SAMPLE_ROW * rivals})
        what, per_row = label_stage(lb.plies, deep / rows, rates, lb.decision_plies)
        out.append({"round": i + 1, "name": name, "stage": what, "rows": rows,
                    "seconds": rows * per_row / jobs, "bytes": BYTES_CHUNK_ROW * rows})
        shares = s.quotas or {c: 1.0 for c in (ft.nets or teacher_hidden)}
        total = sum(shares.values()) or 1.0
        fit_s, nets = 0.0, []
        for c in (ft.nets or list(teacher_hidden)):
            hidden = refit_hidden(ft, c, sizes.get(c, [80]))
            sizes[c] = hidden
            key = f"{inputs.get(c, 238)}x{'x'.join(map(str, hidden))}"
            per_s = rates["fit_rows_per_s"].get(key) or min(rates["fit_rows_per_s"].values(), default=20000)
            n = fit_rows * shares.get(c, 0) / total
            fit_s += n * ft.max_epochs / (per_s * speedup)
            nets.append(f"{c} {hidden} ~{n:,.0f} rows")
        out.append({"round": i + 1, "name": name, "stage": "fit", "rows": fit_rows, "nets": nets,
                    "max_epochs": ft.max_epochs, "seconds": fit_s, "bytes": 0})
        out.append({"round": i + 1, "name": name, "stage": "gate", "rows": r.gate.games,
                    "seconds": r.gate.games / rates["gate_games_per_s"], "bytes": 0})
    return out


def format_plan(stages: list[dict], rates: dict, jobs: int, threads: int, machine: str) -> str:
    """The lines ``nardy train --plan`` prints for a distillation recipe."""
    lines = [f"machine: {machine}; {jobs} process(es) for sample / rivals / label, {threads} torch thread(s) to fit",
             "measured here, per CPU second of one process: "
             f"self-play {rates['sample_per_s']:,.0f} afterstates/s"
             + (" (" + ", ".join(f"{c} {v:,.0f}" for c, v in rates["sample_per_s_by_class"].items()) + ")"
                if len(rates.get("sample_per_s_by_class", {})) > 1 else "")
             + f", 1-ply labels {rates['label_per_s']:,.0f}/s, "
             f"2-ply labels {rates['label2_per_s']:,.1f}/s, "
             + (f"3-ply labels {rates['label3_per_s']:,.2f}/s, " if "label3_per_s" in rates else "")
             + f"rivals {rates['rivals_per_s']:,.0f} decisions/s"
             + (f" ({rates['rivals_per_decision']:.2f} new rows each)" if "rivals_per_decision" in rates else "")
             + ", "
             f"gate {rates['gate_games_per_s']:,.0f} games/s, fit "
             + ", ".join(f"{k}: {v:,.0f} rows/s" for k, v in rates["fit_rows_per_s"].items()),
             f"{'round':<18} {'stage':<14} {'rows':>11} {'hours':>7} {'disk MiB':>9}"]
    for st in stages:
        extra = f"  ({'; '.join(st['nets'])}; at most {st['max_epochs']} epochs)" if "nets" in st else ""
        extra += f"  ({st['decisions']:,} decisions)" if "decisions" in st else ""
        lines.append(f"{st['round']:>2} {st['name'][:15]:<15} {st['stage']:<14} {st['rows']:>11,} "
                     f"{st['seconds'] / 3600:>7.2f} {st['bytes'] / 2 ** 20:>9.0f}{extra}")
    lines.append(f"total: {sum(s['seconds'] for s in stages) / 3600:.1f} hours on cores not shared with other work "
                 f"(an upper bound: fits at their epoch limits), {sum(s['bytes'] for s in stages) / 2 ** 20:,.0f} MiB "
                 f"in the run folder")
    return "\n".join(lines)


# --- the run -------------------------------------------------------------------------------

class DistillRun(LabellingRun):
    """A distillation run in a folder (module docstring; the folder, state, resume, metrics
    and stops: :class:`training.run.StagedRun`)."""

    PHASES = PHASES
    UNIT = "round"
    KEPT_KINDS = ("part",)
    STATE_WHAT = "a distillation run"
    STOPS_AFTER = "its [[rounds]]"
    RAY_TASKS = "sampling and labelling"
    ERROR = DistillError
    FORMAT = FORMAT
    CHUNK_LINE = ("part", "rows")
    GATE_SIDES = ("student", "teacher")
    GATE_KEPT = "kept round {}'s net"
    GATE_FIGURES = ("points_per_game", "points_per_game_ci95", "win_rate")
    UNIT_DIGITS = 2

    # --- state -----------------------------------------------------------------------

    @property
    def units(self) -> int:
        return len(self.cfg.rounds)

    def _initial_state(self) -> dict:
        return {"format": STATE_FORMAT, "method": "distill", "round": 1, "phase": "sample",
                "current_round": 0, "history": [], "seconds": {p: 0.0 for p in PHASES},
                "config": self.cfg.to_dict()}

    def _state_ok(self, state) -> bool:
        return super()._state_ok(state) and state.get("method") == "distill"

    def _starting_evaluator(self):
        ev = initial_evaluator(self.cfg, self.v, self.device)
        have = fitted_classes(as_netset(ev))
        for i, r in enumerate(self.cfg.rounds):          # checked before any file is written
            for c in r.fit.nets:
                if c not in have:
                    raise ConfigError(f"rounds[{i + 1}].fit.nets: the starting net set has no net for "
                                      f"{c} (nets: {', '.join(have)})")
        check_growth(self.cfg, {k: list(m.hidden) for k, m in as_netset(ev).nets().items()})
        return ev

    def _start_payload(self, ev) -> dict:
        return evaluator_payload(ev, self.cfg, 0, round=0)

    def _load(self, config_text: str | None) -> None:
        self.state = self._read_state()
        self._check_config(config_text)

    def _check_config(self, config_text: str | None) -> None:
        """A resumed run may add rounds after the ones begun and change [run] / [ray]; the
        rest must be as it was (errors name the keys)."""
        saved = config_from_dict(self.state["config"]).to_dict()
        now = self.cfg.to_dict()
        begun = min(self.state["round"], len(saved["rounds"]))
        # the round in progress may still change its fit and gate until its fit begins
        open_fit = (self.state["round"] <= len(saved["rounds"])
                    and self.state["phase"] in ("sample", "rivals", "label"))

        def frozen(rounds, i):
            keep = rounds[i] if i < len(rounds) else None
            if keep is not None and open_fit and i == begun - 1:
                keep = {k: v for k, v in keep.items() if k not in ("fit", "gate")}
            return keep

        bad = [i + 1 for i in range(begun) if frozen(now["rounds"], i) != frozen(saved["rounds"], i)]
        if bad:
            what = (f"only its fit and gate may change before its fit begins, and rounds after round {begun} be "
                    f"added or changed" if open_fit else f"only rounds after round {begun} may be added or changed")
            raise NardyError(f"the config changes rounds {', '.join(map(str, bad))} of {self.run_dir}, already "
                             f"begun; {what}")
        if open_fit and now["rounds"] != saved["rounds"]:
            check_growth(self.cfg, {k: list(m.hidden) for k, m in as_netset(self._teacher()).nets().items()}, begun)
        self._require_same_config(saved, now, ("run", "ray", "rounds"))
        if now != saved:
            self.state["config"] = now
            self._write_state()
            if config_text is not None:
                write_atomic(os.path.join(self.run_dir, "config.toml"), config_text, DistillError)

    def recipe(self, r: int) -> RoundConfig:
        return self.cfg.rounds[r - 1]

    def _inputs_on_disk(self, r: int, phase: str) -> bool:
        if phase == "rivals":
            return os.path.exists(self._path(r, "sample.npz"))
        return super()._inputs_on_disk(r, phase)

    def _teacher(self):
        return self._load_current()

    def finished_message(self) -> str:
        return finished_message(self.run_dir, self.state)

    # --- the rounds ------------------------------------------------------------------

    def steps(self) -> dict:
        return {"sample": self.sample, "rivals": self.rivals, "label": self.label, "fit": self.fit_phase,
                "gate": self.gate}

    # --- phase: sample ---------------------------------------------------------------

    def _shares(self, r: int, netset) -> dict[str, float]:
        rc = self.cfg.rounds[r - 1]
        nets = nets_to_fit(netset, rc.fit)
        return rc.sample.quotas or {c: 1.0 for c in nets}

    def _parts(self, r: int, folder: str, tasks_for: Callable, fn, desc: str, unit: str, size, total: int,
               exclude: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, int] | None:
        """Run the part tasks of a phase, each written to ``folder/part_NNNN.npz`` with its
        settings; parts on disk with the same settings kept.  Returns the parts' boards and
        classes merged (:func:`merge_parts`, boards in ``exclude`` dropped) and the sum of their
        counts, or None when stopped."""
        d = self._path(r, folder)
        os.makedirs(d, exist_ok=True)
        sha, data = self._checkpoint_bytes()
        all_tasks = tasks_for((sha, data), set())
        settings = lambda t: {"format": FORMAT, "round": r, "index": t.index, "seed": t.seed,  # noqa: E731
                              "evaluator_sha256": sha, "size": size(t)}
        path = lambda i: os.path.join(d, f"part_{i:04d}.npz")                                 # noqa: E731
        have = {t.index for t in all_tasks if self._npz_ok(path(t.index), settings(t))}
        todo = [t for t in all_tasks if t.index not in have]
        done = sum(size(t) for t in all_tasks if t.index in have)
        for task, (index, boards, classes, count) in self._tasks(fn, todo, desc, unit, size, done, total):
            write_npz(path(index), format=np.int64(FORMAT), boards=boards, classes=classes, count=np.int64(count),
                      settings=np.array(json.dumps(settings(task))))
            self._log("part", r, self.state["phase"], {"part": index, "rows": int(len(boards)), "count": int(count)},
                      tb=False)
        if self.stop_requested:
            return None
        parts = [read_npz(path(t.index)) for t in all_tasks]
        boards, classes = merge_parts([(p["boards"], p["classes"]) for p in parts], exclude)
        return boards, classes, sum(int(p["count"]) for p in parts)

    def sample(self, r: int) -> bool:
        """Self-play parts of the teacher, merged into ``sample.npz``."""
        rc = self.cfg.rounds[r - 1].sample
        netset = as_netset(self._teacher())
        names = netset.classes
        shares = self._shares(r, netset)
        seed = derive_seed(self.cfg.seed, SEED_SAMPLE, r)
        t0 = time.perf_counter()

        def tasks_for(ck, skip):
            return sample_tasks(rc.positions, rc.part, shares, names, seed, self.v, ck, rc.parallel_games,
                                rc.epsilon, rc.temperature, rc.keep, skip)

        merged = self._parts(r, "sample", tasks_for, sample_part, f"round {r} sample", "pos",
                             lambda t: sum(t.quotas.values()), rc.positions)
        if merged is None:
            return False
        boards, classes, games = merged
        write_npz(self._path(r, "sample.npz"), format=np.int64(FORMAT), boards=boards, classes=classes,
                  settings=np.array(json.dumps({"round": r, "seed": seed, "games": games})))
        self._log("sample", r, "sample", {"positions": int(len(boards)), "games": games,
                                          "seconds": time.perf_counter() - t0,
                                          **class_counts(classes, names, "positions")})
        return True

    # --- phase: rivals ---------------------------------------------------------------

    def decisions_of(self, r: int, n: int) -> np.ndarray:
        """The rows of round ``r``'s sample of ``n`` afterstates taken as decisions (the
        round's seeded pick of ``sample.decisions``: :func:`decision_rows`)."""
        return decision_rows(n, self.cfg.rounds[r - 1].sample.decisions, derive_seed(self.cfg.seed, SEED_PICK, r))

    def rivals(self, r: int) -> bool:
        """The close rivals of ``sample.decisions`` decisions; ``samples.npz`` = sample + rivals."""
        rc = self.cfg.rounds[r - 1].sample
        z = read_npz(self._path(r, "sample.npz"))
        boards, classes = z["boards"], z["classes"]
        netset = as_netset(self._teacher())
        names = netset.classes
        nets = tuple(nets_to_fit(netset, self.cfg.rounds[r - 1].fit))
        t0 = time.perf_counter()
        new_b, new_c, used = np.zeros((0, 28), np.int8), np.zeros(0, np.int8), 0
        if rc.decisions:
            pick = self.decisions_of(r, len(boards))
            seed = derive_seed(self.cfg.seed, SEED_RIVALS, r)

            def tasks_for(ck, skip):
                return [RivalsTask(k, self.v, ck, boards[pick[lo:lo + rc.part]], nets, rc.candidates,
                                   rc.candidate_threshold, derive_seed(seed, k))
                        for k, lo in enumerate(range(0, len(pick), rc.part)) if k not in skip]

            merged = self._parts(r, "rivals", tasks_for, rivals_part, f"round {r} rivals", "dec",
                                 lambda t: len(t.boards), len(pick), exclude=boards)
            if merged is None:
                return False
            new_b, new_c, used = merged
        write_npz(self._path(r, "samples.npz"), format=np.int64(FORMAT),
                  boards=np.concatenate([boards, new_b]), classes=np.concatenate([classes, new_c]).astype(np.int8),
                  sampled=np.int64(len(boards)),
                  settings=np.array(json.dumps({"round": r, "decisions": used, "rivals": int(len(new_b))})))
        self._log("rivals", r, "rivals", {"rivals": int(len(new_b)), "decisions": used,
                                          "rows": int(len(boards) + len(new_b)), "seconds": time.perf_counter() - t0,
                                          **class_counts(new_c, names, "rivals")})
        return True

    # --- phase: label ----------------------------------------------------------------

    def two_ply_rows(self, r: int, z: dict) -> np.ndarray:
        """``(rows,)`` bool: the rows of round ``r``'s ``samples.npz`` (``z``) labelled at 2
        plies: with ``label.two_ply = "decisions"`` the sampled rows that became decisions
        (the rivals stage's seeded pick) and every rival row after them; none otherwise."""
        deep = np.zeros(len(z["boards"]), bool)
        if self.cfg.rounds[r - 1].label.two_ply == "decisions":
            sampled = int(z["sampled"])
            deep[self.decisions_of(r, sampled)] = True
            deep[sampled:] = True
        return deep

    def label(self, r: int) -> bool:
        """The teacher's labels of ``samples.npz`` in chunks on the backend (chunks on disk kept)."""
        lb = self.cfg.rounds[r - 1].label
        z = self._read_samples(r)
        sha, data = self._checkpoint_bytes()
        settings = {"format": FORMAT, "round": r, "kind": "search", "plies": lb.plies, "evaluator_sha256": sha,
                    "seed": derive_seed(self.cfg.seed, SEED_LABEL, r), "chunk": lb.chunk}
        if lb.two_ply:          # only when set: chunks labelled before the key existed stay valid
            settings["two_ply"] = lb.two_ply
        if lb.decision_plies != 2:
            settings["decision_plies"] = lb.decision_plies
        return self._label_chunks(r, z["boards"], z["classes"], self.two_ply_rows(r, z), (sha, data),
                                  settings, f"round {r} label")

    # --- phase: fit ------------------------------------------------------------------

    def fit_units(self, r: int) -> list:
        """The rounds round ``r`` fits on with their labelled rows: its own and the
        ``fit.history`` rounds before it, labelled by their own teachers (:func:`labelled_units`)."""
        return labelled_units(self, r, self.cfg.rounds[r - 1].fit.history)

    def round_groups(self, r: int, boards: np.ndarray) -> DecisionGroups:
        """The plays of round ``r``'s decisions among ``boards`` (that round's labelled rows,
        :func:`decision_groups`); none when the round made no decisions or its sample is gone."""
        rc = self.cfg.rounds[r - 1].sample
        path = self._path(r, "samples.npz")
        if not rc.decisions or not os.path.exists(path):
            return DecisionGroups.joined([])
        z = self._read_samples(r)
        sampled = z["boards"][:int(z["sampled"])]
        pick = self.decisions_of(r, len(sampled))
        return decision_groups(sampled[pick], rc.part, derive_seed(self.cfg.seed, SEED_RIVALS, r), boards, self.v)

    def fit_groups(self, r: int, units) -> DecisionGroups | None:
        """The decision groups of round ``r``'s fit on ``units`` (:meth:`fit_units`: the
        rounds it reads, oldest first), when ``fit.rank_weight`` > 0: each round's groups among
        its own rows, numbered into the rows joined."""
        if not self.cfg.rounds[r - 1].fit.rank_weight:
            return None
        parts, first = [], 0
        for h, (boards, _, _) in units:
            parts.append((self.round_groups(h, boards), first))
            first += len(boards)
        return DecisionGroups.joined(parts)

    def fit_phase(self, r: int) -> bool:
        """The student: the teacher with ``fit.nets`` refitted; ``candidate.pt``.  Each net
        finished is kept in ``partial.pt`` (a resumed fit with the same fit settings starts at the
        next net), and the net being fitted after each epoch in ``fit_epoch.pt`` (a resumed fit
        goes on from that epoch)."""
        ft = self.cfg.rounds[r - 1].fit
        units = self.fit_units(r)
        boards, classes, labels = joined_units(units)
        groups = self.fit_groups(r, units)
        partial = self._path(r, "partial.pt")
        epoch_file = self._path(r, "fit_epoch.pt")
        payload, resume = self._fit_progress(r)
        if payload is not None:
            student = evaluator_from_state(payload["evaluator"], self.v, self.device)
            done = payload.get("fit", {})
        else:
            student, done = self._teacher(), {}
        netset = as_netset(student)
        sha = self._checkpoint_bytes()[0]
        bars = {}
        if resume is not None:
            self.print(f"round {r}: the {resume[0]} net's fit goes on after epoch {resume[1]['epoch']}")

        def on_epoch(label, epoch, train_loss, val_loss, excess):
            if label not in bars:
                bars[label] = self.progress_bar(ft.max_epochs, f"round {r} fit {label}", "epoch",
                                                initial=epoch - 1)
            bars[label].update(1)
            bars[label].set_postfix(val=f"{val_loss:.5f}", excess=f"{excess:.6f}")
            if self.log_enabled:
                self.metrics.record(f"fit/{label}", epoch, {"train_loss": train_loss, "val_loss": val_loss,
                                                            "val_excess": excess},
                                    kind="fit_epoch", round=r, phase="fit", net=label, epoch=epoch,
                                    time=self.now())

        def on_net(label, figures):
            if label in bars:
                bars[label].close()
            stats_so_far[label] = figures
            save_checkpoint(partial, evaluator_payload(netset, self.cfg, r, round=r, teacher_sha256=sha,
                                                       fit=dict(stats_so_far), fit_settings=asdict(ft)))
            if "val_loss" in figures:
                self.print(f"round {r}: {label} net fitted on {figures['rows']:,} rows: held-out excess "
                           f"{figures['val_excess']:.2e} (best epoch {figures['best_epoch']} of "
                           f"{figures['epochs']}, {figures['seconds'] / 60:.1f} min)"
                           + (f"; held-out decisions ({figures['val_decisions']:,}): regret "
                              f"{figures['val_regret_before'] * 1000:.2f} -> {figures['val_regret'] * 1000:.2f} mp"
                              if "val_regret" in figures else ""))

        def on_checkpoint(label, state):
            save_fit_epoch(epoch_file, {"round": r, "teacher_sha256": sha, "fit_settings": asdict(ft),
                                        "net": label, "state": state})

        stats_so_far = dict(done)
        try:
            stats = fit_student(netset, boards, classes, labels, ft, derive_seed(self.cfg.seed, SEED_FIT, r),
                                done, on_net, on_epoch, self._stopping, groups, on_checkpoint, resume)
        finally:
            for b in bars.values():
                b.close()
        if stats is None:
            return False
        save_checkpoint(self._path(r, "candidate.pt"),
                        evaluator_payload(netset, self.cfg, r, round=r, teacher_sha256=sha, fit=stats))
        if os.path.exists(epoch_file):
            os.remove(epoch_file)
        scalars = {}
        for label, s in stats.items():
            if "val_loss" in s:
                scalars.update({f"val_excess_{label}": s["val_excess"], f"val_loss_{label}": s["val_loss"],
                                f"epochs_{label}": s["epochs"], f"best_epoch_{label}": s["best_epoch"],
                                f"rows_{label}": s["rows"], f"seconds_{label}": s["seconds"]})
                scalars.update({f"{k}_{label}": s[k] for k in ("val_rank", "val_regret", "val_regret_before")
                                if k in s})
        self._log("fit", r, "fit", scalars)
        return True

    def _fit_progress(self, r: int) -> tuple[dict | None, tuple[str, dict] | None]:
        """What round ``r``'s fit keeps of an earlier session: ``partial.pt``'s payload (the
        nets finished) and ``(net, state)`` of ``fit_epoch.pt`` (the net in mid-fit), each when
        it belongs to this fit (the same round, teacher and fit settings; a net not yet
        finished), else None (that work is done again)."""
        ft = asdict(self.cfg.rounds[r - 1].fit)
        sha = self._checkpoint_bytes()[0]
        payload, resume = None, None
        partial, epoch_file = self._path(r, "partial.pt"), self._path(r, "fit_epoch.pt")
        if os.path.exists(partial):
            p = load_checkpoint(partial)
            if p.get("round") == r and p.get("teacher_sha256") == sha and p.get("fit_settings", ft) == ft:
                payload = p
        done = payload.get("fit", {}) if payload is not None else {}
        if os.path.exists(epoch_file):
            e = load_fit_epoch(epoch_file)
            if (e.get("round") == r and e.get("teacher_sha256") == sha and e.get("fit_settings") == ft
                    and e.get("net") not in done):
                resume = e["net"], e["state"]
        return payload, resume

    def _kept_fit_epochs(self, r: int) -> dict[str, float]:
        payload, resume = self._fit_progress(r)
        kept = {net: float("inf") for net in (payload or {}).get("fit", {})}
        if resume is not None:
            kept[resume[0]] = resume[1]["epoch"]
        return kept

    # --- phase: gate -----------------------------------------------------------------

    def gate(self, r: int) -> bool:
        """Student vs teacher; the student becomes ``current.pt`` when its points per game
        reach ``gate.threshold``; then ``current.pt`` against ``run.eval_opponents``."""
        return self._gate(r, derive_seed(self.cfg.seed, SEED_GATE, r), {"name": self.recipe(r).name})


# --- the command line ----------------------------------------------------------------------

def finished_message(run_dir: str, state: dict) -> str:
    """What ``--resume`` of a finished distillation run says."""
    done = len(state["history"])
    return (f"{run_dir} is finished: {done} round(s) done, current.pt from round {state['current_round']}. "
            f"To extend it, add [[rounds]] tables to a copy of {os.path.join(run_dir, 'config.toml')} and run "
            f"nardy train --config COPY --out {run_dir} --resume")
