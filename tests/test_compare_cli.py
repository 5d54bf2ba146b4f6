"""`trntui compare` headless: every format, run discovery, --fail-if exit codes; `trntui summary --gaps`."""

from __future__ import annotations

import csv
import io
import json

import pytest

from trntui.cli import main

from .conftest import run_cli as run


@pytest.fixture(scope="module")
def pair(corpus_dir) -> list[str]:
    return [str(corpus_dir / "cuda_compare_base.json.gz"), str(corpus_dir / "cuda_compare_test.json.gz")]


def test_table_format(capsys, pair) -> None:
    rc, out, err = run(capsys, "compare", *pair, "--no-tui")
    assert rc == 0, err
    assert "Runs (baseline: cuda_compare_base)" in out
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("#   Run"))
    for col in ("CUDA time", "Self CPU", "Dispatches", "Host ops", "Step span", "Busy", "Idle", "vs baseline"):
        assert col in header
    base = next(line for line in lines if line.startswith("#1  cuda_compare_base"))
    assert base.split()[2:5] == ["1.694ms", "223.188ms", "6"]
    assert "Runs: #1 cuda_compare_base, #2 cuda_compare_test" in out
    diff_header = next(line for line in lines if line.startswith("Name"))
    assert "Δ Self CUDA" in diff_header and "Calls #2" in diff_header
    a2a = next(line for line in lines if line.startswith("All2All_Pooled_Req"))
    assert "+1 (new)" in a2a and a2a.rstrip().endswith("new")
    nccl = next(line for line in lines if line.startswith("nccl:all_reduce"))
    assert nccl.split()[1:4] == ["2", "1", "-1"]


def test_markdown_format(capsys, pair) -> None:
    rc, out, _ = run(capsys, "compare", *pair, "--format", "markdown", "--changed")
    assert rc == 0
    assert out.startswith("### Runs (baseline: cuda_compare_base)")
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    names = [r.split("|")[1].strip() for r in rows]
    assert "All2All_Pooled_Req" in names and "aten::zeros" not in names  # --changed leaves out same ops


def test_csv_format_blocks_and_only(capsys, pair) -> None:
    rc, out, _ = run(capsys, "compare", *pair, "--format", "csv")
    assert rc == 0
    summary_block, ops_block = out.split("\n\n")
    runs = list(csv.DictReader(io.StringIO(summary_block)))
    assert [r["run"] for r in runs] == ["cuda_compare_base", "cuda_compare_test"]
    assert [int(r["dispatches"]) for r in runs] == [6, 5]
    assert float(runs[1]["ratio_host_ops"]) == pytest.approx(7 / 4)
    rc, out, _ = run(capsys, "compare", *pair, "--format", "csv", "--only", "ops", "--filter", "nccl|all2all")
    ops = list(csv.DictReader(io.StringIO(out)))
    by = {r["name"]: r for r in ops}
    assert set(by) == {"nccl:all_reduce", "All2All_Pooled_Req"}
    assert by["nccl:all_reduce"]["delta_calls[cuda_compare_test]"] == "-1"
    assert by["All2All_Pooled_Req"]["marker[cuda_compare_test]"] == "new"
    assert by["All2All_Pooled_Req"]["calls[cuda_compare_base]"] == ""
    assert float(by["All2All_Pooled_Req"]["delta_self_cpu_us[cuda_compare_test]"]) == pytest.approx(311.0)


def test_json_format(capsys, pair) -> None:
    rc, out, _ = run(capsys, "compare", *pair, "--format", "json", "--sort", "calls")
    assert rc == 0
    doc = json.loads(out)
    assert doc["baseline"] == "cuda_compare_base"
    assert [r["host_ops"] for r in doc["runs"]] == [4, 7]
    assert doc["ops"]["sort"] == "calls" and doc["ops"]["matched_by"] == "name"
    first = doc["ops"]["rows"][0]
    assert abs(first["runs"]["cuda_compare_test"]["delta_calls"]) == 1
    assert set(doc["gaps"]) == {"cuda_compare_base", "cuda_compare_test"}
    assert doc["gaps"]["cuda_compare_base"]["device"]["executions"] == 18
    assert doc["rules"] == []


def test_fail_if_exit_codes(capsys, pair) -> None:
    rc, out, err = run(capsys, "compare", *pair, "--format", "json", "--fail-if", "host_ops > 1.5*baseline",
                       "--fail-if", "device_time > 1.10*baseline")
    assert rc == 1
    assert "REGRESSION: run 'cuda_compare_test': host_ops > 1.5*baseline (7 > 6)" in err
    assert "2 rule(s), 2 check(s): 1 regression(s)" in err
    doc = json.loads(out)  # stdout stays a valid document
    assert [r["failed"] for r in doc["rules"]] == [True, False]
    rc, _, err = run(capsys, "compare", *pair, "--no-tui", "--fail-if", "device_time > 1.10*baseline")
    assert rc == 0 and "no regression" in err
    rc, _, err = run(capsys, "compare", *pair, "--fail-if", "span > 100ms")  # constant: checked on all runs
    assert rc == 1 and err.count("REGRESSION") == 2


def test_bad_input_exits_2(capsys, pair, tmp_path) -> None:
    rc, _, err = run(capsys, "compare", *pair, "--fail-if", "device_time >> baseline")
    assert rc == 2 and err.startswith("trntui: error: --fail-if") and err.count("\n") == 1
    rc, _, err = run(capsys, "compare", pair[0], "--no-tui")
    assert rc == 2 and "at least two runs" in err
    rc, _, err = run(capsys, "compare", pair[0], str(tmp_path / "missing"), "--no-tui")
    assert rc == 2 and "no such file" in err
    rc, _, err = run(capsys, "compare", *pair, "--no-tui", "--baseline", "nope")
    assert rc == 2 and "--baseline" in err
    with pytest.raises(SystemExit) as exc:  # argparse usage errors exit 2 too
        main(["compare", *pair, "--no-tui", "--sort", "bogus"])
    assert exc.value.code == 2


def test_parent_directory_and_baseline_option(capsys, corpus_dir, tmp_path) -> None:
    import shutil

    for name in ("base", "test"):
        d = tmp_path / "runs" / name
        d.mkdir(parents=True)
        shutil.copy(corpus_dir / f"cuda_compare_{name}.json.gz", d / "trace.json.gz")
    rc, out, _ = run(capsys, "compare", str(tmp_path / "runs"), "--format", "json", "--only", "summary")
    assert rc == 0
    doc = json.loads(out)
    assert [r["run"] for r in doc["runs"]] == ["base", "test"] and "ops" not in doc
    rc, out, _ = run(capsys, "compare", str(tmp_path / "runs"), "--format", "json", "--baseline", "test")
    assert json.loads(out)["baseline"] == "test"


def test_manifest_variant_order(capsys, corpus_dir, tmp_path) -> None:
    import shutil

    order = ["zeta", "alpha"]
    for name in order:
        d = tmp_path / name
        d.mkdir()
        shutil.copy(corpus_dir / "cuda_compare_base.json.gz", d / "trace.json.gz")
        (d / "trntui.json").write_text(json.dumps({"variant": name, "variants": order, "complete": True}))
    rc, out, _ = run(capsys, "compare", str(tmp_path), "--format", "json", "--only", "summary")
    assert [r["run"] for r in json.loads(out)["runs"]] == order


def test_run_order_is_one_rule_for_discovery_and_compare(corpus_dir, tmp_path) -> None:
    """The run picker / `summary` (find_runs) and `compare` order runs by one rule (discover.capture_order):
    the manifest's variant position or numeric `order`, then the name."""
    import shutil

    from trntui.compare_runs import discover
    from trntui.session import find_runs
    from trntui.loaders.discover import capture_order

    for name, order in (("a", 2), ("b", 0), ("c", 1)):
        d = tmp_path / name
        d.mkdir()
        shutil.copy(corpus_dir / "cuda_compare_base.json.gz", d / "trace.json.gz")
        (d / "trntui.json").write_text(json.dumps({"order": order}))
    runs = find_runs(tmp_path)
    assert [r.name for r in runs] == ["b", "c", "a"]
    assert runs == sorted(runs, key=capture_order)
    assert [name for name, _ in discover([tmp_path])] == ["b", "c", "a"]


def test_names_are_terminal_safe(capsys, tmp_path) -> None:
    ev = lambda name, ts: {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 5}  # noqa: E731
    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    a.write_text(json.dumps({"traceEvents": [ev("op\x1b[31mred", 0)]}))
    b.write_text(json.dumps({"traceEvents": [ev("op\x1b[31mred", 0), ev("x\x07", 10)]}))
    for fmt in ("table", "markdown", "csv", "json"):
        rc, out, _ = run(capsys, "compare", str(a), str(b), "--format", fmt)
        assert rc == 0 and "\x1b" not in out and "\x07" not in out


def test_summary_gaps(capsys, corpus_dir) -> None:
    path = str(corpus_dir / "cuda_compare_base.json.gz")
    rc, out, _ = run(capsys, "summary", path, "--gaps", "--limit", "2")
    assert rc == 0
    assert "Hardware gaps" in out
    row = next(line for line in out.splitlines() if line.startswith("all hardware lanes"))
    assert row.split()[3:6] == ["18", "274.498ms", "1.694ms"]
    assert any(line.startswith("PID:1/device/Stream:7") for line in out.splitlines())
    rc, out, _ = run(capsys, "summary", path, "--gaps", "--format", "json")
    gaps = json.loads(out)["gaps"]
    assert gaps["device"]["busy_us"] == pytest.approx(1694.0)
    assert gaps["device"]["largest_gaps_us"][0]["duration_us"] == pytest.approx(107580.0)
    rc, out, _ = run(capsys, "summary", str(corpus_dir / "cpu_only.json.gz"), "--gaps", "--limit", "1")
    assert rc == 0 and "no hardware lanes" in out


def test_headless_when_not_a_tty(capsys, pair) -> None:
    # capsys replaces stdout with a non-terminal: no --no-tui needed
    rc, out, _ = run(capsys, "compare", *pair)
    assert rc == 0 and out.startswith("Runs (baseline:")


def test_neuron_samples_headless(capsys, repo_dir) -> None:
    root = repo_dir / "sample_profiles" / "neuron"
    if not root.is_dir():
        pytest.skip(f"{root} is not there (bundled Neuron-format RMSNorm samples)")
    rc, out, err = run(capsys, "compare", str(root), "--format", "json", "--only", "summary",
                       "--fail-if", "dispatches > baseline", "--fail-if", "device_time > 0.2*baseline")
    assert rc == 0, err
    runs = json.loads(out)["runs"]
    assert [r["run"] for r in runs] == ["naive", "fused", "compiled"]
    assert [round(r["device_time_us"]) for r in runs] == [2355, 403, 376]
    assert [r["dispatches"] for r in runs] == [6, 1, 1]
    assert [r["host_ops"] for r in runs] == [6, 1, 1]
    # the same check the other way round: naive as the candidate against the fused baseline regresses
    rc, _, err = run(capsys, "compare", str(root / "fused"), str(root / "naive"), "--no-tui",
                     "--fail-if", "device_time > 1.10*baseline")
    assert rc == 1 and "REGRESSION: run 'naive': device_time > 1.10*baseline" in err


def test_launch_compare_accepts_one_path(monkeypatch, corpus_dir, tmp_path) -> None:
    import shutil

    from trntui.commands import compare as cmd

    for name in ("base", "test"):
        (tmp_path / name).mkdir()
        shutil.copy(corpus_dir / f"cuda_compare_{name}.json.gz", tmp_path / name / "trace.json.gz")
    seen = {}

    def fake_app(runs, *, paths=(), by_shapes=False):
        seen["runs"] = [r.name for r in runs]
        seen["paths"] = list(paths)
        return 0

    import trntui.tui.screens.compare as view

    monkeypatch.setattr(view, "run_compare_app", fake_app)
    assert cmd.launch_compare(tmp_path) == 0
    assert seen == {"runs": ["base", "test"], "paths": [str(tmp_path)]}
