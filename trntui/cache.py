"""A cache of parsed profiles, so re-opening a big trace skips the JSON parse (and the default table).

One entry per run (its set of input files), in a cache directory the caller gives (`LoadOptions.cache_dir`:
`$TRNTUI_CACHE_DIR`, else `$XDG_CACHE_HOME/trntui`, else `~/.cache/trntui`), never next to the profile. An entry
is a directory of plain `.npy` arrays plus one `meta.json` (no pickle: nothing in it is executed on load). It is
valid only for the exact files it was built from: every file's resolved path, size and `mtime_ns`, and the
trntui version and cache format; anything else is a miss and the entry is rebuilt.

Stored: the event columns, names, categories, lanes, flows, metadata, the raw `args` bytes (concatenated, with
per-event offsets, so `Profile.args(i)` works as before), and the records the caller gives (named sets of
arrays plus JSON fields; trntui/session.py stores the default key_averages table so `trntui summary` on a cached
run does no parsing and no aggregation). This module stores what it is given: which runs are cached, and
what a record means, is decided by its callers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trntui.model.args import ArgsStore, Blobs
from trntui.settings import cache_dir  # noqa: F401  (the documented default location, for callers at the edge)

FORMAT = 5
"""Bumped whenever what is stored changes."""

MAX_ENTRIES = 8
"""Least recently used entries beyond this many are removed when a new one is written."""

KEPT = ("neuron", "spill")
"""Subdirectories of the cache directory that are not entries: Neuron conversions, streamed loads' spill files."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
"""Record and array names (they become file names)."""
_COLUMNS = ("start", "end", "lane", "name", "cat", "kind", "ext", "corr")
_FLOW_COLUMNS = ("key", "event", "cat", "role")


# ----------------------------------------------------------------------------------------------------
# keys
# ----------------------------------------------------------------------------------------------------
def _version() -> str:
    from trntui import __version__

    return __version__


def cacheable(files: Sequence[Path], min_bytes: int) -> bool:
    """Whether a run read from `files` is worth caching: every file readable and `min_bytes` together."""
    if not files:
        return False
    try:
        total = sum(Path(f).stat().st_size for f in files)
    except OSError:
        return False
    return total >= min_bytes


def _stamp(files: Sequence[Path]) -> dict[str, Any]:
    out = []
    for f in files:
        st = Path(f).stat()
        out.append([str(Path(f).resolve()), st.st_size, st.st_mtime_ns])
    return {"files": out, "version": _version(), "format": FORMAT}


def entry_dir(files: Sequence[Path], directory: Path) -> Path:
    """The entry directory of a set of input files (by resolved paths; validity is checked by the stamp)."""
    h = hashlib.sha256("\0".join(str(Path(f).resolve()) for f in files).encode("utf-8", "surrogateescape"))
    return directory / h.hexdigest()[:24]


# ----------------------------------------------------------------------------------------------------
# read
# ----------------------------------------------------------------------------------------------------
def load(files: Sequence[Path], directory: Path) -> tuple[Any, dict[str, dict[str, Any]]] | None:
    """(`Profile`, records) of the entry for `files`, or None (no entry, stale entry, unreadable entry)."""
    d = entry_dir(files, directory)
    try:
        meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
        if meta.get("stamp") != _stamp(files):
            return None
        entry = _read_entry(d, meta)
    except (OSError, EOFError, ValueError, KeyError, TypeError, IndexError, AttributeError):  # damaged entry: a miss
        return None
    entry[0].cache["cache_entry"] = d  # this module's memo key: where `load_derived` / `save_derived` look
    try:
        os.utime(d)  # recently used
    except OSError:
        pass
    return entry


def _read_entry(d: Path, meta: dict[str, Any]) -> Any:
    from trntui.model.profile import Flows, Lane, Profile, ProfileMeta, Tier

    def arr(name: str, mmap: bool = False) -> np.ndarray:
        return np.load(d / f"{name}.npy", mmap_mode="r" if mmap else None, allow_pickle=False)

    cols = {c: arr(c) for c in _COLUMNS}
    lanes = []
    for ld in meta["lanes"]:
        ld = dict(ld)
        ld["tier"] = Tier(ld["tier"])
        lanes.append(Lane(**ld))
    flows = Flows(**{c: arr(f"flow_{c}") for c in _FLOW_COLUMNS})
    args = ArgsStore(arr("args_blob", mmap=True), arr("args_starts"), arr("args_ends"))
    pmeta = ProfileMeta(**meta["profile_meta"])
    profile = Profile(
        names=meta["names"], cats=meta["cats"], lanes=lanes, flows=flows, args_raw=args, meta=pmeta, **cols
    )
    _check_entry(cols, flows, args, len(lanes), len(meta["names"]), len(meta["cats"]))
    records = {}
    for name, rec in meta.get("records", {}).items():
        if not all(_NAME.fullmatch(x) for x in (name, *rec["arrays"])):
            raise ValueError("bad record name")
        records[name] = {"arrays": {a: arr(f"record_{name}_{a}") for a in rec["arrays"]}, "fields": rec["fields"]}
    return profile, records


def _check_entry(cols: dict[str, np.ndarray], flows: Any, args: Any, n_lanes: int, n_names: int, n_cats: int) -> None:
    """Raise ValueError when the arrays of an entry do not fit together (a damaged or mixed-up entry)."""
    n = len(cols["start"])
    if any(a.ndim != 1 or len(a) != n for a in cols.values()):
        raise ValueError("event columns of different lengths")
    for col, limit in (("lane", n_lanes), ("name", n_names), ("cat", n_cats)):
        a = cols[col]
        if n and (int(a.min()) < 0 or int(a.max()) >= limit):
            raise ValueError(f"{col} ids out of range")
    m = len(flows.key)
    if any(len(getattr(flows, c)) != m for c in _FLOW_COLUMNS) or (m and not 0 <= int(flows.event.min()) <= int(flows.event.max()) < n):
        raise ValueError("flow columns do not fit the events")
    if len(args) != n:
        raise ValueError("args do not fit the events")


# ----------------------------------------------------------------------------------------------------
# write
# ----------------------------------------------------------------------------------------------------
def store(
    files: Sequence[Path], directory: Path, profile: Any, *, records: dict[str, Any] | None = None
) -> Path | None:
    """Write `profile` and `records` (name → {"arrays": {name: array}, "fields": JSON-able dict}, or a function
    returning one: called once the profile is written, so what it computes and the pages just written do not
    add up at the peak) as the entry for `files` under `directory`. Never raises for I/O."""
    try:
        stamp = _stamp(files)
    except OSError:
        return None
    final = entry_dir(files, directory)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=final.parent))
    except OSError:
        return None
    try:
        _write_entry(tmp, profile, stamp, records or {})
        if final.exists():
            trash = final.with_name(final.name + f".old-{os.getpid()}")
            os.replace(final, trash)
            shutil.rmtree(trash, ignore_errors=True)
        os.replace(tmp, final)
    except (OSError, TypeError, ValueError):
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    profile.cache["cache_entry"] = final
    _prune(final.parent)
    return final


def _jsonable(value: Any) -> Any:
    """Metadata values decoded from JSON are JSON again; anything else is dropped to its string."""
    import msgspec

    return json.loads(msgspec.json.encode(value, enc_hook=str))


def _write_entry(d: Path, profile: Any, stamp: dict[str, Any], records: dict[str, Any]) -> None:
    def save(name: str, a: Any) -> None:
        np.save(d / f"{name}.npy", np.ascontiguousarray(a), allow_pickle=False)

    for c in _COLUMNS:
        save(c, getattr(profile, c))
    for c in _FLOW_COLUMNS:
        save(f"flow_{c}", getattr(profile.flows, c))
    args = ArgsStore.from_raw(profile.args_raw)
    if isinstance(args.blob, Blobs) and len(args.blob):  # written piece by piece into the mapped file: no joined copy in memory
        out = np.lib.format.open_memmap(d / "args_blob.npy", mode="w+", dtype=np.uint8, shape=(len(args.blob),))
        args.blob.write_to(out)
        out.flush()
        del out
    else:
        blob = args.blob if not isinstance(args.blob, Blobs) else b""
        save("args_blob", blob if isinstance(blob, np.ndarray) else np.frombuffer(blob, np.uint8))
    save("args_starts", args.starts)
    save("args_ends", args.ends)
    lanes = []
    for lane in profile.lanes:
        ld = dataclasses.asdict(lane)
        ld["tier"] = int(lane.tier)
        lanes.append(ld)
    meta: dict[str, Any] = {
        "stamp": stamp,
        "names": list(profile.names),
        "cats": list(profile.cats),
        "lanes": lanes,
        "profile_meta": _jsonable(dataclasses.asdict(profile.meta)),
    }
    meta["records"] = {}
    for name, rec in records.items():
        rec = rec() if callable(rec) else rec
        for a, value in rec["arrays"].items():
            save(f"record_{name}_{a}", value)
        meta["records"][name] = {"arrays": list(rec["arrays"]), "fields": _jsonable(rec["fields"])}
    (d / "meta.json").write_text(json.dumps(meta), encoding="utf-8")


def _prune(root: Path) -> None:
    try:
        # other users of the cache directory keep their own subdirectories (Neuron conversions, spill files)
        entries = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".tmp-") and p.name not in KEPT]
        entries.sort(key=lambda p: p.stat().st_mtime, reverse=True)
        # leftovers of interrupted or superseded writes
        stale = [p for p in root.glob(".tmp-*") if p.stat().st_mtime < time.time() - 3600]
        stale += [p for p in entries if ".old-" in p.name]
    except OSError:
        return
    for old in stale:
        shutil.rmtree(old, ignore_errors=True)
    entries = [p for p in entries if ".old-" not in p.name]
    for old in entries[MAX_ENTRIES:]:
        shutil.rmtree(old, ignore_errors=True)


# ----------------------------------------------------------------------------------------------------
# derived arrays: what an analysis computed from a cached profile, kept beside it
# ----------------------------------------------------------------------------------------------------
def load_derived(profile: Any, name: str) -> dict[str, np.ndarray] | None:
    """Arrays an analysis stored for this cached profile under `name` (None: not cached, or not stored yet).
    They live inside the profile's entry, so they go when the entry is rebuilt for changed files."""
    d = profile.cache.get("cache_entry")
    if d is None:
        return None
    try:
        with np.load(Path(d) / f"derived_{name}.npz", allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, KeyError, EOFError):
        return None


def save_derived(profile: Any, name: str, arrays: dict[str, np.ndarray]) -> None:
    """Keep `arrays` with the cached profile (no-op for a profile that is not cached). Never raises for I/O."""
    d = profile.cache.get("cache_entry")
    if d is None:
        return
    target = Path(d) / f"derived_{name}.npz"
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=d)
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, target)
    except (OSError, ValueError, TypeError):
        try:
            os.unlink(tmp)
        except (OSError, UnboundLocalError):
            pass


def clear(directory: Path) -> None:
    """Remove every entry."""
    shutil.rmtree(directory, ignore_errors=True)
