"""torch's CPU event forest, vectorised: the filtered CPU events per thread, their containment parents
(`_stack_parents`), `_remove_dup_nodes`'s merges, runtime rows re-threaded under their op, Self CPU and device
time summed bottom-up in torch's order, and the memory records attributed as `_parse_kineto_results` does."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from trntui.analysis.key_averages.names import _rewritten_name_ids
from trntui.analysis.links import Links, thread_codes
from trntui.model import categories as C
from trntui.model.arrays import distinct, small_uint
from trntui.model.kernels import kernel
from trntui.model.memory_events import MEMORY_EVENT_NAME, OUT_OF_MEMORY_EVENT_NAME
from trntui.model.profile import EventKind, Profile, chain_lengths

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
        # only ops with device time and their ancestors have any (the others' totals are 0.0, and adding 0.0
        # changes no float sum); their depth in the final tree by pointer doubling, then children before
        # parents, one level at a time (each parent's children summed in tree order, as torch does). None
        # kept is possible: every op with device time deleted (found by tests/test_properties.py)
        active = _with_ancestors(own, final_parent) if has_kern_ev.any() and m else np.zeros(0, np.int64)
        if len(active):
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
    fast = kernel()
    if fast is not None and m > 1:  # the stack itself, in one compiled pass (trntui/model/_kernels.c): same result
        out = np.empty(m, np.int64)
        new_thread = np.empty(m, np.uint8)
        new_thread[0] = 1
        np.not_equal(keys[1:], keys[:-1], out=new_thread[1:], casting="unsafe")
        fast.stack_parents(new_thread, np.ascontiguousarray(s, np.int64), np.ascontiguousarray(e, np.int64), out)
        return out
    return stack_parents_numpy(keys, s, e)


def stack_parents_numpy(keys: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """`_stack_parents` in numpy (the fallback where the compiled kernel is not built)."""
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
