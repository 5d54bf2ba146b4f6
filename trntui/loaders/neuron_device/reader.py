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
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from trntui import fsio
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
    fsio.check_regular(path, what="a Parquet file")  # a FIFO would block pyarrow's open
    try:
        return list(pq.ParquetFile(path).schema_arrow.names)
    except Exception as exc:  # noqa: BLE001 - any pyarrow failure is a damaged file
        raise LoadError(path, f"not a readable Parquet file ({type(exc).__name__}: {str(exc).splitlines()[0][:160]})") from None


def row_count(path: Path) -> int:
    _, _, pq = _pa()
    try:
        fsio.check_regular(path, what="a Parquet file")
        return int(pq.ParquetFile(path).metadata.num_rows)
    except Exception:  # noqa: BLE001
        return 0


def _missing_required(table: str, path: Path, name: str, columns: list[str], version: str, schema_fields: dict[str, list[str]]) -> LoadError:
    """The one line for a required field the file lacks: which field, which schema version, what it may be now."""
    known = {f.name for f in schema.fields(table)}
    candidates = [c for c in (schema_fields.get(table) or columns) if c not in known]
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    hint = f"; the file has '{close[0]}' instead (renamed?)" if close else ""
    ver = f"profile_schema_version {version[:40]}" if version else "no profile_schema_version"
    return LoadError(
        path,
        f"required column '{name}' of {table} is missing ({ver}; trntui reads the documented "
        f"{schema.DOCUMENTED_VERSION} fields by name, so a newer MAJOR version renamed or removed it){hint}",
    )


INT64_MAX = (1 << 63) - 1

RANGES: dict[str, tuple[int, int]] = {
    "start_ts": (0, 1 << 62), "end_ts": (0, 1 << 62), "timestamp": (0, 1 << 62),
    "execution_start_ts": (-(1 << 62), 1 << 62), "execution_end_ts": (-(1 << 62), 1 << 62),
    "first_hw_timestamp": (0, 1 << 62), "last_hw_timestamp": (0, 1 << 62),
    "pcore_idx": (0, 255),
}
"""Accepted value ranges (inclusive) of integer fields; a value outside is unusable: a row whose timestamp or
physical core is out of range is dropped and counted, any other field falls back to its default and is counted.
Byte and FLOP counts (`*_bytes`, `*flops*`) must lie in [0, 2^50] (a petabyte, or 10^15 FLOPs, per row)."""
COUNT_MAX = 1 << 50


def _range_of(name: str) -> tuple[int, int] | None:
    r = RANGES.get(name)
    if r is not None:
        return r
    if name.endswith("_bytes") or "flops" in name:
        return (0, COUNT_MAX)
    return None


def _ints(col: Any, n: int, default: int, name: str = "") -> tuple[np.ndarray, np.ndarray]:
    """A pyarrow column as int64 and a mask of the values that are present but unusable (not an integer in
    the schema's sense: junk strings, NaN/inf, lists, structs, bools, binary, decimals, dates; or outside
    `RANGES`). Nulls and unusable values become `default`."""
    pa, pc, _ = _pa()
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    t = col.type
    null = np.asarray(col.is_null().to_numpy(zero_copy_only=False), bool) if col.null_count else np.zeros(n, bool)
    bad = np.zeros(n, bool)
    out = np.full(n, int(default), np.int64)
    if pa.types.is_integer(t):
        if pa.types.is_uint64(t):
            raw = pc.fill_null(col, 0).to_numpy(zero_copy_only=False).astype(np.uint64)
            bad = raw > np.uint64(INT64_MAX)
            out = np.where(bad | null, default, raw.astype(np.int64, casting="unsafe")).astype(np.int64)
        else:
            out = pc.fill_null(pc.cast(col, pa.int64()), int(default)).to_numpy(zero_copy_only=False).astype(np.int64)
    elif pa.types.is_floating(t):
        arr = pc.fill_null(pc.cast(col, pa.float64()), 0.0).to_numpy(zero_copy_only=False)
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(arr) & (np.abs(arr) < 9.2e18)
        bad = ~ok & ~null
        out = np.where(ok & ~null, np.where(ok, arr, 0.0), default).astype(np.int64)
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        try:  # the common case: every value an integer in decimal
            out = pc.fill_null(pc.cast(col, pa.int64()), int(default)).to_numpy(zero_copy_only=False).astype(np.int64)
        except Exception:  # noqa: BLE001 - some value is not: parse each ("1766072156592459482" is beyond float precision)
            for k, v in enumerate(col.to_pylist()):
                if v is None:
                    continue
                x = _parse_int(v)
                if x is None:
                    bad[k] = True
                else:
                    out[k] = x
    elif not pa.types.is_null(t):  # bool, binary, list, struct, decimal, temporal: not an int64 of the schema
        bad = ~null
    rng = _range_of(name)
    if rng is not None:
        lo, hi = rng
        off = ~null & ~bad & ((out < lo) | (out > hi))
        if off.any():
            bad = bad | off
            out = np.where(off, default, out)
    return out, bad


def _parse_int(v: Any) -> int | None:
    s = str(v).strip()
    if not s or len(s) > 40:
        return None
    try:
        x = int(s)
    except ValueError:
        try:
            f = float(s)
        except ValueError:
            return None
        if not math.isfinite(f) or f != f or abs(f) >= 9.2e18:
            return None
        x = int(f)
    return x if -INT64_MAX <= x <= INT64_MAX else None


def _typed(col: Any, kind: str, n: int, default: Any, name: str = "") -> tuple[Any, np.ndarray]:
    """A pyarrow column as numpy (numbers, bools) or a pandas Categorical (strings), nulls → `default`; and the
    mask of present values that could not be used (see `_ints`)."""
    pa, pc, _ = _pa()
    none = np.zeros(n, bool)
    if kind == "str":
        if isinstance(col, pa.ChunkedArray) and col.num_chunks:
            t = col.type
        else:
            t = getattr(col, "type", None)
        if t is not None and (pa.types.is_nested(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t)):
            return _text_of_values(col, n)
        try:
            return _categorical(col, n), none
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return _text_of_values(col, n)
    if kind == "int":
        return _ints(col, n, int(default), name)
    if kind == "list":
        if pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
            out = np.empty(n, dtype=object)
            for k, v in enumerate(col.to_pylist()):
                out[k] = v
            return out, none
        return np.full(n, None, dtype=object), ~np.asarray(col.is_null().to_numpy(zero_copy_only=False), bool)
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    if kind == "bool":
        if pa.types.is_boolean(col.type):
            return pc.fill_null(col, bool(default)).to_numpy(zero_copy_only=False), none
        vals = [str(v).strip().lower() in ("1", "true", "yes") if v is not None else bool(default) for v in col.to_pylist()]
        return np.asarray(vals, bool), none
    # float (non-finite values are unusable: NaN stands for absent)
    if pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
        arr = pc.fill_null(pc.cast(col, pa.float64()), float(default)).to_numpy(zero_copy_only=False)
    else:
        arr = np.full(n, float(default), np.float64)
        for k, v in enumerate(col.to_pylist()):
            if isinstance(v, (int, float, str)) and not isinstance(v, bool):
                try:
                    arr[k] = float(v)
                except (TypeError, ValueError):
                    pass
    with np.errstate(invalid="ignore"):
        inf = np.isinf(arr)
    if inf.any():
        arr = np.where(inf, float(default), arr)
    return arr, inf


def _text_of_values(col: Any, n: int) -> tuple[pd.Categorical, np.ndarray]:
    """A column that should be text but is not (lists, structs, maps, binary): numbers and valid UTF-8 bytes as
    their text, anything else "" and marked unusable."""
    values = col.to_pylist()
    out, bad = [], np.zeros(n, bool)
    for k, v in enumerate(values):
        if v is None:
            out.append("")
        elif isinstance(v, str):
            out.append(v)
        elif isinstance(v, bytes):
            try:
                out.append(v.decode("utf-8"))
            except UnicodeDecodeError:
                out.append("")
                bad[k] = True
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(str(v))
        else:
            out.append("")
            bad[k] = True
    return pd.Categorical(out), bad


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
    if f.kind == "list":
        return None
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
    missing_required: set[str] = set()
    skipped = 0
    timestamps = [f.name for f in wanted if f.required and f.name in ("start_ts", "end_ts", "timestamp")]
    arrows = []
    for path in files:
        columns = file_columns(path)
        for f in wanted:
            if f.required and f.name not in columns:
                if not schema.tolerates_missing(version, f):
                    raise _missing_required(table, path, f.name, columns, version, schema_fields or {})
                missing_required.add(f.name)
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
    absent = {f.name for f in wanted if f.name not in arrow.column_names} | missing_required
    data: dict[str, Any] = {}
    valid = np.ones(n, bool)
    reasons: dict[str, int] = {}
    bad_values: dict[str, int] = {}
    bad_masks: dict[str, np.ndarray] = {}
    for f in wanted:
        if f.name in arrow.column_names:
            col = arrow.column(f.name)
            data[f.name], bad = _typed(col, f.kind, n, _default(f), f.name)
            if f.kind == "str" and f.required and bad.any():  # (an engine that is a list: the row has no engine)
                drop = bad & valid
                what = f"{f.name} not text"
                reasons[what] = reasons.get(what, 0) + int(drop.sum())
                valid &= ~drop
            elif f.name in timestamps or f.name == "pcore_idx":  # without them a row cannot be placed: dropped
                drop = bad.copy()
                if f.name in timestamps and col.null_count:
                    drop |= np.asarray(col.is_null().to_numpy(zero_copy_only=False), bool)
                drop &= valid
                if drop.any():
                    what = "pcore_idx out of range or not an integer" if f.name == "pcore_idx" else (
                        f"{f.name} missing, not an integer or out of range")
                    reasons[what] = reasons.get(what, 0) + int(drop.sum())
                    valid &= ~drop
            elif bad.any():
                bad_masks[f.name] = bad
        else:
            d = _default(f)
            data[f.name] = (pd.Categorical.from_codes(np.zeros(n, np.int32), categories=[""]) if f.kind == "str"
                            else np.full(n, None, dtype=object) if f.kind == "list"
                            else np.full(n, d, np.float64 if f.kind == "float" else (bool if f.kind == "bool" else np.int64)))
    if "start_ts" in timestamps and "end_ts" in timestamps and "start_ts" in arrow.column_names \
            and "end_ts" in arrow.column_names:
        inverted = valid & (np.asarray(data["end_ts"]) < np.asarray(data["start_ts"]))
        if inverted.any():  # no interval to place (the Kineto loader's instants aside, a row that ends first)
            what = "end_ts before start_ts"
            reasons[what] = reasons.get(what, 0) + int(inverted.sum())
            valid &= ~inverted
    for name, bad in bad_masks.items():  # counted on the rows kept (a skipped row is counted once, as skipped)
        if (count := int((bad & valid).sum())):
            bad_values[name] = count
    frame = pd.DataFrame(data)
    if not valid.all():
        skipped = int((~valid).sum())
        frame = frame[valid].reset_index(drop=True)
    return TableRead(table, frame, files, sorted(absent), sorted(extra), skipped, reasons, bad_values,
                     sorted(missing_required))
