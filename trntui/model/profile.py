"""The columnar `Profile`: one model for every trace source (Kineto JSON, Neuron system traces).

Events are numpy columns (int64 ns on one absolute clock, interned name/category ids), lanes are a small
table typed by tier, flows are an edge table. Everything derived (per-lane sorted order, link indexes,
key_averages) is computed on demand and cached in `Profile.cache`, so loading stays a single pass.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from trntui.model.memory_events import MemoryEvents

NO_ID = -1
"""Sentinel for a missing External id / correlation / parent in the integer columns."""


class Tier(enum.IntEnum):
    """Where an event sits in the framework → runtime → hardware chain (the timeline's lane groups)."""

    DISPATCH = 0
    """Framework dispatch, per host thread: aten ops, record_function scopes, PrivateUse1 runtime rows."""
    DEVICE = 1
    """Framework device interaction, per stream: PrivateUse1 driver rows, GPU mirrors of annotations."""
    RUNTIME = 2
    """Runtime calls: cudaLaunchKernel, hipLaunchKernel, nrta_execute_schedule."""
    HARDWARE = 3
    """Hardware execution: kernels, memcpy/memset, nc_exec_running."""

    @property
    def title(self) -> str:
        return _TIER_TITLES[self]


_TIER_TITLES = {
    Tier.DISPATCH: "framework dispatch",
    Tier.DEVICE: "framework device",
    Tier.RUNTIME: "runtime",
    Tier.HARDWARE: "hardware",
}


class EventKind(enum.IntEnum):
    COMPLETE = 0
    """An interval (chrome `X`, or a `B`/`E` pair, or a Neuron system event)."""
    INSTANT = 1
    """A point event (chrome `i`): zero duration."""


@dataclass
class Lane:
    """One timeline row: a host thread, a stream, a runtime core or a hardware core.

    `label` follows Neuron Explorer's `instance/PID:n/subsystem/identifier` so users can cross-check.
    """

    id: int
    tier: Tier
    subsystem: str
    ident: str
    pid: int
    tid: int
    instance: str = ""
    process_name: str = ""
    thread_name: str = ""
    sort_index: int = 0

    @property
    def label(self) -> str:
        if self.subsystem == "markers":  # trace-wide markers on string pids ("Spans", "Traces", "")
            return "/".join(p for p in (self.instance, "markers", self.ident) if p)
        parts = [p for p in (self.instance, f"PID:{self.pid}", self.subsystem, self.ident) if p]
        return "/".join(parts)

    @property
    def thread_key(self) -> tuple[int, int]:
        return (self.pid, self.tid)


@dataclass
class Flows:
    """Flow edges: every row says "event `event` belongs to flow `key` with role `role`".

    Kineto `s`/`f` halves become one row each (role 0 = start, 1 = finish); a Neuron `flow_id` list becomes one
    row per value (role 2 = member). Chains join on `(cat, key)`.
    """

    key: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    event: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))
    cat: np.ndarray = field(default_factory=lambda: np.empty(0, np.int16))
    role: np.ndarray = field(default_factory=lambda: np.empty(0, np.int8))

    START = 0
    FINISH = 1
    MEMBER = 2

    def __len__(self) -> int:
        return int(self.key.shape[0])


_LINK_BATCH = 65536
"""Events whose link ids are parsed at once from args left in their trace file (`Profile._parse_links`)."""


@dataclass
class ProfileMeta:
    """What was loaded and how: sources, device, column labels, and what had to be skipped."""

    sources: list[str] = field(default_factory=list)
    device_kind: str = "cpu"
    """`cuda`, `rocm`, `mtia`, `xpu`, `neuron` or `cpu`."""
    backend: str = ""
    """Label torch uses for device columns: `CUDA` (also on ROCm), `NEURON`, `MTIA`, `XPU`; empty for CPU."""
    base_ns: int = 0
    """The trace's `baseTimeNanoseconds` (0 when timestamps were already absolute)."""
    trace_meta: dict[str, Any] = field(default_factory=dict)
    """Top-level keys of the trace file other than the events (deviceProperties, distributedInfo, ...)."""
    skipped: dict[str, int] = field(default_factory=dict)
    """Reason → count of input records that could not be used (shown to the user, never silent)."""
    notes: list[str] = field(default_factory=list)
    """Human-readable remarks about the load (repairs made, orphan flows, ...)."""
    device_time_source: str = ""
    """Where device time came from: `trace.json` device rows, or the Neuron system trace."""
    counters: list[dict[str, Any]] = field(default_factory=list)
    """Sampled series drawn as one-row counter lanes (Neuron Explorer's CpuUsage, HostMemUsage,
    SystemProfileHbmUsage): dicts with `name`, `label`, `unit`, `ts` (int ns) and `values` (numbers), plain
    JSON so the parsed-profile cache keeps them (trntui/analysis/counters.py reads them)."""

    def skip(self, reason: str, count: int = 1) -> None:
        if count:
            self.skipped[reason] = self.skipped.get(reason, 0) + count

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())


@dataclass
class AnalysisHooks:
    """Format-specific analyses that generic analysis calls (trntui/loaders/protocol.py), so that analysis never
    imports a loader: `link_edges(profile, links)` add dependency edges, `device_time(profile, links)` return
    frontend op → device ns for traces without device rows."""

    link_edges: list[Callable[..., Any]] = field(default_factory=list)
    device_time: list[Callable[..., Any]] = field(default_factory=list)


class Profile:
    """A loaded profile: columnar events, lanes, flows and metadata.

    Attributes are plain numpy arrays of equal length (one entry per event), sorted by start time.
    """

    def __init__(
        self,
        *,
        names: list[str],
        cats: list[str],
        start: np.ndarray,
        end: np.ndarray,
        lane: np.ndarray,
        name: np.ndarray,
        cat: np.ndarray,
        kind: np.ndarray,
        ext: np.ndarray,
        corr: np.ndarray,
        lanes: list[Lane],
        flows: Flows,
        args_raw: list[Any],
        meta: ProfileMeta,
        pending_links: list[tuple[Callable[[list[Any]], tuple[np.ndarray, np.ndarray]], np.ndarray]] | None = None,
    ) -> None:
        self.names = names
        self.cats = cats
        self.start = start
        self.end = end
        self.lane = lane
        self.name = name
        self.cat = cat
        self.kind = kind
        self._ext = ext
        self._corr = corr
        self._pending_links = pending_links or None
        """(parse, events): link columns of these events still in their args, parsed on first use of ext/corr."""
        self.lanes = lanes
        self.flows = flows
        self.args_raw = args_raw
        self.meta = meta
        self.cache: dict[str, Any] = {}
        """Derived data memoised by the module that computes it (each module owns its keys)."""
        self.hooks = AnalysisHooks()
        """The analyses the profile's trace format adds (attached by trntui/formats.py when a run is loaded)."""
        self._name_index: dict[str, int] | None = None
        self._cat_index: dict[str, int] | None = None

    # -- link columns (External id, correlation) -------------------------------------------------------------
    @property
    def ext(self) -> np.ndarray:
        """Per event: the `External id` of its args (-1 when absent)."""
        if self._pending_links is not None:
            self._parse_links()
        return self._ext  # type: ignore[return-value]

    @ext.setter
    def ext(self, value: np.ndarray) -> None:
        self._ext = value

    @property
    def corr(self) -> np.ndarray:
        """Per event: the `correlation` of its args (-1 when absent)."""
        if self._pending_links is not None:
            self._parse_links()
        return self._corr  # type: ignore[return-value]

    @corr.setter
    def corr(self, value: np.ndarray) -> None:
        self._corr = value

    def links_parsed(self) -> bool:
        """Whether the link columns are in memory (else they are parsed from the args on first use)."""
        return self._pending_links is None

    def _parse_links(self) -> None:
        from trntui.model.args import raw_many

        n = len(self)
        if self._ext is None:
            self._ext = np.full(n, NO_ID, np.int64)
        if self._corr is None:
            self._corr = np.full(n, NO_ID, np.int64)
        from trntui.model.args import ArgsStore, FileBlob

        store = self.args_raw
        # args left in the trace file: a batch of events at a time (the windows of the file read for a batch are
        # let go before the next; each event's ids depend on its own args only)
        step = _LINK_BATCH if isinstance(store, ArgsStore) and isinstance(store.blob, FileBlob) else None
        scratch = bytearray() if step else None  # (one buffer the batches' windows are read into)
        for parse, idx in self._pending_links or []:
            for k in range(0, len(idx), step or max(len(idx), 1)):
                part = idx[k : k + step] if step else idx
                self._ext[part], self._corr[part] = parse(raw_many(store, part, scratch))
        self._pending_links = None

    # -- basic accessors -------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.start.shape[0])

    @property
    def dur(self) -> np.ndarray:
        return self.end - self.start

    def name_of(self, i: int) -> str:
        return self.names[int(self.name[i])]

    def cat_of(self, i: int) -> str:
        return self.cats[int(self.cat[i])]

    def lane_of(self, i: int) -> Lane:
        return self.lanes[int(self.lane[i])]

    def name_id(self, name: str) -> int:
        """Interned id of `name`, or -1 if no event has that name."""
        if self._name_index is None:
            self._name_index = {n: k for k, n in enumerate(self.names)}
        return self._name_index.get(name, NO_ID)

    def cat_id(self, cat: str) -> int:
        if self._cat_index is None:
            self._cat_index = {c: k for k, c in enumerate(self.cats)}
        return self._cat_index.get(cat, NO_ID)

    def cat_mask(self, cats: Iterable[str]) -> np.ndarray:
        """Boolean mask over events whose category is one of `cats`."""
        ids = [self.cat_id(c) for c in cats]
        ids = [i for i in ids if i >= 0]
        if not ids:
            return np.zeros(len(self), bool)
        table = np.zeros(len(self.cats), bool)  # a lookup per event (np.isin compares once per id)
        table[ids] = True
        return table[self.cat]

    def name_mask(self, names: Iterable[str]) -> np.ndarray:
        """Boolean mask over events whose name is one of `names`."""
        ids = [k for k in (self.name_id(x) for x in names) if k >= 0]
        if not ids:
            return np.zeros(len(self), bool)
        table = np.zeros(len(self.names), bool)
        table[ids] = True
        return table[self.name]

    def args(self, i: int) -> dict[str, Any]:
        """The event's `args`, parsed on demand (they are kept raw at load time)."""
        raw = self.args_raw[i] if i < len(self.args_raw) else None
        if raw is None:
            return {}
        if isinstance(raw, dict):
            return raw
        from trntui.model.args import decode_args

        return decode_args(raw)

    def memory_events(self) -> "MemoryEvents":
        """The `[memory]`/`[OutOfMemory]` records as columns (bytes, device, totals), decoded on first use."""
        from trntui.model.memory_events import memory_events

        return memory_events(self)

    @property
    def span(self) -> tuple[int, int]:
        """(first start, last end) in absolute ns, or (0, 0) for an empty profile."""
        if len(self) == 0:
            return (0, 0)
        return (int(self.start.min()), int(self.end.max()))

    # -- orders -----------------------------------------------------------------------------------
    def time_sorted(self) -> bool:
        """Whether the events are in (start, longest first) order, as `ProfileBuilder.finish` leaves them."""
        cached = self.cache.get("time_sorted")
        if cached is None:
            s, e = self.start, self.end
            cached = bool(np.all((s[1:] > s[:-1]) | ((s[1:] == s[:-1]) & (e[1:] <= e[:-1])))) if len(s) > 1 else True
            self.cache["time_sorted"] = cached
        return cached

    def by_key_then_time(self, keys: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        """Event indexes (`idx`, ascending; default all) ordered by (`keys` per event, start, longest first),
        ties by index: one stable sort of the keys when the events are already time-sorted (4x faster than
        the three-key lexsort it equals)."""
        if idx is None:
            idx = np.arange(len(self), dtype=np.int64)
        if self.time_sorted():
            return idx[np.argsort(keys[idx], kind="stable")]
        s = self.start[idx]
        return idx[np.lexsort((-(self.end[idx] - s), s, keys[idx]))]

    # -- per-lane order and windows --------------------------------------------------------------
    def _lane_index(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(order, offsets, prefix-max end): events grouped by lane, by start within a lane."""
        cached = self.cache.get("lane_index")
        if cached is None:
            order = self.by_key_then_time(self.lane.astype(np.int64))
            counts = np.bincount(self.lane, minlength=len(self.lanes)) if len(self) else np.zeros(len(self.lanes), np.int64)
            offsets = np.zeros(len(self.lanes) + 1, np.int64)
            np.cumsum(counts, out=offsets[1:])
            ends = self.end[order]
            prefix_max = np.empty_like(ends)
            for k in range(len(self.lanes)):
                a, b = offsets[k], offsets[k + 1]
                if b > a:
                    np.maximum.accumulate(ends[a:b], out=prefix_max[a:b])
            cached = (order, offsets, prefix_max)
            self.cache["lane_index"] = cached
        return cached

    def lane_events(self, lane_id: int) -> np.ndarray:
        """Event indexes of one lane, sorted by start."""
        order, offsets, _ = self._lane_index()
        return order[offsets[lane_id] : offsets[lane_id + 1]]

    def lane_window(self, lane_id: int, t0: int, t1: int) -> np.ndarray:
        """Event indexes of `lane_id` that overlap [t0, t1), sorted by start (binary search, no scan)."""
        order, offsets, prefix_max = self._lane_index()
        a, b = int(offsets[lane_id]), int(offsets[lane_id + 1])
        if a == b:
            return order[a:a]
        starts = self.lane_starts()[a:b]
        lo = int(np.searchsorted(prefix_max[a:b], t0, side="right"))
        hi = int(np.searchsorted(starts, t1, side="left"))
        if hi <= lo:
            return order[a:a]
        idx = order[a + lo : a + hi]
        return idx[(self.end[idx] > t0) | (self.start[idx] >= t0)]

    def lane_starts(self) -> np.ndarray:
        """Starts in lane order (aligned with the order array), cached for the timeline's searches."""
        cached = self.cache.get("lane_starts")
        if cached is None:
            order, _, _ = self._lane_index()
            cached = self.start[order]
            self.cache["lane_starts"] = cached
        return cached

    # -- nesting (display) -----------------------------------------------------------------------
    def nesting(self) -> tuple[np.ndarray, np.ndarray]:
        """(parent, depth) per event by containment within its lane.

        `parent` is the innermost event of the lane that fully contains it (-1 at a root). `depth` is the
        sub-row to draw it in: partially overlapping events get a deeper sub-row instead of being dropped.
        """
        cached = self.cache.get("nesting")
        if cached is not None:
            return cached
        n = len(self)
        parent = np.full(n, NO_ID, np.int32)
        depth = np.zeros(n, np.int16)
        order, offsets, _ = self._lane_index()
        if n:
            ppos, dpos = stack_nesting(self.start[order], self.end[order], self.lane[order])
            parent[order] = np.where(ppos >= 0, order[np.maximum(ppos, 0)], NO_ID)
            depth[order] = np.minimum(dpos, np.iinfo(np.int16).max)
        self.cache["nesting"] = (parent, depth)
        return parent, depth

    # -- summary facts ----------------------------------------------------------------------------
    def lanes_by_tier(self) -> list[Lane]:
        """Lanes in display order: tier, then sort index, pid, tid, subsystem."""
        return sorted(self.lanes, key=lambda l: (int(l.tier), l.sort_index, l.pid, l.tid, l.subsystem, l.ident))

    def step_names(self) -> list[str]:
        """Names of the `ProfilerStep#N` scopes in the profile, in order."""
        ids = [k for k, n in enumerate(self.names) if n.startswith("ProfilerStep#")]
        if not ids:
            return []
        mask = np.isin(self.name, ids)
        idx = np.nonzero(mask)[0]
        seen: dict[str, None] = {}
        for i in idx.tolist():
            seen.setdefault(self.names[int(self.name[i])], None)
        return list(seen)


def stack_nesting(s: np.ndarray, e: np.ndarray, lane: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The per-lane stack walk of `Profile.nesting`, vectorised (events in lane order, by start).

    The walk: pop the top while it ended at or before our start (a zero-length event exactly at our start
    stays); depth = stack size; parent = the topmost stack entry that ends at or after our end; push.
    `below[i]` (the stack top after the pops at i) is the first entry of the chain i-1, below[i-1], ... that
    is not popped; `parent[i]` the first entry of the chain below[i], ... that ends late enough. Both are
    found by pointer jumping: every entry jumped over would be popped (or ends too early) for us as well.
    Returns (parent position, depth) per position; -1 where there is none.
    """
    m = len(s)
    prev = np.arange(-1, m - 1, dtype=np.int64)
    if m:
        prev[1:][lane[1:] != lane[:-1]] = -1

    def popped(x: np.ndarray, i: np.ndarray) -> np.ndarray:
        ex = e[x]
        si = s[i]
        return (ex <= si) & ~((ex == si) & (s[x] == si))

    below = prev.copy()
    act = np.nonzero(below >= 0)[0]
    while len(act):
        act = act[popped(below[act], act)]
        if not len(act):
            break
        nxt = below[below[act]]
        below[act] = nxt
        act = act[nxt >= 0]
    parent = below.copy()
    act = np.nonzero(parent >= 0)[0]
    while len(act):
        act = act[e[parent[act]] < e[act]]
        if not len(act):
            break
        nxt = parent[parent[act]]
        parent[act] = nxt
        act = act[nxt >= 0]
    return parent, chain_lengths(below)  # depth = length of the `below` chain


def chain_lengths(ptr: np.ndarray) -> np.ndarray:
    """Per node, how many links its pointer chain has until -1 (list ranking by pointer doubling: O(n log depth)
    numpy work). `ptr` is not modified."""
    depth = (ptr >= 0).astype(np.int64)
    ptr = ptr.copy()
    act = np.nonzero(ptr >= 0)[0]
    while len(act):
        p = ptr[act]
        depth[act] += depth[p]
        ptr[act] = ptr[p]
        act = act[ptr[act] >= 0]
    return depth


def empty_profile(meta: ProfileMeta | None = None) -> Profile:
    """A profile with no events (e.g. a directory where nothing could be read)."""
    z64 = np.empty(0, np.int64)
    return Profile(
        names=[],
        cats=[],
        start=z64,
        end=z64.copy(),
        lane=np.empty(0, np.int32),
        name=np.empty(0, np.int32),
        cat=np.empty(0, np.int16),
        kind=np.empty(0, np.int8),
        ext=z64.copy(),
        corr=z64.copy(),
        lanes=[],
        flows=Flows(),
        args_raw=[],
        meta=meta or ProfileMeta(),
    )
