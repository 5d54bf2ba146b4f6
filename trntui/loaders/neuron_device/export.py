"""`load_device(path)`: one device profile directory → `DeviceExport` (typed tables of the used columns)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from trntui.errors import LoadError
from trntui.loaders.neuron_device import schema
from trntui.loaders.neuron_device.reader import read_table, row_count
from trntui.model.device import DeviceExport, Identity, TableRead
from trntui.textsafe import safe_text

def _first_row(t: TableRead | None) -> dict[str, Any]:
    if t is None or not len(t.frame):
        return {}
    row = t.frame.iloc[0].to_dict()
    out: dict[str, Any] = {}
    for k, v in row.items():
        if k in t.absent:
            continue
        if isinstance(v, float) and not math.isfinite(v):
            continue
        out[k] = v.item() if hasattr(v, "item") else v
    return out


def _table_notes(t: TableRead, version: str, fields_by_table: dict[str, list[str]]) -> list[str]:
    """What reading one table lost: rows skipped (why), values unusable, required fields not found."""
    out = []
    if t.skipped_rows:
        why = "; ".join(f"{n:,} {r}" for r, n in t.skip_reasons.items()) or "no timestamp"
        out.append(f"{t.name}: {t.skipped_rows:,} of {t.skipped_rows + len(t.frame):,} rows skipped ({why})")
    kinds = {f.name: f.kind for f in schema.fields(t.name)}
    for fname, n in t.bad_values.items():
        if kinds.get(fname) == "str":
            out.append(f"{t.name}.{fname}: {n:,} values not text (lists, structs, binary), read as unknown (empty)")
        else:
            out.append(f"{t.name}.{fname}: {n:,} values not a number in range, read as unknown (0)")
    if t.missing_required:
        out.append(missing_fields_note(t.name, t.missing_required, version, fields_by_table.get(t.name) or []))
    return out


def missing_fields_note(table: str, names: list[str], version: str, have: list[str]) -> str:
    """`Instruction: required field 'engine' not found (profile_schema_version 12.0.1; the file has 'engine_name':
    renamed?); loaded without it`."""
    import difflib

    known = {f.name for f in schema.fields(table)}
    parts = []
    for name in names:
        close = difflib.get_close_matches(name, [c for c in have if c not in known], n=1, cutoff=0.6)
        parts.append(f"'{name}'" + (f" (the file has '{safe_text(close[0])}': renamed?)" if close else ""))
    return (f"{table}: required field{'s' if len(names) > 1 else ''} {', '.join(parts)} not found in profile_schema_version "
            f"{safe_text(version[:40])} (trntui reads the {schema.DOCUMENTED_VERSION} fields by name); "
            "figures that need it are shown as unknown")


def _schema_fields(directory: Path) -> dict[str, list[str]]:
    """SchemaFields: table → field names the export says it has (used to name a renamed field)."""
    try:
        t = read_table(directory, "SchemaFields")
    except LoadError:
        return {}
    if t is None:
        return {}
    out: dict[str, list[str]] = {}
    for table, name in zip(t.frame["table_name"].astype(str), t.frame["field_name"].astype(str)):
        out.setdefault(table, []).append(name)
    return out


def table_rows(directory: Path) -> int:
    """Rows of every table trntui reads from a device profile, from the Parquet footers (nothing is decoded)."""
    from trntui.loaders.neuron.parquet import table_files

    return sum(row_count(p) for t in schema.TABLES for p in table_files(directory, t))


def check_budget(directory: Path, budget: int | None, per_row: int | None = None, how: str = "this device profile") -> None:
    """`OverBudget` (one line: what it would need) when reading the profile's tables (and what follows, `per_row`
    bytes a row: `memory.DEVICE_REPORT_BYTES_PER_ROW` by default) cannot fit `budget`; checked from the footers,
    before anything is read."""
    if budget is None:
        return
    from trntui import memory

    rows, instructions = table_rows(directory), instruction_rows(directory)
    needed = memory.DEVICE_FIXED_BYTES + rows * (per_row or memory.DEVICE_REPORT_BYTES_PER_ROW)
    if needed > budget:
        others = f" and {rows - instructions:,} other table row{'s' if rows - instructions != 1 else ''}" if rows > instructions else ""
        raise memory.over_budget(directory, needed, budget, f"{how} ({instructions:,} instructions{others})")


def load_device(path: str | Path, identity: Identity | None = None, *, budget: int | None = None,
                per_row: int | None = None) -> DeviceExport:
    """Read the device profile in directory `path` (LoadError with one line when it is not one). `budget`: bytes
    the read and the analysis after it may take (None: no limit): an export that cannot fit is refused before
    it is read (`check_budget`, `per_row` bytes a row)."""
    directory = Path(path)
    if not directory.is_dir():
        raise LoadError(directory, "not a directory (a device profile is a directory of Parquet tables)")
    from trntui.loaders.neuron.parquet import table_files

    if not table_files(directory, "Instruction"):
        raise LoadError(directory, "not a Neuron device profile: no Instruction.parquet (or Instruction_<k>.parquet)")
    check_budget(directory, budget, per_row)
    meta_t = read_table(directory, "Metadata")
    metadata = _first_row(meta_t)
    version = str(metadata.get("profile_schema_version") or "")[:64]  # (a 5,000-digit version is junk, not a version)
    fields_by_table = _schema_fields(directory)
    notes: list[str] = []
    if meta_t is None:
        notes.append("no Metadata table: schema version and hardware figures unknown")
    elif not version:
        notes.append("Metadata has no profile_schema_version")
    else:
        mj = schema.major(version)
        if mj is None:
            notes.append(f"profile_schema_version {safe_text(version[:40])!r} is not MAJOR.MINOR.PATCH: columns are read by name")
        elif mj != schema.DOCUMENTED_MAJOR:
            side = "newer" if mj > (schema.DOCUMENTED_MAJOR or 0) else "older"
            notes.append(
                f"profile_schema_version {version} is a {side} MAJOR version than the {schema.DOCUMENTED_VERSION} "
                "trntui's field lists come from: columns are read by name"
            )
    tables: dict[str, TableRead] = {}
    missing: list[str] = []
    if meta_t is not None:
        tables["Metadata"] = meta_t
    for name in schema.TABLES:
        if name in tables:
            continue
        t = read_table(directory, name, version=version, schema_fields=fields_by_table)
        if t is None:
            if name not in schema.REQUIRED_TABLES:
                missing.append(name)
            continue
        tables[name] = t
        notes += _table_notes(t, version, fields_by_table)
    ident = identity or Identity.from_name(directory.name)
    if ident.nc is None and "neuroncore_idx" in metadata and "neuroncore_idx" not in tables["Metadata"].absent:
        ident.nc = int(metadata["neuroncore_idx"])
    warnings = []
    w = tables.get("Warning")
    if w is not None:
        warnings = [f"{c}: {m}" if c else str(m) for c, m in zip(w.frame["category"].astype(str), w.frame["message"].astype(str))]
    return DeviceExport(
        path=directory,
        identity=ident,
        version=version,
        tables=tables,
        missing=missing,
        metadata=metadata,
        summary=_first_row(tables.get("Summary")),
        notes=notes,
        warnings=warnings,
    )


def instruction_rows(directory: Path) -> int:
    """Rows of the Instruction table, from the Parquet footers (cheap: nothing is decoded)."""
    from trntui.loaders.neuron.parquet import table_files

    return sum(row_count(p) for p in table_files(directory, "Instruction"))


def describe_device(directory: Path, identity: Identity | None = None) -> dict[str, Any]:
    """What a device profile holds, from the Parquet footers only (for `trntui info`: nothing is decoded but the
    one-row Metadata): tables with files and rows, used columns the files lack, unread columns, optional tables
    missing, and a required column missing (a renamed field) as a problem line."""
    from trntui.loaders.neuron_device.reader import file_columns
    from trntui.loaders.neuron.parquet import table_files

    ident = identity or Identity.from_name(directory.name)
    doc: dict[str, Any] = {"path": str(directory), "name": ident.name or directory.name, "instance": ident.instance or None,
                           "pid": ident.pid, "nc": ident.nc, "tables": {}, "missing_optional_tables": [], "problems": []}
    try:
        meta = read_table(directory, "Metadata")
        md = _first_row(meta)
    except LoadError as exc:
        md = {}
        doc["problems"].append(str(exc.problem))
    doc["profile_schema_version"] = md.get("profile_schema_version")
    v = str(md.get("profile_schema_version") or "")[:64]
    if v and schema.major(v) != schema.DOCUMENTED_MAJOR:
        doc.setdefault("schema_notes", []).append(
            f"profile_schema_version {safe_text(v)}: not the {schema.DOCUMENTED_VERSION} MAJOR trntui's field lists come "
            "from; every table is read by field name")
    doc["instance_type"] = md.get("instance_type")
    for table in schema.TABLES:
        files = table_files(directory, table)
        if not files:
            if table not in schema.REQUIRED_TABLES:
                doc["missing_optional_tables"].append(table)
            else:
                doc["problems"].append(f"no {table} table: not a device profile trntui can show")
            continue
        try:
            cols = file_columns(files[0])
        except LoadError as exc:
            doc["problems"].append(f"{files[0].name}: {exc.problem}")
            continue
        used = schema.fields(table)
        names = {f.name for f in used}
        version = str(doc["profile_schema_version"] or "")[:64]
        lost = [f.name for f in used if f.required and f.name not in cols and schema.tolerates_missing(version, f)]
        for f in used:
            if f.required and f.name not in cols and f.name not in lost:
                doc["problems"].append(f"{files[0].name}: required column '{f.name}' missing (renamed in a newer schema?)")
        if lost:
            doc.setdefault("fields_not_found", {})[table] = lost
            doc.setdefault("schema_notes", []).append(missing_fields_note(table, lost, version, cols))
        doc["tables"][table] = {
            "files": [p.name for p in files],
            "rows": sum(row_count(p) for p in files),
            "absent_optional_columns": [f.name for f in used if not f.required and f.name not in cols],
            "unread_columns": len([c for c in cols if c not in names]),
        }
    return doc
