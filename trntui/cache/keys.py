"""What names a cache entry and what its files are called: the cache `FORMAT`, the stamp of the input files
(taken before a read, compared after it), the stamp of the code that made an entry, and the entry's directory.

Also `_open_regular`, the one open the cache's reader and derived arrays share (O_NONBLOCK, O_NOFOLLOW, a
regular file only).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any


FORMAT = 6
"""Bumped whenever what is stored changes."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
"""Record and array names (they become file names)."""
_COLUMNS = ("start", "end", "lane", "name", "cat", "kind", "ext", "corr")
_FLOW_COLUMNS = ("key", "event", "cat", "role")


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
        _CODE.append(tree_stamp(Path(__file__).resolve().parent.parent))
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


class Damaged(ValueError):
    """An entry that is not exactly what this module writes: a miss, and the entry is removed."""
