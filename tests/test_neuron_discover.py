"""Discovery of Neuron profile layouts (neuron-formats.md §3) and `trntui info`.

Layouts are built in temporary directories from the synthetic generator; binary files (.pb, .ntff, .neff) are
placeholders: trntui never parses them, it only detects, pairs and reports them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trntui.analysis.key_averages import key_averages
from trntui.cli import main
from trntui.commands.info import describe
from trntui.session import find_runs, load_run
from trntui.loaders.neuron.discover import find_neuron_runs, scan

from tests.neuron_samples import generator

REPO = Path(__file__).resolve().parents[1]
INST = "i-0a1b2c3d4e5f60718"


_generator = generator


def _touch(path: Path, data: bytes = b"\x0a\x02pb") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _mul_device_us(run) -> float:
    table = key_averages(load_run(run))
    return float(table.self_device_time_total[table.find("aten::mul")])


def test_timestamp_layout_with_export_beside(tmp_path: Path) -> None:
    gen = _generator()
    vdir = gen.write_variant(tmp_path, "naive")
    runs = find_neuron_runs(vdir)
    assert [r.name for r in runs] == ["rank0 (i-0a1b2c3d4e5f60718_pid_51001)"]
    assert runs[0].framework_traces[0].name == "trace.json"
    assert runs[0].root.name == gen.TIMESTAMP_DIR
    assert _mul_device_us(runs[0]) == pytest.approx(1164.5)


def test_no_timestamp_level_export_inside(tmp_path: Path) -> None:
    gen = _generator()
    cap = gen.build_capture("naive")
    pid_dir = tmp_path / "out" / f"{INST}_pid_{cap.pid}"
    gen.write_trace(cap, pid_dir / "trace.json")
    gen.write_parquet_export(cap, pid_dir / "parquet")
    runs = find_runs(tmp_path / "out")
    assert len(runs) == 1 and runs[0].root == pid_dir
    assert _mul_device_us(runs[0]) == pytest.approx(1164.5)


def test_path_is_the_timestamp_dir(tmp_path: Path) -> None:
    gen = _generator()
    vdir = gen.write_variant(tmp_path, "fused")
    cap = gen.build_capture("fused")
    ts = vdir / f"{INST}_pid_{cap.pid}" / gen.TIMESTAMP_DIR
    gen.write_parquet_export(cap, ts / "explorer")  # export inside the session this time
    runs = find_runs(ts)
    assert len(runs) == 1
    table = key_averages(load_run(runs[0]))
    assert table.self_device_time_total[table.find("aten::_fused_rms_norm")] == pytest.approx(403.3)


def test_inspect_layout_pairs_neff_and_ntff(tmp_path: Path) -> None:
    d = tmp_path / "out" / f"{INST}_pid_98399"
    h = "14382885777943380728"
    for vnc in range(2):
        _touch(d / f"{h}_instid_0_vnc_{vnc}.ntff", b"NTFF" * 10)
    _touch(d / f"{h}_instid_0_vnc_2.ntff", b"")
    _touch(d / f"neff_{h}.neff", b"NEFF")
    _touch(d / "123_vnc_0.ntff", b"NTFF")  # its NEFF stayed in the compiler cache
    for pb in ("ntrace.pb", "trace_info.pb", "cpu_util.pb", "host_mem.pb"):
        _touch(d / pb)
    layout = scan(tmp_path / "out")
    (s,) = layout.sessions
    assert s.pid == 98399 and s.instance == INST and s.raw and s.timestamp == ""
    assert (f"{h}_instid_0_vnc_0.ntff", f"neff_{h}.neff") in s.pairs
    assert any("0 bytes" in p for p in s.problems)
    assert any("neff_123.neff is missing" in p and "neff_cache" in p for p in s.problems)
    assert any("no framework trace" in p for p in s.problems)


def test_vllm_layout_with_sibling_neffs(tmp_path: Path) -> None:
    root = tmp_path / "neuron_profiles"
    ts = root / f"{INST}_pid_700" / "20261130_101010_123"
    for name in ("profile_nc_0_session_0.ntff", "ntrace.pb", "trace_info.pb"):
        _touch(ts / name)
    # without vLLM's neffs/ directory the session-mode NTFF cannot be read: say where the NEFFs went
    (s,) = scan(root).sessions
    assert s.timestamp == "20261130_101010_123"
    assert any("neff_cache" in p for p in s.problems)
    _touch(root / "neffs" / "graph_abc123.neff", b"NEFF")
    (s,) = scan(root).sessions
    assert any(f.path.name == "graph_abc123.neff" for f in s.files)
    assert not any("neff_cache" in p for p in s.problems)


def _two_ranks(tmp_path: Path, names: tuple[str, str] = ("trace.json", "trace.json")) -> Path:
    """Two ranks of one job (pids 100, 200) and one Parquet export of the whole job beside them."""
    gen = _generator()
    out = tmp_path / "profile_output"
    caps = []
    for rank, (pid, fname) in enumerate(zip((100, 200), names)):
        cap = gen.build_capture("naive", pid=pid, rank=rank)
        gen.write_trace(cap, out / f"{INST}_pid_{pid}" / "20261130_120000_000" / fname)
        _touch(out / f"{INST}_pid_{pid}" / "20261130_120000_000" / "ntrace.pb")
        _touch(out / f"{INST}_pid_{pid}" / "20261130_120000_000" / "trace_info.pb")
        caps.append(cap)
    merged = caps[0]
    merged.events = caps[0].events + caps[1].events
    gen.write_parquet_export(merged, tmp_path / "profile_output" / "explorer_parquet")
    return out


def test_several_ranks_one_run_each(tmp_path: Path) -> None:
    out = _two_ranks(tmp_path)
    runs = find_runs(out)
    assert [r.name for r in runs] == [f"rank0 ({INST}_pid_100)", f"rank1 ({INST}_pid_200)"]
    for run, pid in zip(runs, (100, 200)):
        profile = load_run(run)
        pids = {lane.pid for lane in profile.lanes if lane.subsystem in ("neuron_rt", "neuron_hw")}
        assert pids == {pid}  # the shared export was filtered per rank
        assert key_averages(profile).sum_self_device == pytest.approx(2354.9)
        assert any("kept the rows of process" in n for n in profile.meta.notes)


def test_rank_from_framework_trace_name(tmp_path: Path) -> None:
    out = _two_ranks(tmp_path, ("neuron_framework_trace_rank_3.json", "pytorch_trace.json"))
    layout = scan(out)
    ranks = {s.pid: (s.rank, s.rank_source) for s in layout.sessions}
    assert ranks[100] == (3, "neuron_framework_trace_rank_3.json")
    assert ranks[200][0] == 1  # distributedInfo.rank inside pytorch_trace.json
    assert [r.name for r in find_runs(out)] == [f"rank1 ({INST}_pid_200)", f"rank3 ({INST}_pid_100)"]


def test_framework_trace_in_pid_dir_above_timestamp(tmp_path: Path) -> None:
    gen = _generator()
    cap = gen.build_capture("naive")
    pid_dir = tmp_path / f"{INST}_pid_{cap.pid}"
    gen.write_trace(cap, pid_dir / "trace.json")
    _touch(pid_dir / "20261130_120000_000" / "ntrace.pb")
    _touch(pid_dir / "20261130_120000_000" / "trace_info.pb")
    (s,) = scan(tmp_path).sessions
    assert s.dir.name == "20261130_120000_000"
    assert [p.name for p in s.framework] == ["trace.json"]


def test_not_neuron_falls_through(tmp_path: Path) -> None:
    trace = tmp_path / "run1" / "trace.json"
    trace.parent.mkdir()
    trace.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "a", "cat": "cpu_op", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]}))
    assert find_neuron_runs(tmp_path) == []
    assert [r.name for r in find_runs(tmp_path)] == ["run1"]


def test_neuron_and_plain_traces_side_by_side(tmp_path: Path) -> None:
    gen = _generator()
    gen.write_variant(tmp_path, "naive")
    plain = tmp_path / "cpu_run" / "trace.json"
    plain.parent.mkdir()
    plain.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "a", "cat": "cpu_op", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]}))
    names = [r.name for r in find_runs(tmp_path)]
    # runs placed by a capture manifest first (in capture order), then the others by name (discover.capture_order)
    assert names == [f"rank0 ({INST}_pid_51001)", "cpu_run"]


def test_info_lists_every_rank(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = _two_ranks(tmp_path)
    assert main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Neuron profile, 2 sessions" in text
    assert f"rank0 ({INST}_pid_100)" in text and f"rank1 ({INST}_pid_200)" in text
    assert "ntrace.pb" in text and "not read directly" in text
    assert "explorer_parquet/" in text
    doc = describe(str(out))
    assert [s["rank"] for s in doc["sessions"]] == [0, 1]
    assert all(any("framework trace" in r for r in s["reads"]) for s in doc["sessions"])
    assert main(["info", str(out), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "neuron"


def test_info_reports_missing_neffs_and_the_sample_is_synthetic(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    d = tmp_path / f"{INST}_pid_5"
    _touch(d / "42_vnc_0.ntff", b"NTFF")
    _touch(d / "ntrace.pb")
    assert main(["info", str(tmp_path)]) == 1  # no trace_info.pb: Explorer cannot process it (issue 27: exit 1)
    text = capsys.readouterr().out
    assert "neff_42.neff is missing" in text
    assert "trace_info.pb" in text  # Explorer needs it too
    assert main(["info", str(REPO / "sample_profiles" / "neuron" / "naive")]) == 0
    text = capsys.readouterr().out
    assert "SYNTHETIC" in text and "67 system events, schema 7.4.0" in text


def test_empty_pid_dir_is_reported_not_fatal(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Beside a session with a trace, an empty session directory is listed (not fatal); alone it is all there
    is, and info says so in one line (next test)."""
    (tmp_path / f"{INST}_pid_9").mkdir()
    _touch(tmp_path / f"{INST}_pid_10" / "trace.json", b'{"traceEvents": []}')
    assert main(["info", str(tmp_path)]) == 0
    assert "empty directory" in capsys.readouterr().out


def _nothing_readable(root: Path) -> dict[str, tuple[Path, str]]:
    """Directories with nothing trntui can read, in every layout info tells apart: (directory, what the error says)."""
    cases = {}

    def case(name: str, says: str) -> Path:
        d = root / name
        d.mkdir()
        cases[name] = (d, says)
        return d

    case("empty", "no trace files found")
    _touch(case("unrelated_files", "no trace files found") / "notes.txt", b"hello")
    (case("empty_session_dir", "1 Neuron session without a readable trace, export or raw system/device file (") /
     f"{INST}_pid_9").mkdir()
    d = case("export_that_does_not_open", "explorer_parquet: unreadable: ")
    _touch(d / "explorer_parquet" / "SystemProfileEvents.parquet", b"PAR1 not parquet PAR1")
    _touch(case("empty_trace", "only empty trace files (trace.json)") / "trace.json", b"")
    d = case("empty_traces_of_ranks", "only empty trace files (")
    for k in range(2):
        _touch(d / f"rank{k}.pt.trace.json", b"")
    return cases


def test_info_on_a_directory_with_nothing_readable_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    """Whatever the layout (it was exit 0 for an empty session directory, an export that does not open or an empty
    trace.json, exit 2 for an empty directory): one error line naming the directory and why, exit 2, as for
    other unreadable input; nothing on stdout. A raw capture (no neuron-explorer here) is still described."""
    from tests.conftest import run_cli

    for name, (d, says) in _nothing_readable(tmp_path).items():
        for fmt in ("text", "json"):
            rc, out, err = run_cli(capsys, "info", "--format", fmt, str(d))
            assert rc == 2 and out == "" and err.count("\n") == 1, (name, fmt, rc, out, err)
            assert err.startswith(f"trntui: error: {d}: ") and says in err, (name, err)
    raw = tmp_path / "raw" / f"{INST}_pid_7"
    _touch(raw / "ntrace.pb")
    _touch(raw / "1_vnc_0.ntff", b"NTFF")
    rc, out, err = run_cli(capsys, "info", str(tmp_path / "raw"))
    # described, with the capture problem (ntrace.pb without trace_info.pb) on its line and exit 1 (issue 27)
    assert rc == 1 and "run on the Trn host: neuron-explorer view" in out, err
    assert "problem: " in out and "ntrace.pb without trace_info.pb" in out


def test_unrelated_json_is_not_an_export(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"event_type": "click", "phase": 1}))
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "a", "cat": "cpu_op", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]}))
    assert find_neuron_runs(tmp_path) == []
