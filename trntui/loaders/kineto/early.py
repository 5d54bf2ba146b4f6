"""A big trace's first pieces scanned while numpy is imported.

formats.py `read_run` asks the run's format to `begin` the load before it imports the model (numpy: ~60 ms of a
~200 ms `trntui summary` of a 69 MB trace, on one core). For a run of one plain trace that the load will read from
a memory map with the compiled builder (load.py `_load_mapped`), the Kineto format's `begin` maps the file, finds
its event array and starts the compiled scans of its first pieces on threads (chunks.py `_ScanAhead`, the GIL
released): numpy's import then runs beside them on the other core. The load claims what was begun (`claim`) when
the file is still the same one (inode, size, modification time), else maps it afresh. The scans begun are exactly
the ones the load would start itself (the same pieces, cut the same way), so the profile is the same either way;
what the load does not claim (it went another way: streamed under a tight budget, a damaged file) is stopped when
`begin`'s block ends.

Nothing on this path imports numpy (tests/test_early_scan.py checks the first scan starts before it is imported).
"""

from __future__ import annotations

import mmap
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from trntui import fsio
from trntui.errors import LoadError
from trntui.loaders.kineto.chunks import Opened, open_array
from trntui.loaders.kineto.parser import ParserUnavailable, enabled

_MAP_MIN_BYTES = 32 << 20
"""Plain (not gzip) traces this big are decoded straight from a memory map of the file (load.py `_load_mapped`)."""


def mappable(path: Path) -> bool:
    """`path` is a plain trace of at least `_MAP_MIN_BYTES` (False when it cannot be looked at: the load says why)."""
    try:
        if path.stat().st_size < _MAP_MIN_BYTES:
            return False
        with fsio.open_regular(path) as f:
            return f.read(2) != b"\x1f\x8b"
    except (OSError, LoadError):
        return False


def map_plain(path: Path, keep_fd: bool) -> tuple[mmap.mmap, int | None]:
    """A read-only memory map of the plain trace `path` and, when `keep_fd` (and the system has `pread`), a
    descriptor of the same open file (the caller's to close: the load reads the args from it, model/args.py
    `FileBlob`)."""
    keep_fd = keep_fd and hasattr(os, "pread") and hasattr(os, "preadv")
    with fsio.open_regular(path) as f:
        try:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # (an empty file: it was not, a moment ago)
            raise LoadError(path, "empty file") from None
        return data, (os.dup(f.fileno()) if keep_fd else None)


class Begun:
    """A trace mapped, its event array found and the scans of its first pieces started; `fd`: the file's
    descriptor the load reads the args from (None: the scans copy them, `Opened.copy`)."""

    def __init__(self, identity: tuple[int, ...], data: mmap.mmap, opened: Opened, fd: int | None,
                 args_from_file: bool) -> None:
        self.identity, self.data, self.opened, self.fd = identity, data, opened, fd
        self.args_from_file = args_from_file
        """What it was begun for (`LoadOptions.args_from_file`; the descriptor is None where the system has no
        `pread`, the scans then copy the args)."""

    def take_fd(self) -> int | None:
        """The descriptor, now the caller's to close."""
        fd, self.fd = self.fd, None
        return fd

    def close(self) -> None:
        """Stop: wait for the scans running (they read the map), then close the map (and the descriptor, unless
        it was taken)."""
        self.opened.release()
        self.opened = None  # type: ignore[assignment]
        if self.fd is not None:
            os.close(self.take_fd())  # type: ignore[arg-type]
        try:
            self.data.close()
        except BufferError:  # a view is still alive: the map closes when it goes
            pass


_begun: dict[tuple[int, str], Begun] = {}
"""What `begin` started, by (thread, path): a load claims it on the thread that began it."""


def _identity(path: Path) -> tuple[int, ...] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _start(path: Path, budget: int | None, args_from_file: bool) -> Begun | None:
    try:
        if not enabled():
            return None
    except ParserUnavailable:
        return None  # (the load raises it, with its fix)
    identity = _identity(path)
    if identity is None or not mappable(path):
        return None
    if budget is not None:
        from trntui.memory import FULL_LOAD_FACTOR  # (numpy-free)

        if identity[2] * FULL_LOAD_FACTOR > budget:
            return None  # streamed or refused (load.py), not mapped whole
    data, fd = map_plain(path, args_from_file)
    try:
        opened = open_array(data, scan=True, copy=fd is None)
    except BaseException:
        if fd is not None:
            os.close(fd)
        data.close()
        raise
    if opened is None or opened.ahead is None or opened.e < 0:
        if opened is not None:
            opened.release()
        if fd is not None:
            os.close(fd)
        data.close()
        return None
    opened.ahead.prime(opened.inner, 0)
    return Begun(identity, data, opened, fd, args_from_file)


@contextmanager
def begin(path: Path, budget: int | None, args_from_file: bool = True) -> Iterator[None]:
    """Begin the load of `path` (see the module's text) for the block; what the load did not claim is stopped at
    its end. Anything unusual begins nothing: the load then goes its usual way and says what is wrong.
    `args_from_file`: as `LoadOptions.args_from_file` (the scans then keep the args' ranges, not copies)."""
    key = (threading.get_ident(), str(path))
    if key in _begun:  # begun already, by an enclosing block (which stops it)
        yield
        return
    try:
        got = _start(path, budget, args_from_file)
    except (OSError, ValueError, LoadError):
        got = None
    if got is not None:
        _begun[key] = got
    try:
        yield
    finally:
        left = _begun.pop(key, None)
        if left is not None:
            left.close()


def claim(path: Path, args_from_file: bool = True) -> Begun | None:
    """What `begin` started for `path` on this thread, if the file is still the one it mapped and it was begun
    for the same `args_from_file` (the caller then owns it: its map, scans and descriptor); else None."""
    got = _begun.pop((threading.get_ident(), str(path)), None)
    if got is None:
        return None
    if _identity(path) != got.identity or got.args_from_file != args_from_file:
        got.close()
        return None
    return got

