"""A big plain trace's events' args stay in the file (model/args.py `FileBlob`): the compiled builder records each
event's args as its byte range of the file and copies nothing; they are read with `pread` when asked for. The
profile is the one a load that copies them gives (and the Python path's), the cache and a pickle hold them in
memory, a file rewritten after the load gives a one-line error naming it (never SIGBUS), a file replaced under its
name is still read from the one loaded, the descriptor goes with the profile, and the app's own loads copy them."""

from __future__ import annotations

import gzip
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.kineto_digest import digest
from trntui.errors import LoadError
from trntui.formats import find_runs, read_run
from trntui.loaders.kineto import chunks, early, parser
from trntui.loaders.kineto.load import load_kineto, load_kineto_into
from trntui.loaders.protocol import LoadOptions
from trntui.model import args as margs
from trntui.model.args import ArgsStore, FileBlob, raw_many
from trntui.model.builder import ProfileBuilder
from trntui.model.profile import ProfileMeta

DATA = Path(__file__).parent / "data" / "kineto"
ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(parser._scan is None, reason="the compiled parser is not built in this install")


@pytest.fixture(autouse=True)
def _mapped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every plain trace is mapped (as a big one is), in pieces of 64 KB, scanned on two threads."""
    monkeypatch.setattr(early, "_MAP_MIN_BYTES", 0)
    monkeypatch.setattr(chunks, "_CHUNK_BYTES", 64 << 10)
    monkeypatch.setattr(chunks, "_threads", lambda: 2)
    monkeypatch.setenv(parser.ENV, "compiled")


def _plain(tmp_path: Path, name: str = "cuda_ns_resolution_68k.json.gz") -> Path:
    out = tmp_path / "trace.json"
    out.write_bytes(gzip.decompress((DATA / name).read_bytes()))
    return out


def _load(path: Path, args_from_file: bool = True):
    builder = ProfileBuilder(ProfileMeta())
    load_kineto_into(path, builder, args_from_file=args_from_file)
    return builder.finish()


def _all_args(profile) -> list:
    return [profile.args_raw[i] for i in range(len(profile.args_raw))]


def test_the_args_stay_in_the_file_and_the_profile_is_the_copying_loads_and_the_python_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = _plain(tmp_path)
    kept = _load(trace)
    assert isinstance(kept.args_raw.blob, FileBlob), "the args were copied into memory"
    assert kept.args_raw.nbytes == kept.args_raw.starts.nbytes + kept.args_raw.ends.nbytes  # none held in memory
    copied = _load(trace, args_from_file=False)
    assert not isinstance(copied.args_raw.blob, FileBlob)
    got = digest(kept)
    assert got == digest(copied)
    monkeypatch.setenv(parser.ENV, "python")
    assert got == digest(load_kineto(trace))
    assert sum(a is not None for a in _all_args(kept)) > 40_000  # (its kernels and runtime calls have args)


def test_a_run_read_through_the_formats_keeps_them_in_the_file_unless_told(tmp_path: Path) -> None:
    trace = _plain(tmp_path)
    (run,) = find_runs(trace)
    assert isinstance(read_run(run, LoadOptions(cache=False)).args_raw.blob, FileBlob)
    assert not isinstance(read_run(run, LoadOptions(cache=False, args_from_file=False)).args_raw.blob, FileBlob)


def test_a_file_rewritten_after_the_load_is_an_error_naming_it_not_a_crash(tmp_path: Path) -> None:
    trace = _plain(tmp_path)
    profile = _load(trace)
    i = next(k for k in range(len(profile)) if profile.args_raw[k] is not None)
    assert profile.args(i)
    with open(trace, "r+b") as f:  # rewritten in place: shorter, then longer (a new capture over the old)
        f.truncate(100)
    with pytest.raises(LoadError, match="changed on disk since it was loaded") as got:
        profile.args(i)
    assert str(trace) in str(got.value)
    with pytest.raises(LoadError, match="changed on disk"):
        raw_many(profile.args_raw, np.arange(len(profile)))
    # in a fresh process the same reads after a truncation end in the one-line error, not a signal (SIGBUS)
    code = (
        "import sys\n"
        "from trntui.loaders.kineto import early, chunks\n"
        "early._MAP_MIN_BYTES = 0\n"
        "from trntui.loaders.kineto.load import load_kineto\n"
        "from trntui.errors import LoadError\n"
        f"p = load_kineto({str(trace)!r})\n"
        f"open({str(trace)!r}, 'r+b').truncate(10)\n"
        "try:\n"
        "    [p.args(i) for i in range(len(p))]\n"
        "except LoadError as e:\n"
        "    print(e); sys.exit(3)\n"
    )
    trace.write_bytes(gzip.decompress((DATA / "cuda_ns_resolution_68k.json.gz").read_bytes()))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 3, (out.returncode, out.stderr)
    assert "changed on disk since it was loaded" in out.stdout


def test_a_file_replaced_under_its_name_is_still_read_from_the_one_loaded(tmp_path: Path) -> None:
    trace = _plain(tmp_path)
    profile = _load(trace)
    before = _all_args(profile)
    other = tmp_path / "other.json"
    other.write_bytes(gzip.decompress((DATA / "mtia_inference.json.gz").read_bytes()))
    os.replace(other, trace)
    assert _all_args(profile) == before


def test_the_descriptor_goes_with_the_profile(tmp_path: Path) -> None:
    import gc

    trace = _plain(tmp_path)

    def fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    _load(trace)  # (imports, first-use tables)
    gc.collect()
    n = fds()
    profile = _load(trace)
    assert fds() == n + 1
    del profile
    gc.collect()
    assert fds() == n


@pytest.mark.parametrize("name", ["cuda_ns_resolution_68k.json.gz", "cpu_only.json.gz"])
def test_the_cache_and_a_pickle_hold_them_in_memory(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """(The scan reads the link ids; here its pieces leave them in the args, as the Python path's do for a trace
    without rows that link, so that the CPU trace's are read back from the file when the cache writer asks for them,
    a batch at a time, `Profile._parse_links`, here in windows of 4 KB and batches of 1000 events.)"""
    from trntui import cache as profile_cache
    from trntui.loaders.kineto import columns, compiled
    from trntui.model import profile as mprofile

    monkeypatch.setattr(margs, "_WINDOW", 4096)
    monkeypatch.setattr(mprofile, "_LINK_BATCH", 1000)
    real_part = compiled.part_of_scan

    def lazy_links(*a, **k):
        part = real_part(*a, **k)
        if part is not None and not part.linking:
            part.x.links = columns.NOT_PARSED
        return part

    monkeypatch.setattr(compiled, "part_of_scan", lazy_links)  # (chunks.compiled_part looks it up at each call)
    trace = _plain(tmp_path, name)
    (run,) = find_runs(trace)
    options = LoadOptions(cache=True, cache_dir=tmp_path / "cache", cache_min_bytes=0)
    from trntui.session import load_run

    first = load_run(run, LoadOptions(cache=False))
    assert isinstance(first.args_raw.blob, FileBlob)
    assert first.links_parsed() == ("cuda" in name)  # (the CPU trace's: in the file until asked for)
    written = load_run(run, options)  # (a load that writes the cache copies its args at the scan: session.py)
    assert not isinstance(written.args_raw.blob, FileBlob)
    assert profile_cache.entry_dir(run.inputs, options.cache_dir).is_dir(), "the entry was not written"
    again = load_run(run, options)
    assert profile_cache.entry_dir(run.inputs, options.cache_dir).is_dir()
    assert _all_args(again) == _all_args(first) == _all_args(written)
    assert np.array_equal(again.ext, first.ext) and np.array_equal(again.corr, first.corr) and (first.ext > 0).any()
    # an entry written from a profile whose args are still in the file (packed from it): the same
    from trntui.cache import store
    other = tmp_path / "cache2"
    store(run.inputs, other, first, records={})
    hit = load_run(run, LoadOptions(cache=True, cache_dir=other, cache_min_bytes=0))
    assert hit.cache.get("cache_entry") is not None, "not served from the entry written"
    assert not isinstance(hit.args_raw.blob, FileBlob) and _all_args(hit) == _all_args(first)
    assert np.array_equal(hit.ext, first.ext) and np.array_equal(hit.corr, first.corr)
    back = pickle.loads(pickle.dumps(first.args_raw))
    assert isinstance(back.blob, bytes) and [back[i] for i in range(len(back))] == _all_args(first)


def test_reading_many_events_args_at_once_equals_reading_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = _plain(tmp_path)
    store = _load(trace).args_raw
    each = [store[i] for i in range(len(store))]
    rng = np.random.default_rng(7)
    n = len(store)
    subsets = [np.arange(n), rng.permutation(n)[:5000], np.sort(rng.choice(n, 40, replace=False)),
               np.array([n - 1, 0, n // 2, 0]), np.zeros(0, np.int64)]
    for window, gap in ((16 << 20, 64 << 10), (4096, 16), (1, 0)):  # one read, many, one per event
        monkeypatch.setattr(margs, "_WINDOW", window)
        monkeypatch.setattr(margs, "_GAP", gap)
        for idx in subsets:
            got = [bytes(r) for r in raw_many(store, idx)]
            assert got == [each[i] if each[i] is not None else b"{}" for i in idx.tolist()]
        pieces, total, starts, ends = store.compacted()
        blob = b"".join(pieces)
        assert len(blob) == total
        packed = ArgsStore(blob, starts, ends)
        assert [packed[i] for i in range(n)] == each


def test_a_piece_the_builder_leaves_joins_the_file_ones_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = []
    for i in range(3000):
        texts.append(json.dumps({"ph": "X", "name": f"op{i % 13}", "cat": "cpu_op", "pid": 1, "tid": 10 + i % 2,
                                 "ts": i * 3 + 0.5, "dur": 2, "args": {"i": i, "s": "x" * (i % 50)}}))
    texts[1500] = '{"name": "first of two", ' + texts[1500][1:]  # a duplicate field: left to the Python path
    trace = tmp_path / "t.json"
    trace.write_text('{"traceEvents": [' + ",\n".join(texts) + "]}", encoding="utf-8")
    monkeypatch.setattr(chunks, "_CHUNK_BYTES", 4 << 10)
    got = _load(trace)
    assert not isinstance(got.args_raw.blob, FileBlob)
    monkeypatch.setenv(parser.ENV, "python")
    assert digest(got) == digest(load_kineto(trace))


def test_the_apps_own_loads_copy_the_args(tmp_path: Path) -> None:
    from trntui.request import request_for
    from trntui.tui.loader import in_app, load_run

    assert in_app(None).args_from_file is False
    assert in_app(LoadOptions(memory_budget=None)).memory_budget is None
    trace = _plain(tmp_path)
    (run,) = find_runs(trace)
    request = request_for(trace, run, options=LoadOptions(cache=False))
    profile = load_run(request, None, 4)
    assert not isinstance(profile.args_raw.blob, FileBlob)


def test_input_shapes_read_in_batches_equal_the_per_event_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--group-by-input-shapes` reads the args of a batch of events at once (`input_shapes_many`); a batch holding
    damaged args falls back to the per-event decode: the same strings as `input_shapes_of` either way."""
    from trntui.analysis.key_averages import names
    from trntui.model.args import ArgsStore

    events = [{"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 5}", "pid": 1, "tid": 1, "ts": i, "dur": 1,
               "args": {"Input Dims": [[i % 3, 4], [], [[1, 2], [3]]][: 1 + i % 3],
                        "Input type": ["float", "", "TensorList"][: 1 + i % 3]} if i % 4 else {"x": i}}
              for i in range(3000)]
    odd = ['{"Input Dims": null, "Input dims": [[5]]}', '{"Input dims": [[6, 7]], "Input type": null}',
           '{"Input Dims": [[1]], "Input Dims": [[8, 9]]}', '{"Input Dims": "not a list"}', '{"Input\\u0020Dims": [[3]]}']
    texts = [json.dumps(e) for e in events]
    for k, a in enumerate(odd):  # (key cases `dict.get` reads in its own way: a present null, a duplicate, ...)
        texts[100 + k] = json.dumps({**events[100 + k], "args": None}).replace("null}", a + "}")
    texts[2000] = json.dumps({**events[2000], "args": None}).replace("null}", "[1, 2]}")  # args not an object
    trace = tmp_path / "t.json"
    trace.write_text('{"traceEvents": [' + ",".join(texts) + "]}")
    profile = _load(trace)
    assert isinstance(profile.args_raw.blob, FileBlob)
    monkeypatch.setattr(margs, "_BATCH", 700)  # (model/args.py `decoded_batches`)
    idx = np.arange(len(profile))[::-1]
    one_by_one = [names.input_shapes_of(profile, int(i)) for i in idx]
    assert names.input_shapes_many(profile, idx) == one_by_one
    assert len(set(one_by_one)) > 3 and {"[[6, 7]]", "[[8, 9]]", "not a list", "[[3]]"} <= set(one_by_one)
    assert "[[5]]" not in one_by_one  # (a present null "Input Dims" is what `dict.get` gives: no shapes)
    # damaged args in memory (a store of raw bytes): that batch decodes event by event
    store = profile.args_raw.in_memory()
    raws = [store[i] for i in range(len(store))]
    raws[10] = b'{"Input Dims": [[1, 2]], "Input type": ["float"], bad'
    profile.args_raw = ArgsStore.from_raw(raws)
    assert names.input_shapes_many(profile, idx) == [names.input_shapes_of(profile, int(i)) for i in idx]


def test_args_decoded_a_batch_at_a_time_equal_profile_args(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`decoded_many` (the Neuron mapping's loop over every framework op) gives `Profile.args(i)` for each event, for
    args left in the file, in memory, damaged, and a store that is a plain list."""
    trace = _plain(tmp_path)
    profile = _load(trace)
    monkeypatch.setattr(margs, "_BATCH", 999)
    idx = np.random.default_rng(3).permutation(len(profile))[:20_000]
    want = [profile.args(int(i)) for i in idx]
    assert list(margs.decoded_many(profile.args_raw, idx)) == want
    raws = [profile.args_raw[i] for i in range(len(profile))]
    raws[int(idx[5])] = b'{"broken": '
    raws[int(idx[6])] = b"[1, 2]"
    for store in (ArgsStore.from_raw(raws), raws, [{"a": 1} if r is None else r for r in raws]):
        profile.args_raw = store
        assert list(margs.decoded_many(store, idx)) == [profile.args(int(i)) for i in idx]


TRUNCATE_DURING_SCANS = r"""
import os, sys
from trntui.loaders.kineto import chunks, early
early._MAP_MIN_BYTES = 0
chunks._CHUNK_BYTES = 64 << 10
chunks._threads = lambda: 2
real = chunks.scan_text
calls = []
def scan_text(piece, copy=True):
    calls.append(1)
    if len(calls) == int(sys.argv[2]):
        os.truncate(sys.argv[1], 1000)  # another program rewrites the trace while it is read
    return real(piece, copy)
chunks.scan_text = scan_text
from trntui import cli
sys.exit(cli.main(["summary", sys.argv[1], "--no-cache"]))
"""


@pytest.mark.parametrize("at", [100, 200])
def test_a_file_truncated_while_it_is_scanned_is_a_one_line_error_not_sigbus(tmp_path: Path, at: int) -> None:
    """The scans read a memory map of the file: a read past the new end of a file truncated meanwhile is a SIGBUS,
    which the scanner's guard turns into an error (`_scan.DataVanished`), said as one line naming the file, exit 2.
    (The trace is ~235 pieces; at most 64 are scanned before the load claims them, so the 100th scan and later run
    under the load: a file truncated before that claim is read afresh, and is then damaged JSON.)"""
    trace = _plain(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("TRNTUI_KINETO_PARSER", "TRNTUI_DEBUG")}
    env["PYTHONPATH"] = str(ROOT)
    got = subprocess.run([sys.executable, "-c", TRUNCATE_DURING_SCANS, str(trace), str(at)], capture_output=True,
                         text=True, env=env, timeout=120)
    assert got.returncode == 2, (got.returncode, got.stderr[-2000:])
    assert got.stderr.strip().splitlines() == [f"trntui: error: {trace}: was truncated while it was read (another "
                                                "program is rewriting it?): load it again once it is written"]


def test_the_boundary_search_is_the_regex_one() -> None:
    """`_scan.boundary` (the cut between pieces, read under the SIGBUS guard) finds what `pieces.BOUNDARY` finds."""
    import random

    from trntui.loaders.kineto.pieces import BOUNDARY

    rng = random.Random(5)
    alphabet = b'}{, \t\n\r\f\vax"'
    for _ in range(20_000):
        data = bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        pos = rng.randint(-2, 32)
        m = BOUNDARY.search(data, max(pos, 0)) if pos <= len(data) else None
        assert parser._scan.boundary(data, pos) == ((m.start(), m.end()) if m else None), (data, pos)


def test_the_packed_args_are_the_same_gathered_in_c_or_with_writev(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache's args blob of a store over the file: `_kernels.gather_ranges` and the Python `writev` path write
    the same bytes, and each event's args read back from them are its args (also with windows smaller than one
    event's args, and over a file truncated meanwhile: the one-line error)."""
    from trntui.model import kernels

    trace = _plain(tmp_path)
    store = _load(trace).args_raw
    each = [store[i] for i in range(len(store))]
    out = {}
    for name, compiled, window in (("c", True, None), ("writev", False, None), ("writev-small", False, 100)):
        if not compiled:
            monkeypatch.setattr(kernels, "kernel", lambda: None)
        if window:
            monkeypatch.setattr(margs, "_WINDOW", window)
        with open(tmp_path / f"{name}.bin", "wb") as f:
            f.write(b"HEAD")
            total, starts, ends = store.write_packed(f)
        data = (tmp_path / f"{name}.bin").read_bytes()
        assert data[:4] == b"HEAD" and len(data) == 4 + total == 4 + store.packed_length()
        packed = ArgsStore(data[4:], starts, ends)
        assert [packed[i] for i in range(len(packed))] == each
        out[name] = data
    assert out["c"] == out["writev"] == out["writev-small"]
    monkeypatch.undo()
    with open(trace, "r+b") as f:
        f.truncate(len(trace.read_bytes()) // 2)
    with open(tmp_path / "late.bin", "wb") as f, pytest.raises(LoadError, match="changed on disk"):
        store.write_packed(f)
