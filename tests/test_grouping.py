"""What a run is (trntui/loaders/grouping.py), as every command sees it: a folder of unrelated real traces is one
run per trace, a TensorBoard handler directory is one worker with spans, a directory of ranks is one job, and
`--merge` reads everything as one run whose table sums the files'."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.rank_job import make_job
from trntui.session import find_runs, load_run
from trntui.loaders.grouping import groups_of

TRACE_NAMES = (".json", ".json.gz")


def _corpus_traces(corpus_dir: Path) -> list[Path]:
    return sorted(p for p in corpus_dir.iterdir() if p.name.endswith(TRACE_NAMES))


def _shifted_copy(src: Path, dst: Path, shift_us: float, **top) -> None:
    """`src` rewritten to `dst` with every timestamp `shift_us` later (and extra top-level keys)."""
    opener = gzip.open if src.name.endswith(".gz") else open
    with opener(src, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    for e in doc["traceEvents"]:
        if isinstance(e.get("ts"), (int, float)) and e.get("ph") != "M":
            e["ts"] += shift_us
    doc.update(top)
    with gzip.open(dst, "wt", encoding="utf-8") as f:
        json.dump(doc, f)


def test_folder_of_corpus_traces_is_one_run_per_trace(corpus_dir: Path, capsys) -> None:
    traces = _corpus_traces(corpus_dir)
    runs = find_runs(corpus_dir)
    assert sorted(f for r in runs for f in r.framework_traces) == traces
    assert all(len(r.framework_traces) == 1 for r in runs) and len({r.name for r in runs}) == len(traces)
    rc, out, err = run_cli(capsys, "info", str(corpus_dir))
    assert rc == 0
    assert out.splitlines()[0].startswith(f"{corpus_dir}: {len(traces)} runs: one per trace file")
    for p in traces:
        assert f"  {p.name}: {p.name} (" in out
    # five files say "rank 0" or "rank 1" of no job at all: a lone rank is no job
    assert "rank 34 of a 300-rank job, but no other rank of that job is here" in out
    # each run has its own span and its own device label (MTIA rows never under "Self CUDA")
    for run in runs:
        profile = load_run(run)
        a, b = profile.span
        assert b - a < 3600 * 10**9, run.name
    rc, out, err = run_cli(capsys, "summary", "--limit", "3", str(corpus_dir))
    assert rc == 0 and err == ""
    mtia = out[out.index("== mtia_inference.json.gz ==") :].split("\n== ")[0]
    assert "Self MTIA" in mtia and "Self CUDA" not in mtia
    assert out.count("Self CPU time total:") == len(traces)


def test_tensorboard_handler_directory_is_one_worker_with_two_spans(corpus_dir: Path, tmp_path: Path, capsys) -> None:
    src = corpus_dir / "rocm_mi250_train.json.gz"
    first, second = "1735632360123456789", "1735632375123456789"
    _shifted_copy(src, tmp_path / f"node7_4242.{first}.pt.trace.json.gz", 0.0)
    _shifted_copy(src, tmp_path / f"node7_4242.{second}.pt.trace.json.gz", 15e6)
    groups = groups_of(find_runs(tmp_path))
    assert [(g.kind, g.name) for g in groups] == [("worker", "node7_4242")]
    runs = groups[0].runs
    assert [(r.name, r.span) for r in runs] == [("node7_4242 span 1", 1), ("node7_4242 span 2", 2)]
    assert runs[0].framework_traces[0].name.split(".")[1] == first
    rc, out, err = run_cli(capsys, "info", str(tmp_path))
    assert "worker node7_4242: 2 spans — tensorboard_trace_handler names node7_4242.<span>.pt.trace.json" in out
    rc, out, err = run_cli(capsys, "summary", "--limit", "2", str(tmp_path))
    assert rc == 0 and "== node7_4242 span 1 ==" in out and "== node7_4242 span 2 ==" in out
    spans = [load_run(r).span for r in runs]
    assert spans[1][0] - spans[0][0] == pytest.approx(15e9, abs=1e3)  # each span keeps its own time


def test_one_process_traces_at_different_times_are_spans(corpus_dir: Path, tmp_path: Path) -> None:
    """Schedule cycles written under names of the user's choosing: same host and pid, later start."""
    src = corpus_dir / "cuda_simple_add.json.gz"
    _shifted_copy(src, tmp_path / "cycle_a.json.gz", 0.0)
    _shifted_copy(src, tmp_path / "cycle_b.json.gz", 2e6)
    groups = groups_of(find_runs(tmp_path))
    assert [g.kind for g in groups] == ["worker"] and "one process (pid 563677" in groups[0].reason
    assert [r.span for r in groups[0].runs] == [1, 2]


def test_directory_of_ranks_is_one_job(corpus_dir: Path, tmp_path: Path, capsys) -> None:
    make_job(corpus_dir, tmp_path / "job", ranks=4, slow_rank=3)
    groups = groups_of(find_runs(tmp_path / "job"))
    assert [(g.kind, g.name, g.ranks) for g in groups] == [("job", "job", list(range(4)))]
    assert groups[0].reason.startswith("distributedInfo: backend nccl, world size 4, ranks 0-3")
    assert [r.name for r in find_runs(tmp_path / "job")] == [f"rank{k}" for k in range(4)]
    rc, out, err = run_cli(capsys, "info", str(tmp_path / "job"))
    assert out.splitlines()[1].startswith("  job job: 4 ranks — distributedInfo: backend nccl, world size 4")


def test_two_copies_of_a_job_side_by_side_are_two_jobs(corpus_dir: Path, tmp_path: Path, capsys) -> None:
    """Two runs of the same training (same backend, world size and ranks, recorded within the hour) in sibling
    directories, one flat and one with a directory per rank: two jobs, not 6 runs of their own."""
    make_job(corpus_dir, tmp_path / "exp1", ranks=3, slow_rank=1)
    for k, p in enumerate(make_job(corpus_dir, tmp_path / "exp2", ranks=3, slow_rank=2)):
        (tmp_path / "exp2" / f"rank{k}").mkdir()
        p.rename(tmp_path / "exp2" / f"rank{k}" / "trace.json.gz")
    groups = groups_of(find_runs(tmp_path))
    assert [(g.kind, g.name, g.ranks) for g in groups] == [("job", "exp1", [0, 1, 2]), ("job", "exp2", [0, 1, 2])]
    rc, out, err = run_cli(capsys, "ranks", str(tmp_path))
    assert rc == 2 and out == "" and err.count("\n") == 1 and "holds 2 jobs (exp1, exp2); pick one with --job" in err
    rc, out, err = run_cli(capsys, "ranks", "--no-cache", "--jobs", "1", "--job", "exp2", str(tmp_path))
    assert rc == 0 and out.startswith("exp2: 3 ranks") and "straggler: rank 2 — " in out


def test_rank_numbers_in_names_make_a_job(corpus_dir: Path, tmp_path: Path) -> None:
    """No distributedInfo (an AMD trace): `rank-N` in the file names says which rank each one is."""
    for k in range(3):
        _shifted_copy(corpus_dir / "rocm_mi250_train.json.gz", tmp_path / f"rank-{k}.trace.json.gz", k * 10.0)
    groups = groups_of(find_runs(tmp_path))
    assert [(g.kind, g.ranks) for g in groups] == [("job", [0, 1, 2])]
    assert "rank numbers in the names (rank-*.trace.json.gz)" in groups[0].reason


def test_two_files_claiming_the_same_rank_stay_separate(corpus_dir: Path, tmp_path: Path) -> None:
    src = corpus_dir / "cuda_simple_add.json.gz"
    info = {"distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2}}
    _shifted_copy(src, tmp_path / "a.json.gz", 0.0, **info)
    _shifted_copy(src, tmp_path / "b.json.gz", 0.0, **info)
    groups = groups_of(find_runs(tmp_path))
    assert [g.kind for g in groups] == ["single", "single"]


def test_neuron_sessions_are_one_job(tmp_path: Path) -> None:
    from tests.test_neuron_discover import INST, _two_ranks

    out = _two_ranks(tmp_path)
    groups = groups_of(find_runs(out))
    assert [(g.kind, g.ranks) for g in groups] == [("job", [0, 1])]
    assert groups[0].reason.startswith("Neuron capture: one <instance>_pid_<pid> session directory per process")
    assert [r.name for r in groups[0].runs] == [f"rank0 ({INST}_pid_100)", f"rank1 ({INST}_pid_200)"]


def test_merge_sums(corpus_dir: Path, tmp_path: Path, capsys) -> None:
    for name in ("cuda_compare_base.json.gz", "cuda_compare_test.json.gz"):
        shutil.copy(corpus_dir / name, tmp_path / name)
    rc, out, err = run_cli(capsys, "summary", "--format", "json", "--limit", "-1", str(tmp_path))
    assert rc == 0
    per_file = json.loads(out)["runs"]
    assert len(per_file) == 2
    rc, out, err = run_cli(capsys, "summary", "--format", "json", "--limit", "-1", "--merge", str(tmp_path))
    assert rc == 0
    merged = json.loads(out)
    rows = {(r["name"], r["device_type"]): r for r in merged["rows"]}
    want: dict[tuple, dict[str, float]] = {}
    for doc in per_file:
        for r in doc["rows"]:
            acc = want.setdefault((r["name"], r["device_type"]), {"count": 0, "self_cpu_time_total": 0.0,
                                                                    "self_device_time_total": 0.0})
            for key in acc:
                acc[key] += r[key]
    assert set(rows) == set(want)
    for key, acc in want.items():
        assert rows[key]["count"] == acc["count"], key
        assert rows[key]["self_cpu_time_total"] == pytest.approx(acc["self_cpu_time_total"], abs=2e-3), key
        assert rows[key]["self_device_time_total"] == pytest.approx(acc["self_device_time_total"], abs=2e-3), key
    rc, out, err = run_cli(capsys, "info", "--merge", str(tmp_path))
    assert "1 run: 1 merged run" in out and "--merge: 2 trace files read as one run" in out
