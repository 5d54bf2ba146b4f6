"""`trntui overview`: every output format on real traces, exit codes, one-line errors."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from tests.conftest import run_cli

REPO = Path(__file__).resolve().parents[1]


def test_table_output_on_a_cuda_trace(capsys, corpus_dir):
    rc, out, err = run_cli(capsys, "overview", str(corpus_dir / "cuda_ns_resolution_68k.json.gz"), "--no-cache")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0] == "Overview · CUDA · 5 steps · average step 96,703.5 us"
    head = next(line for line in lines if line.startswith("Step  "))
    assert head.split()[:4] == ["Step", "Total", "(us)", "Kernel"]
    avg = next(line for line in lines if line.startswith("% of step"))
    assert "96.82%" in avg and "100.00%" in avg
    assert "GPU utilization:                96.82%" in lines
    assert any(line.startswith("Kernels (top 15 of 77 by total time)") for line in lines)
    assert any(line.startswith("- [amp] 19% of the kernel time") for line in lines)
    assert "Computation / communication per step" in lines


def test_json_is_the_stable_document(capsys, corpus_dir):
    rc, out, _ = run_cli(capsys, "overview", str(corpus_dir / "cuda_sampled_rank0.json.gz"), "--format", "json")
    assert rc == 0
    doc = json.loads(out)
    assert [s["step"] for s in doc["steps"]] == [551, 552]
    for s in doc["steps"]:
        assert abs(sum(s["breakdown_us"].values()) - s["total_us"]) < 0.01
    assert doc["gpu"]["utilization_pct"] == 44.49
    assert {r["rule"] for r in doc["recommendations"]} >= {"communication", "low_utilization"}
    assert doc["communication"]["steps"][0]["communication_us"] > 0


def test_csv_is_the_step_breakdown_of_every_run(capsys):
    rc, out, _ = run_cli(capsys, "overview", str(REPO / "sample_profiles" / "neuron"), "--format", "csv")
    assert rc == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert {r["run"].split(":")[0] for r in rows} == {"naive", "fused", "compiled"}
    naive = [r for r in rows if r["run"].startswith("naive") and r["step"] == "3"][0]
    assert float(naive["NeuronCore_us"]) == 2354.9  # the walkthrough's 2,355 us of naive device time
    parts = sum(float(naive[f"{c}_us"]) for c in ("NeuronCore", "Runtime", "DataLoader", "Framework", "Other"))
    assert abs(parts - float(naive["total_us"])) < 0.01


def test_markdown_and_steps(capsys, corpus_dir):
    rc, out, _ = run_cli(capsys, "overview", str(corpus_dir / "cuda_ns_resolution_68k.json.gz"), "--format", "markdown",
                         "--steps", "102-103")
    assert rc == 0
    assert out.startswith("# Overview · CUDA · steps 102-103 · average step")
    breakdown = out.split("## Step time breakdown")[1].split("## ")[0]
    body = [line for line in breakdown.splitlines() if line.startswith("| 10")]
    assert [line.split("|")[1].strip() for line in body] == ["102", "103"]
    comm = out.split("## Computation / communication per step")[1].split("## ")[0]
    assert [line.split("|")[1].strip() for line in comm.splitlines() if line.startswith("| 10")] == ["102", "103"]


def test_errors_are_one_line_with_exit_2(capsys, corpus_dir, tmp_path):
    rc, out, err = run_cli(capsys, "overview", str(tmp_path / "missing.json"))
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1 and err.startswith("trntui: error:")
    rc, out, err = run_cli(capsys, "overview", str(corpus_dir / "cuda_ns_resolution_68k.json.gz"), "--steps", "7")
    assert rc == 2 and "no such step" in err and len(err.strip().splitlines()) == 1
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [')
    rc, out, err = run_cli(capsys, "overview", str(bad))
    assert rc == 2 and len(err.strip().splitlines()) == 1


def test_malformed_inputs_never_crash_the_overview(capsys, tmp_path):
    """Every case of the malformed corpus: an overview in every format, or the one-line error with exit 2."""
    from tests.malformed import build_corpus

    for case in build_corpus(tmp_path / "corpus"):
        for fmt in ("table", "json", "csv"):
            rc, out, err = run_cli(capsys, "overview", str(case.path), "--no-cache", "--format", fmt)
            assert rc in (0, 2), (case.path.name, fmt, err)
            if rc == 2:
                assert err.startswith("trntui: error:") and "Traceback" not in err, (case.path.name, err)
            assert "TRNTUI_DEBUG" not in err, (case.path.name, err)  # the catch-all of cli.main: a crash


def test_hostile_names_are_shown_not_obeyed(capsys, tmp_path):
    from tests.malformed import hostile_trace

    path = tmp_path / "hostile.json"
    path.write_bytes(hostile_trace())
    for fmt in ("table", "markdown", "json", "csv"):
        rc, out, _ = run_cli(capsys, "overview", str(path), "--format", fmt)
        assert rc == 0
        assert not any(ch in out for ch in "\x1b\x07\x00\x9b\x08\r"), fmt
