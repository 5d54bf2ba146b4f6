"""`--steps` / `--window` selection: pure functions and the summary flags."""

from __future__ import annotations

import json

import numpy as np
import pytest

from trntui.analysis.key_averages import key_averages
from trntui.analysis.select import (
    events_in_windows,
    parse_steps,
    parse_time,
    parse_window,
    select_events,
    steps,
    windows_for_steps,
)
from trntui.errors import TrntuiError
from trntui.session import load_profile


def _trace(tmp_path):
    """Three 100 µs steps on thread 1; one `aten::mm` per step, each launching a kernel that runs 150 µs later."""
    ev = []
    for k in range(3):
        t = 1000 + 100 * k
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k + 1}", "pid": 1, "tid": 1,
                   "ts": t, "dur": 90, "args": {"External id": 100 + k}})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t + 10, "dur": 20 + k,
                   "args": {"External id": 10 + k}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 12,
                   "dur": 5, "args": {"External id": 10 + k, "correlation": 50 + k}})
        ev.append({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": t + 150, "dur": 7 + k,
                   "args": {"External id": 10 + k, "correlation": 50 + k}})
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": ev}))
    return path


def test_parse_steps():
    assert parse_steps("3-5") == [(3, 5)]
    assert parse_steps("3") == [(3, 3)]
    assert parse_steps("1,4-6") == [(1, 1), (4, 6)]
    assert parse_steps("7-")[0][0] == 7 and parse_steps("-2") == [(0, 2)]
    for bad in ("", "a", "5-3", "1--2"):
        with pytest.raises(TrntuiError):
            parse_steps(bad)


def test_parse_time_units():
    assert parse_time("250ms") == 250_000_000
    assert parse_time("1.5s") == 1_500_000_000
    assert parse_time("300us") == 300_000
    assert parse_time("12") == 12_000_000
    assert parse_time("1200ns") == 1200
    with pytest.raises(TrntuiError):
        parse_time("soon")


def test_steps_and_windows(tmp_path):
    p = load_profile(_trace(tmp_path))
    st = steps(p)
    assert [s.number for s in st] == [1, 2, 3]
    w = windows_for_steps(p, "2-3")
    assert len(w) == 2 and w[0][0] == p.start.min() + 100_000
    with pytest.raises(TrntuiError, match="steps 1-3"):
        windows_for_steps(p, "9")


def test_device_rows_follow_their_op(tmp_path):
    p = load_profile(_trace(tmp_path))
    sel = select_events(p, steps_spec="1")
    names = sorted(p.name_of(i) for i in sel.tolist())
    # the step-1 kernel runs at +150 µs (inside step 2's time) but belongs to step 1
    assert names == ["ProfilerStep#1", "aten::mm", "cudaLaunchKernel", "gemm"]
    kern = [i for i in sel.tolist() if p.name_of(i) == "gemm"]
    assert p.end[kern[0]] - p.start[kern[0]] == 7_000


def test_key_averages_on_selection(tmp_path):
    p = load_profile(_trace(tmp_path))
    full = key_averages(p)
    part = key_averages(p, events=select_events(p, steps_spec="2-3"))
    k_full, k_part = full.find("aten::mm"), part.find("aten::mm")
    assert full.count[k_full] == 3 and part.count[k_part] == 2
    assert part.self_device_time_total[k_part] == pytest.approx(8 + 9)
    assert part.cpu_time_total[k_part] == pytest.approx(21 + 22)
    # the full selection is the full table
    every = key_averages(p, events=np.arange(len(p)))
    assert every.name == full.name and np.array_equal(every.count, full.count)


def test_window_relative_to_first_event(tmp_path):
    p = load_profile(_trace(tmp_path))
    t0, t1 = parse_window("0.1:0.2", p)  # ms
    assert (t0, t1) == (p.start.min() + 100_000, p.start.min() + 200_000)
    sel = events_in_windows(p, [(t0, t1)])
    assert "ProfilerStep#2" in {p.name_of(i) for i in sel.tolist()}
    assert "ProfilerStep#1" not in {p.name_of(i) for i in sel.tolist()}
    both = select_events(p, steps_spec="1-3", window_spec=":0.1")
    assert {p.name_of(i) for i in both.tolist()} >= {"ProfilerStep#1"}
    assert "ProfilerStep#2" not in {p.name_of(i) for i in both.tolist()}
    with pytest.raises(TrntuiError):
        parse_window("5", p)
    assert select_events(p) is None


def test_summary_flags(tmp_path, capsys):
    from trntui.cli import main

    path = _trace(tmp_path)
    assert main(["summary", str(path), "--steps", "3", "--format", "csv", "--no-cache"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("aten::mm"))
    assert ",1," in row or row.endswith(",1")
    assert main(["summary", str(path), "--steps", "9"]) == 2
    assert "no such step" in capsys.readouterr().err
    assert main(["summary", str(path), "--window", "0:0.15"]) == 0
