"""Whether this process runs other threads: the one check for "may this process fork?" and "may it end with
os._exit?" (a leaf module: it imports nothing of trntui).

A fork copies only the calling thread, so a process with others (Dask's IO loop, a Textual worker, OpenBLAS's
pool) must not fork: the child could inherit a lock some other thread held. Python's own threads are counted
from `threading` (only when something imported it: importing it here would cost the CLI's start-up); with
`native=True` the threads the kernel lists (`/proc/self/task`) count too, those no `threading` sees (a native
pool), and a process where that cannot be read counts as having others.
"""

from __future__ import annotations

import os
import sys


def threads_alive(*, native: bool = False) -> bool:
    """Whether a thread besides the calling one is running (Python's; with `native`, the kernel's as well)."""
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return True
    if not native:
        return False
    try:
        return len(os.listdir("/proc/self/task")) != 1
    except OSError:
        return True
