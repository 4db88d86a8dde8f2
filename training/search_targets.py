"""Training on search targets: generations of sample, label, fit and gate.

TD(lambda) self-play plateaus; strong engines refine a TD-trained evaluator by supervised
learning on targets from search.  ``nardy train`` with ``[method] kind = "search_targets"``
runs that as generations, each of four phases, each resumable:

sample
    Self-play of the current evaluator at 0 ply with exploration (``sample.epsilon``: a
    uniformly random play; ``sample.temperature``: a softmax over equity), many games in
    lockstep (:class:`training.selfplay.SelfPlay`).  The positions kept are **afterstates** (the
    board just played, seen by the side that moved: what the evaluator values), each played
    afterstate a candidate with probability ``sample.keep`` (so that a class is spread over
    many games), finished games excluded.  Per-class quotas (``sample.quotas``, shares of
    ``sample.positions``; default: the classes a net values, equally) are filled with
    *distinct* afterstates (exact board bytes).  With ``sample.oversample = k > 1`` each quota
    is drawn ``k`` times over and the afterstates whose 0-ply and 1-ply equities differ most
    are kept (the 1-ply values cost as much as labelling the extra rows).  With
    ``sample.candidates = k > 1`` each sampled afterstate instead becomes the opponent's
    decision (flipped, a seeded roll) and its best ``k`` plays at 0 ply within
    ``sample.candidate_threshold`` points are kept (:func:`decision_candidates`): the labels
    then show the net the close rivals of real decisions side by side.  Sampling runs in
    this process; the result is ``samples.npz``.
label
    Every afterstate gets the outcome probabilities (:mod:`nardy_ai.model` layout, for the
    side that moved) of the frozen current evaluator's n-ply expectimax
    (:func:`nardy_ai.search.search_values`; ``label.plies``, default 1; a seeded random
    ``label.two_ply_fraction`` of the rows at 2 plies) or of truncated rollouts
    (``label.kind = "rollout"``: :func:`nardy_ai.rollout.rollout`, the evaluator at 0 ply on
    both sides, ``label.rollout_games`` games cut after ``label.rollout_truncate`` plies).
    Bear-off afterstates (:mod:`nardy_ai.classes`) get the one-sided database's exact values
    whatever the evaluator.  The rows are cut into chunks of ``label.chunk`` afterstates, one
    task each on the backend (this process, ``--jobs`` local processes or Ray: tasks carry the
    checkpoint's bytes), each written atomically as ``labels/chunk_NNNN.npz`` when it arrives:
    a kill loses at most the chunks in flight (one per worker).  A chunk's labels depend only
    on its rows, the checkpoint and the seed, never on the backend (one torch thread each).
fit
    The next evaluator starts as a copy of the current one (warm start) and each of its nets
    is fitted on the labelled afterstates of its classes (the fallback on the classes without
    a member; the database is exact and not fitted): binary cross-entropy of each sigmoid
    output against the soft targets, Adam, minibatches, a held-out validation share
    (``fit.validation``), early stop after ``fit.patience`` epochs without a lower validation
    loss (or first ``fit.lr_halvings`` returns to the best weights with half the learning
    rate), the best epoch's weights kept (the warm start's own, if no epoch beats it).  After
    each epoch ``fit_epoch.pt`` holds the nets finished and the state of the one being fitted:
    a kill loses at most the epoch in progress.  Result: ``candidate.pt``.
gate
    The candidate plays the current evaluator at 0 ply, ``gate.games`` games in duplicate-dice
    pairs (each pair's two games roll the same dice with the seats swapped); it becomes
    ``current.pt`` only when its points per game are at least ``gate.threshold`` (default 0:
    not losing).  ``gate.json`` keeps the result with its 95% interval (1.96 standard errors
    over the pairs).  Then the current evaluator plays ``run.eval_opponents`` (as the TD
    trainer's evaluation does) and the next generation starts.

The run folder::

    config.toml            the config, copied at the start
    current.pt             the current evaluator (a checkpoint: ``td:DIR/current.pt``)
    state.json             generation and phase (written atomically), results so far
    metrics.jsonl          one JSON line per event, append-only
    tb/                    TensorBoard: losses per net, label throughput, gate, evaluation
    generations/NNN/       samples.npz, labels/chunk_NNNN.npz, candidate.pt, gate.json

``--resume`` continues in the phase that was running: sampling starts its generation's
sample again (it is seeded, so it draws the same afterstates), labelling skips the chunks on
disk, fitting and gating start again.  Ctrl-C or SIGTERM stops at the next safe point (after
a self-play ply, a chunk, a minibatch, a gate batch) and prints how to resume.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import json
import math
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np
import torch

from nardy_ai.bearoff import BearoffEvaluator
from nardy_ai.board import CHECKERS, OFF, flip
from nardy_ai.classes import class_names, position_classes
from nardy_ai.errors import NardyError
from nardy_ai.evaluator import evaluator_from_state, load_evaluator
from nardy_ai.files import atomic_file, write_atomic
from nardy_ai.model import (CheckpointError, NeuralEvaluator, equity, load_checkpoint, n_outputs, read_torch_file,
                            save_checkpoint)
from nardy_ai.netset import NetSet, as_netset
from nardy_ai.variants import Variant

from .config import ConfigError, TrainConfig, check_quotas, config_from_dict
from .run import STATE_FORMAT, StagedRun, label_chunk_paths, write_json

#: Version of the samples and label-chunk files (``format`` in each NPZ).
FORMAT = 1
#: The phases of a generation, in order.
PHASES = ("sample", "label", "fit", "gate")
#: Duplicate pairs of a gate played in lockstep (one :func:`play_games` call per side).
GATE_BATCH = 500


class SearchTargetsError(NardyError):
    """A search-targets run that cannot go on: a damaged run folder, another run's files."""


# --- files ---------------------------------------------------------------------------------

def write_npz(path: str, **arrays) -> None:
    """Write arrays to ``path`` atomically (a temporary file, then a rename)."""
    with atomic_file(path, SearchTargetsError) as f:
        np.savez(f, **arrays)


def read_npz(path: str) -> dict[str, np.ndarray]:
    """The arrays of an NPZ file (no pickled objects); a :class:`SearchTargetsError` for a
    file that is not one."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError) as e:
        raise SearchTargetsError(f"cannot read {path}: {e}") from None


def read_label_chunks(paths: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The labelled afterstates of these label files (:func:`~.run.label_chunk_paths`),
    concatenated in order: boards, classes, labels."""
    parts = [read_npz(p) for p in paths]
    return tuple(np.concatenate([p[k] for p in parts]) for k in ("boards", "classes", "labels"))


def _settings(arrays: dict) -> dict:
    """The JSON ``settings`` entry of a samples or chunk file."""
    return json.loads(str(arrays["settings"]))


def derive_seed(*parts: int) -> int:
    """A 63-bit seed from integers (the run seed, the generation, a purpose, ...)."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1, np.uint64)[0] >> np.uint64(1))


_seed = derive_seed


#: Purposes of the seeds derived from the run seed.
_SAMPLE, _KEEP, _TWO_PLY, _ROLLOUT, _SPLIT, _FIT, _GATE, _CANDIDATES = range(1, 9)


# --- the evaluator -------------------------------------------------------------------------

def evaluator_payload(ev, cfg: TrainConfig, generation: int, **extra) -> dict:
    """A checkpoint of an evaluator of this method (``td:`` agents read it)."""
    return {"kind": "search_targets", "evaluator": ev.state(), "config": cfg.to_dict(),
            "generation": generation, **extra}


def initial_evaluator(cfg: TrainConfig, variant: Variant, device=None):
    """The evaluator generation 1 starts from.  With ``[model.classes]``: a net set built as
    the TD trainer builds it, warm-started from ``model.init_from`` when given (same rules).
    Without: ``model.init_from``'s own evaluator (a single net or a net set, as it is; a net of
    a sibling variant with the same outputs is adopted: :func:`nardy_ai.netset.adopt_state`),
    or a fresh single net from ``[model]``."""
    from .td import Trainer

    m = cfg.model
    if m.init_from and not m.classes:
        try:
            # a net of a sibling variant (same family and outputs) is adopted
            return load_evaluator(m.init_from, variant, device, siblings="adopt")
        except CheckpointError as e:
            raise ConfigError(f"model.init_from: {e}") from None

    class _Start:                     # what Trainer._create and Trainer._warm_start read
        def __init__(self):
            self.cfg, self.v = cfg, variant

    start = _Start()
    start.ev = Trainer._create(start, device)
    if m.init_from:
        Trainer._warm_start(start, m.init_from)
    return start.ev


_EVALUATORS: dict[str, Any] = {}


def evaluator_from_bytes(sha: str, data: bytes, variant: Variant):
    """The evaluator of a checkpoint file's bytes, on the CPU, built once per process."""
    if sha not in _EVALUATORS:
        ev = load_evaluator(data, variant, "cpu")
        _EVALUATORS.clear()           # one evaluator per generation: keep the newest only
        _EVALUATORS[sha] = ev
    return _EVALUATORS[sha]


def fitted_classes(netset: NetSet) -> list[str]:
    """The classes a net values (the others have the bear-off database)."""
    return [c for c in netset.classes if isinstance(netset.member_for(c), NeuralEvaluator)]


def class_quotas(positions: int, shares: dict[str, float], names: tuple[str, ...]) -> dict[str, int]:
    """Afterstates per class, in class order: ``positions`` split in proportion to ``shares``
    (largest remainders get the rows left over, so the counts add up to ``positions``)."""
    total = sum(shares.values())
    order = [c for c in names if shares.get(c, 0) > 0]
    exact = np.array([positions * shares[c] / total for c in order])
    counts = np.floor(exact).astype(np.int64)
    left = positions - int(counts.sum())
    if left > 0:
        counts[np.argsort(-(exact - counts), kind="stable")[:left]] += 1
    return dict(zip(order, counts.tolist()))


def class_counts(classes: np.ndarray, names: tuple[str, ...], prefix: str) -> dict[str, int]:
    """Rows of each class (``classes``: ids into ``names``), keyed ``PREFIX_CLASS`` (metrics)."""
    return {f"{prefix}_{c}": int(np.sum(classes == names.index(c))) for c in names}


# --- sample --------------------------------------------------------------------------------

@dataclass
class Samples:
    """Distinct afterstates ``(N, 28)`` int8 with their class ids ``(N,)``, and how they were
    drawn: ``games`` finished self-play games, ``candidates`` played afterstates kept as
    candidates (``sample.keep``), ``repeats`` candidates dropped as repeats of earlier ones,
    ``short`` the classes whose quota could not be filled (afterstates missing)."""

    boards: np.ndarray
    classes: np.ndarray
    games: int
    candidates: int
    repeats: int
    short: dict[str, int]


def distinct_boards(boards: np.ndarray) -> np.ndarray:
    """Rows of ``boards`` that are the first occurrence of their board, ascending (the
    dedupe of samples: exact board bytes)."""
    if not len(boards):
        return np.zeros(0, np.int64)
    keys = np.ascontiguousarray(boards, np.int8).view(np.dtype((np.void, boards.shape[1]))).ravel()
    _, first = np.unique(keys, return_index=True)
    return np.sort(first)


_distinct = distinct_boards


def sample_afterstates(evaluator, quotas: dict[str, int], seed: int, parallel_games: int = 512,
                       epsilon: float = 0.0, temperature: float = 0.0, keep: float = 1.0,
                       max_games: int | None = None, progress: bool = False,
                       stop: Callable[[], bool] = lambda: False) -> Samples | None:
    """Distinct afterstates from self-play of ``evaluator`` (module docstring, *sample*):
    ``quotas[c]`` of class ``c`` (class names of the variant's family), each the first ones
    met in play.  Stops early, with the quotas short, after ``max_games`` finished games.
    Returns None when ``stop()`` turns true (checked after every ply)."""
    from tqdm import tqdm

    from .selfplay import SelfPlay
    v = evaluator.variant
    names = class_names(v)
    ids = {c: names.index(c) for c in quotas if quotas[c] > 0}
    rng = np.random.default_rng(seed)
    keep_rng = np.random.default_rng(_seed(seed, _KEEP))
    play = SelfPlay(evaluator, parallel_games, rng, epsilon, temperature)
    pools: dict[str, list[np.ndarray]] = {c: [] for c in ids}
    raw = {c: 0 for c in ids}
    full = {c: False for c in ids}
    games = candidates = repeats = 0
    bar = tqdm(total=sum(quotas[c] for c in ids), unit="pos", disable=not progress,
               dynamic_ncols=True, desc=f"sample {v.id}")

    def compact(c: str) -> int:
        nonlocal repeats
        arr = np.concatenate(pools[c]) if pools[c] else np.zeros((0, 28), np.int8)
        arr = arr[_distinct(arr)]
        repeats += raw[c] - len(arr)
        pools[c] = [arr]
        raw[c] = len(arr)
        return len(arr)

    try:
        while not all(full.values()):
            if stop():
                return None
            play.ply()
            games += int(np.sum(play.length == 0))
            after = flip(play.boards[play.length > 0], v)        # the afterstates just played
            after = after[keep_rng.random(len(after)) < keep]
            candidates += len(after)
            cls = position_classes(after, v)
            for c, i in ids.items():
                if full[c]:
                    continue
                rows = after[cls == i]
                if len(rows):
                    pools[c].append(rows)
                    raw[c] += len(rows)
                if raw[c] >= quotas[c] and compact(c) >= quotas[c]:
                    full[c] = True
            filled = sum(min(raw[c], quotas[c]) for c in ids)
            bar.update(filled - bar.n)
            bar.set_postfix(games=games, refresh=False)
            if max_games is not None and games >= max_games:
                break
    finally:
        bar.close()
    boards, classes, short = [], [], {}
    for c, i in ids.items():
        if not full[c]:
            compact(c)
        arr = pools[c][0][:quotas[c]]
        if len(arr) < quotas[c]:
            short[c] = quotas[c] - len(arr)
        boards.append(arr)
        classes.append(np.full(len(arr), i, np.int8))
    return Samples(np.concatenate(boards), np.concatenate(classes), games, candidates, repeats, short)


#: Decisions whose plays are generated in one call (:func:`decision_candidates`,
#: :func:`training.distill.decision_groups`): bounds the memory of a call.
DECISION_STEP = 4096


def decision_rolls(boards: np.ndarray, seed: int, v: Variant) -> tuple[np.ndarray, np.ndarray]:
    """The decisions :func:`decision_candidates` makes of ``boards`` (afterstates): each
    flipped to the opponent to move, in a seeded random order, with a seeded random roll.
    Returns ``(positions, dice)``, ``(n, 28)`` and ``(n, 2)``; the same ``seed`` gives the
    same decisions (the fit's decision groups rebuild them, :func:`training.distill.decision_groups`)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(boards))
    dice = rng.integers(1, 7, size=(len(boards), 2))
    return flip(np.asarray(boards, np.int8)[order], v), dice


def decision_candidates(evaluator, boards: np.ndarray, quotas: dict[str, int], keep: int,
                        threshold: float, seed: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Afterstates that teach the evaluator its own decisions: each sampled afterstate becomes
    the opponent's decision (the position flipped, a seeded random roll), whose legal plays are
    ranked at 0 ply; the best ``keep`` within ``threshold`` points of the best are candidates
    (gnubg's move filter, :func:`nardy_ai.search.filter_candidates`).  The decisions are taken
    in a seeded random order, their candidates (distinct boards) filling each class's quota
    (a candidate's own class).  Returns ``(boards, classes, decisions used)``: a net fitted on
    the labels of all close rivals of a play learns to rank them, where the played afterstates
    alone mostly show it the plays it already prefers."""
    from nardy_ai.movegen import generate, segment_ids
    from nardy_ai.search import MoveFilter, filter_candidates
    v = evaluator.variant
    names = class_names(v)
    positions, dice = decision_rolls(boards, seed, v)
    parts, decision = [], []
    step = DECISION_STEP
    for lo in range(0, len(positions), step):
        after = generate(positions[lo:lo + step], dice[lo:lo + step], v)
        eq = equity(evaluator.probabilities(after.boards), v)
        alive = after.boards[:, OFF] < CHECKERS
        kept = filter_candidates(eq, after.offsets, alive, MoveFilter(keep, threshold))
        parts.append(after.boards[kept])
        decision.append(lo + segment_ids(after.offsets)[kept])
    cand = np.concatenate(parts)
    dec = np.concatenate(decision)
    first = _distinct(cand)                     # first occurrences, in decision order
    cand, dec = cand[first], dec[first]
    cls = position_classes(cand, v)
    rows = []
    for c, q in quotas.items():
        mine = np.flatnonzero(cls == names.index(c))[:q]
        rows.append(mine)
    rows = np.sort(np.concatenate(rows)) if rows else np.zeros(0, np.int64)
    used = int(len(np.unique(dec[rows]))) if len(rows) else 0
    return cand[rows], cls[rows].astype(np.int8), used


def most_disagreeing(boards: np.ndarray, classes: np.ndarray, quotas: dict[str, int],
                     zero_ply: np.ndarray, one_ply: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """Rows to keep: per class the ``quotas[c]`` afterstates whose 0-ply and 1-ply equities
    (``zero_ply``, ``one_ply``, points per game) differ most, in their original order."""
    gap = np.abs(np.asarray(one_ply) - np.asarray(zero_ply))
    keep = []
    for c, q in quotas.items():
        rows = np.flatnonzero(classes == names.index(c))
        keep.append(rows[np.sort(np.argsort(-gap[rows], kind="stable")[:q])])
    return np.sort(np.concatenate(keep)) if keep else np.zeros(0, np.int64)


# --- label ---------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class LabelTask:
    """One chunk of afterstates to label: rows ``first .. first + len(boards) - 1`` of a
    generation's sample, with the current evaluator's checkpoint (``sha256``, bytes)."""

    index: int
    first: int
    variant: Variant
    checkpoint: tuple[str, bytes]
    boards: np.ndarray
    classes: np.ndarray
    two_ply: np.ndarray
    settings: dict

    def label(self) -> str:
        return f"label chunk {self.index} (rows {self.first}-{self.first + len(self.boards) - 1})"


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """One torch thread inside the block: labels are then the same in this process as in
    worker processes (which run one thread each)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


_one_torch_thread = one_torch_thread


def label_afterstates(boards: np.ndarray, classes: np.ndarray, evaluator, settings: dict,
                      two_ply: np.ndarray | None = None) -> np.ndarray:
    """Outcome probabilities ``(N, K)`` float32 of afterstates for the side that moved:
    bear-off afterstates (class ``bearoff``) from the one-sided database (exact); the others
    by ``settings["kind"]``: ``"search"`` at ``settings["plies"]`` (rows of ``two_ply`` at
    ``settings["decision_plies"]``, default 2 plies), ``"rollout"`` by ``settings["rollout_games"]`` games truncated after
    ``settings["rollout_truncate"]`` plies with dice seed ``settings["rollout_seed"]``."""
    from nardy_ai.search import search_values
    v = evaluator.variant
    names = class_names(v)
    boards = np.asarray(boards, np.int8)
    out = np.empty((len(boards), n_outputs(v)), np.float32)
    bear = (classes == names.index("bearoff")) if "bearoff" in names else np.zeros(len(boards), bool)
    if bear.any():
        out[bear] = BearoffEvaluator(v).probabilities(boards[bear])
    rest = ~bear
    if not rest.any():
        return out
    if settings["kind"] == "search":
        ev = evaluator
        deep = np.zeros(len(boards), bool) if two_ply is None else np.asarray(two_ply, bool)
        for plies, rows in ((settings["plies"], rest & ~deep), (settings.get("decision_plies", 2), rest & deep)):
            if rows.any():
                out[rows] = search_values(boards[rows], ev, plies)
    else:
        from nardy_ai.agents.neural import NeuralAgent
        from nardy_ai.rollout import rollout
        res = rollout(boards[rest], v, NeuralAgent(evaluator), games=settings["rollout_games"],
                      truncate=settings["rollout_truncate"], seed=settings["rollout_seed"],
                      on_roll=False, evaluator=evaluator)
        out[rest] = res.probs
    # Probabilities: the 2-ply average of a sure result can round to -2e-16 or 1 + 2e-16 (a
    # short_trictrac race lost for certain gave P(win) = -2.2e-16), which the fit's
    # cross-entropy refuses.
    return np.clip(out, 0.0, 1.0, out=out)


def label_chunk(task: LabelTask) -> tuple[int, np.ndarray, float]:
    """Label one chunk (a backend task): ``(task.index, labels (N, K) float32, CPU seconds)``."""
    c0 = time.process_time()
    with _one_torch_thread():
        ev = evaluator_from_bytes(*task.checkpoint, task.variant)
        labels = label_afterstates(task.boards, task.classes, ev, task.settings, task.two_ply)
    return task.index, labels, time.process_time() - c0


def label_tasks(boards: np.ndarray, classes: np.ndarray, two_ply: np.ndarray, variant: Variant,
                checkpoint: tuple[str, bytes], settings: dict, chunk: int,
                skip: set[int] = frozenset()) -> list[LabelTask]:
    """The chunks of a sample (``chunk`` rows each, the last one shorter), except ``skip``."""
    out = []
    for i, lo in enumerate(range(0, len(boards), chunk)):
        if i in skip:
            continue
        s = slice(lo, lo + chunk)
        rollout_seed = _seed(settings["seed"], _ROLLOUT, i) if settings["kind"] == "rollout" else None
        out.append(LabelTask(i, lo, variant, checkpoint, boards[s], classes[s], two_ply[s],
                             dict(settings, rollout_seed=rollout_seed)))
    return out


def two_ply_rows(n: int, fraction: float, seed: int) -> np.ndarray:
    """``(n,)`` bool: the seeded random rows labelled at 2 plies."""
    if fraction <= 0:
        return np.zeros(n, bool)
    return np.random.default_rng(_seed(seed, _TWO_PLY)).random(n) < fraction


# --- fit -----------------------------------------------------------------------------------

def _bce(net: NeuralEvaluator, x: torch.Tensor, y: torch.Tensor, batch: int = 8192) -> float:
    """Mean binary cross-entropy of the net's outputs against soft targets (eval mode)."""
    net.net.eval()
    total = 0.0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            logits = net.net.logits(x[i:i + batch])
            total += float(torch.nn.functional.binary_cross_entropy_with_logits(
                logits, y[i:i + batch], reduction="sum"))
    return total / max(y.numel(), 1)


class DecisionGroups:
    """The plays of decisions among a fit's rows: decision ``g`` holds the rows
    ``members[offsets[g]:offsets[g + 1]]`` (at least two, distinct), afterstates of one
    roll by one player, so their equities compare."""

    def __init__(self, members: np.ndarray, offsets: np.ndarray, decisions: np.ndarray | None = None):
        self.members = np.asarray(members, np.int64)
        self.offsets = np.asarray(offsets, np.int64)
        #: each group's decision (its index among the decisions the groups were built from)
        self.decisions = (np.arange(len(self.offsets) - 1) if decisions is None
                          else np.asarray(decisions, np.int64))

    @classmethod
    def joined(cls, parts: list[tuple["DecisionGroups", int]]) -> "DecisionGroups":
        """Groups of several row blocks as one: ``(groups, first row of their block)`` each, the
        blocks one after another."""
        members, offsets, decisions, count = [], [np.zeros(1, np.int64)], [], 0
        for g, first in parts:
            members.append(g.members + first)
            offsets.append(g.offsets[1:] + count)
            decisions.append(g.decisions)
            count += len(g.members)
        return cls(np.concatenate(members) if members else np.zeros(0, np.int64), np.concatenate(offsets),
                   np.concatenate(decisions) if decisions else np.zeros(0, np.int64))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def batch(self, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the decisions ``groups`` and each row's place (0..) in ``groups``."""
        sizes = self.offsets[groups + 1] - self.offsets[groups]
        starts = np.repeat(self.offsets[groups], sizes)
        within = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        return self.members[starts + within], np.repeat(np.arange(len(groups)), sizes)

    def restricted(self, rows: np.ndarray, n: int) -> "DecisionGroups":
        """The groups among ``rows`` (ascending indices into the ``n`` rows these groups index),
        renumbered to positions in ``rows``; members outside dropped, groups left with fewer
        than two members dropped."""
        where = np.full(n, -1, np.int64)
        where[rows] = np.arange(len(rows))
        local = where[self.members]
        gid = np.repeat(np.arange(len(self)), self.sizes())
        keep = local >= 0
        counts = np.bincount(gid[keep], minlength=len(self))
        keep &= counts[gid] >= 2
        return DecisionGroups(local[keep], np.concatenate([[0], np.cumsum(counts[counts >= 2])]),
                              self.decisions[counts >= 2])


def decision_rank_loss(student: torch.Tensor, label: torch.Tensor, gid: torch.Tensor, n: int) -> torch.Tensor:
    """Within-decision ranking loss: ``student`` and ``label`` equities (points) of the plays
    of ``n`` decisions (``gid``: each play's decision, 0..n-1), each centred on its decision's
    mean; the mean over decisions of the mean squared difference of the centred values
    (points squared).  Zero when the student's equities are the labels' plus any constant per
    decision: only the differences between a decision's plays count -- the small margins that
    choose the play, which the cross-entropy over single rows weighs little."""
    size = torch.zeros(n, dtype=student.dtype, device=student.device).index_add_(
        0, gid, torch.ones_like(student))
    d = student - label
    mean = torch.zeros_like(size).index_add_(0, gid, d) / size
    e = d - mean[gid]
    return (torch.zeros_like(size).index_add_(0, gid, e * e) / size).mean()


def decision_regret(student: torch.Tensor, label: torch.Tensor, gid: torch.Tensor, n: int) -> float:
    """Mean loss (points, by the labels) of the play the student ranks first in each of ``n``
    decisions against the labels' best play."""
    lo = torch.full((n,), -1e9, dtype=label.dtype, device=label.device)
    best_label = lo.clone().scatter_reduce(0, gid, label, "amax")
    best_student = lo.clone().scatter_reduce(0, gid, student, "amax")
    picked = lo.clone().scatter_reduce(0, gid, torch.where(student >= best_student[gid], label, lo[gid]), "amax")
    return float((best_label - picked).mean()) if n else 0.0


def _validation_split(n: int, share: float, rng: np.random.Generator, groups: DecisionGroups | None
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Held-out and training rows: ``round(share * n)`` rows at random (at least 1, at most
    n - 1); with ``groups``, first the rows of a random ``share`` of the decisions (whole),
    then random others up to that count."""
    order = rng.permutation(n)
    n_val = min(max(1, int(round(share * n))), n - 1)
    if groups is None or not len(groups):
        return order[:n_val], order[n_val:]
    held = rng.permutation(len(groups))[:max(1, int(round(share * len(groups))))]
    rows, _ = groups.batch(held)
    is_val = np.zeros(n, bool)
    is_val[rows[:n - 1]] = True
    extra = order[~is_val[order]][:max(0, n_val - int(is_val.sum()))]
    is_val[extra] = True
    return np.flatnonzero(is_val), np.flatnonzero(~is_val)


def fit_net(net: NeuralEvaluator, x: np.ndarray, y: np.ndarray, fit, seed: int,
            on_epoch: Callable[[int, float, float, float], None] = lambda *a: None,
            stop: Callable[[], bool] = lambda: False, groups: DecisionGroups | None = None,
            on_checkpoint: Callable[[dict], None] | None = None, resume: dict | None = None) -> dict | None:
    """Fit one net to labels: ``x`` encoded afterstates, ``y`` ``(N, K)`` soft targets.
    Binary cross-entropy per output on the sigmoid outputs, Adam (``fit.learning_rate``),
    minibatches of ``fit.batch_size``, a held-out ``fit.validation`` share, early stop after
    ``fit.patience`` epochs without a lower validation loss -- or, ``fit.lr_halvings`` times
    (0 if absent), a return to the best weights with half the learning rate instead; the best
    epoch's weights are kept (epoch 0 = the starting weights).  The cross-entropy of soft
    targets never reaches 0: ``val_entropy`` is its floor on the held-out rows (the targets'
    own entropy) and ``val_loss - val_entropy`` (the excess, a KL divergence) goes to 0 for a
    perfect fit.

    With ``groups`` (the plays of decisions among the rows, :class:`DecisionGroups`) and
    ``fit.rank_weight`` w > 0, each minibatch also takes its share of the decisions (every
    decision once an epoch) and the loss adds w times :func:`decision_rank_loss`; a share
    ``fit.validation`` of the decisions is held out whole, early stopping and the best epoch
    follow the held-out cross-entropy + w * ranking loss (``val_loss`` stays the cross-entropy),
    and the figures add ``val_rank`` and ``val_regret`` (:func:`decision_regret`, points) with
    their values before the fit.
    ``on_epoch(epoch, train_loss, val_loss, val_excess)`` after each epoch.  Returns the
    losses, or None when ``stop()`` turned true (the net is then left with its starting
    weights).

    Resuming mid-fit: ``on_checkpoint(state)`` after each epoch the fit goes on from gets the
    whole state of the fit (:func:`fit_state_matches` says what it holds: the weights, the best
    epoch's weights, Adam's moments and step size, the epoch, the plateau and halving counts,
    both random generators); ``resume=state`` continues such a fit from the epoch after it, and
    ends with the same weights and figures as the fit that was not interrupted (same rows,
    settings and seed; a state of other rows or settings is refused with :class:`FitStateError`)."""
    rng = np.random.default_rng(seed)
    n = len(x)
    w = float(getattr(fit, "rank_weight", 0.0))
    ranked = groups is not None and w > 0 and len(groups) > 0
    val, train = _validation_split(n, fit.validation, rng, groups if ranked else None)
    n_val = len(val)
    dev = net.device
    xt = torch.from_numpy(np.ascontiguousarray(x)).to(dev)
    yt = torch.from_numpy(np.ascontiguousarray(y)).to(dev).clamp(0.0, 1.0)   # labels written before the clip
    xv, yv = xt[torch.from_numpy(val).to(dev)], yt[torch.from_numpy(val).to(dev)]
    if ranked:
        is_val = np.zeros(n, bool)
        is_val[val] = True
        whole = np.add.reduceat(is_val[groups.members].astype(np.int64), groups.offsets[:-1])
        train_groups = np.flatnonzero(whole == 0)
        vrows, vgid = groups.batch(np.flatnonzero(whole == groups.sizes()))
        n_vg = int(vgid.max()) + 1 if len(vgid) else 0
        vrows_t, vgid_t = torch.from_numpy(vrows).to(dev), torch.from_numpy(vgid).to(dev)
        label_eq = equity(yt, net.variant)

    def rank_figures() -> tuple[float, float]:
        net.net.eval()
        with torch.no_grad():
            eq = equity(torch.sigmoid(net.net.logits(xt[vrows_t])), net.variant)
            return (float(decision_rank_loss(eq, label_eq[vrows_t], vgid_t, n_vg)) if n_vg else 0.0,
                    decision_regret(eq, label_eq[vrows_t], vgid_t, n_vg))

    def validation() -> tuple[float, float, float]:
        """Held-out cross-entropy, ranking loss and regret (0, 0 without decisions)."""
        return (_bce(net, xv, yv), *(rank_figures() if ranked else (0.0, 0.0)))

    start = _copy_state(net.net.state_dict())
    before, rank_before, regret_before = validation()
    best = before + w * rank_before if ranked else before      # the criterion early stopping watches
    best_state, best_epoch, best_bce, best_rank, best_regret = start, 0, before, rank_before, regret_before
    entropy = float(torch.nn.functional.binary_cross_entropy(yv, yv))
    opt = torch.optim.Adam(net.net.parameters(), lr=fit.learning_rate)
    torch.manual_seed(seed)
    train_loss = float("nan")
    steps = -(-len(train) // fit.batch_size)
    per_step = -(-len(train_groups) // steps) if ranked and len(train_groups) else 0
    epoch = plateau_from = halvings = 0     # plateau_from: the best epoch or the last halving
    identity = _fit_identity(n, x, y, fit, seed, ranked)
    if resume is not None:
        fit_state_matches(resume, identity, raise_error=True)
        net.net.load_state_dict(resume["weights"])
        opt.load_state_dict(resume["optimizer"])
        start, best_state = resume["start"], resume["best_state"]
        before, rank_before, regret_before = resume["before"]
        best, best_epoch, best_bce, best_rank, best_regret = resume["best"]
        epoch, plateau_from, halvings, train_loss = (resume["epoch"], resume["plateau_from"], resume["halvings"],
                                                     resume["train_loss"])
        rng.bit_generator.state = resume["rng"]
        torch.set_rng_state(resume["torch_rng"])
    for epoch in range(epoch + 1, fit.max_epochs + 1):
        net.net.train()
        perm = torch.from_numpy(train[rng.permutation(len(train))]).to(dev)
        gperm = train_groups[rng.permutation(len(train_groups))] if per_step else None
        total, count = 0.0, 0
        for k, i in enumerate(range(0, len(perm), fit.batch_size)):
            if stop():
                net.net.load_state_dict(start)
                return None
            idx = perm[i:i + fit.batch_size]
            loss = torch.nn.functional.binary_cross_entropy_with_logits(net.net.logits(xt[idx]), yt[idx])
            total += float(loss.detach()) * len(idx)
            count += len(idx)
            if per_step and k * per_step < len(gperm):
                rows, gid = groups.batch(gperm[k * per_step:(k + 1) * per_step])
                rows_t = torch.from_numpy(rows).to(dev)
                eq = equity(torch.sigmoid(net.net.logits(xt[rows_t])), net.variant)
                loss = loss + w * decision_rank_loss(eq, label_eq[rows_t], torch.from_numpy(gid).to(dev),
                                                     int(gid[-1]) + 1)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        train_loss = total / max(count, 1)
        val_loss, rank, regret = validation()
        criterion = val_loss + w * rank if ranked else val_loss
        if not (math.isfinite(train_loss) and math.isfinite(val_loss)):
            from .td import TrainingDiverged
            raise TrainingDiverged(f"fitting stopped at epoch {epoch}: the loss is not a finite number "
                                   f"(a lower fit.learning_rate may help)")
        on_epoch(epoch, train_loss, val_loss, val_loss - entropy)
        if criterion < best:
            best, best_epoch, best_bce, best_rank, best_regret = criterion, epoch, val_loss, rank, regret
            best_state = _copy_state(net.net.state_dict())
            plateau_from = epoch
        elif epoch - plateau_from >= fit.patience:
            if halvings >= getattr(fit, "lr_halvings", 0):
                break
            # A plateau: back to the best weights, half the step (Adam's lr) from there on.
            halvings += 1
            net.net.load_state_dict(best_state)
            for group in opt.param_groups:
                group["lr"] *= 0.5
            plateau_from = epoch
        if on_checkpoint is not None and epoch < fit.max_epochs:
            on_checkpoint(dict(identity, epoch=epoch, plateau_from=plateau_from, halvings=halvings,
                               train_loss=train_loss, weights=_copy_state(net.net.state_dict()),
                               optimizer=copy.deepcopy(opt.state_dict()), start=start, best_state=best_state,
                               before=(before, rank_before, regret_before),
                               best=(best, best_epoch, best_bce, best_rank, best_regret),
                               rng=copy.deepcopy(rng.bit_generator.state), torch_rng=torch.get_rng_state()))
    net.net.load_state_dict(best_state)
    out = {"val_loss_before": before, "val_loss": best_bce, "val_entropy": entropy, "best_epoch": best_epoch,
           "epochs": epoch, "lr_halvings": halvings, "train_loss": train_loss, "train_rows": int(len(train)),
           "val_rows": int(n_val)}
    if ranked:
        out.update(rank_weight=w, decisions=int(len(groups)), val_decisions=n_vg, val_rank_before=rank_before,
                   val_rank=best_rank, val_regret_before=regret_before, val_regret=best_regret)
    return out


class FitStateError(NardyError):
    """A saved fit state (:func:`fit_net`'s ``on_checkpoint``) that does not belong to the fit
    asked to resume from it: other rows, labels, settings or seed."""


def _copy_state(state: dict) -> dict:
    return {k: w.detach().clone() for k, w in state.items()}


def _fit_identity(n: int, x: np.ndarray, y: np.ndarray, fit, seed: int, ranked: bool) -> dict:
    """What a saved fit state must share with the fit that resumes from it: the rows (their
    count and a checksum of a spread of rows and labels), the settings and the seed."""
    pick = np.linspace(0, n - 1, num=min(n, 257)).astype(np.int64)
    digest = hashlib.sha256(np.ascontiguousarray(x[pick]).tobytes()
                            + np.ascontiguousarray(y[pick]).tobytes()).hexdigest()[:16]
    settings = {k: getattr(fit, k, None) for k in ("learning_rate", "batch_size", "max_epochs", "patience",
                                                   "validation", "lr_halvings", "rank_weight")}
    return {"fit_state": FIT_STATE_FORMAT, "rows": int(n), "rows_digest": digest, "settings": settings,
            "seed": int(seed), "ranked": bool(ranked)}


def fit_state_matches(state: dict, identity: dict, raise_error: bool = False) -> bool:
    """Whether a saved fit state (a dict of :func:`fit_net`'s ``on_checkpoint``: the identity
    of its fit -- format, rows, a checksum of rows and labels, settings, seed -- and the epoch,
    weights, best weights, optimizer, counters and random generators) belongs to the fit of
    ``identity``; with ``raise_error`` a :class:`FitStateError` names the first difference."""
    for key, want in identity.items():
        if state.get(key) != want:
            if raise_error:
                raise FitStateError(f"saved fit state: {key} is {state.get(key)!r}, this fit has {want!r} "
                                    f"(it was saved by another fit)")
            return False
    return True


#: The layout version of :func:`fit_net`'s saved states.
FIT_STATE_FORMAT = 1


def save_fit_epoch(path: str, payload: dict) -> None:
    """Write a fit's state after an epoch (``payload``: what the run needs to recognise it, and
    ``state`` from :func:`fit_net`'s ``on_checkpoint``) atomically: a kill while writing leaves
    the previous epoch's file."""
    with atomic_file(path, CheckpointError) as f:
        torch.save(dict(payload, fit_epoch_format=FIT_STATE_FORMAT), f)


def load_fit_epoch(path: str) -> dict:
    """Read :func:`save_fit_epoch`'s file (torch's weights-only loader); a damaged or foreign
    file is a :class:`~nardy_ai.model.CheckpointError` naming it."""
    data = read_torch_file(path, f"cannot read the saved fit state {path}: corrupt or not a fit state; "
                                 f"delete it to fit the net from its first epoch")
    if not isinstance(data, dict) or data.get("fit_epoch_format") != FIT_STATE_FORMAT or "state" not in data:
        raise CheckpointError(f"{path} is not a saved fit state (format {FIT_STATE_FORMAT}); delete it to fit "
                              f"the net from its first epoch")
    return data


# --- gate ----------------------------------------------------------------------------------

def gate_match(candidate, current, games: int, seed: int,
               stop: Callable[[], bool] = lambda: False) -> dict | None:
    """The candidate evaluator against the current one at 0 ply: ``games`` (rounded up to
    even) in duplicate-dice pairs, game ``2k`` with the candidate as white and ``2k + 1`` on
    the same dice with the seats swapped, in batches of :data:`GATE_BATCH` pairs.  Returns the
    candidate's results (:func:`nardy_ai.tournament.side_stats`: ``points_per_game`` with its
    95% interval over the pairs, ``win_rate``, ...), or None when ``stop()`` turned true."""
    from nardy_ai.agents.neural import NeuralAgent
    from nardy_ai.game import play_games
    from nardy_ai.scoring import level_names
    from nardy_ai.stats import side_stats
    v = candidate.variant
    a, b = NeuralAgent(candidate, name="candidate"), NeuralAgent(current, name="current")
    pairs = (games + 1) // 2
    points, levels = [], []
    for k, lo in enumerate(range(0, pairs, GATE_BATCH)):
        if stop():
            return None
        n = min(GATE_BATCH, pairs - lo)
        s = _seed(seed, _GATE, k)
        white = play_games(v, (a, b), n, seed=s, record=False)
        black = play_games(v, (b, a), n, seed=s, record=False)
        for r1, r2 in zip(white, black):
            points += [r1.points * (1 if r1.winner == 0 else -1), r2.points * (1 if r2.winner == 1 else -1)]
            levels += [r1.level, r2.level]
    return side_stats(np.array(points), np.array(levels), level_names(v))


# --- the run -------------------------------------------------------------------------------

def labelled_units(run, u: int, history: int) -> list[tuple[int, tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """The units a fit of unit ``u`` of a labelling ``run`` reads, oldest first: ``(unit, its
    labelled afterstates)`` (``read_labels``: boards, classes, labels) for the ``history`` units
    before it (labelled by the evaluators current then) and ``u`` itself.  An earlier unit whose
    label chunks are gone (a fresh clone, a folder moved without them) is left out, with a line
    saying so."""
    units = []
    for h in range(max(1, u - history), u):
        try:
            units.append((h, run.read_labels(h)))
        except (OSError, run.ERROR, SearchTargetsError):
            run.print(f"{run.UNIT} {u}: {run.UNIT} {h}'s labels are not on disk (a fresh clone?); "
                      f"fitting without them")
    units.append((u, run.read_labels(u)))
    return units


def joined_units(units) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The boards, classes and labels of :func:`labelled_units`' units, one after another."""
    return tuple(np.concatenate([arrays[i] for _, arrays in units]) for i in range(3))


def labels_with_history(run, u: int, history: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unit ``u``'s labelled afterstates after those of the ``history`` units before it
    (:func:`labelled_units`, joined)."""
    return joined_units(labelled_units(run, u, history))


class LabellingRun(StagedRun):
    """A staged run whose units label a sample of afterstates with the current evaluator, fit
    a candidate to the labels and gate it against the current evaluator (search targets,
    distillation): the unit's files (``samples.npz``, ``labels/chunk_NNNN.npz``,
    ``candidate.pt``, ``gate.json``), the label loop and the gate, written once here.  A
    method sets the class attributes below and provides the phases (:class:`StagedRun`)."""

    #: Version of the unit's sample, part and chunk files (``format`` in each NPZ).
    FORMAT = FORMAT
    #: The metrics line of each label chunk written: its kind and the key of its row count.
    CHUNK_LINE = ("label_chunk", "positions")
    #: The gate's two sides in its messages: the unit's new evaluator, the current one.
    GATE_SIDES = ("candidate", "current")
    #: The end of the gate's line when the candidate is not promoted ({}: the current unit).
    GATE_KEPT = "kept generation {}"
    #: The figures of :func:`gate_match` that ``gate.json`` keeps (after ``games``).
    GATE_FIGURES = ("points_per_game", "points_per_game_ci95", "win_rate", "win_rate_ci95")
    #: Digits of a unit's folder name (``generations/001``, ``rounds/01``).
    UNIT_DIGITS = 3

    def recipe(self, u: int):
        """The recipe of unit ``u``: its ``sample``, ``label``, ``fit`` and ``gate`` sections."""
        raise NotImplementedError

    def _kept_fit_epochs(self, u: int) -> dict[str, float]:
        """The epochs of unit ``u``'s fit that a resume keeps, by net: infinity for a net
        finished, the saved epoch for the net in mid-fit (its ``fit_epoch.pt``)."""
        raise NotImplementedError

    def _keep_line(self, line: dict) -> bool:
        """As a staged run keeps lines, and in a fit in progress also the epoch lines of the
        work the resume keeps (:meth:`_kept_fit_epochs`, read once)."""
        u = self.state[self.UNIT]
        if (line.get("kind") == "fit_epoch" and line.get("phase") == "fit" and self.state["phase"] == "fit"
                and line.get(self.UNIT) == u):
            if not hasattr(self, "_kept_epochs"):
                self._kept_epochs = self._kept_fit_epochs(u)
            epoch = line.get("epoch")
            return isinstance(epoch, int) and epoch <= self._kept_epochs.get(line.get("net"), 0)
        return super()._keep_line(line)

    # --- the unit's files ------------------------------------------------------------

    def unit_dir(self, u: int) -> str:
        """Unit ``u``'s folder: ``UNITs/NNN`` in the run folder."""
        return os.path.join(self.run_dir, f"{self.UNIT}s", f"{u:0{self.UNIT_DIGITS}d}")

    def _label_chunk(self, u: int) -> int:
        return self.recipe(u).label.chunk

    def _path(self, u: int, *parts: str) -> str:
        """A file of unit ``u``'s folder."""
        return os.path.join(self.unit_dir(u), *parts)

    def _npz_ok(self, path: str, settings: dict, check: Callable[[dict], bool] = lambda z: True) -> bool:
        """An NPZ file of this run on disk of :attr:`FORMAT` written with these ``settings``
        (its JSON ``settings`` entry) whose arrays pass ``check``."""
        if not os.path.exists(path):
            return False
        try:
            z = read_npz(path)
            return int(z["format"]) == self.FORMAT and _settings(z) == settings and check(z)
        except (SearchTargetsError, KeyError, ValueError):
            return False

    def _read_samples(self, u: int) -> dict:
        path = self._path(u, "samples.npz")
        z = read_npz(path)
        if int(z.get("format", -1)) != self.FORMAT:
            raise self.ERROR(f"{path}: not a samples file of format {self.FORMAT}")
        return z

    def _chunk_ok(self, path: str, settings: dict, boards: np.ndarray) -> bool:
        """A chunk file on disk that holds these rows labelled with these settings."""
        return self._npz_ok(path, settings, lambda z: np.array_equal(z["boards"], boards)
                            and z["labels"].shape == (len(boards), n_outputs(self.v)))

    def read_labels(self, u: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Unit ``u``'s labelled afterstates: boards, classes, labels (chunk order)."""
        paths = self._chunk_paths(u)
        if not paths:
            z = self._read_samples(u)
            return z["boards"], z["classes"], np.zeros((0, n_outputs(self.v)), np.float32)
        return read_label_chunks(paths)

    # --- label -----------------------------------------------------------------------

    def _chunk_arrays(self, task: LabelTask, labels: np.ndarray) -> dict[str, np.ndarray]:
        """Arrays a chunk file keeps besides its boards, labels, classes and settings."""
        return {}

    def _label_chunks(self, u: int, boards: np.ndarray, classes: np.ndarray, two_ply: np.ndarray,
                      checkpoint: tuple[str, bytes], settings: dict, desc: str, rate: str = "per_s") -> bool:
        """Label unit ``u``'s sample (``two_ply``: the rows labelled at 2 plies) in chunks of
        :meth:`_label_chunk` rows on the backend with the evaluator ``checkpoint`` (sha256,
        bytes), each written atomically as ``labels/chunk_NNNN.npz`` when it arrives, with
        ``settings`` and its ``chunk_index``; chunks on disk with the same settings and rows are
        kept.  A metrics line per chunk (:attr:`CHUNK_LINE`) and one for the phase.  False when
        stopped."""
        chunk = self._label_chunk(u)
        paths = label_chunk_paths(self.unit_dir(u), len(boards), chunk)
        os.makedirs(self._path(u, "labels"), exist_ok=True)
        done = {i for i, lo in enumerate(range(0, len(boards), chunk))
                if self._chunk_ok(paths[i], {**settings, "chunk_index": i}, boards[lo:lo + chunk])}
        tasks = label_tasks(boards, classes, two_ply, self.v, checkpoint, settings, chunk, skip=done)
        kind, rows_key = self.CHUNK_LINE
        t0, cpu, n = time.perf_counter(), 0.0, 0
        for task, (index, labels, seconds) in self._tasks(
                label_chunk, tasks, desc, "pos", lambda t: len(t.boards),
                len(boards) - sum(len(t.boards) for t in tasks), len(boards), rate=rate):
            write_npz(paths[index], format=np.int64(self.FORMAT), boards=task.boards, labels=labels,
                      classes=task.classes, **self._chunk_arrays(task, labels),
                      settings=np.array(json.dumps({**settings, "chunk_index": index})))
            cpu += seconds
            n += len(labels)
            self._log(kind, u, "label", {"chunk": index, rows_key: len(labels),
                                         "positions_per_cpu_s": len(labels) / max(seconds, 1e-9)}, tb=False)
        if self.stop_requested:
            return False
        if n:
            wall = time.perf_counter() - t0
            self._log("label", u, "label", {"positions": n, "positions_per_s": n / max(wall, 1e-9),
                                            "positions_per_cpu_s": n / max(cpu, 1e-9), "seconds": wall,
                                            "workers": self.backend.workers})
        return True

    # --- gate ------------------------------------------------------------------------

    def _gate(self, u: int, seed: int, named: dict | None = None) -> bool:
        """Unit ``u``'s ``candidate.pt`` against ``current.pt`` at 0 ply (:func:`gate_match`,
        ``gate.games`` from ``seed``); it becomes ``current.pt`` when its points per game are at
        least ``gate.threshold``.  Writes ``gate.json``, the history entry (``named``: keys it adds
        after the unit), the metrics and the line printed; then the current evaluator plays
        ``run.eval_opponents``.  False when stopped."""
        games, threshold = self.recipe(u).gate.games, self.recipe(u).gate.threshold
        path = self._path(u, "candidate.pt")
        cand = load_evaluator(path, self.v, self.device)
        cur = self._load_current()
        t0 = time.perf_counter()
        res = gate_match(cand, cur, games, seed, self._stopping)
        if res is None:
            return False
        ci = res["points_per_game_ci95"]
        promoted = bool(res["points_per_game"] >= threshold)
        new, old = self.GATE_SIDES
        result = {self.UNIT: u, "games": res["games"], **{k: res[k] for k in self.GATE_FIGURES},
                  "threshold": threshold, "promoted": promoted, "seconds": time.perf_counter() - t0,
                  "method": f"{new} vs {old} at 0 ply, duplicate-dice pairs; 95% CI = mean +/- "
                            "1.96 standard errors over the pairs"}
        write_json(self._path(u, "gate.json"), result, self.ERROR)
        current = f"current_{self.UNIT}"
        if promoted:
            with open(path, "rb") as src:
                write_atomic(self.current_path, src.read(), self.ERROR)
            self.state[current] = u
        self.state["history"] = [h for h in self.state["history"] if h[self.UNIT] != u] + [
            {self.UNIT: u, **(named or {}), "promoted": promoted, "points_per_game": res["points_per_game"],
             "points_per_game_ci95": ci}]
        bounds = {"ci95_low": ci[0], "ci95_high": ci[1]} if ci else {}      # one pair: no interval
        self._log("gate", u, "gate", {"points_per_game": res["points_per_game"], **bounds,
                                      "win_rate": res["win_rate"], "promoted": int(promoted)})
        self.print(f"{self.UNIT} {u}: {new} vs {old} {res['points_per_game']:+.3f} ppg"
                   + (f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "") + f" over {res['games']} games: "
                   + ("promoted" if promoted else self.GATE_KEPT.format(self.state[current])))
        evaluation = evaluate_against_opponents(self.cfg.run, self.v, self._load_current(),
                                                lambda: self.stop_requested)
        if evaluation is None:
            return False
        if evaluation:
            self._log("eval", u, "gate", evaluation)
        return True


class SearchTargetsRun(LabellingRun):
    """A search-targets training run in a folder (module docstring; the folder, state,
    resume, metrics and stops: :class:`training.run.StagedRun`)."""

    PHASES = PHASES
    UNIT = "generation"
    KEPT_KINDS = ("label_chunk",)
    STATE_WHAT = "a search-targets run"
    STOPS_AFTER = "method.generations generations"
    RAY_TASKS = "the labelling"
    ERROR = SearchTargetsError

    # --- state -----------------------------------------------------------------------

    @property
    def units(self) -> int:
        return self.cfg.method.generations

    def _no_run_error(self) -> NardyError:
        return NardyError(f"{self.run_dir} holds no search-targets run to resume (no state.json)")

    def _check_ahead(self) -> None:
        if self.cfg.sample.quotas:
            check_quotas(self.cfg, self.v)
        super()._check_ahead()

    def _initial_state(self) -> dict:
        return {"format": STATE_FORMAT, "generation": 1, "phase": "sample",
                "current_generation": 0, "history": [], "seconds": {p: 0.0 for p in PHASES}}

    def _starting_evaluator(self):
        ev = initial_evaluator(self.cfg, self.v, self.device)
        self._quotas(as_netset(ev))           # checked before any file is written
        return ev

    def _start_payload(self, ev) -> dict:
        return evaluator_payload(ev, self.cfg, 0)

    def _load(self, config_text: str | None) -> None:
        self.state = self._read_state()
        self._check_config()

    def _check_config(self) -> None:
        """A resumed run may run more generations, elsewhere, or be watched differently
        ([run], [ray], method.generations); what changes the training must stay as it was."""
        saved = config_from_dict(load_checkpoint(self.current_path)["config"]).to_dict()
        self._require_same_config(saved, self.cfg.to_dict(),
                                  ("run", "ray", "td", "selfplay", "method.generations"))

    def recipe(self, g: int) -> TrainConfig:
        return self.cfg

    def finished_message(self) -> str:
        return (f"{self.run_dir} is finished: {len(self.state['history'])} generation(s) of method.generations = "
                f"{self.cfg.method.generations}. To extend it, raise method.generations in a copy of "
                f"{os.path.join(self.run_dir, 'config.toml')} and run nardy train --config COPY --out "
                f"{self.run_dir} --resume")

    def _quotas(self, netset: NetSet) -> dict[str, int]:
        """Afterstates per class of a generation's sample (refusing quotas for classes that
        no net values: the database is exact, nothing to fit)."""
        s = self.cfg.sample
        fitted = fitted_classes(netset)
        for c, share in s.quotas.items():
            if share > 0 and c not in fitted:
                raise ConfigError(f"sample.quotas.{c}: the bear-off database values this class "
                                  f"exactly; no net to fit (quota classes: {', '.join(fitted)})")
        shares = s.quotas or {c: 1.0 for c in fitted}
        return class_quotas(s.positions, shares, netset.classes)

    # --- the generations -------------------------------------------------------------

    def steps(self) -> dict:
        return {"sample": self.sample, "label": self.label, "fit": self.fit_phase, "gate": self.gate}

    # --- phase: sample ---------------------------------------------------------------

    def sample(self, g: int) -> bool:
        """Self-play of the current evaluator to ``samples.npz`` (restarted whole if stopped)."""
        s = self.cfg.sample
        ev = self._load_current()
        netset = as_netset(ev)
        names = netset.classes
        quotas = self._quotas(netset)
        drawn = {c: int(math.ceil(q * s.oversample)) for c, q in quotas.items()}

        seed = _seed(self.cfg.seed, _SAMPLE, g)
        t0 = time.perf_counter()
        res = sample_afterstates(ev, drawn, seed, s.parallel_games, s.epsilon, s.temperature, s.keep,
                                 s.max_games or s.positions, self.progress, self._stopping)
        if res is None:
            return False
        boards, classes = res.boards, res.classes
        if s.oversample > 1:
            zero = equity(ev.probabilities(boards), self.v)
            one = self._label_all(boards, classes, {"kind": "search", "plies": 1, "seed": seed},
                                  desc="1-ply for disagreement")
            if one is None:
                return False
            rows = most_disagreeing(boards, classes, quotas, zero, equity(one, self.v), names)
            boards, classes = boards[rows], classes[rows]
        decisions = None
        if s.candidates > 1:
            boards, classes, decisions = decision_candidates(ev, boards, quotas, s.candidates,
                                                             s.candidate_threshold, _seed(seed, _CANDIDATES))
            for c, q in quotas.items():
                n = int(np.sum(classes == names.index(c)))
                if n < q:
                    res.short[c] = res.short.get(c, 0) + q - n
        seconds = time.perf_counter() - t0
        settings = {"generation": g, "seed": seed, "quotas": quotas, "oversample": s.oversample,
                    "decision_candidates": s.candidates, "candidate_threshold": s.candidate_threshold,
                    "decisions": decisions,
                    "games": res.games, "candidates": res.candidates, "repeats": res.repeats,
                    "short": res.short,
                    "epsilon": s.epsilon, "temperature": s.temperature, "keep": s.keep}
        write_npz(self._path(g, "samples.npz"), format=np.int64(FORMAT),
                  boards=boards, classes=classes, settings=np.array(json.dumps(settings)))
        counts = class_counts(classes, names, "positions")
        if decisions is not None:
            counts["decisions"] = decisions
        self._log("sample", g, "sample", {"positions": int(len(boards)), "games": res.games,
                                          "candidates": res.candidates, "repeats": res.repeats,
                                          "seconds": seconds, **counts})
        if res.short:
            self.print(f"generation {g}: quotas short after {res.games} games: "
                       + ", ".join(f"{c} {n}" for c, n in res.short.items()))
        return True

    # --- phase: label ----------------------------------------------------------------

    def _label_all(self, boards, classes, settings, desc: str) -> np.ndarray | None:
        """Labels of rows not written to disk (the sample's disagreement), on the backend."""
        chunk = self.cfg.label.chunk
        tasks = label_tasks(boards, classes, np.zeros(len(boards), bool), self.v, self._checkpoint_bytes(),
                            settings, chunk)
        out = np.empty((len(boards), n_outputs(self.v)), np.float32)
        for task, (index, labels, _) in self._tasks(label_chunk, tasks, desc, "pos", lambda t: len(t.boards), 0,
                                                    len(boards), rate="pos_s"):
            out[task.first:task.first + len(labels)] = labels
        return None if self.stop_requested else out

    def label_settings(self, g: int, sha: str) -> dict:
        lb = self.cfg.label
        out = {"format": FORMAT, "generation": g, "kind": lb.kind, "evaluator_sha256": sha,
               "seed": _seed(self.cfg.seed, _ROLLOUT, g), "chunk": lb.chunk}
        if lb.kind == "search":
            out.update(plies=lb.plies, two_ply_fraction=lb.two_ply_fraction)
        else:
            out.update(rollout_games=lb.rollout_games, rollout_truncate=lb.rollout_truncate)
        return out

    def label(self, g: int) -> bool:
        """Label the sample in chunks on the backend; chunks already on disk are kept."""
        z = self._read_samples(g)
        sha, data = self._checkpoint_bytes()
        deep = two_ply_rows(len(z["boards"]),
                            self.cfg.label.two_ply_fraction if self.cfg.label.kind == "search" else 0,
                            _seed(self.cfg.seed, g))
        return self._label_chunks(g, z["boards"], z["classes"], deep, (sha, data), self.label_settings(g, sha),
                                  f"label {self.v.id}", rate="pos_s")

    def _chunk_arrays(self, task: LabelTask, labels: np.ndarray) -> dict[str, np.ndarray]:
        return {"two_ply": task.two_ply, "rows": np.array([task.first, task.first + len(labels)])}

    # --- phase: fit ------------------------------------------------------------------

    def fit_labels(self, g: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What generation ``g`` fits on: its own labelled afterstates and those of the
        ``fit.history`` generations before it (:func:`labels_with_history`)."""
        return labels_with_history(self, g, self.cfg.fit.history)

    def fit_phase(self, g: int) -> bool:
        """Fit every net of a copy of the current evaluator to the labels (with
        ``fit.history``, also to earlier generations' labels): ``candidate.pt``.  After each
        epoch ``fit_epoch.pt`` holds the nets finished, their figures and the state of the net
        being fitted (:func:`fit_net`): a resumed fit goes on after the last finished epoch."""
        boards, classes, labels = self.fit_labels(g)
        epoch_file = self._path(g, "fit_epoch.pt")
        sha = self._checkpoint_bytes()[0]
        saved = self._fit_progress(g)
        if saved is not None:
            cand = evaluator_from_state(saved["evaluator"], self.v, self.device)
            stats = dict(saved["fit"])
            if saved.get("net"):
                self.print(f"generation {g}: the {saved['net']} net's fit goes on after epoch "
                           f"{saved['state']['epoch']}")
        else:
            cand, stats = self._load_current(), {}
        netset = as_netset(cand)
        progress = {"generation": g, "teacher_sha256": sha, "fit_settings": dataclasses.asdict(self.cfg.fit)}

        def save(**extra):
            save_fit_epoch(epoch_file, dict(progress, evaluator=cand.state(), fit=dict(stats), **extra))

        for label, member, rows in netset.route(boards, classes):
            if not isinstance(member, NeuralEvaluator):
                continue                        # the bear-off database is exact
            if len(rows) < 2:
                self.print(f"generation {g}: net {label} has {len(rows)} labelled afterstate(s); not fitted")
                continue
            if label in stats:
                continue                        # finished in an earlier session
            resume = saved["state"] if saved is not None and saved.get("net") == label else None
            x = member.encoder(boards[rows])
            bar = self.progress_bar(self.cfg.fit.max_epochs, f"fit {label} ({len(rows):,} pos)", "epoch",
                                    initial=resume["epoch"] if resume else 0)

            def on_epoch(epoch, train_loss, val_loss, val_excess, label=label, bar=bar):
                bar.update(1)
                bar.set_postfix(val=f"{val_loss:.5f}", excess=f"{val_excess:.5f}")
                self._log("fit_epoch", g, "fit", {"epoch": epoch, "train_loss": train_loss, "val_loss": val_loss,
                                                  "val_excess": val_excess}, tb=False, net=label)

            try:
                res = fit_net(member, x, labels[rows], self.cfg.fit,
                              _seed(self.cfg.seed, _FIT, g, len(stats)), on_epoch, self._stopping,
                              on_checkpoint=lambda state, label=label: save(net=label, state=state),
                              resume=resume)
            finally:
                bar.close()
            if res is None:
                return False
            stats[label] = res
            save()
        scalars = {}
        for label, r in stats.items():
            scalars.update({f"val_loss_{label}": r["val_loss"], f"val_loss_before_{label}": r["val_loss_before"],
                            f"val_excess_{label}": r["val_loss"] - r["val_entropy"],
                            f"val_excess_before_{label}": r["val_loss_before"] - r["val_entropy"],
                            f"train_loss_{label}": r["train_loss"], f"epochs_{label}": r["epochs"],
                            f"best_epoch_{label}": r["best_epoch"], f"rows_{label}": r["train_rows"] + r["val_rows"]})
        save_checkpoint(self._path(g, "candidate.pt"),
                        evaluator_payload(cand, self.cfg, g, fit=stats))
        if os.path.exists(epoch_file):
            os.remove(epoch_file)
        self._log("fit", g, "fit", scalars)
        return True

    def _fit_progress(self, g: int) -> dict | None:
        """Generation ``g``'s ``fit_epoch.pt`` when it belongs to this fit (the same generation,
        teacher and fit settings): ``evaluator`` (the nets finished), ``fit`` (their figures)
        and, for a net in mid-fit, ``net`` and ``state``; None otherwise (the fit starts over)."""
        path = self._path(g, "fit_epoch.pt")
        if not os.path.exists(path):
            return None
        saved = load_fit_epoch(path)
        if (saved.get("generation") != g or saved.get("teacher_sha256") != self._checkpoint_bytes()[0]
                or saved.get("fit_settings") != dataclasses.asdict(self.cfg.fit)):
            return None
        return saved

    def _kept_fit_epochs(self, g: int) -> dict[str, float]:
        saved = self._fit_progress(g) or {}
        kept = {net: float("inf") for net in saved.get("fit", {})}
        if saved.get("net"):
            kept[saved["net"]] = saved["state"]["epoch"]
        return kept

    # --- phase: gate -----------------------------------------------------------------

    def gate(self, g: int) -> bool:
        """Candidate vs current; promote the candidate when it does not lose (gate.threshold);
        then the current evaluator against the evaluation opponents."""
        return self._gate(g, _seed(self.cfg.seed, g))


def evaluate_against_opponents(run, variant, evaluator, stop_requested) -> dict | None:
    """The current net (0 ply) against each of ``run.eval_opponents`` over ``run.eval_games``
    games (seed 1234): ``{"vs_SPEC/win_rate": ..., "vs_SPEC/points_per_game": ...}``; None
    when ``stop_requested()`` turns true between opponents.  An opponent spec that names no
    agent is a :class:`ConfigError` naming ``run.eval_opponents``."""
    from nardy_ai.agents import make_agent
    from nardy_ai.agents.neural import NeuralAgent
    from nardy_ai.game import play_match, summarize
    evaluation = {}
    me = NeuralAgent(evaluator, name="td")
    for spec in run.eval_opponents:
        if stop_requested():
            return None
        try:
            opp = make_agent(spec, variant)
        except NardyError as e:
            raise ConfigError(f"run.eval_opponents: {e}") from None
        s = summarize(play_match(variant, me, opp, run.eval_games, seed=1234), agent="td")
        evaluation[f"vs_{spec}/win_rate"] = s["win_rate"]
        evaluation[f"vs_{spec}/points_per_game"] = s["points_per_game"]
    return evaluation
