"""Decoded events → numpy columns, per chunk (`Part`), and the rules that turn them into profile columns.

A `Part` touches no builder state (names are interned at merge time), so chunks can be decoded in any order or
in another process; merging the parts in order (`merge_ids`, `merge_strings`) gives exactly what one pass over
all events would. Also: µs → ns, int-or-string pid/tid ids, and the link-id columns (External id, correlation)."""

from __future__ import annotations

from itertools import compress, repeat
from operator import attrgetter, is_not
from typing import Any

import msgspec
import numpy as np

from trntui.loaders.kineto.schema import ABSENT, PH, Ev, LinkArgs, link_one_decoder
from trntui.model.args import ArgsStore
from trntui.model.profile import NO_ID, EventKind, ProfileMeta


MAX_NS = 2**62
"""Timestamps (absolute ns) beyond this are corrupted values, not clocks (year 2116); such events are skipped."""


def to_ns(values: np.ndarray) -> np.ndarray:
    """µs floats → int64 ns, exact for integral µs (epoch ints) and rounded to the ns otherwise."""
    whole = np.floor(values)
    return whole.astype(np.int64) * 1000 + np.rint((values - whole) * 1000.0).astype(np.int64)


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


def to_id(v: Any) -> int:
    if v is None or isinstance(v, bool):
        return NO_ID
    if isinstance(v, int):
        return v if -(2**62) < v < 2**62 else NO_ID
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        return NO_ID
    if not np.isfinite(f) or abs(f) >= 2**62:
        return NO_ID
    return int(f)


class Part:
    """Columns of one chunk of decoded events (no builder state touched: interning happens at merge time).

    String columns are kept as (first-occurrence uniques, local codes), pid/tid as int64 arrays or, when a
    value is not an int, the plain values; merging the parts in order reproduces exactly what one pass over
    all events gives (same interning order, same whole-column conversion rules)."""

    __slots__ = ("be_events", "flows", "m_events", "n", "n_be", "n_m", "n_sft", "n_x", "x")


class XCols:
    __slots__ = ("args", "cat", "dur", "kinds", "links", "m", "name", "pid", "tid", "ts")


class FCols:
    __slots__ = ("cat", "keys", "n", "ph", "pid", "tid", "ts")


def _ids_part(values: list[Any]) -> Any:
    """int64 array, or (first-occurrence uniques, codes) when some value is not an int."""
    try:
        return np.fromiter(values, np.int64, count=len(values))
    except (TypeError, ValueError, OverflowError):
        return _strings_part(values)


def _strings_part(values: list[str]) -> tuple[list[str], np.ndarray]:
    table = {v: k for k, v in enumerate(dict.fromkeys(values))}
    return list(table), np.fromiter(map(table.__getitem__, values), np.int32, count=len(values))


def _own_args(evs: list[Ev]) -> list[Ev]:
    """Events kept past their chunk: their raw args copied out of the chunk's buffer."""
    for ev in evs:
        if ev.args is not None:
            ev.args = msgspec.Raw(bytes(ev.args))
    return evs


def x_cols(sel: list[Ev], sel_ph: np.ndarray) -> XCols:
    m = len(sel)
    x = XCols()
    x.m = m
    x.ts = np.fromiter(map(attrgetter("ts"), sel), np.float64, count=m)
    x.dur = np.fromiter(map(attrgetter("dur"), sel), np.float64, count=m)
    x.kinds = np.zeros(m, np.int8)
    x.kinds[(sel_ph == PH["i"]) | (sel_ph == PH["I"])] = EventKind.INSTANT
    x.pid = _ids_part(list(map(attrgetter("pid"), sel)))
    x.tid = _ids_part(list(map(attrgetter("tid"), sel)))
    x.cat = _strings_part(list(map(attrgetter("cat"), sel)))
    x.name = _strings_part(list(map(attrgetter("name"), sel)))
    args = list(map(attrgetter("args"), sel))
    x.links = link_columns(args, None, fast_only=True)
    x.args = ArgsStore.from_raw(args)
    return x


def _f_cols(flows: list[Ev], fph: np.ndarray) -> FCols:
    nf = len(flows)
    f = FCols()
    f.n = nf
    f.ts = np.fromiter(map(attrgetter("ts"), flows), np.float64, count=nf)
    f.pid = _ids_part(list(map(attrgetter("pid"), flows)))
    f.tid = _ids_part(list(map(attrgetter("tid"), flows)))
    ids = list(map(attrgetter("id"), flows))
    try:  # fast path: int ids (what to_id gives for them, vectorised; per value, so per chunk is exact)
        keys = np.fromiter(ids, np.int64, count=nf)
        keys[(keys <= -(2**62)) | (keys >= 2**62)] = NO_ID
    except (TypeError, ValueError, OverflowError):
        id_table = {v: to_id(v) for v in dict.fromkeys(ids)}
        keys = np.fromiter(map(id_table.__getitem__, ids), np.int64, count=nf)
    f.keys = keys
    f.cat = _strings_part(list(map(attrgetter("cat"), flows)))
    f.ph = fph
    return f


def part_of(events: list[Ev]) -> Part:
    n = len(events)
    ph = np.fromiter(map(PH.__getitem__, map(attrgetter("ph"), events)), np.int8, count=n)
    p = Part()
    p.n = n
    is_m = ph == PH["M"]
    p.m_events = _own_args([events[k] for k in np.nonzero(is_m)[0].tolist()])
    p.n_m = len(p.m_events)
    keep = np.nonzero((ph == PH["X"]) | (ph == PH["i"]) | (ph == PH["I"]))[0]
    p.n_x = len(keep)
    sel = events if len(keep) == n else [events[k] for k in keep.tolist()]
    p.x = x_cols(sel, ph[keep])
    del sel
    p.be_events = _own_args([events[k] for k in np.nonzero((ph == PH["B"]) | (ph == PH["E"]))[0].tolist()])
    p.n_be = len(p.be_events)
    p.n_sft = int(((ph == PH["s"]) | (ph == PH["f"]) | (ph == PH["t"])).sum())
    flow_idx = np.nonzero((ph == PH["s"]) | (ph == PH["f"]))[0]
    p.flows = _f_cols([events[k] for k in flow_idx.tolist()], ph[flow_idx]) if len(flow_idx) else None
    return p


def link_columns(args: list[Any], meta: ProfileMeta | None, *, fast_only: bool = False) -> Any:
    """External id and correlation per event, decoded from the raw args.

    Decoded in chunks (one decode call per event, cheaper than joining them into one array) so that only a
    chunk of decoded objects is alive at a time; the rare files with non-int ids take the exact per-value path.
    """
    n = len(args)
    ext = np.full(n, NO_ID, np.int64)
    corr = np.full(n, NO_ID, np.int64)
    mask = list(map(is_not, args, repeat(None)))
    present = list(compress(range(n), mask))
    if not present:
        return ext, corr
    idx = np.asarray(present, np.int64)
    m = len(idx)
    raws = list(compress(args, mask))
    e_out = np.empty(m, np.int64)
    c_out = np.empty(m, np.int64)
    fast_e = fast_c = True
    try:
        for a in range(0, m, _LINK_CHUNK):
            part = list(map(link_one_decoder.decode, raws[a : a + _LINK_CHUNK]))
            k = len(part)
            if fast_e:
                try:  # every value an int (or absent)
                    e = np.fromiter(map(attrgetter("ext"), part), np.int64, count=k)
                    legacy = np.fromiter(map(attrgetter("ext_legacy"), part), np.int64, count=k)
                    e = np.where(e == ABSENT, legacy, e)
                    e[e == ABSENT] = NO_ID
                    e_out[a : a + k] = e
                except (TypeError, ValueError, OverflowError):
                    fast_e = False
            if fast_c:
                try:
                    c = np.fromiter(map(attrgetter("corr"), part), np.int64, count=k)
                    c[c == ABSENT] = NO_ID
                    c_out[a : a + k] = c
                except (TypeError, ValueError, OverflowError):
                    fast_c = False
            if not fast_e and not fast_c:
                break
    except (msgspec.ValidationError, msgspec.DecodeError):
        fast_e = fast_c = False
    if fast_only and not (fast_e and fast_c):
        return None  # the caller applies the exact rules to the whole column
    decoded: list[LinkArgs] = []
    if not (fast_e and fast_c):
        try:
            decoded = list(map(link_one_decoder.decode, raws))
        except (msgspec.ValidationError, msgspec.DecodeError):
            for r in raws:
                try:
                    decoded.append(link_one_decoder.decode(r))
                except (msgspec.ValidationError, msgspec.DecodeError):
                    decoded.append(LinkArgs())
    del raws
    if fast_e:
        ext[idx] = e_out
    else:  # a value that is not an int somewhere: the exact per-value rules, for the whole column
        ext_vals = [d.ext if d.ext is not None and not _is_absent(d.ext) else d.ext_legacy for d in decoded]
        ext[idx] = _exact_ids(ext_vals)
    if fast_c:
        corr[idx] = c_out
    else:
        corr[idx] = _exact_ids(list(map(attrgetter("corr"), decoded)))
    return ext, corr


def _exact_ids(values: list[Any]) -> np.ndarray:
    """Absent/null → -1; all ints (or int-like) → as is; otherwise every value through `to_id`."""
    try:
        return np.fromiter((NO_ID if v is None or _is_absent(v) else v for v in values), np.int64, count=len(values))
    except (TypeError, ValueError, OverflowError):
        return np.asarray([NO_ID if v is None or _is_absent(v) else to_id(v) for v in values], np.int64)


_LINK_CHUNK = 65536


def _is_absent(v: Any) -> bool:
    return type(v) is int and v == ABSENT


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
    if keep is None:
        out = [np.fromiter(map(intern, uniq), dtype, count=len(uniq))[codes] for uniq, codes in parts]
        return np.concatenate(out) if out else np.empty(0, dtype)
    values: list[str] = []
    for uniq, codes in parts:
        values.extend(map(uniq.__getitem__, codes.tolist()))
    return _intern_column(list(compress(values, keep.tolist())), intern, dtype)


def _intern_column(values: list[str], intern: Any, dtype: Any) -> np.ndarray:
    """Interned ids of a string column: `intern` runs once per distinct value, in first-occurrence order."""
    table = {v: intern(v) for v in dict.fromkeys(values)}
    return np.fromiter(map(table.__getitem__, values), dtype, count=len(values))
