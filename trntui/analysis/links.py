"""Who launched what: frontend op ← runtime call ← device row, with the rule that matched each link.

Rules, in order (kineto-traces.md §8, §11): `External id` of the runtime/device row names a frontend op;
else the device row's `correlation` names a runtime call, whose op is used; else the innermost frontend op
on the runtime call's thread that contains it (old traces whose External ids are broken).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trntui.model import categories as C
from trntui.model.arrays import distinct, small_codes
from trntui.model.intervals import walk_back
from trntui.model.profile import NO_ID, EventKind, Flows, Profile


class Rule(enum.IntEnum):
    NONE = 0
    EXTERNAL_ID = 1
    CORRELATION = 2
    CONTAINMENT = 3
    FLOW = 4
    SEQUENCE = 5
    """Neuron `nrt_sequence_id` shared by a framework device event and its runtime execution."""

    @property
    def label(self) -> str:
        return {0: "unlinked", 1: "External id", 2: "correlation", 3: "time containment", 4: "flow",
                5: "nrt_sequence_id"}[int(self)]


@dataclass
class Links:
    """Link indexes over a profile's events (arrays are per event, -1 where not applicable)."""

    frontend: np.ndarray
    """Mask: frontend ops (`cpu_op`, `user_annotation`): what key_averages and chains start from."""
    runtime: np.ndarray
    """Mask: host runtime/driver rows (cudaLaunchKernel, privateuse1_*)."""
    device: np.ndarray
    """Mask: device-typed rows (kernels, memcpy, memset, gpu annotations, syncs)."""
    op_of: np.ndarray
    """For runtime and device rows: the frontend op that launched them."""
    rule: np.ndarray
    """`Rule` used for `op_of`."""
    runtime_of: np.ndarray
    """For device rows: the runtime call with the same correlation id."""
    counts: dict[str, int] = field(default_factory=dict)
    """Rule label → number of device rows linked by it (shown in the UI, so users can trust the table)."""
    edge_src: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    """Dependency edges, one tier step each (op → runtime → device, or along a Neuron flow): sources."""
    edge_dst: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    edge_rule: np.ndarray = field(default_factory=lambda: np.empty(0, np.int8))
    _children: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)
    _adj: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)
    _fwdbwd: Any = field(default=None, repr=False)
    """(backward, forward) dicts, or a function that makes them (built on first use: no command that prints a
    table reads them)."""

    @property
    def backward(self) -> dict[int, int]:
        """Forward op → its backward op (Kineto `fwdbwd` flows)."""
        return self._pairs()[0]

    @property
    def forward(self) -> dict[int, int]:
        """Backward op → its forward op."""
        return self._pairs()[1]

    def _pairs(self) -> tuple[dict[int, int], dict[int, int]]:
        if self._fwdbwd is None:
            self._fwdbwd = ({}, {})
        elif callable(self._fwdbwd):
            self._fwdbwd = self._fwdbwd()
        return self._fwdbwd

    def add_edges(self, src: np.ndarray, dst: np.ndarray, rule: int | np.ndarray) -> None:
        """Append dependency edges (used by loaders of other formats, e.g. Neuron flow_id / sequence ids)."""
        src = np.asarray(src, np.int64)
        dst = np.asarray(dst, np.int64)
        rules = np.broadcast_to(np.asarray(rule, np.int8), src.shape)
        self.edge_src = np.concatenate([self.edge_src, src])
        self.edge_dst = np.concatenate([self.edge_dst, dst])
        self.edge_rule = np.concatenate([self.edge_rule, rules])
        self._adj.clear()

    def _adjacency(self, direction: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if direction not in self._adj:
            a, b = (self.edge_src, self.edge_dst) if direction == "down" else (self.edge_dst, self.edge_src)
            order = np.argsort(a, kind="stable")
            self._adj[direction] = (a[order], b[order], self.edge_rule[order])
        return self._adj[direction]

    def successors(self, i: int) -> list[tuple[int, int]]:
        """(event, rule) pairs one tier step below event `i`."""
        keys, other, rules = self._adjacency("down")
        a, b = np.searchsorted(keys, i, "left"), np.searchsorted(keys, i, "right")
        return list(zip(other[a:b].tolist(), rules[a:b].tolist()))

    def predecessors(self, i: int) -> list[tuple[int, int]]:
        """(event, rule) pairs one tier step above event `i`."""
        keys, other, rules = self._adjacency("up")
        a, b = np.searchsorted(keys, i, "left"), np.searchsorted(keys, i, "right")
        return list(zip(other[a:b].tolist(), rules[a:b].tolist()))

    def launched_by(self, i: int, which: str = "op") -> np.ndarray:
        """Events linked to event `i`: rows whose op is `i` (which="op") or device rows of runtime `i`."""
        if which not in self._children:
            src = self.op_of if which == "op" else self.runtime_of
            idx = np.nonzero(src >= 0)[0]
            keys = src[idx]
            order = np.argsort(keys, kind="stable")
            self._children[which] = (keys[order], idx[order])
        keys, idx = self._children[which]
        a = np.searchsorted(keys, i, side="left")
        b = np.searchsorted(keys, i, side="right")
        return idx[a:b]


class _Index:
    """A vectorised dict of int keys (`sorted_keys`, ascending) to event indexes: `index(queries)` gives, per
    query, the value of the first equal key, else -1 (`_lookup`). Dense keys (Kineto numbers External ids and
    correlations 1, 2, ...) go through a table indexed by key, built once for all queries, instead of a binary
    search per query."""

    def __init__(self, sorted_keys: np.ndarray, values: np.ndarray, queries: int, scratch: np.ndarray | None = None) -> None:
        self.keys, self.values = sorted_keys, values
        self.table: np.ndarray | None = None
        if not len(sorted_keys):
            return
        self.lo = int(sorted_keys[0])
        span = int(sorted_keys[-1]) - self.lo + 1
        if span <= 16 * (len(sorted_keys) + queries) and 0 <= int(values.min()) and int(values.max()) < 1 << 31:
            first = np.ones(len(sorted_keys), bool)
            first[1:] = sorted_keys[1:] != sorted_keys[:-1]
            # (the slot past the end: keys out of range); `scratch`: a table no longer needed, written over
            # instead of new memory (a fresh 25 MB table costs its page faults)
            if scratch is not None and len(scratch) > span:
                self.table = scratch[: span + 1]
                self.table.fill(NO_ID)
            else:
                self.table = np.full(span + 1, NO_ID, np.int32)
            self.table[sorted_keys[first] - self.lo] = values[first]

    def __call__(self, queries: np.ndarray) -> np.ndarray:
        if self.table is None:
            return _lookup(self.keys, self.values, queries)
        slot = queries - self.lo
        span = len(self.table) - 1
        slot[(slot < 0) | (slot > span)] = span
        return self.table[slot].astype(np.int64)


def _lookup(sorted_keys: np.ndarray, values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """values[k] where sorted_keys[k] == query, else -1 (vectorised dict lookup)."""
    if len(sorted_keys) == 0 or len(queries) == 0:
        return np.full(len(queries), NO_ID, np.int64)
    pos = np.searchsorted(sorted_keys, queries)
    pos = np.minimum(pos, len(sorted_keys) - 1)
    hit = sorted_keys[pos] == queries
    return np.where(hit, values[pos], NO_ID)


def _lane_thread_keys(profile: Profile) -> np.ndarray:
    """Per lane: an int64 key of its (pid, tid) thread, `(pid << 32) ^ tid`; when the lanes have several instances
    (files merged into one profile: each file's lanes have the file as instance), dense ids in (instance, that
    key) order instead, so the files' threads stay apart."""
    pairs_ = [(l.pid << 32) ^ (l.tid & 0xFFFFFFFF) for l in profile.lanes] or [0]
    if all(-(1 << 63) <= k < (1 << 63) for k in pairs_):
        raw = np.array(pairs_, dtype=np.int64)
    else:  # a 40-digit pid: dense ids in key order (the keys only ever meet each other)
        rank_of = {k: r for r, k in enumerate(sorted(set(pairs_)))}
        raw = np.array([rank_of[k] for k in pairs_], dtype=np.int64)
    instances = sorted({l.instance for l in profile.lanes})
    if len(instances) <= 1:
        return raw
    rank = {x: k for k, x in enumerate(instances)}
    inst = np.array([rank[l.instance] for l in profile.lanes], np.int64)
    order = np.lexsort((raw, inst))
    pairs = np.stack([inst[order], raw[order]], axis=1)
    new = np.ones(len(order), bool)
    new[1:] = (pairs[1:] != pairs[:-1]).any(axis=1)
    dense = np.empty(len(order), np.int64)
    dense[order] = np.cumsum(new) - 1
    return dense


def thread_keys(profile: Profile) -> np.ndarray:
    """Per event: an int64 key of its (pid, tid) host thread / stream (and its instance when the profile merges
    several files: `_lane_thread_keys`)."""
    cached = profile.cache.get("thread_keys")
    if cached is None:
        lane_key = _lane_thread_keys(profile)
        cached = lane_key[profile.lane] if len(profile) else np.empty(0, np.int64)
        profile.cache["thread_keys"] = cached
    return cached


def thread_codes(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct thread keys, each event's index among them as a small unsigned int): the order of
    `thread_keys`, and a stable argsort of the codes is a radix sort."""
    cached = profile.cache.get("thread_codes")
    if cached is None:
        keys, lane_code = small_codes(_lane_thread_keys(profile))
        cached = (keys, lane_code[profile.lane] if len(profile) else lane_code[:0])
        profile.cache["thread_codes"] = cached
    return cached


def innermost_containing(profile: Profile, queries: np.ndarray, candidates: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """For each query event, the innermost candidate event on the same thread key that contains it."""
    out = np.full(len(queries), NO_ID, np.int64)
    if len(queries) == 0 or len(candidates) == 0:
        return out
    start, end = profile.start, profile.end
    q_threads = distinct(keys[queries])
    if len(candidates) > 1 and not bool(np.all(candidates[1:] > candidates[:-1])):
        candidates = np.sort(candidates)  # (ascending, as by_key_then_time wants; usually np.nonzero's already)
    ck = keys[candidates]
    for t in q_threads.tolist():
        # the thread's candidates by (start, longest first): in event order when the profile is time-sorted
        group = candidates[ck == t]
        if not len(group):
            continue
        if not profile.time_sorted():
            group = profile.by_key_then_time(keys, group)
        gs = start[group]
        ge = end[group]
        qsel = np.nonzero(keys[queries] == t)[0]
        qs = start[queries[qsel]]
        qe = end[queries[qsel]]
        qi = queries[qsel]
        # walk back from the last candidate starting at or before the query, at most 512 candidates; queries that
        # no candidate up to there contains (the running max of their ends falls short) are not walked: they
        # would miss all 512 steps (e.g. cudaDeviceSynchronize outside any op)
        k = np.searchsorted(gs, qs, side="right") - 1
        reach = np.maximum.accumulate(ge)
        walk = np.flatnonzero((k >= 0) & (reach[np.maximum(k, 0)] >= qe))
        if not len(walk):
            continue
        qs, qe, qi, k, qsel = qs[walk], qe[walk], qi[walk], k[walk], qsel[walk]
        pos = walk_back(k, lambda a, c: (ge[c] >= qe[a]) & (gs[c] <= qs[a]) & (group[c] != qi[a]), 512)
        hit = pos >= 0
        out[qsel[hit]] = group[pos[hit]]
    return out


def build_links(profile: Profile) -> Links:
    """Compute (once, cached on the profile) the op ← runtime ← device links."""
    cached = profile.cache.get("links")
    if cached is not None:
        return cached
    n = len(profile)
    complete = profile.kind == EventKind.COMPLETE
    # the three category masks from one lookup per event (bit k: the category is in group k)
    groups = (C.OPS, C.RUNTIME | {C.PRIVATEUSE1_DISPATCH, C.PRIVATEUSE1_DRIVER}, C.DEVICE_TYPED)
    bits = np.zeros(max(len(profile.cats), 1), np.uint8)
    for k, group in enumerate(groups):
        for c in group:
            cid = profile.cat_id(c)
            if cid >= 0:
                bits[cid] |= 1 << k
    cls = bits[profile.cat]
    cls[~complete] = 0
    del complete
    frontend, runtime, device = ((cls & (1 << k)) != 0 for k in range(3))
    del cls
    op_of = np.full(n, NO_ID, np.int64)
    rule = np.zeros(n, np.int8)
    runtime_of = np.full(n, NO_ID, np.int64)
    _, keys = thread_codes(profile)  # each event's thread as a small code (same grouping as thread_keys)

    rt = np.nonzero(runtime)[0]
    dv = np.nonzero(device)[0]
    if len(rt) or len(dv):  # the link columns are read only when some row links (else they may stay unparsed)
        ext = profile.ext
        corr = profile.corr
        ops = np.nonzero(frontend & (ext > 0))[0]
        op_ext = ext[ops]
        o = np.argsort(op_ext, kind="stable")
        by_op_ext = _Index(op_ext[o], ops[o], len(rt) + len(dv))

    # runtime rows -> op
    if len(rt):
        cand = by_op_ext(ext[rt])
        cand = np.where(ext[rt] > 0, cand, NO_ID)
        ok = cand >= 0
        # a runtime row whose External id equals its own correlation is the old broken form; trust it only
        # when that op really contains the call
        suspicious = ok & (ext[rt] == corr[rt])
        if suspicious.any():
            c = cand[suspicious]
            r = rt[suspicious]
            contains = (profile.start[c] <= profile.start[r]) & (profile.end[c] >= profile.end[r]) & (keys[c] == keys[r])
            bad = np.nonzero(suspicious)[0][~contains]
            cand[bad] = NO_ID
            ok = cand >= 0
        op_of[rt[ok]] = cand[ok]
        rule[rt[ok]] = Rule.EXTERNAL_ID
        missing = rt[~ok]
        if len(missing):
            inner = innermost_containing(profile, missing, np.nonzero(frontend)[0], keys)
            hit = inner >= 0
            op_of[missing[hit]] = inner[hit]
            rule[missing[hit]] = Rule.CONTAINMENT

    # device rows -> runtime (correlation) and -> op
    if len(dv):
        by_ext = np.where(ext[dv] > 0, by_op_ext(ext[dv]), NO_ID)
        rt_corr = corr[rt] if len(rt) else np.empty(0, np.int64)
        rc = np.argsort(rt_corr, kind="stable")
        by_corr = _Index(rt_corr[rc], rt[rc], len(dv), scratch=by_op_ext.table)  # (the ids' table is done with)
        runtime_of[dv] = np.where(corr[dv] > 0, by_corr(corr[dv]), NO_ID)
        broken = (ext[dv] == corr[dv]) & (runtime_of[dv] >= 0)
        use_ext = (by_ext >= 0) & ~broken
        via_rt = np.where(runtime_of[dv] >= 0, op_of[np.maximum(runtime_of[dv], 0)], NO_ID)
        use_rt = ~use_ext & (via_rt >= 0)
        op_of[dv[use_ext]] = by_ext[use_ext]
        rule[dv[use_ext]] = Rule.EXTERNAL_ID
        op_of[dv[use_rt]] = via_rt[use_rt]
        rule[dv[use_rt]] = Rule.CORRELATION
        rest = ~use_ext & ~use_rt & (by_ext >= 0)
        op_of[dv[rest]] = by_ext[rest]
        rule[dv[rest]] = Rule.EXTERNAL_ID

    counts: dict[str, int] = {}
    if len(dv):
        per_rule = np.bincount(rule[dv], minlength=len(Rule)).tolist()
        for r in Rule:
            if per_rule[r]:
                counts[r.label] = per_rule[r]
    links = Links(frontend, runtime, device, op_of, rule, runtime_of, counts)
    # dependency edges: op -> runtime call, runtime call -> device row, op -> device row without a runtime call
    r_idx = np.nonzero(runtime & (op_of >= 0))[0]
    d_rt = np.nonzero(device & (runtime_of >= 0))[0]
    d_op = np.nonzero(device & (runtime_of < 0) & (op_of >= 0))[0]
    # (the links' first edges: the three kinds joined once, as `add_edges` of each in turn would)
    links.edge_src = np.concatenate([op_of[r_idx], runtime_of[d_rt], op_of[d_op]]).astype(np.int64, copy=False)
    links.edge_dst = np.concatenate([r_idx, d_rt, d_op]).astype(np.int64, copy=False)
    links.edge_rule = np.concatenate([rule[r_idx], np.full(len(d_rt), Rule.CORRELATION, np.int8), rule[d_op]])
    _add_flow_edges(profile, links)
    for hook in profile.hooks.link_edges:  # the trace format's own link keys (Neuron: analysis/neuron.py)
        hook(profile, links)
    profile.cache["links"] = links
    return links


def _add_flow_edges(profile: Profile, links: Links) -> None:
    """Edges from flows that are not already covered by correlation: Neuron `flow_id` groups (members ordered
    by tier, each tier linked to the next present one) and Kineto `fwdbwd` (forward op -> backward op)."""
    flows = profile.flows
    if len(flows) == 0:
        return
    tiers = np.array([int(l.tier) for l in profile.lanes] or [0], np.int64)
    member = flows.role == flows.MEMBER
    if member.any():
        idx = np.nonzero(member)[0]
        order = idx[np.lexsort((profile.start[flows.event[idx]], tiers[profile.lane[flows.event[idx]]], flows.key[idx], flows.cat[idx]))]
        ev = flows.event[order].astype(np.int64)
        fkey = flows.key[order]
        fcat = flows.cat[order]
        tier_of = tiers[profile.lane[ev]]
        m = len(order)
        # runs of one (cat, key) group, and within a group runs of one tier ("subgroups"); every member of a
        # subgroup is linked to every member of the next subgroup of the same group, in sorted order
        new_group = np.ones(m, bool)
        new_group[1:] = (fkey[1:] != fkey[:-1]) | (fcat[1:] != fcat[:-1])
        new_sub = new_group.copy()
        new_sub[1:] |= tier_of[1:] != tier_of[:-1]
        sub_start = np.nonzero(new_sub)[0]
        sub_size = np.diff(np.append(sub_start, m))
        sub_of = np.cumsum(new_sub) - 1
        # subgroup s has a successor when s + 1 exists and does not open a new group
        has_next = np.zeros(len(sub_start), bool)
        has_next[:-1] = ~new_group[sub_start[1:]]
        nxt = np.minimum(sub_of + 1, len(sub_start) - 1)
        cnt = np.where(has_next[sub_of], sub_size[nxt], 0)
        total = int(cnt.sum())
        if total:
            src = np.repeat(ev, cnt)
            offs = np.cumsum(cnt) - cnt
            dpos = np.repeat(sub_start[nxt] - offs, cnt) + np.arange(total)
            links.add_edges(src, ev[dpos], Rule.FLOW)
    fwdbwd = profile.cat_id("fwdbwd")
    if fwdbwd >= 0:
        links._fwdbwd = lambda: _fwdbwd_pairs(flows, fwdbwd)


def _fwdbwd_pairs(flows: Flows, fwdbwd: int) -> tuple[dict[int, int], dict[int, int]]:
    """(forward op → backward op, backward op → forward op) from the `fwdbwd` flows: per key, the last start and
    the last finish."""
    sel = np.nonzero((flows.cat == fwdbwd) & (flows.role != flows.MEMBER))[0]
    is_start = flows.role[sel] == flows.START
    # per key, the last start and the last finish (dicts built in C; keys in first-occurrence order)
    starts = dict(zip(flows.key[sel[is_start]].tolist(), flows.event[sel[is_start]].tolist()))
    finishes = dict(zip(flows.key[sel[~is_start]].tolist(), flows.event[sel[~is_start]].tolist()))
    both = [q for q in starts if q in finishes]
    if not both:
        return {}, {}
    s_ev, f_ev = [starts[q] for q in both], [finishes[q] for q in both]
    return dict(zip(s_ev, f_ev)), dict(zip(f_ev, s_ev))


def launching_ops(profile: Profile) -> np.ndarray:
    """Per event: the framework op on a host thread that launched it (itself for such an op), else `NO_ID`.

    The one notion of "the op that launched this" for every pane (chain, call tree, instances, timeline): an op
    on a dispatch lane is its own; a runtime or device row linked by External id / correlation has its `op_of`;
    anything else reached along the dependency edges (a Neuron flow: driver row -> `nrta_execute_schedule` ->
    `nc_exec_running`) takes the op of its earliest predecessor that has one (`chains.find_root` walks the same
    way). Cached per profile and edge count (loaders of other formats add edges after the links are built)."""
    links = build_links(profile)
    key = ("launching_ops", len(links.edge_src))
    cached = profile.cache.get(key)
    if cached is not None:
        return cached
    from trntui.model.profile import Tier

    n = len(profile)
    tiers = np.array([lane.tier for lane in profile.lanes], np.int8) if len(profile.lanes) else np.zeros(1, np.int8)
    on_host = links.frontend & (tiers[profile.lane] == int(Tier.DISPATCH)) if n else np.zeros(0, bool)
    op = np.where(on_host, np.arange(n, dtype=np.int64), np.asarray(links.op_of, np.int64))
    bad = op >= 0
    bad[bad] = ~on_host[op[bad]]  # an op_of that is no host op (cannot happen for Kineto links; be safe)
    op[bad] = NO_ID
    src, dst = links.edge_src, links.edge_dst
    if len(src):
        order = np.argsort(-profile.start[src], kind="stable")  # the earliest predecessor is written last: it wins
        src, dst = src[order], dst[order]
        for _ in range(64):  # one pass per tier step; chains are a few steps long
            todo = (op[dst] < 0) & (op[src] >= 0)
            if not todo.any():
                break
            op[dst[todo]] = op[src[todo]]
    profile.cache[key] = op
    return op


def launching_op(profile: Profile, event: int) -> int:
    """The framework op on a host thread that launched `event` (`launching_ops`), or `NO_ID`."""
    return int(launching_ops(profile)[event])
