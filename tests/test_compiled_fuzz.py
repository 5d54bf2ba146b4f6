"""Fuzzing the compiled column builder (bounded time): hypothesis-generated traces, and the same traces with bytes
flipped, cut, dropped or inserted, load to the same profile or fail with the same error on both paths (and on the
compiled path read from a memory map, as a big plain trace is: its args left in the file); never a crash (a crash
in the C code would take the test process down). A longer run: TRNTUI_FUZZ_EXAMPLES=5000."""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.kineto_digest import digest
from trntui.errors import TrntuiError
from trntui.loaders.kineto import chunks, early, parser
from trntui.loaders.kineto.load import load_kineto

pytestmark = pytest.mark.skipif(parser._scan is None, reason="the compiled parser is not built in this install")

names = st.sampled_from(["aten::mm", "cudaLaunchKernel", "", "q\"uote", "é\n", "\U0001f600", "x" * 40])
ids = st.one_of(st.integers(-3, 3000), st.sampled_from([2**62, -(2**63), 2**64]), st.sampled_from(["Spans", "7", " 8"]))
nums = st.one_of(
    st.integers(-(10**6), 10**17), st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.sampled_from([0.5, 1712195504662779.5, 1e-7, 1e300, -0.0]),
)
link_values = st.one_of(st.integers(-5, 10**18), st.floats(-10, 10), st.none(), st.text(max_size=3))
args = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {}, optional={"External id": link_values, "external id": link_values, "correlation": link_values,
                      "nested": st.recursive(st.integers() | st.text(max_size=4), lambda c: st.lists(c, max_size=3)
                                             | st.dictionaries(st.text(max_size=3), c, max_size=3), max_leaves=6)},
    ),
    st.lists(st.integers(), max_size=2),
)
event = st.fixed_dictionaries(
    {"ph": st.sampled_from(["X", "X", "X", "i", "I", "B", "E", "M", "s", "f", "t", "C", "", "XX"])},
    optional={"name": names, "cat": st.sampled_from(["cpu_op", "kernel", "cuda_runtime", "ac2g", "python_function"]),
              "ts": nums, "dur": nums, "pid": ids, "tid": ids, "id": st.one_of(st.none(), ids), "args": args,
              "bp": st.just("e")},
)
traces = st.lists(event, min_size=1, max_size=25)
mutations = st.lists(st.tuples(st.sampled_from(["flip", "cut", "drop", "insert"]), st.integers(0, 10**6),
                               st.integers(0, 255)), max_size=3)


@contextmanager
def _mode(mode: str):
    old = os.environ.get(parser.ENV)
    os.environ[parser.ENV] = mode
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(parser.ENV, None)
        else:
            os.environ[parser.ENV] = old


@contextmanager
def _mapped():
    """Every plain trace read from a memory map in 1 KB pieces (its args left in the file, model/args.py)."""
    old = early._MAP_MIN_BYTES, chunks._CHUNK_BYTES
    early._MAP_MIN_BYTES, chunks._CHUNK_BYTES = 0, 1 << 10
    try:
        yield
    finally:
        early._MAP_MIN_BYTES, chunks._CHUNK_BYTES = old


def _outcome(path: Path, mode: str):
    if mode == "compiled-mapped":
        with _mapped():
            return _outcome(path, "compiled")
    with _mode(mode):
        try:
            return digest(load_kineto(path))
        except TrntuiError as e:
            return f"{type(e).__name__}: {e}"
        except Exception as e:  # noqa: BLE001 - a bug of the loader itself: it must be the same bug on both paths
            return f"unexpected {type(e).__name__}: {e}"


def _mutate(text: bytes, ops: list[tuple[str, int, int]]) -> bytes:
    b = bytearray(text)
    for op, at, v in ops:
        if not b:
            break
        k = at % len(b)
        if op == "flip":
            b[k] = v
        elif op == "cut":
            del b[k:]
        elif op == "drop":
            del b[k]
        else:
            b.insert(k, v)
    return bytes(b)


@settings(max_examples=int(os.environ.get("TRNTUI_FUZZ_EXAMPLES", "120")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=traces, ops=mutations, base=st.sampled_from([None, 0, 1_000, -5, 2**63]))
def test_generated_and_mutated_traces_same_on_both_paths(events: list[dict], ops: list, base) -> None:
    doc: dict = {"traceEvents": events}
    if base is not None:
        doc["baseTimeNanoseconds"] = base
    text = _mutate(json.dumps(doc, ensure_ascii=bool(ops)).encode("utf-8", "surrogatepass"), ops)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        path.write_bytes(text)
        python = _outcome(path, "python")
        assert _outcome(path, "compiled") == python
        assert _outcome(path, "compiled-mapped") == python
