"""torch's `key_averages()` rebuilt from a saved trace, with torch's semantics.

Follows torch/autograd/profiler.py (`_parse_kineto_results`) and profiler_util.py (`_populate_cpu_children`,
`_remove_dup_nodes`, `key_averages`, `_build_table`): a per-thread op tree by containment (partial overlaps are
not children), runtime rows re-threaded under the op that launched them, Self CPU = own time minus
children, device rows attached to their launching op, `ProfilerStep#N` merged, utility ops filtered out,
and the same percentage denominators. Times are µs floats computed like torch's: each event's times relative to
the trace start, divided by 1000, then differences and sums in torch's order (children in tree order, rows in
global (start, -end) order), so averages and ties agree to the last digit. Names are demangled as torch's table
demangles them; with `profile_memory=True` traces the memory columns and torch's `[memory]`/`[OutOfMemory]` rows
are rebuilt from the memory records (`MemRecordsAcc.in_interval`).

The package by job (every public name is importable from `trntui.analysis.key_averages`): this module holds the
table (`OpTable`, its columns and derived percentages) and the aggregation into rows (`key_averages`);
`cpu_tree` builds torch's CPU event forest with the times and memory of each event; `names` gives the row keys
(table names, input shapes, device type labels).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trntui.analysis.key_averages.cpu_tree import (
    FILTERED_NAMES,
    CpuTree,
    _ordered_sum,
    _us_span,
    build_cpu_tree,
    trace_start_ns,
)
from trntui.analysis.key_averages.names import (
    _device_type_label,
    _rewritten_name_ids,
    input_shapes_many,
    input_shapes_of,
    parse_input_shapes,
    rewrite_name,
    table_names,
)
from trntui.analysis.links import Links, build_links
from trntui.analysis.sort_keys import normalize_sort_key
from trntui.model import categories as C
from trntui.model.arrays import distinct, small_uint
from trntui.model.memory_events import MEMORY_EVENT_NAME, OUT_OF_MEMORY_EVENT_NAME
from trntui.model.profile import NO_ID, Profile

__all__ = [
    "COLUMNS", "ROW_FIELDS", "OpTable", "key_averages", "remember", "select_rows", "FILTERED_NAMES", "CpuTree",
    "build_cpu_tree", "trace_start_ns", "input_shapes_of", "parse_input_shapes", "rewrite_name", "table_names",
]

COLUMNS = (
    "name",
    "device_type",
    "is_user_annotation",
    "input_shapes",
    "count",
    "self_cpu_time_total",
    "cpu_time_total",
    "self_device_time_total",
    "device_time_total",
    "cpu_memory_usage",
    "self_cpu_memory_usage",
    "device_memory_usage",
    "self_device_memory_usage",
)

ROW_FIELDS = (
    "name",
    "device_type",
    "is_user_annotation",
    "input_shapes",
    "count",
    "self_cpu_time_total",
    "cpu_time_total",
    "cpu_time",
    "self_device_time_total",
    "device_time_total",
    "device_time",
    "self_cpu_percent",
    "self_device_percent",
    "cpu_memory_usage",
    "self_cpu_memory_usage",
    "device_memory_usage",
    "self_device_memory_usage",
)
"""Fields of `OpTable.row` (CSV columns, JSON row keys): torch's attribute names; times in µs, memory in bytes."""


@dataclass
class OpTable:
    """The key_averages rows as columns (µs floats like torch's), plus totals and provenance.

    Rows are in torch's order (each key's first occurrence in global (start, -end) order). `rows_events[k]` lists
    the events merged into row k (for highlighting an op's instances).
    """

    name: list[str]
    device_type: list[str]
    is_user_annotation: np.ndarray
    input_shapes: list[str]
    count: np.ndarray
    self_cpu_time_total: np.ndarray
    cpu_time_total: np.ndarray
    self_device_time_total: np.ndarray
    device_time_total: np.ndarray
    backend: str = ""
    """Device column label (`CUDA`, `NEURON`, ...); empty when the profile has no device."""
    rows_events: list[np.ndarray] = field(default_factory=list)
    sum_self_cpu: float = 0.0
    sum_self_device: float = 0.0
    device_time_source: str = ""
    link_counts: dict[str, int] = field(default_factory=dict)
    cpu_memory_usage: np.ndarray | None = None
    """Bytes allocated minus freed (CPU) during the row's events, summed (torch's `cpu_memory_usage`)."""
    self_cpu_memory_usage: np.ndarray | None = None
    device_memory_usage: np.ndarray | None = None
    """The same for device memory (CUDA, PrivateUse1, HIP, XPU records)."""
    self_device_memory_usage: np.ndarray | None = None
    profile_memory: bool = False
    """The trace was recorded with `profile_memory=True` (or has memory records): torch's table then shows the
    `CPU Mem`/`Self CPU Mem` columns (and the device ones when some row has self device memory)."""
    in_device_total: np.ndarray | None = None
    """Rows that torch adds into `Self <DEV> time total` (device rows other than user annotations; CPU rows
    carrying legacy device time)."""

    def __post_init__(self) -> None:
        n = len(self.name)
        for f in ("cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage", "self_device_memory_usage"):
            if getattr(self, f) is None:
                setattr(self, f, np.zeros(n, np.int64))
        if self.in_device_total is None:
            self.in_device_total = np.array([d != "CPU" for d in self.device_type], bool) & ~np.asarray(
                self.is_user_annotation, bool
            ) if n else np.zeros(0, bool)

    def __len__(self) -> int:
        return len(self.name)

    # derived columns: computed once per table (renderers read them per cell: recomputing the column per
    # cell made a 200k-row table quadratic), recomputed only if a column or total they use is replaced
    def _derived(self, name: str, compute: Any, *deps: Any) -> np.ndarray:
        key = tuple(id(d) if isinstance(d, np.ndarray) else d for d in deps)
        memo = self.__dict__.setdefault("_derived_columns", {})
        hit = memo.get(name)
        if hit is None or hit[0] != key:
            hit = memo[name] = (key, compute())
        return hit[1]

    @property
    def cpu_time(self) -> np.ndarray:
        """torch's `cpu_time`: `1.0 * cpu_time_total / count`."""
        return self._derived("cpu_time", lambda: self.cpu_time_total / np.maximum(self.count, 1),
                             self.cpu_time_total, self.count)

    @property
    def device_time(self) -> np.ndarray:
        return self._derived("device_time", lambda: self.device_time_total / np.maximum(self.count, 1),
                             self.device_time_total, self.count)

    @property
    def self_cpu_percent(self) -> np.ndarray:
        return self._derived("self_cpu_percent", lambda: _pct(self.self_cpu_time_total, self.sum_self_cpu),
                             self.self_cpu_time_total, self.sum_self_cpu)

    @property
    def cpu_total_percent(self) -> np.ndarray:
        return self._derived("cpu_total_percent", lambda: _pct(self.cpu_time_total, self.sum_self_cpu),
                             self.cpu_time_total, self.sum_self_cpu)

    @property
    def self_device_percent(self) -> np.ndarray:
        return self._derived("self_device_percent", lambda: _pct(self.self_device_time_total, self.sum_self_device),
                             self.self_device_time_total, self.sum_self_device)

    @property
    def has_device(self) -> bool:
        """torch shows device columns only if some row has device time."""
        return bool(self.backend) and bool(np.any(self.self_device_time_total > 0))

    @property
    def has_device_memory(self) -> bool:
        """torch shows `<DEV> Mem`/`Self <DEV> Mem` only with a device and some row with self device memory > 0."""
        return bool(self.backend) and bool(np.any(self.self_device_memory_usage > 0))

    @property
    def has_input_shapes(self) -> bool:
        """torch shows `Input Shapes` only when some row's shapes are a non-empty list (grouped by shapes)."""
        return any(s not in ("", "[]") for s in self.input_shapes)

    def totals(self, order: np.ndarray | None = None) -> tuple[float, float]:
        """(Self CPU time total, Self device time total) summed as torch's `_build_table` sums them: row by row,
        in the order the table is printed (float sums depend on it in the last bits)."""
        rows = np.arange(len(self)) if order is None else np.asarray(order, np.int64)
        cpu = sum(self.self_cpu_time_total[rows].tolist())
        dev_rows = rows[self.in_device_total[rows]]
        dev = sum(self.self_device_time_total[dev_rows].tolist())
        return float(cpu), float(dev)

    def column(self, key: str) -> Any:
        key = normalize_sort_key(key) if key not in COLUMNS else key
        return getattr(self, key)

    def order(self, sort_by: str | None = None, descending: bool = True) -> np.ndarray:
        """Row order for a sort key (torch sorts descending); ties keep table order (stable, like Python's
        `sorted(..., reverse=True)`)."""
        if sort_by is None:
            return np.arange(len(self))
        key = normalize_sort_key(sort_by)
        if key == "name":
            names = np.array(self.name, dtype=object)
            o = np.argsort(names, kind="stable")
            return _reverse_stable(o, names[o]) if descending else o
        values = np.asarray(self.column(key), dtype=np.float64)
        o = np.argsort(-values if descending else values, kind="stable")
        return o

    def row(self, k: int) -> dict[str, Any]:
        """One row as a dict of torch-named fields (times in µs, memory in bytes)."""
        return {
            "name": self.name[k],
            "device_type": self.device_type[k],
            "is_user_annotation": bool(self.is_user_annotation[k]),
            "input_shapes": self.input_shapes[k],
            "count": int(self.count[k]),
            "self_cpu_time_total": float(self.self_cpu_time_total[k]),
            "cpu_time_total": float(self.cpu_time_total[k]),
            "cpu_time": float(self.cpu_time[k]),
            "self_device_time_total": float(self.self_device_time_total[k]),
            "device_time_total": float(self.device_time_total[k]),
            "device_time": float(self.device_time[k]),
            "self_cpu_percent": float(self.self_cpu_percent[k]),
            "self_device_percent": float(self.self_device_percent[k]),
            "cpu_memory_usage": int(self.cpu_memory_usage[k]),
            "self_cpu_memory_usage": int(self.self_cpu_memory_usage[k]),
            "device_memory_usage": int(self.device_memory_usage[k]),
            "self_device_memory_usage": int(self.self_device_memory_usage[k]),
        }

    def rows(self, sort_by: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        order = self.order(sort_by)
        if limit is not None:
            order = order[:limit]
        return [self.row(int(k)) for k in order]

    def find(self, name: str, device_type: str = "CPU") -> int:
        """Index of the row named `name` (of the given device type), or -1."""
        for k, (n, d) in enumerate(zip(self.name, self.device_type)):
            if n == name and d == device_type:
                return k
        return -1

    def to_pandas(self):  # pragma: no cover - thin convenience
        import pandas as pd

        return pd.DataFrame(self.rows())


def _reverse_stable(order: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """A stable ascending order turned descending with ties still in their original order."""
    if not len(order):
        return order
    starts = np.r_[0, np.nonzero(keys[1:] != keys[:-1])[0] + 1]
    runs = np.split(order, starts[1:])
    return np.concatenate(runs[::-1])


def _pct(values: np.ndarray, total: float) -> np.ndarray:
    if total <= 0:
        return np.zeros_like(values, dtype=np.float64)
    return values * 100.0 / total


def key_averages(
    profile: Profile,
    *,
    group_by_input_shapes: bool = False,
    events: np.ndarray | None = None,
) -> OpTable:
    """Build torch's key_averages table from the profile (optionally only for the events in `events`)."""
    cache_key = _memo_key(group_by_input_shapes)
    if events is None and cache_key in profile.cache:
        return profile.cache[cache_key]
    links = build_links(profile)
    tree = build_cpu_tree(profile, links, events)
    table = _aggregate(profile, links, tree, group_by_input_shapes)
    if events is None:
        profile.cache[cache_key] = table
    return table


def _memo_key(group_by_input_shapes: bool) -> tuple[str, bool]:
    return ("key_averages", group_by_input_shapes)


def remember(profile: Profile, table: OpTable, *, group_by_input_shapes: bool = False) -> None:
    """Keep `table` as the profile's whole-profile key_averages result (a table read back from the cache)."""
    profile.cache[_memo_key(group_by_input_shapes)] = table


def _aggregate(profile: Profile, links: Links, tree: CpuTree, by_shapes: bool) -> OpTable:
    """Group rows by (table name, device type, is user annotation[, input shapes]), vectorised.

    torch's `key_averages` walks its event list, sorted by (start, -end) over all threads, and adds each event
    to its key's `FunctionEventAvg`: rows come out in order of each key's first event, and every total is a
    float sum in that order. The list holds the CPU events (after duplicate removal), the device rows, then the
    `[memory]` and `[OutOfMemory]` rows (a stable sort keeps that order among equal times).
    """
    start, end = profile.start, profile.end
    origin = trace_start_ns(profile)
    annotation_cats = {profile.cat_id(c) for c in C.USER_ANNOTATION} - {NO_ID}
    has_device = bool(profile.meta.backend)
    cpu_ev = np.asarray(tree.events, np.int64)
    dev_ev = np.asarray(tree.device_rows, np.int64)
    mem_ev = np.asarray(tree.memory_rows, np.int64)
    oom_ev = np.asarray(tree.oom_rows, np.int64)
    parts = (cpu_ev, dev_ev, mem_ev, oom_ev)
    evs = np.concatenate(parts)
    nc, nd, nm, no = (len(p) for p in parts)
    zf = lambda k: np.zeros(k, np.float64)  # noqa: E731
    zi = lambda k: np.zeros(k, np.int64)  # noqa: E731
    dev_us = _us_span(start[dev_ev], end[dev_ev], origin)
    rest = nm + no
    cpu_t = np.concatenate([tree.cpu_total_us, zf(nd + rest)])
    self_c = np.concatenate([tree.self_cpu_us, zf(nd + rest)])
    if has_device:
        dev_t = np.concatenate([tree.device_total_us, dev_us, zf(rest)])
        self_d = np.concatenate([tree.self_device_us, dev_us, zf(rest)])
    else:
        dev_t = zf(len(evs))
        self_d = dev_t
    has_memory = bool(tree.memory_attached)
    if has_memory:
        mem_cpu = np.concatenate([tree.cpu_memory, zi(nd), tree.memory_rows_cpu, zi(no)])
        mem_self_cpu = np.concatenate([tree.self_cpu_memory, zi(nd), tree.memory_rows_cpu, zi(no)])
        mem_dev = np.concatenate([tree.device_memory, zi(nd), tree.memory_rows_device, zi(no)])
        mem_self_dev = np.concatenate([tree.self_device_memory, zi(nd), tree.memory_rows_device, zi(no)])
    else:  # all zeros (not summed)
        mem_cpu = mem_self_cpu = mem_dev = mem_self_dev = zi(0)
    # device type: 0 = CPU, else 1 + index of the label of the event's category
    labels = ["CPU"]
    label_of_cat = np.zeros(max(len(profile.cats), 1), np.int64)
    for c, cat_name in enumerate(profile.cats):
        lab = _device_type_label(profile, cat_name)
        if lab not in labels:
            labels.append(lab)
        label_of_cat[c] = labels.index(lab)
    cat = profile.cat[evs]
    dcode = np.concatenate([zi(nc), label_of_cat[cat[nc : nc + nd]], zi(rest)])
    ua_of_cat = np.zeros(max(len(profile.cats), 1), bool)
    ua_of_cat[list(annotation_cats)] = True
    ua = ua_of_cat[cat]
    ua[nc + nd :] = False
    del cat
    key = profile.name[evs]
    key = _rewritten_name_ids(profile, names=key)[key]
    key *= len(labels)
    key += dcode
    key *= 2
    key += ua
    shape_names: list[str] = []
    sid = zi(len(evs))
    if by_shapes:
        shape_ids: dict[str, int] = {"[]": 0}
        sid = np.fromiter(
            (shape_ids.setdefault(text, len(shape_ids)) for text in input_shapes_many(profile, evs[: nc + nd])),
            np.int64,
            count=nc + nd,
        )
        sid = np.concatenate([sid, zi(rest)])
        shape_names = list(shape_ids)
        key = key * max(len(shape_names), 1) + sid
    # torch's event list order: (start, -end), then CPU/device events before [memory] before [OutOfMemory]
    # (the CPU nodes merged into their parent are no rows: left out here, the columns keep them)
    if profile.time_sorted():  # event index order is (start, -end) order already: no sort needed
        pos = np.full(len(profile), -1, np.int64)
        pos[evs] = np.arange(len(evs))
        pos[cpu_ev[tree.deleted]] = -1
        glob = pos[pos >= 0]
        del pos
    else:
        src = np.concatenate([zi(nc + nd), np.ones(nm, np.int64), np.full(no, 2, np.int64)])
        glob = np.lexsort((evs, src, -end[evs], start[evs])) if len(evs) else zi(0)
        if len(tree.deleted):
            row = np.ones(len(evs), bool)
            row[tree.deleted] = False
            glob = glob[row[glob]]
    if len(glob):
        g, first = _groups_by_first(key[glob])  # group of each event (in global order), each group's first
        firsts = glob[first]  # position (in evs) of each group's first event
    else:
        g = zi(0)
        firsts = zi(0)
    del key
    ng = len(firsts)

    def total(v: np.ndarray, nonzero: bool = True) -> np.ndarray:
        out = np.zeros(ng, v.dtype)
        if nonzero:  # (a column known to be all zeros sums to zeros)
            _ordered_sum(out, g, v[glob])
        return out

    # the sums, each column dropped once summed
    sums = {"self_cpu_time_total": total(self_c), "cpu_time_total": total(cpu_t)}
    del self_c, cpu_t
    sums.update(self_device_time_total=total(self_d, has_device), device_time_total=total(dev_t, has_device))
    del self_d, dev_t
    sums.update(
        cpu_memory_usage=total(mem_cpu, has_memory),
        self_cpu_memory_usage=total(mem_self_cpu, has_memory),
        device_memory_usage=total(mem_dev, has_memory),
        self_device_memory_usage=total(mem_self_dev, has_memory),
    )
    del mem_cpu, mem_self_cpu, mem_dev, mem_self_dev
    count = np.bincount(g, minlength=ng).astype(np.int64)
    members = np.argsort(g.astype(small_uint(ng)), kind="stable")
    bounds = np.cumsum(count)[:-1] if ng else []
    rows_events = np.split(evs[glob][members], bounds) if ng else []
    first_ev = evs[firsts]
    names = table_names(profile, distinct(profile.name[first_ev]))
    name_col = [names[k] for k in profile.name[first_ev].tolist()]
    dtype_col = [labels[k] for k in dcode[firsts].tolist()]
    shapes_col = [shape_names[k] for k in (sid[firsts].tolist())] if by_shapes else [""] * ng
    row_ua = ua[firsts].astype(bool)
    row_dev = dcode[firsts] != 0
    in_device_total = (row_dev & ~row_ua) if has_device else np.zeros(ng, bool)
    if has_device and tree.system_device:
        in_device_total |= ~row_dev  # torch's legacy path: device time carried by CPU rows
    table = OpTable(
        name=name_col,
        device_type=dtype_col,
        is_user_annotation=row_ua,
        input_shapes=shapes_col,
        count=count,
        backend=profile.meta.backend,
        rows_events=list(rows_events),
        device_time_source=profile.meta.device_time_source,
        link_counts=dict(links.counts),
        profile_memory=_recorded_memory(profile),
        in_device_total=in_device_total,
        **sums,
    )
    table.sum_self_cpu, table.sum_self_device = table.totals()
    if not table.device_time_source and table.sum_self_device:
        table.device_time_source = "trace.json device rows"
    return table


def _groups_by_first(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Groups of equal keys numbered in order of their first occurrence: (group of each position, first position of
    each group). Equal to `np.unique(key, return_index=True, return_inverse=True)` renumbered by first index;
    through a table of the keys when their range is small (the usual case: name x device type x flags)."""
    lo, hi = int(key.min()), int(key.max())
    if hi - lo > 4 * len(key) + (1 << 20):
        _, first, inv = np.unique(key, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        grp_order = np.argsort(first, kind="stable")
        rank = np.empty_like(grp_order)
        rank[grp_order] = np.arange(len(grp_order))
        return rank[inv], first[grp_order]
    k = key - lo
    first_at = np.full(hi - lo + 1, len(k), np.int64)
    np.minimum.at(first_at, k, np.arange(len(k)))
    present = np.flatnonzero(first_at < len(k))
    first = np.sort(first_at[present])  # groups in order of their first position
    rank = np.empty(hi - lo + 1, np.int64)
    rank[k[first]] = np.arange(len(first))
    return rank[k], first


def _recorded_memory(profile: Profile) -> bool:
    """Whether torch would print memory columns: the trace says `profile_memory`, or it has memory records."""
    flag = profile.meta.trace_meta.get("profile_memory")
    if flag not in (None, 0, False, "0", "false", "False"):
        return True
    return profile.name_id(MEMORY_EVENT_NAME) >= 0 or profile.name_id(OUT_OF_MEMORY_EVENT_NAME) >= 0


def select_rows(table: OpTable, pattern: str | None) -> np.ndarray:
    """Rows whose name matches a regex (case-insensitive); all rows when pattern is empty."""
    if not pattern:
        return np.arange(len(table))
    rx = re.compile(pattern, re.IGNORECASE)
    return np.asarray([k for k, n in enumerate(table.name) if rx.search(n)], np.int64)
