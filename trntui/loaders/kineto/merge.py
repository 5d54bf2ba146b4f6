"""Merge the decoded parts into builder batches: metadata events, intervals (X, i, B/E pairs), timestamps on
the int64 ns clock, interned strings, link columns, lanes; then the flows (flows.py) and the device (device.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from trntui.loaders.kineto.columns import (
    MAX_NS,
    NOT_PARSED,
    IdMap,
    Part,
    link_columns,
    links_of_args,
    merge_ids,
    merge_strings,
    to_id,
    to_ns,
    x_cols,
)
from trntui.loaders.kineto.device import detect_device
from trntui.loaders.kineto.flows import add_flows
from trntui.loaders.kineto.schema import PH, Ev, any_decoder
from trntui.model import categories as C
from trntui.model.args import ArgsStore, raw_many
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
    base = top_meta.get("baseTimeNanoseconds") or 0
    if not isinstance(base, int) or not 0 <= base < MAX_NS:
        meta.notes.append("baseTimeNanoseconds is not a usable clock offset; ignored")
        base = 0
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
        xs.append(x_cols(paired, np.full(len(paired), PH["X"], np.int8), links=None))
        del paired
    del be_events
    n_x = sum(p.n_x for p in parts)
    other = n - sum(p.n_m for p in parts) - n_x - sum(p.n_be for p in parts) - sum(p.n_sft for p in parts)
    if other:
        meta.skip("events of unsupported phases (counters, async, ...)", other)

    m = sum(x.m for x in xs)
    ts = np.concatenate([x.ts for x in xs])
    dur = np.concatenate([x.dur for x in xs])
    with np.errstate(invalid="ignore", over="ignore"):
        bad = ~np.isfinite(ts) | ~np.isfinite(dur)
        # out of the int64 ns clock (corrupted values like 1e300): would overflow the columns
        bad |= (np.abs(ts * 1000.0 + base) >= MAX_NS) | (np.abs((ts + np.maximum(dur, 0.0)) * 1000.0 + base) >= MAX_NS)
    neg = dur < 0
    if bad.any() or neg.any():
        meta.skip("events with non-finite or out-of-range timestamps", int(bad.sum()))
        if neg.any():
            meta.notes.append(f"{int(neg.sum())} events with negative duration shown as instants")
        dur = np.where(neg | bad, 0.0, dur)
        ts = np.where(bad, 0.0, ts)
    kinds = np.concatenate([x.kinds for x in xs])
    start = to_ns(ts) + base
    end = start + to_ns(dur)
    del ts, dur
    keep_ok: np.ndarray | None = None
    if bad.any():
        keep_ok = ~bad
        start, end, kinds = start[keep_ok], end[keep_ok], kinds[keep_ok]
        m = int(keep_ok.sum())
    if m and int(end.max()) - int(start.min()) > _SUSPECT_SPAN_NS:
        days = (int(end.max()) - int(start.min())) / 86_400e9
        meta.notes.append(f"events span {days:,.1f} days: timestamps from different clocks (mixed ts regimes) "
                          "or corrupted values (e.g. an absurd Record Window End)")
    pid = merge_ids([x.pid for x in xs], keep_ok, idmap)
    tid = merge_ids([x.tid for x in xs], keep_ok, idmap)
    cat_ids = merge_strings([x.cat for x in xs], keep_ok, builder.intern_cat, np.int16)
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
    lane_ids = np.empty(m, np.int32)
    if m:
        # unique (cat, pid, tid) rows in lexicographic order, via ranks packed into one int64 key
        # (same order and ids as np.unique(axis=0), without its slow row-wise sort)
        up, pinv = np.unique(pid, return_inverse=True)
        ut, tinv = np.unique(tid, return_inverse=True)
        packed = (cat_ids.astype(np.int64) * len(up) + pinv.reshape(-1)) * len(ut) + tinv.reshape(-1)
        ukey, inverse = np.unique(packed, return_inverse=True)
        inverse = inverse.reshape(-1)
        uniq = np.stack([ukey // (len(up) * len(ut)), up[(ukey // len(ut)) % len(up)], ut[ukey % len(ut)]], axis=1)
        lane_for_combo = np.empty(len(uniq), np.int32)
        for j, (cid, p, t) in enumerate(uniq.tolist()):
            tier, subsystem, prefix = cat_kind[cid]
            ident = f"{prefix}:{t if t >= -999 else idmap.label(t)}"
            is_device_lane = tier in (Tier.HARDWARE, Tier.DEVICE) and builder.cats[cid] != C.PRIVATEUSE1_DRIVER
            owner_label = process_labels.get(p, "")
            if p < -999:
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
        lane_ids = lane_for_combo[inverse]

    # (start, longest first): the profile's final order, computed once for the builder and the flow binding
    time_order = np.lexsort((start - end, start)) if m else np.zeros(0, np.int64)
    first = builder.add_events(
        start=start, end=end, lane=lane_ids, name=name_ids, cat=cat_ids, kind=kinds, ext=ext, corr=corr, args_raw=args,
        time_order=time_order, links_from_args=lazy,
    )

    # --- flows: bind each s/f half to the slice it belongs to ---------------------------------------
    fparts = [p.flows for p in parts if p.flows is not None]
    if fparts:
        report("binding flows", 0, 0)
        add_flows(fparts, start, end, pid, tid, kinds, first, builder, idmap, base, time_order)

    # --- device kind and backend label --------------------------------------------------------------
    detect_device(builder, top_meta, meta)


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
