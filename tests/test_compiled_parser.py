"""The compiled column builder (trntui/loaders/kineto/_scan.c) against the Python path: identical profiles
(SHA-256 of every column, names, lanes, flows, args bytes, link ids, metadata, both key_averages tables) on the
vendored corpus and on generated hostile traces; pieces it leaves to the Python path still give the same result
or the same error; `TRNTUI_KINETO_PARSER` forces each path."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.kineto_digest import digest
from trntui.errors import LoadError, TrntuiError
from trntui.loaders.kineto import parser
from trntui.loaders.kineto.load import load_kineto
from trntui.loaders.kineto.pieces import array_span

DATA = Path(__file__).parent / "data" / "kineto"
CORPUS = sorted(p for p in DATA.iterdir() if p.name.endswith((".json", ".json.gz")))

needs_ext = pytest.mark.skipif(parser._scan is None, reason="the compiled parser is not built in this install")


def _load(path: Path, mode: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(parser.ENV, mode)
    try:
        return digest(load_kineto(path))
    except TrntuiError as e:
        return f"{type(e).__name__}: {e}"


def _events_text(path: Path) -> memoryview:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    a, ends = array_span(data)
    e, _ = next(ends)
    return memoryview(data)[a + 1 : e]


@needs_ext
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_corpus_same_on_both_paths(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert parser._scan.scan(_events_text(path)) is not None, "the compiled builder left this real trace to Python"
    py = _load(path, "python", monkeypatch)
    c = _load(path, "compiled", monkeypatch)
    assert isinstance(py, dict)
    assert c == py


def test_forced_python_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(parser.ENV, "python")
    assert parser.parser_name() == "python"
    assert "python" in parser.describe()


def test_forced_compiled_without_extension_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(parser.ENV, "compiled")
    monkeypatch.setattr(parser, "_scan", None)
    with pytest.raises(parser.ParserUnavailable) as e:
        parser.parser_name()
    assert "\n" not in str(e.value) and "TRNTUI_NO_EXT" in str(e.value)


def _trace(events: list, tmp_path: Path, name: str = "t.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps({"traceEvents": events, "baseTimeNanoseconds": 1_000}), encoding="utf-8")
    return p


HOSTILE = {
    "string pids and tids": [
        {"ph": "X", "name": "a", "cat": "cpu_op", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 1, "dur": 2},
        {"ph": "X", "name": "b", "cat": "cpu_op", "pid": 7, "tid": "12", "ts": 2, "dur": 1},
    ],
    "numeric string pids": [{"ph": "X", "name": "a", "pid": "3", "tid": " 4", "ts": 1, "dur": 2}],
    "escaped names": [
        {"ph": "X", "name": "q\"\\u00e9\n\t\ud83d\ude00", "cat": "c\\/d", "pid": 1, "tid": 1, "ts": 1, "dur": 2},
        {"ph": "X", "name": "q\"\u00e9\n\t\U0001f600", "cat": "c/d", "pid": 1, "tid": 1, "ts": 3, "dur": 2},
    ],
    "absent fields": [{"ph": "X"}, {"ph": "i", "name": "x"}, {}],
    "floats and exponents": [
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1.0000005, "dur": 2.5e-3},
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1e300, "dur": -1},
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 123456789012345678901234, "dur": 0.1},
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": -0.0, "dur": 1e-400},
    ],
    "big ints": [{"ph": "X", "name": "a", "pid": 2**70, "tid": -(2**63), "ts": 1, "dur": 2}],
    "flows": [
        {"ph": "X", "name": "k", "cat": "kernel", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"correlation": 3}},
        {"ph": "X", "name": "cudaLaunchKernel", "cat": "cuda_runtime", "pid": 1, "tid": 1, "ts": 5, "dur": 2,
         "args": {"correlation": 3, "External id": 9}},
        {"ph": "s", "id": 3, "pid": 1, "tid": 1, "ts": 5, "cat": "ac2g", "name": "ac2g"},
        {"ph": "f", "id": 3, "pid": 0, "tid": 7, "ts": 10, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        {"ph": "s", "id": None, "pid": 1, "tid": 1, "ts": 6, "cat": "ac2g"},
        {"ph": "f", "id": "0x10", "pid": 1, "tid": 1, "ts": 6, "cat": "ac2g"},
        {"ph": "t", "id": 4, "pid": 1, "tid": 1, "ts": 6},
        {"ph": "s", "id": 2**64, "pid": 1, "tid": 1, "ts": 6, "cat": "ac2g"},
    ],
    "link ids of every kind": [
        {"ph": "X", "name": "op", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 1, "dur": 9, "args": {"External id": 5}},
        {"ph": "X", "name": "rt", "cat": "cuda_runtime", "pid": 1, "tid": 1, "ts": 2, "dur": 1,
         "args": {"external id": 5, "correlation": 7.0}},
        {"ph": "X", "name": "rt", "cat": "cuda_runtime", "pid": 1, "tid": 1, "ts": 3, "dur": 1,
         "args": {"External id": "6", "correlation": None, "x": {"External id": 1}}},
        {"ph": "X", "name": "rt", "cat": "cuda_runtime", "pid": 1, "tid": 1, "ts": 4, "dur": 1, "args": [1]},
        {"ph": "X", "name": "rt", "cat": "cuda_runtime", "pid": 1, "tid": 1, "ts": 5, "dur": 1,
         "args": {"correlation": 1, "correlation": 2}},
    ],
    "begin end and metadata": [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}},
        {"ph": "B", "name": "outer", "pid": 1, "tid": 2, "ts": 1},
        {"ph": "X", "name": "x", "pid": 1, "tid": 2, "ts": 2, "dur": 1},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 5},
        {"ph": "C", "name": "mem", "pid": 1, "ts": 3, "args": {"v": 1}},
    ],
    "wrong types": [{"ph": "X", "name": 3, "pid": 1, "tid": 1, "ts": 1, "dur": 1}],
    "null ts": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": None, "dur": 1}],
    "bool id": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "id": True}],
    "float pid": [{"ph": "X", "name": "a", "pid": 1.5, "tid": 1, "ts": 1, "dur": 1}],
    "deep args": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"a": [[[[[[[[[[1]]]]]]]]]]}}],
}


@needs_ext
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_same_on_both_paths(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _trace(HOSTILE[case], tmp_path)
    assert _load(path, "compiled", monkeypatch) == _load(path, "python", monkeypatch)


@needs_ext
@pytest.mark.parametrize(
    "text",
    [
        b'{"traceEvents": [{"ph": "X", "name": "a\xff", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}',
        b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1},]}',
        b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 01, "dur": 1}]}',
        b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}, {"ph": "X", "na',
        b'{"traceEvents": [{"ph": "X", "name": "\\ud800", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}',
        b'{"traceEvents": [{"ph": "X", "name": "tab\there", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}',
        b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1e999, "dur": 1}]}',
        b'{"traceEvents": [1, 2]}',
        b'{"traceEvents": [{"\\u0070h": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}',
        b'{"traceEvents": [{"ph": "X", "ph": "i", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}',
        b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": ' + b"[" * 500
        + b"]" * 500 + b"}]}",
    ],
    ids=["bad-utf8", "trailing-comma", "leading-zero", "truncated", "lone-surrogate", "control-char", "overflow",
         "not-objects", "escaped-key", "duplicate-key", "deep-nesting"],
)
def test_damaged_same_result_or_error(text: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(text)
    assert _load(path, "compiled", monkeypatch) == _load(path, "python", monkeypatch)


@needs_ext
def test_scan_never_reads_past_its_buffer() -> None:
    """Every prefix of a valid piece is scanned without a crash (a cut one is left to the Python path)."""
    events = HOSTILE["flows"][:4] + HOSTILE["escaped names"] + HOSTILE["begin end and metadata"]
    text = json.dumps(events)[1:-1].encode()
    for k in range(len(text)):
        got = parser._scan.scan(memoryview(text)[:k])  # (a memoryview slice: no NUL after the end)
        assert got is None or got[0] >= 0
    assert parser._scan.scan(text) is not None


def test_load_error_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "nothing.json"
    path.write_text('{"traceEvents": []}')
    for mode in ("python",) + (("compiled",) if parser._scan is not None else ()):
        monkeypatch.setenv(parser.ENV, mode)
        with pytest.raises(LoadError) as e:
            load_kineto(path)
        assert "nothing.json" in str(e.value)


def test_version_says_which_parser() -> None:
    import os
    import subprocess
    import sys

    for mode in ("python",) + (("compiled",) if parser._scan is not None else ()):
        r = subprocess.run([sys.executable, "-m", "trntui.cli", "--version"], capture_output=True, text=True,
                           env={**os.environ, parser.ENV: mode}, timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("trntui ") and f"kineto parser: {mode}" in r.stdout


@needs_ext
def test_timestamps_convert_exactly_as_python() -> None:
    """The scanner's own decimal conversion (17-digit Kineto timestamps and the like, without strtod) gives
    Python's float(text) to the last bit: random decimals of 1-19 significant digits, halfway cases (ties to
    even) and numbers next to powers of two."""
    import random

    import numpy as np

    rng = random.Random(32)
    texts = []
    for _ in range(20000):
        digits = rng.randint(1, 19)
        m = rng.randrange(10 ** (digits - 1), 10**digits)
        k = rng.randint(0, min(digits + 3, 19))
        t = str(m).rjust(k + 1, "0")
        texts.append(("-" if rng.random() < 0.1 else "") + (t[:-k] + "." + t[-k:] if k else t))
    for e in range(53, 64):  # ties: 2^e + 2^(e-53) (and neighbours) written with a fraction
        for d in (-1, 0, 1):
            for k in (1, 2, 3):
                v = (2**e + 2 ** (e - 53) + d) * 10**k
                texts.append(str(v)[:-k] + "." + str(v)[-k:])
    texts += ["1712195496708492.5", "1712195496716658.8", "0.000", "-0.0", "123456789012345678.9", "0.1234567890123456789"]
    piece = ",".join(f'{{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": {t}, "dur": 0}}' for t in texts).encode()
    got = parser._scan.scan(piece)
    assert got is not None
    ts = np.frombuffer(got[2], np.float64)
    want = np.array([float(t) for t in texts])
    assert ts.view(np.int64).tolist() == want.view(np.int64).tolist()


@needs_ext
@pytest.mark.parametrize("parser", ["compiled", "python"])
def test_a_load_decodes_in_one_process(parser: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Both paths decode a big plain trace (mapped, chunk by chunk) in the loading process: nothing is forked
    (the compiled builder took less CPU and no more wall time in one process than in two on the 2M trace,
    bench/RESULTS.md; the Python path is the plain fallback), and the result is the same on both."""
    import gzip
    import os

    from trntui.loaders.kineto import chunks, early

    def no_fork() -> int:
        raise AssertionError("a Kineto load forked a process")

    monkeypatch.setattr(os, "fork", no_fork)
    monkeypatch.setattr(early, "_MAP_MIN_BYTES", 0)
    monkeypatch.setattr(chunks, "_CHUNK_BYTES", 256 << 10)
    plain = tmp_path / "trace.json"
    plain.write_bytes(gzip.decompress((DATA / "cuda_ns_resolution_68k.json.gz").read_bytes()))
    other = "python" if parser == "compiled" else "compiled"
    assert _load(plain, parser, monkeypatch) == _load(plain, other, monkeypatch)


def _many_pieces(tmp_path: Path, left: str) -> Path:
    """A plain trace of ~60 pieces at 4 KB each; `left` names the piece holding one event the builder leaves to the
    Python path (a duplicate field, which msgspec reads: the last one counts): none, the first, one in the middle or
    the last."""
    texts = []
    for i in range(3000):
        cat = "cuda_runtime" if i % 7 == 0 else "cpu_op"
        texts.append(json.dumps({"ph": "X", "name": f"op{i % 13}", "cat": cat, "pid": 1 + i % 3, "tid": 10 + i % 2,
                                 "ts": i * 3 + 0.5, "dur": 2, "args": {"External id": i, "correlation": i // 2}}))
    at = {"none": None, "first": 0, "middle": 1500, "last": 2999}[left]
    if at is not None:
        texts[at] = '{"name": "first of two", ' + texts[at][1:]
        assert parser._scan.scan(memoryview(texts[at].encode())) is None
    p = tmp_path / "t.json"
    p.write_text('{"traceEvents": [' + ",\n".join(texts) + '], "baseTimeNanoseconds": 1000}', encoding="utf-8")
    return p


@needs_ext
@pytest.mark.parametrize("left", ["none", "first", "middle", "last"])
def test_pieces_scanned_ahead_on_threads_give_the_sequential_result(
    left: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compiled scans of the next pieces run on threads (chunks._ScanAhead); the profile is the one the
    sequential loop gives (one core: no threads) and the Python path's, also where a piece is left to Python."""
    import threading

    from trntui.loaders.kineto import chunks, early

    monkeypatch.setattr(early, "_MAP_MIN_BYTES", 0)
    monkeypatch.setattr(chunks, "_CHUNK_BYTES", 4 << 10)
    path = _many_pieces(tmp_path, left)
    started: list[str] = []
    real_scan = chunks._Scan.run

    def run(self) -> None:
        started.append(self.name)
        real_scan(self)

    by_python: list[int] = []
    real_decode = chunks._decode_chunk

    def decode(inner: memoryview, pos: int):
        by_python.append(pos)
        return real_decode(inner, pos)

    monkeypatch.setattr(chunks._Scan, "run", run)
    monkeypatch.setattr(chunks, "_decode_chunk", decode)
    monkeypatch.setattr(chunks, "_threads", lambda: 2)
    threaded = _load(path, "compiled", monkeypatch)
    assert len(started) > 20 and set(started) == {"trntui-scan"}
    assert len(by_python) == (0 if left == "none" else 1), "the piece with the duplicate field took msgspec's decode"
    assert not [t for t in threading.enumerate() if t.name == "trntui-scan"], "a scan outlived the load"
    started.clear()
    monkeypatch.setattr(chunks, "_threads", lambda: 1)
    sequential = _load(path, "compiled", monkeypatch)
    assert not started
    python = _load(path, "python", monkeypatch)
    assert isinstance(threaded, dict)
    assert threaded == sequential == python
