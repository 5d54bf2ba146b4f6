"""Issue 28, round three of the hostile probes, classes 5 (the memory budget everywhere), 6 ("unexpected X"
crashes become one line naming the file and the field) and 8 (wrong or noisy figures). Every input is built
here; the device exports with pyarrow (tests/device_exports.py)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import run_cli
from tests.device_exports import T0, TRN2_LNC2, write_table

MiB = 1 << 20


def _device_export(d: Path, rows: int, *, parts: int = 1) -> Path:
    """A device profile of `rows` Instruction rows (every column trntui reads), written as `parts` row groups of
    one table (a 10M-row export costs one part's memory to write)."""
    d.mkdir(parents=True, exist_ok=True)
    n = rows // parts
    k = np.arange(n, dtype=np.int64)
    st = T0 + k * 10

    def strings(values: list[str], codes: np.ndarray) -> pa.Array:
        return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(values)).cast(pa.string())

    table = pa.table({
        "start_ts": pa.array(st), "end_ts": pa.array(st + 8),
        "engine": strings(["tensor", "vector", "scalar", "gpsimd", "sync"], k % 5),
        "opcode": strings([f"OP_{j}" for j in range(50)], k % 50), "pcore_idx": pa.array(k % 2),
        "hlo_name": strings([f"h.{j}" for j in range(100)], k % 100), "raw_hlo_id": pa.array(k % 100),
        "raw_framework_id": pa.array(k % 10), "hbm_read_bytes": pa.array(k % 4096),
        "hbm_write_bytes": pa.array(k % 2048), "raw_flops": pa.array(k % 1000),
    })
    with pq.ParquetWriter(d / "Instruction.parquet", table.schema) as w:
        for _ in range(parts):
            w.write_table(table)
    write_table(d, "Metadata", [dict(TRN2_LNC2, last_hw_timestamp=int(T0 + n * 10))])
    return d


# ----------------------------------------------------------------------------------------------------------
# class 5: `trntui device` under the memory budget
# ----------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ten_million(tmp_path_factory) -> Path:
    """A 10M-instruction device export (ten row groups of 1M)."""
    return _device_export(tmp_path_factory.mktemp("big") / "i-0abc_pid_1_nc_0_session_0", 10_000_000, parts=10)


def _no_read(monkeypatch) -> None:
    import trntui.loaders.neuron_device.export as export

    def refuse(*a, **k):
        raise AssertionError("a table was read")

    monkeypatch.setattr(export, "read_table", refuse)


@pytest.mark.parametrize("how", ["option", "environment"])
def test_device_refuses_a_10m_instruction_export_over_the_budget_before_reading(how, ten_million, monkeypatch, capsys) -> None:
    _no_read(monkeypatch)
    if how == "option":
        rc, out, err = run_cli(capsys, "device", "--memory-budget", "2G", str(ten_million))
    else:
        monkeypatch.setenv("TRNTUI_MEMORY_BUDGET", "2G")
        rc, out, err = run_cli(capsys, "device", str(ten_million))
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert str(ten_million) in err and "10,000,000 instructions and 1 other table row)" in err and "over the memory budget of 2.00 GiB" in err
    assert "needs about 5." in err  # ~520 B a row: 5.04 GiB


def test_device_profile_opened_as_a_run_refuses_over_the_budget(ten_million, monkeypatch, capsys) -> None:
    _no_read(monkeypatch)
    rc, out, err = run_cli(capsys, "summary", "--no-cache", "--memory-budget", "2G", str(ten_million))
    assert rc == 2 and "10,000,000 instructions and 1 other table row)" in err and "over the memory budget" in err, err


def test_device_estimate_is_above_the_measured_peak(tmp_path) -> None:
    """The figure the budget is checked against is not below what `trntui device` really takes: a budget just
    above the estimate runs, and its peak RSS (wait4) stays under it."""
    from tests.test_hostile_input import run_measured
    from trntui import memory

    d = _device_export(tmp_path / "i-0abc_pid_1_nc_0_session_0", 400_000)
    estimate = memory.DEVICE_FIXED_BYTES + 400_001 * memory.DEVICE_REPORT_BYTES_PER_ROW
    rc, out, err, peak, _ = run_measured("device", "--memory-budget", str(estimate + MiB), str(d))
    assert rc == 0 and "400,000 instructions" in out, err
    assert peak < estimate, f"peak {peak / MiB:.0f} MiB over the estimate {estimate / MiB:.0f} MiB"
    rc, out, err, _, _ = run_measured("device", "--memory-budget", str(estimate - MiB), str(d))
    assert rc == 2 and "over the memory budget" in err
