"""Issue 19, item 3: report rendering is linear. 20,000 distinct op names with `--limit -1` print in every
format, every row, with the percent columns computed a handful of times per table, not per row or cell (each
row's percent/average cells used to recompute the whole column: > 120 s for 200,000 names). The count of
computations is what shows it: it does not depend on the number of rows, so 20,000 show what 200,000 did (the
suite ran 200,000 until 2026-12-01: 108 s of it), and the derived columns are computed once per table."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from malformed.cli import time_limit  # noqa: E402

from .conftest import run_cli  # noqa: E402

ROWS = 20_000


@pytest.fixture(scope="module")
def many_names(tmp_path_factory) -> Path:
    """A CPU trace whose 20,000 events all have distinct names (20,000 rows in key_averages)."""
    path = tmp_path_factory.mktemp("many") / "distinct_names.json"
    events = ",\n".join(
        '{"ph": "X", "cat": "cpu_op", "name": "op_%06d", "pid": 1, "tid": 1, "ts": %d.000, "dur": %d.500}'
        % (k, 1000 + 2 * k, 1 + k % 7)
        for k in range(ROWS)
    )
    path.write_text('{"schemaVersion": 1, "traceEvents": [\n' + events + "\n]}\n")
    return path


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "markdown"])
def test_every_row_of_20k_distinct_names_prints_with_columns_computed_per_table(fmt, many_names, capsys, monkeypatch) -> None:
    import trntui.analysis.key_averages as ka

    computed: list[int] = []
    real = ka._pct
    monkeypatch.setattr(ka, "_pct", lambda values, total: computed.append(len(values)) or real(values, total))
    t0 = time.monotonic()
    with time_limit(90):  # a hang guard (was > 120 s per format at 200k rows); the count below is the test
        rc, out, err = run_cli(capsys, "summary", "--no-cache", "--limit", "-1", "--format", fmt, str(many_names))
    took = time.monotonic() - t0
    assert rc == 0 and err == "" and "Traceback" not in out, err
    assert "op_000000" in out and f"op_{ROWS - 1:06d}" in out
    assert len({line for line in out.splitlines() if "op_0" in line}) >= ROWS  # every row, none merged or cut
    # percent columns computed per table (a handful of times), not per row or per cell
    assert len(computed) <= 6, f"{len(computed)} percent-column computations for one table"
    print(f"{fmt}: {ROWS:,} rows in {took:.1f} s")


def test_derived_columns_are_computed_once_per_table() -> None:
    import numpy as np

    from trntui.analysis.key_averages import OpTable

    n = 5
    t = OpTable(name=[f"op{k}" for k in range(n)], device_type=["CPU"] * n, is_user_annotation=np.zeros(n, bool),
                input_shapes=[""] * n, count=np.arange(1, n + 1), self_cpu_time_total=np.full(n, 2.0),
                cpu_time_total=np.full(n, 4.0), self_device_time_total=np.zeros(n), device_time_total=np.zeros(n),
                sum_self_cpu=10.0)
    assert t.self_cpu_percent is t.self_cpu_percent and t.cpu_time is t.cpu_time
    assert t.self_cpu_percent.tolist() == [20.0] * n
    t.sum_self_cpu = 20.0  # a total that changes is seen
    assert t.self_cpu_percent.tolist() == [10.0] * n
    t.cpu_time_total = np.full(n, 8.0)  # so is a replaced column
    assert t.cpu_time.tolist() == (8.0 / np.arange(1, n + 1)).tolist()
