"""System-trace rows into a `ProfileBuilder` (`add_system_rows`): the process filter, instance labels, framework
rows as the ops or matched to the trace.json rows they copy, lanes like Explorer's, events, flows, the device time
source and the clock check; the `External id`s of rows, and the dense unique keys the lanes are made from."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from trntui.model import categories as C
from trntui.model.args import ArgsStore, Blobs
from trntui.loaders.neuron import framework
from trntui.loaders.neuron.system.columns import SystemRows, _take_args
from trntui.loaders.neuron.system.records import parse_extra, to_int
from trntui.model.builder import ProfileBuilder
from trntui.model.profile import NO_ID, Flows, Tier

CAT_FRAMEWORK = "neuron_framework"
CAT_RUNTIME = "neuron_rt"
CAT_HARDWARE = "neuron_hw"
FLOW_CAT = "neuron_flow"
SYSTEM_CATS = frozenset({CAT_FRAMEWORK, CAT_RUNTIME, CAT_HARDWARE})

DEVICE_TIME_SOURCE = "Neuron system trace (nc_exec_running, merged per logical execution)"


def add_system_rows(
    rows: SystemRows,
    builder: ProfileBuilder,
    *,
    label: str,
    pid_filter: int | None = None,
    instance_hint: str = "",
) -> dict[str, int]:
    """Add system-trace rows to `builder` (merging with the trace.json rows already in it). Returns counts."""
    meta = builder.meta
    meta.notes.extend(rows.notes)
    for reason, count in rows.skipped.items():
        meta.skip(reason, count)
    stats = {"rows": len(rows), "added": 0, "duplicates": 0, "filtered": 0}
    if pid_filter is not None and len(rows):
        known = rows.pid[rows.pid != NO_ID]
        if len(known) and bool((known != known[0]).any()):  # more than one process
            keep = (rows.pid == pid_filter) | (rows.pid == NO_ID)
            stats["filtered"] = int((~keep).sum())
            rows = rows.take(keep)
            if stats["filtered"]:
                meta.notes.append(f"{label}: kept the rows of process {pid_filter}; {stats['filtered']} row(s) of other processes are in the other ranks' runs")
    n = len(rows)
    meta.device_kind = "neuron"
    meta.backend = "NEURON"
    if not n:
        meta.notes.append(f"{label}: no system-trace events")
        return stats

    # the Kineto lanes of the same process get the instance id, so framework rows share Explorer's labels
    # (the first instance seen for each process, in row order)
    has_inst = np.array([bool(v) for v in rows.instance.values], bool)
    if len(has_inst):
        named = np.nonzero(has_inst[rows.instance.codes] & (rows.pid != NO_ID))[0]
        if len(named):
            up, first_at, _inv = _dense_unique(rows.pid[named])
            for j in np.argsort(first_at, kind="stable").tolist():
                builder.set_instance(int(up[j]), rows.instance[int(named[first_at[j]])])

    # --- framework rows: their Kineto categories; the ops of the profile, or copies of trace.json rows -----------
    src_kind = np.array([0 if s == "framework" else 2 if s == "neuron_hw" else 1 for s in rows.source.values],
                        np.int64)
    row_kind = src_kind[rows.source.codes] if len(src_kind) else np.zeros(n, np.int64)
    fw_idx = np.nonzero(row_kind == 0)[0]
    stream_has = np.array([v is not None for v in rows.stream.values], bool)
    stream_row = stream_has[rows.stream.codes] if len(stream_has) else np.zeros(n, bool)
    declared = framework.declared_categories(rows, fw_idx) if len(fw_idx) else []
    fw_cats = framework.categories(rows, fw_idx, stream_row, declared) if len(fw_idx) else []
    system_cats = {builder.intern_cat(c) for c in SYSTEM_CATS}
    ex_cat = builder.existing()["cat"]
    has_trace = bool(len(ex_cat)) and bool((~np.isin(ex_cat, list(system_cats))).any())
    row_cat = np.full(n, NO_ID, np.int64)  # per row: a Kineto category id for framework rows that are ops
    dup_of = np.full(n, NO_ID, np.int64)
    also_of = np.full(n, NO_ID, np.int64)
    if len(fw_idx) and not has_trace:
        # no trace.json: the framework rows of the export are the profile's ops (torch's rules apply to them)
        row_cat[fw_idx] = [builder.intern_cat(c) for c in fw_cats]
        meta.trace_meta["neuron_framework_source"] = "export"
        counts: dict[str, int] = {}
        for c in fw_cats:
            counts[c] = counts.get(c, 0) + 1
        what = ", ".join(f"{v} {k}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))
        meta.notes.append(
            f"{label}: no trace.json; the {len(fw_idx)} framework row(s) of the system trace are the ops ({what}); "
            "calls, Self CPU and the op tree follow torch's rules on them"
        )
    elif len(fw_idx):
        m = framework.match(rows, builder, fw_idx, fw_cats, stream_row, label, declared,
                            external_ids(rows.args, fw_idx))
        dup_of, also_of = m.dup_of, m.also_of
        if m.promote.any():
            cat_of = dict(zip(fw_idx.tolist(), fw_cats))
            for k in np.nonzero(m.promote)[0].tolist():
                c = cat_of[k]
                row_cat[k] = builder.intern_cat(framework.OP if c == framework.DISPATCH else c)
        meta.notes.extend(m.notes)
        meta.trace_meta["neuron_framework_match"] = dict(m.stats, offset_ns=m.offset_ns, estimated=m.estimated)
        if m.estimated:
            meta.trace_meta["neuron_clock_offset_ns"] = m.offset_ns
    dups = dup_of >= 0
    stats["duplicates"] = int(dups.sum())

    # --- lanes --------------------------------------------------------------------------------------------------
    keep = ~dups
    kidx = np.nonzero(keep)[0]
    # one lane per (kind, instance, pid, ident): codes per row, unique combos, one builder.lane per combo;
    # instance and stream codes are numbered by first appearance (the order lanes are created in)
    src_code = row_kind[kidx]
    inst_code, inst_names = rows.instance.first_seen_codes(kidx, lambda v: v or instance_hint)
    stream_code, stream_vals = rows.stream.first_seen_codes(kidx)
    if None in stream_vals:
        r = stream_vals.index(None)
        stream_code = np.where(stream_code == r, -1, np.where(stream_code > r, stream_code - 1, stream_code))
        stream_vals = [v for v in stream_vals if v is not None]
    stream_names = dict(enumerate(stream_vals))
    pid = rows.pid[kidx]
    tid = rows.tid[kidx]
    ncs = rows.nc[kidx]
    pcs = rows.pcore[kidx]
    fw = src_code == 0
    hwm = src_code == 2
    a_col = np.where(fw, stream_code, ncs)  # framework: stream; runtime/hardware: logical core
    b_col = np.where(fw, np.where(stream_code >= 0, NO_ID, tid), np.where(hwm, pcs, np.where(ncs == NO_ID, tid, NO_ID)))
    uniq, inverse = _unique_rows([src_code, inst_code, pid, a_col, b_col])
    cat_fw = builder.intern_cat(CAT_FRAMEWORK)
    cat_rt = builder.intern_cat(CAT_RUNTIME)
    cat_hw = builder.intern_cat(CAT_HARDWARE)
    lane_of_combo = np.empty(len(uniq), np.int32)
    for j, (sc, ic, p, a, b) in enumerate(uniq.tolist()):
        inst = inst_names[ic]
        if sc == 0:
            if a >= 0:
                st = stream_names[a]
                lane_of_combo[j] = builder.lane(Tier.DEVICE, "framework", f"Stream:{st}", p, to_int(st, 0), instance=inst)
            else:
                lane_of_combo[j] = builder.lane(Tier.DISPATCH, "framework", f"TID:{b}", p, b, instance=inst)
        elif sc == 2:
            lnc = a if a != NO_ID else 0
            pc = b if b != NO_ID else lnc
            lane_of_combo[j] = builder.lane(Tier.HARDWARE, "neuron_hw", f"NC{lnc}:{pc}", p, pc, instance=inst)
        elif a != NO_ID:
            lane_of_combo[j] = builder.lane(Tier.RUNTIME, "neuron_rt", f"NC:{a}", p, a, instance=inst)
        else:
            lane_of_combo[j] = builder.lane(Tier.RUNTIME, "neuron_rt", f"TID:{b}", p, b, instance=inst)
    lane_ids = lane_of_combo[inverse] if len(kidx) else np.empty(0, np.int32)
    cat_ids = np.array([cat_fw, cat_rt, cat_hw], np.int16)[src_code] if len(kidx) else np.empty(0, np.int16)
    own = row_cat[kidx] if len(kidx) else np.empty(0, np.int64)
    cat_ids = np.where(own >= 0, own, cat_ids).astype(np.int16)

    # names interned in first-appearance order (as a row-by-row loop would)
    name_code, name_vals = rows.name.first_seen_codes(kidx)
    name_map = np.array([builder.intern_name(x) for x in name_vals], np.int32)
    names = name_map[name_code] if len(kidx) else np.empty(0, np.int32)
    ext = external_ids(rows.args, kidx)
    first = builder.add_events(
        start=rows.start[kidx],
        end=rows.end[kidx],
        lane=lane_ids,
        name=names,
        cat=cat_ids,
        ext=ext,
        corr=rows.seq[kidx],
        args_raw=_take_args(rows.args, kidx),
    )
    stats["added"] = len(kidx)

    # --- flows: system rows → their builder index; duplicates → the trace.json row ------------------------------
    if len(rows.flow_row):
        builder_index = np.full(n, NO_ID, np.int64)
        builder_index[kidx] = first + np.arange(len(kidx))
        builder_index[dups] = dup_of[dups]
        ev = builder_index[rows.flow_row]
        ok = ev >= 0
        fc = builder.intern_cat(FLOW_CAT)
        # one membership per (event, flow value); a dispatch row inside its trace.json row gives it its flows too
        pe, pk = ev[ok], rows.flow_key[ok]
        also = also_of[rows.flow_row]
        if (also >= 0).any():
            pe = np.concatenate([pe, also[also >= 0]])
            pk = np.concatenate([pk, rows.flow_key[also >= 0]])
        o = np.lexsort((pk, pe))
        pe, pk = pe[o], pk[o]
        new = np.ones(len(pe), bool)
        new[1:] = (pe[1:] != pe[:-1]) | (pk[1:] != pk[:-1])
        pairs = np.stack([pe[new], pk[new]], axis=1)
        builder.add_flows(
            pairs[:, 1], pairs[:, 0], np.full(len(pairs), fc, np.int16), np.full(len(pairs), Flows.MEMBER, np.int8)
        )

    # --- device time source and clock sanity ------------------------------------------------------------------------
    has_trace_device_rows = bool(set(builder.cats) & C.DEVICE_TYPED)
    if not has_trace_device_rows and not meta.device_time_source:
        meta.device_time_source = DEVICE_TIME_SOURCE
    _check_alignment(builder, rows, kidx, label)
    return stats


EXTERNAL_RX = re.compile(rb"xternal id|external_id")


def external_ids(args: Any, kidx: np.ndarray) -> np.ndarray:
    """`External id` / `external_id` of rows `kidx` from their args (-1 when absent); only args whose text
    mentions one are parsed."""
    ext = np.full(len(kidx), NO_ID, np.int64)
    if isinstance(args, ArgsStore):
        cand = _store_rows_matching(args, b"xternal")  # in both spellings; EXTERNAL_RX checks each row
        if cand is None:  # offsets not in order: look at every row
            cand = np.arange(len(args), dtype=np.int64)
        pos = np.searchsorted(kidx, cand)
        hit = pos < len(kidx)
        hit[hit] = kidx[pos[hit]] == cand[hit]
        for j, k in zip(pos[hit].tolist(), cand[hit].tolist()):
            raw = args[k]
            if raw is None or not EXTERNAL_RX.search(raw):
                continue
            a = parse_extra(raw)
            e = a.get("External id", a.get("external_id")) if a else None
            if e is not None:
                ext[j] = to_int(e)
        return ext
    for j, k in enumerate(kidx.tolist()):
        a = args[k]
        if isinstance(a, (str, bytes)):
            if isinstance(a, bytes):
                if not EXTERNAL_RX.search(a):
                    continue
            elif "xternal id" not in a and "external_id" not in a:
                continue
            a = parse_extra(a)
        if not a:
            continue
        e = a.get("External id", a.get("external_id"))
        if e is not None:
            ext[j] = to_int(e)
    return ext


def _store_rows_matching(store: ArgsStore, needle: bytes) -> np.ndarray | None:
    """Rows of `store` whose bytes contain `needle` (bytes.find over the blob, much faster than re), sorted;
    None when the rows' offsets are not increasing (then the caller checks every row)."""
    store = store.in_memory()  # (args left in a trace file: read into one blob, rows in the same order)
    starts, ends = store.starts, store.ends
    if len(starts) > 1 and not bool(np.all(starts[1:] >= ends[:-1])):
        return None
    blob = store.blob
    pieces = list(zip(blob.blobs, blob.bounds[:-1].tolist())) if isinstance(blob, Blobs) else [(blob, 0)]
    found = []
    for piece, base in pieces:
        data = piece.tobytes() if isinstance(piece, np.ndarray) else bytes(piece)
        at = data.find(needle)
        while at >= 0:
            found.append(base + at)
            at = data.find(needle, at + 1)
    if not found:
        return np.zeros(0, np.int64)
    pos = np.asarray(found, np.int64)
    row = np.searchsorted(starts, pos, "right") - 1
    ok = row >= 0
    ok[ok] = pos[ok] < ends[row[ok]]
    return np.unique(row[ok])


def _check_alignment(builder: ProfileBuilder, rows: SystemRows, kidx: np.ndarray, label: str) -> None:
    """Warn when trace.json and the system trace do not overlap in time (different run or wrong clock base)."""
    ex = builder.existing()
    sys_cats = {builder.intern_cat(c) for c in SYSTEM_CATS}
    other = ~np.isin(ex["cat"], list(sys_cats))
    if not other.any() or not len(rows):
        return
    f0, f1 = int(ex["start"][other].min()), int(ex["end"][other].max())
    s0, s1 = int(rows.start.min()), int(rows.end.max())
    slack = 5_000_000  # 5 ms
    if f1 < s0 - slack or f0 > s1 + slack:
        off = (s0 - f0) / 1e9
        builder.meta.notes.append(
            f"{label}: trace.json and the system trace do not overlap in time (system trace starts {off:+.3f} s "
            "from trace.json): different runs, or a trace.json without baseTimeNanoseconds?"
        )


def _unique_rows(cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(stack(cols), axis=0, return_inverse=True), via one dense int64 key when it fits."""
    n = len(cols[0])
    if n == 0:
        return np.zeros((0, len(cols)), np.int64), np.zeros(0, np.int64)
    # key = the columns' offsets from their minimum, mixed radix: its order is the rows' lexicographic order
    lows = [int(c.min()) for c in cols]
    spans = [int(c.max()) - lo + 1 for c, lo in zip(cols, lows)]
    size = 1
    for sp in spans:
        size *= sp
    if size >= 1 << 62:
        codes = []
        size = 1
        for c in cols:
            u, _first, inv = _dense_unique(c)
            codes.append(inv)
            size *= max(len(u), 1)
        if size >= 1 << 62:
            uniq, inverse = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
            return uniq, inverse.reshape(-1)
        spans = [int(c.max()) + 1 for c in codes]
        parts, lows = codes, [0] * len(codes)
    else:
        parts = cols
    key = np.zeros(n, np.int64)
    for c, lo, sp in zip(parts, lows, spans):
        key = key * sp + (c.astype(np.int64) - lo)
    _ukeys, first, inverse = _dense_unique(key)
    uniq = np.stack([c[first] for c in cols], axis=1)
    return uniq, inverse


def _dense_unique(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """np.unique(values, return_index=True, return_inverse=True) for int arrays; without a sort when the
    values span a small range (a presence table instead)."""
    values = np.asarray(values)
    n = len(values)
    if n == 0:
        return values[:0], np.zeros(0, np.int64), np.zeros(0, np.int64)
    lo, hi = int(values.min()), int(values.max())
    if hi - lo > 4 * n + 1024:
        u, first, inv = np.unique(values, return_index=True, return_inverse=True)
        return u, first, inv.reshape(-1)
    off = values.astype(np.int64) - lo
    first_at = np.full(hi - lo + 1, n, np.int64)
    first_at[off[::-1]] = np.arange(n - 1, -1, -1)  # repeated indices: the last write (first row) wins
    present = np.nonzero(first_at < n)[0]
    rank = np.zeros(hi - lo + 1, np.int64)
    rank[present] = np.arange(len(present))
    return (present + lo).astype(values.dtype), first_at[present], rank[off]
