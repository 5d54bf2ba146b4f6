"""A cache of parsed profiles, so re-opening a big trace skips the JSON parse (and the default table).

One entry per run (its set of input files), in a cache directory the caller gives (`LoadOptions.cache_dir`:
`$TRNTUI_CACHE_DIR`, else `$XDG_CACHE_HOME/trntui`, else `~/.cache/trntui`), never next to the profile. An entry
is a directory of plain `.npy` arrays plus one `meta.json` (no pickle: nothing in it is executed on load).

What an entry must prove before it is served (docs/cache.md says why each check exists):
- it was built from these exact files: every file's resolved path, size, `mtime_ns`, `ctime_ns`, inode and a
  hash of its first and last 64 KiB, plus the trntui version and cache format. The stamp is taken BEFORE the
  files are read (`stamp`) and compared again after the read (`unchanged`): a file replaced during a load is
  never cached under the new file's stamp;
- it is intact: a real directory owned by this user (not a link), only regular files opened without following
  links and without blocking, `.npy` headers whose dtype, rank and length match the file's size exactly, a
  `meta.json` of the expected types and bounded nesting, and a CRC-32 of every array and of `meta.json` that
  matches (the args bytes are checked by size and bounds only: they are read lazily and decoded per event);
- it fits together (column lengths, ids in range, args offsets inside the args file).
Anything else is a miss, and the entry is removed. Writes go to `.tmp-<host>-<pid>-*` and are renamed into
place; an interrupted write (Ctrl-C, SIGTERM) removes its temporary directory at once, and temporary
directories of writers that are gone (or older than an hour) are removed by the next write.

Stored: the event columns, names, categories, lanes, flows, metadata, the raw `args` bytes (concatenated, with
per-event offsets, so `Profile.args(i)` works as before), and the records the caller gives (named sets of
arrays plus JSON fields; trntui/session.py stores the default key_averages table so `trntui summary` on a cached
run does no parsing and no aggregation). This module stores what it is given: which runs are cached, and
what a record means (and whether its values are consistent), is decided by its callers.

Modules only some paths need (msgspec, hashlib, the write path's tempfile/shutil/signal/socket, ...) are imported
where they are used: every `trntui` command imports this module, and most never read or write an entry.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import stat
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trntui.model.args import ArgsStore, Blobs
from trntui.model.profile import Flows, Lane, Profile, ProfileMeta
from trntui.settings import cache_dir  # noqa: F401  (the documented default location, for callers at the edge)

FORMAT = 6
"""Bumped whenever what is stored changes."""

MAX_ENTRIES = 8
"""Least recently used entries beyond this many are removed when a new one is written."""

KEPT = ("neuron", "spill")
"""Subdirectories of the cache directory that are not entries: Neuron conversions, streamed loads' spill files."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
"""Record and array names (they become file names)."""
_COLUMNS = ("start", "end", "lane", "name", "cat", "kind", "ext", "corr")
_FLOW_COLUMNS = ("key", "event", "cat", "role")


# ----------------------------------------------------------------------------------------------------
# keys
# ----------------------------------------------------------------------------------------------------
_EDGE = 64 << 10
"""Bytes hashed at each end of an input file for its stamp."""


def _version() -> str:
    from trntui import __version__

    return __version__


_CODE: list[str] = []


def code_stamp() -> str:
    """The code that made an entry: `tree_stamp` of the package. An entry is what this code reads from the
    inputs — lanes, labels, the default table — so a change to any of it (a new release, a `git pull` of a clone,
    an edit) is a miss, whether or not whoever changed it remembered to bump FORMAT (the lane labels of 2f9e593
    changed without a bump, and old entries kept showing `TID:None`). About 2 ms; once per process."""
    if not _CODE:
        _CODE.append(tree_stamp(Path(__file__).resolve().parent))
    return _CODE[0]


def tree_stamp(root: Path) -> str:
    """A hash of the relative path, size and mtime of every module (`.py`, compiled `.so`/`.pyd`) under `root`
    (walked without recursion, links not followed, `__pycache__` skipped)."""
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    if e.name != "__pycache__":
                        stack.append(e.path)
                elif e.name.endswith((".py", ".so", ".pyd")):
                    st = e.stat(follow_symlinks=False)
                    h.update(f"{e.path[len(str(root)):]}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
            except OSError:
                continue
    return h.hexdigest()


def cacheable(files: Sequence[Path], min_bytes: int) -> bool:
    """Whether a run read from `files` is worth caching: every file a readable regular file and `min_bytes`
    together."""
    if not files:
        return False
    try:
        sts = [Path(f).stat() for f in files]
    except OSError:
        return False
    if not all(stat.S_ISREG(st.st_mode) for st in sts):
        return False
    return sum(st.st_size for st in sts) >= min_bytes


def _open_regular(path: Path, *, nofollow: bool = False) -> tuple[int, os.stat_result]:
    """An fd on `path` opened read-only without blocking (a FIFO) and, with `nofollow`, without following a
    link; unless it is a regular file: OSError (an input), or `Damaged` with `nofollow` (a cache entry's file)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if nofollow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Damaged(f"{path.name} is not a regular file") if nofollow else OSError(f"{path}: not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _file_stamp(path: Path) -> list[Any]:
    import hashlib

    fd, st = _open_regular(path)
    try:
        h = hashlib.blake2b(digest_size=16)
        h.update(os.pread(fd, _EDGE, 0))
        if st.st_size > _EDGE:
            h.update(os.pread(fd, _EDGE, max(_EDGE, st.st_size - _EDGE)))
    finally:
        os.close(fd)
    return [str(Path(path).resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, h.hexdigest()]


def _stamp(files: Sequence[Path]) -> dict[str, Any]:
    return {"files": [_file_stamp(Path(f)) for f in files], "version": _version(), "format": FORMAT,
            "code": code_stamp()}


def _stamp_or_none(files: Sequence[Path]) -> dict[str, Any] | None:
    try:
        return _stamp(files)
    except OSError:
        return None


def stamp(files: Sequence[Path]) -> dict[str, Any] | None:
    """The identity of `files` now (None when one cannot be read): take it BEFORE reading them, give it to
    `store`, which writes the entry only when the files are still exactly this after the read."""
    return _stamp_or_none(files)


def unchanged(files: Sequence[Path], before: dict[str, Any] | None) -> bool:
    """Whether `files` are still what `before` (a `stamp`) saw."""
    return before is not None and _stamp_or_none(files) == before


def entry_dir(files: Sequence[Path], directory: Path) -> Path:
    """The entry directory of a set of input files (by resolved paths; validity is checked by the stamp)."""
    import hashlib

    h = hashlib.sha256("\0".join(str(Path(f).resolve()) for f in files).encode("utf-8", "surrogateescape"))
    return directory / h.hexdigest()[:24]


# ----------------------------------------------------------------------------------------------------
# read
# ----------------------------------------------------------------------------------------------------
class Damaged(ValueError):
    """An entry that is not exactly what this module writes: a miss, and the entry is removed."""


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


# ----------------------------------------------------------------------------------------------------
# write
# ----------------------------------------------------------------------------------------------------
class _Terminated(BaseException):
    """SIGTERM during a write: unwinds so the temporary directory is removed, then the signal is re-sent."""


def _host() -> str:
    import socket

    return re.sub(r"[^A-Za-z0-9]", "_", socket.gethostname())[:32] or "host"


def store(
    files: Sequence[Path], directory: Path, profile: Any, *, records: dict[str, Any] | None = None,
    stamp: dict[str, Any] | None = None, on_profile: Callable[[Path], None] | None = None,
) -> Path | None:
    """Write `profile` and `records` (name → {"arrays": {name: array}, "fields": JSON-able dict}, or a function
    returning one, called once the profile is written) as the entry for `files` under `directory`.

    `stamp`: the files' `stamp()` taken before they were read. The entry is written only when the files are
    still exactly that (a file replaced during the load is not cached, as the old or the new profile); without
    it the stamp is taken now (a caller that read the files just before). Never raises for I/O; an
    interrupted write (KeyboardInterrupt, SIGTERM) removes what it wrote before the interruption goes on.

    `on_profile(tmp)`: called once the profile itself is in the temporary directory `tmp` (arrays and a
    `meta.json` without records: `read_written(tmp)` reads it), before the records are computed, so a reader
    can take the profile while the writer computes them (the app's loader process, trntui/tui/loader.py)."""
    import tempfile

    now = _stamp_or_none(files)
    if now is None or (stamp is not None and now != stamp):
        return None
    final = entry_dir(files, directory)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{_host()}-{os.getpid()}-", dir=final.parent))
    except OSError:
        return None
    with _cleanup_on_sigterm():
        try:
            _write_entry(tmp, profile, now, records or {}, on_profile)
            if not unchanged(files, now):  # changed while the entry was written
                raise OSError("input changed")
            if os.path.lexists(final):
                trash = final.with_name(final.name + f".old-{os.getpid()}-{os.urandom(4).hex()}")
                os.replace(final, trash)
                discard_entry(trash)
            os.replace(tmp, final)
        except (OSError, TypeError, ValueError, OverflowError):
            _remove_tree(tmp)
            return None
        except BaseException:  # Ctrl-C, SIGTERM (see _cleanup_on_sigterm), SystemExit: nothing half-written stays
            _remove_tree(tmp)
            raise
    profile.cache["cache_entry"] = final
    _prune(final.parent)
    return final


class _cleanup_on_sigterm:
    """For the length of a write in the main thread: SIGTERM raises `_Terminated` (so `store` removes its
    temporary directory), then the previous handler is restored and the signal sent again, so the process
    ends as the sender meant. Elsewhere (a worker thread) nothing changes: the next write prunes what is left."""

    def __enter__(self) -> None:
        import signal
        import threading

        self.old = None
        if threading.current_thread() is not threading.main_thread():
            return
        try:
            self.old = signal.signal(signal.SIGTERM, self._raise)
        except (ValueError, OSError):
            self.old = None

    @staticmethod
    def _raise(signum: int, frame: Any) -> None:  # noqa: ARG004
        raise _Terminated()

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> bool:
        import signal

        if self.old is None:
            return False
        signal.signal(signal.SIGTERM, self.old)
        if kind is _Terminated:
            os.kill(os.getpid(), signal.SIGTERM)  # the previous disposition decides (default: the process ends)
            return True
        return False


def _jsonable(value: Any) -> Any:
    """Metadata values decoded from JSON are JSON again; anything else is dropped to its string."""
    import msgspec

    return json.loads(msgspec.json.encode(value, enc_hook=str))


def _write_meta(d: Path, meta: dict[str, Any]) -> None:
    """`meta.json` and its checksum, each replaced in one step (a reader of a written profile may be reading)."""
    raw = json.dumps(meta).encode("utf-8")
    for name, data in (("meta.json", raw), ("meta.crc", str(zlib.crc32(raw)).encode())):
        (d / f".{name}").write_bytes(data)
        os.replace(d / f".{name}", d / name)


def _write_entry(
    d: Path, profile: Any, stamp: dict[str, Any], records: dict[str, Any],
    on_profile: Callable[[Path], None] | None = None,
) -> None:
    checksums: dict[str, int] = {}

    def save(name: str, a: Any) -> None:
        a = np.ascontiguousarray(a)
        if a.dtype.hasobject or a.dtype.char not in _DTYPES or a.ndim != 1:
            raise ValueError(f"{name}: only 1-D numeric arrays are stored")
        np.save(d / f"{name}.npy", a, allow_pickle=False)
        checksums[f"{name}.npy"] = zlib.crc32(memoryview(a).cast("B")) if len(a) else zlib.crc32(b"")

    for c in _COLUMNS:
        save(c, getattr(profile, c))
    for c in _FLOW_COLUMNS:
        save(f"flow_{c}", getattr(profile.flows, c))
    args = ArgsStore.from_raw(profile.args_raw)
    if isinstance(args.blob, Blobs) and len(args.blob):
        # written piece by piece after an .npy header: no joined copy in memory (and plain writes: through a
        # memory map, every new page would fault, ~8x slower)
        with open(d / "args_blob.npy", "xb") as f:
            np.lib.format.write_array_header_1_0(f, {"descr": "|u1", "fortran_order": False, "shape": (len(args.blob),)})
            for b in args.blob.blobs:
                f.write(b if not isinstance(b, np.ndarray) else memoryview(np.ascontiguousarray(b)).cast("B"))
    else:
        blob = args.blob if not isinstance(args.blob, Blobs) else b""
        np.save(d / "args_blob.npy", blob if isinstance(blob, np.ndarray) else np.frombuffer(blob, np.uint8),
                allow_pickle=False)  # read lazily: checked by size and bounds, no checksum
    save("args_starts", args.starts)
    save("args_ends", args.ends)
    lanes = []
    for lane in profile.lanes:
        ld = dataclasses.asdict(lane)
        ld["tier"] = int(lane.tier)
        lanes.append(ld)
    meta: dict[str, Any] = {
        "stamp": stamp,
        "names": list(profile.names),
        "cats": list(profile.cats),
        "lanes": lanes,
        "profile_meta": _jsonable(dataclasses.asdict(profile.meta)),
    }
    meta["records"] = {}
    if on_profile is not None:
        _write_meta(d, {**meta, "checksums": dict(checksums)})
        on_profile(d)
    for name, rec in records.items():
        rec = rec() if callable(rec) else rec
        for a, value in rec["arrays"].items():
            save(f"record_{name}_{a}", value)
        meta["records"][name] = {"arrays": list(rec["arrays"]), "fields": _jsonable(rec["fields"])}
    meta["checksums"] = checksums
    _write_meta(d, meta)


_TMP = re.compile(r"\.tmp-(?P<host>[A-Za-z0-9_]+)-(?P<pid>\d+)-")
_STALE_S = 3600.0
"""A temporary directory older than this is removed even when its writer seems alive (a reused pid)."""


def _writer_gone(name: str, age_s: float) -> bool:
    """Whether the write that owns the temporary directory `name` can no longer finish it."""
    if age_s > _STALE_S:
        return True
    m = _TMP.match(name)
    if m is None or m["host"] != _host():
        return False  # another machine's (a shared cache directory), or an old-style name: by age only
    pid = int(m["pid"])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):
        return False
    return False


def _prune(root: Path) -> None:
    now = time.time()
    try:
        # other users of the cache directory keep their own subdirectories (Neuron conversions, spill files)
        entries = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".tmp-") and p.name not in KEPT]
        entries.sort(key=lambda p: p.stat().st_mtime, reverse=True)
        # leftovers of interrupted or superseded writes
        stale = [p for p in root.glob(".tmp-*") if _writer_gone(p.name, now - p.lstat().st_mtime)]
        stale += [p for p in entries if ".old-" in p.name]
    except OSError:
        return
    for old in stale:
        discard_entry(old)
    entries = [p for p in entries if ".old-" not in p.name]
    for old in entries[MAX_ENTRIES:]:
        discard_entry(old)


# ----------------------------------------------------------------------------------------------------
# derived arrays: what an analysis computed from a cached profile, kept beside it
# ----------------------------------------------------------------------------------------------------
def _derived_crc(arrays: dict[str, np.ndarray]) -> int:
    crc = 0
    for k in sorted(arrays):
        a = np.ascontiguousarray(arrays[k])
        crc = zlib.crc32(f"{k}:{a.dtype.str}:{a.shape}".encode(), crc)
        crc = zlib.crc32(memoryview(a).cast("B") if a.size else b"", crc)
    return crc


def load_derived(profile: Any, name: str) -> dict[str, np.ndarray] | None:
    """Arrays an analysis stored for this cached profile under `name` (None: not cached, or not stored yet, or
    damaged). They live inside the profile's entry, so they go when the entry is rebuilt for changed files."""
    d = profile.cache.get("cache_entry")
    if d is None or not _NAME.fullmatch(name):
        return None
    path = Path(d) / f"derived_{name}.npz"
    try:
        fd, st = _open_regular(path, nofollow=True)
    except (OSError, Damaged):
        return None
    try:
        import mmap
        import zipfile

        # members located through the zip's directory, read straight from a map of the file (no per-member zip
        # reads, no zip CRC on top of ours: the re-open of a big run reads these before its first frame)
        with os.fdopen(fd, "rb") as f, zipfile.ZipFile(f) as z:
            infos = z.infolist()
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if st.st_size else b""
        arrays: dict[str, np.ndarray] = {}
        for info in infos:
            if (not info.filename.endswith(".npy") or info.compress_type != zipfile.ZIP_STORED
                    or info.compress_size != info.file_size):
                raise Damaged("odd member")
            head = info.header_offset
            local = mm[head : head + 30]
            if len(local) != 30 or local[:4] != b"PK\x03\x04":
                raise Damaged("odd member")
            begin = head + 30 + int.from_bytes(local[26:28], "little") + int.from_bytes(local[28:30], "little")
            stop = begin + info.file_size
            if stop > len(mm):
                raise Damaged("member outside the file")
            m = io.BytesIO(mm[begin : min(stop, begin + 10_240)])
            version = np.lib.format.read_magic(m)
            reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = reader(m, max_header_size=10_000)
            if dtype.hasobject or dtype.fields is not None or fortran:
                raise Damaged("odd array")
            count = int(np.prod(shape, dtype=np.int64)) if shape else 1
            need = count * dtype.itemsize
            if count < 0 or need != info.file_size - m.tell():
                raise Damaged("array header does not match its size")
            arrays[info.filename[:-4]] = np.frombuffer(mm, dtype, count, begin + m.tell()).reshape(shape).copy()
        crc = arrays.pop("__crc32__", None)
        if crc is None or crc.size != 1 or int(crc.reshape(-1)[0]) != _derived_crc(arrays):
            raise Damaged("checksum mismatch")
        return arrays
    except (OSError, ValueError, KeyError, EOFError, TypeError, OverflowError, MemoryError, Damaged) + _zip_errors():
        try:
            os.unlink(path)
        except OSError:
            pass
        return None


def _zip_errors() -> tuple[type[BaseException], ...]:
    import zipfile

    return (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError)


def save_derived(profile: Any, name: str, arrays: dict[str, np.ndarray]) -> None:
    """Keep `arrays` with the cached profile (no-op for a profile that is not cached). Never raises for I/O."""
    d = profile.cache.get("cache_entry")
    if d is None or not _NAME.fullmatch(name):
        return
    import tempfile

    target = Path(d) / f"derived_{name}.npz"
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=d)
        with os.fdopen(fd, "wb") as f:
            np.savez(f, __crc32__=np.array([_derived_crc(arrays)], np.int64), **arrays)
        os.replace(tmp, target)
        tmp = None
    except (OSError, ValueError, TypeError):
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


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
