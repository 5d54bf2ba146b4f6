"""The chunked (and two-process) decode of the event array gives exactly the whole-file path's profile."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from trntui.loaders import kineto
from trntui.loaders.kineto import chunks as kchunks
from trntui.loaders.kineto import early as kearly
from trntui.loaders.kineto import load as kload
from trntui.loaders.files import read_bytes
from trntui.model.builder import ProfileBuilder
from trntui.model.profile import Profile, ProfileMeta


def whole_file(path: Path) -> Profile:
    """The reference: one decode of the whole file, then the columns (what the loader did before chunks)."""
    builder = ProfileBuilder(ProfileMeta())
    data, _ = read_bytes(path)
    builder.meta.sources.append(str(path))
    events, top = kineto.decode_trace(data, path, builder.meta)
    kineto.add_events(events, top, builder, path=path)
    return builder.finish()


def assert_same(a: Profile, b: Profile) -> None:
    for c in ("start", "end", "lane", "name", "cat", "kind", "ext", "corr"):
        x, y = getattr(a, c), getattr(b, c)
        assert x.dtype == y.dtype and np.array_equal(x, y), c
    assert a.names == b.names and a.cats == b.cats
    assert [vars(lane) for lane in a.lanes] == [vars(lane) for lane in b.lanes]
    for c in ("key", "event", "cat", "role"):
        assert np.array_equal(getattr(a.flows, c), getattr(b.flows, c)), c
    assert list(a.args_raw) == list(b.args_raw)
    assert vars(a.meta) == vars(b.meta)


def synthetic(seed: int) -> list[dict]:
    rnd = random.Random(seed)
    evs = []
    for i in range(600):
        ph = rnd.choice("XXXXiBEsfMCt")
        e = {"ph": ph, "name": rnd.choice(["a", "b}, {c", f"n{i % 37}"]), "cat": rnd.choice(["cpu_op", "kernel", "cuda_runtime", "", "ac2g"]),
             "ts": rnd.uniform(0, 1e6), "pid": rnd.choice([1, 2, "strpid", "7", 2**62 + 5]), "tid": rnd.choice([1, 5, "T}, {x", 3])}
        if ph == "X":
            e["dur"] = rnd.choice([1.5, 10, -3])
        if ph in "sf":
            e["id"] = rnd.choice([1, 2, 3, None, "9", 2**63])
            e["bp"] = "e"
        if rnd.random() < 0.5:
            e["args"] = {"External id": rnd.choice([1, 2, "x", None, 2.5]), "correlation": rnd.choice([1, 4, 7]),
                         "l": [{"a": 1}, {"b": "}, {"}]}
        if ph == "M":
            e["name"] = rnd.choice(["process_name", "thread_name", "process_labels"])
            e["args"] = {"name": "p", "labels": "GPU 0"}
        evs.append(e)
    return evs


@pytest.fixture
def tiny_chunks(monkeypatch):
    def use(chunk: int, parser: str) -> None:
        monkeypatch.setattr(kchunks, "_CHUNK_BYTES", chunk)
        _use_parser(monkeypatch, parser)
    return use


PARSERS = ["python", "compiled"]


def _use_parser(monkeypatch, parser: str) -> None:
    """Force a Kineto parser (the compiled one only where it is built)."""
    from trntui.loaders.kineto.parser import _scan

    if parser == "compiled" and _scan is None:
        pytest.skip("the compiled Kineto parser is not built in this install")
    monkeypatch.setenv("TRNTUI_KINETO_PARSER", parser)


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("chunk", [40, 3000])
def test_corpus_traces_identical(corpus_dir, tiny_chunks, chunk, parser) -> None:
    tiny_chunks(chunk, parser)
    for path in sorted(corpus_dir.glob("*.json*"))[:6]:
        assert_same(kineto.load_kineto(path), whole_file(path))


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("chunk", [40, 3000, 1 << 24])
def test_synthetic_edge_cases_identical(tmp_path, tiny_chunks, chunk, parser) -> None:
    tiny_chunks(chunk, parser)
    evs = synthetic(chunk)
    ints = [dict(e, pid=1, tid=2, dur=5, args={"External id": 5}) for e in evs if e["ph"] == "X"]
    body = json.dumps(ints)
    docs = {
        "obj.json": json.dumps({"schemaVersion": 1, "traceEvents": evs, "baseTimeNanoseconds": 1000}, indent=1),
        "arr.json": json.dumps(evs),
        # metadata after the events, with arrays of objects in it
        "tail.json": '{"traceEvents": ' + body + ', "deviceProperties": [{"a": [1]}, {"warpSize": 64}], "baseTimeNanoseconds": 77, "x": [[1]]} \n',
        "bom.json": '\ufeff{"traceEvents": ' + body + ', "baseTimeNanoseconds": 77}',
        "nested.json": '{"meta": {"traceEvents": [1]}, "traceEvents": ' + body + "}",
        "dup.json": '{"traceEvents": ' + body + ', "traceEvents": ' + json.dumps(ints[:3]) + "}",
        "mistyped.json": '{"traceEvents": ' + body[:-1] + ', {"ph": "X", "ts": "12", "name": "s"}]}',
    }
    for name, text in docs.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        assert_same(kineto.load_kineto(path), whole_file(path))


@pytest.mark.parametrize("parser", PARSERS)
def test_mapped_plain_file_identical(tmp_path, corpus_dir, monkeypatch, parser) -> None:
    """A big plain trace is decoded from a memory map of the file (no copy, pages dropped as it goes): the
    result is the same as reading it; a damaged one still takes the whole-file path with its recovery."""
    import gzip

    plain = tmp_path / "trace.json"
    plain.write_bytes(gzip.decompress((corpus_dir / "cuda_ns_resolution_68k.json.gz").read_bytes()))
    _use_parser(monkeypatch, parser)
    monkeypatch.setattr(kearly, "_MAP_MIN_BYTES", 1 << 62)
    read = kineto.load_kineto(plain)
    mapped_calls = []
    real = kload._load_mapped
    monkeypatch.setattr(kload, "_load_mapped", lambda *a, **k: mapped_calls.append(r := real(*a, **k)) or r)
    monkeypatch.setattr(kearly, "_MAP_MIN_BYTES", 0)
    assert_same(kineto.load_kineto(plain), read)
    assert mapped_calls == [True]
    cut = tmp_path / "cut.json"
    cut.write_bytes(plain.read_bytes()[: plain.stat().st_size // 2])
    monkeypatch.setattr(kearly, "_MAP_MIN_BYTES", 1 << 62)
    want = kineto.load_kineto(cut)
    monkeypatch.setattr(kearly, "_MAP_MIN_BYTES", 0)
    got = kineto.load_kineto(cut)
    assert mapped_calls[-1] is False  # not plain valid JSON: the whole-file path recovered it
    assert_same(got, want)
    assert got.meta.notes == want.meta.notes
