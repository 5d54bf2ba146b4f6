"""Neuron system-trace rows (from Explorer's Parquet or JSON export) → `Profile` events, lanes and flows.

Both exports are normalised into `SystemRows` (the columns of `SystemProfileEvents`, neuron-formats.md §6) and
added to a `ProfileBuilder` by `add_system_rows`, so they merge with the Kineto `trace.json` of the same run:

- one absolute ns clock (Neuron rows are Unix ns; Kineto rows were converted with `baseTimeNanoseconds`);
- framework rows of the system trace (Explorer's copies of trace.json events) are the ops when no trace.json
  was loaded, and otherwise are matched to the trace.json rows they copy (`trntui.loaders.neuron.framework`:
  clock offset, name and start): matched copies are dropped and their `flow_id` values move to the trace.json
  row; the rest stay, with their device time (a note gives the counts);
- lanes like Explorer's: `framework/TID:n` (dispatch), `framework/Stream:n` (device interaction),
  `neuron_rt/NC:n` (runtime, logical core), `neuron_hw/NC<l>:<p>` (hardware, physical core);
- `flow_id` lists become `Flows.MEMBER` rows (category `neuron_flow`); `nrt_sequence_id` goes into the
  correlation column of runtime/framework rows (used by `trntui.analysis.neuron` links).

Written against the documented schema only (no Trainium hardware was available): every column but `name` and a
timestamp is optional, ids may be strings, unknown event names are kept.

The package by job: `columns` (`Strs`, `SystemRows`: the rows as columns, selection, the split tables'
concatenation), `records` (cells and event dicts into rows: ids bounded to int64, `flow_id` lists, extra
attributes, a row's source), `merge` (`add_system_rows`: the rows into a `ProfileBuilder`, lanes, flows,
`External id`s). They import each other one way only (columns <- records <- merge); this module re-exports
the public names.
"""

from __future__ import annotations

from trntui.loaders.neuron.system.columns import Strs, SystemRows, concat_rows
from trntui.loaders.neuron.system.merge import (
    CAT_FRAMEWORK,
    CAT_HARDWARE,
    CAT_RUNTIME,
    DEVICE_TIME_SOURCE,
    EXTERNAL_RX,
    FLOW_CAT,
    SYSTEM_CATS,
    add_system_rows,
    external_ids,
)
from trntui.loaders.neuron.system.records import (
    HARDWARE_NAMES,
    INT64_MAX,
    INT64_MIN,
    OUT_OF_RANGE,
    infer_source,
    parse_extra,
    parse_flow_ids,
    rows_from_records,
    to_int,
)

__all__ = [
    "CAT_FRAMEWORK", "CAT_HARDWARE", "CAT_RUNTIME", "DEVICE_TIME_SOURCE", "EXTERNAL_RX", "FLOW_CAT", "HARDWARE_NAMES",
    "INT64_MAX", "INT64_MIN", "OUT_OF_RANGE", "SYSTEM_CATS", "Strs", "SystemRows", "add_system_rows", "concat_rows",
    "external_ids", "infer_source", "parse_extra", "parse_flow_ids", "rows_from_records", "to_int",
]
