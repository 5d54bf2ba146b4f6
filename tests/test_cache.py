"""The parsed-profile cache: a hit gives the same profile and table, a changed file is a miss, no pickle."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import trntui
from trntui import cache, session
from trntui.cache import keys as cache_keys
from trntui.model.args import ArgsStore
from trntui.analysis.key_averages import key_averages
from trntui.session import find_runs, load_run


@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    monkeypatch.setenv("TRNTUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRNTUI_CACHE_MIN_BYTES", "0")
    monkeypatch.delenv("TRNTUI_NO_CACHE", raising=False)
    return tmp_path / "cache"


@pytest.fixture
def trace(tmp_path, corpus_dir) -> Path:
    dst = tmp_path / "prof" / "cuda_sampled_rank0.json.gz"
    dst.parent.mkdir()
    shutil.copy(corpus_dir / "cuda_sampled_rank0.json.gz", dst)
    return dst


def _run(path: Path):
    (run,) = find_runs(path)
    return run


def _same_profile(a, b) -> None:
    for c in ("start", "end", "lane", "name", "cat", "kind", "ext", "corr"):
        assert np.array_equal(getattr(a, c), getattr(b, c)), c
    assert a.names == b.names and a.cats == b.cats
    assert [vars(x) for x in a.lanes] == [vars(x) for x in b.lanes]
    for c in ("key", "event", "cat", "role"):
        assert np.array_equal(getattr(a.flows, c), getattr(b.flows, c)), c
    assert len(a.args_raw) == len(b.args_raw)
    for i in range(0, len(a), 97):
        assert a.args(i) == b.args(i)
    assert a.meta.skipped == b.meta.skipped and a.meta.notes == b.meta.notes
    assert a.meta.backend == b.meta.backend and a.meta.device_kind == b.meta.device_kind


def _same_table(t1, t2) -> None:
    assert t1.name == t2.name and t1.device_type == t2.device_type and t1.input_shapes == t2.input_shapes
    for c in ("count", "self_cpu_time_total", "cpu_time_total", "self_device_time_total", "device_time_total"):
        assert np.array_equal(getattr(t1, c), getattr(t2, c)), c
    assert t1.sum_self_cpu == t2.sum_self_cpu and t1.sum_self_device == t2.sum_self_device
    assert all(np.array_equal(x, y) for x, y in zip(t1.rows_events, t2.rows_events))


def test_hit_gives_identical_profile_and_key_averages(cache_env, trace):
    fresh = load_run(_run(trace), cache=False)
    first = load_run(_run(trace))  # miss: parses and writes the entry
    entries = [p for p in cache_env.iterdir() if p.is_dir()]
    assert len(entries) == 1
    assert not list(trace.parent.glob("*.npy")), "never writes next to the profile"
    assert not list(entries[0].glob("*.pkl"))
    hit = session.cached(_run(trace))
    assert hit is not None
    _same_profile(fresh, hit)
    _same_profile(first, hit)
    # the stored table is the one computed from scratch
    assert ("key_averages", False) in hit.cache
    _same_table(key_averages(fresh), key_averages(hit))
    # and recomputing it from the cached columns gives the same numbers again
    hit.cache.clear()
    _same_table(key_averages(fresh), key_averages(hit))


def test_mtime_change_invalidates(cache_env, trace):
    load_run(_run(trace))
    assert session.cached(_run(trace)) is not None
    st = trace.stat()
    os.utime(trace, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert session.cached(_run(trace)) is None
    load_run(_run(trace))  # rewrites the entry in place
    assert len([p for p in cache_env.iterdir() if p.is_dir()]) == 1
    assert session.cached(_run(trace)) is not None


def test_content_change_is_seen(cache_env, trace, corpus_dir):
    load_run(_run(trace))
    shutil.copy(corpus_dir / "cuda_alexnet.json.gz", trace)  # same name, other content (size differs)
    p = load_run(_run(trace))
    assert len(p) == len(load_run(_run(trace), cache=False))


def test_disabled_and_small_files(cache_env, trace, monkeypatch):
    monkeypatch.setenv("TRNTUI_NO_CACHE", "1")
    load_run(_run(trace))
    assert not cache_env.exists() or not any(cache_env.iterdir())
    monkeypatch.delenv("TRNTUI_NO_CACHE")
    monkeypatch.setenv("TRNTUI_CACHE_MIN_BYTES", str(1 << 40))
    load_run(_run(trace))
    assert not cache_env.exists() or not any(cache_env.iterdir())


def test_cache_dir_resolution(monkeypatch, tmp_path):
    monkeypatch.delenv("TRNTUI_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "trntui"
    monkeypatch.setenv("TRNTUI_CACHE_DIR", str(tmp_path / "mine"))
    assert cache.cache_dir() == tmp_path / "mine"


def test_corrupt_entry_is_a_miss(cache_env, trace):
    load_run(_run(trace))
    (entry,) = [p for p in cache_env.iterdir() if p.is_dir()]
    (entry / "start.npy").write_bytes(b"garbage")
    assert session.cached(_run(trace)) is None
    assert len(load_run(_run(trace))) > 0


def test_args_store_roundtrip():
    raws = [b'{"a": 1}', None, b"{}", None]
    store = ArgsStore.from_raw(raws)
    assert len(store) == 4
    assert [store[i] for i in range(4)] == raws
    assert store[-2] == b"{}"


def test_summary_no_cache_flag(cache_env, trace, capsys):
    from trntui.cli import main

    assert main(["summary", str(trace), "--limit", "5"]) == 0
    with_cache = capsys.readouterr().out
    assert any(p.is_dir() for p in cache_env.iterdir())
    assert main(["summary", str(trace), "--limit", "5"]) == 0  # from the cache
    assert capsys.readouterr().out == with_cache
    assert main(["summary", str(trace), "--limit", "5", "--no-cache"]) == 0
    assert capsys.readouterr().out == with_cache


def test_chunked_args_round_trip_through_the_cache(tmp_path, monkeypatch, corpus_dir) -> None:
    """A profile decoded in several chunks keeps its args in the chunks' blobs (never joined in memory); the
    cache writes them piece by piece and a cached re-open gives every event the same args bytes."""
    from trntui.session import find_runs, load_run
    from trntui.loaders.kineto import chunks as kineto
    from trntui.model.args import Blobs

    monkeypatch.setenv("TRNTUI_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("TRNTUI_CACHE_MIN_BYTES", "0")
    monkeypatch.setattr(kineto, "_CHUNK_BYTES", 1 << 20)
    run = find_runs(corpus_dir / "cuda_ns_resolution_68k.json.gz")[0]
    fresh = load_run(run, cache=True)
    assert isinstance(fresh.args_raw.blob, Blobs) and len(fresh.args_raw.blob.blobs) > 3
    again = session.cached(run)
    assert again is not None and len(again) == len(fresh)
    assert all(fresh.args_raw[i] == again.args_raw[i] for i in range(len(fresh)))
    assert sum(1 for i in range(len(fresh)) if fresh.args_raw[i]) > 1000


def test_neuron_run_is_cached_and_identical(tmp_path, monkeypatch, repo_dir) -> None:
    """A Neuron run read from an Explorer export is cached like a Kineto run: the re-open gives the same table
    (device time from the system trace), chains and metadata; changing any export file is a miss."""
    from trntui.analysis.chains import follow
    from trntui.analysis.key_averages import key_averages
    from trntui.session import find_runs, load_run

    monkeypatch.setenv("TRNTUI_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("TRNTUI_CACHE_MIN_BYTES", "0")
    src = repo_dir / "sample_profiles" / "neuron" / "naive"
    shutil.copytree(src, tmp_path / "naive")
    run = find_runs(tmp_path / "naive")[0]
    assert run.inputs and any(p.suffix == ".parquet" for p in run.inputs)
    fresh = load_run(run, cache=True)
    again = session.cached(run)
    assert again is not None
    ta, tb = key_averages(fresh), key_averages(again)
    assert ta.name == tb.name and np.array_equal(ta.self_device_time_total, tb.self_device_time_total)
    assert tb.backend == "NEURON" and again.meta.device_kind == "neuron" and again.meta.notes == fresh.meta.notes
    again.cache.clear()  # links, device time and chains rebuilt from the cached columns
    assert np.array_equal(key_averages(again).self_device_time_total, ta.self_device_time_total)
    i = int(np.nonzero(np.asarray(fresh.names, object)[fresh.name] == "aten::mul")[0][0])
    ca, cb = follow(fresh, i), follow(again, i)
    assert [[h.name for h in br] for br in ca.branches] == [[h.name for h in br] for br in cb.branches]
    assert any(h.name == "nc_exec_running" for br in cb.branches for h in br)
    parquet = next(p for p in run.inputs if p.suffix == ".parquet")
    os.utime(parquet, ns=(1, 1))
    assert session.cached(find_runs(tmp_path / "naive")[0]) is None  # a changed export file is a miss


def test_derived_arrays_round_trip_and_damage_is_a_miss(tmp_path):
    """Arrays kept beside an entry (the timeline's rows) read back equal; a flipped byte, a cut file or a
    member that points outside the file is a miss and the file is removed (the rows are then rebuilt)."""

    class Cached:
        cache = {"cache_entry": tmp_path}

    arrays = {"parent": np.arange(50_000, dtype=np.int64) - 1, "depth": (np.arange(50_000) % 5).astype(np.int8)}
    path = tmp_path / "derived_rows.npz"
    for damage in (None, "flip", "cut", "offset"):
        cache.save_derived(Cached, "rows", arrays)
        data = bytearray(path.read_bytes())
        if damage == "flip":
            data[len(data) // 2] ^= 0x40
        elif damage == "cut":
            data = data[: len(data) - 1000]
        elif damage == "offset":  # the first central-directory record's local-header offset moved past the end
            at = data.rindex(b"PK\x01\x02")
            data[at + 42 : at + 46] = (len(data) + 10).to_bytes(4, "little")
        path.write_bytes(bytes(data))
        got = cache.load_derived(Cached, "rows")
        if damage is None:
            assert got is not None and set(got) == set(arrays)
            assert all(np.array_equal(got[k], arrays[k]) and got[k].dtype == arrays[k].dtype for k in arrays)
        else:
            assert got is None and not path.exists(), damage


def test_an_entry_made_by_other_code_is_a_miss(cache_env, trace, monkeypatch):
    """The lane labels changed once without a FORMAT bump and old entries kept showing `TID:None`: an entry is
    keyed by the code that made it (path, size, mtime of every module), so any change to it is a miss."""
    load_run(_run(trace))
    assert session.cached(_run(trace)) is not None
    monkeypatch.setattr(cache_keys, "_CODE", ["another build of trntui"])
    assert session.cached(_run(trace)) is None
    load_run(_run(trace))  # the entry is rewritten under this code's stamp
    assert session.cached(_run(trace)) is not None


def test_the_code_stamp_changes_with_any_module(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "loaders" / "__pycache__").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    mod = pkg / "loaders" / "merge.py"
    mod.write_text("LABEL = 'TID:{tid}'\n")
    (pkg / "README.md").write_text("not code")
    first = cache.tree_stamp(pkg)
    assert cache.tree_stamp(pkg) == first
    (pkg / "loaders" / "__pycache__" / "merge.cpython-311.pyc").write_bytes(b"x")
    (pkg / "README.md").write_text("still not code, other size")
    assert cache.tree_stamp(pkg) == first, "only modules count"
    st = mod.stat()
    os.utime(mod, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert cache.tree_stamp(pkg) != first
    assert cache.code_stamp() == cache.tree_stamp(Path(trntui.__file__).resolve().parent)
