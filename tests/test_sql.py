"""SQL over the trace (trntui/query): every table's rows and sums against an independent reading of the JSON on the
corpus traces, links against the chain pane's hops on a Neuron sample, ops against `summary --format json`, and
`trntui sql`'s output, errors and file sandbox."""

from __future__ import annotations

import collections
import gzip
import json
import math
from pathlib import Path

import pytest

pytest.importorskip("duckdb")

from trntui.analysis.chains import follow  # noqa: E402
from trntui.analysis.links import build_links  # noqa: E402
from trntui.model.profile import Tier  # noqa: E402
from trntui.query.database import Database  # noqa: E402
from trntui.session import load_profile  # noqa: E402

from .conftest import CORPUS, REPO, run_cli  # noqa: E402

TRACES = sorted(p.name for p in CORPUS.glob("*.json*"))
HARDWARE_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_sync", "Kernel", "Memcpy", "Memset", "mtia_ccp_events"}
NEURON = REPO / "sample_profiles" / "neuron"


def _json_events(path: Path) -> list[dict]:
    raw = gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()
    doc = json.loads(raw)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


@pytest.fixture(scope="module")
def dbs():
    out = {}
    yield lambda name: out.setdefault(name, Database.of([(name, load_profile(CORPUS / name))]))
    for db in out.values():
        db.close()


@pytest.mark.parametrize("name", TRACES)
def test_events_per_category_count_and_duration_equal_the_json(dbs, name: str) -> None:
    evs = _json_events(CORPUS / name)
    want: dict[str, list] = collections.defaultdict(lambda: [0, 0.0])
    for e in evs:
        if e.get("ph") == "X":
            w = want[e.get("cat", "")]
            w[0] += 1
            w[1] += float(e.get("dur", 0))
    got = {c: (n, s) for c, n, s in dbs(name).rows("SELECT cat, count(*), sum(dur_us) FROM events WHERE ph = 'X' GROUP BY cat")}
    assert set(got) == set(want)
    for cat, (n, s) in want.items():
        assert got[cat][0] == n, cat
        assert _close(got[cat][1], s), (cat, got[cat][1], s)
    instants = sum(1 for e in evs if e.get("ph") in ("i", "I"))
    assert dbs(name).rows("SELECT count(*) FROM events WHERE ph = 'i'")[0][0] == instants


@pytest.mark.parametrize("name", TRACES)
def test_ts_us_is_the_files_timestamp(dbs, name: str) -> None:
    """`ts_us` per event is the file's `ts` (to the ns the timeline keeps), `start_ns` the same instant on the
    timeline's clock."""
    evs = _json_events(CORPUS / name)
    want = sorted(float(e["ts"]) for e in evs if e.get("ph") in ("X", "i", "I"))
    got = [r[0] for r in dbs(name).rows("SELECT ts_us FROM events ORDER BY ts_us")]
    assert len(got) == len(want)
    assert all(abs(a - b) <= math.ulp(b) for a, b in zip(got, want))  # µs on the ns grid: the file's double
    assert sum(a == b for a, b in zip(got, want)) >= 0.99 * len(want)
    (span,) = dbs(name).rows("SELECT max(ts_us) - min(ts_us), (max(start_ns) - min(start_ns)) / 1000.0 FROM events")
    assert abs(span[0] - span[1]) < 1e-3 * max(1.0, 1e-9 * abs(want[-1]))


@pytest.mark.parametrize("name", TRACES)
def test_events_per_thread_and_flows_equal_the_json(dbs, name: str) -> None:
    evs = _json_events(CORPUS / name)
    per_thread = collections.Counter(
        (e["pid"], e["tid"]) for e in evs
        if e.get("ph") in ("X", "i", "I") and isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int)
    )
    got = dict(((p, t), n) for p, t, n in dbs(name).rows(
        "SELECT pid, tid, count(*) FROM events WHERE pid >= 0 AND tid >= 0 GROUP BY pid, tid"))
    assert got == {k: v for k, v in per_thread.items() if k[0] >= 0 and k[1] >= 0}
    # the lanes table counts the same events
    assert dbs(name).rows("SELECT sum(events) FROM lanes")[0][0] == dbs(name).rows("SELECT count(*) FROM events")[0][0]
    lane_counts = dict(dbs(name).rows("SELECT lane, events FROM lanes"))
    assert lane_counts == dict(dbs(name).rows("SELECT lane, count(*) FROM events GROUP BY lane")) | {
        k: 0 for k, v in lane_counts.items() if v == 0}
    flows = collections.Counter(e.get("ph") for e in evs if e.get("ph") in ("s", "f"))
    got_flows = dict(dbs(name).rows("SELECT role, count(*) FROM flows GROUP BY role"))
    assert got_flows.get("start", 0) == flows["s"] and got_flows.get("finish", 0) == flows["f"]


@pytest.mark.parametrize("name", TRACES)
def test_kernels_are_the_hardware_rows_of_the_json(dbs, name: str) -> None:
    evs = _json_events(CORPUS / name)
    hw = [e for e in evs if e.get("ph") == "X" and e.get("cat") in HARDWARE_CATS]
    ((n, total),) = dbs(name).rows("SELECT count(*), coalesce(sum(dur_us), 0) FROM kernels")
    assert n == len(hw) and _close(total, sum(float(e.get("dur", 0)) for e in hw))
    kern = [e for e in hw if e.get("cat") in ("kernel", "Kernel")]
    ((k, ktotal),) = dbs(name).rows("SELECT count(*), coalesce(sum(dur_us), 0) FROM kernels WHERE cat IN ('kernel', 'Kernel')")
    assert k == len(kern) and _close(ktotal, sum(float(e["dur"]) for e in kern))


@pytest.mark.parametrize("name", ["cuda_alexnet.json.gz", "cuda_ns_resolution_68k.json.gz", "rocm_mi250_train.json.gz"])
def test_kernel_links_follow_the_correlation_ids_of_the_json(dbs, name: str) -> None:
    """Every kernel's `runtime_id` is the runtime call with its `correlation` in the file (and the launch latency
    is the difference of their file timestamps)."""
    evs = _json_events(CORPUS / name)
    runtime_by_corr = {e["args"]["correlation"]: e for e in evs
                       if e.get("ph") == "X" and e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    kernels = [e for e in evs if e.get("ph") == "X" and e.get("cat") == "kernel"]
    rows = dbs(name).rows(
        "SELECT k.ts_us, k.name, r.name, r.ts_us, k.launch_latency_ns FROM kernels k "
        "JOIN events r ON r.id = k.runtime_id WHERE k.cat = 'kernel'")
    want = sorted((float(k["ts"]), k["name"], runtime_by_corr[k["args"]["correlation"]]["name"],
                   float(runtime_by_corr[k["args"]["correlation"]]["ts"]))
                  for k in kernels if k.get("args", {}).get("correlation") in runtime_by_corr)
    got = sorted(r[:4] for r in rows)
    assert len(got) == len(want) and len(want) > 0
    for g, w in zip(got, want):
        assert g == w
    assert all(abs(r[4] / 1000.0 - (r[0] - r[3])) < 2e-3 for r in rows)


def test_steps_and_step_column_follow_profiler_steps(tmp_path: Path) -> None:
    """`steps` lists the ProfilerStep#N scopes (as in the file), and an event's `step` is the step it starts in."""
    evs = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 100, "dur": 50},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 110, "dur": 10},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 1, "tid": 1, "ts": 200, "dur": 40},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 210, "dur": 10},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 300, "dur": 5},
    ]
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": evs}))
    with Database.of([("t", load_profile(trace))]) as db:
        assert db.rows("SELECT step, name, (end_ns - start_ns) / 1000 FROM steps ORDER BY step") == [
            (3, "ProfilerStep#3", 50), (4, "ProfilerStep#4", 40)]
        assert db.rows("SELECT name, ts_us, step, depth FROM events WHERE name LIKE 'aten%' ORDER BY ts_us") == [
            ("aten::mm", 110.0, 3, 1), ("aten::mm", 210.0, 4, 1), ("aten::add", 300.0, None, 0)]
        parent = db.rows("SELECT p.name FROM events e JOIN events p ON p.id = e.parent_id WHERE e.ts_us = 210")
        assert parent == [("ProfilerStep#4",)]
        assert db.rows("SELECT step, count(*) FROM events GROUP BY step ORDER BY step NULLS LAST") == [(3, 2), (4, 2), (None, 1)]


def test_args_are_the_files_args_as_json(dbs) -> None:
    name = "cuda_alexnet.json.gz"
    evs = [e for e in _json_events(CORPUS / name) if e.get("ph") == "X" and e.get("cat") == "kernel"]
    want = sorted((float(e["ts"]), e["args"].get("correlation"), e["args"].get("grid")) for e in evs)
    rows = dbs(name).rows("SELECT ts_us, args FROM events WHERE cat = 'kernel'")
    got = sorted((t, json.loads(a).get("correlation"), json.loads(a).get("grid")) for t, a in rows)
    assert [g[1:] for g in got] == [w[1:] for w in want]
    # DuckDB's JSON operators work on the column
    corr = dbs(name).rows("SELECT count(*) FROM events WHERE cat = 'kernel' AND (args->>'correlation') IS NOT NULL")
    assert corr[0][0] == len(evs)


def test_neuron_links_are_the_chain_panes_hops() -> None:
    """On a Neuron sample, `links` has one row per path the chain pane draws: op -> runtime execution ->
    hardware execution (each per-core copy of a merged hop its own row), and runtime calls that reach no
    hardware with an empty device."""
    profile = load_profile(NEURON / "naive")
    links = build_links(profile)
    want: set[tuple] = set()
    roots = [i for i in range(len(profile)) if links.frontend[i] and not links.predecessors(i)]
    for op in roots:
        chain = follow(profile, op)
        for branch, via in zip(chain.branches, chain.via):
            if via != op:
                continue  # a child op's launches: rows of that op
            runtime = None
            used = set()
            for hop in branch:
                if hop.tier == Tier.RUNTIME:
                    runtime = hop.events[0]
                elif hop.tier == Tier.HARDWARE:
                    used.add(runtime)
                    want.update((op, runtime, e) for e in hop.events)
            for hop in branch:
                if hop.tier == Tier.RUNTIME and hop.events[0] not in used:
                    want.add((op, hop.events[0], None))
    with Database.of([("naive", profile)]) as db:
        got = set(db.rows("SELECT op_id, runtime_id, device_id FROM links WHERE op_id IS NOT NULL"))
        assert got == want
        assert len([w for w in want if w[2] is not None]) >= 4  # LNC=2: two hardware rows per execution
        named = db.rows(
            "SELECT o.name, r.name, d.name, l.rule FROM links l JOIN events o ON o.id = l.op_id "
            "JOIN events r ON r.id = l.runtime_id JOIN events d ON d.id = l.device_id ORDER BY d.start_ns LIMIT 2")
        assert [n[1:] for n in named] == [("nrta_execute_schedule", "nc_exec_running", "flow")] * 2


def test_ops_equal_summary_json(dbs, capsys) -> None:
    for name in ("cuda_alexnet.json.gz", "mtia_inference.json.gz", "cpu_only.json.gz"):
        rc, out, err = run_cli(capsys, "summary", str(CORPUS / name), "--format", "json", "--limit", "-1")
        assert rc == 0, err
        want = json.loads(out)["rows"]
        cols = [c for c, _ in dbs(name).columns("ops")]
        got = [dict(zip(cols, r)) for r in dbs(name).rows("SELECT * FROM ops ORDER BY self_device_time_total DESC, row")]
        if not any(r["self_device_time_total"] for r in want):
            got = [dict(zip(cols, r)) for r in dbs(name).rows("SELECT * FROM ops ORDER BY self_cpu_time_total DESC, row")]
        assert len(got) == len(want) > 0
        for g, w in zip(got, want):
            assert g["key"] == w["name"]
            for f, v in w.items():
                if f != "name":
                    assert g[f] == v, (name, w["name"], f)


def test_several_runs_have_a_run_column(tmp_path: Path) -> None:
    for n in ("cuda_compare_base.json.gz", "cuda_compare_test.json.gz"):
        (tmp_path / n).write_bytes((CORPUS / n).read_bytes())
    from trntui.query.load import load_runs

    with Database.of(load_runs(tmp_path)) as db:
        runs = dict(db.rows("SELECT run, count(*) FROM events GROUP BY run"))
        assert sorted(runs.values()) == [33, 34] and len(runs) == 2
        for table in ("lanes", "links", "ops", "kernels", "flows", "steps", "counters", "time_per_tier"):
            assert "run" in [c for c, _ in db.columns(table)], table
        ops = dict(db.rows("SELECT run, count(*) FROM ops GROUP BY run"))
        assert set(ops) == set(runs)


def test_views_answer_on_a_real_trace(dbs) -> None:
    db = dbs("cuda_ns_resolution_68k.json.gz")
    tiers = {t: n for _, t, n, *_ in db.rows("SELECT * FROM time_per_tier")}
    assert tiers == dict(db.rows("SELECT tier, count(*) FROM events GROUP BY tier"))
    top = db.rows("SELECT step, name, total_us, rank FROM top_kernels_per_step ORDER BY step, rank")
    assert top and all(r[3] <= 10 for r in top)
    step = top[0][0]
    (want,) = db.rows(f"SELECT sum(dur_us) FROM kernels WHERE step = {step} AND name = ?".replace("?", "'" + top[0][1].replace("'", "''") + "'"))
    assert _close(top[0][2], want[0])
    lat = db.rows("SELECT launches, mean_us FROM launch_latency")
    assert sum(r[0] for r in lat) == db.rows("SELECT count(*) FROM kernels WHERE runtime_id IS NOT NULL")[0][0]
    gaps = db.rows("SELECT lane, gap_ns FROM idle_gaps ORDER BY gap_ns DESC LIMIT 1")
    assert gaps and gaps[0][1] > 0


# -- the command ---------------------------------------------------------------------------------------------
TRACE = str(CORPUS / "cuda_alexnet.json.gz")


def test_sql_prints_a_table_csv_json_and_markdown(capsys) -> None:
    q = "SELECT name, count(*) AS n FROM kernels GROUP BY name ORDER BY n DESC, name LIMIT 3"
    rc, out, err = run_cli(capsys, "sql", TRACE, q)
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[1].split() == ["name", "n"] and lines[-1] == "(3 rows)"
    rc, out, _ = run_cli(capsys, "sql", TRACE, q, "--format", "csv")
    assert out.splitlines()[0] == "name,n" and len(out.splitlines()) == 4
    rc, out, _ = run_cli(capsys, "sql", TRACE, q, "--format", "json")
    rows = json.loads(out)
    assert [r["n"] for r in rows] == sorted((r["n"] for r in rows), reverse=True) and set(rows[0]) == {"name", "n"}
    rc, out, _ = run_cli(capsys, "sql", TRACE, q, "--format", "markdown")
    assert out.startswith("| name | n |")


def test_sql_errors_are_one_line_exit_2(capsys) -> None:
    rc, out, err = run_cli(capsys, "sql", TRACE, "SELECT nope FROM events")
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("trntui: error: Binder Error") and "nope" in err
    rc, out, err = run_cli(capsys, "sql", TRACE, "SELEC 1")
    assert rc == 2 and err.count("\n") == 1 and "syntax error" in err
    rc, _, err = run_cli(capsys, "sql", TRACE, "SELECT 1", "--format", "parquet")
    assert rc == 2 and "--out" in err


def test_sql_refuses_files_without_allow_files(tmp_path: Path, capsys) -> None:
    secret = tmp_path / "secret.csv"
    secret.write_text("a,b\n1,2\n")
    target = tmp_path / "out.csv"
    queries = [
        f"SELECT * FROM read_csv('{secret}')",
        f"SELECT * FROM '{secret}'",
        f"COPY (SELECT 1 AS x) TO '{target}'",
        f"ATTACH '{tmp_path / 'x.db'}' AS x",
        "SET enable_external_access = true",
    ]
    for q in queries:
        rc, out, err = run_cli(capsys, "sql", TRACE, q)
        assert rc == 2, q
        assert err.count("\n") == 1, err
    assert not target.exists() and not (tmp_path / "x.db").exists()
    rc, out, err = run_cli(capsys, "sql", TRACE, f"SELECT sum(b) AS s FROM read_csv('{secret}')", "--allow-files", "--format", "csv")
    assert rc == 0, err
    assert out.splitlines() == ["s", "2"]
    rc, out, err = run_cli(capsys, "sql", TRACE, f"COPY (SELECT count(*) AS n FROM events) TO '{target}'", "--allow-files")
    assert rc == 0, err
    assert target.read_text().splitlines() == ["n", "870"]


def test_sql_out_writes_every_row(tmp_path: Path, capsys) -> None:
    out_csv = tmp_path / "events.csv"
    rc, out, err = run_cli(capsys, "sql", str(CORPUS / "cuda_ns_resolution_68k.json.gz"),
                           "SELECT id, name, dur_ns FROM events ORDER BY id", "--format", "csv", "--out", str(out_csv))
    assert rc == 0, err and out == ""
    lines = out_csv.read_text().splitlines()
    assert len(lines) == 45_422 + 1 and lines[1].startswith("0,")
    pq = pytest.importorskip("pyarrow.parquet")
    out_pq = tmp_path / "k.parquet"
    rc, _, err = run_cli(capsys, "sql", TRACE, "SELECT * FROM kernels", "--format", "parquet", "--out", str(out_pq))
    assert rc == 0, err
    t = pq.read_table(out_pq)
    assert t.num_rows == 139 and "launch_latency_ns" in t.column_names


def test_sql_reads_dot_commands_and_queries_from_stdin(capsys, monkeypatch) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(".tables\n.schema steps\n"))
    rc, out, err = run_cli(capsys, "sql", TRACE)
    assert rc == 0, err
    first, second = out.splitlines()[:2]
    assert first.split()[:8] == ["events", "lanes", "flows", "links", "steps", "ops", "kernels", "counters"]
    assert "top_kernels_per_step" in first
    assert second.startswith("steps(step BIGINT, name VARCHAR, start_ns BIGINT")
    monkeypatch.setattr("sys.stdin", io.StringIO("SELECT count(*) AS n FROM events"))
    rc, out, _ = run_cli(capsys, "sql", TRACE, "--format", "csv")
    assert out.splitlines() == ["n", "870"]


def test_neuron_device_tables_are_queryable(capsys) -> None:
    path = NEURON / "device" / "naive"
    rc, out, err = run_cli(capsys, "sql", str(path), "SELECT count(*) AS n FROM instructions", "--format", "csv")
    assert rc == 0, err
    from trntui.loaders.neuron_device import find_device_profiles, load_device

    want = sum(len(load_device(r.path, r.identity).instructions) for r in find_device_profiles(path))
    assert out.splitlines() == ["n", str(want)] and want > 0


def test_summary_and_a_plain_import_never_load_duckdb() -> None:
    import subprocess
    import sys

    code = (
        "import sys, io, contextlib\n"
        "import trntui\n"
        "from trntui.cli import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()): rc = main(['summary', {TRACE!r}])\n"
        "print(rc, 'duckdb' in sys.modules, 'trntui.query.database' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0", "False", "False"]


def test_registering_a_run_and_querying_events_lanes_steps_does_not_import_pandas() -> None:
    """Registering is meant to cost what wrapping the columns costs (bench/sql.py): `pa.array` on a Python list or
    a numpy array imports pandas (about 0.3 s, most of the registration's time on the 2M-event trace), so the
    base table, lanes and steps are built from buffers. Checked in a fresh process, where nothing else has
    imported pandas yet."""
    import subprocess
    import sys

    code = (
        "import sys, trntui\n"
        f"run = trntui.load({str(CORPUS / 'cuda_ns_resolution_68k.json.gz')!r}, cache=False)\n"
        "assert 'pandas' not in sys.modules, 'the load imported pandas'\n"
        "db = run.database()\n"
        "n = db.rows('SELECT count(*) FROM events')[0][0]\n"
        "lanes = db.rows('SELECT count(*), sum(events) FROM lanes')[0]\n"
        "steps = db.rows('SELECT count(*), min(start_ns) FROM steps')[0]\n"
        "tids = db.rows('SELECT count(*) FROM lanes WHERE tid IS NULL')[0][0]\n"
        "print(n, lanes[0], lanes[1], steps[0], tids, 'pandas' in sys.modules)\n"
        "db.close()\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    n, lanes, lane_events, steps, _null_tids, pandas = p.stdout.split()
    assert int(n) == int(lane_events) > 0 and int(lanes) > 0 and int(steps) > 0
    assert pandas == "False"


def test_docs_show_each_views_sql_as_it_is():
    """docs/sql.md prints each built-in view's SQL; it must be the SQL the database runs (the idle_gaps order once
    changed in trntui/query/views.py only), so a reader who copies it gets the same rows."""
    import re
    from pathlib import Path

    from trntui.query.views import VIEWS

    doc = (Path(__file__).resolve().parents[1] / "docs" / "sql.md").read_text(encoding="utf-8")
    blocks = dict(re.findall(r"```sql\nCREATE VIEW (\w+) AS\n(.*?);\n```", doc, re.S))
    assert set(blocks) == set(VIEWS)
    for name, view in VIEWS.items():
        assert blocks[name].split() == view.sql.split(), f"docs/sql.md's {name} is not the SQL trntui runs"
