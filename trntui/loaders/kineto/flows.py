"""Flow binding: each chrome `s`/`f` half is attached to the slice it belongs to on its thread."""

from __future__ import annotations

import numpy as np

from trntui.loaders.kineto.columns import FCols, IdMap, merge_ids, merge_strings
from trntui.loaders.kineto.schema import PH
from trntui.model import categories as C
from trntui.model.builder import ProfileBuilder
from trntui.model.arrays import small_uint
from trntui.model.intervals import walk_back
from trntui.model.kernels import kernel
from trntui.model.profile import EventKind, Flows


_MASKED_THREADS = 8
"""Up to this many threads with flows, each one's slices are found by a mask over all slices (a compare and a
compression each), else by one radix sort of all slices by thread."""


def add_flows(
    fparts: list[FCols],
    start: np.ndarray,
    end: np.ndarray,
    threads: np.ndarray,
    ev_thread: np.ndarray,
    kinds: np.ndarray,
    first: int,
    builder: ProfileBuilder,
    idmap: IdMap,
    time_order: np.ndarray,
) -> None:
    """Attach flow halves to slices on the same thread: the slice starting at the flow's ts, else the
    innermost one containing it. Unpaired halves are kept in the table but reported. The halves' times are on
    the ns clock already (columns.flow_ns). `threads`: the events' distinct (pid, tid) keys, sorted;
    `ev_thread`: each event's index among them (a small unsigned int, so sorting by it is a radix sort)."""
    meta = builder.meta
    nf = sum(f.n for f in fparts)
    fts = np.concatenate([f.start for f in fparts])
    fbad = None
    if any(f.bad is not None for f in fparts):
        fbad = np.concatenate([f.bad if f.bad is not None else np.zeros(f.n, bool) for f in fparts])
    fpid = merge_ids([f.pid for f in fparts], None, idmap)
    ftid = merge_ids([f.tid for f in fparts], None, idmap)
    keys = np.concatenate([f.keys for f in fparts])
    fcat = merge_strings([f.cat for f in fparts], None, lambda c: builder.intern_cat(C.FLOW_ALIASES.get(c, c or "flow")), np.int16)
    fph = np.concatenate([f.ph for f in fparts])
    role = np.where(fph == PH["s"], Flows.START, Flows.FINISH).astype(np.int8)
    bound = np.full(nf, -1, np.int64)

    bind = _bind_compiled if kernel() is not None else _bind_numpy  # (the same result)
    bind(bound, fts, fpid, ftid, start, end, threads, ev_thread, kinds, time_order)
    if fbad is not None:
        bound[fbad] = -1
    ok = bound >= 0
    if (~ok).any():
        meta.skip("flow events not inside any slice", int((~ok).sum()))
    # pairing statistics
    orphans = _count_one_sided(fcat[ok], keys[ok], role[ok])
    if orphans:
        meta.notes.append(f"{orphans} flow(s) with only one half (ignored for linking, as torch and HTA do)")
    builder.add_flows(keys[ok], bound[ok] + first, fcat[ok], role[ok])


_CODE_TYPES = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.int64))
"""The thread codes `bind_flows` reads as they are (others are converted)."""

_WALK_LIMIT = 256
"""A half's slice is looked for among at most this many slices back from the last one starting at or before it."""


def _bind_compiled(
    bound: np.ndarray, fts: np.ndarray, fpid: np.ndarray, ftid: np.ndarray, start: np.ndarray, end: np.ndarray,
    threads: np.ndarray, ev_thread: np.ndarray, kinds: np.ndarray, time_order: np.ndarray,
) -> None:
    """`_bind_numpy` in one compiled pass (model/_kernels.c `bind_flows`: the halves' threads by binary search, the
    slices of their threads grouped in time order, then each half's binary search and walk back)."""
    i64 = np.int64
    kernel().bind_flows(
        np.ascontiguousarray(time_order, i64), np.ascontiguousarray(kinds, np.int8), int(EventKind.COMPLETE),
        np.ascontiguousarray(ev_thread if ev_thread.dtype in _CODE_TYPES else ev_thread.astype(i64)),
        np.ascontiguousarray(start, i64), np.ascontiguousarray(end, i64), np.ascontiguousarray(threads, i64),
        np.ascontiguousarray(fpid, i64), np.ascontiguousarray(ftid, i64), np.ascontiguousarray(fts, i64),
        _WALK_LIMIT, bound,
    )


def _bind_numpy(
    bound: np.ndarray, fts: np.ndarray, fpid: np.ndarray, ftid: np.ndarray, start: np.ndarray, end: np.ndarray,
    threads: np.ndarray, ev_thread: np.ndarray, kinds: np.ndarray, time_order: np.ndarray,
) -> None:
    """`bound[i]`: the slice of flow half i (see `add_flows`; -1 stays where there is none), in numpy: the halves
    grouped by thread (a radix sort), each thread's slices found by a mask (few threads) or one sort, then a binary
    search and a walk back per thread, all halves at once (the fallback where the kernels are not built)."""
    # each flow half's thread among the events' (-1: a thread without events)
    intervals = kinds == EventKind.COMPLETE
    ev_idx = time_order[intervals[time_order]]  # the slices, by (start, longest first)
    if len(ev_idx):
        f_key = _thread_key(fpid, ftid)
        at = np.minimum(np.searchsorted(threads, f_key), len(threads) - 1)
        f_code = np.where(threads[at] == f_key, at + 1, 0)  # 0: a thread without slices
        f_count = np.bincount(f_code, minlength=len(threads) + 1)
        f_bounds = np.zeros(len(threads) + 2, np.int64)
        np.cumsum(f_count, out=f_bounds[1:])
        f_order = np.argsort(f_code.astype(small_uint(len(threads))), kind="stable")  # by thread (radix)
        flow_threads = np.flatnonzero(f_count[1:]).tolist()
        code = ev_thread[ev_idx]
        if len(flow_threads) <= _MASKED_THREADS:  # their slices by a mask each, no sort of all slices
            def slices(t: int) -> np.ndarray:
                return ev_idx[code == t]
        else:  # ... else all slices by thread: one radix sort
            order = ev_idx[np.argsort(code, kind="stable")]
            bounds = np.zeros(len(threads) + 1, np.int64)
            np.cumsum(np.bincount(code, minlength=len(threads)), out=bounds[1:])

            def slices(t: int) -> np.ndarray:
                return order[bounds[t] : bounds[t + 1]]
        for t in flow_threads:
            o = slices(t)
            s = start[o]
            e = end[o]
            fi = f_order[f_bounds[t + 1] : f_bounds[t + 2]]  # the thread's halves, ascending
            q = fts[fi]
            # the innermost slice with start <= ts < end (or starting exactly at ts): walk back from the
            # last slice starting at or before ts, at most 256 slices
            k = np.searchsorted(s, q, side="right") - 1
            pos = walk_back(k, lambda a, c: (s[c] == q[a]) | (e[c] > q[a]), _WALK_LIMIT)
            hit = pos >= 0
            bound[fi[hit]] = o[pos[hit]]


def _thread_key(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    return pid.astype(np.int64) * (1 << 32) + (tid.astype(np.int64) & 0xFFFFFFFF)


def _count_one_sided(fcat: np.ndarray, keys: np.ndarray, role: np.ndarray) -> int:
    """Number of (cat, key) flows whose bound halves all have the same role."""
    if not len(fcat):
        return 0
    lo = int(keys.min())
    span = int(keys.max()) - lo + 1
    n_cat = int(fcat.max()) + 1
    if int(fcat.min()) >= 0:
        cats = np.flatnonzero(np.bincount(fcat, minlength=n_cat))  # the flow categories, numbered 0, 1, ...
        if span * len(cats) <= 32 * len(fcat) + (1 << 16):
            # dense keys (Kineto numbers its flows 1, 2, ...): one byte per (cat, key), holding the roles seen
            # (1: start, 2: finish), no sort
            code = np.zeros(n_cat, np.int64)
            code[cats] = np.arange(len(cats)) * span
            fast = kernel()
            if fast is not None and fcat.dtype in (np.int16, np.int64):  # one pass over the halves (_kernels.c)
                return int(fast.one_sided(np.ascontiguousarray(fcat), np.ascontiguousarray(keys, np.int64),
                                          np.ascontiguousarray(role, np.int8), int(Flows.START), code, lo,
                                          span * len(cats)))
            pair = code[fcat]
            pair += keys
            pair -= lo
            seen = np.zeros(span * len(cats), np.uint8)
            seen[pair[role == Flows.START]] = 1
            fin = pair[role != Flows.START]
            seen[fin] |= 2  # (a gather, OR and scatter: repeated pairs write the same value)
            flows = int(np.count_nonzero(seen))
            np.equal(seen, 3, out=seen.view(bool))  # (in place: no table-sized temporaries)
            return flows - int(np.count_nonzero(seen))
    if span < (1 << 62) // max(n_cat, 1) // 2:  # (cat, key, role) packed in one int64: one sort
        packed = np.sort((fcat.astype(np.int64) * span + (keys - keys.min())) * 2 + role)
        pair = packed >> 1
        new_pair = np.ones(len(packed), bool)
        new_pair[1:] = pair[1:] != pair[:-1]
        new_role = new_pair.copy()
        new_role[1:] |= packed[1:] != packed[:-1]
    else:
        o = np.lexsort((role, keys, fcat))
        fc, kk, rr = fcat[o], keys[o], role[o]
        new_pair = np.ones(len(fc), bool)
        new_pair[1:] = (fc[1:] != fc[:-1]) | (kk[1:] != kk[:-1])
        new_role = new_pair.copy()
        new_role[1:] |= rr[1:] != rr[:-1]
    group = np.cumsum(new_pair) - 1
    return int((np.bincount(group[new_role]) == 1).sum())
