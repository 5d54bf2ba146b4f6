"""The op-level diff of `trntui compare`: ops matched across runs by (name, CPU-or-device row[, input shapes]),
with per-run calls, Self CPU and Self device, and the deltas against the baseline (the first run)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from trntui.analysis.key_averages import OpTable
from trntui.errors import TrntuiError

# -- op diff --------------------------------------------------------------------------------------------------


@dataclass
class OpDiffRow:
    """One op matched across runs. Per-run lists hold None where the op is absent from that run."""

    name: str
    is_device: bool
    input_shapes: str
    device_type: list[str | None]
    calls: list[int | None]
    self_cpu: list[float | None]
    self_device: list[float | None]
    table_rows: list[int]
    """Row index in each run's OpTable (-1 when absent)."""
    ambiguous: bool = False
    """Another row has the same name (a CPU row and a device row, e.g. a record_function and its GPU mirror)."""

    @property
    def label(self) -> str:
        """The name, with ` [device]` on a device row whose name is also a CPU row's."""
        return self.name + (" [device]" if self.ambiguous and self.is_device else "")

    @property
    def present(self) -> list[bool]:
        return [c is not None for c in self.calls]

    @property
    def status(self) -> str:
        """`new` (absent from the baseline), `removed` (in the baseline, absent from some other run),
        `changed` (calls or times differ) or `same`."""
        p = self.present
        if not p[0]:
            return "new"
        if not all(p[1:]):
            return "removed"
        if any(self.calls[k] != self.calls[0] for k in range(1, len(p))):
            return "changed"
        for col in (self.self_cpu, self.self_device):
            if any(abs((col[k] or 0.0) - (col[0] or 0.0)) > 1e-9 for k in range(1, len(p))):
                return "changed"
        return "same"

    def marker(self, k: int) -> str:
        """Per-run marker: `+` new in run k (absent from baseline), `-` removed in run k, else ``."""
        if k == 0:
            return ""
        if self.calls[k] is not None and self.calls[0] is None:
            return "+"
        if self.calls[k] is None and self.calls[0] is not None:
            return "-"
        return ""

    def delta(self, column: str, k: int) -> float:
        """Run k minus the baseline for `calls`, `self_cpu` or `self_device` (absent counts as 0)."""
        col = getattr(self, column)
        return float(col[k] or 0) - float(col[0] or 0)

    def max_abs_delta(self, column: str) -> float:
        if len(self.calls) < 2:
            return 0.0
        return max(abs(self.delta(column, k)) for k in range(1, len(self.calls)))

    def to_dict(self, run_names: Sequence[str]) -> dict[str, Any]:
        from trntui.textsafe import safe_text

        out: dict[str, Any] = {
            "name": safe_text(self.name),
            "row": "device" if self.is_device else "CPU",
            "input_shapes": safe_text(self.input_shapes),
            "status": self.status,
            "runs": {},
        }
        for k, run in enumerate(run_names):
            entry: dict[str, Any] = {
                "present": self.calls[k] is not None,
                "calls": self.calls[k] or 0,
                "self_cpu_us": self.self_cpu[k] or 0.0,
                "self_device_us": self.self_device[k] or 0.0,
            }
            if k:
                entry["delta_calls"] = int(self.delta("calls", k))
                entry["delta_self_cpu_us"] = self.delta("self_cpu", k)
                entry["delta_self_device_us"] = self.delta("self_device", k)
                entry["marker"] = {"+": "new", "-": "removed", "": None}[self.marker(k)]
            out["runs"][safe_text(run)] = entry
        return out


@dataclass
class OpDiff:
    run_names: list[str]
    rows: list[OpDiffRow]
    by_shapes: bool = False
    has_device: bool = False
    """Some run has device time (then the default sort is by |Δ Self device|)."""
    backend: str = ""

    @property
    def default_sort(self) -> str:
        return "self_device" if self.has_device else "self_cpu"

    def sorted_rows(self, sort: str | None = None, pattern: str | None = None) -> list[OpDiffRow]:
        """Rows filtered by a case-insensitive substring-or-regex `pattern` and sorted (largest first).

        `sort`: `self_device` / `self_cpu` / `calls` (by the largest absolute delta against the baseline; ties
        by the other deltas, then name), or `name`.
        """
        rows = filter_rows(self.rows, pattern)
        sort = sort or self.default_sort
        if sort == "name":
            return sorted(rows, key=lambda r: (r.name.lower(), r.is_device, r.input_shapes))
        if sort not in ("self_device", "self_cpu", "calls"):
            raise TrntuiError(f"unknown diff sort {sort!r}; use self_device, self_cpu, calls or name")
        others = [c for c in ("self_device", "self_cpu", "calls") if c != sort]
        return sorted(
            rows,
            key=lambda r: (
                -r.max_abs_delta(sort),
                -r.max_abs_delta(others[0]),
                -r.max_abs_delta(others[1]),
                r.name,
                r.is_device,
                r.input_shapes,
            ),
        )


def filter_rows(rows: list[OpDiffRow], pattern: str | None) -> list[OpDiffRow]:
    if not pattern:
        return list(rows)
    try:
        rx = re.compile(pattern, re.IGNORECASE)
        return [r for r in rows if rx.search(r.name)]
    except re.error:
        p = pattern.lower()
        return [r for r in rows if p in r.name.lower()]


def diff_ops(tables: Sequence[OpTable], run_names: Sequence[str], *, by_shapes: bool = False) -> OpDiff:
    """Match the op tables' rows across runs by (name, CPU/device row[, input shapes])."""
    index: dict[tuple[str, bool, str], OpDiffRow] = {}
    n = len(tables)
    order: list[tuple[str, bool, str]] = []
    for k, table in enumerate(tables):
        for r in range(len(table)):
            is_dev = table.device_type[r] != "CPU"
            shapes = table.input_shapes[r] if by_shapes else ""
            key = (table.name[r], is_dev, shapes)
            row = index.get(key)
            if row is None:
                row = OpDiffRow(
                    name=table.name[r],
                    is_device=is_dev,
                    input_shapes=shapes,
                    device_type=[None] * n,
                    calls=[None] * n,
                    self_cpu=[None] * n,
                    self_device=[None] * n,
                    table_rows=[-1] * n,
                )
                index[key] = row
                order.append(key)
            # a name can appear twice within one table (e.g. user annotation vs op); merge them
            row.device_type[k] = table.device_type[r]
            row.calls[k] = (row.calls[k] or 0) + int(table.count[r])
            row.self_cpu[k] = (row.self_cpu[k] or 0.0) + float(table.self_cpu_time_total[r])
            row.self_device[k] = (row.self_device[k] or 0.0) + float(table.self_device_time_total[r])
            if row.table_rows[k] < 0:
                row.table_rows[k] = r
    kinds: dict[str, set[bool]] = {}
    for name, is_dev, _ in order:
        kinds.setdefault(name, set()).add(is_dev)
    for key in order:
        index[key].ambiguous = len(kinds[key[0]]) > 1
    has_device = any(t.has_device for t in tables)
    backend = next((t.backend for t in tables if t.has_device), "")
    return OpDiff(list(run_names), [index[k] for k in order], by_shapes, has_device, backend)
