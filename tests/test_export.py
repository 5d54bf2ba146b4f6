"""`trntui export`: the SQL tables as Parquet files equal to the queries' results, and the run as one chrome
trace whose events, lanes and flows are the run's (a Neuron sample: system trace merged with the framework
trace)."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

pytest.importorskip("duckdb")
pq = pytest.importorskip("pyarrow.parquet")

from trntui.query.database import Database  # noqa: E402
from trntui.session import load_profile  # noqa: E402

from .conftest import CORPUS, REPO, run_cli  # noqa: E402

NAIVE = REPO / "sample_profiles" / "neuron" / "naive"


def test_parquet_files_hold_every_table(tmp_path: Path, capsys) -> None:
    out = tmp_path / "tables"
    rc, stdout, err = run_cli(capsys, "export", str(NAIVE), "--to", "parquet", str(out))
    assert rc == 0, err
    files = sorted(p.stem for p in out.glob("*.parquet"))
    assert files == sorted(["events", "lanes", "flows", "links", "steps", "ops", "kernels", "counters"])
    with Database.of([("x", load_profile(NAIVE))]) as db:
        for name in files:
            t = pq.read_table(out / f"{name}.parquet")
            assert t.num_rows == db.rows(f"SELECT count(*) FROM {name}")[0][0], name
            assert t.column_names == [c for c, _ in db.columns(name)], name
        ev = pq.read_table(out / "events.parquet").to_pandas()
        assert ev["dur_ns"].sum() == db.rows("SELECT sum(dur_ns) FROM events")[0][0]
    assert "events.parquet (68 rows)" in stdout


def _trace_events(path: Path) -> list[dict]:
    return json.loads(path.read_text())["traceEvents"]


def test_chrome_trace_of_a_neuron_run_keeps_events_lanes_and_flows(tmp_path: Path, capsys) -> None:
    out = tmp_path / "merged.json"
    rc, _, err = run_cli(capsys, "export", str(NAIVE), "--to", "chrome-trace", str(out))
    assert rc == 0, err
    profile = load_profile(NAIVE)
    evs = _trace_events(out)
    body = [e for e in evs if e["ph"] in ("X", "i")]
    assert len(body) == len(profile)
    # every event once, with its name, start and duration (µs) as trntui holds them
    got = collections.Counter((e["name"], round(e["ts"], 3), round(e.get("dur", 0.0), 3)) for e in body)
    base = profile.meta.base_ns
    want = collections.Counter((profile.name_of(i), round((int(profile.start[i]) - base) / 1000, 3),
                                round((int(profile.end[i]) - int(profile.start[i])) / 1000, 3)) for i in range(len(profile)))
    assert got == want
    # the system trace's hardware rows are there, and each lane is one named track
    assert sum(e["name"] == "nc_exec_running" for e in body) == sum(profile.name_of(i) == "nc_exec_running" for i in range(len(profile)))
    tracks = {(e["pid"], e["tid"]) for e in body}
    names = {(e["pid"], e["tid"]) for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    assert tracks <= names
    assert len(names) >= len({(l.pid, l.tid, l.subsystem) for l in profile.lanes if l.subsystem not in ("runtime",)})
    # flows: one chrome flow event per flow row; each flow id starts once and finishes once
    flows = [e for e in evs if e["ph"] in ("s", "t", "f")]
    assert len(flows) == len(profile.flows)
    per_id = collections.defaultdict(list)
    for e in flows:
        per_id[(e["cat"], e["id"])].append(e["ph"])
    assert all(v.count("s") == 1 and v.count("f") == 1 for v in per_id.values())
    # a flow's halves sit on events of the trace (same track, same start)
    starts = {(e["pid"], e["tid"], e["ts"]) for e in body}
    assert all((e["pid"], e["tid"], e["ts"]) in starts for e in flows)


def test_chrome_trace_of_a_kineto_trace_reads_back_the_same(tmp_path: Path, capsys) -> None:
    src = CORPUS / "cuda_alexnet.json.gz"
    out = tmp_path / "again.json.gz"
    rc, _, err = run_cli(capsys, "export", str(src), "--to", "chrome-trace", str(out))
    assert rc == 0, err
    rc, a, _ = run_cli(capsys, "summary", str(src), "--format", "csv", "--limit", "-1")
    rc2, b, _ = run_cli(capsys, "summary", str(out), "--format", "csv", "--limit", "-1")
    assert rc == rc2 == 0 and a == b  # the same key_averages table, links and device time included
    again = load_profile(out)
    orig = load_profile(src)
    assert len(again) == len(orig) and len(again.flows) == len(orig.flows) and len(again.lanes) == len(orig.lanes)


def test_export_errors_are_one_line(tmp_path: Path, capsys) -> None:
    rc, _, err = run_cli(capsys, "export", str(NAIVE), "--to", "csv", str(tmp_path / "x"))
    assert rc == 2 and err.count("\n") == 1 and "parquet DIR or chrome-trace FILE" in err
    rc, _, err = run_cli(capsys, "export", str(REPO / "sample_profiles" / "neuron"), "--to", "chrome-trace", str(tmp_path / "y.json"))
    assert rc == 2 and "pick one with --run" in err and not (tmp_path / "y.json").exists()
    f = tmp_path / "file"
    f.write_text("x")
    rc, _, err = run_cli(capsys, "export", str(NAIVE), "--to", "parquet", str(f))
    assert rc == 2 and "not a directory" in err
