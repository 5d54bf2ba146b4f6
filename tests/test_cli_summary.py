"""`trntui summary`: formats, sort keys, exit codes (issue 2)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from .conftest import run_cli as run


def test_table_has_torch_columns_and_footer(capsys, corpus_dir) -> None:
    rc, out, err = run(capsys, "summary", str(corpus_dir / "cuda_simple_add.json.gz"))
    assert rc == 0, err
    header = next(line for line in out.splitlines() if line.strip().startswith("Name"))
    for col in ("Self CPU %", "Self CPU", "CPU total", "Self CUDA", "Self CUDA %", "CUDA total", "# of Calls"):
        assert col in header
    assert "Self CPU time total:" in out and "Self CUDA time total:" in out
    first = out.splitlines()[3].strip()
    assert first.startswith("aten::uniform_")  # default sort: self device time, like the walkthrough's table


def test_sort_aliases_are_the_same_sort(capsys, corpus_dir) -> None:
    path = str(corpus_dir / "cuda_alexnet.json.gz")
    outs = [run(capsys, "summary", path, "--sort", key, "--limit", "8")[1] for key in
            ("self_device_time_total", "self_cuda_time_total", "self_privateuse1_time_total")]
    assert outs[0] == outs[1] == outs[2]
    rc, out, _ = run(capsys, "summary", path, "--sort", "count", "--limit", "3", "--format", "csv")
    counts = [int(r["count"]) for r in csv.DictReader(io.StringIO(out))]
    assert counts == sorted(counts, reverse=True) and len(counts) == 3


def test_csv_json_markdown(capsys, corpus_dir) -> None:
    path = str(corpus_dir / "cuda_simple_add.json.gz")
    rc, out, _ = run(capsys, "summary", path, "--format", "csv", "--limit", "-1")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rc == 0 and {"name", "count", "self_cpu_time_total", "self_device_time_total"} <= set(rows[0])
    rc, out, _ = run(capsys, "summary", path, "--format", "json", "--limit", "5")
    doc = json.loads(out)
    assert doc["device_label"] == "CUDA" and len(doc["rows"]) == 5
    assert doc["totals"]["self_device_time_total"] == pytest.approx(16.0)
    rc, out, _ = run(capsys, "summary", path, "--format", "markdown", "--limit", "2")
    assert out.splitlines()[0].startswith("| Name | Self CPU %")
    assert len([l for l in out.splitlines() if l.startswith("| ")]) == 4  # header, separator, 2 rows


def _unmarkdown(cell: str) -> str:
    """A Markdown cell's text as the table prints it (report/format.py markdown_table and markdown_safe)."""
    return (cell.replace("\\|", "|").replace("]\\(", "](").replace("&lt;", "<").replace("&gt;", ">")
            .replace("&amp;", "&"))


def test_table_and_markdown_show_the_same_rows_and_footer(capsys, corpus_dir) -> None:
    """Both print torch's table: the same rows in the same order for a sort and a limit, and the same footer,
    whose totals are over every row (as torch's), not only those shown."""
    path = str(corpus_dir / "cuda_alexnet.json.gz")
    for argv in (("--sort", "count", "--limit", "4"), ("--sort", "cpu_time_total", "--limit", "-1"), ()):
        rc, table, err = run(capsys, "summary", path, *argv)
        assert rc == 0, err
        rc, md, err = run(capsys, "summary", path, "--format", "markdown", *argv)
        assert rc == 0, err
        lines = table.splitlines()
        rules = [k for k, line in enumerate(lines) if line.startswith("---")]
        table_names = [line.lstrip().split("  ")[0] for line in lines[rules[1] + 1: rules[2]]]
        md_names = [_unmarkdown(line.split(" | ")[0].removeprefix("| ").strip()) for line in md.splitlines()[2:]
                    if line.startswith("| ")]
        shown = [n if len(n) < 52 else n[:52] + "..." for n in md_names]  # the table cuts names at 55 cells
        assert table_names == shown and table_names, argv
        footer = [line for line in lines if line.startswith("Self ") and "time total:" in line]
        assert len(footer) == 2 and footer == [line for line in md.splitlines() if line in footer], argv
        if argv and argv[-1] == "4":
            assert len(table_names) == 4
    all_rows = run(capsys, "summary", path, "--limit", "-1")[1]
    assert [line for line in all_rows.splitlines() if "time total:" in line] == footer  # over every row


def test_cpu_only_trace_has_no_device_columns(capsys, corpus_dir) -> None:
    rc, out, _ = run(capsys, "summary", str(corpus_dir / "cpu_only.json.gz"))
    assert rc == 0
    assert "CUDA" not in out and "Self CPU time total: 2.346s" in out
    assert out.splitlines()[3].strip().startswith("gloo:all_reduce")


def test_missing_file_is_one_line_exit_2(capsys, tmp_path) -> None:
    rc, out, err = run(capsys, "summary", str(tmp_path / "nope.json"))
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "nope.json" in err and "no such file" in err


def test_unreadable_input_is_one_line_exit_2(capsys, tmp_path) -> None:
    bad = tmp_path / "trace.json"
    bad.write_text("this is not json")
    rc, out, err = run(capsys, "summary", str(bad))
    assert rc == 2 and err.count("\n") == 1 and "trace.json" in err


def test_bad_sort_key_is_one_line_exit_2(capsys, corpus_dir) -> None:
    rc, _, err = run(capsys, "summary", str(corpus_dir / "cpu_only.json.gz"), "--sort", "bogus")
    assert rc == 2 and err.count("\n") == 1 and "bogus" in err


def test_group_by_input_shapes(capsys, corpus_dir) -> None:
    rc, out, _ = run(capsys, "summary", str(corpus_dir / "rocm_mi250_train.json.gz"), "--group-by-input-shapes",
                     "--sort", "cpu_time_total", "--format", "csv", "--limit", "-1")
    rows = list(csv.DictReader(io.StringIO(out)))
    mm = [r for r in rows if r["name"] == "aten::as_strided"]
    assert len(mm) >= 3 and len({r["input_shapes"] for r in mm}) == len(mm)


def test_a_step_whose_only_kernel_launch_is_deleted_still_has_a_table(capsys, tmp_path) -> None:
    """Found by tests/test_properties.py: the one op with device time is a zero-length launch that the tree deletes
    (its step is two overlapping ProfilerSteps), so no op keeps device time; key_averages raised ValueError (max
    of an empty array) instead of giving the table."""
    events = [
        {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 2, "args": {"External id": 1},
         "ts": 0.0, "dur": 0.001},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 100, "tid": 3,
         "args": {"External id": 2}, "ts": 0.001, "dur": 1.910},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 100, "tid": 3,
         "args": {"External id": 3}, "ts": 0.002, "dur": 1.826},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 3,
         "args": {"correlation": 1000, "External id": 1001000}, "ts": 0.013, "dur": 0.0},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 3,
         "args": {"correlation": 1000, "External id": 1001001}, "ts": 0.015, "dur": 1.897},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 3,
         "args": {"correlation": 1001, "External id": 1001002}, "ts": 1.910, "dur": 0.0},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
         "args": {"correlation": 1001, "External id": 1001002}, "ts": 1.910, "dur": 0.0},
    ]
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(events))
    rc, out, err = run(capsys, "summary", str(trace), "--no-cache")
    assert rc == 0, err
    assert "cudaLaunchKernel" in out and "Self CPU time total: 3.808us" in out
