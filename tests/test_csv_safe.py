"""CSV formula injection: op and run names from traces that start with `=`, `+`, `-`, `@`, a tab or a CR would run
as formulas in a spreadsheet app. CSV text cells get a leading `'` (OWASP); numeric cells stay numbers."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from malformed import valid_trace

from trntui.textsafe import csv_safe

from .conftest import run_cli

FORMULA = '=HYPERLINK("http://x")'
NAMES = (FORMULA, "-cmd", "aten::add")


def _trace(path: Path, n_steps: int = 3) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(valid_trace(n_steps=n_steps, names=NAMES))
    return path


def test_csv_safe_guards_formula_starts_only() -> None:
    for start in ("=", "+", "-", "@", "\t", "\r"):
        assert csv_safe(start + "x") == "'" + start + "x"
    for text in ("aten::mm", "", "x=1", "a-b", "'quoted", "[4, 4]"):
        assert csv_safe(text) == text


def test_summary_csv_guards_names_keeps_numbers(tmp_path: Path, capsys) -> None:
    trace = _trace(tmp_path / "run" / "trace.json")
    rc, out, err = run_cli(capsys, *["summary", "--format", "csv", "--limit", "-1", str(trace)])
    assert rc == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    names = {r["name"] for r in rows}
    assert "'" + FORMULA in names and "'-cmd" in names and "aten::add" in names
    assert FORMULA not in names and "-cmd" not in names
    for r in rows:
        assert not r["name"].startswith(("=", "+", "-", "@", "\t", "\r")), r["name"]
        float(r["self_cpu_time_total"])  # numbers are written as numbers, unquoted
        int(r["count"])


def test_compare_csv_guards_names_keeps_negative_numbers(tmp_path: Path, capsys) -> None:
    a = _trace(tmp_path / "a" / "trace.json", n_steps=3)
    b = _trace(tmp_path / "-b" / "trace.json", n_steps=2)  # fewer calls: negative deltas
    rc, out, err = run_cli(capsys, *["compare", "--no-tui", "--format", "csv", "--limit", "-1", str(a.parent), str(b.parent)])
    assert rc == 0, err
    summary, ops = out.split("\n\n")
    runs = list(csv.DictReader(io.StringIO(summary)))
    assert [r["run"] for r in runs] == ["a", "'-b"]
    rows = list(csv.DictReader(io.StringIO(ops)))
    names = {r["name"] for r in rows}
    assert "'" + FORMULA in names and "'-cmd" in names and "aten::add" in names
    for r in rows:
        assert not r["name"].startswith(("=", "+", "-", "@", "\t", "\r")), r["name"]
    deltas = [r[k] for r in rows for k in r if k.startswith("delta_")]
    assert any(d.startswith("-") for d in deltas)  # negative numbers are not quoted as text
    for d in deltas:
        float(d)
