"""Load progress and cancellation, without tying the core to a UI.

A shell installs a reporter around a load (`with reporting(callback): load_run(run)`); loaders call
`report(stage, done, total)` between chunks. The CLI's reporter draws one line on a terminal's stderr
(`StderrProgress`); the app's worker posts a message and raises `Cancelled` once the worker is cancelled,
which stops the load at the next chunk. No reporter installed (tests, library use): `report` does nothing.

The reporter lives in a context variable, so a thread (the app's loading worker) only sees its own.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TextIO

from trntui import settings
from trntui.errors import TrntuiError
from trntui.units import format_bytes

Reporter = Callable[[str, int, int], None]
"""`(stage, done, total)`: `total` 0 means the stage has no measurable size. May raise `Cancelled`."""

_current: ContextVar[Reporter | None] = ContextVar("trntui_progress", default=None)


class Cancelled(TrntuiError):
    """The user cancelled the load."""

    def __init__(self, message: str = "load cancelled") -> None:
        super().__init__(message)


def report(stage: str, done: int = 0, total: int = 0) -> None:
    """Tell the installed reporter (if any) that `stage` is at `done` of `total`."""
    cb = _current.get()
    if cb is not None:
        cb(stage, done, total)


def current() -> Reporter | None:
    """The reporter installed in this context, if any."""
    return _current.get()


def finished() -> None:
    """Say the load is over before printing results: a terminal's progress line is erased (so output never
    lands after it on the same line) and the next load waits its own delay before drawing."""
    report("", 0, 0)


@contextmanager
def reporting(callback: Reporter | None) -> Iterator[None]:
    """Install `callback` as this context's reporter for the duration of the block."""
    token = _current.set(callback)
    try:
        yield
    finally:
        _current.reset(token)


def silence() -> None:
    """Drop the reporter of this context (a forked child must not draw on its parent's terminal)."""
    _current.set(None)


def human_bytes(n: float) -> str:
    """Bytes through a file, in powers of 1000: `50 MB of 200 MB`."""
    return format_bytes(n, binary=False)


class StderrProgress:
    """One self-overwriting status line on a terminal's stderr for loads that take a while.

    Nothing is drawn in the first `delay` seconds (small traces print nothing extra), nor when stderr is not a
    terminal (pipes and CI logs stay clean), nor with `TRNTUI_NO_PROGRESS=1`. Redraws at most 10 times a second;
    `clear()` erases the line before the command prints its result.
    """

    def __init__(self, label: str = "", stream: TextIO | None = None, *, delay: float = 0.5, force: bool = False) -> None:
        from trntui.textsafe import unfiltered

        self.stream = stream if stream is not None else unfiltered(sys.stderr)  # draws on purpose (\r, erase line)
        self.label = label
        self.delay = delay
        self.began = time.monotonic()
        self.last_draw = 0.0
        self.drawn = False
        tty = force or (hasattr(self.stream, "isatty") and self.stream.isatty())
        self.enabled = tty and settings.progress_enabled()

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not stage:  # `finished()`
            self.clear()
            self.began = now
            return
        if now - self.began < self.delay or now - self.last_draw < 0.1:
            return
        self.last_draw = now
        line = self.format(stage, done, total, now - self.began)
        self.stream.write("\r\x1b[K" + line)
        self.stream.flush()
        self.drawn = True

    def format(self, stage: str, done: int, total: int, elapsed: float) -> str:
        from trntui.textsafe import safe_text

        head = f"trntui: {safe_text(self.label)} · " if self.label else "trntui: "
        if total > 0:
            pct = min(100, int(100 * done / total))
            what = f"{safe_text(stage)} {human_bytes(done)} of {human_bytes(total)} ({pct}%)"
        else:
            what = safe_text(stage)
        return f"{head}{what} · {elapsed:.1f} s (Ctrl-C cancels)"

    def clear(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.drawn = False


@contextmanager
def terminal_progress(label: str = "") -> Iterator[StderrProgress]:
    """A `StderrProgress` installed for the block, its line erased at the end (also on errors)."""
    bar = StderrProgress(label)
    try:
        with reporting(bar):
            yield bar
    finally:
        bar.clear()
