"""The device view to the letter of the schema (issue 27): the six errors an independent check found, the peak
table's units, and the figures that were unknown or infinite.

Exports are built row by row from the documented schema (tests/device_exports.py) or by the sample generator; the
expected numbers are worked out here by hand from the rows written.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import run_cli
from tests.device_exports import PER_TE, T0, TRN2_LNC2, dma, instr, two_executions, write_table
from tests.neuron_device_samples import generator
from trntui.analysis.device import analyse, executions, window_for
from trntui.analysis.roofline import PEAKS, UNITS, peak_for, roof_for
from trntui.loaders.neuron_device import find_device_profiles, load_device


@pytest.fixture()
def two(tmp_path: Path) -> Path:
    return two_executions(tmp_path)


# ----------------------------------------------------------------------------------------------------------
# 1. --pcore filters DMA, and the roof is one core's
# ----------------------------------------------------------------------------------------------------------
def test_pcore_filters_dma_and_the_roof(two: Path, capsys) -> None:
    export = load_device(two)
    one = analyse(export, pcores=[0])
    # core 0 alone: DMA 1 + 2 + 1 MB; FLOPs 1e6 + 5e9; one NeuronCore-v3: 79 TFLOP/s, 2.9 TB/s / 8 = 362.5 GB/s
    assert one.dma.bytes == 4_000_000 and one.dma.transfers == 3
    assert one.hbm_bytes == 4_000_000
    assert one.execution.intensity == pytest.approx(5_001_000_000 / 4_000_000)
    assert one.roof.flops == 79e12 and one.roof.bandwidth == 362.5e9
    both = analyse(export)
    assert both.dma.bytes == 8_000_000 and both.roof.flops == 158e12
    assert both.execution.intensity == pytest.approx(one.execution.intensity)  # symmetric cores: the same AI
    rc, out, err = run_cli(capsys, "device", str(two), "--pcore", "1", "--format", "json")
    doc = json.loads(out)
    assert rc == 0 and err == ""
    assert doc["dma"]["bytes"] == 4_000_000 and doc["roofline"]["peak_flops_per_s"] == 79e12
    assert doc["roofline"]["points"][0]["intensity"] == pytest.approx(1250.25)


def test_pcore_without_a_dma_core_column_says_so(tmp_path: Path) -> None:
    d = two_executions(tmp_path)
    rows = pq.read_table(d / "DmaPacketAggregated.parquet").to_pylist()
    for r in rows:
        del r["pcore_idx"]
    write_table(d, "DmaPacketAggregated", rows)
    report = analyse(load_device(d), pcores=[0])
    assert report.dma.bytes == 8_000_000  # cannot be split
    assert any("DmaPacketAggregated has no pcore_idx column" in n for n in report.notes)


# ----------------------------------------------------------------------------------------------------------
# 2. the whole-profile window is the executions' extent; --exec and without
# ----------------------------------------------------------------------------------------------------------
def test_whole_window_spans_both_executions(two: Path, capsys) -> None:
    export = load_device(two)
    runs = executions(export)
    assert [(w.index, w.start - T0, w.end - T0) for w in runs] == [(0, 0, 60_000), (1, 70_000, 128_700)]
    w, shift = window_for(export)
    # not [first instruction (T0+100), + Summary.total_time 85.6 µs): from the first execution's start to the
    # last one's end, every instruction and transfer inside
    assert (w.start, w.end, w.whole, shift) == (T0, T0 + 128_700, True, 0)
    report = analyse(export)
    assert report.total_ns == 128_700 and report.instruction_count == 4
    assert report.dma.bytes == 8_000_000  # the output DMA at 120-128.6 µs is in
    assert report.flops == 2 * (5e9 + 1e6)
    assert report.execution.intensity == pytest.approx(10_002e6 / 8e6)
    assert report.execution.bound == "compute-bound"  # AI 1250 > ridge 218
    assert report.engine("Tensor").busy_ns == 56_000
    assert report.engine("Tensor").percent == pytest.approx(100 * 56_000 / 128_700)
    assert any("Summary.total_time is 85.6µs" in n and "×1.5" in n for n in report.notes)  # shown, not used
    rc, out, err = run_cli(capsys, "device", str(two))
    assert rc == 0 and "Window: whole profile · 129µs · 4 instructions" in out and err == ""


def test_exec_narrows_to_one_execution(two: Path, capsys) -> None:
    export = load_device(two)
    w, _ = window_for(export, execution=1)
    report = analyse(export, window=w)
    assert (w.start - T0, w.end - T0) == (70_000, 128_700) and report.total_ns == 58_700
    assert report.instruction_count == 2 and report.flops == 1e10
    assert report.dma.bytes == 6_000_000 and report.execution.intensity == pytest.approx(1e10 / 6e6)
    rc, out, _ = run_cli(capsys, "device", str(two), "--exec", "0", "--format", "json")
    doc = json.loads(out)
    assert rc == 0 and doc["window"]["duration_ns"] == 60_000 and doc["instruction_count"] == 2
    assert doc["dma"]["bytes"] == 2_000_000 and doc["flops"] == 2e6


# ----------------------------------------------------------------------------------------------------------
# 3. MFU counts every physical core's Tensor Engine, as the roof does
# ----------------------------------------------------------------------------------------------------------
def test_mfu_counts_both_tensor_engines(two: Path) -> None:
    export = load_device(two)
    report = analyse(export)
    secs = 128_700e-9
    assert report.tensor_engines == 2
    assert report.mfu == pytest.approx(100 * 1e10 / (2 * PER_TE * secs))
    # the same figure the roofline gives: achieved Tensor FLOP/s over the two-core peak (79 vs 78.6 TFLOP/s each)
    assert report.mfu == pytest.approx(100 * (1e10 / secs) / report.roof.flops, rel=0.01)
    one = analyse(export, pcores=[1])
    assert one.tensor_engines == 1 and one.mfu == pytest.approx(100 * 5e9 / (PER_TE * secs))


# ----------------------------------------------------------------------------------------------------------
# 4. the peak table: each figure in its source's unit, converted once
# ----------------------------------------------------------------------------------------------------------
def test_peak_figures_convert_from_their_sources_unit() -> None:
    assert UNITS == {"TFLOPS": 1e12, "TB/sec": 1e12, "GB/sec": 1e9, "GiB/sec": 2.0**30}
    for peak in PEAKS:
        for fig in peak.figures:
            # the figure is read from the quoted words, in the unit they use, from a page of the arch docs
            number = f"{fig.value:g}"
            words = rf"(?<![\d.]){re.escape(number)} (?:[A-Za-z0-9/]+ )?(?:and [\d.]+ [A-Za-z0-9/]+ )?{re.escape(fig.unit)}\b"
            assert re.search(words, fig.quote), (peak.family, fig)
            assert fig.source.startswith("about-neuron/arch/neuron-hardware/") and fig.source.endswith(".rst")
            assert fig.si == fig.value * UNITS[fig.unit]
            assert fig.per in ("chip", "NeuronCore")
        assert peak.source.count(".rst") >= 2
    trn1, inf2 = peak_for("trn1.32xlarge"), peak_for("inf2.48xlarge")
    for p in (trn1, inf2):  # 820 GiB/sec per chip = 880.5 GB/s; two NeuronCore-v2: 440.2 GB/s each
        assert p.hbm.unit == "GiB/sec" and p.hbm_bytes_per_s_per_chip == pytest.approx(880.468e9, rel=1e-5)
        assert p.hbm_bytes_per_s_per_core == pytest.approx(440.234e9, rel=1e-5)
        assert p.tensor_flops_per_core == 95e12
    trn2 = peak_for("trn2.48xlarge")
    assert trn2.hbm.unit == "TB/sec" and trn2.hbm_bytes_per_s_per_core == 362.5e9 and trn2.tensor_flops_per_core == 79e12
    assert trn2.vector_flops_per_core == 1e12 and trn2.scalar_flops_per_core == 1.2e12
    assert peak_for("trn3").hbm_bytes_per_s_per_core == 4.9e12 / 8
    assert roof_for(trn1).ridge == pytest.approx(95e12 / 440.234e9, rel=1e-5)


# ----------------------------------------------------------------------------------------------------------
# 5 + 6. HloInstruction and FrameworkInstruction are read; an export with the required columns only
# ----------------------------------------------------------------------------------------------------------
def test_required_columns_only_export(tmp_path: Path, capsys) -> None:
    pdir = generator().write_variant(tmp_path, "naive", required_only=True)
    cols = pq.ParquetFile(pdir / "Instruction.parquet").schema_arrow.names
    assert "hlo_name" not in cols and "raw_framework_id" not in cols and "pcore_idx" not in cols
    assert not (pdir / "Summary.parquet").exists()
    hlo_rows = pq.read_table(pdir / "HloInstruction.parquet").to_pylist()
    fw_rows = pq.read_table(pdir / "FrameworkInstruction.parquet").to_pylist()
    report = analyse(load_device(pdir))
    # HLO ops: HloInstruction's names (required there), with its bytes
    assert set(report.hlo["hlo"]) == {r["hlo_name"] for r in hlo_rows}
    by_hlo = dict(zip(report.hlo["hlo"], report.hlo["hbm_bytes"]))
    for r in hlo_rows:
        assert by_hlo[r["hlo_name"]] == r["hbm_read_bytes"] + r["hbm_write_bytes"]
    # framework ops: FrameworkInstruction's rows by raw_framework_id (no framework_name: named by id), its bytes
    fw = report.framework.set_index("framework_op")
    for r in fw_rows:
        name = f"framework op {r['raw_framework_id']}"
        assert fw.loc[name, "hbm_bytes"] == r["hbm_read_bytes"] + r["hbm_write_bytes"] > 0
        assert fw.loc[name, "bytes_from"] == "FrameworkInstruction"
    rc, out, err = run_cli(capsys, "device", str(pdir))
    assert rc == 0 and err == ""
    hlo_block = out.split("Top HLO ops")[1].split("\n\n")[0]
    assert "(none)" not in hlo_block and "multiply.3" in hlo_block


def test_hlo_names_through_raw_hlo_id(tmp_path: Path) -> None:
    d = tmp_path / "dev"
    write_table(d, "Instruction", [instr(0, 1000, "vector", "TENSOR_TENSOR", raw_hlo_id=7, raw_flops=10),
                                   instr(1000, 3000, "vector", "TENSOR_TENSOR", raw_hlo_id=8, raw_flops=10)])
    write_table(d, "HloInstruction", [
        {"raw_hlo_id": 7, "hlo_name": "add.7", "start_ts": 0, "end_ts": 1000, "hbm_read_bytes": 64, "hbm_write_bytes": 0},
        {"raw_hlo_id": 8, "hlo_name": "mul.8", "start_ts": 1000, "end_ts": 3000, "hbm_read_bytes": 32, "hbm_write_bytes": 32}])
    report = analyse(load_device(d))
    assert list(report.hlo["hlo"]) == ["mul.8", "add.7"]  # by instruction time
    assert list(report.hlo["count"]) == [1, 1] and list(report.hlo["hbm_bytes"]) == [64, 64]


def test_framework_bytes_from_framework_instruction_by_id(tmp_path: Path) -> None:
    """No framework_name (optional), no per-instruction HBM counts (optional): the op is matched through
    raw_framework_id, named by the instructions' layer, and its bytes are FrameworkInstruction's (required)."""
    d = tmp_path / "i-0abc_pid_9_nc_0_session_0"
    write_table(d, "Instruction", [
        instr(0, 10_000, "tensor", "MATMUL", raw_framework_id=7, layer="model/attn", raw_flops=4_000_000_000),
        instr(10_000, 12_000, "vector", "TENSOR_SCALAR", raw_framework_id=9, raw_flops=1000)])
    write_table(d, "FrameworkInstruction", [
        {"raw_framework_id": 7, "start_ts": 0, "end_ts": 10_000, "hbm_read_bytes": 3_000_000, "hbm_write_bytes": 1_000_000},
        {"raw_framework_id": 9, "start_ts": 10_000, "end_ts": 12_000, "hbm_read_bytes": 0, "hbm_write_bytes": 0}])
    write_table(d, "Metadata", [dict(TRN2_LNC2, num_physical_cores=1, first_hw_timestamp=0, last_hw_timestamp=12_000)])
    report = analyse(load_device(d))
    fw = report.framework.set_index("framework_op")
    assert fw.loc["model/attn", "hbm_bytes"] == 4_000_000 and fw.loc["model/attn", "count"] == 1
    attn = next(p for p in report.points if p.name == "model/attn")
    assert attn.intensity == pytest.approx(1000.0) and attn.bound == "compute-bound"
    # an op with FLOPs but no bytes attributed: no intensity, no headroom from an infinite one
    other = next(p for p in report.points if p.name == "framework op 9")
    assert other.bound == "no memory traffic recorded" and math.isnan(other.intensity) and math.isnan(other.headroom)
    assert "no memory traffic recorded" in other.verdict() and "×" not in other.verdict()


def test_framework_bytes_per_execution_from_the_intervals(tmp_path: Path) -> None:
    d = two_executions(tmp_path)
    write_table(d, "FrameworkInstruction", [
        {"raw_framework_id": 2, "framework_name": "model/matmul", "start_ts": T0 + 71_000, "end_ts": T0 + 127_000,
         "time_intervals": f"[[{T0 + 71_000}, {T0 + 127_000}]]", "hbm_transfer_size_per_interval": [6_000_000],
         "hbm_read_bytes": 4_000_000, "hbm_write_bytes": 2_000_000},
        {"raw_framework_id": 1, "framework_name": "model/scale", "start_ts": T0 + 100, "end_ts": T0 + 50_100,
         "time_intervals": f"[[{T0 + 100}, {T0 + 20_000}], [{T0 + 30_000}, {T0 + 50_100}]]",
         "hbm_transfer_size_per_interval": [1_500_000, 500_000], "hbm_read_bytes": 2_000_000, "hbm_write_bytes": 0}])
    export = load_device(d)
    whole = analyse(export).framework.set_index("framework_op")
    assert whole.loc["model/matmul", "hbm_bytes"] == 6_000_000 and whole.loc["model/scale", "hbm_bytes"] == 2_000_000
    w0, _ = window_for(export, execution=0)
    first = analyse(export, window=w0).framework.set_index("framework_op")
    assert first.loc["model/scale", "hbm_bytes"] == 2_000_000 and "model/matmul" not in first.index


# ----------------------------------------------------------------------------------------------------------
# Also: unknown FLOPs are null; the schema's open choices are named
# ----------------------------------------------------------------------------------------------------------
def test_no_raw_flops_gives_null_flops_and_intensity(tmp_path: Path, capsys) -> None:
    pdir = generator().write_variant(tmp_path, "fused", rename={"Instruction": {"raw_flops": "flops_v9"}})
    rc, out, err = run_cli(capsys, "device", str(pdir), "--format", "json")
    doc = json.loads(out)
    assert rc == 0 and err == ""
    assert doc["flops"] is None and doc["mfu_percent"] is None
    ex = doc["roofline"]["points"][0]
    assert ex["flops"] is None and ex["intensity"] is None and ex["bound"] == "FLOPs unknown"
    assert all(r["FLOPs"] is None and r["AI FLOP/B"] is None for r in doc["framework_ops"])
    rc, out, _ = run_cli(capsys, "device", str(pdir))
    assert "FLOPs - (raw_flops, all engines)" in out and "FLOPs not recorded (no raw_flops), so no bound" in out


def test_open_choices_are_named(two: Path, capsys) -> None:
    rc, out, _ = run_cli(capsys, "device", str(two))
    assert rc == 0
    assert "Definition: busy % = union of an engine's Instruction intervals" in out
    assert "semaphore-wait instructions (EVENT_SEMAPHORE*) count as busy" in out
    assert "HBM = DMA bytes whose source or destination is not on-chip" in out
    assert "Matmul-only intensity" in out and "MFU" in out and "(over 2 Tensor Engines)" in out
    # union and per core side by side, each named: the bars are the union
    assert "\nEngine busy · union of cores 0,1 (busy on any core)\n  Tensor (PE)" in out
    assert "Engines (busy = union over cores 0,1 ÷ window" in out and "Core 0 %" in out and "Core 1 %" in out
    rc, out, _ = run_cli(capsys, "device", str(two), "--format", "json")
    doc = json.loads(out)
    tensor = next(r for r in doc["engines"] if r["Engine"] == "Tensor")
    assert tensor["Busy % (any core)"] == pytest.approx(100 * 56_000 / 128_700, abs=1e-3)
    assert tensor["Core 0 %"] == tensor["Core 1 %"] == tensor["Busy % (any core)"]
    assert len(doc["definitions"]) == 2


def test_semaphore_waits_shown_beside_busy(tmp_path: Path) -> None:
    d = tmp_path / "dev"
    write_table(d, "Instruction", [instr(0, 600, "sync", "EVENT_SEMAPHORE"), instr(600, 1000, "sync", "WRITE")])
    report = analyse(load_device(d))
    sync = report.engine("Sync")
    assert sync.busy_ns == 1000 and sync.busy_no_semaphore_ns == 400 and sync.percent_no_semaphore == pytest.approx(40.0)


def test_device_profile_discovery_still_finds_the_built_exports(two: Path) -> None:
    [ref] = find_device_profiles(two.parent)
    assert ref.identity.pid == 4242 and ref.path == two


def test_dma_rows_built_from_the_schema(tmp_path: Path) -> None:
    """The builder writes what the schema requires (a file a real reader could take)."""
    path = write_table(tmp_path, "DmaPacketAggregated", [dma(0, 10, 0, 5, "[INPUT]", "[SB]")])
    names = set(pq.ParquetFile(path).schema_arrow.names)
    required = {n for n, _, req in generator()._schema()["DmaPacketAggregated"] if req}
    assert required <= names
