"""The pieces every text report shares: times, percentages and sizes, and tables as aligned text, Markdown and
CSV. One place, so the CLI, the app and every report format the same value the same way.

A leaf module (it imports nothing of trntui but `textsafe` and `units`): any layer above the model may use it.
"""

from __future__ import annotations

import csv
import io
from typing import Any, Iterable, Sequence

from trntui.textsafe import csv_safe, safe_text
from trntui.units import format_bytes  # noqa: F401 - re-exported: sizes are formatted in trntui/units.py


def format_time(us: float) -> str:
    """torch's `_format_time`: µs with 3 decimals, switching to ms/s."""
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def format_pct(p: float) -> str:
    return f"{p:.2f}%"


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str = "") -> list[str]:
    """An aligned plain-text table: rule, header, rule, rows, rule; columns two spaces apart, as wide as their
    widest cell, trailing blanks cut. `align` has one letter per column, `l` or `r`; missing letters are `r`
    (numbers), so `"l"` left-aligns just the first column. Cells are printed as given (make them safe first)."""
    widths = [max([len(h)] + [len(r[j]) for r in rows]) for j, h in enumerate(headers)]
    sep = "  "

    def line(vals: Sequence[str]) -> str:
        return sep.join(
            v.ljust(w) if align[j : j + 1] == "l" else v.rjust(w) for j, (v, w) in enumerate(zip(vals, widths))
        ).rstrip()

    rule = "-" * (sum(widths) + len(sep) * (len(widths) - 1))
    return [rule, line(headers), rule, *[line(r) for r in rows], rule]


def markdown_safe(text: str) -> str:
    """A whole Markdown report made inert where it is rendered (a PR comment, a wiki, a notebook): `&`, `<` and
    `>` become entities (a trace's `<script>`, `<img onerror=...>` or `<!--` is shown, never interpreted as
    HTML), and `](` is escaped (a name cannot become a link). Applied once, to every Markdown report, as the
    terminal-safety pass is applied to every string the CLI prints."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("](", "]\\(")


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown (GitHub) table; `|` in a cell is escaped. Cells are printed as given (make them safe first)."""

    def esc(s: str) -> str:
        return s.replace("|", "\\|")

    return [
        "| " + " | ".join(esc(h) for h in headers) + " |",
        "|" + "|".join(" --- " for _ in headers) + "|",
        *["| " + " | ".join(esc(c) for c in r) + " |" for r in rows],
    ]


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """CSV (`\\n` line ends) of `header` then `rows`. Text cells are made terminal-safe and guarded against
    formula injection (`textsafe.csv_safe`); numbers stay numbers, None is an empty cell."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([csv_safe(safe_text(h)) for h in header])
    for row in rows:
        writer.writerow([csv_safe(safe_text(v)) if isinstance(v, str) else v for v in row])
    return buf.getvalue()
