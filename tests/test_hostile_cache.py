"""Issue 19, items 1 and 7: a cache that can't lie.

Item 1: the inputs' identity (size, mtime, ctime, inode, a hash of head and tail) is taken before the read and
checked after it: a trace replaced during a load is not cached (as the old or the new profile), and new content
with the same size and mtime is not served stale.
Item 7: damaged or forged entries are a miss and are removed (never a traceback, a hang, a GB read, or a forged
number shown); interrupted writes leave nothing behind (Ctrl-C, SIGTERM); temporary directories of writers that
are gone are pruned. (A forked decoder child, which had to die with its parent, is gone with the compiled
builder: a load is one process.)
All through the real CLI (`trntui summary`), in-process or in a child process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from malformed import valid_trace  # noqa: E402
from malformed.cache_damage import DAMAGES, Damage  # noqa: E402
from malformed.cli import CASE_TIMEOUT_S, run_cli, time_limit  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
A_NAMES = ("aten::aaaa", "aten::add", "aten::relu")
B_NAMES = ("aten::bbbb", "aten::add", "aten::relu")


@pytest.fixture
def cache_env(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("TRNTUI_CACHE_DIR", str(d))
    monkeypatch.setenv("TRNTUI_CACHE_MIN_BYTES", "0")
    monkeypatch.delenv("TRNTUI_NO_CACHE", raising=False)
    monkeypatch.delenv("TRNTUI_DEBUG", raising=False)
    return d


def _entries(cache: Path) -> list[Path]:
    return [p for p in cache.iterdir() if not p.name.startswith(".") and p.name not in ("spill", "neuron")] if cache.exists() else []


def _summary(capsys, path: Path, *extra: str) -> tuple[int, str, str]:
    rc, out, err, caught, _ = run_cli(["summary", *extra, str(path)], capsys)
    assert "Traceback" not in out + err, err
    assert not caught, caught
    return rc, out, err


# ------------------------------------------------------------------------------------------------------
# item 1
# ------------------------------------------------------------------------------------------------------
def test_trace_replaced_during_the_load_is_never_cached(tmp_path, cache_env, monkeypatch, capsys) -> None:
    """A new capture lands (atomic rename) while trntui reads the old one: this run shows what it read and
    says so; the next run reads the new trace (it was not cached as the old profile under the new stamp)."""
    trace = tmp_path / "prof" / "trace.json"
    trace.parent.mkdir()
    trace.write_bytes(valid_trace(names=A_NAMES))
    new = tmp_path / "new.json"
    new.write_bytes(valid_trace(names=B_NAMES))

    import trntui.loaders.kineto.load as kload

    real = kload.read_bytes

    def read_then_replace(path, *a):
        data = real(path, *a)
        if new.exists():
            os.replace(new, trace)  # the capture lands right after the read
        return data

    monkeypatch.setattr(kload, "read_bytes", read_then_replace)
    rc, out, err = _summary(capsys, trace)
    assert rc == 0 and err == "", err
    assert "aten::aaaa" in out and "aten::bbbb" not in out
    assert "Note: the trace changed while it was read (not cached" in out
    assert not _entries(cache_env), "a profile read from a file that changed must not be cached"
    monkeypatch.setattr(kload, "read_bytes", real)
    rc, out, err = _summary(capsys, trace)
    assert rc == 0 and "aten::bbbb" in out and "aten::aaaa" not in out
    assert len(_entries(cache_env)) == 1
    rc, again, err = _summary(capsys, trace)  # from the cache now
    assert again == out


def test_trace_replaced_before_the_read_is_not_cached_under_its_new_stamp(tmp_path, cache_env, monkeypatch, capsys) -> None:
    """The stamp is taken before the read: a file that changes between discovery and the read (the load reads
    the new content) and then again is not stored under either identity."""
    trace = tmp_path / "prof" / "trace.json"
    trace.parent.mkdir()
    trace.write_bytes(valid_trace(names=A_NAMES))
    import trntui.loaders.kineto.load as kload

    real = kload.read_bytes
    swaps = [valid_trace(names=B_NAMES), valid_trace(names=("aten::cccc", "aten::add", "aten::relu"))]

    def swap_read_swap(path, *a):
        tmp = tmp_path / "swap.json"
        tmp.write_bytes(swaps[0])
        os.replace(tmp, trace)
        data = real(path, *a)
        tmp.write_bytes(swaps[1])
        os.replace(tmp, trace)
        return data

    monkeypatch.setattr(kload, "read_bytes", swap_read_swap)
    rc, out, err = _summary(capsys, trace)
    assert rc == 0 and "aten::bbbb" in out
    assert not _entries(cache_env)
    monkeypatch.setattr(kload, "read_bytes", real)
    rc, out, err = _summary(capsys, trace)
    assert "aten::cccc" in out and "aten::bbbb" not in out


def test_same_size_and_mtime_with_new_content_is_not_served_stale(tmp_path, cache_env, capsys) -> None:
    trace = tmp_path / "prof" / "trace.json"
    trace.parent.mkdir()
    a, b = valid_trace(names=A_NAMES), valid_trace(names=B_NAMES)
    assert len(a) == len(b)
    trace.write_bytes(a)
    rc, out, _ = _summary(capsys, trace)
    assert rc == 0 and "aten::aaaa" in out and _entries(cache_env)
    st = trace.stat()
    with open(trace, "r+b") as f:  # rewritten in place: same inode, same size
        f.write(b)
    os.utime(trace, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the old mtime put back
    assert trace.stat().st_size == st.st_size and trace.stat().st_mtime_ns == st.st_mtime_ns
    rc, out, _ = _summary(capsys, trace)
    assert rc == 0 and "aten::bbbb" in out and "aten::aaaa" not in out


# ------------------------------------------------------------------------------------------------------
# item 7: damaged and forged entries
# ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("damage", DAMAGES, ids=[d.name for d in DAMAGES])
def test_damaged_or_forged_entry_is_a_miss_and_is_removed(damage: Damage, tmp_path, cache_env, capsys) -> None:
    trace = tmp_path / "prof" / "trace.json"
    trace.parent.mkdir()
    trace.write_bytes(valid_trace(n_steps=4))
    rc, expected, err = _summary(capsys, trace, "--format", "csv")
    assert rc == 0 and err == ""
    (entry,) = _entries(cache_env)
    damage.apply(entry)
    with time_limit(CASE_TIMEOUT_S):  # a hang bound: a damaged entry (FIFO, /dev/urandom) is never read to its end
        rc, out, err = _summary(capsys, trace, "--format", "csv")
    assert rc == 0 and err == "", err
    assert out == expected, "a damaged or forged entry must never be shown"
    # the odd entry was removed and a good one written in its place
    (rebuilt,) = _entries(cache_env)
    assert rebuilt.is_dir() and not rebuilt.is_symlink()
    assert all(p.is_file() and not p.is_symlink() for p in rebuilt.iterdir())
    from trntui import cache
    from trntui.session import find_runs

    (run,) = find_runs(trace)
    assert cache.load(run.inputs, cache_env) is not None


def test_forged_percentages_are_never_printed(tmp_path, cache_env, capsys) -> None:
    """The issue's forged entry: a total divided so that Self CPU % reads 47394.07%."""
    trace = tmp_path / "prof" / "trace.json"
    trace.parent.mkdir()
    trace.write_bytes(valid_trace(n_steps=4))
    rc, expected, _ = _summary(capsys, trace)
    (entry,) = _entries(cache_env)
    next(d for d in DAMAGES if d.name == "forged_total_percent").apply(entry)
    rc, out, err = _summary(capsys, trace)
    assert rc == 0 and out == expected
    pcts = [float(tok[:-1]) for tok in out.split() if tok.endswith("%") and tok[:-1].replace(".", "").isdigit()]
    assert pcts and max(pcts) <= 100.0


# ------------------------------------------------------------------------------------------------------
# item 7: interrupted writes, stale temporaries
# ------------------------------------------------------------------------------------------------------
_SLOW_WRITE = """
import os, sys, time
import trntui.cache.write as c
real = c._write_entry
def slow(d, *a, **k):
    real(d, *a, **k)
    open(os.environ["FLAG"], "w").close()
    time.sleep(60)
c._write_entry = slow
from trntui.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _env(cache: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, TRNTUI_CACHE_DIR=str(cache), TRNTUI_CACHE_MIN_BYTES="0", PYTHONPATH=str(REPO),
               TRNTUI_NO_PROGRESS="1")
    env.pop("TRNTUI_NO_CACHE", None)
    env.update(extra)
    return env


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_interrupted_cache_write_leaves_nothing(sig, tmp_path) -> None:
    cache = tmp_path / "cache"
    trace = tmp_path / "prof" / "trace.json"
    trace.parent.mkdir()
    trace.write_bytes(valid_trace(n_steps=20))
    flag = tmp_path / "written"
    # SIGINT as a terminal delivers it: a suite started in the background (`cmd &` without job control) hands its
    # children SIGINT ignored, and Python then never installs its KeyboardInterrupt handler
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_WRITE, "summary", str(trace)], env=_env(cache, FLAG=str(flag)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while not flag.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        temps = list(cache.glob(".tmp-*"))
        assert temps, "the write was caught in the middle"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    if sig == signal.SIGTERM:
        assert proc.returncode == -signal.SIGTERM  # the process still ends as SIGTERM asked
    else:
        assert proc.returncode == 130 and err.strip() == "trntui: error: interrupted"
    assert "Traceback" not in err
    assert not list(cache.glob(".tmp-*")), "the interrupted write must remove its temporary directory at once"


def test_stale_temporaries_are_pruned_by_their_writers_liveness(tmp_path, cache_env, capsys) -> None:
    from trntui import cache
    import trntui.cache.write

    cache_env.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        host = cache.write._host()
        gone = cache_env / f".tmp-{host}-{dead.pid}-abc"
        live = cache_env / f".tmp-{host}-{alive.pid}-def"
        other_host = cache_env / f".tmp-otherhost-{dead.pid}-ghi"
        old = cache_env / f".tmp-otherhost-1-jkl"
        for d in (gone, live, other_host, old):
            d.mkdir()
            (d / "start.npy").write_bytes(b"x" * 1000)
        os.utime(old, (time.time() - 7200, time.time() - 7200))
        trace = tmp_path / "prof" / "trace.json"
        trace.parent.mkdir()
        trace.write_bytes(valid_trace())
        rc, out, err = _summary(capsys, trace)  # a write prunes
        assert rc == 0
        assert not gone.exists(), "its writer is gone: removed at once, not after an hour"
        assert not old.exists(), "older than an hour: removed whoever wrote it"
        assert live.exists(), "a live writer's temporary directory is kept"
        assert other_host.exists(), "another machine's writer cannot be checked: kept until it is old"
    finally:
        alive.kill()
        alive.wait()
