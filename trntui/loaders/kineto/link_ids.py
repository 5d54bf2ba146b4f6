"""The link-id columns of Kineto events: External id and correlation per event, from the raw args.

`piece_links` reads them straight from a piece's args bytes with numpy where that is unambiguous (`_scan_links`)
and decodes the other events with msgspec (`link_columns`, the exact rules, in chunks); `links_of_args` is the
profile's lazy parse; `to_id` the int-or-string id rule (also of pid/tid columns, trntui/loaders/kineto/columns.py).
"""

from __future__ import annotations

from itertools import compress, repeat
from operator import attrgetter, is_not
from typing import Any, Callable

import msgspec
import numpy as np

from trntui.loaders.kineto.schema import ABSENT, LinkArgs, link_one_decoder
from trntui.model.args import ArgsStore
from trntui.model.profile import NO_ID, ProfileMeta


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


def piece_links(store: ArgsStore, args_of: Callable[[], list[Any]]) -> Any:
    """A piece's link columns (`link_columns(..., fast_only=True)`): read from the args bytes where that is
    unambiguous (`_scan_links`), decoded with msgspec for the other events (`args_of()`: the raw args)."""
    scan = _scan_links(store)
    if scan is None:
        return link_columns(args_of(), None, fast_only=True, lengths=store.ends - store.starts)
    ext, corr, rest = scan
    ext[ext == ABSENT] = NO_ID
    corr[corr == ABSENT] = NO_ID
    if rest.any():
        idx = np.flatnonzero(rest)
        args = args_of()
        sub = link_columns([args[i] for i in idx.tolist()], None, fast_only=True)
        if sub is None:
            return None
        ext[idx], corr[idx] = sub
    return ext, corr


_LINK_KEYS = (b'"External id"', b'"external id"', b'"correlation"')
_QUOTE, _OPEN, _BACKSLASH, _COLON, _MINUS = 34, 123, 92, 58, 45
_WINDOW = 32
"""Bytes read after a key for `: value` (whitespace, colon, whitespace, up to 18 digits and their end)."""


def _scan_links(store: ArgsStore) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The link ids of a piece read straight from its args bytes with numpy, for the events whose args make that
    unambiguous; (ext, corr, rest) where `rest` marks the events to decode with msgspec instead. None when some
    event's args are not an object (the caller's msgspec path decides what that means).

    An event is read here when its args hold one `{` (no nested object, so a key found is a top-level key: a
    `"key"` followed by `:` cannot be inside a string, whose quotes are escaped), no backslash (no escaped key
    names or quotes), each key at most once, and each value a plain integer of up to 18 digits; anything else
    (floats, strings, nulls, duplicates, nested objects) goes to `rest`. Results equal `LinkArgs` decoded per
    event (`link_columns`), as the tests check on traces and generated args."""
    blob = store.blob
    if not isinstance(blob, (bytes, bytearray, np.ndarray)):  # (an ndarray: args bytes read back as an array)
        return None
    starts, ends = store.starts, store.ends
    n = len(starts)
    has = ends > starts
    arr = np.frombuffer(blob, np.uint8)
    if len(arr) == 0:
        return np.full(n, ABSENT, np.int64), np.full(n, ABSENT, np.int64), np.zeros(n, bool)
    if not (arr[starts[has]] == _OPEN).all():
        return None
    # events whose args hold a nested object or a backslash: not read here (usually there is none: one `{` per
    # event and no backslash at all, checked by two counts)
    rest = np.zeros(n, bool)
    if np.count_nonzero(arr == _OPEN) != np.count_nonzero(has) or np.count_nonzero(arr == _BACKSLASH):
        marks = np.flatnonzero((arr == _OPEN) | (arr == _BACKSLASH))
        owner = np.searchsorted(starts, marks, side="right") - 1
        rest |= np.bincount(owner, minlength=n) > 1  # the object's own `{` is one
        rest |= np.bincount(owner[arr[marks] == _BACKSLASH], minlength=n) > 0
    # keys: a quote followed by the key's letters and a quote (all three keys are 13 bytes long), compared as two
    # overlapping 8-byte words read at every candidate quote (an unaligned uint64 view of the bytes)
    size = len(arr)
    if size <= 13:
        return None
    quotes = np.flatnonzero((arr[: size - 13] == _QUOTE) & (arr[12 : size - 1] == _QUOTE))  # "..........."
    first = arr[quotes + 1]
    quotes = quotes[(first == 69) | (first == 101) | (first == 99)]  # "E/e/c"
    words = np.ndarray((size - 7,), "<u8", blob, 0, (1,))
    head, tail = words[quotes], words[quotes + 5]
    out = []
    for key in _LINK_KEYS:
        k0, k5 = np.frombuffer(key[:8], "<u8")[0], np.frombuffer(key[5:13], "<u8")[0]
        at = quotes[(head == k0) & (tail == k5)]
        values = np.full(n, ABSENT, np.int64)
        if len(at):
            ev = np.searchsorted(starts, at, side="right") - 1
            dup = np.bincount(ev, minlength=n) > 1
            val, ok = _int_values(arr, at + 13)
            rest |= dup
            bad = ev[~ok]
            rest[bad] = True
            good = ok & ~dup[ev]
            values[ev[good]] = val[good]
        out.append(values)
    ext, legacy, corr = out
    ext = np.where(ext == ABSENT, legacy, ext)
    return ext, corr, rest


_U = np.uint64
_POW10 = 10 ** np.arange(19, dtype=np.int64)
_DIGIT_XOR, _LOW7, _PLUS, _HIGH = _U(0x3030303030303030), _U(0x7F7F7F7F7F7F7F7F), _U(0x7676767676767676), _U(0x8080808080808080)


def _nondigits(x: np.ndarray) -> np.ndarray:
    """Per byte of words already XORed with '0' (digits are then 0-9): the high bit set where the byte is not a digit
    (no carries between bytes: the high bits are cleared before adding)."""
    return (((x & _LOW7) + _PLUS) | x) & _HIGH


def _first_set_byte(m: np.ndarray) -> np.ndarray:
    """Index (0-7) of the lowest byte with its high bit set in `m` (8 where none is): its trailing zero bits
    (the bits below the lowest set one, counted) over 8; none set gives 64 bits, so 8."""
    return (np.bitwise_count((m & (~m + _U(1))) - _U(1)) >> 3).astype(np.int64)


def _eight_digits(x: np.ndarray, count: np.ndarray) -> np.ndarray:
    """The number written by the first `count` (0-8) digit bytes of each word (little-endian, digits as 0-9): the
    digits are shifted to the top bytes (zeros, i.e. leading zero digits, below) and combined pairwise."""
    v = np.where(count > 0, x << (_U(8) * (_U(8) - count.astype(np.uint64))), _U(0))
    v = ((v & _U(0x0F0F0F0F0F0F0F0F)) * _U(2561)) >> _U(8)
    v = ((v & _U(0x00FF00FF00FF00FF)) * _U(6553601)) >> _U(16)
    return (((v & _U(0x0000FFFF0000FFFF)) * _U(42949672960001)) >> _U(32)).astype(np.int64)


def _int_values(arr: np.ndarray, after: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For keys ending at `after`: the integer after `:` or `: `, and whether the value is a plain integer of up to
    16 digits followed by `,`, `}` or whitespace (else, e.g. other spacing, the event is decoded by msgspec). The
    digits are read eight at a time from 8-byte words (SWAR)."""
    size = len(arr)
    ok = after + 2 < size
    at = np.minimum(after, size - 3)
    ok &= arr[at] == _COLON
    at = at + 1 + (arr[at + 1] == 32)  # `: ` as Kineto writes it, or `:`
    neg = arr[at] == _MINUS
    d0 = at + neg
    ok &= d0 + 24 <= size  # (two words and the byte after them; values at the very end: msgspec)
    d0 = np.minimum(d0, size - 24)
    words = np.ndarray((size - 7,), "<u8", arr, 0, (1,))
    x1 = words[d0] ^ _DIGIT_XOR
    x2 = words[d0 + 8] ^ _DIGIT_XOR
    k1 = _first_set_byte(_nondigits(x1))
    k2 = _first_set_byte(_nondigits(x2))
    length = np.where(k1 < 8, k1, 8 + k2)
    ok &= (length >= 1) & (length <= 16)
    end = arr[d0 + np.minimum(length, 16)]
    ok &= (end == 44) | (end == 125) | (end == 32) | (end == 9) | (end == 10) | (end == 13)
    val = _eight_digits(x1, np.minimum(length, 8))
    long = length > 8
    if long.any():
        rest = np.maximum(length - 8, 0)
        val = np.where(long, val * _POW10[rest] + _eight_digits(x2, rest), val)
    return np.where(neg, -val, val), ok


def link_columns(
    args: list[Any], meta: ProfileMeta | None, *, fast_only: bool = False, lengths: np.ndarray | None = None
) -> Any:
    """External id and correlation per event, decoded from the raw args (None or empty: no args).

    Decoded in chunks (one decode call per event, cheaper than joining them into one array) so that only a
    chunk of decoded objects is alive at a time; the rare files with non-int ids take the exact per-value path.
    `lengths`: the args' lengths, when the caller has them (then no value is None).
    """
    n = len(args)
    ext = np.full(n, NO_ID, np.int64)
    corr = np.full(n, NO_ID, np.int64)
    if lengths is None:
        mask = list(map(is_not, args, repeat(None))) if None in args else None
        if mask is not None or not all(map(len, args)):
            mask = [a is not None and len(a) > 0 for a in args]
    else:
        has = lengths > 0
        mask = None if has.all() else has.tolist()
    if mask is not None:
        present = list(compress(range(n), mask))
        if not present:
            return ext, corr
        idx: Any = np.asarray(present, np.int64)
        raws = list(compress(args, mask))
    else:  # every event has args
        idx = slice(None)
        raws = args
    m = len(raws)
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


def links_of_args(args: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(External id, correlation) columns of raw args (the exact rules): a profile's link columns parsed on first
    use (`ProfileBuilder.add_events(links_from_args=...)`)."""
    return link_columns(args, None)


def _exact_ids(values: list[Any]) -> np.ndarray:
    """Absent/null → -1; all ints (or int-like) → as is; otherwise every value through `to_id`."""
    try:
        return np.fromiter((NO_ID if v is None or _is_absent(v) else v for v in values), np.int64, count=len(values))
    except (TypeError, ValueError, OverflowError):
        return np.asarray([NO_ID if v is None or _is_absent(v) else to_id(v) for v in values], np.int64)


_LINK_CHUNK = 65536


def _is_absent(v: Any) -> bool:
    return type(v) is int and v == ABSENT
