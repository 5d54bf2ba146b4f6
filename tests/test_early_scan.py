"""A big plain trace's first pieces are scanned before numpy is imported (trntui/loaders/kineto/early.py): the
scans start on threads before the import, the load claims them, the result is the one a load without them gives,
a file changed in between is read afresh, and nothing begun outlives the load."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.kineto_digest import digest
from trntui.errors import LoadError
from trntui.formats import find_runs, read_run
from trntui.loaders.kineto import chunks, early
from trntui.loaders.kineto import load as kload
from trntui.loaders.kineto.parser import _scan

DATA = Path(__file__).parent / "data" / "kineto"
ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(_scan is None, reason="the compiled parser is not built in this install")

PROBE = r"""
import json, sys
from trntui.loaders.kineto import chunks, early
early._MAP_MIN_BYTES = 0
chunks._CHUNK_BYTES = 64 << 10
chunks._threads = lambda: 2
seen = {"numpy_at_first_scan": None, "msgspec_at_first_scan": None, "claimed": []}
real_init = chunks._Scan.__init__
def init(self, *a, **k):
    if seen["numpy_at_first_scan"] is None:
        seen["numpy_at_first_scan"] = "numpy" in sys.modules
        seen["msgspec_at_first_scan"] = "msgspec" in sys.modules
    real_init(self, *a, **k)
chunks._Scan.__init__ = init
real_claim = early.claim
def claim(path, *rest):
    got = real_claim(path, *rest)
    seen["claimed"].append(got is not None)
    return got
early.claim = claim
from trntui import cli
rc = cli.main(["summary", sys.argv[1], "--limit", "15", *sys.argv[2:]])
print("PROBE " + json.dumps(seen), file=sys.stderr)
sys.exit(rc)
"""


def _plain(tmp_path: Path, name: str = "cuda_ns_resolution_68k.json.gz") -> Path:
    out = tmp_path / "trace.json"
    out.write_bytes(gzip.decompress((DATA / name).read_bytes()))
    return out


def _summary(trace: Path, *code: str, cache: str = "", **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items()
            if k not in ("OPENBLAS_NUM_THREADS", "TRNTUI_KINETO_PARSER", "TRNTUI_NO_CACHE", "TRNTUI_CACHE_DIR")}
    full.update(PYTHONPATH=str(ROOT), **env)
    flags = ["--no-cache"] if not cache else []
    if cache:
        full.update(TRNTUI_CACHE_DIR=cache, TRNTUI_CACHE_MIN_BYTES="0")
    cmd = [sys.executable, "-c", *code, str(trace), *flags] if code else \
        [sys.executable, "-m", "trntui", "summary", str(trace), "--limit", "15", *flags]
    return subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=120)


def _probe(got: subprocess.CompletedProcess) -> dict:
    assert got.returncode == 0, got.stderr
    return json.loads(next(line for line in got.stderr.splitlines() if line.startswith("PROBE "))[6:])


@pytest.mark.parametrize("cached", [False, True], ids=["no-cache", "cache-miss-then-hit"])
def test_the_first_scans_start_before_numpy_is_imported_and_the_load_claims_them(tmp_path: Path, cached: bool) -> None:
    """`trntui summary` of a big plain trace, without the cache and with it (a first load misses: the miss is told
    without importing numpy, so the scans begin first; the second load is served from the cache, no scan)."""
    trace = _plain(tmp_path)
    cache = str(tmp_path / "cache") if cached else ""
    got = _summary(trace, PROBE, cache=cache)
    probe = _probe(got)
    assert probe["numpy_at_first_scan"] is False, "numpy was imported before the first scan started"
    assert probe["msgspec_at_first_scan"] is False, "msgspec was imported before the first scan started"
    assert probe["claimed"] == [True], "the load did not use the scans begun for it"
    plain = _summary(trace, TRNTUI_KINETO_PARSER="python")  # the Python path: no scans at all
    assert plain.returncode == 0, plain.stderr
    assert got.stdout == plain.stdout and "aten::" in got.stdout
    if cached:
        again = _summary(trace, PROBE, cache=cache)
        assert _probe(again) == {"numpy_at_first_scan": None, "msgspec_at_first_scan": None, "claimed": []}  # (cached)
        assert again.stdout == plain.stdout


def _run(path: Path):
    (run,) = find_runs(path)
    return run


def _no_scan_threads() -> bool:
    return not [t for t in threading.enumerate() if t.name == "trntui-scan"]


def test_a_file_changed_after_the_scans_began_is_read_afresh(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(early, "_MAP_MIN_BYTES", 0)
    monkeypatch.setattr(chunks, "_CHUNK_BYTES", 64 << 10)
    monkeypatch.setattr(chunks, "_threads", lambda: 2)
    trace = _plain(tmp_path)
    other = tmp_path / "other.json"
    other.write_bytes(gzip.decompress((DATA / "mtia_inference.json.gz").read_bytes()))
    with early.begin(trace, None):
        assert early._begun, "nothing was begun for a big plain trace"
        os.replace(other, trace)  # a new capture lands under the same name
        got = digest(read_run(_run(trace)))
    assert not early._begun and _no_scan_threads()
    monkeypatch.setenv("TRNTUI_KINETO_PARSER", "python")  # the new file's profile, read without any scan
    assert got == digest(read_run(_run(trace)))


def test_what_a_failed_load_began_is_stopped(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(early, "_MAP_MIN_BYTES", 0)
    monkeypatch.setattr(chunks, "_CHUNK_BYTES", 64 << 10)
    monkeypatch.setattr(chunks, "_threads", lambda: 2)
    trace = _plain(tmp_path)
    begun: list[early.Begun] = []
    real_start = early._start

    def start(path: Path, budget: int | None, *rest):
        got = real_start(path, budget, *rest)
        begun.append(got)
        return got

    def refuse(path: Path, builder, *, instance: str, **rest) -> bool:
        raise LoadError(path, "refused by the test")

    monkeypatch.setattr(early, "_start", start)
    monkeypatch.setattr(kload, "_load_mapped", refuse)
    with pytest.raises(LoadError, match="refused by the test"):
        read_run(_run(trace))
    assert begun and begun[0] is not None
    assert not early._begun and _no_scan_threads()
    assert begun[0].data.closed


def test_nothing_is_begun_for_a_trace_the_load_streams_or_reads_whole(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(chunks, "_threads", lambda: 2)
    trace = _plain(tmp_path)
    small = trace.stat().st_size
    with early.begin(trace, None):  # below _MAP_MIN_BYTES: read into memory, not mapped
        assert not early._begun
    monkeypatch.setattr(early, "_MAP_MIN_BYTES", 0)
    with early.begin(trace, small):  # a budget the whole load does not fit: streamed
        assert not early._begun
    gz = tmp_path / "trace.json.gz"
    gz.write_bytes(gzip.compress(trace.read_bytes(), 1))
    with early.begin(gz, None):  # gzip: inflated first
        assert not early._begun
    monkeypatch.setenv("TRNTUI_KINETO_PARSER", "python")
    with early.begin(trace, None):  # the Python path scans nothing
        assert not early._begun


def test_scans_begun_for_an_end_the_top_level_decode_refuses_are_discarded(tmp_path: Path, monkeypatch) -> None:
    """The scans begin at the array's last candidate end, found from the text alone (before msgspec is imported);
    a tail whose own string looks like the array's end (`}], ...`) is refused by the top-level decode, and the
    load goes on from the real end: the profile is the Python path's."""
    monkeypatch.setattr(early, "_MAP_MIN_BYTES", 0)
    monkeypatch.setattr(chunks, "_CHUNK_BYTES", 4 << 10)
    monkeypatch.setattr(chunks, "_threads", lambda: 2)
    events = [{"ph": "X", "name": f"op{i % 7}", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": i, "dur": 1,
               "args": {"i": i}} for i in range(2000)]
    text = json.dumps({"traceEvents": events, "traceName": "x}], y}", "displayTimeUnit": "ms"})
    trace = tmp_path / "t.json"
    trace.write_text(text)
    decoded = []
    real = kload.decode_chunked

    def decode_chunked(*a, **k):
        decoded.append(real(*a, **k))
        return decoded[-1]

    monkeypatch.setattr(kload, "decode_chunked", decode_chunked)
    with early.begin(trace, None):
        (begun,) = early._begun.values()
        assert trace.read_bytes()[begun.opened.e + 1 :].lstrip().startswith(b", y"), "the test's trap was not taken"
        got = digest(read_run(_run(trace)))
    assert len(decoded) == 1 and decoded[0] is not None, "the chunked decode gave up (the whole-file path read it)"
    assert not early._begun and _no_scan_threads()
    monkeypatch.setenv("TRNTUI_KINETO_PARSER", "python")
    assert got == digest(read_run(_run(trace)))
