"""The device-profile loader and analysis (issue 18) on exports built to the documented schema.

The exports are synthetic (scripts/make_neuron_device_samples.py, or written here row by row): they test the
reading of Neuron Explorer's documented Parquet schema and the arithmetic, not real hardware.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import run_cli
from tests.neuron_device_samples import SAMPLES, generator
from trntui.analysis.device import analyse, executions, union_ns, window_for
from trntui.analysis.roofline import PEAKS, Point, peak_for, roof_for
from trntui.errors import LoadError
from trntui.loaders.neuron_device import device_profile, find_device_profiles, load_device

CANON = {"tensor": "Tensor", "vector": "Vector", "scalar": "Scalar", "gpsimd": "GpSimd", "sync": "Sync"}


def _profile_dir(root: Path) -> Path:
    refs = find_device_profiles(root)
    assert len(refs) == 1
    return refs[0].path


def _union(intervals: list[tuple[int, int]]) -> int:
    """Union length, the plain way (sort, merge): the reference the analysis is checked against."""
    total, cur = 0, None
    for s, e in sorted(intervals):
        if cur is None or s > cur[1]:
            if cur is not None:
                total += cur[1] - cur[0]
            cur = [s, e]
        else:
            cur[1] = max(cur[1], e)
    return total + (cur[1] - cur[0] if cur else 0)


@pytest.fixture(scope="module")
def naive(tmp_path_factory) -> Path:
    return generator().write_variant(tmp_path_factory.mktemp("dev"), "naive")


# ----------------------------------------------------------------------------------------------------------
# Must show 1a: engine busy % = union of Instruction intervals per engine
# ----------------------------------------------------------------------------------------------------------
def test_engine_busy_is_the_union_of_instruction_intervals(naive: Path) -> None:
    rows = pq.read_table(naive / "Instruction.parquet").to_pylist()
    export = load_device(naive)
    report = analyse(export)
    lo, hi = report.window.start, report.window.end
    summary = pq.read_table(naive / "Summary.parquet").to_pylist()[0]
    assert hi - lo == round(summary["total_time"] * 1e9)  # the window is the export's own total_time
    for raw, name in CANON.items():
        expected = _union([(r["start_ts"], r["end_ts"]) for r in rows if r["engine"] == raw])
        e = report.engine(name)
        assert e.busy_ns == expected
        assert e.percent == pytest.approx(100 * expected / (hi - lo))
        assert e.instructions == sum(1 for r in rows if r["engine"] == raw)
        # Explorer's ActiveTime (merged intervals) and Summary say the same
        assert e.active_time_percent == pytest.approx(e.percent)
        assert e.percent == pytest.approx(summary[f"{raw}_engine_active_time_percent"])
    assert report.engine("Vector").percent > 25 and report.engine("Tensor").percent == 0  # elementwise, no matmul


def test_engine_busy_per_execution_and_per_core(naive: Path) -> None:
    rows = pq.read_table(naive / "Instruction.parquet").to_pylist()
    export = load_device(naive)
    runs = executions(export)
    assert [w.index for w in runs] == [0, 1, 2, 3, 4, 5]
    w = runs[1]  # aten::mean
    report = analyse(export, window=w, pcores=[1])
    expected = _union([(r["start_ts"], r["end_ts"]) for r in rows
                       if r["engine"] == "vector" and r["pcore_idx"] == 1 and w.start <= r["start_ts"] < w.end])
    assert report.engine("Vector").busy_ns == expected > 0
    assert report.total_ns == w.end - w.start
    assert report.checks == []  # Summary describes the whole profile, not one execution
    assert set(report.framework["framework_op"]) == {"aten::mean.dim", "(no framework op)"}


def test_union_handles_overlap_nesting_and_empty_intervals() -> None:
    import numpy as np

    s = np.array([10, 0, 5, 30, 40, 40])
    e = np.array([20, 8, 12, 35, 40, 39])
    assert union_ns(s, e) == _union([(0, 8), (5, 12), (10, 20), (30, 35)]) == 25


def test_summary_figures_match_the_exports_own_summary() -> None:
    for variant in ("naive", "fused", "compiled"):
        export = load_device(_profile_dir(SAMPLES / variant))
        report = analyse(export)
        names = {c.metric for c in report.checks}
        assert {"MFU", "MBU", "Vector engine active", "DMA active", "HBM read bytes"} <= names
        assert all(c.agrees for c in report.checks), [c for c in report.checks if not c.agrees]


# ----------------------------------------------------------------------------------------------------------
# Must show 1b: roofline figures equal hand-computed values
# ----------------------------------------------------------------------------------------------------------
def _write(path: Path, table: str, rows: list[dict]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path / f"{table}.parquet")


def _instr(start: int, end: int, engine: str, opcode: str, op: int, **kw) -> dict:
    row = {"start_ts": start, "end_ts": end, "duration_ns": end - start, "engine": engine, "opcode": opcode,
           "operands": "", "id": start, "pc": 0, "bir_id": "sg0000:0", "raw_framework_id": op, "pcore_idx": 0,
           "raw_flops": 0, "hbm_read_bytes": 0, "hbm_write_bytes": 0}
    row.update(kw)
    return row


@pytest.fixture()
def hand_made(tmp_path: Path) -> Path:
    """Two framework ops on a trn2 NeuronCore (LNC=1), no DMA table: HBM bytes come from the instructions.

    matmul: 1e9 FLOPs on PE over [0, 20 µs), 4e6 HBM bytes. scale: 1e6 FLOPs on DVE over [20, 30 µs), 1e6 bytes.
    """
    d = tmp_path / "i-0123456789abcdef0_pid_77_nc_3_session_0"
    _write(d, "Instruction", [
        _instr(0, 10_000, "PE", "MATMUL", 1, raw_flops=500_000_000),
        _instr(10_000, 20_000, "tensor", "MATMUL", 1, raw_flops=500_000_000),
        _instr(0, 100, "Sync", "WRITE", 1, hbm_read_bytes=3_000_000, hbm_write_bytes=1_000_000),
        _instr(20_000, 30_000, "DVE", "TENSOR_SCALAR", 2, raw_flops=1_000_000),
        _instr(20_000, 20_100, "sync", "WRITE", 2, hbm_read_bytes=500_000, hbm_write_bytes=500_000),
    ])
    _write(d, "FrameworkInstruction", [
        {"raw_framework_id": 1, "framework_name": "model/matmul", "start_ts": 0, "end_ts": 20_000,
         "hbm_read_bytes": 3_000_000, "hbm_write_bytes": 1_000_000},
        {"raw_framework_id": 2, "framework_name": "model/scale", "start_ts": 20_000, "end_ts": 30_000,
         "hbm_read_bytes": 500_000, "hbm_write_bytes": 500_000},
    ])
    _write(d, "Metadata", [{"profile_schema_version": "7.4.0", "num_physical_cores": 1, "instance_type": "trn2.3xlarge",
                            "tensor_engine_num_rows": 128, "tensor_engine_num_cols": 128,
                            "tensor_engine_clock_freq": 2.4, "hbm_ddr_bandwidth": 7.25e11}])
    return d


def test_roofline_equals_hand_computed_values(hand_made: Path) -> None:
    export = load_device(hand_made)
    assert export.identity.pid == 77 and export.identity.nc == 3  # from Explorer's device profile name
    report = analyse(export)
    roof = report.roof
    # trn2: 79 TFLOP/s per NeuronCore-v3; 2.9 TB/s per chip / 8 cores = 362.5 GB/s; ridge 79e12 / 362.5e9
    assert roof.flops == 79e12 and roof.bandwidth == 362.5e9
    assert roof.ridge == pytest.approx(217.931034, rel=1e-6)
    mm, sc = report.points
    assert (mm.name, sc.name) == ("model/matmul", "model/scale")
    # matmul: AI 1e9 / 4e6 = 250 > ridge; roof min(79e12, 250 * 362.5e9 = 90.625e12) = 79e12;
    # achieved 1e9 / 20e-6 = 5e13; headroom 79e12 / 5e13 = 1.58
    assert mm.intensity == pytest.approx(250.0)
    assert mm.bound == "compute-bound"
    assert mm.attainable == pytest.approx(79e12)
    assert mm.achieved_flops == pytest.approx(5e13)
    assert mm.headroom == pytest.approx(1.58)
    # scale: AI 1e6 / 1e6 = 1 < ridge; roof 362.5e9; achieved 1e6 / 10e-6 = 1e11; headroom 3.625
    assert sc.intensity == pytest.approx(1.0)
    assert sc.bound == "memory-bound"
    assert sc.attainable == pytest.approx(362.5e9)
    assert sc.headroom == pytest.approx(3.625)
    # the execution: 1.001e9 FLOPs / 5e6 bytes = 200.2 < 217.93: memory-bound although one op is compute-bound;
    # achieved 1.001e9 / 30e-6; roof 200.2 * 362.5e9 = 72.5725e12; headroom 72.5725e12 / 3.33667e13 = 2.175
    ex = report.execution
    assert ex.intensity == pytest.approx(200.2)
    assert ex.bound == "memory-bound"
    assert ex.attainable == pytest.approx(72.5725e12)
    assert ex.headroom == pytest.approx(2.175)
    # MFU = 1e9 / (2*128*128*2.4e9 * 30e-6) = 42.385%; MBU = 5e6 / 30e-6 / 7.25e11 = 22.989%
    assert report.mfu == pytest.approx(42.3855, rel=1e-5)
    assert report.mbu == pytest.approx(22.9885, rel=1e-5)
    assert report.engine("Tensor").busy_ns == 20_000 and report.engine("Vector").busy_ns == 10_000


def test_roof_per_instance_type_and_logical_core() -> None:
    assert peak_for("trn1.32xlarge").family == "Trn1" and peak_for("trn1n.32xlarge").family == "Trn1"
    assert peak_for("trn2u.48xlarge").family == "Trn2" and peak_for("inf2.xlarge").family == "Inf2"
    assert peak_for("trn3.48xlarge").family == "Trn3" and peak_for("p5.48xlarge") is None
    assert all(p.source.startswith("aws-neuron/aws-neuron-sdk about-neuron/arch/") for p in PEAKS)  # where each comes from
    trn1 = roof_for(peak_for("trn1.2xlarge"))
    # 190 TFLOPS and 820 GiB/sec (= 880.5 GB/s) per 2-core chip (trainium.rst, trn1-arch.rst): 440.2 GB/s per core
    assert trn1.flops == 95e12 and trn1.bandwidth == pytest.approx(440.234e9, rel=1e-5)
    lnc2 = roof_for(peak_for("trn2.48xlarge"), 2)
    assert lnc2.flops == 158e12 and lnc2.bandwidth == 725e9  # LNC=2: two physical cores
    p = Point("copy", 0.0, 1e6, 1e-3, lnc2)  # data movement only
    assert p.bound == "memory-bound" and p.headroom == pytest.approx(725e9 / 1e9)


def test_roof_from_metadata_when_the_instance_type_is_unknown(hand_made: Path) -> None:
    md = pq.read_table(hand_made / "Metadata.parquet").to_pylist()[0]
    md["instance_type"] = "x9.large"
    _write(hand_made, "Metadata", [md])
    report = analyse(load_device(hand_made))
    assert report.roof.flops == pytest.approx(2 * 128 * 128 * 2.4e9)
    assert report.roof.bandwidth == 7.25e11 and "Metadata" in report.roof.source
    report = analyse(load_device(hand_made), instance_type="trn1")
    assert report.roof.flops == 95e12


def test_rmsnorm_samples_are_memory_bound_and_fusion_raises_intensity() -> None:
    reports = {v: analyse(load_device(_profile_dir(SAMPLES / v))) for v in ("naive", "fused", "compiled")}
    for r in reports.values():
        assert r.execution.bound == "memory-bound"
        assert r.engine("Tensor").instructions == 0 and r.mfu == 0
    # naive: every op reads its input from HBM and writes its result back (x, x_sq, mean_sq, eps, rms, x_norm,
    # weight in; x_sq, mean_sq, mean_eps, rms, x_norm, out back): 29,746 bytes; one pass: x + weight + out
    assert reports["naive"].hbm_bytes == 8192 + 4104 + 18 + 16 + 8200 + 9216
    assert reports["fused"].hbm_bytes == reports["compiled"].hbm_bytes == 4096 + 1024 + 4096
    assert reports["naive"].execution.intensity < reports["fused"].execution.intensity / 3


# ----------------------------------------------------------------------------------------------------------
# Must show 1c: unknown extra columns and split tables load
# ----------------------------------------------------------------------------------------------------------
def test_split_tables_and_unknown_columns_load(tmp_path: Path, naive: Path) -> None:
    gen = generator()
    pdir = gen.write_variant(
        tmp_path, "naive",
        split={"Instruction": 3, "DmaPacket": 2, "DmaPacketAggregated": 2, "ActiveTime": 2},
        extra_columns={"Instruction": {"future_field": 7, "another_new_one": "x"}, "Summary": {"new_metric": 1.5},
                       "DmaPacketAggregated": {"dma_future": 0.5}},
        version="7.9.0",
    )
    assert sorted(p.name for p in pdir.glob("Instruction*.parquet")) == [
        "Instruction_0.parquet", "Instruction_1.parquet", "Instruction_2.parquet"]
    export = load_device(pdir)
    assert [p.name for p in export.tables["Instruction"].files] == [
        "Instruction_0.parquet", "Instruction_1.parquet", "Instruction_2.parquet"]
    assert {"future_field", "another_new_one"} <= set(export.tables["Instruction"].extra)
    assert "future_field" not in export.instructions.columns  # never read
    whole = analyse(load_device(naive))
    split = analyse(export)
    assert [(e.engine, e.busy_ns, e.instructions) for e in split.engines] == [
        (e.engine, e.busy_ns, e.instructions) for e in whole.engines]
    assert split.dma.active_ns == whole.dma.active_ns and split.hbm_bytes == whole.hbm_bytes
    assert split.opcodes.equals(whole.opcodes)
    assert all(c.agrees for c in split.checks) and export.notes == []


def test_missing_optional_tables_are_reported_and_tolerated(tmp_path: Path) -> None:
    pdir = generator().write_variant(tmp_path, "fused", drop_tables=(
        "ActiveTime", "DmaPacket", "Summary", "OpcodeSummary", "ExecutionInfo", "HloInstruction", "SchemaFields"))
    export = load_device(pdir)
    assert {"ActiveTime", "DmaPacket", "Summary", "OpcodeSummary", "ExecutionInfo", "SchemaFields"} <= set(export.missing)
    report = analyse(export)
    assert report.dma.source_table == "DmaPacketAggregated"  # active time from the aggregated transfers
    assert math.isnan(report.engine("Vector").active_time_percent) and report.checks == []
    assert report.execution.bound == "memory-bound"


def test_optional_column_missing_is_tolerated(tmp_path: Path) -> None:
    pdir = generator().write_variant(tmp_path, "fused", rename={"Instruction": {"raw_flops": "flops_v9"}})
    export = load_device(pdir)
    assert "raw_flops" in export.tables["Instruction"].absent
    report = analyse(export)
    # no raw_flops: FLOPs are unknown, not 0 (issue 27): no intensity, no bound, the bandwidth only
    assert math.isnan(report.flops) and math.isnan(report.mfu) and any("raw_flops" in n for n in report.notes)
    assert report.execution.bound == "FLOPs unknown" and math.isnan(report.execution.intensity)
    assert report.execution.achieved_bandwidth > 0


# ----------------------------------------------------------------------------------------------------------
# Must show 1d: a renamed required column gives one clear line
# ----------------------------------------------------------------------------------------------------------
def test_renamed_required_column_is_one_clear_line(tmp_path: Path, capsys) -> None:
    # the documented MAJOR (7): a required field missing means a broken export (a newer MAJOR loads by name:
    # test_newer_major_version_loads_what_it_can)
    pdir = generator().write_variant(tmp_path, "naive", rename={"Instruction": {"engine": "engine_name"}},
                                     version="7.6.0")
    with pytest.raises(LoadError) as err:
        load_device(pdir)
    assert "required column 'engine' of Instruction is missing" in str(err.value)
    rc, out, stderr = run_cli(capsys, "device", str(pdir))
    assert rc == 2 and out == ""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    line = lines[0]
    assert line.startswith("trntui: error: ") and "Instruction.parquet" in line
    assert "required column 'engine' of Instruction is missing" in line
    assert "profile_schema_version 7.6.0" in line and "'engine_name' instead (renamed?)" in line
    assert "Traceback" not in stderr


def test_renamed_required_dma_column_is_one_clear_line(tmp_path: Path, capsys) -> None:
    pdir = generator().write_variant(tmp_path, "fused", rename={"DmaPacketAggregated": {"transfer_bytes": "bytes"}})
    rc, _, stderr = run_cli(capsys, "device", str(pdir))
    assert rc == 2 and len(stderr.strip().splitlines()) == 1
    assert "required column 'transfer_bytes' of DmaPacketAggregated is missing" in stderr


def test_info_reports_device_profiles_and_missing_optional_tables(tmp_path: Path, capsys, repo_dir: Path) -> None:
    pdir = generator().write_variant(tmp_path, "fused", drop_tables=("ActiveTime", "OpcodeSummary"),
                                     rename={"Instruction": {"raw_flops": "flops_v9"}})
    rc, out, err = run_cli(capsys, "info", str(tmp_path / "fused"))
    assert rc == 0, err
    assert "1 Neuron device profile" in out and "schema 7.4.0, trn2.48xlarge, pid 51002, NC0" in out
    assert "missing optional tables: ActiveTime, OpcodeSummary" in out
    assert "Instruction: no raw_flops column(s)" in out
    assert f"open: trntui device {pdir}" in out
    rc, out, err = run_cli(capsys, "info", str(repo_dir / "sample_profiles" / "neuron" / "naive"), "--format", "json")
    doc = json.loads(out)
    assert rc == 0 and doc["kind"] == "neuron"
    [dev] = doc["device_profiles"]  # the system sample's process, found beside it through DeviceProfileList
    assert dev["pid"] == 51001 and dev["tables"]["Instruction"]["rows"] > 0 and dev["missing_optional_tables"] == []


def test_not_a_device_profile(tmp_path: Path, capsys) -> None:
    rc, _, stderr = run_cli(capsys, "device", str(tmp_path))
    assert rc == 2 and "no Neuron device profile" in stderr and len(stderr.strip().splitlines()) == 1
    (tmp_path / "Instruction.parquet").write_bytes(b"PAR1 not really")
    rc, _, stderr = run_cli(capsys, "device", str(tmp_path))
    assert rc == 2 and "not a readable Parquet file" in stderr and len(stderr.strip().splitlines()) == 1


# ----------------------------------------------------------------------------------------------------------
# the command and the timeline profile
# ----------------------------------------------------------------------------------------------------------
def test_device_command_from_the_system_sample(capsys, repo_dir: Path) -> None:
    rc, out, err = run_cli(capsys, "device", str(repo_dir / "sample_profiles" / "neuron" / "naive"))
    assert rc == 0, err
    assert "Device profile i-0a1b2c3d4e5f60718_pid_51001_nc_0_session_0" in out
    assert "Verdict: execution: memory-bound" in out
    assert "Synthetic data" in out  # the export's Warning row is shown
    for engine in ("Tensor (PE)", "Vector (DVE)", "Scalar (ACT)", "GpSimd (POOL)", "Sync (SP)", "DMA"):
        assert engine in out
    assert "aten::mul.Tensor" in out and "TENSOR_TENSOR" in out and "[INPUT]" in out and "qSyncInput0" in out


def test_device_command_formats(capsys) -> None:
    path = str(SAMPLES / "fused")
    rc, out, _ = run_cli(capsys, "device", path, "--format", "json")
    doc = json.loads(out)
    assert rc == 0 and doc["roofline"]["points"][0]["bound"] == "memory-bound"
    assert doc["profile"]["profile_schema_version"] == "7.4.0"
    assert [r["Engine"] for r in doc["engines"]] == ["Tensor", "Vector", "Scalar", "GpSimd", "Sync"]
    assert all(r["Agree"] for r in doc["summary_check"])
    rc, out, _ = run_cli(capsys, "device", path, "--format", "csv")
    blocks = out.strip().split("\n\n")
    assert rc == 0 and blocks[0].startswith("table,Engine,HW,Busy %")
    assert {b.splitlines()[1].split(",")[0] for b in blocks} >= {"engines", "framework_ops", "opcodes", "dma_routes"}
    rc, out, _ = run_cli(capsys, "device", path, "--format", "markdown")
    assert rc == 0 and "| Engine | HW | Busy % (any core) | Core 0 % | Core 1 % | Busy % no sem |" in out
    rc, out, _ = run_cli(capsys, "device", str(SAMPLES / "naive"), "--exec", "3")
    assert rc == 0 and "Window: execution 3 (MODULE_10004_8417/model.neff)" in out and "aten::rsqrt" in out
    rc, _, err = run_cli(capsys, "device", str(SAMPLES / "naive"), "--exec", "9")
    assert rc == 2 and "no execution 9 (executions: 0, 1, 2, 3, 4, 5)" in err
    rc, _, err = run_cli(capsys, "device", str(SAMPLES / "naive"), "--nc", "5")
    assert rc == 2 and "no Neuron device profile for NeuronCore 5" in err


def test_device_profile_lanes(naive: Path) -> None:
    export = load_device(naive)
    w = executions(export)[0]
    prof = device_profile(export, w)
    labels = [lane.label for lane in prof.lanes_by_tier()]
    assert labels[0] == "i-0a1b2c3d4e5f60718/PID:51001/neuron_hw/NC0:0/Vector"
    assert "i-0a1b2c3d4e5f60718/PID:51001/neuron_hw/NC0:1/Sync" in labels
    assert "i-0a1b2c3d4e5f60718/PID:51001/neuron_hw/NC0:0/DMA:qSyncInput0" in labels
    names = {prof.name_of(i) for i in range(len(prof))}
    assert {"TENSOR_TENSOR", "EVENT_SEMAPHORE", "x", "x_sq"} <= names
    assert int(prof.start.min()) >= w.start and int(prof.start.max()) < w.end


def test_window_for_a_system_execution(naive: Path) -> None:
    export = load_device(naive)
    runs = executions(export)
    # the same clock: the execution covering the selected interval
    w, shift = window_for(export, system=(runs[2].start, runs[2].end), rank=2)
    assert (w.index, shift) == (2, 0)
    # a clock a few µs off: still the covering execution, shifted onto the system event
    w, shift = window_for(export, system=(runs[3].start + 9_000, runs[3].end + 9_000), rank=0)
    assert (w.index, shift) == (3, 9_000)
    # another clock (device-relative times): the rank-th execution, shifted onto the system event
    w, shift = window_for(export, system=(10**15, 10**15 + 400_000), rank=4)
    assert w.index == 4 and shift == 10**15 - runs[4].start
