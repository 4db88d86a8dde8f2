"""Compiled batched move generation (optional: needs numba, the ``fast`` extra).

The same afterstates as :func:`nardy_ai.movegen.generate_batched`, in the same order per
position, with the same step counts and play notation, for every variant without BG-HH (a
hitter may not hide: that rule stays on the NumPy path).  :func:`nardy_ai.movegen.generate`
calls :func:`generate_arrays` when numba is importable and the environment variable
``NARDY_NO_JIT`` is not set; otherwise the NumPy path runs, unchanged.

How it works: one compiled loop over the positions plays each one out checker step by
checker step over 25-bit masks, exactly as the one-position path of :mod:`nardy_ai.movegen`
does (frontier rows in order, their sources ascending; non-doubles in both die orders,
doubles with non-increasing sources; LN-3/LN-4 head rule, LN-5 six-block, COM-1/2/3/5).
The candidates of every position are then ordered as the NumPy path's de-duplication orders
them: by the top bits of the same 64-bit board hash (how many bits depends on the size of the
whole batch, as there), then by candidate index; equal boards keep the first.  Where the NumPy
path would meet a hash collision (two different boards, one key) this module answers None and
the caller runs the NumPy path, which then decides exactly.

Compiled functions are cached on disk (``@njit(cache=True)``), so only the first call on a
machine pays the compilation.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from .board import BAR, BEAR_OFF_SOURCES, BOARD_HASH_KEYS, BOARD_SIZE, OFF, OPP_BAR, OPP_OFF

try:                                  # optional dependency (extra ``fast``)
    from numba import njit
    HAVE_NUMBA = True
except ImportError:                   # pragma: no cover - depends on the environment
    HAVE_NUMBA = False

    def njit(*args, **kwargs):        # a stand-in so that this module still imports
        def wrap(f):
            return f
        return wrap

#: Rows of the :mod:`nardy_ai.board` layout (mover on roll) padded to 32 bytes.
_W = 32
_M24 = (1 << 24) - 1
_OUTSIDE_HOME = _M24 ^ 0x3F
_HEAD_BIT = 1 << 23
#: COM-5 bear-off sources, indexed by ``die << 6 | home bits`` (the NumPy path's, as int64).
_BEAR_OFF = BEAR_OFF_SOURCES.astype(np.int64)

#: Count trailing zeros of a one-bit 32-bit value by de Bruijn multiplication.
_CTZ32 = np.zeros(32, np.int64)
for _i in range(32):
    _CTZ32[(((1 << _i) * 0x077CB531) & 0xFFFFFFFF) >> 27] = _i

#: Kernel answers.
_OK, _LOCAL_FULL, _CANDS_FULL, _TRACE_FULL, _FALLBACK = 0, 1, 2, 3, 4


def enabled() -> bool:
    """Whether the compiled generator may run: numba importable and ``NARDY_NO_JIT`` unset."""
    return HAVE_NUMBA and not os.environ.get("NARDY_NO_JIT")


@njit(cache=True)
def _rotate12(bits):
    return ((bits >> 12) | (bits << 12)) & 0xFFFFFF


@njit(cache=True)
def _expand(base, base64, hi, lo, is_long, head_limit, guard, bear_off,
            B, B64, own, order, lsrc, src, tgt, hit, back, tag, valid, lstart, p, back_base):
    """Every partial play of one position (``base``: 32 int8), level by level into the row
    buffers (level L = rows ``lstart[L]:lstart[L+1]``, L = 1..4), and LN-5 validity.  The
    steps (``src``, ``tgt``, ``hit``, ``back``) go straight into the batch's trace, ``back``
    as a trace row (``back_base`` + the row of the step before) or ``p`` (the position) at
    level 1.

    Returns the longest level holding a valid row (0: no checker can move), or -1 when the
    buffers are too small."""
    short = not is_long
    cap = min(B.shape[0], src.shape[0])
    own0 = 0
    open0 = 0
    for i in range(24):
        x = base[i]
        if x > 0:
            own0 |= 1 << i
        if x >= 0 or (short and x == -1):
            open0 |= 1 << i
    double = hi == lo
    start_head = np.int64(base[23]) if is_long else 0
    n = 0
    start_legal_hi = 0
    for L in range(6):
        lstart[L] = 0
    for k in range(4):
        # The frontier of step k: the start position (twice for non-doubles: both die
        # orders) or every row of level k.
        if k == 0:
            n_front = 1 if double else 2
        elif k == 1 or double:
            n_front = lstart[k + 1] - lstart[k]
        else:
            n_front = 0
        if n_front == 0:
            for L in range(k + 1, 5):
                lstart[L + 1] = n
            break
        for r in range(n_front):
            if k == 0:
                f = -1
                f_own = own0
                f_order = r == 1
                f_last = 24
                f_tag = 0
            else:
                f = lstart[k] + r
                f_own = own[f]
                f_order = order[f]
                f_last = lsrc[f]
                f_tag = tag[f]
            bar = base[BAR] if f < 0 else B[f, BAR]
            head = base[23] if f < 0 else B[f, 23]
            d = lo if f_order ^ (k == 1) else hi
            legal = f_own & ((open0 << d) & 0xFFFFFF)
            if (f_own & 0xFFFFC0) == 0 and (not short or bar == 0):
                legal |= bear_off[(d << 6) | (f_own & 0x3F)]
            if is_long and head_limit - (start_head - head) <= 0:
                legal &= ~0x800000
            if short and bar != 0:
                legal = ((open0 >> (24 - d)) & 1) << 24
            legal &= (2 << f_last) - 1
            if k == 0:
                if r == 0:
                    start_legal_hi = legal
            elif k == 1 and f_order:
                legal &= ~start_legal_hi
            if legal == 0:
                continue
            while legal:
                low = legal & -legal
                legal ^= low
                s = _CTZ32[((low * 0x077CB531) & 0xFFFFFFFF) >> 27]
                if n >= cap:
                    return -1
                t = s - d
                if t < 0:
                    t = 24 - d if (short and s == 24) else OFF
                if f < 0:
                    for q in range(4):
                        B64[n, q] = base64[q]
                else:
                    for q in range(4):
                        B64[n, q] = B64[f, q]
                B[n, s] -= 1
                h = False
                if short:
                    if B[n, t] == -1:
                        B[n, t] = 1
                        B[n, OPP_BAR] += 1
                        h = True
                    else:
                        B[n, t] += 1
                else:
                    B[n, t] += 1
                c_own = f_own
                if B[n, s] == 0:
                    c_own &= ~(1 << s)
                if t < 24:
                    c_own |= 1 << t
                own[n] = c_own & 0xFFFFFF
                order[n] = f_order
                lsrc[n] = s if (double or k > 0) else 24
                src[n] = s
                tgt[n] = t
                hit[n] = h
                back[n] = p if k == 0 else back_base + f
                tag[n] = d if k == 0 else f_tag
                n += 1
        lstart[k + 2] = n
    # LN-5 on the final position; the longest level with a legal play (COM-1/COM-3).
    best = 0
    for L in range(1, 5):
        any_valid = False
        for i in range(lstart[L], lstart[L + 1]):
            ok = True
            if is_long:
                held = _rotate12(own[i])
                run = held & (held >> 1) & (held >> 2) & (held >> 3) & (held >> 4) & (held >> 5)
                ok = (run & guard) == 0
            valid[i] = ok
            any_valid |= ok
        if any_valid:
            best = L
    # COM-2: when only one die can be played, the larger one if it can be.
    if best == 1 and not double:
        larger = False
        for i in range(lstart[1], lstart[2]):
            if valid[i] and tag[i] == hi:
                larger = True
        if larger:
            for i in range(lstart[1], lstart[2]):
                if tag[i] != hi:
                    valid[i] = False
    return best


@njit(cache=True)
def _hash(words, K):
    """The NumPy path's 64-bit hash of a board's bytes 0-27 (``words``: its 4 little-endian
    uint64 words; bytes 28-31 are ignored)."""
    h = words[0] * K[0]
    h += words[1] * K[1]
    h += words[2] * K[2]
    h += (words[3] & np.uint64(0xFFFFFFFF)) * K[3]
    h ^= h >> np.uint64(29)
    h *= K[0]
    h ^= h >> np.uint64(32)
    return h


@njit(cache=True)
def _kernel(P, P64, hi_a, lo_a, is_long, K, bear_off, bufs_B, bufs_B64, bufs_own, bufs_order, bufs_lsrc,
            bufs_tag, bufs_valid, bufs_lstart, cand64, cand_h,
            cand_code, pos_start, t_src, t_tgt, t_hit, t_back, keep, counts, keys):
    """Every distinct legal afterstate of each position of ``P`` (``(n, 32)`` int8), into the
    work arrays (see :class:`_Work`).  Returns ``(status, candidates, trace rows, kept)``."""
    n_pos = P.shape[0]
    cand_cap = cand64.shape[0]
    trace_cap = t_src.shape[0]
    m = 0
    nt = 0
    pos_start[0] = 0
    for p in range(n_pos):
        base = P[p]
        base64 = P64[p]
        hi = hi_a[p]
        lo = lo_a[p]
        guard = 0
        if is_long and base[OPP_OFF] == 0:
            opp = 0
            for i in range(24):
                if base[i] < 0:
                    opp |= 1 << i
            r = _rotate12(opp)
            lowest = 24
            for i in range(24):
                if (r >> i) & 1:
                    lowest = i
                    break
            guard = (2 << lowest) - 1
        local_cap = bufs_B.shape[1]
        best = _expand(base, base64, hi, lo, is_long, 1, guard, bear_off, bufs_B[0], bufs_B64[0], bufs_own[0],
                       bufs_order[0], bufs_lsrc[0], t_src[nt:], t_tgt[nt:], t_hit[nt:], t_back[nt:], bufs_tag[0],
                       bufs_valid[0], bufs_lstart[0], p, nt)
        if best < 0:
            return (_LOCAL_FULL if local_cap < trace_cap - nt else _TRACE_FULL), m, nt, 0
        u = 0
        t0 = nt                        # the trace rows of the expansion taken
        t_end = nt + bufs_lstart[0, 5]
        if is_long and base[23] == 15 and hi == lo:
            best2 = _expand(base, base64, hi, lo, is_long, 2, guard, bear_off, bufs_B[1], bufs_B64[1], bufs_own[1],
                            bufs_order[1], bufs_lsrc[1], t_src[t_end:], t_tgt[t_end:], t_hit[t_end:],
                            t_back[t_end:], bufs_tag[1], bufs_valid[1], bufs_lstart[1], p, t_end)
            if best2 < 0:
                return (_LOCAL_FULL if local_cap < trace_cap - t_end else _TRACE_FULL), m, nt, 0
            if best2 > best:           # LN-4: the second head checker plays more of the roll
                best = best2
                u = 1
                t0 = t_end
            t_end += bufs_lstart[1, 5]
        B64 = bufs_B64[u]
        lstart = bufs_lstart[u]
        valid = bufs_valid[u]
        if best == 0:
            if m >= cand_cap:
                return _CANDS_FULL, m, nt, 0
            for q in range(4):
                cand64[m, q] = base64[q]
            cand_h[m] = _hash(base64, K)
            cand_code[m] = p
            m += 1
            pos_start[p + 1] = m
            continue
        for i in range(lstart[best], lstart[best + 1]):
            if not valid[i]:
                continue
            if m >= cand_cap:
                return _CANDS_FULL, m, nt, 0
            for q in range(4):
                cand64[m, q] = B64[i, q]
            cand_h[m] = _hash(B64[i], K)
            cand_code[m] = (best << 32) | (t0 + i)
            m += 1
        nt = t_end
        pos_start[p + 1] = m
    # The NumPy path's key: (position, top hash bits, candidate index), its widths set by
    # the whole batch.
    pos_bits = 1
    while (n_pos - 1) >> pos_bits:
        pos_bits += 1
    idx_bits = 1
    while (m - 1) >> idx_bits:
        idx_bits += 1
    hash_bits = 64 - pos_bits - idx_bits
    if hash_bits < 24:
        return _FALLBACK, m, nt, 0
    n_keep = 0
    bucket = np.zeros((1 << 12) + 1, np.int64)
    spare = np.empty(m, np.uint64)
    shift_h = np.uint64(64 - hash_bits)
    shift_i = np.uint64(idx_bits)
    mask_i = np.uint64((1 << idx_bits) - 1)
    for p in range(n_pos):
        a = pos_start[p]
        b = pos_start[p + 1]
        ks = keys[:b - a]
        for i in range(a, b):
            ks[i - a] = ((cand_h[i] >> shift_h) << shift_i) | np.uint64(i)
        k = b - a
        if k > 24:
            # Bucket pass on the top bits of the key (the hash is uniform), then insertion
            # sort finishes: a few dozen plays on average, up to a few hundred.
            nb = 1
            while (1 << nb) < k and nb < 12:
                nb += 1
            shift_b = np.uint64(hash_bits + idx_bits - nb)
            for q in range((1 << nb) + 1):
                bucket[q] = 0
            for q in range(k):
                bucket[np.int64(ks[q] >> shift_b) + 1] += 1
            for q in range(1 << nb):
                bucket[q + 1] += bucket[q]
            for q in range(k):
                x = ks[q]
                j = np.int64(x >> shift_b)
                spare[bucket[j]] = x
                bucket[j] += 1
            for q in range(k):
                ks[q] = spare[q]
        for q in range(1, k):
            x = ks[q]
            r = q - 1
            while r >= 0 and ks[r] > x:
                ks[r + 1] = ks[r]
                r -= 1
            ks[r + 1] = x
        prev = -1
        prev_top = np.uint64(0)
        c = 0
        for q in range(b - a):
            i = np.int64(ks[q] & mask_i)
            top = ks[q] >> shift_i
            if prev >= 0 and top == prev_top:
                for q in range(4):
                    x = cand64[i, q] ^ cand64[prev, q]
                    if q == 3:
                        x &= np.uint64(0xFFFFFFFF)
                    if x != 0:
                        return _FALLBACK, m, nt, 0
            else:
                keep[n_keep] = i
                n_keep += 1
                c += 1
            prev = i
            prev_top = top
        counts[p] = c
    return _OK, m, nt, n_keep


class _Work:
    """Work arrays of the kernel, kept between calls (one set per thread) and grown when a
    batch needs more: the partial plays of one position (twice: LN-4), the candidates of
    the batch and their step trace."""

    def __init__(self, local_cap: int, cand_cap: int, trace_cap: int, n_pos: int):
        self.caps = (local_cap, cand_cap, trace_cap)
        self.n_pos = n_pos
        e = np.empty
        rows = e((2, local_cap, _W), np.int8)
        self.local = (rows, rows.view(np.uint64), e((2, local_cap), np.int64), e((2, local_cap), np.bool_),
                      e((2, local_cap), np.int64), e((2, local_cap), np.int64), e((2, local_cap), np.bool_),
                      e((2, 6), np.int64))
        self.cands = (e((cand_cap, 4), np.uint64), e(cand_cap, np.uint64), e(cand_cap, np.int64),
                      e(n_pos + 1, np.int64))
        self.trace = (e(trace_cap, np.int8), e(trace_cap, np.int8), e(trace_cap, np.bool_), e(trace_cap, np.int64))
        self.out = (e(cand_cap, np.int64), e(n_pos, np.int64), e(cand_cap, np.uint64))


_THREAD = threading.local()


def generate_arrays(boards: np.ndarray, dice: np.ndarray, is_long: bool, capacity: tuple | None = None):
    """The afterstates of a batch (``boards`` ``(N, 28)`` int8, ``dice`` ``(N, 2)``, N >= 1),
    as :func:`nardy_ai.movegen.generate_batched` finds them, by the compiled kernel.

    Returns ``(afterstates (M, 28) int8, offsets (N + 1,), code (M,), trace)`` where
    ``code`` is ``level << 32 | row`` into the flat step ``trace`` ``(src, tgt, hit, back)``
    (level-1 rows point back to their position), or None where the NumPy path must decide
    (a hash collision, or a batch too large for the packed sort key).  ``capacity``
    (partial plays of one position, candidates, trace rows) sets the first work-array sizes
    (they grow as needed; for tests).
    """
    n = len(boards)
    P = np.zeros((n, _W), np.int8)
    P[:, :BOARD_SIZE] = boards
    dice = np.asarray(dice, dtype=np.int64)
    hi = dice.max(axis=1)
    lo = dice.min(axis=1)
    work = getattr(_THREAD, "work", None)
    if capacity is not None:
        work = _Work(*capacity, n)
    elif work is None or work.n_pos < n or work.caps[1] < 32 * n:
        work = _Work(1024, 48 * n + 1024, 64 * n + 1024, n)
    while True:
        status, m, nt, n_keep = _kernel(P, P.view(np.uint64), hi, lo, bool(is_long), BOARD_HASH_KEYS, _BEAR_OFF, *work.local, *work.cands,
                                        *work.trace, *work.out)
        if status == _OK or status == _FALLBACK:
            break
        local_cap, cand_cap, trace_cap = work.caps
        if status == _LOCAL_FULL:
            local_cap *= 4
        elif status == _CANDS_FULL:
            cand_cap *= 4
        else:
            trace_cap *= 4
        work = _Work(local_cap, cand_cap, trace_cap, max(n, work.n_pos))
    if capacity is None:
        _THREAD.work = work
    if status == _FALLBACK:
        return None
    cand, _, code, _ = work.cands
    keep, counts, _ = work.out
    keep = keep[:n_keep]
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(counts[:n], out=offsets[1:])
    trace = tuple(a[:nt].copy() for a in work.trace)
    rows = np.take(cand, keep, axis=0).view(np.int8)[:, :BOARD_SIZE]
    return rows, offsets, np.take(code, keep), trace
