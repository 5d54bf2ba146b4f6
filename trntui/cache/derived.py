"""Derived arrays: what an analysis computed from a cached profile (`save_derived`), kept inside the profile's
entry with a CRC-32, and read back (`load_derived`) until the entry is rebuilt for changed files.
"""

from __future__ import annotations

import io
import os
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from trntui.cache.keys import _NAME, _open_regular, Damaged


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
