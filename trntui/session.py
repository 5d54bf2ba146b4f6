"""Loading a run: the one use-case every shell (CLI commands, the app, bench) calls.

`load_run(run, options)` = the parsed-profile cache (trntui/cache/) when it holds the run, else the run's
format reads it (trntui/formats.py) and, when the run is worth caching, the profile and its default key_averages
table are written to the cache. The options are explicit (`LoadOptions`); without them they come from the
documented user variables, read here, once per call (trntui/settings.py).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trntui.errors import LoadError
from trntui.formats import find_runs, finish, inputs_of, read_run, reporting
from trntui.loaders.discover import Run
from trntui.loaders.protocol import LoadOptions

if TYPE_CHECKING:  # (the model imports numpy: formats.py `read_run` imports it once the load has begun)
    from trntui.model.profile import Profile

__all__ = ["LoadOptions", "Run", "cached", "find_runs", "load_path", "load_profile", "load_run"]

TABLE = "key_averages"
"""The cache record holding the default key_averages table (`trntui summary` on a cached run does no analysis)."""


def _options(options: LoadOptions | None, cache_flag: bool | None, memory_budget: Any) -> LoadOptions:
    if options is not None:
        return options
    return LoadOptions.from_env(memory_budget=memory_budget, cache=True if cache_flag is None else cache_flag)


def load_run(
    run: Run, options: LoadOptions | None = None, *, cache: bool | None = None, memory_budget: str | int | None = None,
    on_profile: Any = None,
) -> Profile:
    """Read one run into a `Profile`, through the parsed-profile cache when it is on and the run is worth it.

    `options`: how to load (memory budget, cache, progress, cancel). Without them: `LoadOptions.from_env` with
    `cache` (default True) and `memory_budget` (bytes, a size string such as `4G`, "none", or None/"auto").
    Kineto files that do not fit in memory are streamed, and refused when not even that fits (trntui/memory.py).
    `on_profile(tmp)`: when the run is written to the cache, called once the profile is in the entry's temporary
    directory, before its table is computed (`cache.store`; the app's loader process tells the app).
    """
    options = _options(options, cache, memory_budget).resolved()
    with reporting(options):
        inputs = inputs_of(run) if options.cache else None
        use_cache = options.cache and options.cache_dir is not None
        if use_cache:
            from trntui import cache as profile_cache  # here: a load without the cache never imports it (~17 ms)

            hit = _read_cache(run, options, inputs)
            if hit is not None:
                return hit
        # the inputs' identity is taken BEFORE they are read: a file replaced during the load (a new capture
        # landing) is then never cached under the new file's identity (trntui/cache/)
        before = profile_cache.stamp(inputs) if use_cache and inputs else None
        # a load whose profile goes into the cache copies its args at the scan: packing them back from the trace
        # file for the entry cost more than the copy (`LoadOptions.args_from_file`; measured on the 2M trace's
        # first `summary`: 1.50 s against 1.23 s)
        writes = bool(use_cache and inputs and profile_cache.cacheable(inputs, options.cache_min_bytes))
        profile = read_run(run, dataclasses.replace(options, args_from_file=False) if writes else options)
        if use_cache:
            from trntui.progress import report

            report("writing the cache", 0, 0)
            if inputs and profile_cache.cacheable(inputs, options.cache_min_bytes):
                if not profile_cache.unchanged(inputs, before):
                    profile.meta.notes.append(
                        "the trace changed while it was read (not cached; load it again for the new content)")
                else:
                    from trntui.analysis.key_averages import key_averages

                    table = lambda: _table_record(key_averages(profile))  # noqa: E731  (computed after the columns are written)
                    profile_cache.store(inputs, options.cache_dir, profile, records={TABLE: table}, stamp=before,
                                        on_profile=on_profile)
    return profile


def cached(run: Run, options: LoadOptions | None = None) -> Profile | None:
    """The run's profile from the parsed-profile cache, or None (off, not cacheable, no entry or a stale one)."""
    options = _options(options, None, None)
    if not options.cache or options.cache_dir is None:
        return None
    return _read_cache(run, options, inputs_of(run))


def _read_cache(run: Run, options: LoadOptions, inputs: list[Path] | None) -> Profile | None:
    from trntui import cache as profile_cache

    if not inputs or options.cache_dir is None or not profile_cache.cacheable(inputs, options.cache_min_bytes):
        return None
    if not os.path.lexists(profile_cache.entry_dir(inputs, options.cache_dir)):
        return None  # a miss, told without reading (or importing numpy): the load begins its scans first
    entry = profile_cache.load(inputs, options.cache_dir)
    if entry is None:
        return None
    profile, records = entry
    finish(run, profile)
    if not with_records(profile, records):
        profile_cache.discard(inputs, options.cache_dir)
        return None
    return profile


def with_records(profile: Profile, records: dict[str, Any]) -> bool:
    """Take the cache records of a cached `profile` (its key_averages table); False when a record has another
    shape or values that do not add up (a damaged or forged entry: a miss)."""
    table = records.get(TABLE)
    if table is not None:
        try:
            _remember_table(profile, table)
        except (KeyError, TypeError, ValueError, IndexError, OverflowError):
            return False
    return True


def _table_record(table: Any) -> dict[str, Any]:
    """The default key_averages table as a cache record: its array fields as arrays, `rows_events` as one array
    plus offsets, every other field as JSON (whatever fields the table has: trntui/cache/ stores it as given)."""
    import dataclasses

    import numpy as np

    arrays: dict[str, np.ndarray] = {}
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(table):
        value = getattr(table, f.name)
        if isinstance(value, np.ndarray):
            arrays[f.name] = value
        elif isinstance(value, list) and value and all(isinstance(v, np.ndarray) for v in value):
            arrays[f.name] = np.concatenate([np.asarray(v, np.int64) for v in value])
            offsets = np.zeros(len(value) + 1, np.int64)
            np.cumsum([len(v) for v in value], out=offsets[1:])
            arrays[f.name + ".offsets"] = offsets
        else:
            fields[f.name] = _plain(value)
    return {"arrays": arrays, "fields": fields}


def _plain(value: Any) -> Any:
    """JSON-able Python values for numpy scalars inside a table's fields (sums are numpy floats)."""
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _remember_table(profile: Profile, record: dict[str, Any]) -> None:
    from trntui.analysis.key_averages import OpTable, remember

    arrays, fields = record["arrays"], dict(record["fields"])
    for name, a in arrays.items():
        if name.endswith(".offsets"):
            continue
        if name + ".offsets" in arrays:
            b = arrays[name + ".offsets"]
            fields[name] = [a[b[k] : b[k + 1]] for k in range(len(b) - 1)]
        else:
            fields[name] = a
    _check_types(OpTable, fields)
    table = OpTable(**fields)
    if any(len(getattr(table, k)) != len(table) for k, v in arrays.items() if not k.endswith(".offsets")):
        raise ValueError("table columns do not fit the rows")
    _check_table(profile, table, fields)
    remember(profile, table)


def _check_types(cls: Any, fields: dict[str, Any]) -> None:
    """Every JSON field of a record has its dataclass field's type (a string where a number belongs is a
    TypeError here, not in the middle of printing a table)."""
    import dataclasses
    import typing

    import msgspec
    import numpy as np

    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    for name, value in fields.items():
        if name not in known:
            raise TypeError(f"unknown field {name}")
        if isinstance(value, list) and value and all(isinstance(v, np.ndarray) for v in value):
            if any(v.dtype.kind not in "iu" or v.ndim != 1 for v in value):
                raise TypeError(f"{name}: not index arrays")
            continue
        if isinstance(value, np.ndarray):
            if value.dtype.kind not in "biuf" or value.ndim != 1:
                raise TypeError(f"{name}: not a numeric column")
            continue
        hint = hints[name]
        if "ndarray" in str(hint):
            if value is None or (isinstance(value, list) and not value):  # no rows / not recorded
                continue
            raise TypeError(f"{name}: an array field stored as JSON")
        try:
            msgspec.convert(value, hint, strict=True)
        except msgspec.ValidationError as exc:
            raise TypeError(f"{name}: {exc}") from None


def _check_table(profile: Profile, table: Any, fields: dict[str, Any]) -> None:
    """A cached table is served only when its numbers are what its columns say: finite, counts >= 0, rows'
    events inside the profile, and the stored totals equal to the columns' sums (percentages are computed
    from these, so a forged total would show as a forged percentage)."""
    import numpy as np

    for name in ("self_cpu_time_total", "cpu_time_total", "self_device_time_total", "device_time_total"):
        if not np.all(np.isfinite(np.asarray(getattr(table, name), np.float64))):
            raise ValueError(f"{name}: not finite")
    if len(table) and int(np.min(table.count)) < 0:
        raise ValueError("negative counts")
    n = len(profile)
    for ev in table.rows_events:
        if len(ev) and (int(ev.min()) < 0 or int(ev.max()) >= n):
            raise ValueError("row events outside the profile")
    cpu, dev = table.totals()
    for stored, actual in ((table.sum_self_cpu, cpu), (table.sum_self_device, dev)):
        if not np.isfinite(stored) or abs(stored - actual) > 1e-6 * max(1.0, abs(actual)):
            raise ValueError("stored totals do not match the columns")


def load_profile(path: str | Path, options: LoadOptions | None = None) -> Profile:
    """Load a trace file, or a directory holding exactly one run."""
    runs = find_runs(Path(path))
    if len(runs) > 1:
        names = ", ".join(r.name for r in runs[:6])
        raise LoadError(path, f"holds {len(runs)} runs ({names}{', ...' if len(runs) > 6 else ''}); pick one")
    return load_run(runs[0], options)


def load_path(path: str | Path, options: LoadOptions | None = None) -> list[tuple[Run, Profile]]:
    """Every run under `path`, loaded."""
    return [(run, load_run(run, options)) for run in find_runs(Path(path))]
