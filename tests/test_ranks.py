"""`trntui ranks` on a generated 16-rank job (a real corpus rank replicated, rank 5 slowed 1.3x): the straggler
is found, the collectives show who the others wait for, and every engine gives the same answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.rank_job import make_job

SLOW = 5


@pytest.fixture(scope="module")
def job16(corpus_dir: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("job16")
    make_job(corpus_dir, out, ranks=16, slow_rank=SLOW, slow=1.3)
    return out


@pytest.fixture(scope="module")
def local_doc(job16: Path) -> dict:
    """`trntui ranks --format json` of the job on the local pool (2 workers), computed once for the module."""
    import contextlib
    import io

    from trntui.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["ranks", "--format", "json", "--no-cache", "--jobs", "2", str(job16)]) == 0
    return json.loads(out.getvalue())


def ranks_json(capsys, *argv: str) -> dict:
    rc, out, err = run_cli(capsys, "ranks", "--format", "json", "--no-cache", *argv)
    assert rc == 0, err
    return json.loads(out)


def results(doc: dict) -> dict:
    """The document without where each rank was computed (worker process, its memory, seconds, engine)."""
    doc = json.loads(json.dumps(doc))
    doc.pop("engine")
    for r in doc["ranks"]:
        r.pop("ran_on")
    return doc


@pytest.mark.cluster  # worker processes or a Dask cluster
def test_straggler_is_found(local_doc: dict) -> None:
    doc = local_doc
    assert [r["rank"] for r in doc["ranks"]] == list(range(16))
    assert doc["stragglers"] == [str(SLOW)]
    slow = doc["ranks"][SLOW]
    assert slow["straggler"] and all(not r["straggler"] for r in doc["ranks"] if r["rank"] != SLOW)
    # synchronised by its collectives, the job's step times come out about equal: the straggler is the rank
    # that does not wait (its working time stands out) and that every other rank waits for
    assert any("working time" in why for why in slow["reasons"])
    assert slow["wait_us"] == 0 and min(r["wait_us"] for r in doc["ranks"] if r["rank"] != SLOW) > 0
    calls = doc["collectives"]["calls"]
    assert doc["collectives"]["level"] == "device" and len(calls) == 10
    assert all(c["last_rank"] == str(SLOW) for c in calls if c["spread_us"] > 1)
    assert slow["last_arrivals"] == sum(1 for c in calls if c["last_rank"])
    assert doc["rule"]["k"] == 3.0 and "MAD" in doc["rule"]["text"]


@pytest.mark.cluster  # worker processes or a Dask cluster
def test_table_shows_the_rule_and_the_straggler(job16: Path, capsys) -> None:
    rc, out, err = run_cli(capsys, "ranks", str(job16), "--jobs", "2")  # (summaries cached for the next call)
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"{job16.name}: 16 ranks · 2 steps (551-552)")
    head = next(ln for ln in lines if ln.startswith("rank "))
    for col in ("step ms", "vs median", "step 551", "step 552", "compute", "comm", "overlap", "idle", "wait", "top ops"):
        assert col in head
    row5 = next(ln for ln in lines if ln.lstrip().startswith(f"{SLOW} *"))
    assert "torch::autograd::CppNode" in row5  # the rank's top op by self device time
    assert f"straggler: rank {SLOW} — " in out
    assert "rule: straggler: mean step time or mean working time" in out and "1.4826 × MAD" in out
    assert f"rank {SLOW} arrived last at" in out
    rc, _, _ = run_cli(capsys, "ranks", str(job16), "--jobs", "2", "--fail-on-stragglers")
    assert rc == 1


def ranks_json_process(*argv: str) -> dict:
    """`trntui ranks --format json` in a process of its own: Dask leaves its IO-loop threads in a process that
    used it, and a process with threads never forks the two-process decode (tests that follow would not run it)."""
    rc, out, err = trntui_process("ranks", "--format", "json", "--no-cache", *argv)
    assert rc == 0, err
    return json.loads(out)


def trntui_process(*argv: str, timeout: float = 600) -> tuple[int, str, str]:
    proc = trntui_started(*argv)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err


def trntui_started(*argv: str) -> "subprocess.Popen[str]":
    """`trntui ARGV` started in a process of its own (stdout and stderr piped, as text)."""
    import os
    import subprocess
    import sys

    from tests.rank_job import REPO

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    return subprocess.Popen([sys.executable, "-m", "trntui.cli", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


@pytest.mark.cluster  # worker processes or a Dask cluster
def test_dask_local_cluster_gives_the_same_results_as_the_local_pool(job16: Path, local_doc: dict) -> None:
    dask = ranks_json_process(str(job16), "--engine", "dask", "--jobs", "2")
    assert dask["engine"].startswith("dask LocalCluster, 2 workers")
    assert local_doc["engine"] == "local, 2 worker processes"
    assert results(dask) == results(local_doc)
    workers = {r["ran_on"]["worker"] for r in dask["ranks"]}
    assert len(workers) == 2 and not workers & {r["ran_on"]["worker"] for r in local_doc["ranks"]}


@pytest.mark.cluster  # worker processes or a Dask cluster
def test_one_job_runs_in_this_process_with_the_same_results(job16: Path, local_doc: dict, capsys) -> None:
    import os

    one = ranks_json(capsys, str(job16), "--jobs", "1")
    assert one["engine"] == "local, in this process"
    assert results(one) == results(local_doc)
    assert {r["ran_on"]["worker"].rsplit(":", 1)[1] for r in one["ranks"]} == {str(os.getpid())}
    assert all(r["ran_on"]["peak_rss_bytes"] > 0 for r in one["ranks"])


def test_no_sync_job_straggler_by_step_time(corpus_dir: Path, tmp_path: Path, capsys) -> None:
    make_job(corpus_dir, tmp_path, ranks=6, slow_rank=2, slow=1.25, sync=False)
    doc = ranks_json(capsys, str(tmp_path), "--jobs", "1")
    assert doc["stragglers"] == ["2"]
    assert any(why.startswith("step time") for why in doc["ranks"][2]["reasons"])
    assert doc["ranks"][2]["vs_median_pct"] > 20


def test_parquet_tables(job16: Path, tmp_path: Path, capsys) -> None:
    import pyarrow.parquet as pq

    rc, out, err = run_cli(capsys, "ranks", str(job16), "--format", "parquet", "--out", str(tmp_path / "pq"))
    assert rc == 0, err
    assert "wrote 5 tables for 16 ranks" in out
    ranks = pq.read_table(tmp_path / "pq" / "ranks.parquet").to_pandas()
    assert len(ranks) == 16 and ranks.loc[ranks.straggler, "rank"].tolist() == [SLOW]
    steps = pq.read_table(tmp_path / "pq" / "rank_steps.parquet").to_pandas()
    assert len(steps) == 32 and sorted(set(steps.step)) == ["551", "552"]
    waits = pq.read_table(tmp_path / "pq" / "collective_waits.parquet").to_pandas()
    assert len(waits) == 16 * 10
    assert waits.groupby("rank").wait_us.sum().idxmin() == SLOW
    assert (pq.read_table(tmp_path / "pq" / "rank_top_ops.parquet").num_rows) == 16 * 5
    rc, _, err = run_cli(capsys, "ranks", str(job16), "--format", "parquet")
    assert rc == 2 and err.count("\n") == 1 and "--out" in err


@pytest.mark.cluster  # worker processes or a Dask cluster
def test_json_and_csv_fields_in_a_fixed_order(job16: Path, local_doc: dict, capsys) -> None:
    """The documents' fields, pinned (scripts read them by position or diff them): JSON's top level and rank
    records, the CSV header (a flat copy: lists joined, one column per step) and its values, which are JSON's."""
    import csv
    import io

    assert list(local_doc) == ["job", "grouping", "engine", "steps", "median_rank", "ranks", "stragglers", "rule",
                               "collectives", "failures"]
    assert list(local_doc["ranks"][0]) == [
        "rank", "name", "steps", "step_mean_us", "step_us", "computation_us", "communication_us", "overlap_us",
        "idle_us", "wait_us", "working_us", "vs_median_us", "vs_median_pct", "last_arrivals", "straggler", "reasons",
        "top_ops", "top_ops_metric", "notes", "ran_on"]
    rc, out, err = run_cli(capsys, "ranks", "--format", "csv", "--jobs", "1", str(job16))
    assert rc == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == [
        "rank", "name", "steps", "step_mean_us", "vs_median_us", "vs_median_pct", "computation_us",
        "communication_us", "overlap_us", "idle_us", "wait_us", "working_us", "last_arrivals", "straggler", "reasons",
        "top_ops_metric", "top_ops", "step_551_us", "step_552_us"]
    for row, rec in zip(rows, local_doc["ranks"]):
        for key in ("rank", "name", "steps", "step_mean_us", "vs_median_us", "vs_median_pct", "computation_us",
                    "communication_us", "overlap_us", "idle_us", "wait_us", "working_us", "last_arrivals",
                    "straggler", "top_ops_metric"):
            assert row[key] == ("" if rec[key] is None else str(rec[key])), (key, row[key], rec[key])
        assert row["reasons"] == "; ".join(rec["reasons"])
        assert row["top_ops"] == "; ".join(f"{o['name']}={o['us']:.3f}" for o in rec["top_ops"])
        assert [row["step_551_us"], row["step_552_us"]] == [str(t) for t in rec["step_us"]]


@pytest.mark.cluster  # worker processes or a Dask cluster
def test_summaries_are_cached_per_rank(job16: Path, local_doc: dict, capsys) -> None:
    from trntui import cache

    rc, out, err = run_cli(capsys, "ranks", "--format", "json", str(job16), "--jobs", "2")  # computes, writes
    assert rc == 0
    entries = list((cache.cache_dir() / "rank-summaries").glob("*.json"))
    assert len(entries) >= 16
    rc, out2, err = run_cli(capsys, "ranks", "--format", "json", str(job16), "--jobs", "1")  # reads them
    second = json.loads(out2)
    assert results(second) == results(local_doc)
    assert {r["ran_on"]["worker"] for r in second["ranks"]} == {"cache"}


def test_a_broken_rank_is_reported_and_the_others_compared(corpus_dir: Path, tmp_path: Path, capsys) -> None:
    paths = make_job(corpus_dir, tmp_path, ranks=4, slow_rank=1)
    data = paths[3].read_bytes()
    paths[3].write_bytes(data[: len(data) // 3])  # a rank killed while writing: a truncated gzip stream
    paths[2].write_bytes(b"garbage")  # and one that wrote nothing readable
    rc, out, err = run_cli(capsys, "info", str(tmp_path))
    assert "job " in out and "4 ranks" in out and "rank(s) 2 by file name only" in out
    rc, out, err = run_cli(capsys, "ranks", "--no-cache", str(tmp_path))
    assert rc == 0 and err == ""
    assert out.splitlines()[0].startswith(f"{tmp_path.name}: 3 ranks read of 4")
    assert f"not read: rank2: {paths[2]}: not a chrome trace" in out
    assert "note: rank 3: " in out and "truncated" in out
    rc, out, err = run_cli(capsys, "ranks", "--no-cache", "--format", "json", str(tmp_path))
    doc = json.loads(out)
    assert [r["rank"] for r in doc["ranks"]] == [0, 1, 3] and doc["failures"][0]["rank"] == 2
    assert err.count("trntui: error: rank2: ") == 1


def test_no_job_is_one_line_that_says_what_to_do(corpus_dir: Path, capsys) -> None:
    rc, out, err = run_cli(capsys, "ranks", str(corpus_dir))
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "no job with several ranks" in err and "--all" in err


@pytest.mark.parametrize("argv, says", [
    (("--threshold", "-1"), "--threshold must be a positive number (got -1)"),
    (("--threshold", "nan"), "argument --threshold: 'nan' is not a finite number"),  # every type=float (cli.py)
    (("--top", "-1"), "--top must be 0 or more (got -1)"),
    (("--jobs", "0"), "--jobs must be at least 1 (got 0)"),
    (("--steps", "x"), "bad --steps 'x'"),
    (("--engine", "dask", "--scheduler", "foo"), "bad --scheduler 'foo': "),
    (("--span", "3"), "--span 3: the ranks have one span each"),
    (("--job", "nope"), "no job named 'nope' (jobs: job16"),
])
def test_bad_options_are_one_line_and_exit_2(job16: Path, capsys, argv: tuple[str, ...], says: str) -> None:
    rc, out, err = run_cli(capsys, "ranks", *argv, str(job16))
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("trntui: error: ") and says in err, err


def test_the_memory_budget_applies_per_worker(job16: Path, capsys, monkeypatch) -> None:
    """A set --memory-budget is each worker's (a rank over it is refused, the others too); on "auto" the local
    workers split this machine's budget, and a remote cluster's workers each use their own."""
    import trntui.memory
    from trntui.engine import EngineOptions
    from trntui.per_rank import worker_budget
    from trntui.session import LoadOptions

    rc, out, err = run_cli(capsys, "ranks", "--no-cache", "--jobs", "2", "--memory-budget", "2MB", str(job16))
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "no rank could be read" in err and "over the memory budget of 2 MiB" in err
    monkeypatch.setattr(trntui.memory, "auto_budget", lambda: 1 << 30)
    auto = LoadOptions(memory_budget="auto")
    assert worker_budget(auto, EngineOptions("local", 2), 16) == (1 << 29, 2)
    assert worker_budget(auto, EngineOptions("local", 4), 3) == ((1 << 30) // 3, 3)  # never more workers than ranks
    assert worker_budget(auto, EngineOptions("dask", 2), 16) == (1 << 29, 2)  # a LocalCluster shares this machine
    assert worker_budget(auto, EngineOptions("dask", 2, "tcp://10.0.0.5:8786"), 16) == (None, 1)
    assert worker_budget(LoadOptions(memory_budget=300 << 20), EngineOptions("local", 2), 16) == (300 << 20, 2)


@pytest.mark.cluster  # worker processes or a Dask cluster
def test_engine_never_runs_more_than_jobs_items_at_once(tmp_path: Path) -> None:
    from trntui.engine import EngineOptions, map_tasks

    items = [(str(tmp_path), k) for k in range(6)]
    got = map_tasks(_concurrency_probe, items, EngineOptions("local", 2))
    assert [g[0] for g in got] == list(range(6))
    assert max(g[1] for g in got) == 2  # two at a time, never three


def _concurrency_probe(item: tuple[str, int]) -> tuple[int, int]:
    """Count the probes running at this moment (a lock-protected counter file); return (k, that count)."""
    import fcntl
    import time

    root, k = item
    counter = Path(root) / "running"

    def change(delta: int) -> int:
        with open(Path(root) / "lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            n = int(counter.read_text() or 0) if counter.exists() else 0
            n += delta
            counter.write_text(str(n))
            return n

    now = change(+1)
    peak = now
    for _ in range(20):  # stay a while, and see whether others join
        time.sleep(0.02)
        peak = max(peak, int(counter.read_text() or 0))
    change(-1)
    return k, peak


@pytest.mark.cluster  # worker processes or a Dask cluster
def test_an_existing_dask_scheduler(corpus_dir: Path, tmp_path: Path, capsys) -> None:
    """`--scheduler ADDRESS`: the work goes to a running cluster's workers, started here as the README says
    (`dask scheduler`, `dask worker ADDRESS --nthreads 1`), each a process of its own."""
    import os
    import subprocess
    import sys
    import time

    make_job(corpus_dir, tmp_path / "job", ranks=4, slow_rank=2)
    # a scheduler nobody answers at: Dask retries for the 5 s timeout; that wait runs beside the rest of the test
    unreachable = trntui_started("ranks", str(tmp_path / "job"), "--engine", "dask", "--scheduler", "tcp://127.0.0.1:9")
    local = ranks_json(capsys, str(tmp_path / "job"), "--jobs", "1")
    info = tmp_path / "scheduler.json"
    common = ["--no-dashboard"]
    started: list[subprocess.Popen] = []
    try:
        started.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
             "--scheduler-file", str(info), *common], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for _ in range(600):
            if info.exists() and info.stat().st_size:
                break
            time.sleep(0.1)
        address = json.loads(info.read_text())["address"]
        for _ in range(2):
            started.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1", "--no-nanny",
                 "--host", "127.0.0.1", *common], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))))
        remote = ranks_json_process(str(tmp_path / "job"), "--engine", "dask", "--scheduler", address)
        out, err = unreachable.communicate(timeout=600)
    finally:
        if unreachable.poll() is None:
            unreachable.kill()
            unreachable.communicate()
        # the workers first, while their scheduler still answers: a worker stopped together with its scheduler
        # waits ~30 s to say goodbye to it (the test spent that long in this block)
        for group in (started[1:], started[:1]):
            for p in group:
                p.terminate()
            for p in group:
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
    assert remote["engine"] == f"dask scheduler {address}"
    assert results(remote) == results(local)
    workers = {r["ran_on"]["worker"].rsplit(":", 1)[1] for r in remote["ranks"]}
    assert workers and workers <= {str(p.pid) for p in started[1:]}  # the cluster's worker processes did the work
    rc = unreachable.returncode
    assert rc == 2 and err.count("\n") == 1 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in err
    rc, out, err = run_cli(capsys, "ranks", str(tmp_path / "job"), "--scheduler", "tcp://127.0.0.1:9")
    assert rc == 2 and "--scheduler needs --engine dask" in err


def test_a_rank_cut_while_writing_is_not_refused_for_its_gzip_trailer(corpus_dir: Path, tmp_path: Path) -> None:
    """A gzip stream cut short ends in arbitrary bytes where its size trailer should be: no budget refusal for a
    4 GiB "uncompressed size" of a 60 kB file (trntui/memory.py json_size)."""
    from trntui.memory import GZIP_GUESS_RATIO, json_size
    from trntui.session import LoadOptions, find_runs, load_run

    (path,) = make_job(corpus_dir, tmp_path, ranks=1, slow_rank=-1)
    data = path.read_bytes()[: 60_000]
    for tail in (b"\x01\x00\x00\x00", b"\xff\xff\xff\xff"):
        path.write_bytes(data[:-4] + tail)
        assert json_size(path) == len(data) * GZIP_GUESS_RATIO
        profile = load_run(find_runs(path)[0], LoadOptions(memory_budget=64 << 20, cache=False))
        assert len(profile) > 0 and any("truncated" in n for n in profile.meta.notes)


_SCRIPT = """\
import sys
from trntui.engine import EngineOptions, map_tasks
from trntui.per_rank import summarize_ranks
from trntui.session import find_runs

def compare(engine):
    report = summarize_ranks(find_runs(sys.argv[1]), engine=engine)
    print("compared", len(report.rows))

{body}
"""


@pytest.mark.cluster  # worker processes or a Dask cluster
def test_a_script_without_a_main_guard_is_told_why_not_out_of_memory(corpus_dir: Path, tmp_path: Path) -> None:
    """Worker processes (forkserver, a LocalCluster's nannies) import the main script again: one that starts them
    from its top level would run again in each worker, and the workers die. The error names the script and the
    missing `if __name__ == "__main__":` guard (it said "a worker process died ... (out of memory?"), before any
    worker starts; the same script with a guard runs (here a variant: inside `try`, with `and`; `python -m
    trntui.cli` runs the plain one in the Dask test above), and jobs=1 needs no guard."""
    import os
    import subprocess
    import sys

    from tests.rank_job import REPO

    make_job(corpus_dir, tmp_path / "job", ranks=2, slow_rank=1)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))

    def script(name: str, body: str) -> tuple[int, str, str]:
        path = tmp_path / f"{name}.py"
        path.write_text(_SCRIPT.format(body=body))
        proc = subprocess.run([sys.executable, str(path), str(tmp_path / "job")], capture_output=True, text=True,
                              env=env, timeout=300, cwd=tmp_path)
        return proc.returncode, proc.stdout, proc.stderr

    for name, body in (("top_level", "compare(EngineOptions(jobs=2))"),
                       ("in_a_function", "def main():\n    compare(EngineOptions(jobs=2))\n\nmain()"),
                       ("dask", "compare(EngineOptions('dask', jobs=2))")):
        rc, out, err = script(name, body)
        assert rc != 0 and "compared" not in out, (name, out, err)
        last = err.strip().splitlines()[-1]
        assert f'{tmp_path / name}.py starts worker processes from its top level, not under `if __name__ == "__main__":`' in last, (name, err)
        assert "out of memory" not in err and "Nanny failed" not in err and "bootstrapping phase" not in err, (name, err)
    rc, out, err = script("guarded", "try:\n    if __name__ == '__main__' and len(sys.argv) > 1:\n"
                                     "        compare(EngineOptions(jobs=2))\nexcept KeyboardInterrupt:\n    pass")
    assert rc == 0 and out == "compared 2\n", err
    rc, out, err = script("one_job", "compare(EngineOptions(jobs=1))")
    assert rc == 0 and out == "compared 2\n", err
