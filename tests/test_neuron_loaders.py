"""Parquet and JSON system-trace loaders, schema drift, merging with trace.json on one clock, and links."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trntui.analysis.chains import follow
from trntui.analysis.key_averages import key_averages
from trntui.session import find_runs, load_profile, load_run
from trntui.loaders.neuron.json_export import load_json_export, read_json_rows
from trntui.loaders.neuron.parquet import load_parquet_export
from trntui.model.builder import ProfileBuilder
from trntui.model.profile import Tier

from tests.neuron_samples import generator

REPO = Path(__file__).resolve().parents[1]
INST = "i-0a1b2c3d4e5f60718"
NAIVE = {"aten::mul": 1164.5, "aten::add": 434.6, "aten::rsqrt": 415.0, "aten::mean": 340.8}


_generator = generator


def _device(profile) -> dict[str, float]:
    t = key_averages(profile)
    return {n: float(t.self_device_time_total[t.find(n)]) for n in NAIVE if t.find(n) >= 0}


def _layout(tmp_path: Path, cap, export: str = "parquet") -> Path:
    gen = _generator()
    ts = tmp_path / "v" / f"{cap.instance}_pid_{cap.pid}" / gen.TIMESTAMP_DIR
    gen.write_trace(cap, ts / "trace.json")
    if export == "parquet":
        gen.write_parquet_export(cap, tmp_path / "v" / "explorer_parquet")
    else:
        gen.write_json_export(cap, tmp_path / "v" / "explorer_json" / "system_profile.json")
    return tmp_path / "v"


def test_parquet_lanes_and_duplicates() -> None:
    profile = load_profile(REPO / "sample_profiles" / "neuron" / "naive")
    labels = {lane.label: lane.tier for lane in profile.lanes}
    pfx = f"{INST}/PID:51001"
    assert labels[f"{pfx}/framework/TID:51001"] == Tier.DISPATCH
    assert labels[f"{pfx}/framework/Stream:0"] == Tier.DEVICE
    assert labels[f"{pfx}/neuron_rt/NC:0"] == Tier.RUNTIME
    assert labels[f"{pfx}/neuron_hw/NC0:0"] == Tier.HARDWARE and labels[f"{pfx}/neuron_hw/NC0:1"] == Tier.HARDWARE
    names = [profile.name_of(i) for i in range(len(profile))]
    assert names.count("nc_exec_running") == 12  # 6 executions x 2 physical cores, all kept on the timeline
    assert names.count("aten::mul") == 6  # 3 ops and their dispatch rows; the system trace's copies were merged
    assert names.count("aten::mul.Tensor") == 3  # the driver rows of trace.json, not Explorer's copies as well
    assert any("29 of 29 framework row(s) of the system trace copy trace.json rows" in n for n in profile.meta.notes)
    # ns clock: system rows are absolute Unix ns like the converted Kineto rows
    i = names.index("nrta_execute_schedule")
    assert int(profile.start[i]) > 1_796_040_000_000_000_000
    args = profile.args(names.index("nc_exec_running"))
    assert args["model_id"] == 10001 and args["exec_id"] == 1 and args["flow_id"]
    info = profile.meta.trace_meta["neuron"][0]
    assert info["profile_schema_version"] == "7.4.0"
    assert info["host_samples"]["cpu_usage"]["samples"] == 6  # 3 seconds x (average, core 0)
    assert info["system_profile_metadata"]["first_ts_ns"].isdigit()


def test_json_export_gives_the_same_table(tmp_path: Path) -> None:
    cap = _generator().build_capture("naive")
    root = _layout(tmp_path, cap, export="json")
    (run,) = find_runs(root)
    assert _device(load_run(run)) == pytest.approx(NAIVE)


def test_json_shapes_profiler2_and_live_fetch(tmp_path: Path) -> None:
    big = 1729888371056597613  # > 2^53: must stay exact
    p2 = tmp_path / "p2.json"
    p2.write_text(json.dumps([
        {"Neuron_Runtime_API_Event": {"duration": 27094, "group": "nrt-nc-000", "id": 1, "instance_id": "i-1",
                                      "lnc_idx": "0", "name": "nrt_tensor_write", "process_id": "1627711",
                                      "thread_id": 1627711, "timestamp": big, "type": 11}},
        {"Framework_Event": {"group": "framework-80375131", "name": "PjitFunction(matmul)", "process_id": "1627711",
                             "thread_id": 7, "timestamp": big - 5000, "duration": 90000, "type": 99999}},
        {"mem_usage": {"timestamp": big, "used": 1}},
    ]))
    rows, _ = read_json_rows(p2)
    assert rows.name.tolist() == ["nrt_tensor_write", "PjitFunction(matmul)"]
    assert int(rows.start[0]) == big and int(rows.end[0]) == big + 27094
    assert rows.source.tolist() == ["neuron_rt", "framework"] and int(rows.nc[0]) == 0 and int(rows.pid[0]) == 1627711
    live = tmp_path / "live.json"
    live.write_text(json.dumps({"events": [
        {"event_type": "nc_exec_running", "phase": "start", "tracking_id": 17, "nc_idx": 0, "timestamp_ns": big,
         "data": {"exec_id": 3, "device_core_idx": 4}},
        {"event_type": "nc_exec_running", "phase": "stop", "tracking_id": 17, "nc_idx": 0, "timestamp_ns": big + 200000},
        {"event_type": "nrt_execute", "phase": "start", "tracking_id": 18, "nc_idx": 0, "timestamp_ns": big},
    ]}))
    rows, _ = read_json_rows(live)
    assert rows.name.tolist() == ["nc_exec_running"] and rows.source.tolist() == ["neuron_hw"]
    assert int(rows.end[0] - rows.start[0]) == 200000 and int(rows.pcore[0]) == 4
    b = ProfileBuilder()
    load_json_export(live, b)
    profile = b.finish()
    assert profile.lane_of(0).label == "PID:-1/neuron_hw/NC0:4"
    assert any("not events skipped" in n for n in profile.meta.notes)


def test_parquet_schema_drift(tmp_path: Path) -> None:
    """Split tables with different schemas, string ids beyond 2^53, no end_ts, flow_id as a JSON string, no
    pcore_idx column (device_core_idx in extra_attributes_json instead), unknown MAJOR version."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    gen = _generator()
    cap = gen.build_capture("naive")
    root = _layout(tmp_path, cap)
    exp = root / "explorer_parquet"
    (exp / "SystemProfileEvents.parquet").unlink()
    rows = sorted(cap.events, key=lambda r: r["start_ts"])
    half = len(rows) // 2
    part0 = [{"id": str(r["id"] + (1 << 60)), "name": r["name"], "start_ts": r["start_ts"], "duration_ns": r["duration_ns"],
              "trace_event_source": r["trace_event_source"], "instance_id": r["instance_id"],
              "process_id": str(r["process_id"]), "thread_id": r["thread_id"], "nc_idx": r["nc_idx"],
              "flow_id": json.dumps(r["flow_id"]) if r["flow_id"] else None,
              "framework_stream_id": r["framework_stream_id"],
              "extra_attributes_json": r["extra_attributes_json"]} for r in rows[:half]]
    pq.write_table(pa.Table.from_pylist(part0), exp / "SystemProfileEvents_0.parquet")
    part1 = [dict(r, new_column_in_v13="x") for r in rows[half:]]
    pq.write_table(pa.Table.from_pylist(part1), exp / "SystemProfileEvents_1.parquet")
    pq.write_table(pa.Table.from_pylist([{"profile_schema_version": "13.0.0"}]), exp / "Metadata.parquet")
    (run,) = find_runs(root)
    profile = load_run(run)
    assert _device(profile) == pytest.approx(NAIVE)
    assert any("13.0.0" in n and "newer" in n for n in profile.meta.notes)


def test_missing_optional_columns(tmp_path: Path) -> None:
    """Only name/start_ts/end_ts/trace_event_source: rows load (no links, so no device time)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cap = _generator().build_capture("fused")
    exp = tmp_path / "exp"
    exp.mkdir()
    minimal = [{k: r[k] for k in ("name", "start_ts", "end_ts")} for r in cap.events]
    pq.write_table(pa.Table.from_pylist(minimal), exp / "SystemProfileEvents.parquet")
    b = ProfileBuilder()
    load_parquet_export(exp, b)
    profile = b.finish()
    tiers = {profile.name_of(i): profile.lane_of(i).tier for i in range(len(profile))}
    assert tiers["nc_exec_running"] == Tier.HARDWARE and tiers["nrta_execute_schedule"] == Tier.RUNTIME
    assert profile.meta.backend == "NEURON"


def test_parquet_args_stay_with_their_rows(tmp_path: Path) -> None:
    """Args are built column-wise in Arrow: rows without any args (no id, flow ids or attributes) between rows
    with them must not shift the others (pyarrow's join with null_handling="skip" drops such rows); the
    trace_event_source "" falls back to the name for every row; External ids come from the attributes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    exp = tmp_path / "exp"
    exp.mkdir()
    t0 = 1_700_000_000_000_000_000
    rows = [
        {"id": 1, "name": "a", "extra_attributes_json": None, "flow_id": None, "trace_event_source": "neuron_rt"},
        {"id": None, "name": "nc_exec_running", "extra_attributes_json": None, "flow_id": None, "trace_event_source": ""},
        {"id": None, "name": "c", "extra_attributes_json": ' {"k": "v", "External id": 5} ', "flow_id": ["7", "8"],
         "trace_event_source": ""},
        {"id": 4, "name": "d", "extra_attributes_json": "{}", "flow_id": [], "trace_event_source": "neuron_rt"},
    ]
    for k, r in enumerate(rows):
        r.update(start_ts=t0 + k * 1000, end_ts=t0 + k * 1000 + 500)
    pq.write_table(pa.Table.from_pylist(rows), exp / "SystemProfileEvents.parquet")
    b = ProfileBuilder()
    load_parquet_export(exp, b)
    p = b.finish()
    by_name = {p.names[p.name[i]]: i for i in range(len(p))}
    assert p.args(by_name["a"]) == {"id": "1"}
    assert p.args(by_name["nc_exec_running"]) == {}
    assert p.args(by_name["c"]) == {"flow_id": ["7", "8"], "k": "v", "External id": 5}
    assert p.args(by_name["d"]) == {"id": "4"}
    assert int(p.ext[by_name["c"]]) == 5 and int(p.ext[by_name["a"]]) == -1
    assert p.lane_of(by_name["nc_exec_running"]).subsystem == "neuron_hw"
    assert p.lane_of(by_name["c"]).subsystem == "neuron_rt"


def test_misaligned_clock_is_reported(tmp_path: Path) -> None:
    gen = _generator()
    cap = gen.build_capture("naive")
    cap.trace["baseTimeNanoseconds"] = 0  # a trace.json whose base was lost: µs from 0, far from Unix time
    root = _layout(tmp_path, cap)
    profile = load_run(find_runs(root)[0])
    assert any("do not overlap in time" in n for n in profile.meta.notes)
    assert not any("dropped" in n for n in profile.meta.notes)


def test_privateuse1_rows_in_trace_json(tmp_path: Path) -> None:
    """trace.json with the documented PrivateUse1 rows: the chain goes op -(External id)-> dispatch row
    -(flow)-> driver row -> nrta_execute_schedule -> nc_exec_running; Explorer's copies are merged."""
    cap = _generator().build_capture("naive")
    root = _layout(tmp_path, cap)
    profile = load_run(find_runs(root)[0])
    assert any("29 of 29 framework row(s)" in n for n in profile.meta.notes)
    assert _device(profile) == pytest.approx(NAIVE)
    i = next(k for k in range(len(profile)) if profile.name_of(k) == "aten::mean" and profile.cat_of(k) == "cpu_op")
    chain = follow(profile, i)
    (branch,) = chain.branches
    assert [h.name for h in branch] == ["aten::mean", "aten::mean.dim", "nrta_execute_schedule", "nc_exec_running"]
    assert branch[0].rule == "External id" and branch[1].tier == Tier.DEVICE
    assert profile.cat_of(branch[1].events[0]) == "privateuse1_driver"


def test_sequence_id_links_without_flows(tmp_path: Path) -> None:
    """No flow_id below the framework device event: nrt_sequence_id links it to the runtime execution and the
    hardware rows, and framework device events reach their op by time containment."""
    cap = _generator().build_capture("naive", privateuse1_rows=False)  # older torch-neuronx: no PrivateUse1 rows
    for r in cap.events:
        if r["trace_event_source"] == "framework" and r["framework_stream_id"] is None:
            continue  # keep the op copies (dropped as duplicates anyway)
        extra = json.loads(r["extra_attributes_json"] or "{}")
        if r["name"] == "nc_exec_running":
            extra["nrt_sequence_id"] = 500 + extra["exec_id"]
        r["extra_attributes_json"] = json.dumps(extra)
        r["flow_id"] = None
    root = _layout(tmp_path, cap)
    profile = load_run(find_runs(root)[0])
    assert _device(profile) == pytest.approx(NAIVE)
    t = key_averages(profile)
    assert "nrt_sequence_id" in t.device_time_source
    i = next(k for k in range(len(profile)) if profile.name_of(k) == "aten::rsqrt")
    (branch,) = follow(profile, i).branches
    assert [h.rule for h in branch] == ["time containment", "nrt_sequence_id", "nrt_sequence_id"]
    assert branch[-1].cores == 2


def test_framework_mapping_file_links_ops_to_runtime(tmp_path: Path) -> None:
    """Older torch-neuronx: no flows and no framework rows at all; `framework_mapping_*.json` maps the op's
    Sequence number to the runtime's nrt_sequence_id."""
    gen = _generator()
    cap = gen.build_capture("fused", privateuse1_rows=False)
    cap.events = [r for r in cap.events if r["trace_event_source"] != "framework"]
    for r in cap.events:
        extra = json.loads(r["extra_attributes_json"] or "{}")
        if r["name"] == "nc_exec_running":
            extra["nrt_sequence_id"] = 501
        r["extra_attributes_json"] = json.dumps(extra)
        r["flow_id"] = None
    op = next(e for e in cap.trace["traceEvents"] if e.get("name") == "aten::_fused_rms_norm")
    op["args"]["Sequence number"] = 42
    root = _layout(tmp_path, cap)
    ts = next(root.glob("i-*/*"))
    (ts / "framework_mapping_20261130_120000_000.json").write_text(json.dumps(
        {"version": 1, "data": [{"nrta_seq_id": 501, "framework_op_exec_ids": [{"seq_nr": 42, "th_id": 1, "stream_id": 0}]}]}))
    profile = load_run(find_runs(root)[0])
    t = key_averages(profile)
    assert t.self_device_time_total[t.find("aten::_fused_rms_norm")] == pytest.approx(403.3)
    i = next(k for k in range(len(profile)) if profile.name_of(k) == "aten::_fused_rms_norm")
    (branch,) = follow(profile, i).branches
    assert [h.name for h in branch] == ["nrta_execute_schedule", "nc_exec_running"]
    assert branch[0].rule == "nrt_sequence_id"


def test_damaged_or_empty_exports(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from trntui.cli import main

    cap = _generator().build_capture("naive")
    root = _layout(tmp_path, cap)
    events = root / "explorer_parquet" / "SystemProfileEvents.parquet"
    events.write_bytes(b"PAR1 this is not parquet")
    assert main(["summary", str(root)]) == 2
    err = capsys.readouterr().err
    assert "not a readable Parquet file" in err and len(err.strip().splitlines()) == 1
    # a table with the columns but no rows: the framework trace still loads, with a note
    pq.write_table(pa.table({"name": pa.array([], pa.string()), "start_ts": pa.array([], pa.int64())}), events)
    assert main(["summary", str(root)]) == 0
    assert "no system-trace events" in capsys.readouterr().out
    # no usable columns at all
    pq.write_table(pa.table({"foo": [1]}), events)
    assert main(["summary", str(root)]) == 2
    assert "no name/start_ts columns" in capsys.readouterr().err
