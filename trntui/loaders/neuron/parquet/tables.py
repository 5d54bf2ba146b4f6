"""The tables of Neuron Explorer's Parquet export: their names, a table's split parts (`<Table>.parquet`,
`<Table>_<k>.parquet`, regular files only), and reading them with pyarrow (imported lazily)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from trntui import fsio
from trntui.errors import LoadError

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
    """`<table>.parquet` and its split parts `<table>_<k>.parquet`, in part order. A part that is not a regular
    file (a FIFO, a device, a dangling link: pyarrow would block on a FIFO, for ever) is a `LoadError` naming it
    (trntui/fsio.py), never opened; a directory of that name is not a part."""
    rx = re.compile(rf"{re.escape(table)}(?:_(\d+))?\.parquet")
    found = []
    try:
        entries = list(directory.iterdir())
    except OSError:
        return []
    for p in entries:
        m = rx.fullmatch(p.name)
        if m and not p.is_dir():
            fsio.check_regular(p, what="a Parquet file")
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
