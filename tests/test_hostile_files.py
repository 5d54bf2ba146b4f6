"""Hostile files, round three (issue 28 classes 2, 3 and 7): never write through a symbolic link or over a file
we did not create without --force (or a yes in the app), never hang on a FIFO or a silent server, and copy only
regular, bounded files into the conversion cache. Every case builds its own input under tmp_path; every FIFO case
runs under a timeout that proves it returns."""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import run_cli
from trntui import fsio

TIMEOUT_S = 20


@contextmanager
def returns_within(seconds: int = TIMEOUT_S):
    """Fail (instead of hanging the suite) when the body blocks: SIGALRM interrupts a blocking open/read."""
    if threading.current_thread() is not threading.main_thread():  # pragma: no cover - xdist runs tests in main
        yield
        return

    def _alarm(signum, frame):
        raise TimeoutError(f"did not return within {seconds}s (blocked)")

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def one_error(rc: int, out: str, err: str) -> str:
    assert rc == 2, (rc, out, err)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("trntui: error: "), err
    assert "Traceback" not in err
    return lines[0]


# ------------------------------------------------------------------------------------------------- fsio itself


def test_open_regular_refuses_a_fifo_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "CpuUsage.parquet"
    os.mkfifo(fifo)
    with returns_within():
        with pytest.raises(fsio.FileRefused, match="FIFO"):
            fsio.open_regular(fifo)
        with pytest.raises(fsio.FileRefused, match="FIFO"):
            fsio.check_regular(fifo)
        with pytest.raises(fsio.FileRefused, match="FIFO"):
            fsio.read_bounded(fifo, 100)


def test_open_regular_refuses_links_when_asked_and_bounds_reads(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"x" * 1000)
    (tmp_path / "link").symlink_to(tmp_path / "big")
    assert fsio.read_bounded(tmp_path / "link", 1000) == b"x" * 1000  # a user's link to a trace is fine
    with pytest.raises(fsio.FileRefused, match="symbolic link"):
        fsio.open_regular(tmp_path / "link", follow_symlinks=False)
    with pytest.raises(fsio.FileRefused, match="more than"):
        fsio.read_bounded(tmp_path / "big", 999)
    (tmp_path / "zero").symlink_to("/dev/zero")
    with returns_within():
        with pytest.raises(fsio.FileRefused, match="character device"):
            fsio.read_bounded(tmp_path / "zero", 1 << 20)


def test_atomic_write_refuses_links_and_existing_files(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    d = tmp_path / "D"
    d.mkdir()
    (d / "a").symlink_to(victim)
    (d / "b").symlink_to(tmp_path / "elsewhere")
    for name in ("a", "b"):
        for force in (False, True):
            with pytest.raises(fsio.FileRefused, match="symbolic link"):
                fsio.atomic_write(d / name, b"new", force=force)
    assert victim.read_text() == "precious" and not (tmp_path / "elsewhere").exists()
    (d / "mine").write_text("user's")
    with pytest.raises(fsio.FileExists, match="--force"):
        fsio.atomic_write(d / "mine", "new")
    assert (d / "mine").read_text() == "user's"
    fsio.atomic_write(d / "mine", "new", force=True)
    assert (d / "mine").read_text() == "new"
    os.mkfifo(d / "fifo")
    with returns_within():
        with pytest.raises(fsio.FileRefused, match="FIFO"):
            fsio.atomic_write(d / "fifo", "x", force=True)
    assert fsio.atomic_write(d / "fresh", "abc") == 3 and (d / "fresh").read_text() == "abc"
    (tmp_path / "plain").write_text("")  # the mode an ordinary open() gives under this umask
    assert (d / "fresh").stat().st_mode & 0o777 == (tmp_path / "plain").stat().st_mode & 0o777
    assert sorted(p.name for p in d.iterdir()) == ["a", "b", "fifo", "fresh", "mine"]  # no temporary file left


def test_a_failed_write_leaves_the_target_and_no_temporary_file(tmp_path: Path) -> None:
    (tmp_path / "t").write_text("old")

    def boom(path: Path) -> None:
        path.write_text("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(fsio.FileRefused, match="No space left"):
        fsio.atomic_write(tmp_path / "t", boom, force=True)
    assert (tmp_path / "t").read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["t"]


def test_remove_tree_is_iterative_and_never_follows_links(tmp_path: Path) -> None:
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "file").write_text("keep")
    root = tmp_path / "cache"
    deep = root
    root.mkdir()
    for _ in range(1200):  # deeper than Python's recursion limit
        deep = deep / "d"
        deep.mkdir()
    (deep / "x").write_text("x")
    (root / "link").symlink_to(keep)
    with pytest.raises(fsio.FileRefused, match="symbolic link"):
        fsio.remove_tree(root / "link")
    fsio.remove_tree(root)
    assert not root.exists() and (keep / "file").read_text() == "keep"


# ------------------------------------------------------------------------------------- class 2: ranks --out


@pytest.fixture(scope="module")
def job2(corpus_dir: Path, tmp_path_factory) -> Path:
    from tests.rank_job import make_job

    out = tmp_path_factory.mktemp("job2")
    make_job(corpus_dir, out, ranks=2)
    return out


def _ranks_parquet(capsys, job: Path, out: Path, *extra: str):
    return run_cli(capsys, "ranks", str(job), "--format", "parquet", "--jobs", "1", "--no-cache", "--out", str(out),
                   *extra)


def test_ranks_parquet_never_writes_through_a_symlink(job2: Path, tmp_path: Path, capsys) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    d = tmp_path / "D"
    d.mkdir()
    (d / "ranks.parquet").symlink_to(victim)
    for extra in ((), ("--force",)):
        line = one_error(*_ranks_parquet(capsys, job2, d, *extra))
        assert "ranks.parquet" in line and "symbolic link" in line
    assert victim.read_text() == "precious"


def test_ranks_parquet_never_creates_a_file_through_a_dangling_link(job2: Path, tmp_path: Path, capsys) -> None:
    d = tmp_path / "D"
    d.mkdir()
    (d / "rank_steps.parquet").symlink_to(tmp_path / "elsewhere.parquet")
    for extra in ((), ("--force",)):
        line = one_error(*_ranks_parquet(capsys, job2, d, *extra))
        assert "rank_steps.parquet" in line and "symbolic link" in line
    assert not (tmp_path / "elsewhere.parquet").exists() and not (d / "ranks.parquet").exists()


def test_ranks_parquet_replaces_a_users_file_only_with_force(job2: Path, tmp_path: Path, capsys) -> None:
    import pyarrow.parquet as pq

    d = tmp_path / "D"
    d.mkdir()
    (d / "ranks.parquet").write_text("my own file")
    line = one_error(*_ranks_parquet(capsys, job2, d))
    assert "ranks.parquet" in line and "exists" in line and "--force" in line
    assert (d / "ranks.parquet").read_text() == "my own file"
    assert sorted(p.name for p in d.iterdir()) == ["ranks.parquet"]  # refused before anything was written
    rc, out, err = _ranks_parquet(capsys, job2, d, "--force")
    assert rc == 0, err
    assert pq.read_table(d / "ranks.parquet").num_rows == 2
    assert sorted(p.name for p in d.iterdir()) == sorted(f"{n}.parquet" for n in (
        "ranks", "rank_steps", "rank_top_ops", "collectives", "collective_waits"))


# ------------------------------------------------------------------------------ class 2: sql --out, export


def _trace(corpus_dir: Path) -> str:
    return str(corpus_dir / "cuda_simple_add.json.gz")


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_sql_out_refuses_links_and_replaces_only_with_force(fmt, corpus_dir: Path, tmp_path: Path, capsys) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    query = "SELECT count(*) AS n FROM events"
    for name, target in (("a", victim), ("b", tmp_path / "elsewhere")):
        (tmp_path / name).symlink_to(target)
        for extra in ((), ("--force",)):
            line = one_error(*run_cli(capsys, "sql", _trace(corpus_dir), query, "--format", fmt, "--out",
                                      str(tmp_path / name), *extra))
            assert "symbolic link" in line and f"/{name}:" in line
    assert victim.read_text() == "precious" and not (tmp_path / "elsewhere").exists()
    mine = tmp_path / "mine"
    mine.write_text("mine")
    line = one_error(*run_cli(capsys, "sql", _trace(corpus_dir), query, "--format", fmt, "--out", str(mine)))
    assert "exists" in line and "--force" in line and mine.read_text() == "mine"
    rc, _, err = run_cli(capsys, "sql", _trace(corpus_dir), query, "--format", fmt, "--out", str(mine), "--force")
    assert rc == 0, err
    assert mine.read_bytes() != b"mine"
    os.mkfifo(tmp_path / "fifo")
    with returns_within():
        line = one_error(*run_cli(capsys, "sql", _trace(corpus_dir), query, "--format", fmt, "--out",
                                  str(tmp_path / "fifo"), "--force"))
    assert "FIFO" in line


def test_export_refuses_links_and_replaces_only_with_force(corpus_dir: Path, tmp_path: Path, capsys) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "t.json").symlink_to(victim)
    for extra in ((), ("--force",)):
        line = one_error(*run_cli(capsys, "export", _trace(corpus_dir), "--to", "chrome-trace",
                                  str(tmp_path / "t.json"), *extra))
        assert "symbolic link" in line
    d = tmp_path / "tables"
    d.mkdir()
    (d / "events.parquet").symlink_to(victim)
    line = one_error(*run_cli(capsys, "export", _trace(corpus_dir), "--to", "parquet", str(d), "--force"))
    assert "events.parquet" in line and "symbolic link" in line
    assert victim.read_text() == "precious" and [p.name for p in d.iterdir()] == ["events.parquet"]
    (d / "events.parquet").unlink()
    (d / "lanes.parquet").write_text("mine")
    line = one_error(*run_cli(capsys, "export", _trace(corpus_dir), "--to", "parquet", str(d)))
    assert "lanes.parquet" in line and "--force" in line and (d / "lanes.parquet").read_text() == "mine"
    assert [p.name for p in d.iterdir()] == ["lanes.parquet"]  # checked before anything was written
    rc, _, err = run_cli(capsys, "export", _trace(corpus_dir), "--to", "parquet", str(d), "--force")
    assert rc == 0, err
    assert (d / "events.parquet").is_file() and (d / "lanes.parquet").read_bytes() != b"mine"
    out = tmp_path / "trace.json"
    out.write_text("mine")
    line = one_error(*run_cli(capsys, "export", _trace(corpus_dir), "--to", "chrome-trace", str(out)))
    assert "--force" in line and out.read_text() == "mine"


# ------------------------------------------------------------------------------------------- class 3: hangs

REPO = Path(__file__).resolve().parents[1]
NEURON = REPO / "sample_profiles" / "neuron"


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_a_fifo_trace_file_is_one_line_at_once(tmp_path: Path, capsys) -> None:
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    with returns_within():
        line = one_error(*run_cli(capsys, "summary", str(fifo)))
    assert "trace.json" in line and ("FIFO" in line or "not a regular file" in line)
    with returns_within():
        from trntui.loaders.files import open_trace

        with pytest.raises(fsio.FileRefused, match="FIFO"):
            open_trace(fifo)


@pytest.mark.parametrize("command", ["summary", "overview"])
def test_a_fifo_among_a_neuron_exports_parquet_files_never_hangs(command, tmp_path: Path, capsys) -> None:
    export = _copy(NEURON / "naive" / "explorer_parquet", tmp_path / "export")
    os.mkfifo(export / "Junk.parquet")  # not a table trntui reads: never opened (the budget check opened it)
    with returns_within():
        rc, out, err = run_cli(capsys, command, str(export), "--memory-budget", "4G")
    assert rc == 0, err
    (export / "CpuUsage.parquet").unlink()
    os.mkfifo(export / "CpuUsage.parquet")  # a table it reads: one line naming it
    with returns_within():
        line = one_error(*run_cli(capsys, command, str(export), "--memory-budget", "4G"))
    assert "CpuUsage.parquet" in line and "FIFO" in line


def test_a_fifo_in_a_device_export_never_hangs(tmp_path: Path, capsys) -> None:
    pdir = _copy(NEURON / "device" / "naive", tmp_path / "naive")
    [session] = [p for p in pdir.iterdir() if p.is_dir()]
    os.mkfifo(session / "Instruction_1.parquet")  # a split part of the Instruction table
    with returns_within():
        line = one_error(*run_cli(capsys, "device", str(pdir)))
    assert "Instruction_1.parquet" in line and "FIFO" in line


@pytest.mark.cluster
def test_a_rank_summary_cache_entry_replaced_by_a_fifo_never_hangs(job2: Path, tmp_path: Path, capsys,
                                                                    monkeypatch) -> None:
    monkeypatch.setenv("TRNTUI_CACHE_DIR", str(tmp_path / "cache"))
    rc, first, err = run_cli(capsys, "ranks", str(job2), "--format", "csv", "--jobs", "1")
    assert rc == 0, err
    entries = sorted((tmp_path / "cache" / "rank-summaries").glob("*.json"))
    assert len(entries) == 2
    entries[0].unlink()
    os.mkfifo(entries[0])
    entries[1].unlink()
    entries[1].symlink_to("/dev/zero")
    with returns_within(60):
        rc, again, err = run_cli(capsys, "ranks", str(job2), "--format", "csv", "--jobs", "1")
    assert rc == 0, err
    assert [ln.split(",")[:3] for ln in again.splitlines()] == [ln.split(",")[:3] for ln in first.splitlines()]
    assert all(e.is_file() and not e.is_symlink() for e in entries)  # the entries were written again, as files


@pytest.mark.cluster
def test_a_dask_scheduler_that_never_answers_times_out_in_one_line(job2: Path) -> None:
    import socket
    import subprocess
    import sys

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # accepts TCP (the kernel completes the handshake), never says a word
        address = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
        proc = subprocess.run([sys.executable, "-m", "trntui.cli", "ranks", str(job2), "--engine", "dask",
                               "--scheduler", address], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("trntui: error: cannot reach the Dask scheduler at " + address)
    assert "no answer within" in lines[0]


# ---------------------------------------------------------------------- classes 3 and 7: the converter's output

EXTRA_TOOL = """
extra = os.environ.get("FAKE_EXTRA", "")
if extra == "fifo-link":  # CpuUsage.parquet -> a FIFO outside the export
    (out / "CpuUsage.parquet").unlink()
    os.mkfifo(out.parent / "pipe")
    os.symlink(out.parent / "pipe", out / "CpuUsage.parquet")
elif extra == "fifo":
    (out / "CpuUsage.parquet").unlink()
    os.mkfifo(out / "CpuUsage.parquet")
elif extra == "links":  # links out of the cache
    os.symlink("/", out / "root")
    os.symlink("/dev/zero", out / "zero.parquet")
elif extra == "big":
    with open(out / "Big.parquet", "wb") as fh:
        fh.truncate(3 << 20)
elif extra in ("deep", "deep-export"):  # 1,500 directories (os.walk and rglob recurse once per level)
    d = out.parent if extra == "deep" else out
    for _ in range(1500):
        d = d / "d"
        os.mkdir(d)
    (d / "bottom.txt").write_text("x")
elif extra == "chatty":
    sys.stdout.write("x" * (3 << 20))
    sys.stdout.flush()
    time.sleep(60)
"""


@pytest.fixture
def hostile_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import stat as _stat
    import sys

    from tests import test_neuron_convert as tnc
    from trntui.loaders.neuron import convert as neuron_convert

    def install(extra: str) -> Path:
        bindir = tmp_path / "bin"
        bindir.mkdir(exist_ok=True)
        exe = bindir / "neuron-explorer"
        exe.write_text(tnc.FAKE_TOOL.format(python=sys.executable, script=str(REPO / "scripts" / "make_neuron_samples.py"),
                                            pid=tnc.PID) + EXTRA_TOOL)
        exe.chmod(exe.stat().st_mode | _stat.S_IXUSR)
        monkeypatch.setenv("PATH", str(bindir) + os.pathsep + os.path.dirname(sys.executable))
        monkeypatch.setattr(neuron_convert, "EXTRA_PATHS", ())
        monkeypatch.setenv("TRNTUI_CACHE_DIR", str(tmp_path / "cache"))
        monkeypatch.setenv("FAKE_NEURON_LOG", str(tmp_path / "calls.log"))
        monkeypatch.setenv("FAKE_MODE", "ok")
        monkeypatch.setenv("FAKE_HELP", tnc.FULL_HELP)
        monkeypatch.setenv("FAKE_CHILD_PID", str(tmp_path / "child.pid"))
        monkeypatch.setenv("FAKE_EXTRA", extra)
        return tnc._raw_capture(tmp_path)

    return install


def _cache_entries(tmp_path: Path) -> list[Path]:
    cache = tmp_path / "cache" / "neuron"
    return [p for p in cache.iterdir() if not p.name.startswith(".")] if cache.is_dir() else []


def _no_links_or_specials(root: Path) -> None:
    for p in root.rglob("*"):
        assert not p.is_symlink() and (p.is_dir() or p.is_file()), p


@pytest.mark.parametrize("extra", ["fifo-link", "fifo"])
def test_a_converter_output_that_is_a_fifo_never_hangs(extra, hostile_tool, tmp_path: Path, capsys) -> None:
    root = hostile_tool(extra)
    with returns_within(60):
        rc, out, err = run_cli(capsys, "summary", str(root))
    assert rc == 0, err  # the framework trace alone, with the note naming why the conversion was refused
    assert "CpuUsage.parquet" in out and ("symbolic link" in out or "FIFO" in out)
    assert _cache_entries(tmp_path) == []  # nothing of it was kept
    assert not any(p.name.startswith(".") for p in (tmp_path / "cache" / "neuron").iterdir())  # scratch removed


def test_the_conversion_cache_refuses_links_out_of_it(hostile_tool, tmp_path: Path, capsys) -> None:
    root = hostile_tool("links")
    with returns_within(60):
        rc, out, err = run_cli(capsys, "summary", str(root))
    assert rc == 0, err
    assert "symbolic link" in out and ("root" in out or "zero.parquet" in out)
    assert _cache_entries(tmp_path) == []


def test_the_conversion_cache_keeps_regular_bounded_files_only(hostile_tool, tmp_path: Path, capsys,
                                                               monkeypatch) -> None:
    from trntui.loaders.neuron import convert as neuron_convert

    monkeypatch.setattr(neuron_convert, "FILE_LIMIT", 2 << 20)
    root = hostile_tool("big")
    with returns_within(60):
        rc, out, err = run_cli(capsys, "summary", str(root))
    assert rc == 0, err
    assert "Big.parquet" in out and "more than" in out
    assert _cache_entries(tmp_path) == []
    monkeypatch.setattr(neuron_convert, "FILE_LIMIT", 32 << 30)
    monkeypatch.setenv("FAKE_EXTRA", "")
    rc, out, err = run_cli(capsys, "summary", str(root))
    assert rc == 0, err
    [entry] = _cache_entries(tmp_path)
    _no_links_or_specials(entry)
    assert (entry / "convert.log").stat().st_size <= neuron_convert.LOG_KEEP


def test_a_converter_log_is_bounded(hostile_tool, tmp_path: Path, capsys, monkeypatch) -> None:
    from trntui.loaders.neuron import convert as neuron_convert

    monkeypatch.setattr(neuron_convert, "LOG_LIMIT", 1 << 20)
    root = hostile_tool("chatty")
    with returns_within(60):
        rc, out, err = run_cli(capsys, "summary", str(root))
    assert rc == 0, err
    assert "wrote more than 1 MiB of output" in out
    assert _cache_entries(tmp_path) == []


@pytest.mark.parametrize("extra", ["deep", "deep-export"])
def test_a_converter_output_1500_directories_deep(extra, hostile_tool, tmp_path: Path, capsys) -> None:
    root = hostile_tool(extra)
    with returns_within(60):
        rc, out, err = run_cli(capsys, "summary", str(root))
    assert rc == 0, err
    assert "Traceback" not in err and "RecursionError" not in out + err
    cache = tmp_path / "cache" / "neuron"
    assert not [p.name for p in cache.iterdir() if p.name.startswith(".")]  # no .tmp left
    if extra == "deep-export":  # inside the export: refused, the framework trace alone with a note
        assert "directories deep" in out and _cache_entries(tmp_path) == []
    else:  # beside it: the export is converted, the deep tree is not kept
        [entry] = _cache_entries(tmp_path)
        assert max(len(p.relative_to(entry).parts) for p in entry.rglob("*")) < 70
