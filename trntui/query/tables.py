"""A loaded `Profile` as Arrow tables, for SQL (trntui/query/database.py), export and the Python API.

The event columns are not copied: `start`, `end`, `lane`, `kind` become Arrow arrays over the profile's numpy
buffers, `name` and `cat` dictionary-encoded columns whose indices are the profile's interned ids, and the
per-lane facts (`pid`, `tid`, `tier`) dictionary columns whose indices are the `lane` column itself. What needs
work per event (`args` JSON, nesting `depth`/`parent_id`, `step`) is computed only when a query reads it
(`EventColumns.args_of` and friends, called by DuckDB through functions on the `id` column).

Table columns (docs/sql.md):

- events(id, name, cat, ph, ts_us, dur_us, start_ns, end_ns, dur_ns, pid, tid, lane, tier, depth, parent_id,
  step, args)
- lanes(lane, tier, label, subsystem, ident, pid, tid, instance, process_name, thread_name, events)
- flows(event_id, flow_key, cat, role)
- links(op_id, runtime_id, device_id, rule)
- steps(step, name, start_ns, end_ns, event_id)
- ops(row, key, device_type, count, self_cpu_time_total, cpu_time_total, cpu_time, self_device_time_total,
  device_time_total, device_time, self_cpu_percent, self_device_percent, input_shapes, is_user_annotation,
  cpu_memory_usage, self_cpu_memory_usage, device_memory_usage, self_device_memory_usage)
- counters(counter, label, unit, ts_ns, value)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from trntui.model.profile import NO_ID, Profile, Tier

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

TIERS = ("framework", "framework device", "runtime", "hardware", "counter")
"""The `tier` values, by `Tier` (the last one for counter series, which are not events)."""

FLOW_ROLES = ("start", "finish", "member")


def _pa() -> Any:
    import pyarrow as pa

    return pa


def arrow_view(values: np.ndarray) -> "pa.Array":
    """A numpy column as an Arrow array over the same buffer (no copy)."""
    pa = _pa()
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def _masked(values: np.ndarray, missing: np.ndarray) -> "pa.Array":
    """`values` with SQL NULL where `missing`, built from buffers (`pa.array` imports pandas: see `_strings`)."""
    pa = _pa()
    values = np.ascontiguousarray(values)
    validity = None
    if missing.any():
        validity = pa.py_buffer(np.packbits(~missing, bitorder="little"))
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [validity, pa.py_buffer(values)])


def _nullable(values: np.ndarray, null: int = NO_ID) -> "pa.Array":
    """Integers with `null` as SQL NULL (a small copy: these columns are per lane or per row, not per event)."""
    values = np.asarray(values)
    return _masked(values, values == null)


def _ints(values: Sequence[int | None], dtype: type = np.int64) -> "pa.Array":
    """A small list of integers (None: NULL) as an Arrow array, without `pa.array` (see `_strings`)."""
    missing = np.fromiter((v is None for v in values), bool, len(values))
    return _masked(np.fromiter((0 if v is None else v for v in values), dtype, len(values)), missing)


def _strings(values: list[str]) -> "pa.Array":
    """A string array built from its buffers: `pa.array(list)` imports pandas (0.3 s) to check for a Series,
    which was most of what registering a run's tables cost (bench/sql.py). Names that are not valid UTF-8
    (a lone surrogate from a JSON escape) get U+FFFD, as DuckDB needs valid UTF-8."""
    pa = _pa()
    data = [v.encode("utf-8", "replace") for v in values]
    lengths = np.fromiter(map(len, data), np.int64, len(data))
    total = int(lengths.sum()) if len(data) else 0
    large = total >= 2**31
    offsets = np.zeros(len(data) + 1, np.int64 if large else np.int32)
    np.cumsum(lengths, out=offsets[1:])
    kind = pa.LargeStringArray if large else pa.StringArray
    array = kind.from_buffers(len(data), pa.py_buffer(offsets), pa.py_buffer(b"".join(data)))
    return array.cast(pa.string()) if large else array


def origin_ns(profile: Profile) -> int:
    """The timeline's clock origin: `start_ns` 0 is what the app shows as +0 (the display span's start)."""
    from trntui.analysis.timeline import display_span

    return int(display_span(profile)[0]) if len(profile) else 0


@dataclass
class EventColumns:
    """One run's events for a query engine: the zero-copy base table and the lazily computed columns."""

    profile: Profile
    origin: int
    _step: np.ndarray | None = field(default=None, repr=False)

    @property
    def base_ns(self) -> int:
        return int(self.profile.meta.base_ns)

    def base_table(self) -> "pa.Table":
        """id, name, cat, kind, start_abs, end_abs, lane, pid, tid, tier: arrays over the profile's buffers
        (the `id` column is the only one made here: the event index)."""
        pa = _pa()
        p = self.profile
        n = len(p)
        lanes = p.lanes
        lane_idx = arrow_view(p.lane.astype(np.int32, copy=False))

        def per_lane(values: "pa.Array") -> "pa.Array":
            return pa.DictionaryArray.from_arrays(lane_idx, values)

        names = pa.DictionaryArray.from_arrays(arrow_view(p.name.astype(np.int32, copy=False)), _strings(list(p.names)))
        cats = pa.DictionaryArray.from_arrays(arrow_view(p.cat.astype(np.int32, copy=False)), _strings(list(p.cats)))
        return pa.table({
            "id": arrow_view(np.arange(n, dtype=np.int64)),
            "name": names,
            "cat": cats,
            "kind": arrow_view(p.kind.astype(np.int8, copy=False)),
            "start_abs": arrow_view(p.start),
            "end_abs": arrow_view(p.end),
            "lane": lane_idx,
            "pid": per_lane(_ints([l.pid for l in lanes])),
            "tid": per_lane(_ints([l.tid for l in lanes])),
            "tier": per_lane(_strings([TIERS[int(l.tier)] for l in lanes])),
        })

    # -- the columns computed on first read ---------------------------------------------------------------
    def args_of(self, ids: np.ndarray) -> list[str | None]:
        """The events' `args` as JSON text (None where an event has none)."""
        from trntui.model.args import ArgsStore

        store = self.profile.args_raw
        out: list[str | None] = []
        if isinstance(store, ArgsStore):
            from trntui.model.args import raw_many

            for raw in raw_many(store, ids):
                out.append(bytes(raw).decode("utf-8", "replace") if len(raw) and bytes(raw) != b"{}" else None)
            # (events without args are `{}` in raw_many: NULL, as in the file where they have no args key)
            return out
        for i in ids.tolist():
            raw = store[i] if i < len(store) else None
            if raw is None:
                out.append(None)
            elif isinstance(raw, dict):
                out.append(json.dumps(raw, default=str) if raw else None)
            else:
                text = bytes(raw).decode("utf-8", "replace")
                out.append(text if text not in ("", "{}") else None)
        return out

    def depth_of(self, ids: np.ndarray) -> np.ndarray:
        return self.profile.nesting()[1][ids]

    def parent_of(self, ids: np.ndarray) -> np.ndarray:
        return self.profile.nesting()[0][ids]

    def step_of(self, ids: np.ndarray) -> np.ndarray:
        if self._step is None:
            self._step = event_steps(self.profile)
        return self._step[ids]


def event_steps(profile: Profile) -> np.ndarray:
    """Per event: the `ProfilerStep#N` number it belongs to, -1 for none. The rule of `--steps`
    (trntui/analysis/select.py): a host event by its start, a device row by the op that launched it."""
    from trntui.analysis.select import steps

    n = len(profile)
    out = np.full(n, NO_ID, np.int64)
    st = steps(profile)
    if not n or not st:
        return out
    starts = np.array([s.start for s in st], np.int64)
    ends = np.array([s.end for s in st], np.int64)
    nums = np.array([s.number for s in st], np.int64)
    k = np.searchsorted(starts, profile.start, side="right") - 1
    inside = (k >= 0) & (profile.start < ends[np.maximum(k, 0)])
    out[inside] = nums[k[inside]]
    from trntui.analysis.links import build_links

    links = build_links(profile)
    launched = links.device & (links.op_of >= 0)
    out[launched] = out[links.op_of[launched]]
    return out


def lanes_table(profile: Profile) -> "pa.Table":
    pa = _pa()
    lanes = profile.lanes
    counts = np.bincount(profile.lane, minlength=len(lanes)) if len(profile) else np.zeros(len(lanes), np.int64)
    return pa.table({
        "lane": _ints([l.id for l in lanes], np.int32),
        "tier": _strings([TIERS[int(l.tier)] for l in lanes]),
        "label": _strings([l.label for l in lanes]),
        "subsystem": _strings([l.subsystem for l in lanes]),
        "ident": _strings([l.ident for l in lanes]),
        "pid": _ints([l.pid for l in lanes]),
        "tid": _ints([l.tid for l in lanes]),
        "instance": _strings([l.instance for l in lanes]),
        "process_name": _strings([l.process_name for l in lanes]),
        "thread_name": _strings([l.thread_name for l in lanes]),
        "events": arrow_view(counts[: len(lanes)].astype(np.int64)),
    })


def flows_table(profile: Profile) -> "pa.Table":
    pa = _pa()
    f = profile.flows
    return pa.table({
        "event_id": arrow_view(f.event.astype(np.int64)),
        "flow_key": arrow_view(f.key.astype(np.int64, copy=False)),
        "cat": pa.DictionaryArray.from_arrays(arrow_view(f.cat.astype(np.int32)), _strings(list(profile.cats))),
        "role": pa.DictionaryArray.from_arrays(arrow_view(f.role.astype(np.int32)), _strings(list(FLOW_ROLES))),
    })


@dataclass
class LinkRows:
    """Who launched what, one row per device execution (and per runtime call that launched none): the paths of
    the chain pane (trntui/analysis/chains.py) through the dependency edges, as columns."""

    op_id: np.ndarray
    runtime_id: np.ndarray
    device_id: np.ndarray
    rule: list[str]


def link_rows(profile: Profile) -> LinkRows:
    """Every hardware event with a predecessor: its topmost ancestor (`op_id`, where the chain pane starts, as
    `find_root` walks: the earliest predecessor at each step), the runtime event on the way (`runtime_id`),
    and the rule of its last link; runtime events with no hardware successor get a row without a device."""
    from trntui.analysis.chains import _rule_label
    from trntui.analysis.links import build_links

    links = build_links(profile)
    n = len(profile)
    tiers = np.array([int(l.tier) for l in profile.lanes] or [0], np.int8)[profile.lane] if n else np.zeros(0, np.int8)
    src, dst, rule = links.edge_src, links.edge_dst, links.edge_rule
    # one predecessor per event: the earliest-starting one (find_root's choice), ties by the first edge
    pred = np.full(n, NO_ID, np.int64)
    pred_rule = np.zeros(n, np.int8)
    if len(src):
        o = np.lexsort((np.arange(len(src)), profile.start[src], dst))
        d = dst[o]
        first = np.ones(len(d), bool)
        first[1:] = d[1:] != d[:-1]
        pred[d[first]] = src[o][first]
        pred_rule[d[first]] = rule[o][first]
    hw = np.nonzero((tiers == int(Tier.HARDWARE)) & (pred >= 0))[0]
    has_hw_succ = np.zeros(n, bool)
    if len(dst):
        has_hw_succ[src[tiers[dst] == int(Tier.HARDWARE)]] = True
    rt_alone = np.nonzero((tiers == int(Tier.RUNTIME)) & (pred >= 0) & ~has_hw_succ)[0]

    def walk(start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(root, runtime ancestor) of each event in `start`, walking `pred` up (at most 64 steps, cycle-safe)."""
        root = start.copy()
        runtime = np.where(tiers[start] == int(Tier.RUNTIME), start, NO_ID) if len(start) else start.copy()
        cur = start.copy()
        for _ in range(64):
            up = pred[cur]
            go = (up >= 0) & (up != start)
            if not go.any():
                break
            cur = np.where(go, up, cur)
            root = np.where(go, up, root)
            hit = go & (runtime < 0) & (tiers[np.maximum(up, 0)] == int(Tier.RUNTIME))
            runtime = np.where(hit, up, runtime)
        return root, runtime

    r_hw, rt_hw = walk(hw)
    r_rt, _ = walk(rt_alone)
    op = np.concatenate([r_hw, r_rt])
    runtime = np.concatenate([rt_hw, rt_alone])
    device = np.concatenate([hw, np.full(len(rt_alone), NO_ID, np.int64)])
    rules = np.concatenate([pred_rule[hw], pred_rule[rt_alone]])
    # a root that is the runtime call itself (nothing above it) is no op
    op = np.where(op == runtime, NO_ID, op)
    order = np.lexsort((device, runtime, op))
    labels = {r: _rule_label(r) for r in set(rules.tolist())}
    return LinkRows(op[order], runtime[order], device[order], [labels[r] for r in rules[order].tolist()])


def links_table(profile: Profile) -> "pa.Table":
    pa = _pa()
    rows = link_rows(profile)
    return pa.table({
        "op_id": _nullable(rows.op_id),
        "runtime_id": _nullable(rows.runtime_id),
        "device_id": _nullable(rows.device_id),
        "rule": pa.array(rows.rule, pa.string()).dictionary_encode(),
    })


def steps_table(profile: Profile, origin: int) -> "pa.Table":
    from trntui.analysis.select import steps

    pa = _pa()
    st = steps(profile)
    return pa.table({
        "step": _ints([s.number for s in st]),
        "name": _strings([profile.name_of(s.event) for s in st]),
        "start_ns": _ints([s.start - origin for s in st]),
        "end_ns": _ints([s.end - origin for s in st]),
        "event_id": _ints([s.event for s in st]),
    })


OPS_COLUMNS = (
    "key", "device_type", "count", "self_cpu_time_total", "cpu_time_total", "cpu_time", "self_device_time_total",
    "device_time_total", "device_time", "self_cpu_percent", "self_device_percent", "input_shapes",
    "is_user_annotation", "cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage",
    "self_device_memory_usage",
)
"""The `ops` table's columns: torch's `FunctionEventAvg` attribute names (µs, bytes), after `row` (torch's order)."""


def ops_table(table: Any) -> "pa.Table":
    """The key_averages rows (`OpTable`), in torch's order, with torch's attribute names."""
    pa = _pa()
    n = len(table)
    cols: dict[str, Any] = {"row": arrow_view(np.arange(n, dtype=np.int64))}
    for c in OPS_COLUMNS:
        src = "name" if c == "key" else c
        v = getattr(table, src)
        if isinstance(v, list):
            cols[c] = _strings([str(x) for x in v])
        elif c == "is_user_annotation":
            cols[c] = pa.array(np.asarray(v, bool))
        else:
            cols[c] = pa.array(np.asarray(v))
    return pa.table(cols)


def counters_table(profile: Profile, origin: int) -> "pa.Table":
    from trntui.analysis.counters import counters

    pa = _pa()
    series = counters(profile)
    names: list[str] = []
    labels: list[str] = []
    units: list[str] = []
    for c in series:
        names += [c.name] * len(c.ts)
        labels += [c.label] * len(c.ts)
        units += [c.unit] * len(c.ts)
    ts = np.concatenate([c.ts for c in series]) if series else np.zeros(0, np.int64)
    vals = np.concatenate([c.values for c in series]) if series else np.zeros(0, np.float64)
    return pa.table({
        "counter": _strings(names).dictionary_encode(),
        "label": _strings(labels).dictionary_encode(),
        "unit": _strings(units).dictionary_encode(),
        "ts_ns": arrow_view(ts - origin),
        "value": arrow_view(vals),
    })


DEVICE_TABLE_NAMES = {"Instruction": "instructions", "DmaPacketAggregated": "dma"}
"""Neuron Explorer's device tables under their SQL names (the others: snake_case of the Parquet table name)."""


def sql_table_name(parquet_name: str) -> str:
    import re

    if parquet_name in DEVICE_TABLE_NAMES:
        return DEVICE_TABLE_NAMES[parquet_name]
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", parquet_name).lower()


def device_tables(export: Any) -> dict[str, "pa.Table"]:
    """A Neuron device profile's tables as read (`DeviceExport.tables`: the columns trntui uses), by SQL name."""
    pa = _pa()
    out: dict[str, pa.Table] = {}
    for name, read in export.tables.items():
        frame = read.frame
        if frame is None:
            continue
        out[sql_table_name(name)] = pa.Table.from_pandas(frame, preserve_index=False)
    return out
