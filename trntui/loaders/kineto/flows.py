"""Flow binding: each chrome `s`/`f` half is attached to the slice it belongs to on its thread."""

from __future__ import annotations

import numpy as np

from trntui.loaders.kineto.columns import MAX_NS, FCols, IdMap, merge_ids, merge_strings, to_ns
from trntui.loaders.kineto.schema import PH
from trntui.model import categories as C
from trntui.model.builder import ProfileBuilder
from trntui.model.intervals import walk_back
from trntui.model.profile import EventKind, Flows


def add_flows(
    fparts: list[FCols],
    start: np.ndarray,
    end: np.ndarray,
    pid: np.ndarray,
    tid: np.ndarray,
    kinds: np.ndarray,
    first: int,
    builder: ProfileBuilder,
    idmap: IdMap,
    base: int,
    time_order: np.ndarray,
) -> None:
    """Attach flow halves to slices on the same thread: the slice starting at the flow's ts, else the
    innermost one containing it. Unpaired halves are kept in the table but reported."""
    meta = builder.meta
    nf = sum(f.n for f in fparts)
    fts_us = np.concatenate([f.ts for f in fparts])
    with np.errstate(invalid="ignore", over="ignore"):
        fbad = ~np.isfinite(fts_us) | (np.abs(fts_us * 1000.0 + base) >= MAX_NS)
    fts = to_ns(np.where(fbad, 0.0, fts_us)) + base
    fpid = merge_ids([f.pid for f in fparts], None, idmap)
    ftid = merge_ids([f.tid for f in fparts], None, idmap)
    keys = np.concatenate([f.keys for f in fparts])
    fcat = merge_strings([f.cat for f in fparts], None, lambda c: builder.intern_cat(C.FLOW_ALIASES.get(c, c or "flow")), np.int16)
    fph = np.concatenate([f.ph for f in fparts])
    role = np.where(fph == PH["s"], Flows.START, Flows.FINISH).astype(np.int8)
    bound = np.full(nf, -1, np.int64)

    intervals = kinds == EventKind.COMPLETE
    thread_key = pid.astype(np.int64) * (1 << 32) + (tid.astype(np.int64) & 0xFFFFFFFF)
    f_thread = fpid.astype(np.int64) * (1 << 32) + (ftid.astype(np.int64) & 0xFFFFFFFF)
    ev_idx = time_order[intervals[time_order]]  # the slices, by (start, longest first)
    if len(ev_idx):
        order = ev_idx[np.argsort(thread_key[ev_idx], kind="stable")]  # ... by thread: one stable sort
        tk = thread_key[order]
        uniq, first_pos = np.unique(tk, return_index=True)
        bounds = list(first_pos.tolist()) + [len(order)]
        pos_of = {int(u): (bounds[j], bounds[j + 1]) for j, u in enumerate(uniq.tolist())}
        for t in np.unique(f_thread).tolist():
            span = pos_of.get(int(t))
            if span is None:
                continue
            a, b = span
            o = order[a:b]
            s = start[o]
            e = end[o]
            fi = np.nonzero(f_thread == t)[0]
            q = fts[fi]
            # the innermost slice with start <= ts < end (or starting exactly at ts): walk back from the
            # last slice starting at or before ts, at most 256 slices
            k = np.searchsorted(s, q, side="right") - 1
            pos = walk_back(k, lambda a, c: (s[c] == q[a]) | (e[c] > q[a]), 256)
            hit = pos >= 0
            bound[fi[hit]] = o[pos[hit]]
    bound[fbad] = -1
    ok = bound >= 0
    if (~ok).any():
        meta.skip("flow events not inside any slice", int((~ok).sum()))
    # pairing statistics
    orphans = _count_one_sided(fcat[ok], keys[ok], role[ok])
    if orphans:
        meta.notes.append(f"{orphans} flow(s) with only one half (ignored for linking, as torch and HTA do)")
    builder.add_flows(keys[ok], bound[ok] + first, fcat[ok], role[ok])


def _count_one_sided(fcat: np.ndarray, keys: np.ndarray, role: np.ndarray) -> int:
    """Number of (cat, key) flows whose bound halves all have the same role."""
    if not len(fcat):
        return 0
    o = np.lexsort((role, keys, fcat))
    fc, kk, rr = fcat[o], keys[o], role[o]
    new_pair = np.ones(len(fc), bool)
    new_pair[1:] = (fc[1:] != fc[:-1]) | (kk[1:] != kk[:-1])
    new_role = new_pair.copy()
    new_role[1:] |= rr[1:] != rr[:-1]
    group = np.cumsum(new_pair) - 1
    return int((np.bincount(group[new_role]) == 1).sum())
