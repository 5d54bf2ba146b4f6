"""Read Neuron Explorer's device-profile Parquet tables: only the columns trntui uses, by name, split tables glued.

A device profile is a directory of `<Table>.parquet` files (large tables split into `<Table>_<k>.parquet`),
written by `neuron-explorer view` for one NeuronCore (session mode: every execution of a session; model mode: the
first execution of one NEFF). Each table is read with `columns=` set to the fields in `schema.TABLES` that the
file has, so unknown columns cost nothing and a renamed optional column is only reported. Values are typed as
the schema says: ids and timestamps given as strings are parsed, nulls become the column's default.

Written against the documented schema without a Trainium (no real device export was available): the loader
tolerates what the docs allow (missing optional tables/fields, split files, extra columns) and stops with one
line when a required field is missing.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from trntui.errors import LoadError
from trntui.loaders.neuron.parquet import table_files
from trntui.loaders.neuron_device import schema
from trntui.model.device import TableRead

DEFAULT_ID = -1
"""Value of a missing id (raw_framework_id, raw_hlo_id, ...)."""


def _pa():
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - pyarrow is a dependency
        raise LoadError("pyarrow", f"is needed to read Neuron Explorer's Parquet export ({exc})") from None
    return pa, pc, pq


def file_columns(path: Path) -> list[str]:
    """Column names of one Parquet file (its footer only)."""
    _, _, pq = _pa()
    try:
        return list(pq.ParquetFile(path).schema_arrow.names)
    except Exception as exc:  # noqa: BLE001 - any pyarrow failure is a damaged file
        raise LoadError(path, f"not a readable Parquet file ({type(exc).__name__}: {str(exc).splitlines()[0][:160]})") from None


def row_count(path: Path) -> int:
    _, _, pq = _pa()
    try:
        return int(pq.ParquetFile(path).metadata.num_rows)
    except Exception:  # noqa: BLE001
        return 0


def _missing_required(table: str, path: Path, name: str, columns: list[str], version: str, schema_fields: dict[str, list[str]]) -> LoadError:
    """The one line for a required field the file lacks: which field, which schema version, what it may be now."""
    known = {f.name for f in schema.fields(table)}
    candidates = [c for c in (schema_fields.get(table) or columns) if c not in known]
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    hint = f"; the file has '{close[0]}' instead (renamed?)" if close else ""
    ver = f"profile_schema_version {version}" if version else "no profile_schema_version"
    return LoadError(
        path,
        f"required column '{name}' of {table} is missing ({ver}; trntui reads the documented "
        f"{schema.DOCUMENTED_VERSION} fields by name, so a newer MAJOR version renamed or removed it){hint}",
    )


def _typed(col: Any, kind: str, n: int, default: Any) -> Any:
    """A pyarrow column as numpy (numbers, bools) or a pandas Categorical (strings), nulls → `default`."""
    pa, pc, _ = _pa()
    if kind == "str":
        return _categorical(col, n)
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    if kind == "bool":
        if pa.types.is_boolean(col.type):
            return pc.fill_null(col, bool(default)).to_numpy(zero_copy_only=False)
        vals = [str(v).strip().lower() in ("1", "true", "yes") if v is not None else bool(default) for v in col.to_pylist()]
        return np.asarray(vals, bool)
    if kind == "int":
        if pa.types.is_integer(col.type):
            return pc.fill_null(pc.cast(col, pa.int64()), int(default)).to_numpy(zero_copy_only=False)
        if pa.types.is_floating(col.type):
            arr = pc.fill_null(col, float(default)).to_numpy(zero_copy_only=False)
            return np.where(np.isfinite(arr), arr, default).astype(np.int64)
        out = np.full(n, int(default), np.int64)  # strings ("1766072156592459482": beyond float precision)
        for k, v in enumerate(col.to_pylist()):
            if v is None:
                continue
            s = str(v).strip()
            try:
                out[k] = int(s)
            except ValueError:
                try:
                    out[k] = int(float(s))
                except ValueError:
                    pass
        return out
    # float
    if pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
        return pc.fill_null(pc.cast(col, pa.float64()), float(default)).to_numpy(zero_copy_only=False)
    out_f = np.full(n, float(default), np.float64)
    for k, v in enumerate(col.to_pylist()):
        try:
            out_f[k] = float(v)
        except (TypeError, ValueError):
            pass
    return out_f


def _categorical(col: Any, n: int) -> pd.Categorical:
    """A string column (plain or dictionary-encoded, in chunks) as a Categorical; null → ""."""
    pa, pc, _ = _pa()
    if not isinstance(col, pa.ChunkedArray):
        col = pa.chunked_array([col])
    if not pa.types.is_dictionary(col.type):
        if pa.types.is_null(col.type):
            return pd.Categorical.from_codes(np.zeros(n, np.int32), categories=[""])
        if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
            col = pc.cast(col, pa.string(), safe=False)
        col = pc.dictionary_encode(col)
    col = col.unify_dictionaries()
    labels = [str(x) if x is not None else "" for x in col.chunk(0).dictionary.to_pylist()] if col.num_chunks else []
    codes = (np.concatenate([pc.fill_null(c.indices, -1).to_numpy(zero_copy_only=False) for c in col.chunks])
             .astype(np.int32) if col.num_chunks else np.zeros(0, np.int32))
    if (codes < 0).any():
        if "" not in labels:
            labels.append("")
        codes[codes < 0] = labels.index("")
    return pd.Categorical.from_codes(codes, categories=labels)


def _default(f: schema.Field) -> Any:
    if f.kind == "str":
        return ""
    if f.kind == "bool":
        return False
    if f.kind == "float":
        return float("nan")
    if f.name.startswith("raw_") and f.name.endswith("_id"):
        return DEFAULT_ID
    return 0


def read_table(directory: Path, table: str, *, version: str = "", schema_fields: dict[str, list[str]] | None = None) -> TableRead | None:
    """Table `table` of the device profile in `directory`, or None when no file holds it."""
    pa, _, pq = _pa()
    files = table_files(directory, table)
    if not files:
        return None
    wanted = schema.fields(table)
    extra: set[str] = set()
    skipped = 0
    timestamps = [f.name for f in wanted if f.required and f.name in ("start_ts", "end_ts", "timestamp")]
    arrows = []
    for path in files:
        columns = file_columns(path)
        for f in wanted:
            if f.required and f.name not in columns:
                raise _missing_required(table, path, f.name, columns, version, schema_fields or {})
        present = [f for f in wanted if f.name in columns]
        extra |= {c for c in columns if c not in {f.name for f in wanted}}
        try:
            arrows.append(pq.read_table(path, columns=[f.name for f in present],
                                        read_dictionary=[f.name for f in present if f.kind == "str"]))
        except Exception as exc:  # noqa: BLE001 - a damaged file is one line, never a traceback
            raise LoadError(path, f"cannot read {table} ({type(exc).__name__}: {str(exc).splitlines()[0][:160]})") from None
    try:
        arrow = arrows[0] if len(arrows) == 1 else pa.concat_tables(arrows, promote_options="permissive")
    except Exception as exc:  # noqa: BLE001 - split files whose types cannot be reconciled
        raise LoadError(files[0], f"the {len(files)} files of {table} have incompatible columns ({exc})") from None
    n = arrow.num_rows
    absent = {f.name for f in wanted if f.name not in arrow.column_names}
    data: dict[str, Any] = {}
    valid = np.ones(n, bool)
    for f in wanted:
        if f.name in arrow.column_names:
            col = arrow.column(f.name)
            data[f.name] = _typed(col, f.kind, n, _default(f))
            if f.name in timestamps and col.null_count:
                valid &= ~np.asarray(col.is_null().to_numpy(zero_copy_only=False), bool)
        else:
            d = _default(f)
            data[f.name] = (pd.Categorical.from_codes(np.zeros(n, np.int32), categories=[""]) if f.kind == "str"
                            else np.full(n, d, np.float64 if f.kind == "float" else (bool if f.kind == "bool" else np.int64)))
    frame = pd.DataFrame(data)
    if not valid.all():
        skipped = int((~valid).sum())
        frame = frame[valid].reset_index(drop=True)
    return TableRead(table, frame, files, sorted(absent), sorted(extra), skipped)
