"""Assemble a `Profile` from one or more sources (batches of columns), then sort it once."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from trntui.model.args import ArgsStore
from trntui.model.arrays import time_order
from trntui.model.profile import NO_ID, Flows, Lane, Profile, ProfileMeta, Tier


class ProfileBuilder:
    """Collects lanes, interned strings and event batches; `finish()` returns the sorted `Profile`."""

    def __init__(self, meta: ProfileMeta | None = None) -> None:
        self.meta = meta or ProfileMeta()
        self.names: list[str] = []
        self.cats: list[str] = []
        self._name_ids: dict[str, int] = {}
        self._cat_ids: dict[str, int] = {}
        self.lanes: list[Lane] = []
        self._lane_ids: dict[tuple, int] = {}
        self._batches: list[dict[str, np.ndarray]] = []
        self._args: list[Sequence[Any]] = []
        self._flows: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self._count = 0
        self._time_order: np.ndarray | None = None
        self._lazy_links: list[tuple[int, int, Callable[[list[Any]], tuple[np.ndarray, np.ndarray]]]] = []
        self.lane_scope = ""
        """Instance given to lanes that have none (files merged into one profile keep their lanes apart)."""

    # -- interning ----------------------------------------------------------------------------------
    def intern_name(self, name: str) -> int:
        k = self._name_ids.get(name)
        if k is None:
            k = self._name_ids[name] = len(self.names)
            self.names.append(name)
        return k

    def intern_cat(self, cat: str) -> int:
        k = self._cat_ids.get(cat)
        if k is None:
            k = self._cat_ids[cat] = len(self.cats)
            self.cats.append(cat)
        return k

    def lane(
        self,
        tier: Tier,
        subsystem: str,
        ident: str,
        pid: int,
        tid: int,
        *,
        instance: str = "",
        process_name: str = "",
        thread_name: str = "",
        sort_index: int = 0,
    ) -> int:
        """The id of the lane `(instance, pid, subsystem, ident)`, created on first use."""
        instance = instance or self.lane_scope
        key = (instance, pid, subsystem, ident)
        k = self._lane_ids.get(key)
        if k is None:
            k = self._lane_ids[key] = len(self.lanes)
            self.lanes.append(
                Lane(k, tier, subsystem, ident, pid, tid, instance, process_name, thread_name, sort_index)
            )
        else:
            lane = self.lanes[k]
            lane.process_name = lane.process_name or process_name
            lane.thread_name = lane.thread_name or thread_name
        return k

    def name_id(self, name: str) -> int:
        """Interned id of `name`, or -1 when no event added so far has it (does not intern)."""
        return self._name_ids.get(name, NO_ID)

    def set_instance(self, pid: int, instance: str) -> None:
        """Give lanes of process `pid` that have no instance id this one (a Kineto trace merged with a Neuron
        system trace of the same process: one set of lanes, labelled like Explorer's)."""
        for lane in self.lanes:
            if lane.pid == pid and not lane.instance:
                old = (lane.instance, lane.pid, lane.subsystem, lane.ident)
                new = (instance, lane.pid, lane.subsystem, lane.ident)
                if new in self._lane_ids:
                    continue
                del self._lane_ids[old]
                lane.instance = instance
                self._lane_ids[new] = lane.id

    def existing(self) -> dict[str, np.ndarray]:
        """Columns (start, end, name, cat, lane, ext, corr) of the events added so far, by builder index (for
        merging)."""
        cols = ("start", "end", "name", "cat", "lane", "ext", "corr")
        if not self._batches:
            return {c: np.empty(0, np.int64) for c in cols}
        return {c: np.concatenate([b[c] for b in self._batches]) for c in cols}

    # -- events ---------------------------------------------------------------------------------------
    @property
    def count(self) -> int:
        return self._count

    def add_events(
        self,
        *,
        start: np.ndarray,
        end: np.ndarray,
        lane: np.ndarray,
        name: np.ndarray,
        cat: np.ndarray,
        kind: np.ndarray | None = None,
        ext: np.ndarray | None = None,
        corr: np.ndarray | None = None,
        args_raw: Sequence[Any] | None = None,
        time_order: np.ndarray | None = None,
        links_from_args: Callable[[list[Any]], tuple[np.ndarray, np.ndarray]] | None = None,
    ) -> int:
        """Append a batch of events; returns the builder index of its first event (for flows). `time_order`: the
        batch's order by (start, longest first) if the caller has it (`finish` reuses it for a single batch).
        `links_from_args(raw args) -> (ext, corr)`: the batch's link columns are left in its args and parsed on
        first use of `Profile.ext`/`corr` (a trace with no rows that link never pays for them)."""
        n = int(len(start))
        first = self._count
        full = lambda v, dt: np.full(n, v, dt)  # noqa: E731
        if links_from_args is not None:
            self._lazy_links.append((first, n, links_from_args))
            ext = corr = None
        self._batches.append(
            {
                "start": np.asarray(start, np.int64),
                "end": np.asarray(end, np.int64),
                "lane": np.asarray(lane, np.int32),
                "name": np.asarray(name, np.int32),
                "cat": np.asarray(cat, np.int16),
                "kind": np.asarray(kind, np.int8) if kind is not None else full(0, np.int8),
                "ext": np.asarray(ext, np.int64) if ext is not None else full(NO_ID, np.int64),
                "corr": np.asarray(corr, np.int64) if corr is not None else full(NO_ID, np.int64),
            }
        )
        self._args.append(args_raw if args_raw is not None else [None] * n)
        self._time_order = time_order if not self._count else None  # only a single batch's order is the final one
        self._count += n
        return first

    def mark(self) -> tuple[int, int, int]:
        """Where the batches added so far end (for `namespace_ids` after the next source)."""
        return len(self._batches), len(self._flows), len(self._lazy_links)

    def namespace_ids(self, since: tuple[int, int, int], source: int) -> None:
        """Give the External ids, correlations and flow keys added since `since` (a `mark`) a namespace of their
        own: files merged into one profile (`--merge`, ranks of a job) each number them from 1, and an op of one
        file must not link to a kernel of another. `source` 0 keeps its ids."""
        if source <= 0:
            return
        off = np.int64(source) << np.int64(44)
        for b in self._batches[since[0]:]:
            for c in ("ext", "corr"):
                col = b[c].copy()
                col[col != NO_ID] += off
                b[c] = col
        self._flows[since[1]:] = [(k + off, e, c, r) for k, e, c, r in self._flows[since[1]:]]
        self._lazy_links[since[2]:] = [(a, k, _Shifted(parse, off)) for a, k, parse in self._lazy_links[since[2]:]]

    @property
    def nbytes(self) -> int:
        """Memory held by the batches added so far (columns and in-memory args)."""
        total = sum(v.nbytes for b in self._batches for v in b.values())
        for a in self._args:
            blob = getattr(a, "blob", None)
            if isinstance(blob, (bytes, bytearray)):
                total += len(blob) + a.starts.nbytes + a.ends.nbytes
        return total

    def add_flows(self, key: np.ndarray, event: np.ndarray, cat: np.ndarray, role: np.ndarray) -> None:
        """Flow rows whose `event` are builder indexes (as returned by `add_events` plus offsets)."""
        self._flows.append(
            (np.asarray(key, np.int64), np.asarray(event, np.int64), np.asarray(cat, np.int16), np.asarray(role, np.int8))
        )

    def finish(self) -> Profile:
        """Concatenate the batches and sort events by (start, longest first) so parents precede children."""
        from trntui.progress import report

        report("sorting", 0, 0)
        cols = ("start", "end", "lane", "name", "cat", "kind", "ext", "corr")
        dtypes = (np.int64, np.int64, np.int32, np.int32, np.int16, np.int8, np.int64, np.int64)
        data: dict[str, np.ndarray] = {}
        single = len(self._batches) == 1
        if single:  # one batch (a Kineto file): its columns are gathered into time order, not first copied
            batch = self._batches[0]
            start, end = batch["start"], batch["end"]
        else:
            for c, dt in zip(cols, dtypes):  # column by column, each batch column dropped once copied
                data[c] = np.concatenate([b.pop(c) for b in self._batches]) if self._batches else np.empty(0, dt)
            start, end = data["start"], data["end"]
        hint = self._time_order if single else None
        order = hint if hint is not None else time_order(start, end)
        del start, end
        identity = bool(len(order)) and bool(np.all(order[1:] > order[:-1]))
        unknown_links = bool(self._lazy_links) and sum(k for _, k, _ in self._lazy_links) == len(order)
        for c in cols:  # one column at a time: peak is the columns plus one
            col = batch.pop(c) if single else data[c]
            if unknown_links and c in ("ext", "corr"):  # nothing known: no columns until needed (below)
                data[c] = col
            elif not identity:
                data[c] = col[order]
            else:  # (a single batch's arrays are the caller's: copied, as the concatenation did)
                data[c] = col.copy() if single else col
            del col
        self._batches = []
        # args as one compact blob (frees the file buffers the raw slices point into), then reordered;
        # sources that give parsed dicts (or anything not bytes-like) keep a plain list
        args: Any
        try:
            args = ArgsStore.concat(self._args)
        except TypeError:
            args = []
            for a in self._args:
                args.extend(a)
            if not identity and args:
                args = [args[i] for i in order.tolist()]
        else:
            self._args = []
            if not identity and len(args):
                args = args.permuted(order)
        pending = None
        inverse = None
        if self._lazy_links:
            inverse = None if identity else _inverse(order)
            pending = [  # (a batch of every event: all of them, in order, whatever the permutation)
                (parse, np.arange(a, a + k) if inverse is None or k == len(order) else np.sort(inverse[a : a + k]))
                for a, k, parse in self._lazy_links
            ]
            if unknown_links:  # nothing known: no columns until needed
                data["ext"] = data["corr"] = None  # type: ignore[assignment]
        flows = Flows()
        if self._flows:
            if inverse is None:
                inverse = _inverse(order)
            key = np.concatenate([f[0] for f in self._flows])
            ev = np.concatenate([f[1] for f in self._flows])
            fc = np.concatenate([f[2] for f in self._flows])
            role = np.concatenate([f[3] for f in self._flows])
            flows = Flows(key=key, event=inverse[ev].astype(np.int32), cat=fc, role=role)
        profile = Profile(
            names=self.names,
            cats=self.cats,
            lanes=self.lanes,
            flows=flows,
            args_raw=args,
            meta=self.meta,
            pending_links=pending,
            **data,
        )
        profile.cache["time_sorted"] = True  # (sorted just now: `time_sorted` need not check 2 columns)
        return profile


def _inverse(order: np.ndarray) -> np.ndarray:
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return inverse


class _Shifted:
    """A lazy link parser whose External ids and correlations move into a source's namespace (`namespace_ids`)."""

    def __init__(self, parse: Callable[[list[Any]], tuple[np.ndarray, np.ndarray]], offset: np.int64) -> None:
        self.parse = parse
        self.offset = offset

    def __call__(self, args: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        out = []
        for col in self.parse(args):
            col = np.array(col, np.int64)
            col[col != NO_ID] += self.offset
            out.append(col)
        return out[0], out[1]
