"""Cells of torch's key_averages table that torch's own rules make look impossible, and why.

torch prints a negative Self CPU when re-threaded runtime rows outlast their op, a Self CPU % above 100% when
negative rows shrink the sum it divides by, and a Self <DEV> % above 100% when a row carries device time that
torch leaves out of `Self <DEV> time total` (a GPU user annotation's span). trntui shows those numbers exactly as
torch does; this module finds them and says why, once, for every shell: the CLI prints each `Surprise.note`
under the table (`report/summary.footer_lines`), the app marks the cells and shows the same note one key away.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from trntui.analysis.key_averages import OpTable
    from trntui.model.profile import Profile

MARK = "!"
"""What a surprising cell of the app's ops table ends with."""

SHOWN_ROWS = 3
"""Rows a note names before it says `and N more`."""


@dataclass(frozen=True)
class Surprise:
    """One rule of torch's that makes some rows' values look wrong."""

    kind: str
    """`negative_self_cpu`, `self_cpu_share`, `negative_self_device` or `device_share`."""
    fields: tuple[str, ...]
    """The OpTable columns whose cells are marked: the value and its share (the app's table shows no Self CPU
    %, so a Self CPU share marks the Self CPU time too)."""
    rows: tuple[int, ...]
    """Table rows concerned, most surprising first."""
    note: str
    """The explanation, as the CLI prints it after `Note: ` and the app shows it."""


def _us(value: float) -> str:
    return f"{value:.1f} us"


def _named(table: "OpTable", rows: list[int], value) -> str:
    shown = ", ".join(f"{table.name[k]}{' [' + table.device_type[k] + ']' if table.device_type[k] != 'CPU' else ''}"
                      f" ({value(k)})" for k in rows[:SHOWN_ROWS])
    return shown + (f" and {len(rows) - SHOWN_ROWS} more" if len(rows) > SHOWN_ROWS else "")


def _negative_why(profile: "Profile") -> str:
    from trntui.analysis.links import build_links

    links = build_links(profile)
    rethreaded = links.runtime & (links.op_of >= 0) & (links.rule == 1)
    if rethreaded.any():
        r = np.nonzero(rethreaded)[0]
        lengths = profile.end[r] - profile.start[r]
        cats = sorted({profile.cat_of(int(i)) for i in r[np.argsort(-lengths)[:50]].tolist()})
        return (
            f"{len(r)} runtime/driver row(s) ({', '.join(cats)}; {int(lengths.sum()) / 1000:.1f} us in all) are linked "
            "to their ops by External id and re-threaded onto the ops' threads, as torch does "
            "(_parse_kineto_results); rows that outlast their op become children of the enclosing rows, whose "
            "children then add up to more than their own duration"
        )
    return "children overlap on one thread, so they add up to more than the parent's duration"


def surprises(profile: "Profile", table: "OpTable") -> list[Surprise]:
    """The surprising cells of `table` (built from `profile`), one `Surprise` per rule, in the table's column
    order; cached per table."""
    key = ("surprises", id(table))
    hit = profile.cache.get(key)
    if hit is not None and hit[0] is table:
        return hit[1]
    out: list[Surprise] = []
    n = len(table)
    if n:
        self_cpu = np.asarray(table.self_cpu_time_total, np.float64)
        neg = np.nonzero(self_cpu < 0)[0]
        neg = neg[np.argsort(self_cpu[neg], kind="stable")].tolist()
        if neg:
            out.append(Surprise(
                "negative_self_cpu", ("self_cpu_time_total", "self_cpu_percent"), tuple(neg),
                f"negative Self CPU, as torch prints it: {_named(table, neg, lambda k: _us(self_cpu[k]))}. "
                f"Why: {_negative_why(profile)}",
            ))
        share = np.asarray(table.self_cpu_percent, np.float64)
        over = np.nonzero(share > 100.0)[0]
        over = over[np.argsort(-share[over], kind="stable")].tolist()
        if over:
            out.append(Surprise(
                "self_cpu_share", ("self_cpu_percent", "self_cpu_time_total"), tuple(over),
                f"Self CPU % above 100%, as torch prints it: {_named(table, over, lambda k: f'{share[k]:.2f}%')}. "
                f"Why: torch divides by the sum of every row's Self CPU ({_us(table.sum_self_cpu)}), which the "
                "negative Self CPU of other rows makes smaller than this row's own Self CPU",
            ))
        if table.has_device:
            dev = table.backend
            self_dev = np.asarray(table.self_device_time_total, np.float64)
            dneg = np.nonzero(self_dev < 0)[0]
            dneg = dneg[np.argsort(self_dev[dneg], kind="stable")].tolist()
            if dneg:
                out.append(Surprise(
                    "negative_self_device", ("self_device_time_total", "self_device_percent"), tuple(dneg),
                    f"negative Self {dev}, as torch prints it: {_named(table, dneg, lambda k: _us(self_dev[k]))}. "
                    f"Why: torch subtracts the children's {dev} total from the row's own, and children can carry "
                    "device time their parent's total does not hold (kernels launched from another thread)",
                ))
            dshare = np.asarray(table.self_device_percent, np.float64)
            dover = np.nonzero(dshare > 100.0)[0]
            dover = dover[np.argsort(-dshare[dover], kind="stable")].tolist()
            if dover:
                out.append(Surprise(
                    "device_share", ("self_device_percent",), tuple(dover),
                    f"Self {dev} % above 100%, as torch prints it: "
                    f"{_named(table, dover, lambda k: f'{dshare[k]:.2f}%')}. Why: torch divides by Self {dev} time "
                    f"total ({_us(table.sum_self_device)}), which adds only device-typed rows and leaves user "
                    f"annotations (the {dev} side of record_function ranges such as ProfilerStep*) out; a row whose "
                    f"Self {dev} holds such an annotation's span gets more than the total",
                ))
    profile.cache[key] = (table, out)
    return out


def of_row(found: list[Surprise], row: int) -> list[Surprise]:
    """The surprises that concern table row `row`."""
    return [s for s in found if row in s.rows]


def marked_cells(found: list[Surprise]) -> dict[tuple[int, str], list[Surprise]]:
    """(table row, OpTable field) → the surprises that mark that cell."""
    out: dict[tuple[int, str], list[Surprise]] = {}
    for s in found:
        for k in s.rows:
            for name in s.fields:
                out.setdefault((k, name), []).append(s)
    return out
