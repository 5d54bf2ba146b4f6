"""The export's tables besides the events: its sampled series (host CPU, host memory, HBM) as counter lanes, and
the cheap facts `trntui info` shows (tables and rows from the footers, sources, schema version, warnings)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from trntui.loaders.neuron.system import infer_source, to_int
from trntui.loaders.neuron.parquet.tables import EVENTS, TABLES, _pyarrow, read_records, table_files
from trntui.model.profile import NO_ID

def describe_export(directory: Path) -> dict[str, Any]:
    """Cheap facts for `trntui info`: tables present, event rows (from Parquet footers), schema version,
    Explorer warnings. Never raises."""
    out: dict[str, Any] = {"tables": []}
    try:
        _pa, pq = _pyarrow()
        for table in TABLES:
            files = table_files(directory, table)
            if not files:
                continue
            rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
            out["tables"].append(f"{table} ({rows} rows)" if table != EVENTS else table)
            if table == EVENTS:
                out["events"] = rows
                out["sources"] = _source_counts(files)
            elif table in COUNTER_TABLES:
                out.setdefault("counters", {})[table] = rows
            elif table == "Warning":
                out["warnings"] = [str(r.get("message") or r) for r in (read_records(directory, "Warning") or [])[:5]]
            elif table == "Metadata":
                md = read_records(directory, "Metadata") or []
                v = next((r.get("profile_schema_version") for r in md if r.get("profile_schema_version")), None)
                if v:
                    out["schema_version"] = str(v)
    except Exception as exc:  # noqa: BLE001 - info must describe damaged files, not fail on them
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


COUNTER_TABLES = ("CpuUsage", "HostMemUsage", "SystemProfileHbmUsage")
"""Sampled series drawn as counter lanes (trntui.loaders.neuron.counters)."""


def read_counters(directory: Path, cpu: list[dict[str, Any]] | None = None,
                  mem: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The export's sampled series as counter lanes (`ProfileMeta.counters`): host CPU utilisation (the
    `average` row, else the mean over cores), host memory used, and HBM used per (device, HBM); one series per
    instance. Rows without a timestamp or value are skipped."""
    out: list[dict[str, Any]] = []

    def series(name: str, label: str, unit: str, points: list[tuple[int, float]]) -> None:
        points = sorted(points)
        if points:
            out.append({"name": name, "label": label, "unit": unit, "table": table,
                        "ts": [int(t) for t, _ in points], "values": [float(v) for _, v in points]})

    table = "CpuUsage"
    cpu = cpu if cpu is not None else (read_records(directory, table) or [])
    by_inst: dict[str, dict[int, list[float]]] = {}
    avg: dict[str, dict[int, float]] = {}
    for r in cpu:
        t, v = to_int(r.get("timestamp")), r.get("util_percent")
        if t == NO_ID or v is None:
            continue
        inst = str(r.get("instance_id") or "")
        if str(r.get("cpu_id")) == "average":
            avg.setdefault(inst, {})[t] = float(v)
        else:
            by_inst.setdefault(inst, {}).setdefault(t, []).append(float(v))
    for inst in sorted(set(avg) | set(by_inst)):
        pts = avg.get(inst) or {t: sum(vs) / len(vs) for t, vs in by_inst.get(inst, {}).items()}
        series("host CPU", "/".join(p for p in (inst, "host_cpu_util") if p), "%", list(pts.items()))
    table = "HostMemUsage"
    mem = mem if mem is not None else (read_records(directory, table) or [])
    mem_by: dict[str, list[tuple[int, float]]] = {}
    for r in mem:
        t, v = to_int(r.get("timestamp")), r.get("used_bytes")
        if t != NO_ID and v is not None:
            mem_by.setdefault(str(r.get("instance_id") or ""), []).append((t, float(v)))
    for inst, pts in sorted(mem_by.items()):
        series("host memory", "/".join(p for p in (inst, "host_mem_used") if p), "bytes", pts)
    table = "SystemProfileHbmUsage"
    hbm_by: dict[tuple[str, int, int], list[tuple[int, float]]] = {}
    for r in read_records(directory, table) or []:
        t, v = to_int(r.get("timestamp")), r.get("total_bytes")
        if t != NO_ID and v is not None:
            key = (str(r.get("instance_id") or ""), to_int(r.get("device_idx"), 0), to_int(r.get("hbm_idx"), 0))
            hbm_by.setdefault(key, []).append((t, float(v)))
    for (inst, dev, hbm), pts in sorted(hbm_by.items()):
        series("HBM used", "/".join(p for p in (inst, f"ND:{dev}", f"HBM:{hbm}") if p), "bytes", pts)
    return out


def _source_counts(files: list[Path]) -> dict[str, int]:
    """Rows per `trace_event_source` (framework / neuron_rt / neuron_hw), from that one column."""
    _pa, pq = _pyarrow()
    counts: dict[str, int] = {}
    for f in files:
        pf = pq.ParquetFile(f)
        if "trace_event_source" not in pf.schema_arrow.names:
            continue
        col = pf.read(columns=["trace_event_source"]).column(0)
        for v, c in zip(*np.unique(np.asarray(col.to_pylist(), dtype=object).astype(str), return_counts=True)):
            key = infer_source("", v) if v not in ("None", "") else "unknown"
            counts[key] = counts.get(key, 0) + int(c)
    return counts
