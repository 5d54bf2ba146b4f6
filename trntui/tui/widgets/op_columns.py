"""The ops pane's columns (trntui/tui/widgets/op_table.py): which the table has, the order they give way in, the
instance spread (`m`), each cell as text, and the table as CSV (`w`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from trntui.report import format_time
from trntui.textsafe import safe_text
from trntui.tui.widgets.rows import Column

if TYPE_CHECKING:
    from trntui.analysis.key_averages import OpTable
    from trntui.model.profile import Profile


def table_columns(table: "OpTable") -> list[Column]:
    """The columns present in the data, device columns labelled with the backend (Self CUDA, Self NEURON)."""
    cols = [
        Column("name", "Name", 0, numeric=False),
        Column("count", "# Calls", 7),
        Column("self_cpu_time_total", "Self CPU", 10),
        Column("cpu_time_total", "CPU total", 10),
    ]
    if table.has_device:
        dev = table.backend
        cols += [
            Column("self_device_time_total", f"Self {dev}", max(10, len(dev) + 6)),
            Column("device_time_total", f"{dev} total", max(10, len(dev) + 7)),
            Column("self_device_percent", f"% {dev}", max(8, len(dev) + 3)),
        ]
    return cols


SPREAD_COLUMNS = (
    Column("instance_min", "Min", 10),
    Column("instance_avg", "Avg", 10),
    Column("instance_max", "Max", 10),
)
"""Per-op instance durations (µs, like the other time columns), shown with `m`."""


NAME_MIN = 32
"""Columns give way (lowest priority first, never the sorted one) until the names get this many cells."""

PRIORITY = (
    "name", "self_device_time_total", "count", "self_device_percent", "self_cpu_time_total",
    "instance_max", "instance_avg", "instance_min", "device_time_total", "cpu_time_total",
)
"""Which columns stay when the terminal is narrow, most important first."""


def twin_suffixes(table: "OpTable") -> dict[int, str]:
    """Rows whose name is also another row's (a GPU user annotation beside its CPU range): ` [CUDA]` after the
    device-side one, so twin rows read differently."""
    kinds: dict[str, set[str]] = {}
    for name, device in zip(table.name, table.device_type):
        kinds.setdefault(name, set()).add(device)
    return {k: f" [{device}]" for k, (name, device) in enumerate(zip(table.name, table.device_type))
            if device != "CPU" and len(kinds[name]) > 1}


def instance_spread(table: "OpTable", profile: "Profile") -> dict[str, np.ndarray]:
    """Per row: the shortest, mean and longest duration (µs) of the events merged into it (its instances)."""
    sizes = np.array([len(e) for e in table.rows_events], np.int64)
    out = {key: np.zeros(len(table)) for key in ("instance_min", "instance_avg", "instance_max")}
    if sizes.sum() == 0:
        return out
    events = np.concatenate([np.asarray(e, np.int64) for e in table.rows_events])
    dur = (profile.end[events] - profile.start[events]) / 1000.0
    rows = np.nonzero(sizes)[0]
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])[rows]
    out["instance_min"][rows] = np.minimum.reduceat(dur, offsets)
    out["instance_max"][rows] = np.maximum.reduceat(dur, offsets)
    out["instance_avg"][rows] = np.add.reduceat(dur, offsets) / sizes[rows]
    return out


def format_cell(table: "OpTable", key: str, k: int, extra: dict[str, np.ndarray] | None = None) -> str:
    """Row `k`'s cell of column `key` as the ops pane shows it (`extra`: the instance spread columns)."""
    if key == "name":
        return safe_text(table.name[k])
    if key == "count":
        return str(int(table.count[k]))
    value = float(extra[key][k] if extra and key in extra else getattr(table, key)[k])
    if key.endswith("percent"):
        return f"{value:.2f}%"
    return format_time(value)


def table_csv(table: "OpTable", rows: np.ndarray, columns: list[Column], extra: dict[str, np.ndarray] | None) -> str:
    """The table rows `rows` (in that order) as CSV with a header: name, device type, then `columns`' values
    unformatted (times in µs, like torch's table); names are made safe for spreadsheets."""
    import csv
    import io

    from trntui.textsafe import csv_safe

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    numeric = [c for c in columns if c.numeric]
    writer.writerow(["name", "device_type", *[c.title for c in numeric]])
    for k in rows.tolist():
        values = []
        for c in numeric:
            v = extra[c.key][k] if extra and c.key in extra else getattr(table, c.key)[k]
            values.append(int(v) if c.key == "count" else round(float(v), 3))
        writer.writerow([csv_safe(table.name[k]), csv_safe(table.device_type[k]), *values])
    return buf.getvalue()
