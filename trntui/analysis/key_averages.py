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
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trntui.analysis.demangle import demangle
from trntui.analysis.links import Links, build_links, thread_codes
from trntui.analysis.sort_keys import normalize_sort_key
from trntui.model import categories as C
from trntui.model.arrays import distinct, small_uint
from trntui.model.memory_events import MEMORY_EVENT_NAME, OUT_OF_MEMORY_EVENT_NAME
from trntui.model.profile import NO_ID, EventKind, Profile, chain_lengths

FILTERED_NAMES = frozenset(
    {
        MEMORY_EVENT_NAME,
        OUT_OF_MEMORY_EVENT_NAME,
        "profiler::_record_function_enter",
        "profiler::_record_function_enter_new",
        "profiler::_record_function_exit",
        "aten::is_leaf",
        "aten::output_nr",
        "aten::_version",
    }
)
"""Names torch drops before building its table (`_filter_name`); torch then adds back one `[memory]` row per
memory record no CPU op contains, and one `[OutOfMemory]` row per failed allocation."""

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



def rewrite_name(name: str) -> str:
    """torch's `_rewrite_name(name, with_wildcard=True)`: demangled, `ProfilerStep#N` → `ProfilerStep*`.
    (`ProfilerStep#N` itself never demangles: `__cxa_demangle` reads `Pro` as a type and fails on the rest, so
    it is not asked, once per step.)"""
    if name.startswith("ProfilerStep#"):
        return "ProfilerStep*"
    name = demangle(name)
    return "ProfilerStep*" if name.startswith("ProfilerStep#") else name


def parse_input_shapes(dims: Any, types: Any = None) -> Any:
    """torch's in-process `input_shapes` from the trace's `Input Dims` (and `Input type`).

    The exporter writes a TensorList argument's shapes as a nested list (`[[1, 4], [2, 4]]`, type `TensorList`);
    torch's `input_shapes` (`shapesAndDtypes` in profiler_kineto.cpp) holds `[]` for it, like for any argument
    that is not a tensor. Older traces without `Input type` are recognised by the nesting.
    """
    if not isinstance(dims, list):
        return dims
    out = []
    for k, d in enumerate(dims):
        t = types[k] if isinstance(types, list) and k < len(types) else None
        if t == "TensorList" or (isinstance(d, list) and any(isinstance(x, list) for x in d)):
            out.append([])
        else:
            out.append(d)
    return out


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


@dataclass
class CpuTree:
    """torch's CPU event forest: the CPU events, their times as torch computes them, the device rows attached to
    each op, and the memory records. Arrays are per CPU event in (thread, start, -end) order, merged nodes
    included (`deleted` says which: gathering every array through the kept nodes cost more than the table's
    aggregation skipping them)."""

    events: np.ndarray
    """The CPU events (after name filtering) in (thread, start, -end) order; the arrays below are aligned with it."""
    deleted: np.ndarray
    """Positions (ascending) of the nodes `_remove_dup_nodes` merges into their parent: not rows of the table."""
    cpu_total_us: np.ndarray
    """torch's `cpu_time_total` per event: end_us - start_us, both relative to the trace start."""
    self_cpu_us: np.ndarray
    """torch's `self_cpu_time_total`: `cpu_time_total - sum(child.cpu_time_total for child in cpu_children)`."""
    device_total_us: np.ndarray
    """torch's device_time_total per event: own kernels plus children's totals."""
    self_device_us: np.ndarray
    """torch's self_device_time_total: device_time_total minus the children's."""
    device_rows: np.ndarray
    """Device-typed events kept as their own rows."""
    cpu_memory: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Per event: bytes of the CPU memory records inside its interval (any thread), torch's
    `cpu_memory_usage`."""
    device_memory: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    self_cpu_memory: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    self_device_memory: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    memory_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """`[memory]` records that no CPU event contains: torch lists each as a zero-length `[memory]` event."""
    memory_rows_cpu: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    memory_rows_device: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    oom_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """`[OutOfMemory]` records: torch lists every one as a zero-length event (with no bytes)."""
    memory_attached: bool = False
    """Memory records were attributed (else every memory column is zeros)."""
    system_device: bool = False
    """Device time came from a Neuron system trace (nc_exec_running attributed through links), not from
    trace.json device rows: then the Self-device denominator is the sum over ops (torch's legacy path)."""


def trace_start_ns(profile: Profile) -> int:
    """torch's `trace_start_ns()`: the start of the `PyTorch Profiler (N)` span (the `Iteration Start` instant
    has the same time); the first event where a trace has neither. Event times in torch's tables are µs floats
    relative to it, so float sums agree with torch's only from this origin."""
    cached = profile.cache.get("trace_start_ns")
    if cached is None:
        cached = int(profile.start.min()) if len(profile) else 0
        trace_cat = profile.cat_id("Trace")
        if trace_cat >= 0:
            idx = np.nonzero(profile.cat == trace_cat)[0]
            spans = [i for i in idx.tolist() if profile.name_of(i).startswith("PyTorch Profiler")]
            if spans:
                cached = int(profile.start[spans[0]])
        else:
            k = profile.name_id("Iteration Start: PyTorch Profiler")
            if k >= 0:
                cached = int(profile.start[np.argmax(profile.name == k)])
        profile.cache["trace_start_ns"] = cached
    return cached


def _us(ns: np.ndarray, origin: int) -> np.ndarray:
    """torch's `rel_ns / 1000` for int64 ns (exact conversion below 2**53 ns, then one correctly rounded divide),
    in one new array (the int64 difference is converted as it is written)."""
    out = np.empty(len(ns), np.float64)
    np.subtract(np.asarray(ns, np.int64), origin, out=out)
    out /= 1000.0
    return out


def _us_span(start_ns: np.ndarray, end_ns: np.ndarray, origin: int) -> np.ndarray:
    """torch's `end_us - start_us` (`_us` of each end), in place: two event-long arrays, not seven."""
    out = _us(end_ns, origin)
    out -= _us(start_ns, origin)
    return out


def _ordered_sum(out: np.ndarray, idx: np.ndarray, values: np.ndarray) -> None:
    """out[idx[k]] += values[k] for k in order (ufunc.at is unbuffered and sequential, so float sums equal
    Python's left-to-right `sum` over the same order)."""
    if len(idx):
        np.add.at(out, idx, values)


def build_cpu_tree(profile: Profile, links: Links, events: np.ndarray | None = None) -> CpuTree:
    n = len(profile)
    complete = profile.kind == EventKind.COMPLETE
    excluded = profile.cat_mask(C.CPU_TREE_EXCLUDED | C.DEVICE_TYPED)
    name_ok = ~profile.name_mask(FILTERED_NAMES)
    lane_is_marker = np.array([l.subsystem == "markers" for l in profile.lanes] or [False])
    cpu_mask = complete & ~excluded & name_ok
    if lane_is_marker.any():
        cpu_mask &= ~lane_is_marker[profile.lane]
    dev_mask = links.device & name_ok
    sel = None
    if events is not None:
        sel = np.zeros(n, bool)
        sel[events] = True
        cpu_mask &= sel
        dev_mask &= sel
    cpu = np.nonzero(cpu_mask)[0]
    del complete, excluded, name_ok, cpu_mask  # (big temporaries are dropped as soon as they are used up)

    # thread per event: runtime rows linked to an op (torch: linked CPU events) take the op's thread
    _, codes = thread_codes(profile)  # thread keys as small codes, in the keys' order
    rethread = links.runtime & (links.op_of >= 0) & (links.rule == 1)
    launcher = links.op_of
    if profile.meta.trace_meta.get("neuron_framework_source") == "export":
        # no trace.json: Explorer's driver copies carry no External id, but their flow links them to their op
        # (the link trace.json's External id would be): re-threaded alike, so Self CPU is the same either way
        from trntui.analysis.links import launching_ops

        launcher = np.where(launcher >= 0, launcher, launching_ops(profile))
        rethread = links.runtime & (launcher >= 0) & ((links.rule == 1) | (links.op_of < 0))
    if rethread.any():
        codes = codes.copy()
        idx = np.nonzero(rethread)[0]
        codes[idx] = codes[launcher[idx]]

    start = profile.start
    end = profile.end
    origin = trace_start_ns(profile)
    if profile.time_sorted():  # by (thread, start, longest first): one stable (radix) sort of the codes
        cpu_codes = codes[cpu]
        order = cpu
        if len(cpu) > 1 and not bool(np.all(cpu_codes[1:] >= cpu_codes[:-1])):  # (one thread: no sort)
            order = cpu[np.argsort(cpu_codes, kind="stable")]
        del cpu_codes
    else:
        order = profile.by_key_then_time(codes.astype(np.int64), cpu)
    m = len(order)
    s_pos = start[order]
    e_pos = end[order]
    ppos = _stack_parents(codes[order], s_pos, e_pos)
    del codes
    total_us = _us_span(s_pos, e_pos, origin)
    del s_pos, e_pos

    # device rows attached to their frontend op (torch: kernels of `fe`, linked via External id / correlation)
    dv = np.nonzero(dev_mask & (links.op_of >= 0))[0]
    kern_us_ev = has_kern_ev = kern_ns_ev = None
    if len(dv):
        kern_us_ev = np.zeros(n, np.float64)
        has_kern_ev = np.zeros(n, bool)
        _ordered_sum(kern_us_ev, links.op_of[dv], _us_span(start[dv], end[dv], origin))
        has_kern_ev[links.op_of[dv]] = True
    system_device = False
    if not len(dv) and not dev_mask.any():
        # no device rows: the trace format may attribute device time (Neuron: nc_exec_running, analysis/neuron.py)
        for hook in profile.hooks.device_time:
            attributed = hook(profile, links)
            if attributed:
                kern_ns_ev = np.zeros(n, np.int64)  # (ns: merged nodes' times add up exactly, below)
                has_kern_ev = np.zeros(n, bool)
                ops_ = np.fromiter(attributed.keys(), np.int64, count=len(attributed))
                kern_ns_ev[ops_] = np.fromiter(attributed.values(), np.int64, count=len(attributed))
                has_kern_ev[ops_] = True
                system_device = True
                break

    # _remove_dup_nodes: a child with its parent's name, when it is the only child, is merged into it.
    # Evaluated on the original tree (equivalent to torch's repeated passes: a chain of same-name only
    # children collapses into its top node, which takes the kernels of the deepest merged node).
    has_par = ppos >= 0
    pp = np.maximum(ppos, 0)
    nkids = np.bincount(ppos[has_par], minlength=m) if m else np.zeros(0, np.int64)
    only = np.flatnonzero(has_par & (nkids[pp] == 1))  # only children: deleted when they print as their parent
    del nkids
    deleted = np.zeros(m, bool)
    if len(only):
        child_names = profile.name[order[only]]
        parent_names = profile.name[order[ppos[only]]]
        table_id = _rewritten_name_ids(profile, names=np.concatenate([child_names, parent_names]))
        deleted[only[table_id[child_names] == table_id[parent_names]]] = True
        del child_names, parent_names, table_id
    del only
    # each deleted node's nearest kept ancestor (`heir`, aligned with `dpos`): where its children and kernels go
    dpos = np.flatnonzero(deleted)
    heir = ppos[dpos]
    while len(dpos):
        chained = np.flatnonzero(deleted[heir])  # (a chain of deleted nodes: one more step up)
        if not len(chained):
            break
        heir[chained] = ppos[heir[chained]]
    has_kern = has_kern_ev is not None
    if has_kern:  # (gathers: new arrays, changed in place below)
        has_kern_pos = has_kern_ev[order]
        if system_device:
            kern_pos = kern_ns_ev[order]
            if len(dpos):
                # Neuron system-trace time is trntui's attribution, not a torch kernel (torch never sees it): torch's
                # lift (the parent takes the deleted child's kernels) would drop the op's time when its dispatch row
                # carries the op's name; the merged nodes are one call, so their times add up
                np.add.at(kern_pos, heir, np.where(has_kern_pos[dpos], kern_pos[dpos], 0))
                has_kern_pos[heir[has_kern_pos[dpos]]] = True
            kern_us_pos = kern_pos / 1000.0
        else:
            kern_us_pos = kern_us_ev[order]
            if len(dpos):
                tops = distinct(heir)  # (few: one per merged chain)
                deepest = np.full(len(tops), -1, np.int64)
                np.maximum.at(deepest, np.searchsorted(tops, heir), dpos)
                kern_us_pos[tops] = np.where(has_kern_pos[deepest], kern_us_pos[deepest], 0.0)
                has_kern_pos[tops] = has_kern_pos[deepest]
    # the final tree: a node whose parent was deleted hangs from that parent's nearest kept ancestor; deleted
    # nodes hang from nothing (their time is their heir's)
    final_parent = ppos  # positions; -1 at roots
    if len(dpos):
        final_parent = ppos.copy()
        moved = np.flatnonzero(has_par & deleted[pp])
        final_parent[moved] = heir[np.searchsorted(dpos, ppos[moved])]
        final_parent[dpos] = -1
    del has_par, pp, ppos
    linked = final_parent >= 0
    # Self CPU: the children's totals summed in child (tree) order, then subtracted, as torch does
    children_us = np.zeros(m, np.float64)
    _ordered_sum(children_us, final_parent[linked], total_us[linked])
    self_us = np.subtract(total_us, children_us, out=children_us)  # (in place: one array fewer)
    del children_us, linked

    # device_time_total bottom-up over the final tree: own kernels plus the children's totals (summed in order)
    if has_kern:
        own = has_kern_pos & ~deleted if len(dpos) else has_kern_pos
        kern_us_kept = np.where(own, kern_us_pos, 0.0)
        device_total = kern_us_kept.copy()
        child_dev = np.zeros(m, np.float64)
        if has_kern_ev.any() and m:
            # only ops with device time and their ancestors have any (the others' totals are 0.0, and adding 0.0
            # changes no float sum); their depth in the final tree by pointer doubling, then children before
            # parents, one level at a time (each parent's children summed in tree order, as torch does)
            active = _with_ancestors(own, final_parent)
            slot = np.full(m, -1, np.int64)
            slot[active] = np.arange(len(active))
            parent_slot = slot[np.maximum(final_parent[active], 0)]
            parent_slot[final_parent[active] < 0] = -1
            depth = chain_lengths(parent_slot)
            del slot, parent_slot
            top_depth = int(depth.max())
            deepest_first = (top_depth - depth).astype(small_uint(top_depth))  # a stable argsort: radix sort
            level_order = np.argsort(deepest_first, kind="stable")
            by_level = active[level_order]
            cuts = np.flatnonzero(np.diff(depth[level_order])) + 1
            for at in np.split(by_level, cuts) if len(by_level) else []:
                device_total[at] = kern_us_kept[at] + child_dev[at]
                up = at[final_parent[at] >= 0]
                _ordered_sum(child_dev, final_parent[up], device_total[up])
        self_device = np.subtract(device_total, child_dev, out=child_dev)
    else:  # no device time anywhere
        device_total = np.zeros(m, np.float64)
        self_device = np.zeros(m, np.float64)

    tree = CpuTree(
        events=order,
        deleted=dpos,
        cpu_total_us=total_us,
        self_cpu_us=self_us,
        device_total_us=device_total,
        self_device_us=self_device,
        device_rows=np.nonzero(dev_mask)[0],
        system_device=system_device,
    )
    _attach_memory(profile, tree, cpu, order, final_parent, sel)
    return tree


def _attach_memory(
    profile: Profile,
    tree: CpuTree,
    cpu: np.ndarray,
    order: np.ndarray,
    final_parent: np.ndarray,
    sel: np.ndarray | None,
) -> None:
    """torch's memory attribution (`_parse_kineto_results`): every CPU event gets the bytes of the memory records
    whose time lies in [start, end] (both ends, any thread); Self = own minus the children's (final tree); records
    no CPU event contains become `[memory]` rows, and every `[OutOfMemory]` record a row of its own."""
    m = len(order)
    tree.cpu_memory = np.zeros(m, np.int64)
    tree.device_memory = np.zeros(m, np.int64)
    tree.self_cpu_memory = np.zeros(m, np.int64)
    tree.self_device_memory = np.zeros(m, np.int64)
    if profile.name_id(MEMORY_EVENT_NAME) < 0 and profile.name_id(OUT_OF_MEMORY_EVENT_NAME) < 0:
        return
    tree.memory_attached = True
    mem = profile.memory_events()
    if sel is not None:
        mem = mem.take(sel[mem.event])
    oom = mem.oom
    tree.oom_rows = mem.event[oom]
    rec = mem.take(~oom)
    r = len(rec)
    if not r:
        return
    cum_cpu = np.zeros(r + 1, np.int64)
    cum_dev = np.zeros(r + 1, np.int64)
    np.cumsum(rec.cpu_bytes, out=cum_cpu[1:])
    np.cumsum(rec.device_bytes, out=cum_dev[1:])
    # every CPU event torch parses (before duplicate removal) claims the records in its interval
    lo = np.searchsorted(rec.ts, profile.start[cpu], side="left")
    hi = np.searchsorted(rec.ts, profile.end[cpu], side="right")
    cover = np.zeros(r + 1, np.int64)
    np.add.at(cover, lo, 1)
    np.add.at(cover, hi, -1)
    claimed = np.cumsum(cover[:r]) > 0
    tree.memory_rows = rec.event[~claimed]
    tree.memory_rows_cpu = rec.cpu_bytes[~claimed]
    tree.memory_rows_device = rec.device_bytes[~claimed]
    if not m:
        return
    pos_of = np.full(len(profile), -1, np.int64)
    pos_of[order] = np.arange(m)
    at = pos_of[cpu]
    own_cpu = np.zeros(m, np.int64)
    own_dev = np.zeros(m, np.int64)
    own_cpu[at] = cum_cpu[hi] - cum_cpu[lo]
    own_dev[at] = cum_dev[hi] - cum_dev[lo]
    linked = final_parent >= 0  # (kept nodes with a parent: deleted ones hang from nothing)
    child_cpu = np.zeros(m, np.int64)
    child_dev = np.zeros(m, np.int64)
    np.add.at(child_cpu, final_parent[linked], own_cpu[linked])
    np.add.at(child_dev, final_parent[linked], own_dev[linked])
    tree.cpu_memory = own_cpu
    tree.device_memory = own_dev
    tree.self_cpu_memory = own_cpu - child_cpu
    tree.self_device_memory = own_dev - child_dev


def _with_ancestors(mask: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Sorted positions of the marked nodes and of all their ancestors (`parent`: -1 at roots)."""
    marked = mask.copy()
    frontier = np.flatnonzero(mask)
    seen_at = np.empty(len(parent), np.int64)  # (which entry of `up` wrote a node last: one entry per node)
    while len(frontier):
        up = parent[frontier]
        up = up[up >= 0]
        up = up[~marked[up]]
        marked[up] = True
        at = np.arange(len(up))
        seen_at[up] = at
        frontier = up[seen_at[up] == at]  # each new node once (siblings share parents), no sort
    return np.flatnonzero(marked)


def _stack_parents(keys: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """torch's containment stack, vectorised: for events sorted by (thread, start, -end), the position of the
    parent of each one (-1 at a root).

    With the stack rule "pop the top while it ended at or before our start, or ends before we end", the
    parent is the nearest earlier event of the same thread with end >= our end and end > our start: an
    event skipped by that rule was popped by a nearer one that also qualifies. Found by pointer jumping:
    from the previous event, follow current estimates (every event jumped over ends too early for us too).
    """
    m = len(s)
    cand = np.full(m, -1, np.int64)
    if m < 2:
        return cand
    firsts = np.flatnonzero(keys[1:] != keys[:-1]) + 1  # each thread's first event (but the first thread's)
    thr = e + (e == s)  # a zero-length event needs a parent that ends strictly after it
    # roots at once: no earlier event of the thread ends late enough (the running max end, per thread)
    if len(firsts) <= 256:
        run = np.empty_like(e)
        for a, b in zip([0, *firsts.tolist()], [*firsts.tolist(), m]):
            np.maximum.accumulate(e[a:b], out=run[a:b])
        late = run[:-1] >= thr[1:]
        del run
    else:  # many threads: one running max of (thread, end) packed in an int64, where that fits
        lo = int(e.min())
        span = int(e.max()) - lo + 1
        if span * (len(firsts) + 2) < 1 << 62:
            threads = np.zeros(m, np.int64)
            threads[firsts] = 1
            np.cumsum(threads, out=threads)
            run = np.maximum.accumulate(threads * span + (e - lo))
            late = run[:-1] - threads[1:] * span + lo >= thr[1:]
            del run, threads
        else:
            late = np.ones(m - 1, bool)
    late[firsts - 1] = False  # (a thread's first event is a root)
    act = np.flatnonzero(late) + 1  # the events that may have a parent, each with its current estimate `c`
    del late
    c = act - 1
    cand[act] = c
    t_act = thr[act]
    del thr
    while len(act):
        ok = e[c] < t_act  # the estimate ends too early: jump to its own estimate
        act, c, t_act = act[ok], c[ok], t_act[ok]
        if not len(act):
            break
        c = cand[c]
        cand[act] = c
        live = c >= 0
        if not live.all():
            act, c, t_act = act[live], c[live], t_act[live]
    return cand


def _rewritten_name_ids(profile: Profile, events: np.ndarray | None = None, *, names: np.ndarray | None = None) -> np.ndarray:
    """Name id → id of its torch table name (`rewrite_name`: demangled, ProfilerStep#N → ProfilerStep*): names
    that print the same share the id of the first of them. Only the names of `events` (default: all) are
    rewritten; other ids map to themselves. `names`: the name ids of the events instead (`profile.name[events]`,
    when the caller has them)."""
    ids = np.arange(len(profile.names), dtype=np.int64)
    if names is None and events is not None:
        names = profile.name[events]
    if names is None:
        used = ids
    else:
        used = np.flatnonzero(np.bincount(names, minlength=len(ids))) if len(names) else ids[:0]
    names = table_names(profile, used)
    first: dict[str, int] = {}
    for k in used.tolist():
        ids[k] = first.setdefault(names[k], k)
    return ids


def table_names(profile: Profile, ids: np.ndarray) -> dict[int, str]:
    """Torch table names of the name ids `ids` (cached per profile: demangling is a C++ call per name)."""
    cache: dict[int, str] = profile.cache.setdefault("table_names", {})
    for k in ids.tolist():
        if k not in cache:
            cache[k] = rewrite_name(profile.names[k])
    return cache


def _device_type_label(profile: Profile, cat: str) -> str:
    backend = profile.meta.backend or "CUDA"
    if cat in ("mtia_ccp_events", "mtia_insight", "mtia_counters"):
        return "MTIA" if profile.meta.backend in ("", "MTIA", "CUDA") else backend
    return backend


def input_shapes_of(profile: Profile, i: int) -> str:
    """torch prints `str(input_shapes)`: a list of lists, e.g. `[[4, 512], []]` (a TensorList argument is `[]`)."""
    args = profile.args(i)
    dims = args.get("Input Dims", args.get("Input dims"))
    if dims is None:
        return "[]"
    return str(parse_input_shapes(dims, args.get("Input type")))


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
            (shape_ids.setdefault(input_shapes_of(profile, ev), len(shape_ids)) for ev in evs[: nc + nd].tolist()),
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
