"""Kineto loader details: forms, phases, timestamp regimes, lanes, flows (issue 2)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from trntui.analysis.key_averages import key_averages
from trntui.analysis.links import build_links
from trntui.session import load_profile
from trntui.model.profile import EventKind, Tier


def write(tmp_path: Path, doc, name: str = "trace.json", gz: bool = False) -> Path:
    path = tmp_path / name
    data = json.dumps(doc).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def cuda_events(ts0: float = 1000.0):
    return [
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": ts0, "dur": 20.0, "args": {"External id": 7}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts0 + 5, "dur": 4.0,
         "args": {"External id": 7, "correlation": 99}},
        {"ph": "s", "id": 99, "pid": 1, "tid": 1, "ts": ts0 + 5, "cat": "ac2g", "name": "ac2g"},
        {"ph": "f", "id": 99, "pid": 0, "tid": 7, "ts": ts0 + 12, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        {"ph": "X", "cat": "kernel", "name": "add_kernel", "pid": 0, "tid": 7, "ts": ts0 + 12, "dur": 3.5,
         "args": {"External id": 7, "correlation": 99, "stream": 7}},
        {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "thread 1 (python)"}},
    ]


def test_object_and_bare_array_forms_and_gzip_by_magic(tmp_path) -> None:
    a = load_profile(write(tmp_path, {"traceEvents": cuda_events()}, "a.json"))
    b = load_profile(write(tmp_path, cuda_events(), "b.json"))
    c = load_profile(write(tmp_path, {"traceEvents": cuda_events()}, "c.json", gz=True))  # gzip without .gz
    for p in (a, b, c):
        assert len(p) == 3 and p.meta.device_kind == "cuda"
        assert key_averages(p).find("aten::add") >= 0


def test_three_timestamp_regimes_give_absolute_ns(tmp_path) -> None:
    base = 1_735_632_360_000_000_000
    rel = load_profile(write(tmp_path, {"baseTimeNanoseconds": base, "traceEvents": cuda_events(4203669604.407)}, "r.json"))
    epoch_int = load_profile(write(tmp_path, {"traceEvents": cuda_events(1694039968955744)}, "i.json"))
    epoch_float = load_profile(write(tmp_path, {"traceEvents": cuda_events(1712195495519689.5)}, "f.json"))
    assert rel.span[0] == base + 4203669604407
    assert epoch_int.span[0] == 1694039968955744 * 1000
    assert epoch_float.span[0] == 1712195495519689500
    for p in (rel, epoch_int, epoch_float):
        op = int(np.nonzero(p.name == p.name_id("aten::add"))[0][0])
        assert p.end[op] - p.start[op] == 20_000
        kernel = int(np.nonzero(p.name == p.name_id("add_kernel"))[0][0])
        assert p.end[kernel] - p.start[kernel] == 3_500


def test_lanes_tiers_and_links(tmp_path) -> None:
    p = load_profile(write(tmp_path, {"traceEvents": cuda_events()}))
    tiers = {p.name_of(i): p.lane_of(i).tier for i in range(len(p))}
    assert tiers == {"aten::add": Tier.DISPATCH, "cudaLaunchKernel": Tier.RUNTIME, "add_kernel": Tier.HARDWARE}
    links = build_links(p)
    kernel = p.name_id("add_kernel")
    k = int(np.nonzero(p.name == kernel)[0][0])
    assert p.name_of(int(links.op_of[k])) == "aten::add"
    assert p.name_of(int(links.runtime_of[k])) == "cudaLaunchKernel"
    assert len(p.flows) == 2  # both halves bound to slices
    table = key_averages(p)
    row = table.row(table.find("aten::add"))
    assert row["self_cpu_time_total"] == 16.0  # 20 µs minus the 4 µs launch call
    assert row["self_device_time_total"] == 3.5
    assert table.has_device and table.backend == "CUDA"


def test_begin_end_pairs_and_instants(tmp_path) -> None:
    events = [
        {"ph": "B", "cat": "cpu_op", "name": "outer", "pid": 1, "tid": 1, "ts": 0},
        {"ph": "B", "cat": "cpu_op", "name": "inner", "pid": 1, "tid": 1, "ts": 2},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 5},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 10},
        {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 3},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 11},
    ]
    p = load_profile(write(tmp_path, events))
    assert p.meta.skipped == {"B/E events without their other half": 1}
    table = key_averages(p)
    assert table.row(table.find("outer"))["self_cpu_time_total"] == 7.0
    assert table.find("[memory]") == -1  # filtered like torch
    kinds = {p.name_of(i): int(p.kind[i]) for i in range(len(p))}
    assert kinds["[memory]"] == EventKind.INSTANT


def test_partial_overlaps_are_kept_not_nested(tmp_path) -> None:
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
        {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 5, "dur": 10},
        {"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": 6, "dur": 2},
    ]
    p = load_profile(write(tmp_path, events))
    assert len(p) == 3
    parent, depth = p.nesting()
    by = {p.name_of(i): i for i in range(len(p))}
    assert depth[by["b"]] == 1 and parent[by["b"]] == -1  # drawn in a sub-row, not a child of a
    table = key_averages(p)
    assert table.row(table.find("a"))["self_cpu_time_total"] == 10.0  # torch: partial overlap is no child
    assert table.row(table.find("b"))["self_cpu_time_total"] == 8.0


def test_string_pids_and_orphan_flows_are_not_fatal(tmp_path) -> None:
    events = cuda_events() + [
        {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 0, "dur": 5000},
        {"ph": "f", "id": 12345, "pid": 0, "tid": 7, "ts": 1012, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    ]
    p = load_profile(write(tmp_path, {"traceEvents": events}))
    assert any(l.subsystem == "markers" for l in p.lanes)
    assert any("only one half" in n for n in p.meta.notes)
    assert key_averages(p).find("PyTorch Profiler (0)") == -1


def test_args_are_parsed_lazily(tmp_path) -> None:
    p = load_profile(write(tmp_path, {"traceEvents": cuda_events()}))
    k = int(np.nonzero(p.name == p.name_id("add_kernel"))[0][0])
    assert not isinstance(p.args_raw[k], dict)  # still raw bytes after load
    assert p.args(k)["stream"] == 7
