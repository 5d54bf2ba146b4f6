"""Query results as text or files: an aligned table, CSV, JSON, Markdown (all written batch by batch where the
format allows, so a result of millions of rows never sits in memory as Python objects), and Parquet.

Text cells pass the terminal-safety pass (`safe_text`), CSV text cells the formula guard (`csv_safe`), Markdown
the HTML guard (`markdown_safe`): results hold names from traces.
"""

from __future__ import annotations

import csv
import json
import math
from typing import IO, Any, Iterable, Sequence

from trntui.report.format import markdown_safe, markdown_table, text_table
from trntui.textsafe import csv_safe, safe_text, truncate

FORMATS = ("table", "csv", "json", "parquet", "markdown")
TEXT_LIMIT = 10_000
CELL_WIDTH = 80
"""The aligned table cuts longer cells (names of templated kernels run to hundreds of characters); the other
formats keep them whole."""
"""Rows an aligned table or Markdown shows (their column widths need every row first); CSV, JSON and Parquet
write every row."""


def cell_text(value: Any) -> str:
    """One value as the aligned table shows it: NULL, numbers as Python writes them, text made safe."""
    if value is None:
        return "NULL"
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
            return f"{value:.1f}"
        return repr(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return safe_text(bytes(value).hex())
    if isinstance(value, (list, dict)):
        return safe_text(json.dumps(value, default=str))
    return safe_text(value)


def _rows(batches: Iterable[Any]) -> Iterable[list[Any]]:
    for batch in batches:
        cols = [c.to_pylist() for c in batch.columns]
        yield from (list(r) for r in zip(*cols))


def write_text(columns: Sequence[str], batches: Iterable[Any], out: IO[str], fmt: str) -> int:
    """`table` or `markdown`: at most TEXT_LIMIT rows (and a line saying how many were left out). Returns rows."""
    rows: list[list[str]] = []
    total = 0
    for r in _rows(batches):
        total += 1
        if len(rows) < TEXT_LIMIT:
            cells = [cell_text(v) for v in r]
            rows.append(cells if fmt == "markdown" else [truncate(c, CELL_WIDTH) for c in cells])
    heads = [safe_text(c) for c in columns]
    if fmt == "markdown":
        text = "\n".join(markdown_table(heads, rows)) + "\n"
        out.write(markdown_safe(text))
    else:
        if columns:
            left = "".join("r" if _numeric(rows, j) else "l" for j in range(len(columns)))
            out.write("\n".join(text_table(heads, rows, left)) + "\n")
    if total > len(rows):
        out.write(f"({total - len(rows):,} more rows not shown: use --format csv/json/parquet or --out)\n")
    elif fmt == "table":
        out.write(f"({total:,} row{'s' if total != 1 else ''})\n")
    return total


def _numeric(rows: list[list[str]], j: int) -> bool:
    seen = False
    for r in rows[:200]:
        v = r[j]
        if v == "NULL":
            continue
        try:
            float(v)
        except ValueError:
            return False
        seen = True
    return seen


def write_csv(columns: Sequence[str], batches: Iterable[Any], out: IO[str]) -> int:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([csv_safe(safe_text(c)) for c in columns])
    n = 0
    for r in _rows(batches):
        writer.writerow(["" if v is None else csv_safe(safe_text(v)) if isinstance(v, str) else v for v in r])
        n += 1
    return n


def _json_value(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    return v


def write_json(columns: Sequence[str], batches: Iterable[Any], out: IO[str]) -> int:
    """A JSON array of objects, one per row, written as the rows come."""
    names = list(columns)
    n = 0
    out.write("[")
    for r in _rows(batches):
        out.write(",\n " if n else "\n ")
        out.write(json.dumps({k: _json_value(v) for k, v in zip(names, r)}, default=str, ensure_ascii=False))
        n += 1
    out.write("\n]\n" if n else "]\n")
    return n


def write_parquet(schema: Any, batches: Iterable[Any], path: Any) -> int:
    import pyarrow.parquet as pq

    n = 0
    with pq.ParquetWriter(str(path), schema) as writer:
        for b in batches:
            writer.write_batch(b)
            n += b.num_rows
    return n
