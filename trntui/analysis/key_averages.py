"""torch's `key_averages()` rebuilt from a saved trace, with torch's semantics.

Follows torch/autograd/profiler.py (`_parse_kineto_results`) and profiler_util.py (`_populate_cpu_children`,
`_remove_dup_nodes`, `key_averages`, `_build_table`): a per-thread op tree by containment (partial overlaps are
not children), runtime rows re-threaded under the op that launched them, Self CPU = own time minus
children, device rows attached to their launching op, `ProfilerStep#N` merged, utility ops filtered out,
and the same percentage denominators. Times are µs floats like torch's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trntui.analysis.links import Links, build_links, thread_keys
from trntui.model import categories as C
from trntui.model.profile import NO_ID, EventKind, Profile

FILTERED_NAMES = frozenset(
    {
        "[memory]",
        "[OutOfMemory]",
        "profiler::_record_function_enter",
        "profiler::_record_function_enter_new",
        "profiler::_record_function_exit",
        "aten::is_leaf",
        "aten::output_nr",
        "aten::_version",
    }
)
"""Names torch drops before building its table (`_filter_name`)."""

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
)

SORT_KEYS = {
    "self_cpu_time_total": "self_cpu_time_total",
    "cpu_time_total": "cpu_time_total",
    "self_device_time_total": "self_device_time_total",
    "device_time_total": "device_time_total",
    "cpu_time": "cpu_time",
    "device_time": "device_time",
    "count": "count",
    "calls": "count",
    "name": "name",
}
"""Sort keys as torch names them; `cuda`/`xpu`/`privateuse1`/`mtia` spellings are rewritten to `device`."""


def normalize_sort_key(key: str) -> str:
    """Map torch's aliases (`self_cuda_time_total`, `self_privateuse1_time_total`, ...) to our column names."""
    k = key.strip().lower()
    k = re.sub(r"(cuda|xpu|privateuse1|mtia|neuron|hpu)", "device", k)
    if k not in SORT_KEYS:
        raise ValueError(f"unknown sort key {key!r}; use one of: {', '.join(sorted(SORT_KEYS))}")
    return SORT_KEYS[k]


def rewrite_name(name: str) -> str:
    return "ProfilerStep*" if name.startswith("ProfilerStep#") else name


@dataclass
class OpTable:
    """The key_averages rows as columns (µs floats like torch), plus totals and provenance.

    `rows_events[k]` lists the events merged into row k (for highlighting an op's instances).
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

    def __len__(self) -> int:
        return len(self.name)

    # derived columns -------------------------------------------------------------------------------
    @property
    def cpu_time(self) -> np.ndarray:
        return self.cpu_time_total / np.maximum(self.count, 1)

    @property
    def device_time(self) -> np.ndarray:
        return self.device_time_total / np.maximum(self.count, 1)

    @property
    def self_cpu_percent(self) -> np.ndarray:
        return _pct(self.self_cpu_time_total, self.sum_self_cpu)

    @property
    def cpu_total_percent(self) -> np.ndarray:
        return _pct(self.cpu_time_total, self.sum_self_cpu)

    @property
    def self_device_percent(self) -> np.ndarray:
        return _pct(self.self_device_time_total, self.sum_self_device)

    @property
    def has_device(self) -> bool:
        """torch shows device columns only if some row has device time."""
        return bool(self.backend) and bool(np.any(self.self_device_time_total > 0))

    def column(self, key: str) -> Any:
        key = normalize_sort_key(key) if key not in COLUMNS else key
        return getattr(self, key)

    def order(self, sort_by: str | None = None, descending: bool = True) -> np.ndarray:
        """Row order for a sort key (torch sorts descending); ties keep table order (stable)."""
        if sort_by is None:
            return np.arange(len(self))
        key = normalize_sort_key(sort_by)
        if key == "name":
            names = np.array(self.name, dtype=object)
            o = np.argsort(names, kind="stable")
            return o[::-1] if descending else o
        values = np.asarray(self.column(key), dtype=np.float64)
        o = np.argsort(-values if descending else values, kind="stable")
        return o

    def row(self, k: int) -> dict[str, Any]:
        """One row as a dict of torch-named fields."""
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
    cache_key = ("key_averages", group_by_input_shapes)
    if events is None and cache_key in profile.cache:
        return profile.cache[cache_key]
    links = build_links(profile)
    tree = build_cpu_tree(profile, links, events)
    table = _aggregate(profile, links, tree, group_by_input_shapes)
    if events is None:
        profile.cache[cache_key] = table
    return table


@dataclass
class CpuTree:
    """torch's CPU event forest: kept events, their parents, and the device rows attached to each op."""

    events: np.ndarray
    """Event indexes that are rows of the table (after name filtering and duplicate-node removal)."""
    parent: dict[int, int]
    children_cpu_total: dict[int, int]
    """Sum of children's durations (ns) per kept CPU event."""
    kernels_ns: dict[int, int]
    """Sum of attached device rows' durations (ns) per frontend op (after lifting in dup removal)."""
    device_total_ns: dict[int, int]
    """torch's device_time_total per CPU event: own kernels plus children's totals."""
    device_rows: np.ndarray
    """Device-typed events kept as their own rows."""


def build_cpu_tree(profile: Profile, links: Links, events: np.ndarray | None = None) -> CpuTree:
    n = len(profile)
    complete = profile.kind == EventKind.COMPLETE
    excluded = profile.cat_mask(C.CPU_TREE_EXCLUDED | C.DEVICE_TYPED)
    filtered_name_ids = [profile.name_id(x) for x in FILTERED_NAMES]
    filtered_name_ids = [x for x in filtered_name_ids if x >= 0]
    name_ok = ~np.isin(profile.name, filtered_name_ids) if filtered_name_ids else np.ones(n, bool)
    lane_is_marker = np.array([l.subsystem == "markers" for l in profile.lanes] or [False])
    not_marker = ~lane_is_marker[profile.lane] if n else np.ones(0, bool)
    cpu_mask = complete & ~excluded & name_ok & not_marker
    dev_mask = links.device & name_ok
    if events is not None:
        sel = np.zeros(n, bool)
        sel[events] = True
        cpu_mask &= sel
        dev_mask &= sel
    cpu = np.nonzero(cpu_mask)[0]

    # thread per event: runtime rows linked to an op (torch: linked CPU events) take the op's thread
    keys = thread_keys(profile).copy()
    rethread = links.runtime & (links.op_of >= 0) & (links.rule == 1)
    if rethread.any():
        idx = np.nonzero(rethread)[0]
        keys[idx] = keys[links.op_of[idx]]

    start = profile.start
    end = profile.end
    order = cpu[np.lexsort((-end[cpu], start[cpu], keys[cpu]))]
    ok = keys[order]
    s_list = start[order].tolist()
    e_list = end[order].tolist()
    k_list = ok.tolist()
    o_list = order.tolist()
    parent: dict[int, int] = {}
    children: dict[int, list[int]] = {}
    stack: list[int] = []  # positions
    cur_key = None
    for pos in range(len(o_list)):
        kk = k_list[pos]
        if kk != cur_key:
            stack = []
            cur_key = kk
        s = s_list[pos]
        e = e_list[pos]
        while stack:
            top = stack[-1]
            if s >= e_list[top] or e > e_list[top]:
                stack.pop()
            else:
                ev, par = o_list[pos], o_list[top]
                parent[ev] = par
                children.setdefault(par, []).append(ev)
                break
        stack.append(pos)

    # device rows attached to their frontend op (torch: kernels of `fe`)
    dur = end - start
    kernels: dict[int, int] = {}
    dv = np.nonzero(dev_mask & (links.op_of >= 0))[0]
    # torch attaches device rows only to frontend ops via External id (linked correlation)
    for ev, op in zip(dv.tolist(), links.op_of[dv].tolist()):
        kernels[op] = kernels.get(op, 0) + int(dur[ev])

    # _remove_dup_nodes: a child with its parent's name, when it is the only child, is merged into it
    names = profile.name
    rewritten = _rewritten_name_ids(profile)
    deleted: set[int] = set()
    changed = True
    while changed:
        changed = False
        for ev in o_list:
            if ev in deleted:
                continue
            par = parent.get(ev)
            if par is None or par in deleted:
                continue
            if rewritten[names[par]] == rewritten[names[ev]] and len(children.get(par, ())) == 1:
                kids = children.pop(ev, [])
                children[par] = kids
                for ch in kids:
                    parent[ch] = par
                if ev in kernels:
                    kernels[par] = kernels.pop(ev)
                else:
                    kernels.pop(par, None)
                deleted.add(ev)
                parent.pop(ev, None)
                changed = True

    kept = [ev for ev in o_list if ev not in deleted]
    children_total: dict[int, int] = {}
    for ev in kept:
        kids = children.get(ev)
        if kids:
            children_total[ev] = int(sum(int(dur[c]) for c in kids))
    # device_time_total bottom-up: process in reverse start order so children come first
    device_total: dict[int, int] = {}
    if kernels:
        for ev in sorted(kept, key=lambda x: (int(start[x]), -int(end[x])), reverse=True):
            total = kernels.get(ev, 0)
            kids = children.get(ev)
            if kids:
                total += sum(device_total.get(c, 0) for c in kids)
            if total:
                device_total[ev] = total
    return CpuTree(
        events=np.asarray(kept, np.int64),
        parent=parent,
        children_cpu_total=children_total,
        kernels_ns=kernels,
        device_total_ns=device_total,
        device_rows=np.nonzero(dev_mask)[0],
    )


def _rewritten_name_ids(profile: Profile) -> np.ndarray:
    """Name id → id of its torch table name (ProfilerStep#N → one shared id)."""
    ids = np.arange(len(profile.names), dtype=np.int64)
    step = [k for k, n in enumerate(profile.names) if n.startswith("ProfilerStep#")]
    if step:
        ids[step] = step[0]
    return ids


def _device_type_label(profile: Profile, cat: str) -> str:
    backend = profile.meta.backend or "CUDA"
    if cat in ("mtia_ccp_events", "mtia_insight", "mtia_counters"):
        return "MTIA" if profile.meta.backend in ("", "MTIA", "CUDA") else backend
    return backend


def input_shapes_of(profile: Profile, i: int) -> str:
    """torch prints `str(input_shapes)`: a list of lists, e.g. `[[4, 512], []]`."""
    dims = profile.args(i).get("Input Dims", profile.args(i).get("Input dims"))
    if dims is None:
        return "[]"
    return str(dims)


def _aggregate(profile: Profile, links: Links, tree: CpuTree, by_shapes: bool) -> OpTable:
    start, end = profile.start, profile.end
    rewritten = _rewritten_name_ids(profile)
    annotation_cats = {profile.cat_id(c) for c in C.USER_ANNOTATION} - {NO_ID}
    groups: dict[tuple, int] = {}
    name_col: list[str] = []
    dtype_col: list[str] = []
    ua_col: list[bool] = []
    shapes_col: list[str] = []
    count: list[int] = []
    self_cpu: list[int] = []
    cpu_total: list[int] = []
    self_dev: list[int] = []
    dev_total: list[int] = []
    members: list[list[int]] = []
    cat = profile.cat
    nm = profile.name
    has_device = bool(profile.meta.backend)

    def add(ev: int, dtype: str, cpu_t: int, self_c: int, dev_t: int, self_d: int) -> None:
        nid = int(rewritten[nm[ev]])
        ua = int(cat[ev]) in annotation_cats
        shapes = input_shapes_of(profile, ev) if by_shapes else ""
        key = (nid, dtype, ua, shapes)
        k = groups.get(key)
        if k is None:
            k = groups[key] = len(name_col)
            name_col.append(rewrite_name(profile.names[nid]))
            dtype_col.append(dtype)
            ua_col.append(ua)
            shapes_col.append(shapes)
            count.append(0)
            self_cpu.append(0)
            cpu_total.append(0)
            self_dev.append(0)
            dev_total.append(0)
            members.append([])
        count[k] += 1
        cpu_total[k] += cpu_t
        self_cpu[k] += self_c
        dev_total[k] += dev_t
        self_dev[k] += self_d
        members[k].append(ev)

    dur = (end - start).tolist()
    child_total = tree.children_cpu_total
    dtot = tree.device_total_ns
    for ev in tree.events.tolist():
        d = dur[ev]
        dt = dtot.get(ev, 0) if has_device else 0
        own = tree.kernels_ns.get(ev, 0) if has_device else 0
        add(ev, "CPU", d, d - child_total.get(ev, 0), dt, own)
    sum_self_device = 0
    for ev in tree.device_rows.tolist():
        d = dur[ev]
        dtype = _device_type_label(profile, profile.cats[int(cat[ev])])
        add(ev, dtype, 0, 0, d if has_device else 0, d if has_device else 0)
        if has_device and int(cat[ev]) not in annotation_cats:
            sum_self_device += d
    us = lambda v: np.asarray(v, dtype=np.float64) / 1000.0  # noqa: E731
    table = OpTable(
        name=name_col,
        device_type=dtype_col,
        is_user_annotation=np.asarray(ua_col, bool),
        input_shapes=shapes_col,
        count=np.asarray(count, np.int64),
        self_cpu_time_total=us(self_cpu),
        cpu_time_total=us(cpu_total),
        self_device_time_total=us(self_dev),
        device_time_total=us(dev_total),
        backend=profile.meta.backend,
        rows_events=[np.asarray(m, np.int64) for m in members],
        sum_self_cpu=float(sum(self_cpu)) / 1000.0,
        sum_self_device=sum_self_device / 1000.0,
        device_time_source=profile.meta.device_time_source
        or ("trace.json device rows" if sum_self_device else ""),
        link_counts=dict(links.counts),
    )
    return table


def select_rows(table: OpTable, pattern: str | None) -> np.ndarray:
    """Rows whose name matches a regex (case-insensitive); all rows when pattern is empty."""
    if not pattern:
        return np.arange(len(table))
    rx = re.compile(pattern, re.IGNORECASE)
    return np.asarray([k for k, n in enumerate(table.name) if rx.search(n)], np.int64)
