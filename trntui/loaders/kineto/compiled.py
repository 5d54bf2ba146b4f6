"""The compiled column builder (`_scan`, a C extension built by `pip install` where a compiler is available): a
piece of the event array → the same `Part` that `columns.part_of` builds from msgspec's `Ev` objects.

`_scan.scan(piece)` reads the piece's text once, writing each field straight into its column (no Python object
per event): phases, the kept (X/i/I) events' times, pids, tids, interned names and categories (first-occurrence
tables) and their args bytes joined into one blob; the flow halves' columns; the spans of the M/B/E events, which
are decoded here with msgspec (few, and the merge wants them as `Ev`). It returns None for anything it does not
handle exactly as msgspec would (a string pid, a number it cannot convert exactly, invalid UTF-8, deep nesting,
a duplicate field, a malformed piece...): that piece then takes the Python path, which gives its usual result
or error. So both paths give identical profiles (tests/test_compiled_parser.py compares them).

Which path is in use: parser.py."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from trntui.loaders.kineto.columns import (
    LINKING_CATS, Combos, FCols, Part, XCols, _kinds, _own_args, flow_ns, interval_ns,
)
from trntui.loaders.kineto.link_ids import link_columns
from trntui.loaders.kineto.schema import PH, list_decoder
from trntui.model.args import ArgsStore
from trntui.model.arrays import distinct
from trntui.model.profile import NO_ID

from trntui.loaders.kineto.chunks import scan_text  # (the compiled pass itself: `part_of_scan` reads its result)


def part_of_text(piece: Any, links: bool = False, base: int = 0) -> Part | None:
    """`part_of(list_decoder.decode(b"[" + piece + b"]"), links, base)` from the piece's text in one compiled pass;
    None when the piece needs the Python path (see the module's text)."""
    return part_of_scan(scan_text(piece), piece, links, base)


def part_of_scan(got: Any, piece: Any, links: bool = False, base: int = 0, args: Any = None, at: int = 0) -> Part | None:
    """The `Part` of a piece from `scan_text(piece)` (None: the piece needs the Python path), its link ids always
    read (`links`, which asks `columns.part_of` for them, is moot here: the scan has them). A scan that did not
    copy the args (`copy=False`) gave their ranges of the piece: the piece is bytes `at` on of the trace file that
    `args` (a `FileBlob`) reads, and the events' args are those ranges of the file."""
    if got is None:
        return None
    (n, ph_b, ts_b, dur_b, pid_b, tid_b, cat_b, name_b, as_b, ae_b, blob, cat_u, name_u,
     os_b, oe_b, fts_b, fpid_b, ftid_b, fid_b, fcat_b, fcat_u, pidk_b, tidk_b, fpidk_b, ftidk_b, id_u,
     combo_b, combos_b, pidu_b, tidu_b, ext_b, legacy_b, corr_b, lrest_b) = got
    ph = np.frombuffer(ph_b, np.int8)
    p = Part()
    p.n = n
    other: list[Any] = []
    if len(os_b):  # the M, B and E events, decoded with msgspec from their own text
        starts, ends = np.frombuffer(os_b, np.int64).tolist(), np.frombuffer(oe_b, np.int64).tolist()
        text = piece if isinstance(piece, bytes) else memoryview(piece)  # (slices of a view: no copy of the piece)
        try:
            other = list_decoder.decode(b"[" + b",".join([text[a:e] for a, e in zip(starts, ends)]) + b"]")
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return None
        codes = ph[(ph >= PH["B"]) & (ph <= PH["M"])]
        other_m = codes == PH["M"]
        p.m_events = _own_args([ev for ev, m in zip(other, other_m.tolist()) if m])
        p.be_events = _own_args([ev for ev, m in zip(other, other_m.tolist()) if not m])
    else:
        p.m_events, p.be_events = [], []
    p.n_m, p.n_be = len(p.m_events), len(p.be_events)
    keep = (ph == PH["X"]) | (ph == PH["i"]) | (ph == PH["I"])
    x = p.x = XCols()
    m = x.m = p.n_x = len(ts_b) // 8
    x.base = base
    x.start, x.end, x.bad, x.n_neg = interval_ns(np.frombuffer(ts_b, np.float64), np.frombuffer(dur_b, np.float64), base)
    x.kinds = _kinds(ph if m == n else ph[keep])
    x.cat = cat_u, np.frombuffer(cat_b, np.int32)
    x.combos = _combos(combo_b, combos_b, _firsts(pidu_b, id_u), _firsts(tidu_b, id_u))
    x.name = name_u, np.frombuffer(name_b, np.int32)
    if blob is None:  # (ranges of the piece: `at` on in the file)
        if args is None:
            raise ValueError("a scan that kept the args in the file needs the file to read them from")
        store = x.args = ArgsStore(args, np.frombuffer(as_b, np.int64) + at, np.frombuffer(ae_b, np.int64) + at)
    else:
        store = x.args = ArgsStore(blob, np.frombuffer(as_b, np.int64), np.frombuffer(ae_b, np.int64))
    linking = not LINKING_CATS.isdisjoint(cat_u)
    # the link ids come with the scan (its columns as they are, but for the few events it left to msgspec), so a
    # trace without rows that link has them too, at no cost (the Python path leaves them in the args until asked)
    x.links = _links(store, ext_b, corr_b, lrest_b)
    p.linking = linking
    fmask = (ph == PH["s"]) | (ph == PH["f"])
    nf = len(fts_b) // 8
    p.n_sft = nf + int(np.count_nonzero(ph == PH["t"]))
    if nf:
        f = p.flows = FCols()
        f.n = nf
        f.base = base
        f.start, f.bad = flow_ns(np.frombuffer(fts_b, np.float64), base)
        f.pid, f.tid = _ids(fpid_b, fpidk_b, id_u), _ids(ftid_b, ftidk_b, id_u)
        keys = np.frombuffer(fid_b, np.int64).copy()
        keys[(keys <= -(2**62)) | (keys >= 2**62)] = NO_ID
        f.keys = keys
        f.cat = fcat_u, np.frombuffer(fcat_b, np.int32)
        f.ph = ph[fmask]
    else:
        p.flows = None
    return p


def _ids(values_b: Any, strings_b: Any, strings: list[str]) -> Any:
    """A pid/tid column as `columns._ids_of` gives it: the int64 values when every value is an int or a string numpy
    converts (`int(s)`, in range), else (first-occurrence uniques, int32 codes) of the mixed values. `strings_b`: 1
    per event whose value is a string (its code into `strings` in `values_b`)."""
    values = np.frombuffer(values_b, np.int64)
    is_str = np.frombuffer(strings_b, np.bool_)
    if not is_str.any():
        return values
    try:
        table = np.fromiter(strings, np.int64, count=len(strings))  # numpy's conversion (int(s)) of each string
    except (TypeError, ValueError, OverflowError):
        table = None
    if table is not None:
        return np.where(is_str, table[np.where(is_str, values, 0)], values)
    keys = np.where(is_str, values + (-(2**63)), values)  # (as the scanner's keys: strings below any int)
    uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(uniq), np.int32)
    rank[order] = np.arange(len(uniq), dtype=np.int32)
    uniques = [strings[k - (-(2**63))] if k < _STRING_KEY else k for k in uniq[order].tolist()]
    return uniques, rank[inverse.reshape(-1)]


_STRING_KEY = -(10**18)
"""The scanner's keys of string values are below this (INT64_MIN + the string's code); ints are above."""


def _firsts(firsts_b: Any, strings: list[str]) -> tuple[Any, np.ndarray]:
    """A kept pid/tid column's distinct values as `columns._value_codes` has them, from the scanner's
    first-occurrence keys: (values, rank of each first-occurrence code among them). All ints, or strings that numpy
    converts (`int(s)`, as `_ids_part`): sorted distinct int64 values (`dense_codes`); else the mixed values in
    first-occurrence order (`_strings_part`: codes are the first-occurrence codes)."""
    keys = np.frombuffer(firsts_b, np.int64)
    is_str = keys < _STRING_KEY
    if is_str.any():
        values = [strings[k - (-(2**63))] if s else k for k, s in zip(keys.tolist(), is_str.tolist())]
        try:
            keys = np.fromiter(values, np.int64, count=len(values))
        except (TypeError, ValueError, OverflowError):
            return values, np.arange(len(values), dtype=np.int64)
    u = distinct(keys)  # (np.unique would import numpy.ma, ~5 ms, on its first call: model/arrays.py)
    return u, np.searchsorted(u, keys)


def _combos(combo_b: Any, combos_b: Any, pid: tuple[Any, np.ndarray], tid: tuple[Any, np.ndarray]) -> Combos:
    """`combos_of` from the scanner's first-occurrence codes of the pids, tids and (category, pid, tid)
    combinations: the few distinct values are sorted here, never the column (`combos_of`'s `dense_codes`), with the
    same result (the combinations sorted by (category code, pid index, tid index), each event's index among them)."""
    c = Combos()
    c.pids, prank = pid
    c.tids, trank = tid
    np_, nt = len(c.pids), len(c.tids)
    keys = np.frombuffer(combos_b, np.int64)
    mask = (1 << 21) - 1
    packed = ((keys >> 42) * np_ + prank[(keys >> 21) & mask]) * nt + trank[keys & mask]
    ukey, inverse = np.unique(packed, return_inverse=True)  # (numbers of combinations: few)
    code = inverse.reshape(-1)[np.frombuffer(combo_b, np.int32)]
    c.code = code.astype(np.uint16) if len(ukey) <= 1 << 16 else code
    c.cat = ukey // (np_ * nt)
    c.pid = (ukey // nt) % np_
    c.tid = ukey % nt
    return c


def _links(store: ArgsStore, ext_b: Any, corr_b: Any, rest_b: Any) -> Any:
    """`link_ids.piece_links` from the link ids the scanner read (top-level int keys; External id, else external id,
    else NO_ID, as _scan.c writes them); the events it left (`rest`: floats, strings, nulls, duplicates, escaped
    keys, args that are not an object) decoded with msgspec, with the same rules (None when one of them is not an
    int: the caller applies the exact rules to the whole column)."""
    ext, corr = np.frombuffer(ext_b, np.int64), np.frombuffer(corr_b, np.int64)
    rest = np.frombuffer(rest_b, np.bool_)
    if rest.any():
        ext, corr = ext.copy(), corr.copy()
        idx = np.flatnonzero(rest)
        blob, starts, ends = store.blob, store.starts, store.ends
        sub = link_columns([blob[starts[i] : ends[i]] for i in idx.tolist()], None, fast_only=True)
        if sub is None:
            return None
        ext[idx], corr[idx] = sub
    return ext, corr
