"""Issue 28, round three of the hostile probes, classes 5 (the memory budget everywhere), 6 ("unexpected X"
crashes become one line naming the file and the field) and 8 (wrong or noisy figures). Every input is built
here; the device exports with pyarrow (tests/device_exports.py)."""

from __future__ import annotations

import json
import os
import re
import warnings
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
    assert "needs about 5." in err  # ~600 B a row: 5.79 GiB


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


# ----------------------------------------------------------------------------------------------------------
# classes 6 and 8 on Kineto traces: values no real trace has give a line or a dropped, counted record — never
# "unexpected OverflowError", never a wrapped (negative) or infinite figure
# ----------------------------------------------------------------------------------------------------------
_OP = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5}
_KERNEL = {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "ts": 12, "dur": 2,
           "args": {"device": 0, "stream": 7, "grid": [1, 1, 1], "block": [1, 1, 1], "registers per thread": 1e30,
                    "shared memory": 10**30, "blocks per SM": 1e30, "est. achieved occupancy %": 1e300}}
_MEMORY = {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 11, "s": "t",
           "args": {"Total Reserved": 10**30, "Total Allocated": -(10**30), "Bytes": 10**25, "Addr": 10**40,
                    "Device Type": 0, "Device Id": -1}}
_GOOD_MEMORY = {**_MEMORY, "ts": 12, "args": {"Total Reserved": 2 << 20, "Total Allocated": 1 << 20, "Bytes": 1 << 20,
                                                "Addr": 4096, "Device Type": 0, "Device Id": -1}}

KINETO_CASES = {
    # name: (events, extra top-level keys, what the overview must say (fragments), what it must not)
    "pid of 40 digits": ([{**_OP, "pid": 10**40}], {}, ["aten::mm"], []),
    "pid 2**62 and tid -2**63": ([{**_OP, "pid": 2**62, "tid": -(2**63)}, _OP], {}, ["aten::mm"], []),
    "ProfilerStep#<40 digits>": ([{**_OP, "cat": "user_annotation", "name": "ProfilerStep#" + "9" * 40, "ts": 1,
                                   "dur": 50}, _OP], {}, ["aten::mm"], []),
    "registers per thread 1e30": ([_OP, _KERNEL], {}, ["occupancy -"], ["1e+30", "1000000000000000019884624838656"]),
    "memory bytes of 10^30": ([_OP, _MEMORY, _GOOD_MEMORY], {},
                              ["1 memory record skipped: a byte figure out of range", "peak 1.00 MB allocated"], []),
    "rank and world size of 10^30": ([_OP], {"distributedInfo": {"rank": 10**30, "world_size": 10**30, "backend": "nccl"}},
                                     ["aten::mm"], []),
    "start_ts 1e30": ([{**_OP, "ts": "1e30"}, _OP], {}, ["aten::mm"], []),
    "start_ts inf": ([{**_OP, "ts": "inf"}, _OP], {}, ["aten::mm"], []),
    "start_ts of 99 digits": ([{**_OP, "ts": int("9" * 99)}, _OP], {}, ["aten::mm"], []),
}

BAD_FIGURE = re.compile(r"(?<![\w.])-\d[\d,.]*\s?(?:[kMGTP]i?B|B|ns|us|µs|ms|s|%)(?!\w)|\binf\b|\bnan\b", re.IGNORECASE)


@pytest.mark.parametrize("case", sorted(KINETO_CASES))
@pytest.mark.parametrize("command", ["summary", "overview"])
def test_kineto_values_out_of_range(case, command, tmp_path, capsys) -> None:
    events, extra, says, never = KINETO_CASES[case]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events, **extra}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy RuntimeWarning
        rc, out, err = run_cli(capsys, command, "--no-cache", str(path))
    assert rc == 0 and "unexpected" not in err and "Traceback" not in err, err
    assert err == "" or all(line.startswith("Skipped") or "skipped" in line for line in err.splitlines()), err
    bad = [line for line in out.splitlines() if BAD_FIGURE.search(line)]
    assert not bad, bad
    if command == "overview":
        for fragment in says:
            assert fragment in out, (fragment, out)
        for fragment in never:
            assert fragment not in out, (fragment, out)


def test_memory_records_out_of_range_are_counted_in_json(tmp_path, capsys) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": [_OP, _MEMORY, _GOOD_MEMORY]}))
    rc, out, err = run_cli(capsys, "overview", "--no-cache", "--format", "json", str(path))
    doc = json.loads(out)
    assert rc == 0 and doc["memory_records_skipped"] == 1
    assert all(v >= 0 for c in doc["memory"] for k, v in c.items() if isinstance(v, (int, float)) and "peak" in k)


def test_lanes_keyed_by_core_and_engine_do_not_explode(tmp_path, capsys) -> None:
    """20,000 engine names on cores 0 and 255: one lane per pair present, made without a (cores x names) table
    (it was 41 MB here, 3.3 GB for a 489 KB file with wider core numbers) nor a pass over the rows per pair."""
    import tracemalloc

    from trntui.loaders.neuron_device.timeline import _lanes_by_core

    n = 20_000
    pcore = np.where(np.arange(n) % 2 == 0, 0, 255).astype(np.int64)
    codes = np.arange(n, dtype=np.int64)
    labels = [f"Engine{k}" for k in range(n)]
    made: list[tuple[int, str]] = []
    tracemalloc.start()
    try:
        lanes = _lanes_by_core(pcore, codes, labels, lambda p, e: made.append((p, e)) or len(made) - 1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * MiB, f"{peak / MiB:.1f} MiB"
    assert len(made) == n and made[0] == (0, "Engine0") and made[-1] == (255, f"Engine{n - 1}")
    assert [made[k] for k in lanes[:3].tolist()] == [(0, "Engine0"), (255, "Engine1"), (0, "Engine2")]
    # through the loader, under a small budget
    d = tmp_path / "i-0abc_pid_1_nc_0_session_0"
    write_table(d, "Instruction", [{"start_ts": T0 + k, "end_ts": T0 + k + 1, "engine": f"Engine{k}", "opcode": "OP",
                                     "pcore_idx": int(pcore[k])} for k in range(n)])
    write_table(d, "Metadata", [TRN2_LNC2])
    rc, out, err = run_cli(capsys, "summary", "--no-cache", "--memory-budget", "1G", str(d))
    assert rc == 0 and "unexpected" not in err, err


def _split_parts(root: Path, parts: int) -> Path:
    """The bundled Neuron Parquet export with its SystemProfileEvents duplicated into `parts` split parts."""
    import shutil

    src = Path(__file__).resolve().parents[1] / "sample_profiles" / "neuron" / "fused" / "explorer_parquet"
    d = root / f"parts{parts}"
    d.mkdir()
    for p in src.glob("*.parquet"):
        if p.name != "SystemProfileEvents.parquet":
            shutil.copy(p, d / p.name)
    for k in range(parts):
        shutil.copy(src / "SystemProfileEvents.parquet", d / f"SystemProfileEvents_{k}.parquet")
    return d


def test_1001_split_parts_are_refused_under_200m_before_they_are_read(tmp_path, monkeypatch, capsys) -> None:
    """The peak grows with the square of the parts' count (267 MiB beyond the rows for 1,001 parts of 12 rows:
    1.65 GB in the probe's): the estimate counts it, so the load is refused before a part is read."""
    from trntui.loaders.neuron.parquet import load, tables

    d = _split_parts(tmp_path, 1001)
    for module in (load, tables):  # where read_tables is looked up: the events' read, the companion tables' reads
        monkeypatch.setattr(module, "read_tables", lambda files: pytest.fail("a part was read"))
    rc, out, err = run_cli(capsys, "summary", "--no-cache", "--memory-budget", "200M", str(d))
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "12,012 system-trace rows in 1,001 split parts" in err and "over the memory budget of 200 MiB" in err


def test_301_split_parts_load_inside_200m(tmp_path) -> None:
    from tests.test_hostile_input import run_measured

    d = _split_parts(tmp_path, 301)
    rc, out, err, peak, _ = run_measured("summary", "--no-cache", "--memory-budget", "200M", str(d))
    assert rc == 0 and "1806 framework row(s)" in out, err
    assert peak < 200 * MiB, f"{peak / MiB:.0f} MiB"


# ----------------------------------------------------------------------------------------------------------
# class 8: `ranks` on two jobs of one name
# ----------------------------------------------------------------------------------------------------------
def test_ranks_job_name_shared_by_two_jobs_is_an_error_listing_them(corpus_dir, tmp_path, capsys) -> None:
    from tests.rank_job import make_job

    d = tmp_path / "runs" / "mixed-world"
    d.mkdir(parents=True)
    for world in (4, 2):
        for p in make_job(corpus_dir, tmp_path / f"w{world}", ranks=world):
            p.rename(d / f"w{world}_{p.name}")
    for argv in (("--job", "mixed-world"), ()):
        rc, out, err = run_cli(capsys, "ranks", "--no-cache", *argv, str(tmp_path / "runs"))
        assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert "mixed-world: 2 ranks, world size 2" in err and "mixed-world: 4 ranks, world size 4" in err, err


@pytest.mark.parametrize("manifest", ["nested", "300MB", "dev_zero"])
def test_a_hostile_trntui_json_does_not_stop_the_directory_loading(manifest, tmp_path, capsys) -> None:
    """100k nested brackets (RecursionError), a 300 MB file (sparse: nothing is read past the 16 MiB limit), a
    link to /dev/zero: the manifest is ignored, the trace beside it loads."""
    d = tmp_path / "run"
    d.mkdir()
    (d / "trace.json").write_text(json.dumps({"schemaVersion": 1, "traceEvents": [_OP]}))
    m = d / "trntui.json"
    if manifest == "nested":
        m.write_text("[" * 100_000 + "]" * 100_000)
    elif manifest == "300MB":
        with open(m, "wb") as f:
            f.truncate(300 * MiB)
    else:
        m.symlink_to("/dev/zero")
    rc, out, err = run_cli(capsys, "summary", "--no-cache", "--memory-budget", "200M", str(d))
    assert rc == 0 and "aten::mm" in out and "unexpected" not in err, err


def test_an_unreadable_rank_file_is_skipped_and_counted_the_other_ranks_summarised(corpus_dir, tmp_path) -> None:
    """Where the rest of the job is good, an unreadable rank file is skipped and counted, named in one line
    with why; the other ranks are summarised and the exit code is that of other skipped input (0). Before: the
    grouping's peek at the file raised, and the one unreadable file stopped `ranks` (exit 2, nothing shown)."""
    from tests.rank_job import make_job
    from tests.test_hostile_args import _run_unprivileged

    files = make_job(corpus_dir, tmp_path / "job", ranks=3)
    files[1].chmod(0)
    rc, out, err = _run_unprivileged("ranks", str(tmp_path / "job"))
    assert rc == 0 and err == "" and "Traceback" not in out, err
    assert "2 ranks read of 3" in out, out
    named = [line for line in out.splitlines() if files[1].name in line]
    assert len(named) == 1 and "cannot read: Permission denied" in named[0], out
    rows = [line.split()[0] for line in out.splitlines() if re.match(r"\s*\d+\s+2\s+\d", line)]
    assert rows == ["0", "2"], out
    assert "missing" not in out
    for fmt in ("json", "csv"):  # machine formats: the skipped file is one line on stderr
        rc, out, err = _run_unprivileged("ranks", "--format", fmt, str(tmp_path / "job"))
        assert rc == 0 and len(err.strip().splitlines()) == 1, err
        assert files[1].name in err and "cannot read: Permission denied" in err, err
    # every rank unreadable: nothing to show, one line and exit 2
    for f in files:
        f.chmod(0)
    rc, out, err = _run_unprivileged("ranks", str(tmp_path / "job"))
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "no rank could be read" in err and "cannot read: Permission denied" in err, err


@pytest.mark.parametrize("typ, value", [(pa.list_(pa.string()), ["vector"]), (pa.struct([("e", pa.string())]), {"e": "vector"})])
def test_an_engine_that_is_not_text_drops_its_row_with_a_count(typ, value, tmp_path, capsys) -> None:
    from tests.device_exports import instr

    d = tmp_path / "i-0abc_pid_1_nc_0_session_0"
    write_table(d, "Instruction", [{**instr(T0 + 1, T0 + 5, "x", "OP"), "engine": value},
                                   {**instr(T0 + 10, T0 + 50, "x", "OP"), "engine": None}],
                types={"engine": typ})
    write_table(d, "Metadata", [TRN2_LNC2])
    rc, out, err = run_cli(capsys, "device", str(d))
    assert rc == 0 and err == "", err
    assert "Instruction: 1 of 2 rows skipped (1 engine not text)" in out and "1 instructions" in out


# ----------------------------------------------------------------------------------------------------------
# class 6, the rest of the table of "unexpected" inputs: each is one line of ours naming the file (or the option)
# and the field and what was expected (exit 2), or, where the rest is good, the bad value is skipped and counted
# (exit 0) — never Python's exception text, never a line thousands of characters long
# ----------------------------------------------------------------------------------------------------------
PYTHON_TEXT = re.compile(r"OverflowError|ArrowInvalid|ValueError|RecursionError|MemoryError|TypeError|Exceeds the limit|"
                         r"int too large|error: unexpected|Traceback")
BIG = "9" * 5000
NEURON_SAMPLE = Path(__file__).resolve().parents[1] / "sample_profiles" / "neuron" / "fused"


def _neuron_copy(tmp: Path, table: str, fn) -> Path:
    """The bundled Neuron profile with `table` of its Explorer Parquet export rewritten by `fn`."""
    import shutil

    d = tmp / "run"
    shutil.copytree(NEURON_SAMPLE, d)
    (d / "trntui.json").unlink()
    p = d / "explorer_parquet" / f"{table}.parquet"
    pq.write_table(fn(pq.read_table(p)), p)
    return d


def _uint64_max(col: str):
    def fn(t: pa.Table) -> pa.Table:
        vals = [v if v is not None and v >= 0 else 0 for v in t[col].to_pylist()]
        vals[0] = 2**64 - 1  # not an int64: pyarrow's cast raised ArrowInvalid
        return t.set_column(t.schema.get_field_index(col), col, pa.array(vals, pa.uint64()))
    return fn


def _json_export(tmp: Path, text: str) -> Path:
    d = tmp / "run"
    (d / "explorer_json").mkdir(parents=True)
    (d / "explorer_json" / "system_profile.json").write_text(text)
    return d


_EVENT = '{"name": "nc_exec_running", "timestamp": 1729888371056597613, "duration": 200000, "nc_idx": 0, "process_id": "2"}'


def _device(tmp: Path, first: dict, *, types: dict | None = None, md: dict | None = None,
            summary: dict | None = None) -> Path:
    """A device export of one hostile Instruction row (`first`) and one good one."""
    from tests.device_exports import instr

    d = tmp / "i-0abc_pid_1_nc_0_session_0"
    write_table(d, "Instruction", [first, instr(T0 + 10, T0 + 50, "tensor", "OP")], types=types)
    write_table(d, "Metadata", [md or TRN2_LNC2])
    if summary:
        write_table(d, "Summary", [summary])
    return d


def _instr(**kw):
    from tests.device_exports import instr

    return instr(T0 + 1, T0 + 5, "vector", "OP", **kw)


def _scheduler(tmp: Path, corpus_dir: Path, address: str) -> list[str]:
    pytest.importorskip("distributed")
    from tests.rank_job import make_job

    make_job(corpus_dir, tmp / "job", ranks=2)
    return ["ranks", "--no-cache", "--engine", "dask", "--scheduler", address, str(tmp / "job")]


def _kineto(tmp: Path) -> Path:
    path = tmp / "trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": [_OP]}))
    return path


SKIP_PCORE = "Instruction: 1 of 2 rows skipped (1 pcore_idx out of range or not an integer)"
UNEXPECTED_CASES = {
    # name: (argv from (tmp, corpus_dir), exit code, fragments the output (stdout + stderr) must hold)
    "Dask scheduler port of 30 digits": (
        lambda t, c: _scheduler(t, c, "tcp://127.0.0.1:" + "9" * 30), 2,
        ["bad --scheduler 'tcp://127.0.0.1:999", "port 999999999999999999999999999999 is not a TCP port (1-65535)"]),
    "Dask scheduler port of 30 digits, no protocol": (
        lambda t, c: _scheduler(t, c, "127.0.0.1:" + "9" * 30), 2, ["is not a TCP port (1-65535)"]),
    "Dask scheduler port 70000": (lambda t, c: _scheduler(t, c, "tcp://127.0.0.1:70000"), 2,
                                  ["port 70000 is not a TCP port (1-65535)"]),
    "Dask scheduler of an in-process protocol": (
        lambda t, c: _scheduler(t, c, "inproc://x"), 2, ["protocol inproc:// is not one of tcp://"]),
    "uint64 max in SystemProfileEvents.start_ts": (
        lambda t, c: ["summary", "--no-cache", str(_neuron_copy(t, "SystemProfileEvents", _uint64_max("start_ts")))], 0,
        ["Skipped 1 input record(s): 1 Neuron values out of the int64 range"]),
    "uint64 max in SystemProfileEvents.process_id": (
        lambda t, c: ["summary", "--no-cache", str(_neuron_copy(t, "SystemProfileEvents", _uint64_max("process_id")))], 0,
        ["Skipped 1 input record(s): 1 Neuron values out of the int64 range"]),
    "uint64 max in Instruction.start_ts": (
        lambda t, c: ["device", str(_device(t, _instr(start_ts=2**64 - 1, id=1, duration_ns=4),
                                            types={"start_ts": pa.uint64(), "end_ts": pa.uint64()}))], 0,
        ["Instruction: 1 of 2 rows skipped (1 start_ts missing, not an integer or out of range)"]),
    "uint64 max in Instruction.hbm_read_bytes": (
        lambda t, c: ["device", str(_device(t, _instr(hbm_read_bytes=2**64 - 1), types={"hbm_read_bytes": pa.uint64()}))],
        0, ["Instruction.hbm_read_bytes: 1 values not a number in range, read as unknown (0)", "2 instructions"]),
    "pcore_idx 2^63-1": (lambda t, c: ["device", str(_device(t, _instr(pcore=2**63 - 1)))], 0, [SKIP_PCORE]),
    "pcore_idx -2^63": (lambda t, c: ["device", str(_device(t, _instr(pcore=-(2**63))))], 0, [SKIP_PCORE]),
    "pcore_idx 10^12": (lambda t, c: ["device", str(_device(t, _instr(pcore=10**12)))], 0, [SKIP_PCORE]),
    "pcore_idx 10^12 opened as a run": (lambda t, c: ["summary", "--no-cache", str(_device(t, _instr(pcore=10**12)))], 0,
                                        ["Neuron device profile"]),
    "Summary.total_time 1e300": (
        lambda t, c: ["device", str(_device(t, _instr(), summary={"total_time": 1e300}))], 0,
        ["Summary.total_time 1e+300 is not a time in seconds (expected a positive number under 1e30): not used"]),
    "Summary.total_time -1e300": (
        lambda t, c: ["device", str(_device(t, _instr(), summary={"total_time": -1e300}))], 0,
        ["Summary.total_time -1e+300 is not a time in seconds"]),
    "a 5,000-digit profile_schema_version in a device export": (
        lambda t, c: ["device", str(_device(t, _instr(), md=dict(TRN2_LNC2, profile_schema_version=BIG)))], 0,
        ["schema 999999999999999999999..."]),
    "a 5,000-digit profile_schema_version in a device export, info": (
        lambda t, c: ["info", str(_device(t, _instr(), md=dict(TRN2_LNC2, profile_schema_version=BIG)))], 0,
        ["schema 9999999999999999999999999999999999999...", "not the 7.4.0 MAJOR trntui's field lists come from"]),
    "a 5,000-digit profile_schema_version in Explorer Parquet Metadata": (
        lambda t, c: ["info", str(_neuron_copy(t, "Metadata", lambda tb: tb.set_column(
            0, "profile_schema_version", pa.array([BIG]))))], 0, ["Neuron Explorer output, 12 system events, schema 9999"]),
    "a 5,000-digit profile_schema_version in Explorer Parquet Metadata, summary": (
        lambda t, c: ["summary", "--no-cache", str(_neuron_copy(t, "Metadata", lambda tb: tb.set_column(
            0, "profile_schema_version", pa.array([BIG]))))], 0, ["aten::_fused_rms_norm", "ProfilerStep*"]),
    "5,000-digit numbers in a Neuron JSON export (schema version, ntff_version, a duration, a process id)": (
        lambda t, c: ["summary", "--no-cache", str(_json_export(t, (
            '{"system_profile_metadata": [{"ntff_version": %s, "profile_schema_version": %s}], "metadata": '
            '{"profile_schema_version": %s}, "trace_event": [%s, {"name": "nrt_tensor_write", "timestamp": '
            '1729888371056600000, "duration": %s, "nc_idx": 0}, {"name": "x", "timestamp": 1729888371056700000, '
            '"duration": 5, "process_id": %s}]}') % (BIG, BIG, BIG, _EVENT, BIG, BIG)))], 0,
        ["Skipped 2 input record(s): 2 Neuron values out of the int64 range"]),
    "--what-if factor of 40 digits": (lambda t, c: ["overview", "--no-cache", "--what-if", "aten::mm=" + "9" * 40 + "x",
                                                    str(_kineto(t))], 2, ["the factor must be at most 1,000,000x"]),
    "--what-if time of 40 digits": (lambda t, c: ["overview", "--no-cache", "--what-if", "aten::mm=" + "9" * 40 + "us",
                                                  str(_kineto(t))], 2, ["the time must be at most 1,000,000 s"]),
    "--what-if that slows the step down": (lambda t, c: ["overview", "--no-cache", "--what-if", "aten::mm=1000000x",
                                                         str(_kineto(t))], 0,
                                           ["path 5,000,000.0 us, predicted step 5,000,000.0 us (adds 4,999,995.0 us, "
                                            "99999900.0% of the step)"]),
    "100k nested brackets in a Neuron JSON export": (
        lambda t, c: ["summary", "--no-cache", str(_json_export(t, '{"trace_event": [%s, {"x": %s}]}' % (
            _EVENT, "[" * 100_000 + "]" * 100_000)))], 2,
        ["explorer_json/system_profile.json: JSON nested too deep to read"]),
}


@pytest.mark.parametrize("case", sorted(UNEXPECTED_CASES))
def test_unexpected_inputs_give_our_line(case, tmp_path, corpus_dir, capsys) -> None:
    import tracemalloc

    argv, code, says = UNEXPECTED_CASES[case]
    argv = argv(tmp_path, corpus_dir)
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no numpy RuntimeWarning either
            rc, out, err = run_cli(capsys, *argv)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    text = out + err
    assert rc == code, (rc, err)
    assert not PYTHON_TEXT.search(text), err or out
    assert all(len(line) < 600 for line in text.splitlines()), max(text.splitlines(), key=len)[:200]
    if code == 2:
        assert out == "" and len(err.strip().splitlines()) == 1, err
    for fragment in says:
        assert fragment in text, (fragment, text[-2000:])
    assert peak < 400 * MiB, f"{peak / MiB:.0f} MiB"  # (pcore_idx 10^12 once asked for a 29 TiB table)


# ----------------------------------------------------------------------------------------------------------
# class 5 in the Python API: a device profile's SQL tables are read under the run's budget, as `trntui device`
# and `trntui sql` read them
# ----------------------------------------------------------------------------------------------------------
DEVICE_QUERY = ("SELECT engine, count(*) AS n, sum(end_ts - start_ts) AS busy, sum(hbm_read_bytes) AS rd, "
                "sum(raw_flops) AS flops FROM instructions GROUP BY engine ORDER BY engine")


@pytest.fixture(scope="module")
def hundred_k(tmp_path_factory) -> Path:
    return _device_export(tmp_path_factory.mktemp("api") / "i-0abc_pid_1_nc_0_session_0", 100_000)


def test_api_device_tables_are_refused_over_the_budget_as_the_cli_refuses_them(hundred_k, monkeypatch, capsys) -> None:
    """A budget the run's profile fits (360 B a row) but its device tables do not (600 B a row, what `trntui
    device` is refused at): `Run.sql` raises the documented `OverBudget` (a `LoadError`, one line naming the
    directory) before a table is read; before, the API read the tables with no limit at all."""
    import trntui
    from trntui import memory
    from trntui.errors import LoadError, OverBudget

    rows = 100_001  # the instructions and the Metadata row
    budget = memory.DEVICE_FIXED_BYTES + rows * (memory.DEVICE_PROFILE_BYTES_PER_ROW + memory.DEVICE_REPORT_BYTES_PER_ROW) // 2
    run = trntui.load(hundred_k, memory_budget=budget, cache=False)  # the profile fits
    assert len(run.profile) == 100_000
    _no_read(monkeypatch)
    with pytest.raises(OverBudget) as caught:
        run.sql(DEVICE_QUERY)
    assert isinstance(caught.value, LoadError)
    line = str(caught.value)
    assert "\n" not in line and str(hundred_k) in line and "100,000 instructions and 1 other table row" in line, line
    assert "over the memory budget" in line
    # the CLI's `device` and `sql` are refused at the same budget with the same line (sql loads the profile first)
    monkeypatch.undo()
    for argv in (("device",), ("sql", "--no-cache")):
        rc, out, err = run_cli(capsys, *argv, "--memory-budget", str(budget), str(hundred_k),
                               *((DEVICE_QUERY,) if argv[0] == "sql" else ()))
        assert rc == 2 and line in err, (argv, err)


def test_api_device_tables_inside_the_budget_are_the_clis(hundred_k, capsys) -> None:
    import trntui
    from trntui import memory

    budget = memory.DEVICE_FIXED_BYTES + 100_001 * memory.DEVICE_REPORT_BYTES_PER_ROW + MiB
    got = trntui.load(hundred_k, memory_budget=budget, cache=False).sql(DEVICE_QUERY)
    rc, out, err = run_cli(capsys, "sql", "--no-cache", "--format", "json", "--memory-budget", str(budget),
                           str(hundred_k), DEVICE_QUERY)
    assert rc == 0, err
    cli = [{k: (v if k == "engine" else int(v)) for k, v in r.items() if k != "run"} for r in json.loads(out)]
    api = [{k: (v if k == "engine" else int(v)) for k, v in r.items()} for r in got.to_dict("records")]
    assert api == cli and len(api) == 5 and sum(r["n"] for r in api) == 100_000
    # and an independent count from the rows written: k % 5 picks the engine, k % 4096 the bytes read
    k = np.arange(100_000)
    vector = next(r for r in api if r["engine"] == "vector")
    assert vector["n"] == 20_000 and vector["busy"] == 8 * 20_000 and vector["rd"] == int((k[k % 5 == 1] % 4096).sum())
    assert vector["flops"] == int((k[k % 5 == 1] % 1000).sum())
