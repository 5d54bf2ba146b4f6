"""Merge the decoded parts into builder batches: metadata events, intervals (X, i, B/E pairs), timestamps on
the int64 ns clock, interned strings, link columns, lanes; then the flows (flows.py) and the device (device.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from trntui.loaders.kineto.columns import (
    NOT_PARSED,
    IdMap,
    Part,
    clock_base,
    merge_ids,
    merge_strings,
    x_cols,
)
from trntui.loaders.kineto.link_ids import link_columns, links_of_args, to_id
from trntui.loaders.kineto.device import detect_device
from trntui.loaders.kineto.flows import add_flows
from trntui.loaders.kineto.schema import PH, Ev, any_decoder
from trntui.model import categories as C
from trntui.model.args import ArgsStore, raw_many
from trntui.model.arrays import small_codes
from trntui.model.arrays import time_order as sorted_by_time
from trntui.model.builder import ProfileBuilder
from trntui.model.profile import ProfileMeta, Tier
from trntui.progress import report


_SUSPECT_SPAN_NS = 86_400 * 10**9
"""A trace longer than a day mixes clocks or holds corrupted timestamps (the TensorBoard plugin drops a Record
Window End more than 24 h after the start for the same reason)."""


def add_parts(
    parts: list[Part], top_meta: dict[str, Any], builder: ProfileBuilder, *, path: Path, instance: str = "", spill: Any = None
) -> None:
    """Convert the columns of decoded chrome events into builder batches (events, lanes, flows).
    `spill` (a streamed load): the parts' args are in this `ArgsSpill`, and so will the profile's be."""
    report("merging", 0, 0)
    meta = builder.meta
    meta.trace_meta.update({k: v for k, v in top_meta.items() if k != "traceEvents"})
    base, note = clock_base(top_meta)
    if note:
        meta.notes.append(note)
    meta.base_ns = base
    if not instance:
        host = top_meta.get("host_name")
        instance = str(host) if isinstance(host, str) else ""

    n = sum(p.n for p in parts)
    idmap = IdMap()

    # --- metadata (M) events: process/thread names and sort order --------------------------------
    process_names: dict[int, str] = {}
    process_labels: dict[int, str] = {}
    thread_names: dict[tuple[int, int], str] = {}
    process_sort: dict[int, int] = {}
    thread_sort: dict[tuple[int, int], int] = {}
    interesting = {"process_name", "thread_name", "process_labels", "process_sort_index", "thread_sort_index"}
    for ev in (ev for p in parts for ev in p.m_events):
        if ev.name not in interesting or not ev.args:
            continue
        try:
            a = any_decoder.decode(ev.args)
        except msgspec.DecodeError:
            continue
        if not isinstance(a, dict):
            continue
        pid = idmap.one(ev.pid)
        if ev.name == "process_name":
            process_names[pid] = str(a.get("name", ""))
        elif ev.name == "process_labels":
            process_labels[pid] = str(a.get("labels", ""))
        elif ev.name == "thread_name":
            thread_names[(pid, idmap.one(ev.tid))] = str(a.get("name", ""))
        elif ev.name == "process_sort_index":
            process_sort[pid] = to_id(a.get("sort_index"))
        elif ev.name == "thread_sort_index":
            thread_sort[(pid, idmap.one(ev.tid))] = to_id(a.get("sort_index"))

    # --- interval events: X, i, and B/E pairs -----------------------------------------------------
    xs = [p.x for p in parts]
    be_events = [ev for p in parts for ev in p.be_events]
    if be_events:
        paired = _pair_begin_end(be_events, meta)
        xs.append(x_cols(paired, np.full(len(paired), PH["X"], np.int8), links=None, base=base))
        del paired
    del be_events
    n_x = sum(p.n_x for p in parts)
    other = n - sum(p.n_m for p in parts) - n_x - sum(p.n_be for p in parts) - sum(p.n_sft for p in parts)
    if other:
        meta.skip("events of unsupported phases (counters, async, ...)", other)

    m = sum(x.m for x in xs)
    # times were put on the ns clock by each piece (columns.interval_ns): events out of its range are skipped,
    # negative durations shown as instants
    start = np.concatenate([x.start for x in xs])
    end = np.concatenate([x.end for x in xs])
    kinds = np.concatenate([x.kinds for x in xs])
    bad = None
    if any(x.bad is not None for x in xs):
        bad = np.concatenate([x.bad if x.bad is not None else np.zeros(x.m, bool) for x in xs])
    n_neg = sum(x.n_neg for x in xs)
    if bad is not None or n_neg:
        meta.skip("events with non-finite or out-of-range timestamps", 0 if bad is None else int(bad.sum()))
        if n_neg:
            meta.notes.append(f"{n_neg} events with negative duration shown as instants")
    keep_ok: np.ndarray | None = None
    if bad is not None:
        keep_ok = ~bad
        start, end, kinds = start[keep_ok], end[keep_ok], kinds[keep_ok]
        m = int(keep_ok.sum())
    if m and int(end.max()) - int(start.min()) > _SUSPECT_SPAN_NS:
        days = (int(end.max()) - int(start.min())) / 86_400e9
        meta.notes.append(f"events span {days:,.1f} days: timestamps from different clocks (mixed ts regimes) "
                          "or corrupted values (e.g. an absurd Record Window End)")
    if keep_ok is None:  # the pieces' (category, pid, tid) combinations: no per-event pid/tid columns
        combos = _global_combos(xs, builder, idmap)
        cat_ids = combos.cat_ids
    else:  # skipped events change which value occurs first: the per-event columns, then the same combinations
        combos = _combos_of_columns(xs, keep_ok, builder, idmap)
        cat_ids = combos.cat_ids
    name_ids = merge_strings([x.name for x in xs], keep_ok, builder.intern_name, np.int32)
    args = spill.concat([x.args for x in xs]) if spill is not None else ArgsStore.concat([x.args for x in xs])
    lazy = None
    if all(x.links is NOT_PARSED for x in xs):  # no row that links: the ids stay in the args until asked for
        ext = corr = None
        lazy = links_of_args
    else:
        at = 0
        for x in xs:  # pieces decoded before a row that links was seen
            if x.links is NOT_PARSED:
                x.links = link_columns(raw_many(args, np.arange(at, at + x.m)), None, fast_only=True)
            at += x.m
        if keep_ok is not None:
            args = args.permuted(np.nonzero(keep_ok)[0])
        if all(x.links is not None for x in xs):
            ext = np.concatenate([x.links[0] for x in xs])
            corr = np.concatenate([x.links[1] for x in xs])
            if keep_ok is not None:
                ext, corr = ext[keep_ok], corr[keep_ok]
        else:  # a value that is not an int somewhere: the exact rules over the whole column
            ext, corr = link_columns(list(args), meta)
    if lazy is not None and keep_ok is not None:
        args = args.permuted(np.nonzero(keep_ok)[0])
    for x in xs:
        x.args = x.links = None
    del xs

    # --- lanes: one per (tier, pid, tid/stream) ----------------------------------------------------
    device_pids = {p for p, lab in process_labels.items() if lab and not lab.upper().startswith("CPU")}
    cat_kind = [C.lane_kind(c) for c in builder.cats]
    lane_for_combo = np.empty(len(combos.rows), np.int32)
    for j, (cid, p, t) in enumerate(combos.rows.tolist()):
        tier, subsystem, prefix = cat_kind[cid]
        # ids below -999 are strings of the trace (`idmap`), or plain negative ints (a thread id wrapped to int32)
        tid_label = idmap.label(t) if t < -999 else None
        ident = f"{prefix}:{t if tid_label is None else tid_label}"
        is_device_lane = tier in (Tier.HARDWARE, Tier.DEVICE) and builder.cats[cid] != C.PRIVATEUSE1_DRIVER
        owner_label = process_labels.get(p, "")
        if p < -999 and idmap.label(p) is not None:
            subsystem, ident = "markers", str(idmap.label(p) or "")
        lane_for_combo[j] = builder.lane(
            tier,
            subsystem,
            ident,
            int(p),
            int(t),
            instance=instance,
            process_name=owner_label if is_device_lane and owner_label else process_names.get(p, ""),
            thread_name=thread_names.get((p, t), ""),
            sort_index=process_sort.get(p, 0) if p in process_sort else (1 << 24 if p in device_pids else 0),
        )
    lane_ids = combos.per_event(lane_for_combo) if m else np.empty(0, np.int32)
    # each event's host thread / stream (pid, tid) as a small code, for the flow binding
    threads, thread_of_row = small_codes(_thread_key(combos.rows[:, 1], combos.rows[:, 2]))
    ev_thread = combos.per_event(thread_of_row)
    del combos

    # (start, longest first): the profile's final order, computed once for the builder and the flow binding
    time_order = sorted_by_time(start, end)
    first = builder.add_events(
        start=start, end=end, lane=lane_ids, name=name_ids, cat=cat_ids, kind=kinds, ext=ext, corr=corr, args_raw=args,
        time_order=time_order, links_from_args=lazy,
    )

    # --- flows: bind each s/f half to the slice it belongs to ---------------------------------------
    fparts = [p.flows for p in parts if p.flows is not None]
    if fparts:
        report("binding flows", 0, 0)
        add_flows(fparts, start, end, threads, ev_thread, kinds, first, builder, idmap, time_order)

    # --- device kind and backend label --------------------------------------------------------------
    detect_device(builder, top_meta, meta)


class _Combos:
    """The distinct (category id, pid, tid) rows of the merged events in lexicographic order (`rows`, one lane
    each), each event's row (`row`, or per piece: (the rows of its combinations, each event's combination)), and
    the events' interned category ids (`cat_ids`)."""

    def __init__(self, rows: np.ndarray, row: Any, cat_ids: np.ndarray) -> None:
        self.rows, self.row, self.cat_ids = rows, row, cat_ids

    def per_event(self, table: np.ndarray) -> np.ndarray:
        """`table[row]` for every event: a per-row value (lane, thread) as an event column, piece by piece (no
        event-long column of rows)."""
        if isinstance(self.row, np.ndarray):
            return table[self.row]
        out = np.empty(sum(len(code) for _, code in self.row), table.dtype)
        at = 0
        for rows, code in self.row:
            np.take(table[rows], code, out=out[at : at + len(code)], mode="clip")  # (valid codes: no checked copy)
            at += len(code)
        return out


def _global_combos(xs: list[Any], builder: ProfileBuilder, idmap: IdMap) -> _Combos:
    """Merge the pieces' combinations: pids and tids through `idmap` as a whole-column pass would (all ints: as
    they are; else every distinct value, strings numbered in first-occurrence order), categories interned in
    first-occurrence order; then the rows sorted and deduplicated."""
    pid_maps = _id_maps([x.combos.pids for x in xs], idmap)
    tid_maps = _id_maps([x.combos.tids for x in xs], idmap)
    cat_maps = [np.fromiter(map(builder.intern_cat, x.cat[0]), np.int16, count=len(x.cat[0])) for x in xs]
    cat_ids = _gather_pieces([(cm, x.cat[1]) for cm, x in zip(cat_maps, xs)], np.int16)
    g_cat = np.concatenate([cm[x.combos.cat] for cm, x in zip(cat_maps, xs)]).astype(np.int64)
    g_pid = np.concatenate([pm[x.combos.pid] for pm, x in zip(pid_maps, xs)])
    g_tid = np.concatenate([tm[x.combos.tid] for tm, x in zip(tid_maps, xs)])
    rows, row_of = _distinct_rows(g_cat, g_pid, g_tid)
    at = np.cumsum([0] + [len(x.combos.cat) for x in xs])
    row = [(row_of[at[k] : at[k + 1]], x.combos.code) for k, x in enumerate(xs)]
    return _Combos(rows, row, cat_ids)


def _gather_pieces(pieces: list[tuple[np.ndarray, np.ndarray]], dtype: Any) -> np.ndarray:
    """The concatenation of `table[codes]` over the pieces' (table, codes), written in place (no per-piece
    copies joined afterwards)."""
    out = np.empty(sum(len(codes) for _, codes in pieces), dtype)
    at = 0
    for table, codes in pieces:
        np.take(table, codes, out=out[at : at + len(codes)], mode="clip")
        at += len(codes)
    return out


def _id_maps(values: list[Any], idmap: IdMap) -> list[np.ndarray]:
    """Per piece, its distinct pid (or tid) values as the profile's int ids."""
    if all(isinstance(v, np.ndarray) for v in values):
        return values
    table: dict[Any, int] = {}
    out = []
    for v in values:
        vals = v.tolist() if isinstance(v, np.ndarray) else v
        for x in vals:
            if x not in table:
                table[x] = idmap.one(x)
        out.append(np.fromiter(map(table.__getitem__, vals), np.int64, count=len(vals)))
    return out


def _distinct_rows(cat: np.ndarray, pid: np.ndarray, tid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (cat, pid, tid) rows in lexicographic order, and the row of each input."""
    if not len(cat):
        return np.zeros((0, 3), np.int64), np.zeros(0, np.int64)
    o = np.lexsort((tid, pid, cat))
    c, p, t = cat[o], pid[o], tid[o]
    new = np.ones(len(o), bool)
    new[1:] = (c[1:] != c[:-1]) | (p[1:] != p[:-1]) | (t[1:] != t[:-1])
    rank = np.cumsum(new) - 1
    row_of = np.empty(len(o), np.int64)
    row_of[o] = rank
    return np.stack([c[new], p[new], t[new]], axis=1), row_of


def _combos_of_columns(xs: list[Any], keep: np.ndarray, builder: ProfileBuilder, idmap: IdMap) -> _Combos:
    """`_global_combos` for a merge that skips events (`keep`): through per-event pid/tid columns."""
    pid = merge_ids([x.combos.column("pid") for x in xs], keep, idmap)
    tid = merge_ids([x.combos.column("tid") for x in xs], keep, idmap)
    cat_ids = merge_strings([x.cat for x in xs], keep, builder.intern_cat, np.int16)
    rows, row = _distinct_rows(cat_ids.astype(np.int64), pid, tid)
    return _Combos(rows, row, cat_ids)


def _thread_key(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    return pid.astype(np.int64) * (1 << 32) + (tid.astype(np.int64) & 0xFFFFFFFF)


def _pair_begin_end(events: list[Ev], meta: ProfileMeta) -> list[Ev]:
    """Turn B/E pairs into X events per (pid, tid) with a stack; unmatched halves are counted."""
    out: list[Ev] = []
    stacks: dict[tuple[Any, Any], list[Ev]] = {}
    unmatched = 0
    for ev in sorted(events, key=lambda e: e.ts):
        key = (ev.pid, ev.tid)
        if ev.ph == "B":
            stacks.setdefault(key, []).append(ev)
        else:
            stack = stacks.get(key)
            if not stack:
                unmatched += 1
                continue
            b = stack.pop()
            out.append(
                Ev(ph="X", name=b.name or ev.name, cat=b.cat or ev.cat, ts=b.ts, dur=ev.ts - b.ts, pid=b.pid, tid=b.tid, args=b.args)
            )
    unmatched += sum(len(s) for s in stacks.values())
    if unmatched:
        meta.skip("B/E events without their other half", unmatched)
    return out
