"""A cache of parsed profiles, so re-opening a big trace skips the JSON parse (and the default table).

One entry per run (its set of input files), in a cache directory the caller gives (`LoadOptions.cache_dir`:
`$TRNTUI_CACHE_DIR`, else `$XDG_CACHE_HOME/trntui`, else `~/.cache/trntui`), never next to the profile. An entry
is a directory of plain `.npy` arrays plus one `meta.json` (no pickle: nothing in it is executed on load).

What an entry must prove before it is served (docs/cache.md says why each check exists):
- it was built from these exact files: every file's resolved path, size, `mtime_ns`, `ctime_ns`, inode and a
  hash of its first and last 64 KiB, plus the trntui version and cache format. The stamp is taken BEFORE the
  files are read (`stamp`) and compared again after the read (`unchanged`): a file replaced during a load is
  never cached under the new file's stamp;
- it is intact: a real directory owned by this user (not a link), only regular files opened without following
  links and without blocking, `.npy` headers whose dtype, rank and length match the file's size exactly, a
  `meta.json` of the expected types and bounded nesting, and a CRC-32 of every array and of `meta.json` that
  matches (the args bytes are checked by size and bounds only: they are read lazily and decoded per event);
- it fits together (column lengths, ids in range, args offsets inside the args file).
Anything else is a miss, and the entry is removed. Writes go to `.tmp-<host>-<pid>-*` and are renamed into
place; an interrupted write (Ctrl-C, SIGTERM) removes its temporary directory at once, and temporary
directories of writers that are gone (or older than an hour) are removed by the next write.

Stored: the event columns, names, categories, lanes, flows, metadata, the raw `args` bytes (concatenated, with
per-event offsets, so `Profile.args(i)` works as before), and the records the caller gives (named sets of
arrays plus JSON fields; trntui/session.py stores the default key_averages table so `trntui summary` on a cached
run does no parsing and no aggregation). This module stores what it is given: which runs are cached, and
what a record means (and whether its values are consistent), is decided by its callers.

The package by job: `keys` (the input files' and the code's stamps, the entry's name), `read` (the checks an
entry passes before it is served, and removing one that fails them), `write` (writing an entry into place,
pruning), `derived` (arrays an analysis keeps beside a cached profile). Their shared internals (the entry's
column names, `_open_regular`) live in `keys`. This module re-exports the public names.

Modules only some paths need (msgspec, hashlib, the write path's tempfile/shutil/signal/socket, ...) are imported
where they are used: every `trntui` command imports this module, and most never read or write an entry.
"""

from __future__ import annotations

from typing import Any

from trntui.cache.keys import FORMAT, Damaged, cacheable, code_stamp, entry_dir, stamp, tree_stamp, unchanged
from trntui.settings import cache_dir  # noqa: F401  (the documented default location, for callers at the edge)

_LATER = {
    "load_derived": "derived", "save_derived": "derived",
    "clear": "read", "discard": "read", "discard_entry": "read", "load": "read", "load_records": "read",
    "read_written": "read",
    "KEPT": "write", "MAX_ENTRIES": "write", "store": "write",
}
"""Names of the modules that import numpy (reading and writing entries), imported on first use: `keys` alone
tells a miss (no entry directory), so a load that misses begins its scans before numpy is imported
(trntui/loaders/kineto/early.py)."""


def __getattr__(name: str) -> Any:
    module = _LATER.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"trntui.cache.{module}"), name)
    globals()[name] = value
    return value

__all__ = [
    "FORMAT", "KEPT", "MAX_ENTRIES", "Damaged", "cache_dir", "cacheable", "clear", "code_stamp", "discard",
    "discard_entry", "entry_dir", "load", "load_derived", "load_records", "read_written", "save_derived", "stamp",
    "store", "tree_stamp", "unchanged",
]
