"""Memory records (`[memory]`, `[OutOfMemory]`) as read for key_averages' memory columns and the memory curve."""

from __future__ import annotations

import json
from pathlib import Path

from trntui.analysis.key_averages import key_averages
from trntui.session import load_profile

from .conftest import run_cli


def _trace(tmp_path: Path, records: list[dict]) -> Path:
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 10.0, "dur": 10.0, "args": {"External id": 1}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::zeros", "pid": 1, "tid": 1, "ts": 30.0, "dur": 10.0, "args": {"External id": 2}},
    ]
    for ts, args in records:
        events.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts, "args": args})
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "profile_memory": 1, "traceEvents": events}))
    return path


def test_odd_memory_args_are_read_one_by_one(tmp_path: Path, capsys) -> None:
    """A record with a numeric string, an address past int64, a missing device type: the batch decode gives way
    to a tolerant one for all records, nothing is lost, and the table still prints."""
    good = {"Device Type": 0, "Device Id": -1, "Addr": 4096, "Bytes": 512, "Total Allocated": 512, "Total Reserved": 0}
    odd = {"Device Id": -1, "Addr": 2**64 - 1, "Bytes": "128", "Total Allocated": 640}
    trace = _trace(tmp_path, [(12.0, good), (35.0, odd), (50.0, dict(good, Bytes=-512))])
    profile = load_profile(trace)
    mem = profile.memory_events()
    assert mem.nbytes.tolist() == [512, 128, -512]
    assert mem.device_type.tolist() == [0, -1, 0]  # unknown device: counted in neither column, as torch would
    assert mem.addr[1] == -1 and mem.total_allocated.tolist() == [512, 640, 512]
    table = key_averages(profile)
    assert table.cpu_memory_usage[table.find("aten::empty")] == 512
    assert table.cpu_memory_usage[table.find("aten::zeros")] == 0
    assert table.self_cpu_memory_usage[table.find("[memory]")] == -512
    rc, out, err = run_cli(capsys, "summary", str(trace))
    assert rc == 0 and "CPU Mem" in out and "-512 B" in out, err


def test_records_on_an_op_boundary_belong_to_the_op(tmp_path: Path) -> None:
    """torch takes the records in [start, end], both ends included (`MemRecordsAcc.in_interval`)."""
    rec = {"Device Type": 0, "Device Id": -1, "Addr": 1, "Bytes": 64, "Total Allocated": 64, "Total Reserved": 0}
    table = key_averages(load_profile(_trace(tmp_path, [(10.0, rec), (20.0, rec), (29.999, rec)])))
    assert table.cpu_memory_usage[table.find("aten::empty")] == 128
    assert table.count[table.find("[memory]")] == 1


def test_a_trace_without_memory_records_reads_no_args(tmp_path: Path) -> None:
    profile = load_profile(_trace(tmp_path, []))
    table = key_averages(profile)
    assert "memory_events" not in profile.cache  # nothing decoded
    assert table.profile_memory and not table.cpu_memory_usage.any()
