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
from trntui.model.profile import NO_ID, EventKind, Profile, chain_lengths

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
    """Event indexes that are rows of the table (after name filtering and duplicate-node removal), in
    (thread, start, -end) order; the arrays below are aligned with it."""
    parent: np.ndarray
    """Parent event of each kept event (-1 at a root)."""
    children_cpu_total: np.ndarray
    """Sum of children's durations (ns) per kept CPU event."""
    kernels_ns: np.ndarray
    """Sum of attached device rows' durations (ns) per kept op (after lifting in dup removal)."""
    device_total_ns: np.ndarray
    """torch's device_time_total per kept CPU event: own kernels plus children's totals."""
    device_rows: np.ndarray
    """Device-typed events kept as their own rows."""
    system_device: bool = False
    """`kernels_ns` came from a Neuron system trace (nc_exec_running attributed through links), not from
    trace.json device rows: then the Self-device denominator is the sum over ops (torch's legacy path)."""


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
    order = profile.by_key_then_time(keys, cpu)
    m = len(order)
    s_pos = start[order]
    e_pos = end[order]
    dur_pos = e_pos - s_pos
    ppos = _stack_parents(keys[order], s_pos, e_pos)

    # device rows attached to their frontend op (torch: kernels of `fe`, linked via External id / correlation)
    dur = end - start
    dv = np.nonzero(dev_mask & (links.op_of >= 0))[0]
    kern_ev = np.zeros(n, np.int64)
    has_kern_ev = np.zeros(n, bool)
    if len(dv):
        np.add.at(kern_ev, links.op_of[dv], dur[dv])
        has_kern_ev[links.op_of[dv]] = True
    system_device = False
    if not len(dv) and not dev_mask.any() and profile.cat_id("neuron_hw") >= 0:
        # Neuron: trace.json has no device rows; attribute nc_exec_running (merged per logical execution)
        from trntui.analysis.neuron import system_device_time

        attributed = system_device_time(profile, links)
        if attributed:
            ops_ = np.fromiter(attributed.keys(), np.int64, count=len(attributed))
            kern_ev[ops_] = np.fromiter(attributed.values(), np.int64, count=len(attributed))
            has_kern_ev[ops_] = True
            system_device = True

    # _remove_dup_nodes: a child with its parent's name, when it is the only child, is merged into it.
    # Evaluated on the original tree (equivalent to torch's repeated passes: a chain of same-name only
    # children collapses into its top node, which takes the kernels of the deepest merged node).
    nm = _rewritten_name_ids(profile)[profile.name[order]] if m else np.empty(0, np.int64)
    has_par = ppos >= 0
    pp = np.maximum(ppos, 0)
    nkids = np.bincount(ppos[has_par], minlength=m) if m else np.zeros(0, np.int64)
    deleted = has_par & (nkids[pp] == 1) & (nm[pp] == nm) if m else np.zeros(0, bool)
    top = np.arange(m)
    top[deleted] = ppos[deleted]
    while m and deleted[top].any():
        top = top[top]
    kern_pos = kern_ev[order]
    has_kern_pos = has_kern_ev[order]
    if deleted.any():
        deepest = np.full(m, -1, np.int64)
        dpos = np.nonzero(deleted)[0]
        np.maximum.at(deepest, top[dpos], dpos)
        tops = np.nonzero(deepest >= 0)[0]
        d = deepest[tops]
        kern_pos = kern_pos.copy()
        has_kern_pos = has_kern_pos.copy()
        kern_pos[tops] = np.where(has_kern_pos[d], kern_pos[d], 0)
        has_kern_pos[tops] = has_kern_pos[d]
    kept = np.nonzero(~deleted)[0]
    final_parent = np.where(has_par, top[pp], -1)  # positions; -1 at roots
    fp = final_parent[kept]
    children_total = np.zeros(m, np.int64)
    linked = fp >= 0
    np.add.at(children_total, fp[linked], dur_pos[kept[linked]])

    # device_time_total bottom-up over the final tree: own kernels plus the children's totals
    kern_kept = np.where(has_kern_pos, kern_pos, 0)
    kern_kept[deleted] = 0
    device_total = kern_kept.copy()
    if has_kern_ev.any() and len(kept):
        # depth in the final tree by pointer doubling, then children before parents, one level at a time
        ptr = final_parent.copy()
        ptr[deleted] = -1
        depth = chain_lengths(ptr)
        nonroot = kept[depth[kept] > 0]
        by_level = nonroot[np.argsort(-depth[nonroot], kind="stable")]
        levels = depth[by_level]
        cuts = np.nonzero(np.diff(levels))[0] + 1
        for at in np.split(by_level, cuts) if len(by_level) else []:
            np.add.at(device_total, final_parent[at], device_total[at])
    return CpuTree(
        events=order[kept],
        parent=np.where(fp >= 0, order[np.maximum(fp, 0)], NO_ID),
        children_cpu_total=children_total[kept],
        kernels_ns=kern_kept[kept],
        device_total_ns=device_total[kept],
        device_rows=np.nonzero(dev_mask)[0],
        system_device=system_device,
    )


def _stack_parents(keys: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """torch's containment stack, vectorised: for events sorted by (thread, start, -end), the position of the
    parent of each one (-1 at a root).

    With the stack rule "pop the top while it ended at or before our start, or ends before we end", the
    parent is the nearest earlier event of the same thread with end >= our end and end > our start: an
    event skipped by that rule was popped by a nearer one that also qualifies. Found by pointer jumping:
    from the previous event, follow current estimates (every event jumped over ends too early for us too).
    """
    m = len(s)
    cand = np.arange(-1, m - 1, dtype=np.int64)
    if m:
        cand[1:][keys[1:] != keys[:-1]] = -1
    thr = e + (e == s)  # a zero-length event needs a parent that ends strictly after it
    act = np.nonzero(cand >= 0)[0]
    while len(act):
        c = cand[act]
        act = act[e[c] < thr[act]]
        if not len(act):
            break
        nxt = cand[cand[act]]
        cand[act] = nxt
        act = act[nxt >= 0]
    return cand


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
    """Group rows by (table name, device type, is user annotation[, input shapes]), vectorised.

    Groups are numbered by first occurrence (CPU events in tree order, then device rows), like torch's dict.
    """
    start, end = profile.start, profile.end
    rewritten = _rewritten_name_ids(profile)
    annotation_cats = {profile.cat_id(c) for c in C.USER_ANNOTATION} - {NO_ID}
    has_device = bool(profile.meta.backend)
    cpu_ev = np.asarray(tree.events, np.int64)
    dev_ev = np.asarray(tree.device_rows, np.int64)
    evs = np.concatenate([cpu_ev, dev_ev])
    nc, nd = len(cpu_ev), len(dev_ev)
    dur = end[evs] - start[evs]
    zeros = np.zeros(nd, np.int64)
    cpu_t = np.concatenate([dur[:nc], zeros])
    self_c = np.concatenate([dur[:nc] - tree.children_cpu_total, zeros])
    if has_device:
        dev_t = np.concatenate([tree.device_total_ns, dur[nc:]])
        self_d = np.concatenate([tree.kernels_ns, dur[nc:]])
    else:
        dev_t = np.zeros(nc + nd, np.int64)
        self_d = dev_t
    # device type: 0 = CPU, else 1 + index of the label of the event's category
    labels = ["CPU"]
    label_of_cat = np.zeros(max(len(profile.cats), 1), np.int64)
    for c, cat_name in enumerate(profile.cats):
        lab = _device_type_label(profile, cat_name)
        if lab not in labels:
            labels.append(lab)
        label_of_cat[c] = labels.index(lab)
    cat = profile.cat[evs].astype(np.int64)
    dcode = np.concatenate([np.zeros(nc, np.int64), label_of_cat[cat[nc:]]])
    ua_of_cat = np.zeros(max(len(profile.cats), 1), bool)
    ua_of_cat[list(annotation_cats)] = True
    ua = ua_of_cat[cat]
    nid = rewritten[profile.name[evs]]
    key = (nid * len(labels) + dcode) * 2 + ua
    shape_names: list[str] = []
    if by_shapes:
        shape_ids: dict[str, int] = {}
        sid = np.fromiter(
            (shape_ids.setdefault(input_shapes_of(profile, ev), len(shape_ids)) for ev in evs.tolist()),
            np.int64,
            count=len(evs),
        )
        shape_names = list(shape_ids)
        key = key * max(len(shape_names), 1) + sid
    if len(evs):
        _, first, inv = np.unique(key, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        grp_order = np.argsort(first, kind="stable")
        rank = np.empty_like(grp_order)
        rank[grp_order] = np.arange(len(grp_order))
        g = rank[inv]
        firsts = first[grp_order]
    else:
        g = np.zeros(0, np.int64)
        firsts = np.zeros(0, np.int64)
    ng = len(firsts)

    def total(v: np.ndarray) -> np.ndarray:
        out = np.zeros(ng, np.int64)
        np.add.at(out, g, v)
        return out

    count = np.bincount(g, minlength=ng).astype(np.int64)
    members = np.argsort(g, kind="stable")
    bounds = np.cumsum(count)[:-1] if ng else []
    rows_events = np.split(evs[members], bounds) if ng else []
    first_ev = evs[firsts]
    name_col = [rewrite_name(profile.names[k]) for k in rewritten[profile.name[first_ev]].tolist()]
    dtype_col = [labels[k] for k in dcode[firsts].tolist()]
    shapes_col = [shape_names[k] for k in (sid[firsts].tolist())] if by_shapes else [""] * ng
    self_cpu = total(self_c)
    dev_rows_self = dur[nc:]
    sum_self_device = 0
    if has_device and nd:
        sum_self_device = int(dev_rows_self[~ua[nc:]].sum())
    if has_device and tree.system_device:
        sum_self_device += int(np.asarray(tree.kernels_ns, np.int64).sum())
    us = lambda v: np.asarray(v, dtype=np.float64) / 1000.0  # noqa: E731
    table = OpTable(
        name=name_col,
        device_type=dtype_col,
        is_user_annotation=ua[firsts].astype(bool),
        input_shapes=shapes_col,
        count=count,
        self_cpu_time_total=us(self_cpu),
        cpu_time_total=us(total(cpu_t)),
        self_device_time_total=us(total(self_d)),
        device_time_total=us(total(dev_t)),
        backend=profile.meta.backend,
        rows_events=list(rows_events),
        sum_self_cpu=float(int(self_cpu.sum())) / 1000.0,
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
