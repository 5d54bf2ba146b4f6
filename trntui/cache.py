"""A cache of parsed profiles, so re-opening a big trace skips the JSON parse (and key_averages).

One entry per run (its set of trace files), in the user cache dir (`$TRNTUI_CACHE_DIR`, else
`$XDG_CACHE_HOME/trntui`, else `~/.cache/trntui`), never next to the profile. An entry is a directory of
plain `.npy` arrays plus one `meta.json` (no pickle: nothing in it is executed on load). It is valid only for
the exact files it was built from: every file's resolved path, size and `mtime_ns`, and the trntui version
and cache format; anything else is a miss and the entry is rebuilt.

Stored: the event columns, names, categories, lanes, flows, metadata, the raw `args` bytes (concatenated,
with per-event offsets, so `Profile.args(i)` works as before), and the default key_averages table, so
`trntui summary` on a cached run does no parsing and no aggregation.

Runs whose every input file is known are cached: Kineto traces, and Neuron runs read from an Explorer export
(their trace.json, every file of the export and mapping files make the key; a raw capture converted by an
external tool is not cached), and only when the files are big enough to be worth it (`TRNTUI_CACHE_MIN_BYTES`, default 8 MB). `TRNTUI_NO_CACHE=1`
disables the cache; `trntui summary --no-cache` bypasses it for one command.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from collections.abc import Sequence
from typing import Any

import numpy as np

from trntui.model.args import ArgsStore, Blobs

FORMAT = 3
"""Bumped whenever what is stored changes."""

DEFAULT_MIN_BYTES = 8 << 20
MAX_ENTRIES = 8
"""Least recently used entries beyond this many are removed when a new one is written."""

_COLUMNS = ("start", "end", "lane", "name", "cat", "kind", "ext", "corr")
_FLOW_COLUMNS = ("key", "event", "cat", "role")
_TABLE_ARRAYS = (
    "is_user_annotation",
    "count",
    "self_cpu_time_total",
    "cpu_time_total",
    "self_device_time_total",
    "device_time_total",
    "cpu_memory_usage",
    "self_cpu_memory_usage",
    "device_memory_usage",
    "self_device_memory_usage",
    "in_device_total",
)


def cache_dir() -> Path:
    """Where entries live: `$TRNTUI_CACHE_DIR`, else `$XDG_CACHE_HOME/trntui`, else `~/.cache/trntui`."""
    explicit = os.environ.get("TRNTUI_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "trntui"


def enabled() -> bool:
    return os.environ.get("TRNTUI_NO_CACHE", "") in ("", "0")


def min_bytes() -> int:
    try:
        return int(os.environ.get("TRNTUI_CACHE_MIN_BYTES", DEFAULT_MIN_BYTES))
    except ValueError:
        return DEFAULT_MIN_BYTES


# ----------------------------------------------------------------------------------------------------
# keys
# ----------------------------------------------------------------------------------------------------
def _version() -> str:
    from trntui import __version__

    return __version__


def _inputs(run: Any) -> list[Path] | None:
    """Every file the run is read from: its Kineto traces, plus the declared inputs of its other loaders
    (Neuron exports); None when a loader's inputs are not known."""
    if getattr(run, "extra_loaders", None):
        inputs = getattr(run, "inputs", None)
        return list(inputs) if inputs else None
    return list(getattr(run, "framework_traces", []) or [])


def cacheable(run: Any) -> bool:
    """Runs whose every input file is known (Kineto traces, Neuron exports), readable and big enough together."""
    files = _inputs(run)
    if not files:
        return False
    try:
        total = sum(Path(f).stat().st_size for f in files)
    except OSError:
        return False
    return total >= min_bytes()


def _stamp(files: Sequence[Path]) -> dict[str, Any]:
    out = []
    for f in files:
        st = Path(f).stat()
        out.append([str(Path(f).resolve()), st.st_size, st.st_mtime_ns])
    return {"files": out, "version": _version(), "format": FORMAT}


def entry_dir(files: Sequence[Path]) -> Path:
    """The entry directory of a set of trace files (by resolved paths; validity is checked by the stamp)."""
    h = hashlib.sha256("\0".join(str(Path(f).resolve()) for f in files).encode("utf-8", "surrogateescape"))
    return cache_dir() / h.hexdigest()[:24]


# ----------------------------------------------------------------------------------------------------
# read
# ----------------------------------------------------------------------------------------------------
def load(run: Any) -> Any | None:
    """The cached `Profile` of `run`, or None (not cacheable, no entry, stale entry, unreadable entry)."""
    if not enabled() or not cacheable(run):
        return None
    files = _inputs(run) or []
    d = entry_dir(files)
    try:
        meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
        if meta.get("stamp") != _stamp(files):
            return None
        profile = _read_entry(d, meta)
    except (OSError, EOFError, ValueError, KeyError, TypeError, IndexError, AttributeError):  # damaged entry: a miss
        return None
    profile.cache["cache_entry"] = d
    try:
        os.utime(d)  # recently used
    except OSError:
        pass
    return profile


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
    if "table" in meta:
        profile.cache[("key_averages", False)] = _read_table(d, meta["table"], arr)
    return profile


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


def _read_table(d: Path, tmeta: dict[str, Any], arr: Any) -> Any:
    from trntui.analysis.key_averages import OpTable

    arrays = {k: arr(f"table_{k}") for k in _TABLE_ARRAYS}
    members = arr("table_members")
    bounds = arr("table_member_offsets")
    rows = len(tmeta["name"])
    if any(a.ndim != 1 or len(a) != rows for a in arrays.values()) or len(bounds) != rows + 1:
        raise ValueError("table columns do not fit the rows")
    rows_events = [members[bounds[k] : bounds[k + 1]] for k in range(len(bounds) - 1)]
    return OpTable(
        name=tmeta["name"],
        device_type=tmeta["device_type"],
        input_shapes=tmeta["input_shapes"],
        backend=tmeta["backend"],
        rows_events=rows_events,
        sum_self_cpu=tmeta["sum_self_cpu"],
        sum_self_device=tmeta["sum_self_device"],
        device_time_source=tmeta["device_time_source"],
        link_counts=tmeta["link_counts"],
        profile_memory=bool(tmeta.get("profile_memory", False)),
        **arrays,
    )


# ----------------------------------------------------------------------------------------------------
# write
# ----------------------------------------------------------------------------------------------------
def store(run: Any, profile: Any, *, with_table: bool = True) -> Path | None:
    """Write `profile` (and its default key_averages table) as the entry of `run`. Never raises for I/O."""
    if not enabled() or not cacheable(run):
        return None
    files = _inputs(run) or []
    try:
        stamp = _stamp(files)
    except OSError:
        return None
    final = entry_dir(files)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=final.parent))
    except OSError:
        return None
    try:
        _write_entry(tmp, profile, stamp, with_table)
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


def _write_entry(d: Path, profile: Any, stamp: dict[str, Any], with_table: bool) -> None:
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
    if with_table:
        from trntui.analysis.key_averages import key_averages

        table = key_averages(profile)
        for k in _TABLE_ARRAYS:
            save(f"table_{k}", getattr(table, k))
        members = [np.asarray(m, np.int64) for m in table.rows_events]
        save("table_members", np.concatenate(members) if members else np.zeros(0, np.int64))
        bounds = np.zeros(len(members) + 1, np.int64)
        np.cumsum([len(m) for m in members], out=bounds[1:])
        save("table_member_offsets", bounds)
        meta["table"] = {
            "name": table.name,
            "device_type": table.device_type,
            "input_shapes": table.input_shapes,
            "backend": table.backend,
            "sum_self_cpu": table.sum_self_cpu,
            "sum_self_device": table.sum_self_device,
            "device_time_source": table.device_time_source,
            "link_counts": table.link_counts,
            "profile_memory": table.profile_memory,
        }
    (d / "meta.json").write_text(json.dumps(meta), encoding="utf-8")


def _prune(root: Path) -> None:
    try:
        # `neuron/` holds raw-capture conversions (trntui.loaders.neuron.convert), not parsed-profile entries
        entries = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".tmp-") and p.name != "neuron"]
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
    if d is None or not enabled():
        return None
    try:
        with np.load(Path(d) / f"derived_{name}.npz", allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, KeyError, EOFError):
        return None


def save_derived(profile: Any, name: str, arrays: dict[str, np.ndarray]) -> None:
    """Keep `arrays` with the cached profile (no-op for a profile that is not cached). Never raises for I/O."""
    d = profile.cache.get("cache_entry")
    if d is None or not enabled():
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


def clear() -> None:
    """Remove every entry."""
    shutil.rmtree(cache_dir(), ignore_errors=True)
