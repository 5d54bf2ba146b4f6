"""Decoded events → numpy columns, per chunk (`Part`), and the rules that turn them into profile columns.

A `Part` touches no builder state (names are interned at merge time), so chunks can be decoded in any order or
in another process; merging the parts in order (`merge_ids`, `merge_strings`) gives exactly what one pass over
all events would. Also: µs → ns and int-or-string pid/tid ids; the link-id columns (External id, correlation) are
read by link_ids.py."""

from __future__ import annotations

from itertools import compress
from typing import Any, Callable

import msgspec
import numpy as np

from trntui.loaders.kineto.link_ids import piece_links, to_id
from trntui.loaders.kineto.schema import (  # (clock_base: merge.py imports it from here)
    MAX_NS, PH, Ev, clock_base, phase_codes,
)
from trntui.loaders.kineto.schema import args_of as _ARGS, cat_of as _CAT, dur_of as _DUR, id_of as _ID
from trntui.loaders.kineto.schema import name_of as _NAME, pid_of as _PID, tid_of as _TID, ts_of as _TS
from trntui.model import categories as C
from trntui.model.args import ArgsStore
from trntui.model.arrays import dense_codes
from trntui.model.kernels import kernel
from trntui.model.profile import NO_ID, EventKind


def to_ns(values: np.ndarray) -> np.ndarray:
    """µs floats → int64 ns, exact for integral µs (epoch ints) and rounded to the ns otherwise."""
    whole = np.floor(values)
    return whole.astype(np.int64) * 1000 + np.rint((values - whole) * 1000.0).astype(np.int64)


def interval_ns(ts: np.ndarray, dur: np.ndarray, base: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int]:
    """(start, end) on the int64 ns clock from µs floats, the events to skip (non-finite or out of the clock's
    range, e.g. 1e300: None when there are none) and how many had a negative duration (shown as instants).
    One compiled pass where the kernels are built (model/_kernels.c `times_ns`, the same operations), else numpy."""
    fast = _times_ns(ts, dur, base)
    if fast is not None:
        return fast  # type: ignore[return-value]
    return interval_ns_numpy(ts, dur, base)


def interval_ns_numpy(ts: np.ndarray, dur: np.ndarray, base: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int]:
    """`interval_ns` in numpy (the fallback, and what the kernel is tested against)."""
    with np.errstate(invalid="ignore", over="ignore"):
        bad = ~np.isfinite(ts) | ~np.isfinite(dur)
        bad |= (np.abs(ts * 1000.0 + base) >= MAX_NS) | (np.abs((ts + np.maximum(dur, 0.0)) * 1000.0 + base) >= MAX_NS)
    neg = dur < 0
    any_bad = bool(bad.any())
    n_neg = int(np.count_nonzero(neg))
    if any_bad or n_neg:
        dur = np.where(neg | bad, 0.0, dur)
        ts = np.where(bad, 0.0, ts)
    start = to_ns(ts) + base
    end = start + to_ns(dur)
    return start, end, (bad if any_bad else None), n_neg


def flow_ns(ts: np.ndarray, base: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Flow halves' times on the int64 ns clock, and the unusable ones (None when there are none)."""
    fast = _times_ns(ts, None, base)
    if fast is not None:
        return fast[0], fast[2]
    return flow_ns_numpy(ts, base)


def flow_ns_numpy(ts: np.ndarray, base: int) -> tuple[np.ndarray, np.ndarray | None]:
    """`flow_ns` in numpy (the fallback, and what the kernel is tested against)."""
    with np.errstate(invalid="ignore", over="ignore"):
        bad = ~np.isfinite(ts) | (np.abs(ts * 1000.0 + base) >= MAX_NS)
    if bad.any():
        return to_ns(np.where(bad, 0.0, ts)) + base, bad
    return to_ns(ts) + base, None


def _times_ns(ts: np.ndarray, dur: np.ndarray | None, base: int) -> tuple[Any, ...] | None:
    """`interval_ns` (or `flow_ns`: dur None) by the compiled kernel: (start, end, bad or None, negative
    durations); None where it is not built, the values are not float64 or it declines (a value beyond int64)."""
    fast = kernel()
    if fast is None or ts.dtype != np.float64 or (dur is not None and dur.dtype != np.float64):
        return None
    if not 0 <= base < MAX_NS:
        return None
    n = len(ts)
    start = np.empty(n, np.int64)
    end = np.empty(n, np.int64) if dur is not None else None
    bad = np.empty(n, np.bool_)
    got = fast.times_ns(
        np.ascontiguousarray(ts), None if dur is None else np.ascontiguousarray(dur), base, float(MAX_NS),
        start, end, bad.view(np.uint8),
    )
    if got is None:
        return None
    n_bad, n_neg = got
    return start, end, (bad if n_bad else None), n_neg


class IdMap:
    """Maps int-or-string pids/tids to ints: strings get stable negative ids."""

    def __init__(self) -> None:
        self.strings: dict[str, int] = {}

    def __call__(self, values: list[Any]) -> np.ndarray:
        try:
            return np.fromiter(values, np.int64, count=len(values))
        except (TypeError, ValueError, OverflowError):
            # few distinct pids/tids: convert each distinct value once, then C-level lookups per event
            # (dict.fromkeys keeps first-occurrence order, so string ids are numbered as before)
            table = {v: self.one(v) for v in dict.fromkeys(values)}
            return np.fromiter(map(table.__getitem__, values), np.int64, count=len(values))

    def one(self, v: Any) -> int:
        if isinstance(v, int) and not isinstance(v, bool):
            return v if -(2**62) < v < 2**62 else hash(v) % (2**62)
        s = str(v)
        try:
            return int(s)
        except ValueError:
            pass
        k = self.strings.get(s)
        if k is None:
            k = self.strings[s] = -1000 - len(self.strings)
        return k

    def label(self, v: int) -> str | None:
        for s, k in self.strings.items():
            if k == v:
                return s
        return None


class Part:
    """Columns of one chunk of decoded events (no builder state touched: interning happens at merge time).

    String columns are kept as (first-occurrence uniques, local codes), pid/tid as int64 arrays or, when a
    value is not an int, the plain values; merging the parts in order reproduces exactly what one pass over
    all events gives (same interning order, same whole-column conversion rules)."""

    __slots__ = ("be_events", "flows", "linking", "m_events", "n", "n_be", "n_m", "n_sft", "n_x", "x")


class XCols:
    """Interval events' columns: times already on the ns clock of `base` (`interval_ns`); pid and tid as the
    piece's distinct (category, pid, tid) combinations (`Combos`), which become lanes at merge time."""

    __slots__ = ("args", "bad", "base", "cat", "combos", "end", "kinds", "links", "m", "n_neg", "name", "start")


class Combos:
    """A piece's distinct (category, pid, tid) combinations and each event's among them.

    `pids`/`tids`: the piece's distinct values, as a sorted int64 array when all are ints, else a list in
    first-occurrence order (string pids); `cat`, `pid`, `tid`: per combination, the local category code and the
    index into `pids`/`tids`, combinations sorted by (category code, pid index, tid index); `code`: per event."""

    __slots__ = ("cat", "code", "pid", "pids", "tid", "tids")

    def column(self, which: str) -> Any:
        """The per-event pid or tid column in `_ids_part`'s form (int64 array, or (uniques, int32 codes))."""
        values, index = (self.pids, self.pid) if which == "pid" else (self.tids, self.tid)
        per_event = index[self.code]
        if isinstance(values, np.ndarray):
            return values[per_event]
        return values, per_event.astype(np.int32)


def _value_codes(col: Any) -> tuple[Any, np.ndarray]:
    """(distinct values, code per event) of an `_ids_part` column: sorted when all ints."""
    if isinstance(col, np.ndarray):
        return dense_codes(col)
    return col


def combos_of(cat_codes: np.ndarray, pid: Any, tid: Any, n_cats: int) -> Combos:
    c = Combos()
    c.pids, pc = _value_codes(pid)
    c.tids, tc = _value_codes(tid)
    np_, nt = len(c.pids), len(c.tids)
    packed = (cat_codes.astype(np.int64) * np_ + pc) * nt + tc
    space = n_cats * np_ * nt
    if space <= 4 * len(packed) + 4096:  # a table of the combinations (few): no sort
        present = np.zeros(space, bool)
        present[packed] = True
        ukey = np.flatnonzero(present)
        rank = np.cumsum(present) - 1
        code = rank[packed]
    else:
        ukey, code = dense_codes(packed)
    c.code = code.astype(np.uint16) if len(ukey) <= 1 << 16 else code
    c.cat = ukey // (np_ * nt)
    c.pid = (ukey // nt) % np_
    c.tid = ukey % nt
    return c


class FCols:
    __slots__ = ("bad", "base", "cat", "keys", "n", "ph", "pid", "start", "tid")


LINKING_CATS = frozenset(C.RUNTIME | C.DEVICE_TYPED | {C.PRIVATEUSE1_DISPATCH, C.PRIVATEUSE1_DRIVER})
"""Categories of the rows that link to an op (runtime calls, device rows): a trace without any needs no link ids
(analysis/links.py reads External id / correlation only to link such rows)."""

NOT_PARSED = "not parsed"
"""`XCols.links` of a piece whose link ids were left in the args (parsed on first use: `Profile.ext`)."""



def _ids_part(values: list[Any]) -> Any:
    """int64 array, or (first-occurrence uniques, codes) when some value is not an int."""
    try:
        return np.fromiter(values, np.int64, count=len(values))
    except (TypeError, ValueError, OverflowError):
        return _strings_part(values)


_MIXED: set[Any] = set()
"""Fields (their getters) seen with a non-int value in this process: read into a list first from then on."""


def _ids_of(evs: list[Ev], get: Callable[[Ev], Any]) -> Any:
    """`_ids_part` of one field of `evs`. Straight into an array while every value seen was an int; once a piece
    had a string (some traces mix string pids into every piece), the values are listed first so that a failed
    conversion does not read the events twice."""
    if get not in _MIXED:
        try:
            return np.fromiter(map(get, evs), np.int64, count=len(evs))
        except (TypeError, ValueError, OverflowError):
            _MIXED.add(get)
    return _ids_part(list(map(get, evs)))


def _strings_part(values: Any, count: int | None = None) -> tuple[list[str], np.ndarray]:
    """(first-occurrence uniques, int32 codes) of a string column: one dict pass (each value's first position),
    then the positions turned into dense codes with numpy."""
    m = len(values) if count is None else count
    table: dict[Any, int] = {}
    pos = np.fromiter(map(table.setdefault, values, range(m)), np.int64, count=m)
    return list(table), _dense(pos, np.fromiter(table.values(), np.int64, count=len(table)))


def _dense(pos: np.ndarray, firsts: np.ndarray | None = None) -> np.ndarray:
    """int32 codes from each value's first position (`pos`; `firsts`: the first positions, in order; else found
    where a value is at its own first position)."""
    if firsts is None:
        firsts = np.flatnonzero(pos == np.arange(len(pos)))
    dense = np.empty(len(pos), np.int32)
    dense[firsts] = np.arange(len(firsts), dtype=np.int32)
    return dense[pos]


def _own_args(evs: list[Ev]) -> list[Ev]:
    """Events kept past their chunk: their raw args copied out of the chunk's buffer."""
    for ev in evs:
        if ev.args:  # (an empty one is the shared `NO_ARGS`, which re-encoding leaves out)
            ev.args = msgspec.Raw(bytes(ev.args))
    return evs


def x_cols(sel: list[Ev], sel_ph: np.ndarray, links: bool | None = True, base: int = 0) -> XCols:
    """Columns of interval events, times on the ns clock of `base`. `links`: parse their link ids now (False:
    `links` is `NOT_PARSED`; None: only when some event is of a category that links, `LINKING_CATS`)."""
    m = len(sel)
    x = XCols()
    x.m = m
    x.base = base
    x.start, x.end, x.bad, x.n_neg = interval_ns(
        np.fromiter(map(_TS, sel), np.float64, count=m), np.fromiter(map(_DUR, sel), np.float64, count=m), base
    )
    x.kinds = _kinds(sel_ph)
    pid = _ids_of(sel, _PID)
    tid = _ids_of(sel, _TID)
    x.cat = _strings_part(map(_CAT, sel), m)
    x.combos = combos_of(x.cat[1], pid, tid, len(x.cat[0]))
    del pid, tid
    x.name = _strings_part(map(_NAME, sel), m)
    args = list(map(_ARGS, sel))
    x.args = ArgsStore.from_raw(args)
    if links is None:
        links = not LINKING_CATS.isdisjoint(x.cat[0])
    x.links = piece_links(x.args, lambda: args) if links else NOT_PARSED
    return x


def _kinds(sel_ph: np.ndarray) -> np.ndarray:
    kinds = np.zeros(len(sel_ph), np.int8)
    kinds[(sel_ph == PH["i"]) | (sel_ph == PH["I"])] = EventKind.INSTANT
    return kinds


def _f_cols(flows: list[Ev], fph: np.ndarray, base: int) -> FCols:
    nf = len(flows)
    f = FCols()
    f.n = nf
    f.base = base
    f.start, f.bad = flow_ns(np.fromiter(map(_TS, flows), np.float64, count=nf), base)
    f.pid = _ids_of(flows, _PID)
    f.tid = _ids_of(flows, _TID)
    try:  # fast path: int ids (what to_id gives for them, vectorised; per value, so per chunk is exact)
        keys = np.fromiter(map(_ID, flows), np.int64, count=nf)
        keys[(keys <= -(2**62)) | (keys >= 2**62)] = NO_ID
    except (TypeError, ValueError, OverflowError):
        ids = list(map(_ID, flows))
        id_table = {v: to_id(v) for v in dict.fromkeys(ids)}
        keys = np.fromiter(map(id_table.__getitem__, ids), np.int64, count=nf)
    f.keys = keys
    f.cat = _strings_part(map(_CAT, flows), nf)
    f.ph = fph
    return f


def _phases(events: list[Ev]) -> np.ndarray:
    """Phase codes (`PH`) as an int8 array (schema.phase_codes)."""
    return np.frombuffer(phase_codes(events), np.int8)


def part_of(events: list[Ev], links: bool = False, base: int = 0) -> Part:
    """One piece's columns, times on the ns clock of `base` (`clock_base`). Link ids are parsed when `links`
    (the trace is known to have rows that link) or when the piece itself has such rows (`Part.linking`);
    otherwise they stay in the args (`NOT_PARSED`)."""
    n = len(events)
    ph = _phases(events)
    p = Part()
    p.n = n
    is_m = ph == PH["M"]
    p.m_events = _own_args([events[k] for k in np.nonzero(is_m)[0].tolist()]) if is_m.any() else []
    p.n_m = len(p.m_events)
    keep_mask = (ph == PH["X"]) | (ph == PH["i"]) | (ph == PH["I"])
    p.n_x = n_x = int(np.count_nonzero(keep_mask))
    sel = events if n_x == n else list(compress(events, keep_mask.tolist()))
    sel_ph = ph if n_x == n else ph[keep_mask]
    p.x = x_cols(sel, sel_ph, links=True if links else None, base=base)
    p.linking = not LINKING_CATS.isdisjoint(p.x.cat[0])
    del sel
    be = (ph == PH["B"]) | (ph == PH["E"])
    p.be_events = _own_args([events[k] for k in np.nonzero(be)[0].tolist()]) if be.any() else []
    p.n_be = len(p.be_events)
    fmask = (ph == PH["s"]) | (ph == PH["f"])
    p.n_sft = int(np.count_nonzero(fmask)) + int(np.count_nonzero(ph == PH["t"]))
    if p.n_sft > 0 and fmask.any():
        p.flows = _f_cols(list(compress(events, fmask.tolist())), ph[fmask], base)
    else:
        p.flows = None
    return p


def merge_ids(parts: list[Any], keep: np.ndarray | None, idmap: IdMap) -> np.ndarray:
    """One pid/tid column from per-part values, as `idmap` over the whole (kept) column would give it:
    all ints as they are, else every distinct value through `idmap.one` in first-occurrence order."""
    if all(isinstance(v, np.ndarray) for v in parts):
        col = np.concatenate(parts) if parts else np.empty(0, np.int64)
        return col if keep is None else col[keep]
    if keep is not None:
        values: list[Any] = []
        for v in parts:
            values.extend(v.tolist() if isinstance(v, np.ndarray) else map(v[0].__getitem__, v[1].tolist()))
        return idmap(list(compress(values, keep.tolist())))
    table: dict[Any, int] = {}
    out = []
    for v in parts:
        if isinstance(v, np.ndarray):
            u, first, inv = np.unique(v, return_index=True, return_inverse=True)
            order = np.argsort(first, kind="stable")
            rank = np.empty(len(u), np.int64)
            rank[order] = np.arange(len(u))
            uniq, codes = u[order].tolist(), rank[inv.reshape(-1)]
        else:
            uniq, codes = v
        for x in uniq:
            if x not in table:
                table[x] = idmap.one(x)
        out.append(np.fromiter(map(table.__getitem__, uniq), np.int64, count=len(uniq))[codes])
    return np.concatenate(out) if out else np.empty(0, np.int64)


def merge_strings(parts: list[tuple[list[str], np.ndarray]], keep: np.ndarray | None, intern: Any, dtype: Any) -> np.ndarray:
    """Interned ids of a string column from per-part (uniques, codes), interned in first-occurrence order."""
    if keep is None:  # each part's ids written in place (no per-part copies joined afterwards)
        out = np.empty(sum(len(codes) for _, codes in parts), dtype)
        at = 0
        for uniq, codes in parts:
            table = np.fromiter(map(intern, uniq), dtype, count=len(uniq))
            np.take(table, codes, out=out[at : at + len(codes)], mode="clip")  # (codes are valid: no checked copy)
            at += len(codes)
        return out
    values: list[str] = []
    for uniq, codes in parts:
        values.extend(map(uniq.__getitem__, codes.tolist()))
    return _intern_column(list(compress(values, keep.tolist())), intern, dtype)


def _intern_column(values: list[str], intern: Any, dtype: Any) -> np.ndarray:
    """Interned ids of a string column: `intern` runs once per distinct value, in first-occurrence order."""
    table = {v: intern(v) for v in dict.fromkeys(values)}
    return np.fromiter(map(table.__getitem__, values), dtype, count=len(values))
