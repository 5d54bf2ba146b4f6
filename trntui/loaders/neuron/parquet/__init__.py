"""Read Neuron Explorer's Parquet export (`neuron-explorer view --output-format parquet`) into a `ProfileBuilder`.

Tables (neuron-formats.md §6), each globbed as `<Table>.parquet` / `<Table>_<k>.parquet` (large tables are split):
`SystemProfileEvents` (required), `SystemProfileMetadata`, `DeviceProfileList`, `CpuUsage`, `HostMemUsage`,
`Metadata` (`profile_schema_version`), `Warning`. Columns are read by name; every column except `name` and a
timestamp is optional; ids may be strings; split files with drifting schemas are concatenated with type
promotion. pyarrow is imported lazily, so reading Kineto traces never needs it.

Written against the documented schema 7.4.0 (and the 12.0.1 note) without Trainium hardware: the column set
of real exports may differ; unknown MAJOR schema versions get a warning, not a failure.

The package by job: `tables` (the table names, finding a table's split parts, reading them with pyarrow),
`arrow` (a `SystemProfileEvents` table into `SystemRows`, column-wise), `budget` (refusing an export that
cannot fit the memory budget before it is read), `companions` (the tables besides the events: counter lanes,
the facts `trntui info` shows), `load` (`load_parquet_export`: the whole export into a `ProfileBuilder`). They
import each other one way only (tables <- arrow, budget, companions <- load); this module re-exports the public
names.
"""

from __future__ import annotations

from trntui.loaders.neuron.parquet.arrow import SEQ_KEYS, rows_from_arrow
from trntui.loaders.neuron.parquet.companions import COUNTER_TABLES, describe_export, read_counters
from trntui.loaders.neuron.parquet.load import load_parquet_export, read_system_rows
from trntui.loaders.neuron.parquet.tables import EVENTS, KNOWN_MAJOR, TABLES, is_parquet_export, read_records, read_tables, table_files

__all__ = [
    "COUNTER_TABLES", "EVENTS", "KNOWN_MAJOR", "SEQ_KEYS", "TABLES", "describe_export", "is_parquet_export",
    "load_parquet_export", "read_counters", "read_records", "read_system_rows", "read_tables", "rows_from_arrow",
    "table_files",
]
