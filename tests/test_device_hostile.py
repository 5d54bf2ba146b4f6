"""Hostile device exports (issue 28, the device-export parts): an engine outside the documented five outside the
window, 200k distinct engine and opcode names, absurd physical-core indexes, unparsable timestamps of every
Parquet type, values that wrap int64; none crashes, none prints a negative, infinite or NaN figure, and no
numpy warning reaches stderr. The exports are built row by row from the schema (tests/device_exports.py).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
import warnings
from pathlib import Path

import pyarrow as pa
import pytest

from tests.conftest import run_cli
from tests.device_exports import T0, instr, two_executions, write_table
from trntui.analysis.device import analyse, window_for
from trntui.loaders.neuron_device import device_profile, load_device

BAD_FIGURE = re.compile(r"-\d[\d,.]*\s?(?:[kMGTP]?B|ns|µs|ms|s|%|×)(?!\w)|\binf\b|\bnan\b|∞", re.IGNORECASE)
"""A figure we must never print: negative bytes/times/percentages, inf, NaN."""


def _quiet(fn, *args, **kw):
    """Run `fn` turning every warning into an error (numpy RuntimeWarnings included)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args, **kw)


def _clean(out: str) -> None:
    bad = [line for line in out.splitlines() if BAD_FIGURE.search(line) and not line.startswith(("Note:", "Definition:"))]
    assert not bad, bad


# ----------------------------------------------------------------------------------------------------------
# an engine outside the documented five, outside the chosen window
# ----------------------------------------------------------------------------------------------------------
def test_collectives_engine_outside_the_window(tmp_path: Path, capsys) -> None:
    d = two_executions(tmp_path, extra_instructions=[instr(T0 + 80_000, T0 + 81_000, "Collectives", "ALL_REDUCE", 0)])
    rc, out, err = run_cli(capsys, "device", str(d), "--exec", "0")
    assert rc == 0 and err == "" and "Collectives" not in out and "Window: execution 0" in out
    rc, out, err = run_cli(capsys, "device", str(d), "--exec", "1")
    assert rc == 0 and err == "" and "Collectives" in out
    export = load_device(d)
    w1, _ = window_for(export, execution=1)
    assert _quiet(analyse, export, window=w1).engine("Collectives").busy_ns == 1000
    # the Device view's path: the window of a selected system execution on the same clock
    w0, _ = window_for(export, execution=0)
    w, shift = window_for(export, system=(w0.start, w0.end), rank=0)
    report = _quiet(analyse, export, window=w, shift=shift)
    assert report.engine("Collectives") is None and report.instruction_count == 2
    prof = device_profile(export, w, shift)
    assert not any("Collectives" in lane.ident for lane in prof.lanes_by_tier())


# ----------------------------------------------------------------------------------------------------------
# 200k distinct engine and opcode names (4.4 MB): no engines × opcodes key space, no per-label list search
# ----------------------------------------------------------------------------------------------------------
def test_200k_distinct_engine_and_opcode_names(tmp_path: Path, capsys) -> None:
    n = 200_000
    d = tmp_path / "dev"
    d.mkdir()
    import pyarrow.parquet as pq

    starts = pa.array([k * 10 for k in range(n)], pa.int64())
    pq.write_table(pa.table({
        "start_ts": starts, "end_ts": pa.array([k * 10 + 5 for k in range(n)], pa.int64()),
        "engine": pa.array([f"E{k}" for k in range(n)]), "opcode": pa.array([f"O{k}" for k in range(n)]),
    }), d / "Instruction.parquet")
    export = load_device(d)
    report = _quiet(analyse, export)
    assert report.instruction_count == n and len(report.opcodes) == n
    assert [e.engine for e in report.engines[:5]] == ["Tensor", "Vector", "Scalar", "GpSimd", "Sync"]
    assert len(report.engines) == 15  # the documented five and the ten busiest others
    assert any("200,000 engine names besides the documented five" in x and "199,990 more" in x for x in report.notes)
    rc, out, err = run_cli(capsys, "device", str(d), "--limit", "5")
    assert rc == 0 and err == ""


# ----------------------------------------------------------------------------------------------------------
# pcore_idx ±2^63 or 10^12: the rows are dropped and counted (never a 29 TiB lane table)
# ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("values, typ", [
    ([-(2**63), 10**12, 2**63 - 1], pa.int64()),
    ([2**63, 10**12, 2**64 - 1], pa.uint64()),
    (["9" * 30, "-5", "1e300"], pa.string()),
])
def test_absurd_physical_core_indexes(tmp_path: Path, capsys, values, typ) -> None:
    d = tmp_path / "dev"
    rows = [instr(1000 * k, 1000 * k + 500, "vector", "TENSOR_TENSOR", v) for k, v in enumerate(values)]
    rows += [instr(5000, 6000, "vector", "TENSOR_TENSOR", 0), instr(6000, 7000, "vector", "TENSOR_TENSOR", 1)]
    if typ == pa.string():
        for r in rows:
            r["pcore_idx"] = str(r["pcore_idx"])
    write_table(d, "Instruction", rows, types={"pcore_idx": typ})
    export = load_device(d)
    assert len(export.instructions) == 2 and export.tables["Instruction"].skipped_rows == 3
    assert any("3 of 5 rows skipped (3 pcore_idx out of range or not an integer)" in x for x in export.notes)
    report = _quiet(analyse, export)
    assert report.pcores == [0, 1]
    prof = _quiet(device_profile, export)
    assert sorted({lane.ident for lane in prof.lanes_by_tier()}) == ["NC0:0/Vector", "NC0:1/Vector"]
    rc, out, err = run_cli(capsys, "device", str(d))
    assert rc == 0 and err == "" and "3 of 5 rows skipped" in out


# ----------------------------------------------------------------------------------------------------------
# unparsable Instruction timestamps: dropped and counted, never read as 0
# ----------------------------------------------------------------------------------------------------------
HOSTILE_STARTS = {
    "junk strings": (pa.string(), ["1000", "soon", "", "12abc", "3000"], 2),
    "lists": (pa.list_(pa.int64()), [[1000], [2], [3], [4], [5]], 0),
    "structs": (pa.struct([("ns", pa.int64())]), [{"ns": 1000}] * 5, 0),
    "bools": (pa.bool_(), [True, False, True, True, False], 0),
    "binary": (pa.binary(), [b"1000", b"x", b"\x00", b"2", b"3"], 0),
    "decimals": (pa.decimal128(20, 2), [decimal.Decimal("1000.50")] * 5, 0),
    "datetimes": (pa.timestamp("ns"), [dt.datetime(2026, 1, 1)] * 5, 0),
    "NaN and inf": (pa.float64(), [1000.0, float("nan"), float("inf"), -float("inf"), 3000.0], 2),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE_STARTS))
def test_unparsable_instruction_timestamps_are_dropped_and_counted(tmp_path: Path, capsys, kind: str) -> None:
    typ, starts, good = HOSTILE_STARTS[kind]
    d = tmp_path / "dev"
    rows = [dict(instr(0, 4000 + k, "vector", "TENSOR_TENSOR"), start_ts=v) for k, v in enumerate(starts)]
    write_table(d, "Instruction", rows, types={"start_ts": typ})
    export = _quiet(load_device, d)
    ins = export.instructions
    assert len(ins) == good and export.tables["Instruction"].skipped_rows == 5 - good
    assert (ins["start_ts"] > 0).all()  # nothing read as 0
    assert any(f"{5 - good} of 5 rows skipped ({5 - good} start_ts missing, not an integer or out of range)" in x
               for x in export.notes), export.notes
    rc, out, err = run_cli(capsys, "device", str(d))
    assert rc == 0 and err == "", err  # no numpy RuntimeWarning
    _clean(out)
    assert "rows skipped" in out


# ----------------------------------------------------------------------------------------------------------
# int64 wrap-arounds and zero-length windows: no "-128 B", no "inf", no "inf%"
# ----------------------------------------------------------------------------------------------------------
def test_values_that_would_wrap_int64_are_counted_not_printed(tmp_path: Path, capsys) -> None:
    d = tmp_path / "i-0abc_pid_1_nc_0_session_0"
    big = 2**62
    write_table(d, "Instruction", [
        instr(1000, 2000, "tensor", "MATMUL", raw_flops=big, hbm_read_bytes=big, hbm_write_bytes=big, raw_framework_id=1),
        instr(2000, 3000, "tensor", "MATMUL", raw_flops=big, hbm_read_bytes=-128, hbm_write_bytes=big, raw_framework_id=1),
        instr(3000, 4000, "vector", "TENSOR_SCALAR", raw_flops=1000, hbm_read_bytes=64, raw_framework_id=2)])
    write_table(d, "DmaPacketAggregated", [
        {"start_ts": 1000, "end_ts": 1500, "queue_name": "q", "variable": "x", "read_bytes": big, "write_bytes": big,
         "transfer_bytes": -(2**63), "source": "[INPUT]", "dest": "[SB]"}])
    write_table(d, "Metadata", [{"profile_schema_version": "7.4.0", "instance_type": "trn2.3xlarge",
                                 "num_physical_cores": 10**12, "hbm_ddr_bandwidth": float("inf")}],
                types={"num_physical_cores": pa.int64()})
    export = _quiet(load_device, d)
    assert export.tables["Instruction"].bad_values == {"hbm_read_bytes": 2, "hbm_write_bytes": 2, "raw_flops": 2}
    assert export.num_physical_cores == 1  # 10^12 is not a core count
    report = _quiet(analyse, export)
    assert report.hbm_bytes == 64.0 and report.flops == 1000.0
    rc, out, err = run_cli(capsys, "device", str(d))
    assert rc == 0 and err == ""
    _clean(out)
    assert "-128" not in out and "values not a number in range" in out
    rc, out, err = run_cli(capsys, "device", str(d), "--format", "json")
    doc = json.loads(out)  # strict JSON: no NaN/Infinity tokens
    assert rc == 0 and "NaN" not in out and "Infinity" not in out and doc["hbm_bytes"] == 64.0


def test_zero_length_window_prints_no_inf_percent(tmp_path: Path, capsys) -> None:
    d = tmp_path / "dev"
    write_table(d, "Instruction", [instr(5000, 5000, "vector", "TENSOR_SCALAR", raw_flops=10)])
    report = _quiet(analyse, load_device(d))
    assert report.total_ns == 0
    rc, out, err = run_cli(capsys, "device", str(d))
    assert rc == 0 and err == ""
    _clean(out)
    rc, out, _ = run_cli(capsys, "device", str(d), "--format", "json")
    assert "NaN" not in out and "Infinity" not in out


def test_all_rows_unusable_is_an_empty_report_not_a_crash(tmp_path: Path, capsys) -> None:
    d = tmp_path / "dev"
    write_table(d, "Instruction", [dict(instr(0, 10, "vector", "X"), start_ts="never")], types={"start_ts": pa.string()})
    rc, out, err = run_cli(capsys, "device", str(d))
    assert rc == 0 and err == "" and "0 instructions" in out and "1 of 1 rows skipped" in out
    _clean(out)


def test_a_5000_digit_schema_version(tmp_path: Path, capsys) -> None:
    d = tmp_path / "dev"
    write_table(d, "Instruction", [instr(0, 10, "vector", "X")])
    write_table(d, "Metadata", [{"profile_schema_version": "9" * 5000 + ".0.0"}])
    rc, out, err = run_cli(capsys, "device", str(d))
    assert rc == 0 and err == "" and "is not MAJOR.MINOR.PATCH" in out and "9" * 100 not in out
