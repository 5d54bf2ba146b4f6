"""Serving a cache entry: every check an entry must pass before it is used (a real directory of this user's,
regular files, `.npy` headers that match their sizes, a bounded `meta.json`, CRC-32s, columns that fit
together), the profile and records read back, and the removal of an entry that fails them (`discard`, `clear`).
"""

from __future__ import annotations

import json
import os
import stat
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trntui.cache.keys import _COLUMNS, _FLOW_COLUMNS, _NAME, _open_regular, _stamp, Damaged, entry_dir, stamp
from trntui.model.args import ArgsStore
from trntui.model.profile import Flows, Lane, Profile, ProfileMeta


_MAX_META_BYTES = 1 << 30
"""A `meta.json` larger than this is not one this module wrote for any trace that fits in memory."""
_MAX_DEPTH = 64
"""Nesting allowed in the free-form JSON of an entry (trace metadata, record fields)."""
_DTYPES = frozenset("?bBhHiIlLqQefdg") | {"u1", "i1"}
"""Array element types an entry may hold (numbers and booleans: never objects, strings or records)."""


def load(files: Sequence[Path], directory: Path) -> tuple[Any, dict[str, dict[str, Any]]] | None:
    """(`Profile`, records) of the entry for `files`, or None (no entry, a stale entry, a damaged one: removed)."""
    d = entry_dir(files, directory)
    if not os.path.lexists(d):
        return None
    try:
        entry = _read_entry(d, files)
    except _ERRORS:
        discard_entry(d)  # anything odd: a miss, and the entry goes (it would fail every later run)
        return None
    if entry is None:  # stale: rebuilt by the caller's store
        return None
    entry[0].cache["cache_entry"] = d  # this module's memo key: where `load_derived` / `save_derived` look
    try:
        os.utime(d)  # recently used
    except OSError:
        pass
    return entry


def discard(files: Sequence[Path], directory: Path) -> None:
    """Remove the entry of `files` (a caller found one of its records inconsistent)."""
    discard_entry(entry_dir(files, directory))


def discard_entry(d: Path) -> None:
    """Remove an entry directory; a link or any other file in its place is unlinked, never followed."""
    try:
        st = os.lstat(d)
    except OSError:
        return
    try:
        if stat.S_ISDIR(st.st_mode):
            _remove_tree(d)
        else:
            os.unlink(d)
    except OSError:
        pass


def _check_dir(d: Path) -> None:
    st = os.lstat(d)
    if not stat.S_ISDIR(st.st_mode):
        raise Damaged("entry is not a directory")
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        raise Damaged("entry belongs to another user")


def _read_file(d: Path, name: str, limit: int) -> bytes:
    fd, st = _open_regular(d / name, nofollow=True)
    try:
        if st.st_size > limit:
            raise Damaged(f"{name} is too large")
        data = os.pread(fd, st.st_size + 1, 0)
    finally:
        os.close(fd)
    if len(data) != st.st_size:
        raise Damaged(f"{name} changed while read")
    return data


def _read_npy(d: Path, name: str, checksums: dict[str, int] | None, mapped: bool = False) -> np.ndarray:
    """A 1-D numeric array from `name.npy`, its header checked against the file's size before anything is
    allocated, its CRC-32 against `checksums` (not for `mapped` arrays: read lazily, checked by size)."""
    fname = f"{name}.npy"
    fd, st = _open_regular(d / fname, nofollow=True)
    try:
        with os.fdopen(os.dup(fd), "rb") as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f, max_header_size=10_000)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f, max_header_size=10_000)
            else:
                raise Damaged(f"{fname}: unknown .npy version")
            offset = f.tell()
        if dtype.hasobject or dtype.fields is not None or dtype.char not in _DTYPES or len(shape) != 1:
            raise Damaged(f"{fname}: not a 1-D numeric array")
        count = int(shape[0])
        if count < 0 or offset + count * dtype.itemsize != st.st_size:
            raise Damaged(f"{fname}: its header does not match its size")
        if mapped:
            if count == 0:
                return np.zeros(0, dtype)
            import mmap

            mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            return np.frombuffer(mm, dtype, count, offset)
        a = np.empty(count, dtype)
        buf = memoryview(a).cast("B")
        got = 0
        while got < len(buf):
            n = os.preadv(fd, [buf[got:]], offset + got)
            if n <= 0:
                raise Damaged(f"{fname}: shorter than its header says")
            got += n
    finally:
        os.close(fd)
    if checksums is not None and checksums.get(fname) != zlib.crc32(buf):
        raise Damaged(f"{fname}: checksum mismatch")
    return a


def _depth_ok(value: Any, limit: int = _MAX_DEPTH) -> bool:
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(v, dict):
            stack.extend((x, depth + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, depth + 1) for x in v)
    return True


_META_TYPE: Any = None


def _meta_type() -> Any:
    """The typed schema of `meta.json` (msgspec checks every field's type while decoding), made on first use."""
    global _META_TYPE, _Record  # module-level names: msgspec resolves the annotations in this module
    if _META_TYPE is None:
        import msgspec

        class _Record(msgspec.Struct):
            arrays: list[str]
            fields: dict[str, Any]

        class _Meta(msgspec.Struct):
            stamp: dict[str, Any]
            names: list[str]
            cats: list[str]
            lanes: list[Lane]
            profile_meta: ProfileMeta
            records: dict[str, _Record]
            checksums: dict[str, int]

        _META_TYPE = _Meta
    return _META_TYPE


def _read_meta(d: Path) -> Any:
    """The entry's `meta.json`, its checksum and types checked."""
    _check_dir(d)
    raw = _read_file(d, "meta.json", _MAX_META_BYTES)
    check = _read_file(d, "meta.crc", 64)
    if check.strip() != str(zlib.crc32(raw)).encode():
        raise Damaged("meta.json: checksum mismatch")
    import msgspec

    meta = msgspec.json.decode(raw, type=_meta_type())
    pm = meta.profile_meta
    if not all(_depth_ok(x) for x in (pm.trace_meta, pm.counters, *(r.fields for r in meta.records.values()))):
        raise Damaged("meta.json: nested too deeply")
    return meta


def _read_entry(d: Path, files: Sequence[Path] | None) -> Any:
    """(`Profile`, records) of entry `d`; None when its stamp is not that of `files` (stale). `files` None: a
    profile just written by this user's own loader process (`read_written`): no stamp to compare, and the
    arrays' checksums are not computed (they were computed while writing: nothing has rested on disk yet)."""
    meta = _read_meta(d)
    if files is not None and meta.stamp != _stamp(files):
        return None
    return _read_profile(d, meta, meta.checksums if files is not None else None)


def _read_profile(d: Path, meta: Any, sums: dict[str, int] | None) -> tuple[Any, dict[str, dict[str, Any]]]:
    pm = meta.profile_meta

    def arr(name: str, mapped: bool = False) -> np.ndarray:
        return _read_npy(d, name, sums, mapped)

    cols = {c: arr(c) for c in _COLUMNS}
    flows = Flows(**{c: arr(f"flow_{c}") for c in _FLOW_COLUMNS})
    args = ArgsStore(arr("args_blob", mapped=True), arr("args_starts"), arr("args_ends"))
    lanes = list(meta.lanes)
    if any(lane.id != k for k, lane in enumerate(lanes)):
        raise Damaged("lane ids out of order")
    _check_entry(cols, flows, args, len(lanes), len(meta.names), len(meta.cats))
    profile = Profile(
        names=meta.names, cats=meta.cats, lanes=lanes, flows=flows, args_raw=args, meta=pm, **cols
    )
    return profile, _read_records(d, meta, sums)


def _read_records(d: Path, meta: Any, sums: dict[str, int] | None) -> dict[str, dict[str, Any]]:
    records = {}
    for name, rec in meta.records.items():
        if not all(_NAME.fullmatch(x) for x in (name, *rec.arrays)):
            raise Damaged("bad record name")
        records[name] = {"arrays": {a: _read_npy(d, f"record_{name}_{a}", sums) for a in rec.arrays},
                         "fields": rec.fields}
    return records


_ERRORS = (Damaged, OSError, EOFError, ValueError, KeyError, TypeError, IndexError, AttributeError, OverflowError,
           RecursionError, MemoryError)
"""What reading an odd entry may raise (each means: a miss)."""


def read_written(d: Path) -> tuple[Any, dict[str, int]] | None:
    """The profile a loader process is writing into the temporary entry directory `d` (`store(on_profile=...)`
    called back with it): its arrays and `meta.json` are complete, its records not yet. (`Profile`, the
    arrays' checksums) to hand to `load_records` once the entry is in place; None when `d` cannot be read (the
    writer already renamed it into place, or gave up): the caller then reads the entry itself."""
    try:
        meta = _read_meta(d)
        profile, _ = _read_profile(d, meta, None)
    except _ERRORS:
        return None
    return profile, dict(meta.checksums)


def load_records(files: Sequence[Path], directory: Path, profile: Any, checksums: dict[str, int]) -> dict[str, dict[str, Any]] | None:
    """The records of the entry for `files` when that entry holds exactly `profile` (read by `read_written`
    while the entry was written, with these `checksums`): the entry's stamp is still that of `files` and its
    arrays' checksums are those. Sets the profile's entry (for `load_derived` / `save_derived`); None
    otherwise (nothing is removed: the caller reads the entry with `load`, which decides)."""
    d = entry_dir(files, directory)
    try:
        meta = _read_meta(d)
        if meta.stamp != _stamp(files) or any(meta.checksums.get(k) != v for k, v in checksums.items()):
            return None
        records = _read_records(d, meta, meta.checksums)
    except _ERRORS:
        return None
    profile.cache["cache_entry"] = d
    return records


def _check_entry(cols: dict[str, np.ndarray], flows: Any, args: Any, n_lanes: int, n_names: int, n_cats: int) -> None:
    """Raise `Damaged` when the arrays of an entry do not fit together (a damaged or mixed-up entry)."""
    n = len(cols["start"])
    if any(a.ndim != 1 or len(a) != n for a in cols.values()):
        raise Damaged("event columns of different lengths")
    for col, limit in (("lane", n_lanes), ("name", n_names), ("cat", n_cats)):
        a = cols[col]
        if n and (int(a.min()) < 0 or int(a.max()) >= limit):
            raise Damaged(f"{col} ids out of range")
    m = len(flows.key)
    if any(len(getattr(flows, c)) != m for c in _FLOW_COLUMNS) or (m and not 0 <= int(flows.event.min()) <= int(flows.event.max()) < n):
        raise Damaged("flow columns do not fit the events")
    if len(args.starts) != n or len(args.ends) != n:
        raise Damaged("args do not fit the events")
    if n and (int(args.starts.min()) < 0 or int(args.ends.max()) > len(args.blob) or bool(np.any(args.ends < args.starts))):
        raise Damaged("args offsets outside the args file")


def clear(directory: Path) -> None:
    """Remove every entry."""
    _remove_tree(directory)


def _remove_tree(d: Path) -> None:
    """Remove an entry (or the cache) iteratively, never following a link in it (trntui/fsio.py); quietly."""
    from trntui import fsio

    try:
        fsio.remove_tree(d)
    except fsio.FileRefused:
        pass
