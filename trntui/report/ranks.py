"""Text, CSV, JSON, Markdown and Parquet output of the cross-rank report (`trntui ranks`).

Pure functions over `trntui.analysis.ranks.RanksReport`; names from traces pass through `safe_text` (and
`csv_safe` in CSV). Times: ms in the text table, µs (floats) in CSV/JSON/Parquet columns named `*_us`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from trntui.analysis.ranks import RankRow, RanksReport
from trntui.report.format import csv_text, markdown_table
from trntui.textsafe import safe_text, truncate

FORMATS = ("table", "csv", "json", "markdown", "parquet")
MAX_STEP_COLUMNS = 8
"""Per-step columns shown in the table/markdown (all of them in CSV/JSON/Parquet)."""
TOP_COLLECTIVES = 10


def ms(ns: float) -> str:
    if ns is None or (isinstance(ns, float) and math.isnan(ns)):
        return "-"
    return f"{ns / 1e6:.3f}"


def us(ns: float) -> float | None:
    if ns is None or (isinstance(ns, float) and math.isnan(ns)):
        return None
    return round(float(ns) / 1e3, 3)


def _pct(p: float) -> str:
    return "-" if p is None or math.isnan(p) else f"{p:+.1f}%"


def top_ops_text(row: RankRow, n: int = 3, width: int = 60) -> str:
    parts = [f"{safe_text(name)} {v / 1e3:.1f}ms" for name, v in row.top_ops[:n]]
    return truncate("; ".join(parts), width)


def _columns(report: RanksReport) -> tuple[list[str], list[list[str]]]:
    labels = report.step_labels
    shown = labels[:MAX_STEP_COLUMNS]
    head = ["rank", "steps", "step ms", "vs median", *[f"step {safe_text(x)}" for x in shown]]
    if len(labels) > len(shown):
        head.append(f"(+{len(labels) - len(shown)} steps)")
    head += ["compute", "comm", "overlap", "idle", "wait", "last", "top ops (" + _metric(report) + ")"]
    rows = []
    for r in report.rows:
        cells = [safe_text(r.label) + (" *" if r.straggler else ""), str(r.steps), ms(r.step_mean), _pct(r.vs_median_pct)]
        cells += [ms(t) for t in r.step_times[: len(shown)]]
        if len(labels) > len(shown):
            cells.append("")
        cells += [ms(r.computation), ms(r.communication), ms(r.overlap), ms(r.idle), ms(r.wait),
                  str(r.last_arrivals) if report.collective_level else "-", top_ops_text(r)]
        rows.append(cells)
    return head, rows


def _metric(report: RanksReport) -> str:
    metrics = {r.top_ops_metric for r in report.rows}
    return metrics.pop() if len(metrics) == 1 else "self device / self CPU"


def _headline(report: RanksReport, context: dict[str, Any]) -> list[str]:
    n = len(report.rows)
    steps = report.step_labels
    total = n + len(report.failures)
    bits = [f"{safe_text(context.get('job') or 'ranks')}: {n} rank{'s' if n != 1 else ''}"
            + (f" read of {total}" if report.failures else "")]
    if steps:
        bits.append(f"{len(steps)} step{'s' if len(steps) != 1 else ''}"
                    + (f" ({safe_text(steps[0])}-{safe_text(steps[-1])})" if len(steps) > 1 else f" ({safe_text(steps[0])})"))
    if context.get("engine"):
        bits.append(safe_text(context["engine"]))
    if context.get("seconds") is not None:
        bits.append(f"{context['seconds']:.1f} s")
    out = [" · ".join(bits)]
    if context.get("why"):
        out.append(f"grouping: {safe_text(context['why'])}")
    med = report.medians.get("step", math.nan)
    if report.median_rank:
        out.append(f"median rank {safe_text(report.median_rank)} · median step {ms(med)} ms · times in ms, means per step")
    return out


def _straggler_lines(report: RanksReport) -> list[str]:
    out = []
    if len(report.rows) < 3:
        out.append("stragglers: need 3 ranks or more")
    elif report.stragglers:
        for label in report.stragglers:
            r = report.row(label)
            out.append(f"straggler: rank {safe_text(label)} — " + "; ".join(r.reasons if r else []))
    else:
        out.append("stragglers: none")
    out.append(
        f"rule: {report.rule.text()}; limits: step {ms(report.limits.get('step', math.nan))} ms"
        + (f", working {ms(report.limits.get('working', math.nan))} ms" if report.collective_level else "")
        + f" (median {ms(report.medians.get('step', math.nan))}, scaled MAD {ms(report.mads.get('step', math.nan))})"
    )
    return out


def _collective_lines(report: RanksReport, table: bool = True) -> list[str]:
    if not report.collective_level:
        notes = report.collective_notes or ["no collective calls found on every rank"]
        return ["collectives: " + "; ".join(safe_text(n) for n in notes)]
    calls = report.collectives
    lasts: dict[str, int] = {}
    for c in calls:
        if c.last_rank:
            lasts[c.last_rank] = lasts.get(c.last_rank, 0) + 1
    most = sorted(lasts.items(), key=lambda kv: -kv[1])[:3]
    out = [f"collectives ({report.collective_level} level): {len(calls)} calls matched on every rank; "
           + (", ".join(f"rank {safe_text(k)} arrived last at {v}" for k, v in most) if most else "no rank arrived last (ties)")]
    out.append("  how: " + report.collective_method)
    for n in report.collective_notes:
        out.append("  note: " + safe_text(n))
    if table and calls:
        top = sorted(calls, key=lambda c: -c.total_wait)[:TOP_COLLECTIVES]
        head = ["call", "last rank", "spread ms", "max wait ms", "total wait ms"]
        rows = [[truncate(safe_text(f"{c.name} #{c.call}"), 60), safe_text(c.last_rank or "tie"), ms(c.spread),
                 ms(c.max_wait), ms(c.total_wait)] for c in top]
        out.append(f"  the {len(top)} calls the ranks waited longest at:")
        out += ["  " + line for line in _aligned(head, rows, left=(0,))]
    return out


def _aligned(head: list[str], rows: list[list[str]], left: tuple[int, ...] = ()) -> list[str]:
    widths = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h) for k, h in enumerate(head)]

    def fmt(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if k in left else c.rjust(w)
                         for k, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [fmt(head), fmt(["-" * w for w in widths]), *[fmt(r) for r in rows]]


def render_table(report: RanksReport, context: dict[str, Any] | None = None) -> str:
    context = context or {}
    head, rows = _columns(report)
    out = _headline(report, context)
    out.append("")
    out += _aligned(head, rows, left=(len(head) - 1,))
    out.append("")
    out += _straggler_lines(report)
    out.append("")
    out += _collective_lines(report)
    notes = [(r, n) for r in report.rows for n in r.notes if not n.startswith("no collective calls")]
    if notes or report.failures:
        out.append("")
    for r, n in notes:
        out.append(f"note: rank {safe_text(r.label)}: {safe_text(n)}")
    for f in report.failures:
        out.append(f"not read: {safe_text(f.name)}: {safe_text(f.error)}")
    return "\n".join(out) + "\n"


def render_markdown(report: RanksReport, context: dict[str, Any] | None = None) -> str:
    context = context or {}
    head, rows = _columns(report)

    def esc(s: str) -> str:
        return s.replace("|", "\\|")

    out = [esc(line) for line in _headline(report, context)]
    out.append("")
    out += markdown_table(head, rows)
    out.append("")
    out += [esc(line) for line in _straggler_lines(report)]
    out.append("")
    out += [esc(line) for line in _collective_lines(report, table=False)]
    from trntui.report.format import markdown_safe

    return markdown_safe("\n".join(out) + "\n")


def _rank_fields(r: RankRow) -> dict[str, Any]:
    """A rank's scalar fields, as both documents give them (CSV and JSON each take them in their own order)."""
    return {
        "rank": r.rank,
        "name": safe_text(r.name),
        "steps": r.steps,
        "step_mean_us": us(r.step_mean),
        "computation_us": us(r.computation),
        "communication_us": us(r.communication),
        "overlap_us": us(r.overlap),
        "idle_us": us(r.idle),
        "wait_us": us(r.wait),
        "working_us": us(r.working),
        "vs_median_us": us(r.vs_median),
        "vs_median_pct": None if math.isnan(r.vs_median_pct) else round(r.vs_median_pct, 3),
        "last_arrivals": r.last_arrivals,
        "straggler": r.straggler,
        "top_ops_metric": r.top_ops_metric,
    }


_CSV_ORDER = ("rank", "name", "steps", "step_mean_us", "vs_median_us", "vs_median_pct", "computation_us",
              "communication_us", "overlap_us", "idle_us", "wait_us", "working_us", "last_arrivals", "straggler",
              "reasons", "top_ops_metric", "top_ops")
"""CSV / Parquet `ranks` columns (then one `step_<label>_us` column per step)."""
_JSON_ORDER = ("rank", "name", "steps", "step_mean_us", "step_us", "computation_us", "communication_us", "overlap_us",
               "idle_us", "wait_us", "working_us", "vs_median_us", "vs_median_pct", "last_arrivals", "straggler",
               "reasons", "top_ops", "top_ops_metric", "notes", "ran_on")
"""The JSON rank record's keys."""


def rank_records(report: RanksReport) -> list[dict[str, Any]]:
    """One flat record per rank (CSV, Parquet `ranks.parquet`)."""
    out = []
    for r in report.rows:
        fields = _rank_fields(r)
        fields["reasons"] = "; ".join(r.reasons)
        fields["top_ops"] = "; ".join(f"{safe_text(n)}={v:.3f}" for n, v in r.top_ops)
        rec = {k: fields[k] for k in _CSV_ORDER}
        for lab, t in zip(report.step_labels, r.step_times):
            rec[f"step_{safe_text(lab)}_us"] = us(t)
        out.append(rec)
    return out


def _json_rank(r: RankRow) -> dict[str, Any]:
    fields = _rank_fields(r)
    fields.update(step_us=[us(t) for t in r.step_times], reasons=r.reasons,
                  top_ops=[{"name": safe_text(n), "us": round(v, 3)} for n, v in r.top_ops],
                  notes=[safe_text(n) for n in r.notes], ran_on=r.ran_on)
    return {k: fields[k] for k in _JSON_ORDER}


def render_csv(report: RanksReport, context: dict[str, Any] | None = None) -> str:
    records = rank_records(report)
    fields = list(records[0]) if records else ["rank"]
    return csv_text(fields, ([rec.get(k) for k in fields] for rec in records))


def json_document(report: RanksReport, context: dict[str, Any] | None = None) -> dict[str, Any]:
    context = context or {}
    return {
        "job": safe_text(context.get("job") or ""),
        "grouping": safe_text(context.get("why") or ""),
        "engine": context.get("engine"),
        "steps": [safe_text(x) for x in report.step_labels],
        "median_rank": report.median_rank,
        "ranks": [_json_rank(r) for r in report.rows],
        "stragglers": report.stragglers,
        "rule": {"text": report.rule.text(), "k": report.rule.k, "floor": report.rule.floor,
                 "median_us": {k: us(v) for k, v in report.medians.items()},
                 "mad_us": {k: us(v) for k, v in report.mads.items()},
                 "limit_us": {k: us(v) for k, v in report.limits.items()}},
        "collectives": {
            "level": report.collective_level or None,
            "method": report.collective_method or None,
            "notes": [safe_text(n) for n in report.collective_notes],
            "calls": [{"name": safe_text(c.name), "call": c.call, "last_rank": c.last_rank or None,
                       "spread_us": us(c.spread), "max_wait_us": us(c.max_wait), "total_wait_us": us(c.total_wait),
                       "median_wait_us": us(c.median_wait)} for c in report.collectives],
        },
        "failures": [{"name": safe_text(f.name), "rank": f.rank, "error": safe_text(f.error)} for f in report.failures],
    }


def render_json(report: RanksReport, context: dict[str, Any] | None = None) -> str:
    return json.dumps(json_document(report, context), indent=1) + "\n"


PARQUET_TABLES = ("ranks", "rank_steps", "rank_top_ops", "collectives", "collective_waits")


def check_parquet_out(out_dir: Path, force: bool = False) -> list[Path]:
    """The files `write_parquet` will write under `out_dir`, checked before any work is done: `out_dir` is (or
    can be made) a directory, and none of the files is a symbolic link, a FIFO or anything but a regular file
    that `force` allows to replace (trntui/fsio.py: `FileRefused`, one line naming the file)."""
    from trntui import fsio

    out_dir = fsio.ensure_dir(out_dir)
    paths = [out_dir / f"{name}.parquet" for name in PARQUET_TABLES]
    for path in paths:
        fsio.check_target(path, force=force)
    return paths


def write_parquet(report: RanksReport, out_dir: Path, context: dict[str, Any] | None = None,
                  force: bool = False) -> list[Path]:
    """Write the report as Parquet tables under `out_dir` (one row per rank, per rank × step, per rank × top op,
    per collective call, per rank × collective call); returns the files written.

    Each file is written whole into a temporary file beside it and put in place (trntui/fsio.py): never through a
    symbolic link, and over an existing file only with `force`.

    Query them with DuckDB (`SELECT * FROM 'out/ranks.parquet' WHERE straggler`) or pandas.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from trntui import fsio

    out_dir = Path(out_dir)
    check_parquet_out(out_dir, force)
    labels = report.step_labels
    ranks = [r.rank for r in report.rows]
    names = [safe_text(r.name) for r in report.rows]
    base = [{k: v for k, v in rec.items() if not (k.startswith("step_") and k.endswith("_us") and k != "step_mean_us")}
            for rec in rank_records(report)]
    tables: dict[str, pa.Table] = {"ranks": pa.Table.from_pylist(base) if base else pa.table({"rank": pa.array([], pa.int64())})}
    step_rows = []
    for r, nm, row in zip(ranks, names, report.rows):
        for lab, t in zip(labels, row.step_times):
            if t is not None and not math.isnan(t):
                step_rows.append({"rank": r, "name": nm, "step": safe_text(lab), "step_us": us(t)})
    tables["rank_steps"] = pa.Table.from_pylist(step_rows, schema=pa.schema(
        [("rank", pa.int64()), ("name", pa.string()), ("step", pa.string()), ("step_us", pa.float64())]))
    op_rows = [{"rank": r, "name": nm, "position": k + 1, "op": safe_text(op), "us": round(v, 3), "metric": row.top_ops_metric}
               for r, nm, row in zip(ranks, names, report.rows) for k, (op, v) in enumerate(row.top_ops)]
    tables["rank_top_ops"] = pa.Table.from_pylist(op_rows, schema=pa.schema(
        [("rank", pa.int64()), ("name", pa.string()), ("position", pa.int64()), ("op", pa.string()),
         ("us", pa.float64()), ("metric", pa.string())]))
    tables["collectives"] = pa.Table.from_pylist(
        [{"collective": safe_text(c.name), "call": c.call, "last_rank": c.last_rank or None, "spread_us": us(c.spread),
          "max_wait_us": us(c.max_wait), "total_wait_us": us(c.total_wait)} for c in report.collectives],
        schema=pa.schema([("collective", pa.string()), ("call", pa.int64()), ("last_rank", pa.string()),
                          ("spread_us", pa.float64()), ("max_wait_us", pa.float64()), ("total_wait_us", pa.float64())]))
    cols: dict[str, list] = {"rank": [], "name": [], "collective": [], "call": [], "wait_us": []}
    for coll, w in report.collective_waits.items():
        nr, nc = w.shape
        cols["rank"] += [ranks[i] for i in range(nr) for _ in range(nc)]
        cols["name"] += [names[i] for i in range(nr) for _ in range(nc)]
        cols["collective"] += [safe_text(coll)] * (nr * nc)
        cols["call"] += list(range(1, nc + 1)) * nr
        cols["wait_us"] += (np.asarray(w, np.float64).reshape(-1) / 1e3).round(3).tolist()
    tables["collective_waits"] = pa.table(cols, schema=pa.schema(
        [("rank", pa.int64()), ("name", pa.string()), ("collective", pa.string()), ("call", pa.int64()),
         ("wait_us", pa.float64())]))
    written = []
    meta = {b"trntui": json.dumps({"job": context.get("job") if context else None, "rule": report.rule.text(),
                                   "stragglers": report.stragglers}).encode()}
    for name in PARQUET_TABLES:
        t = tables[name].replace_schema_metadata(meta)
        path = out_dir / f"{name}.parquet"
        fsio.atomic_write(path, lambda tmp, t=t: pq.write_table(t, tmp), force=force)
        written.append(path)
    return written


def render(report: RanksReport, fmt: str, context: dict[str, Any] | None = None) -> str:
    if fmt == "csv":
        return render_csv(report, context)
    if fmt == "json":
        return render_json(report, context)
    if fmt == "markdown":
        return render_markdown(report, context)
    return render_table(report, context)
