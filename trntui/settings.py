"""The documented user variables, in one place. Read at the edge only: when a command starts, or when a library
call is made without explicit `LoadOptions` (`LoadOptions.from_env`); nothing below the edge reads the
environment, and nothing writes it (one exception, below).

- `TRNTUI_MEMORY_BUDGET`: the default memory budget of a load (`4G`, `800M`, `none`); else 80% of the
  memory available when the load starts (trntui/memory.py).
- `TRNTUI_CACHE_DIR`: where the parsed-profile cache, streamed loads' spill files and Neuron conversions live;
  else `$XDG_CACHE_HOME/trntui`, else `~/.cache/trntui`.
- `TRNTUI_CONFIG_DIR`: the user's own files (saved SQL queries, the SQL prompt's history); else
  `$XDG_CONFIG_HOME/trntui`, else `~/.config/trntui`.
- `TRNTUI_NO_CACHE=1`: never read or write the parsed-profile cache.
- `TRNTUI_CACHE_MIN_BYTES`: runs whose inputs are smaller than this are not cached (default 8 MB).
- `TRNTUI_NO_PROGRESS=1`: no progress line on the terminal.
- `TRNTUI_CONVERT_TIMEOUT`: seconds a neuron-explorer conversion of a raw Neuron capture may take (default 300;
  `--convert-timeout` overrides it).
- `TRNTUI_DEBUG=1`: unexpected errors show their traceback.
- `COLUMNS` (the shell's): the width headless tables fit (trntui/report/format.py `terminal_width`).

The exception: a variable that is not trntui's is set for a while, `OPENBLAS_NUM_THREADS=1` from the CLI's start
until numpy is imported (`hold_one_blas_thread`, `numpy_with_one_blas_thread`, `one_blas_thread`), then removed
again.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DEFAULT_CACHE_MIN_BYTES = 8 << 20


def memory_budget() -> str | None:
    """`$TRNTUI_MEMORY_BUDGET` as written (a size string), or None when unset or empty."""
    value = os.environ.get("TRNTUI_MEMORY_BUDGET", "").strip()
    return value or None


def cache_dir() -> Path:
    """`$TRNTUI_CACHE_DIR`, else `$XDG_CACHE_HOME/trntui`, else `~/.cache/trntui`."""
    explicit = os.environ.get("TRNTUI_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "trntui"


def config_dir() -> Path:
    """`$TRNTUI_CONFIG_DIR`, else `$XDG_CONFIG_HOME/trntui`, else `~/.config/trntui`."""
    explicit = os.environ.get("TRNTUI_CONFIG_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
    return base / "trntui"


def cache_enabled() -> bool:
    """False when `$TRNTUI_NO_CACHE` is set to anything but 0."""
    return os.environ.get("TRNTUI_NO_CACHE", "") in ("", "0")


def cache_min_bytes() -> int:
    try:
        return int(os.environ.get("TRNTUI_CACHE_MIN_BYTES", DEFAULT_CACHE_MIN_BYTES))
    except ValueError:
        return DEFAULT_CACHE_MIN_BYTES


def progress_enabled() -> bool:
    """False when `$TRNTUI_NO_PROGRESS` is set to anything but 0."""
    return os.environ.get("TRNTUI_NO_PROGRESS", "") in ("", "0")


def kineto_parser() -> str:
    """`TRNTUI_KINETO_PARSER`: "python" or "compiled" forces that Kineto parser; "" lets trntui choose
    (trntui/loaders/kineto/parser.py)."""
    return os.environ.get("TRNTUI_KINETO_PARSER", "").strip().lower()


def columns() -> int | None:
    """`$COLUMNS` (the shell's terminal width) when it is a number, at least 20; else None."""
    value = os.environ.get("COLUMNS", "").strip()
    return max(int(value), 20) if value.isdigit() else None


def debug() -> bool:
    return bool(os.environ.get("TRNTUI_DEBUG"))


DEFAULT_CONVERT_TIMEOUT_S = 300.0


def convert_timeout() -> float:
    """`$TRNTUI_CONVERT_TIMEOUT` in seconds (a positive number), else the default."""
    try:
        value = float(os.environ.get("TRNTUI_CONVERT_TIMEOUT", "") or DEFAULT_CONVERT_TIMEOUT_S)
    except ValueError:
        return DEFAULT_CONVERT_TIMEOUT_S
    return value if value > 0 else DEFAULT_CONVERT_TIMEOUT_S


_held: list[bool] = []
"""True while `hold_one_blas_thread` has set the variable (removed by `release_blas_hold`)."""


def hold_one_blas_thread() -> None:
    """`OPENBLAS_NUM_THREADS=1` from now until numpy is imported (formats.read_run, or
    `numpy_with_one_blas_thread`, then removes it again), unless the user chose a number or numpy is already
    loaded. The CLI calls this first, instead of importing numpy at once: the load then starts its first compiled
    scans before numpy is imported, and the import (~60 ms) runs beside them (trntui/loaders/kineto/early.py).
    Processes started while the variable is held (trntui's own workers, before their parent's first load) get one
    BLAS thread too, as they want."""
    if _held or "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    _held.append(True)


def release_blas_hold() -> None:
    """Remove the variable `hold_one_blas_thread` set, if it did (a load calls this once it has imported numpy;
    a library call that was never held keeps numpy's own BLAS threads: a notebook's linear algebra is not ours)."""
    if _held:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)
        _held.clear()


def numpy_with_one_blas_thread() -> None:
    """Import numpy with one BLAS thread, unless the user chose a number or numpy is already loaded. trntui does no
    linear algebra, and OpenBLAS starts a worker thread per extra core that spins ~0.1 s of a core at start-up
    (numpy's import: 0.23 -> 0.11 s CPU on a 2-core box), the core the scan threads need. The variable is
    removed right after the import (OpenBLAS reads it only when it loads), so processes trntui starts get the
    user's environment; `trntui profile` does not call this (the profiled workload keeps its BLAS threads)."""
    if "numpy" not in sys.modules:
        with one_blas_thread():
            import numpy  # noqa: F401
    release_blas_hold()


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """`OPENBLAS_NUM_THREADS=1` while inside (numpy imported there starts no BLAS worker thread), unless the user
    chose a number; removed again on the way out."""
    if "OPENBLAS_NUM_THREADS" in os.environ:
        yield
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)
