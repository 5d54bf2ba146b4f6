"""Imported first in the local pool's forkserver (trntui/engine.py puts it first in the preload list): the
forkserver dies with trntui (`children.started`) and its error output, which every worker forked from it
inherits, goes to the file trntui reads when a worker dies (`LOG`), never to the terminal or over the app.

Importing it anywhere else does nothing: the variables it reads are set only while trntui starts a forkserver.
"""

from __future__ import annotations

import os

LOG = "TRNTUI_WORKER_LOG"
"""The file the forkserver's (and so its workers') stderr is appended to; removed once opened."""

PID: "int | None" = None
"""This forkserver's process id (None outside one): a worker forked from it checks that it is its parent."""


def _boot() -> None:
    global PID
    path = os.environ.pop(LOG, None)
    if path is None:
        return
    from trntui import children

    PID = os.getpid()
    children.started()  # no PYTHONSAFEPATH for what the workers start; dies with trntui
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    except OSError:
        return
    try:
        os.unlink(path)
    except OSError:
        pass
    os.dup2(fd, 2)
    os.close(fd)


_boot()
