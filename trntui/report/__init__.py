"""Text output of analysis results, one module per report, used by the CLI commands and the app alike:

- `format`: the shared pieces (times, percentages, sizes; tables as aligned text, Markdown and CSV). A leaf:
  it imports nothing of trntui but `textsafe`, so any layer may format with it.
- `summary`: torch's key_averages table (`trntui summary`): torch-style text, CSV, JSON, Markdown.
- `compare`: the run summary and op diff (`trntui compare`, the compare view).
- `gaps`: hardware busy/idle and the largest gaps (`trntui summary --gaps`, the compare view).
- `info`: what a profile directory holds (`trntui info`).
- `overview`, `device`, `ranks`: `trntui overview`, `trntui device`, `trntui ranks` (and their screens' tables).

Pure functions, no Textual; names from traces pass through `textsafe.safe_text` before they are printed.
Importing this package imports nothing: `from trntui.report import render` (the summary's names, as before the
package existed) loads `summary` on first use.
"""

from __future__ import annotations

from typing import Any

_SUMMARY_NAMES = frozenset({
    "EMPTY_TABLE_NOTE", "FORMATS", "TORCH_COLUMN_WIDTH", "TORCH_SPACING", "footer_lines", "format_memory",
    "format_pct", "format_share", "format_time", "json_document", "profile_facts", "render", "render_csv",
    "render_markdown", "render_table", "table_columns", "table_records",
})


def __getattr__(name: str) -> Any:
    if name in _SUMMARY_NAMES:
        from trntui.report import summary

        return getattr(summary, name)
    raise AttributeError(f"module 'trntui.report' has no attribute {name!r}")
