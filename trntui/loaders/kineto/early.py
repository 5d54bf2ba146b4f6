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


class Begun:
    """A trace mapped, its event array found and the scans of its first pieces started."""

    def __init__(self, identity: tuple[int, ...], data: mmap.mmap, opened: Opened) -> None:
        self.identity, self.data, self.opened = identity, data, opened

    def close(self) -> None:
        """Stop: wait for the scans running (they read the map), then close the map."""
        self.opened.release()
        self.opened = None  # type: ignore[assignment]
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


def _start(path: Path, budget: int | None) -> Begun | None:
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
    with fsio.open_regular(path) as f:
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    opened = open_array(data, scan=True)
    if opened is None or opened.ahead is None:
        data.close()
        return None
    opened.ahead.prime(opened.inner, 0)
    return Begun(identity, data, opened)


@contextmanager
def begin(path: Path, budget: int | None) -> Iterator[None]:
    """Begin the load of `path` (see the module's text) for the block; what the load did not claim is stopped at
    its end. Anything unusual begins nothing: the load then goes its usual way and says what is wrong."""
    key = (threading.get_ident(), str(path))
    if key in _begun:  # begun already, by an enclosing block (which stops it)
        yield
        return
    try:
        got = _start(path, budget)
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


def claim(path: Path) -> Begun | None:
    """What `begin` started for `path` on this thread, if the file is still the one it mapped (the caller then
    owns it: its map and scans); else None."""
    got = _begun.pop((threading.get_ident(), str(path)), None)
    if got is None:
        return None
    if _identity(path) != got.identity:
        got.close()
        return None
    return got

