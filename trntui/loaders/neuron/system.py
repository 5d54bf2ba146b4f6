"""Neuron system-trace rows (from Explorer's Parquet or JSON export) → `Profile` events, lanes and flows.

Both exports are normalised into `SystemRows` (the columns of `SystemProfileEvents`, neuron-formats.md §6) and
added to a `ProfileBuilder` by `add_system_rows`, so they merge with the Kineto `trace.json` of the same run:

- one absolute ns clock (Neuron rows are Unix ns; Kineto rows were converted with `baseTimeNanoseconds`);
- framework rows of the system trace (Explorer's copies of trace.json events) are the ops when no trace.json
  was loaded, and otherwise are matched to the trace.json rows they copy (`trntui.loaders.neuron.framework`:
  clock offset, name and start): matched copies are dropped and their `flow_id` values move to the trace.json
  row; the rest stay, with their device time (a note gives the counts);
- lanes like Explorer's: `framework/TID:n` (dispatch), `framework/Stream:n` (device interaction),
  `neuron_rt/NC:n` (runtime, logical core), `neuron_hw/NC<l>:<p>` (hardware, physical core);
- `flow_id` lists become `Flows.MEMBER` rows (category `neuron_flow`); `nrt_sequence_id` goes into the
  correlation column of runtime/framework rows (used by `trntui.analysis.neuron` links).

Written against the documented schema only (no Trainium hardware was available): every column but `name` and a
timestamp is optional, ids may be strings, unknown event names are kept.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trntui.model import categories as C
from trntui.model.args import ArgsStore, Blobs
from trntui.loaders.neuron import framework
from trntui.model.builder import ProfileBuilder
from trntui.model.profile import NO_ID, Flows, Tier

CAT_FRAMEWORK = "neuron_framework"
CAT_RUNTIME = "neuron_rt"
CAT_HARDWARE = "neuron_hw"
FLOW_CAT = "neuron_flow"
SYSTEM_CATS = frozenset({CAT_FRAMEWORK, CAT_RUNTIME, CAT_HARDWARE})

HARDWARE_NAMES = frozenset(
    {
        "nc_exec_running",
        "cc_running",
        "cc_exec_barrier",
        "numerical_err",
        "nrt_model_switch",
        "nc_model_switch",
        "timestamp_sync_point",
        "hw_notify",
    }
)
"""Documented hardware events (neuron-formats.md §9); used only when a row has no `trace_event_source`."""

DEVICE_TIME_SOURCE = "Neuron system trace (nc_exec_running, merged per logical execution)"


class Strs:
    """A column of strings (or None) as codes into `values` (dictionary encoded): per-row work is numpy work."""

    __slots__ = ("codes", "values")

    def __init__(self, codes: np.ndarray, values: list[Any]) -> None:
        self.codes = np.asarray(codes, np.int64)
        self.values = list(values)

    @classmethod
    def from_list(cls, items: list[Any]) -> "Strs":
        ids: dict[Any, int] = {}
        codes = np.fromiter((ids.setdefault(x, len(ids)) for x in items), np.int64, count=len(items))
        return cls(codes, list(ids))

    def __len__(self) -> int:
        return len(self.codes)

    def tolist(self) -> list[Any]:
        v = self.values
        return [v[c] for c in self.codes.tolist()]

    def take(self, idx: np.ndarray) -> "Strs":
        return Strs(self.codes[idx], self.values)

    def __getitem__(self, k: int) -> Any:
        return self.values[int(self.codes[k])]

    def mapped(self, fn: Any) -> "Strs":
        """fn applied to each distinct value (equal results merged into one code)."""
        out = [fn(v) for v in self.values]
        ids: dict[Any, int] = {}
        remap = np.fromiter((ids.setdefault(x, len(ids)) for x in out), np.int64, count=len(out))
        return Strs(remap[self.codes] if len(out) else self.codes, list(ids))

    @staticmethod
    def concat(parts: list["Strs"]) -> "Strs":
        ids: dict[Any, int] = {}
        codes = []
        for p in parts:
            remap = np.fromiter((ids.setdefault(x, len(ids)) for x in p.values), np.int64, count=len(p.values))
            codes.append(remap[p.codes] if len(p.values) else p.codes)
        return Strs(np.concatenate(codes) if codes else np.zeros(0, np.int64), list(ids))

    def first_seen_codes(self, idx: np.ndarray, fn: Any = None) -> tuple[np.ndarray, list[Any]]:
        """Codes of rows `idx` renumbered 0.. by first appearance (in `idx` order) of `fn(value)`, and those
        values in that order (what a dict filled row by row gives)."""
        vals = self.values if fn is None else [fn(v) for v in self.values]
        ids: dict[Any, int] = {}
        merged = np.fromiter((ids.setdefault(x, len(ids)) for x in vals), np.int64, count=len(vals))
        uvals = list(ids)
        c = merged[self.codes[idx]] if len(vals) else np.zeros(0, np.int64)
        if not len(c):
            return c, []
        first = np.full(len(uvals), len(c), np.int64)
        first[c[::-1]] = np.arange(len(c) - 1, -1, -1)  # repeated indices: the last write (first row) wins
        present = np.nonzero(first < len(c))[0]
        u = present[np.argsort(first[present], kind="stable")]
        rank = np.empty(len(uvals), np.int64)
        rank[u] = np.arange(len(u))
        return rank[c], [uvals[k] for k in u.tolist()]


@dataclass
class SystemRows:
    """`SystemProfileEvents` rows as columns. Missing values: -1 for ints, "" / None for strings.

    String columns are `Strs` (codes + distinct values); `args` is a list (dicts or JSON text per row) or an
    `ArgsStore` of JSON bytes (the columnar Parquet path)."""

    name: Strs
    start: np.ndarray
    end: np.ndarray
    source: Strs
    instance: Strs
    pid: np.ndarray
    tid: np.ndarray
    nc: np.ndarray
    pcore: np.ndarray
    stream: Strs
    seq: np.ndarray
    """`nrt_sequence_id` (column or extra attribute), -1 when absent."""
    flow_row: np.ndarray
    """Exploded `flow_id`: row index of each (row, flow value) pair."""
    flow_key: np.ndarray
    args: Any
    """Per row: a dict, or a JSON object string/bytes parsed on demand, or None (a list or an `ArgsStore`)."""
    notes: list[str] = field(default_factory=list)
    category: Strs | None = None
    """The Kineto category Explorer kept in a row's attributes (`category` / `cat`), when read column-wise."""
    skipped: dict[str, int] = field(default_factory=dict)
    """What was left out and how many (the profile's `meta.skip` counts): values out of the int64 range."""

    def __len__(self) -> int:
        return len(self.start)

    def take(self, mask: np.ndarray) -> "SystemRows":
        idx = np.nonzero(mask)[0]
        remap = np.full(len(self), -1, np.int64)
        remap[idx] = np.arange(len(idx))
        fsel = mask[self.flow_row] if len(self.flow_row) else np.zeros(0, bool)
        return SystemRows(
            name=self.name.take(idx),
            start=self.start[idx],
            end=self.end[idx],
            source=self.source.take(idx),
            instance=self.instance.take(idx),
            pid=self.pid[idx],
            tid=self.tid[idx],
            nc=self.nc[idx],
            pcore=self.pcore[idx],
            stream=self.stream.take(idx),
            seq=self.seq[idx],
            flow_row=remap[self.flow_row[fsel]],
            flow_key=self.flow_key[fsel],
            args=_take_args(self.args, idx),
            notes=list(self.notes),
            category=self.category.take(idx) if self.category is not None else None,
            skipped=dict(self.skipped),
        )


def _take_args(args: Any, idx: np.ndarray) -> Any:
    if isinstance(args, ArgsStore):
        return args.permuted(idx)
    return [args[i] for i in idx.tolist()]


INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
OUT_OF_RANGE = "Neuron values out of the int64 range (ts 1e400, 'inf', 2**70, ...), left empty"
"""The `skipped` reason for cells no int64 holds: the cell is treated as missing (a row without a timestamp is
then skipped as such), the rest of the row and of the file is read."""


def to_int(value: Any, default: int = NO_ID, bad: list[int] | None = None) -> int:
    """An id that may be int, float, numeric string (beyond 2^53: parsed exactly), or missing. A value that
    is not a finite number inside the int64 range (1e400, "inf", NaN, 2**70) is `default`, counted in
    `bad[0]` when given: one bad cell never sinks a run."""
    if value is None:
        return default
    if isinstance(value, bool):
        return int(value)
    try:
        if isinstance(value, int):
            out = value
        elif isinstance(value, float):
            out = int(value)  # OverflowError for ±inf, ValueError for NaN
        else:
            text = str(value).strip()
            if not text:
                return default
            try:
                out = int(text)
            except ValueError:
                number = float(text)  # ValueError: not a number at all (a missing value, not an overflow)
                if number != number or number in (float("inf"), float("-inf")):
                    raise OverflowError(text) from None
                out = int(number)
    except OverflowError:
        out = None
    except ValueError:
        if isinstance(value, float):  # NaN
            out = None
        else:
            return default
    if out is None or not INT64_MIN <= out <= INT64_MAX:
        if bad is not None:
            bad[0] += 1
        return default
    return out


_to_int = to_int


def parse_flow_ids(value: Any) -> list[int]:
    """`flow_id` as list of string ints (documented), list of ints, a JSON list in a string, or `"1,2"`."""
    if value is None:
        return []
    if isinstance(value, (list, tuple, np.ndarray)):
        out = [to_int(v) for v in value]
        return [v for v in out if v != NO_ID]
    if isinstance(value, (int, np.integer)):
        return [int(value)]
    text = str(value).strip()
    if not text:
        return []
    if text.startswith("["):
        try:
            return parse_flow_ids(json.loads(text))
        except ValueError:
            pass
    out = [to_int(p.strip().strip('"')) for p in text.strip("[]").split(",")]
    return [v for v in out if v != NO_ID]


def parse_extra(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    try:
        parsed = json.loads(value)
    except (TypeError, ValueError):
        return {"extra_attributes_json": value}
    return parsed if isinstance(parsed, dict) else {"extra_attributes_json": parsed}


def infer_source(name: str, source: Any, group: Any = None) -> str:
    """`framework` / `neuron_rt` / `neuron_hw` from the column, a Profiler-2.0 `group`, or the name."""
    if isinstance(source, str) and source:
        s = source.lower()
        if s.startswith("framework") or s in ("pytorch", "jax"):
            return "framework"
        if "hw" in s or "hardware" in s or "device" in s:
            return "neuron_hw"
        if "rt" in s or "runtime" in s or s.startswith("nrt"):
            return "neuron_rt"
        return s
    if isinstance(group, str) and group.startswith("framework"):
        return "framework"
    if name in HARDWARE_NAMES:
        return "neuron_hw"
    return "neuron_rt"


def rows_from_records(records: list[dict[str, Any]], notes: list[str] | None = None) -> SystemRows:
    """Normalise event dicts (JSON exports, or Parquet rows read as Python) into `SystemRows`."""
    n = len(records)
    name: list[str] = []
    source: list[str] = []
    instance: list[str] = []
    stream: list[str | None] = []
    args: list[dict[str, Any]] = []
    start = np.zeros(n, np.int64)
    end = np.zeros(n, np.int64)
    pid = np.full(n, NO_ID, np.int64)
    tid = np.full(n, NO_ID, np.int64)
    nc = np.full(n, NO_ID, np.int64)
    pcore = np.full(n, NO_ID, np.int64)
    seq = np.full(n, NO_ID, np.int64)
    frow: list[int] = []
    fkey: list[int] = []
    bad = 0
    keep = np.ones(n, bool)
    oor = [0]  # cells out of the int64 range

    def to_int(value: Any, default: int = NO_ID) -> int:  # (this function's cells are counted)
        return _to_int(value, default, oor)

    core = {
        "name", "start_ts", "end_ts", "duration_ns", "timestamp", "duration", "timestamp_ns", "trace_event_source",
        "instance_id", "process_id", "thread_id", "nc_idx", "lnc_idx", "pcore_idx", "device_core_idx", "flow_id",
        "framework_stream_id", "extra_attributes_json", "group", "timestamp_unit",
    }
    for k, r in enumerate(records):
        extra = parse_extra(r.get("extra_attributes_json"))
        get = lambda key, r=r, extra=extra: r.get(key, extra.get(key))  # noqa: E731
        nm = str(r.get("name") or extra.get("name") or "")
        s = to_int(get("start_ts"))
        if s == NO_ID:
            s = to_int(get("timestamp"))
        if s == NO_ID:
            s = to_int(get("timestamp_ns"))
        e = to_int(get("end_ts"))
        if e == NO_ID:
            d = to_int(get("duration_ns"))
            if d == NO_ID:
                d = to_int(get("duration"), 0)
            e = s + max(d, 0) if s != NO_ID else NO_ID
            if e > INT64_MAX:  # a valid start plus a valid duration past the int64 range
                oor[0] += 1
                e = s
        if s == NO_ID or not nm:
            bad += 1
            keep[k] = False
            name.append(nm)
            source.append("")
            instance.append("")
            stream.append(None)
            args.append({})
            continue
        name.append(nm)
        start[k] = s
        end[k] = max(e, s)
        src = infer_source(nm, r.get("trace_event_source"), r.get("group"))
        source.append(src)
        instance.append(str(get("instance_id") or ""))
        pid[k] = to_int(get("process_id"))
        tid[k] = to_int(get("thread_id"))
        ncv = to_int(get("nc_idx"))
        if ncv == NO_ID:
            ncv = to_int(get("lnc_idx"))
        nc[k] = ncv
        pc = to_int(get("pcore_idx"))
        if pc == NO_ID:
            pc = to_int(get("device_core_idx"))
        pcore[k] = pc
        st = get("framework_stream_id")
        stream.append(None if st is None or st == "" else str(st))
        seq[k] = to_int(get("nrt_sequence_id"), to_int(get("nrta_seq_id")))
        for f in parse_flow_ids(get("flow_id")):
            frow.append(k)
            fkey.append(f)
        a = {key: v for key, v in r.items() if key not in core and v is not None}
        a.update({key: v for key, v in extra.items() if key not in a})
        for key in ("nc_idx", "pcore_idx", "framework_stream_id", "trace_event_source"):
            v = r.get(key)
            if v is not None:
                a[key] = v
        fl = r.get("flow_id", extra.get("flow_id"))
        if fl is not None:
            a["flow_id"] = [str(x) for x in parse_flow_ids(fl)]
        args.append(a)
    rows = SystemRows(
        name=Strs.from_list(name),
        start=start,
        end=end,
        source=Strs.from_list(source),
        instance=Strs.from_list(instance),
        pid=pid,
        tid=tid,
        nc=nc,
        pcore=pcore,
        stream=Strs.from_list(stream),
        seq=seq,
        flow_row=np.asarray(frow, np.int64),
        flow_key=np.asarray(fkey, np.int64),
        args=args,
        notes=list(notes or []),
    )
    if oor[0]:
        rows.skipped[OUT_OF_RANGE] = oor[0]
    if bad:
        rows.notes.append(f"{bad} system-trace row(s) without a name or timestamp skipped")
        rows = rows.take(keep)
    return rows


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


def concat_rows(parts: list[SystemRows]) -> SystemRows:
    """Rows of several split tables, in order."""
    if len(parts) == 1:
        return parts[0]
    offsets = np.cumsum([0] + [len(p) for p in parts[:-1]])
    cat = lambda attr: Strs.concat([getattr(p, attr) for p in parts])  # noqa: E731
    arr = lambda attr: np.concatenate([getattr(p, attr) for p in parts])  # noqa: E731
    if all(isinstance(p.args, ArgsStore) for p in parts):
        args: Any = ArgsStore.concat([p.args for p in parts])
    else:
        args = [x for p in parts for x in p.args]
    return SystemRows(
        name=cat("name"),
        start=arr("start"),
        end=arr("end"),
        source=cat("source"),
        instance=cat("instance"),
        pid=arr("pid"),
        tid=arr("tid"),
        nc=arr("nc"),
        pcore=arr("pcore"),
        stream=cat("stream"),
        seq=arr("seq"),
        flow_row=np.concatenate([p.flow_row + o for p, o in zip(parts, offsets)]),
        flow_key=arr("flow_key"),
        args=args,
        notes=[n for p in parts for n in p.notes],
        category=Strs.concat([p.category for p in parts]) if all(p.category is not None for p in parts) else None,
        skipped={k: sum(p.skipped.get(k, 0) for p in parts) for k in dict.fromkeys(k for p in parts for k in p.skipped)},
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
