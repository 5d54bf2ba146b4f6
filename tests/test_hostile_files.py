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
