"""The whole export into a `ProfileBuilder` (`load_parquet_export`): the budget check, the system-trace rows of
every split part (converted side by side), the schema version, the companion tables, Explorer's warnings."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from trntui.errors import LoadError
from trntui.loaders.neuron.system import SystemRows, add_system_rows, concat_rows
from trntui.loaders.neuron.parquet.arrow import rows_from_arrow
from trntui.loaders.neuron.parquet.budget import _check_budget
from trntui.loaders.neuron.parquet.companions import read_counters
from trntui.loaders.neuron.parquet.tables import EVENTS, KNOWN_MAJOR, read_records, read_tables, table_files
from trntui.model.builder import ProfileBuilder

def read_system_rows(directory: Path) -> SystemRows:
    files = table_files(directory, EVENTS)
    if not files:
        raise LoadError(directory, f"no {EVENTS}*.parquet in this directory")
    tables = read_tables(files)
    columns = set().union(*(t.column_names for t in tables))
    if "name" not in columns or not ({"start_ts", "timestamp"} & columns):
        raise LoadError(files[0], f"{EVENTS} has no name/start_ts columns (columns: {', '.join(sorted(columns))})")
    workers = min(len(tables), os.cpu_count() or 1, 4)
    if workers < 2:
        return concat_rows([rows_from_arrow(t) for t in tables])
    # split parts converted side by side: Arrow compute and numpy release the GIL for most of the work
    with ThreadPoolExecutor(workers) as pool:
        return concat_rows(list(pool.map(rows_from_arrow, tables)))


def load_parquet_export(
    directory: str | Path,
    builder: ProfileBuilder,
    *,
    pid_filter: int | None = None,
    label: str | None = None,
    instance_hint: str = "",
    budget: int | None = None,
) -> dict[str, int]:
    """Add the export's system-trace events and companion tables to `builder`; `budget`: bytes the whole load may
    use (`LoadOptions.budget`; None: no limit), refused before reading when the export cannot fit."""
    directory = Path(directory)
    label = label or directory.name
    meta = builder.meta
    _check_budget(directory, builder, budget)
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
    meta.counters.extend(read_counters(directory, cpu, mem))
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
