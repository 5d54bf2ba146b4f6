"""Every file trntui opens, creates, renames or deletes goes through here (docs/architecture.md, "File access").

The rules (issue 28, classes 1-3 and 7):

- **Read only regular files.** `open_regular` opens with `O_NONBLOCK` (a FIFO never blocks the open) and checks
  `fstat` is a regular file before a byte is read; `check_regular` does the same for a path that a library
  (pyarrow, DuckDB) opens itself. Reads are bounded (`read_bounded`): a file that is larger than its budget,
  or grows past it while read (/dev/zero behind a symlink), is refused with one line naming it.
- **Write whole or not at all, never through a link, never over what we may not replace.** `atomic_write` and
  `replacing` write a temporary file in the target's own directory (created `O_EXCL`, so it is ours), then put it
  in place: without `force` with a hard link, which fails if anything appeared there meanwhile; with `force` by a
  rename over an existing *regular file* only. A symbolic link (dangling or not), a FIFO, a device or a directory
  at the target is refused, `force` or not: a rename replaces the link itself, never what it points to, so
  nothing outside the target directory is ever written.
- **Delete only what we walk ourselves.** `remove_tree` deletes a tree iteratively (no recursion limit) with
  `os.scandir`, never following a symbolic link (the link itself is removed, not what it points to), refusing a
  top-level link.
- **Copy only regular files, bounded** (`copy_regular`, `copy_tree`): symbolic links and special files are
  refused and named, sizes are capped.

Errors are `FileRefused` (a `LoadError`, so a `TrntuiError`: one line, `path: problem`), `FileExists` when the only problem is an
existing file that `force` (or a confirmation in the app) would replace. No Textual import: this is the core.
"""

from __future__ import annotations

import errno
import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

from trntui.errors import LoadError

PathLike = "str | os.PathLike[str]"

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)


class FileRefused(LoadError):
    """A file trntui will not open, write, copy or remove; the message is one line: `path: problem`. A
    `LoadError` (so a reader's callers treat a refused input like any unreadable one), hence a `TrntuiError`."""


class FileExists(FileRefused):
    """The target is an existing regular file: replacing it needs `force` (the CLI's --force, the app's yes)."""


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


def _strerror(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,} bytes"


# ------------------------------------------------------------------------------------------------- reading


def check_regular(path: PathLike, *, follow_symlinks: bool = True, budget: int | None = None,
                  what: str = "a regular file") -> os.stat_result:
    """The `stat` of `path` when it is a regular file (and, with `budget`, no larger than it); else `FileRefused`.

    For files a library opens by name (pyarrow, DuckDB): a FIFO or a device is refused before the library can
    block on it. `follow_symlinks=False` also refuses a symbolic link (inside trntui's own caches)."""
    try:
        st = os.stat(path, follow_symlinks=follow_symlinks)
    except FileNotFoundError:
        raise FileRefused(path, "no such file") from None
    except OSError as exc:
        raise FileRefused(path, f"cannot read: {_strerror(exc)}") from None
    if not stat.S_ISREG(st.st_mode):
        raise FileRefused(path, f"is {kind_of(st.st_mode)}, expected {what}")
    if budget is not None and st.st_size > budget:
        raise FileRefused(path, f"is {_size(st.st_size)}, more than the {_size(budget)} allowed")
    return st


def is_regular(path: PathLike, *, follow_symlinks: bool = True) -> bool:
    """Whether `path` is a regular file (never blocks: a `stat`, no open)."""
    try:
        return stat.S_ISREG(os.stat(path, follow_symlinks=follow_symlinks).st_mode)
    except OSError:
        return False


def open_regular(path: PathLike, *, follow_symlinks: bool = True, budget: int | None = None,
                 what: str = "a regular file") -> BinaryIO:
    """`path` opened for binary reading, when it is a regular file (no larger than `budget`); else `FileRefused`.

    The open itself never blocks (`O_NONBLOCK`: a FIFO with no writer opens at once and is then refused by
    `fstat`); `follow_symlinks=False` opens with `O_NOFOLLOW`. Blocking mode is restored for the reads."""
    flags = os.O_RDONLY | _NONBLOCK | _CLOEXEC | _BINARY | (0 if follow_symlinks else _NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise FileRefused(path, "no such file") from None
    except IsADirectoryError:
        raise FileRefused(path, f"is a directory, expected {what}") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:
            raise FileRefused(path, "is a symbolic link; refusing to follow it") from None
        raise FileRefused(path, f"cannot read: {_strerror(exc)}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileRefused(path, f"is {kind_of(st.st_mode)}, expected {what}")
        if budget is not None and st.st_size > budget:
            raise FileRefused(path, f"is {_size(st.st_size)}, more than the {_size(budget)} allowed")
        if _NONBLOCK:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: PathLike, limit: int, *, follow_symlinks: bool = True, what: str = "a regular file") -> bytes:
    """The whole of a regular file of at most `limit` bytes; a larger one (also one that grows past `limit` while
    it is read) is `FileRefused`, never read to the end."""
    with open_regular(path, follow_symlinks=follow_symlinks, budget=limit, what=what) as f:
        try:
            data = f.read(limit + 1)
        except OSError as exc:
            raise FileRefused(path, f"cannot read: {_strerror(exc)}") from None
    if len(data) > limit:
        raise FileRefused(path, f"is more than the {_size(limit)} allowed")
    return data


def read_text_bounded(path: PathLike, limit: int, *, follow_symlinks: bool = True, encoding: str = "utf-8",
                      errors: str = "strict") -> str:
    return read_bounded(path, limit, follow_symlinks=follow_symlinks).decode(encoding, errors)


def read_tail(path: PathLike, limit: int, *, follow_symlinks: bool = False) -> bytes:
    """At most the last `limit` bytes of a regular file (a log that may be huge); b"" when it is not one."""
    try:
        with open_regular(path, follow_symlinks=follow_symlinks) as f:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                f.seek(size - limit)
            return f.read(limit)
    except (FileRefused, OSError):
        return b""


# ------------------------------------------------------------------------------------------------- writing


_UMASK: int | None = None


def _file_mode() -> int:
    """0o666 less the process umask (what `open(path, "w")` would have given; mkstemp's files are 0o600)."""
    global _UMASK
    if _UMASK is None:
        try:
            with open("/proc/self/status", encoding="ascii") as f:  # fsio: reads the umask without changing it
                for line in f:
                    if line.startswith("Umask:"):
                        _UMASK = int(line.split()[1], 8)
                        break
        except (OSError, ValueError):
            pass
        if _UMASK is None:
            _UMASK = os.umask(0o022)
            os.umask(_UMASK)
    return 0o666 & ~_UMASK


def check_target(path: PathLike, *, force: bool = False, hint: str = "pass --force to replace it") -> bool:
    """Whether `path` exists (then it is a regular file and `force` is set); else `FileRefused`/`FileExists`.

    A symbolic link is refused even when it dangles: writing through it would create or change a file
    somewhere else."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise FileRefused(path, f"cannot write: {_strerror(exc)}") from None
    if stat.S_ISLNK(st.st_mode):
        raise FileRefused(path, "is a symbolic link; refusing to write through it (remove it or write elsewhere)")
    if not stat.S_ISREG(st.st_mode):
        raise FileRefused(path, f"is {kind_of(st.st_mode)}; refusing to replace it")
    if not force:
        raise FileExists(path, f"exists ({hint})")
    return True


def ensure_dir(path: PathLike) -> Path:
    """`path` as a directory, created (with its parents) when missing; `FileRefused` when something else is there.
    A directory reached through a symbolic link is accepted (the user chose it); the files written in it are
    checked one by one (`check_target`)."""
    p = Path(path)
    try:
        missing = []  # iteratively (Path.mkdir(parents=True) recurses once per missing level)
        q = p
        while not os.path.lexists(q) and q != q.parent:
            missing.append(q)
            q = q.parent
        for d in reversed(missing):
            try:
                os.mkdir(d)
            except FileExistsError:
                pass
    except FileExistsError:
        raise FileRefused(p, "exists and is not a directory") from None
    except NotADirectoryError:
        raise FileRefused(p, "a part of the path is not a directory") from None
    except OSError as exc:
        raise FileRefused(p, f"cannot create the directory: {_strerror(exc)}") from None
    if not p.is_dir():
        raise FileRefused(p, "exists and is not a directory")
    return p


@contextmanager
def replacing(path: PathLike, *, force: bool = False, hint: str = "pass --force to replace it") -> Iterator[Path]:
    """Yield a fresh temporary file beside `path` (created empty, `O_EXCL`, ours); write it by name, and on a
    clean exit it becomes `path`: linked in place when `path` is new (fails if anything appeared there
    meanwhile), renamed over it when `path` is a regular file and `force` is set. Symbolic links, FIFOs, devices
    and directories at `path` are refused (`check_target`), before and again just before it is put in place.
    On an error the temporary file is removed and `path` is untouched."""
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    check_target(target, force=force, hint=hint)
    if not parent.is_dir():
        raise FileRefused(target, f"{parent} is not a directory")
    import tempfile

    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name[:80]}.", suffix=".trntui-tmp", dir=parent)
    except OSError as exc:
        raise FileRefused(target, f"cannot write: {_strerror(exc)}") from None
    tmp = Path(tmp_name)
    try:
        try:
            os.fchmod(fd, _file_mode())
        except OSError:
            pass
        os.close(fd)
        yield tmp
        try:
            if tmp.is_symlink() or not tmp.is_file():
                raise FileRefused(target, "the temporary file was replaced while it was written")
            exists = check_target(target, force=force, hint=hint)
            if exists:
                os.replace(tmp, target)
            else:
                try:
                    os.link(tmp, target, follow_symlinks=False)
                except FileExistsError:
                    raise FileExists(target, f"appeared while it was written ({hint})") from None
                except OSError as exc:
                    if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK, errno.EXDEV):
                        raise
                    os.replace(tmp, target)  # a file system without hard links: checked just above
        except OSError as exc:
            raise FileRefused(target, f"cannot write: {_strerror(exc)}") from None
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        except OSError:
            pass


def atomic_write(path: PathLike, data: "bytes | str | Callable[[Path], Any]", *, force: bool = False,
                 encoding: str = "utf-8", hint: str = "pass --force to replace it") -> Any:
    """Write `path` whole or not at all (`replacing`): `data` is bytes, text, or a writer called with the
    temporary file's path (pyarrow's `write_table`, DuckDB's COPY). Returns what the writer returned (else the
    bytes written)."""
    with replacing(path, force=force, hint=hint) as tmp:
        try:
            if callable(data):
                return data(tmp)
            raw = data.encode(encoding) if isinstance(data, str) else bytes(data)
            with open(tmp, "wb") as f:  # fsio: the temporary file `replacing` just created
                f.write(raw)
            return len(raw)
        except OSError as exc:
            raise FileRefused(path, f"cannot write: {_strerror(exc)}") from None


@contextmanager
def open_replacing(path: PathLike, mode: str = "w", *, force: bool = False, encoding: str | None = "utf-8",
                   newline: str | None = "", hint: str = "pass --force to replace it") -> Iterator[Any]:
    """A stream for writing `path` whole or not at all (`replacing`): text by default, `mode="wb"` for bytes."""
    with replacing(path, force=force, hint=hint) as tmp:
        try:
            if "b" in mode:
                with open(tmp, mode) as f:  # fsio: the temporary file `replacing` just created
                    yield f
            else:
                with open(tmp, mode, encoding=encoding, newline=newline) as f:  # fsio: as above
                    yield f
        except OSError as exc:
            raise FileRefused(path, f"cannot write: {_strerror(exc)}") from None


def create_new(path: PathLike) -> BinaryIO:
    """A new file opened for binary writing: `O_CREAT|O_EXCL|O_NOFOLLOW`, so it is one trntui just made (never an
    existing file, never through a link). For files in trntui's own fresh directories (a converter's log)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC | _BINARY
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        raise FileRefused(path, f"cannot create: {_strerror(exc)}") from None
    return os.fdopen(fd, "wb")


# ------------------------------------------------------------------------------------------------ removing


def remove_tree(path: PathLike, *, missing_ok: bool = True) -> None:
    """Delete a directory tree that is trntui's own (a cache entry, a scratch directory), iteratively: no
    recursion limit, symbolic links removed as links (never followed), a top-level link refused. A plain file
    at `path` is removed too. Errors other than "already gone" are `FileRefused`."""
    p = Path(path)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        if missing_ok:
            return
        raise FileRefused(p, "no such file or directory") from None
    if stat.S_ISLNK(st.st_mode):
        raise FileRefused(p, "is a symbolic link; refusing to remove what it points to")
    if not stat.S_ISDIR(st.st_mode):
        _unlink(p)
        return
    # depth-first, iteratively: a directory is pushed back (marked) after its children
    stack: list[tuple[str, bool]] = [(str(p), False)]
    while stack:
        d, visited = stack.pop()
        if visited:
            try:
                os.rmdir(d)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise FileRefused(d, f"not removed: {_strerror(exc)}") from None
            continue
        stack.append((d, True))
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise FileRefused(d, f"not removed: {_strerror(exc)}") from None
        for e in entries:
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                stack.append((e.path, False))
            else:
                _unlink(Path(e.path))


def _unlink(p: Path) -> None:
    try:
        os.unlink(p)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise FileRefused(p, f"not removed: {_strerror(exc)}") from None


def remove_file(path: PathLike, *, missing_ok: bool = True) -> None:
    """Remove one file (or link, as a link) that trntui wrote; never a directory."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if missing_ok:
            return
        raise FileRefused(path, "no such file") from None
    if stat.S_ISDIR(st.st_mode):
        raise FileRefused(path, "is a directory; not removed")
    _unlink(Path(path))


def rename(src: PathLike, dst: PathLike) -> None:
    """Put trntui's own `src` (a finished temporary file or directory) at `dst` (which is trntui's to replace:
    callers check it is theirs first). A symbolic link at `dst` is refused."""
    try:
        st = os.lstat(dst)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise FileRefused(dst, f"cannot write: {_strerror(exc)}") from None
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise FileRefused(dst, "is a symbolic link; refusing to replace it")
    try:
        os.replace(src, dst)
    except OSError as exc:
        raise FileRefused(dst, f"cannot write: {_strerror(exc)}") from None


# ------------------------------------------------------------------------------------------------- copying


def copy_regular(src: PathLike, dst: PathLike, *, limit: int) -> int:
    """Copy a regular file of at most `limit` bytes to a new file `dst` (created `O_EXCL|O_NOFOLLOW`: never
    through a link, never over anything). A symbolic link or special file at `src` is `FileRefused`. Returns
    the bytes copied."""
    written = 0
    with open_regular(src, follow_symlinks=False, budget=limit) as f:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC | _BINARY
        try:
            fd = os.open(dst, flags, 0o666)
        except OSError as exc:
            raise FileRefused(dst, f"cannot write: {_strerror(exc)}") from None
        with os.fdopen(fd, "wb") as out:
            while True:
                chunk = f.read(min(1 << 20, limit + 1 - written))
                if not chunk:
                    break
                written += len(chunk)
                if written > limit:
                    out.close()
                    _unlink(Path(dst))
                    raise FileRefused(src, f"is more than the {_size(limit)} allowed")
                out.write(chunk)
    return written


def walk_files(root: PathLike, *, max_entries: int = 1_000_000) -> Iterator[tuple[str, os.DirEntry]]:
    """(relative path, entry) for everything under `root`, iteratively and without following symbolic links
    (directories are walked, not yielded); `FileRefused` past `max_entries` entries."""
    stack: list[tuple[str, str]] = [(str(root), "")]
    seen = 0
    while stack:
        d, rel = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            raise FileRefused(d, f"cannot list: {_strerror(exc)}") from None
        for e in entries:
            seen += 1
            if seen > max_entries:
                raise FileRefused(root, f"holds more than {max_entries:,} entries")
            r = f"{rel}{e.name}"
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                stack.append((e.path, r + "/"))
            else:
                yield r, e


def walk_dirs(root: PathLike, *, max_entries: int = 1_000_000) -> Iterator[tuple[Path, list[str]]]:
    """(directory, sorted names of its non-directory entries) for `root` and every directory below it, top-down in
    sorted order, iteratively (os.walk recursed in Python 3.11: a tree 1,500 levels deep raised RecursionError),
    never following a link; `FileRefused` past `max_entries` entries."""
    stack: list[Path] = [Path(root)]
    seen = 0
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        seen += len(entries)
        if seen > max_entries:
            raise FileRefused(root, f"holds more than {max_entries:,} entries")
        dirs, files = [], []
        for e in entries:
            try:
                (dirs if e.is_dir(follow_symlinks=False) else files).append(e.name)
            except OSError:
                files.append(e.name)
        yield d, files
        stack.extend(d / name for name in reversed(dirs))


def copy_tree(src: PathLike, dst: PathLike, *, file_limit: int, total_limit: int, max_entries: int = 100_000,
              move: bool = False, skip: Callable[[str], bool] | None = None,
              max_depth: int = 64) -> tuple[int, list[str]]:
    """Copy the regular files under `src` into a new directory tree `dst` (bounded: each file `file_limit`,
    all of them `total_limit`, `max_entries` entries; past a bound, `FileRefused` naming the file). Symbolic
    links and special files are not copied: they are returned, as relative paths with what they are, for the
    caller to report. `move`: rename each regular file instead (same file system: nothing is duplicated; a copy
    when it is not). `skip(rel)`: relative paths left out on purpose. A file more than `max_depth` directories
    down is refused too (readers that walk with os.walk/rglob recurse once per level). Returns (bytes kept,
    refused)."""
    total = 0
    refused: list[str] = []
    ensure_dir(dst)
    for rel, entry in walk_files(src, max_entries=max_entries):
        if skip is not None and skip(rel):
            continue
        if rel.count("/") > max_depth:
            refused.append(f"{rel[:200]}... ({rel.count('/')} directories deep)")
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError as exc:
            refused.append(f"{rel} ({_strerror(exc)})")
            continue
        if not stat.S_ISREG(st.st_mode):
            refused.append(f"{rel} ({kind_of(st.st_mode)})")
            continue
        limit = min(file_limit, max(0, total_limit - total))
        if st.st_size > limit:
            which = "each file" if limit == file_limit else "all files together"
            raise FileRefused(entry.path, f"is {_size(st.st_size)}: more than the {_size(limit)} allowed "
                                          f"({which})")
        target = Path(dst) / rel
        ensure_dir(target.parent)
        if move:
            try:
                if os.path.lexists(target):
                    raise FileRefused(target, "exists")
                os.rename(entry.path, target)
                total += st.st_size
                continue
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise FileRefused(entry.path, f"cannot move: {_strerror(exc)}") from None
        total += copy_regular(entry.path, target, limit=limit)
    return total, refused
