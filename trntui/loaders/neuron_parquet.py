"""Read Neuron Explorer's Parquet export (`neuron-explorer view --output-format parquet`) into a `ProfileBuilder`.

Tables (neuron-formats.md §6), each globbed as `<Table>.parquet` / `<Table>_<k>.parquet` (large tables are split):
`SystemProfileEvents` (required), `SystemProfileMetadata`, `DeviceProfileList`, `CpuUsage`, `HostMemUsage`,
`Metadata` (`profile_schema_version`), `Warning`. Columns are read by name; every column except `name` and a
timestamp is optional; ids may be strings; split files with drifting schemas are concatenated with type
promotion. pyarrow is imported lazily, so reading Kineto traces never needs it.

Written against the documented schema 7.4.0 (and the 12.0.1 note) without Trainium hardware: the column set
of real exports may differ; unknown MAJOR schema versions get a warning, not a failure.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from trntui.errors import LoadError
from trntui.loaders.neuron_system import SystemRows, add_system_rows, rows_from_records
from trntui.model.builder import ProfileBuilder

EVENTS = "SystemProfileEvents"
TABLES = (
    EVENTS,
    "SystemProfileMetadata",
    "DeviceProfileList",
    "CpuUsage",
    "HostMemUsage",
    "SystemProfileHbmUsage",
    "Metadata",
    "SchemaFields",
    "Warning",
)
KNOWN_MAJOR = 12
"""Highest `profile_schema_version` MAJOR described in the docs we read (7.4.0 in 2.31, 12.0.1 in 2.33)."""


def table_files(directory: Path, table: str) -> list[Path]:
    """`<table>.parquet` and its split parts `<table>_<k>.parquet`, in part order."""
    rx = re.compile(rf"{re.escape(table)}(?:_(\d+))?\.parquet")
    found = []
    try:
        entries = list(directory.iterdir())
    except OSError:
        return []
    for p in entries:
        m = rx.fullmatch(p.name)
        if m and p.is_file():
            found.append((int(m.group(1) or -1), p))
    return [p for _, p in sorted(found)]


def is_parquet_export(directory: Path) -> bool:
    return bool(table_files(directory, EVENTS))


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - pyarrow is a dependency
        raise LoadError("pyarrow", f"is needed to read Neuron Explorer's Parquet export ({exc})") from None
    return pa, pq


def read_tables(files: list[Path]) -> list[Any]:
    """The split parts as pyarrow Tables (each keeps its own schema: parts may drift, e.g. ids as strings)."""
    _pa, pq = _pyarrow()
    tables = []
    for f in files:
        try:
            tables.append(pq.read_table(f))
        except Exception as exc:  # noqa: BLE001 - pyarrow raises many types for damaged files
            raise LoadError(f, f"not a readable Parquet file ({type(exc).__name__}: {exc})") from None
    return tables


def read_records(directory: Path, table: str) -> list[dict[str, Any]] | None:
    """Rows of one table (all parts) as dicts, or None when the table is absent."""
    files = table_files(directory, table)
    if not files:
        return None
    return [r for t in read_tables(files) for r in t.to_pylist()]


def read_system_rows(directory: Path) -> SystemRows:
    files = table_files(directory, EVENTS)
    if not files:
        raise LoadError(directory, f"no {EVENTS}*.parquet in this directory")
    tables = read_tables(files)
    columns = set().union(*(t.column_names for t in tables))
    if "name" not in columns or not ({"start_ts", "timestamp"} & columns):
        raise LoadError(files[0], f"{EVENTS} has no name/start_ts columns (columns: {', '.join(sorted(columns))})")
    return rows_from_records([r for t in tables for r in t.to_pylist()])


def load_parquet_export(
    directory: str | Path,
    builder: ProfileBuilder,
    *,
    pid_filter: int | None = None,
    label: str | None = None,
    instance_hint: str = "",
) -> dict[str, int]:
    """Add the export's system-trace events and companion tables to `builder`."""
    directory = Path(directory)
    label = label or directory.name
    meta = builder.meta
    rows = read_system_rows(directory)
    meta.sources.append(str(directory))
    info: dict[str, Any] = {"export": str(directory), "format": "parquet"}

    version = None
    md = read_records(directory, "Metadata")
    if md:
        version = next((str(r["profile_schema_version"]) for r in md if r.get("profile_schema_version")), None)
        info["metadata"] = md[0]
    if version:
        info["profile_schema_version"] = version
        try:
            major = int(version.split(".")[0])
        except ValueError:
            major = None
        if major is not None and major > KNOWN_MAJOR:
            meta.notes.append(
                f"{label}: Parquet schema {version} is newer than the documented ones (7.4.0, 12.0.1); "
                "columns are read by name and missing ones tolerated"
            )
    spm = read_records(directory, "SystemProfileMetadata")
    if spm:
        info["system_profile_metadata"] = spm[0]
    dpl = read_records(directory, "DeviceProfileList")
    if dpl is not None:
        info["device_profile_list"] = dpl
    host: dict[str, Any] = {}
    cpu = read_records(directory, "CpuUsage")
    if cpu:
        avg = [float(r["util_percent"]) for r in cpu if str(r.get("cpu_id")) == "average" and r.get("util_percent") is not None]
        host["cpu_usage"] = {"samples": len(cpu), "average_util_percent": (sum(avg) / len(avg)) if avg else None}
    mem = read_records(directory, "HostMemUsage")
    if mem:
        used = [int(r["used_bytes"]) for r in mem if r.get("used_bytes") is not None]
        host["host_memory"] = {"samples": len(mem), "max_used_bytes": max(used) if used else None}
    if host:
        info["host_samples"] = host
    warnings = read_records(directory, "Warning")
    if warnings:
        for w in warnings[:20]:
            text = w.get("message") or w.get("warning") or ", ".join(f"{k}={v}" for k, v in w.items())
            meta.notes.append(f"{label}: Explorer warning: {text}")
        if len(warnings) > 20:
            meta.notes.append(f"{label}: {len(warnings) - 20} more Explorer warning(s)")
    stats = add_system_rows(rows, builder, label=label, pid_filter=pid_filter, instance_hint=instance_hint)
    info["stats"] = stats
    meta.trace_meta.setdefault("neuron", []).append(info)
    return stats
