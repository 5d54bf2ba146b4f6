"""Writing a cache entry: the profile's columns, args bytes, lanes, flows and the caller's records into a
`.tmp-<host>-<pid>-*` directory renamed into place, removed at once on an interrupted write (Ctrl-C, SIGTERM);
then the pruning of temporary directories whose writers are gone and of entries beyond `MAX_ENTRIES`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trntui.cache.keys import _COLUMNS, _FLOW_COLUMNS, _stamp_or_none, entry_dir, stamp, unchanged
from trntui.cache.read import _DTYPES, _remove_tree, discard_entry
from trntui.model.args import ArgsStore, Blobs, FileBlob


MAX_ENTRIES = 8
"""Least recently used entries beyond this many are removed when a new one is written."""

KEPT = ("neuron", "spill")
"""Subdirectories of the cache directory that are not entries: Neuron conversions, streamed loads' spill files."""


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
    if isinstance(args.blob, FileBlob):  # args left in the trace file: read from it a window at a time, packed
        total = args.packed_length()
        with open(d / "args_blob.npy", "xb") as f:
            np.lib.format.write_array_header_1_0(f, {"descr": "|u1", "fortran_order": False, "shape": (total,)})
            written, starts, ends = args.write_packed(f)
        if written != total:
            raise ValueError("args_blob: the packed args changed length while written")
        args = ArgsStore(b"", starts, ends)
    elif isinstance(args.blob, Blobs) and len(args.blob):
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
