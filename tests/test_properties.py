"""Property-based tests (hypothesis) over the Kineto loader and the analyses.

Random but valid-ish traces: nested and partially overlapping X events on a few threads, runtime rows inside
ops, kernels linked by External id / correlation (sometimes broken or duplicated), flow halves, metadata,
written as chrome JSON in either top-level form, events in any order. Properties:

- loading and analysing raise nothing but `TrntuiError`; no event is silently lost;
- key_averages: count > 0, self CPU <= CPU total, self device <= device total, per row;
- Σ self CPU over rows == the footer total == Σ over the root events' durations on each thread (torch's
  `dur - Σ child.dur` telescopes); when events nest properly (no partial overlaps) also self CPU >= 0 and
  Σ self CPU == covered time (the union of the CPU-tree events on each thread). With partial overlaps torch
  itself reports negative Self CPU (seen on with_stack python rows; tests/test_torch_agreement.py), and so
  do we, deliberately;
- device rows: Σ self device == Σ kernel durations;
- chains and links terminate on every event.
And bytes-level fuzzing: random mutations of a valid trace never raise anything but `TrntuiError`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))

from malformed import fmt_ts, valid_trace  # noqa: E402

from trntui.errors import TrntuiError  # noqa: E402

NAMES = ("aten::mm", "aten::add", "aten::linear", "[memory]x", "ProfilerStep#1", "ProfilerStep#2", "my_scope",
         "aten::to", "[bold]x[/]", "näme")
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                    derandomize=True)


@st.composite
def thread_events(draw, tid: int, lo: int, hi: int, depth: int = 0, overlaps: bool = True) -> list[dict]:
    """A random forest of X events in [lo, hi) on one thread; some children stick out of their parent or
    overlap their previous sibling (partial overlaps), some have zero duration."""
    out: list[dict] = []
    t = lo
    for _ in range(draw(st.integers(0, 3 if depth < 4 else 0))):
        if t >= hi:
            break
        s = draw(st.integers(t, hi))
        e = draw(st.integers(s, hi))
        if overlaps and draw(st.integers(0, 5)) == 0:  # partial overlap with the parent's end / next sibling
            e += draw(st.integers(1, 400))
        cat = draw(st.sampled_from(("cpu_op", "cpu_op", "cpu_op", "user_annotation", "cuda_runtime")))
        name = "cudaLaunchKernel" if cat == "cuda_runtime" else draw(st.sampled_from(NAMES))
        out.append({"ph": "X", "cat": cat, "name": name, "pid": 100, "tid": tid, "ns": (s, e)})
        if cat != "cuda_runtime" and e - s > 2:
            out.extend(draw(thread_events(tid, s + 1, e - 1, depth + 1, overlaps)))
        back = draw(st.integers(0, 200)) if overlaps and draw(st.integers(0, 4)) == 0 else 0
        t = max(s, e - back)
    return out


@st.composite
def traces(draw, overlaps: bool = True) -> tuple[bytes, dict]:
    tids = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3, unique=True))
    events: list[dict] = []
    for tid in tids:
        events.extend(draw(thread_events(tid, 0, draw(st.integers(10, 20_000)), overlaps=overlaps)))
    ext = 1
    corr = 1000
    ops = [e for e in events if e["cat"] in ("cpu_op", "user_annotation")]
    for e in ops:
        e["args"] = {"External id": ext, "Input Dims": [[ext % 3, 2]]}
        ext += 1
    kernels = []
    for e in events:
        if e["cat"] != "cuda_runtime":
            continue
        # the innermost op on the same thread that contains it (what Kineto records), sometimes broken
        s, t = e["ns"]
        inside = [o for o in ops if o["tid"] == e["tid"] and o["ns"][0] <= s and t <= o["ns"][1]]
        choice = draw(st.integers(0, 5))
        if inside and choice > 0:
            op_ext = min(inside, key=lambda o: o["ns"][1] - o["ns"][0])["args"]["External id"]
        else:
            op_ext = 10**6 + corr if choice == 0 else None  # broken id, or none
        c = corr if draw(st.integers(0, 6)) else corr - 1  # sometimes a duplicated correlation
        e["args"] = {"correlation": c} | ({"External id": op_ext} if op_ext is not None else {})
        for _ in range(draw(st.integers(0, 2))):
            ks = t + draw(st.integers(0, 500))
            kd = draw(st.integers(0, 300))
            kernels.append({"ph": "X", "cat": draw(st.sampled_from(("kernel", "gpu_memcpy", "gpu_memset"))),
                            "name": "k", "pid": 0, "tid": 7, "ns": (ks, ks + kd),
                            "args": {"correlation": c} | ({"External id": op_ext} if op_ext is not None else {})})
            if draw(st.booleans()):
                kernels.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": c, "pid": 100, "tid": e["tid"],
                                "ns": (s, s)})
                kernels.append({"ph": "f", "cat": "ac2g", "name": "ac2g", "id": c, "pid": 0, "tid": 7,
                                "ns": (ks, ks), "bp": "e"})
        corr += 1
    events.extend(kernels)
    base = draw(st.sampled_from((0, 1_735_632_360_000_000_000, 1_700_000_000_000_000_000)))
    offset = draw(st.sampled_from((0, 5_000_000_000, 1_694_039_968_955_744_000)))
    if base:
        offset = min(offset, 5_000_000_000)
    if offset > 2**53:  # epoch µs: those traces carry whole µs (a double cannot hold ns at 1.7e15 µs)
        for e in events:
            e["ns"] = (e["ns"][0] * 1000, e["ns"][1] * 1000)
    order = draw(st.permutations(range(len(events)))) if len(events) < 60 else range(len(events))
    lines = []
    for k in order:
        e = dict(events[k])
        s, t = e.pop("ns")
        e["ts"] = fmt_ts(s + offset)
        if e["ph"] == "X":
            e["dur"] = fmt_ts(t - s)
        lines.append(e)
    meta = [{"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
            {"ph": "M", "name": "thread_name", "pid": 100, "tid": tids[0], "args": {"name": "main"}}]
    body = ",\n".join(_dump(e) for e in meta + lines)
    if draw(st.booleans()):
        top = f'{{"schemaVersion": 1, "traceEvents": [\n{body}\n]'
        top += f', "baseTimeNanoseconds": {base}}}' if base else "}"
    else:
        top = f"[\n{body}\n]"
    info = {"events": events, "x": [e for e in events if e["ph"] == "X"]}
    return top.encode(), info


def _dump(e: dict) -> str:
    parts = []
    for k, v in e.items():
        parts.append(f"{json.dumps(k)}: {v if k in ('ts', 'dur') else json.dumps(v)}")
    return "{" + ", ".join(parts) + "}"


def _union(intervals: list[tuple[int, int]]) -> int:
    total = 0
    cur_s = cur_e = None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def _load(tmp_path: Path, data: bytes):
    from trntui.loaders.kineto import load_kineto

    p = tmp_path / "t.json"
    p.write_bytes(data)
    return load_kineto(p)


def _roots_total(intervals: list[tuple[int, int]]) -> int:
    """Σ durations of the root events of torch's containment forest on one thread (reference, O(n²)):
    sorted by (start, -end), an event's parent is the nearest earlier event that ends no earlier than it
    and after its start (strictly after its end when it has zero length)."""
    ev = sorted(intervals, key=lambda x: (x[0], -x[1]))
    total = 0
    for k, (s, e) in enumerate(ev):
        need = e + (e == s)
        if not any(pe >= need and pe > s for ps, pe in ev[:k]):
            total += e - s
    return total


def _check_table(prof, info, nested: bool) -> None:
    from trntui.analysis.key_averages import FILTERED_NAMES, key_averages

    table = key_averages(prof)
    eps = 1e-6
    assert (table.count > 0).all()
    assert (table.self_cpu_time_total <= table.cpu_time_total + eps).all()
    assert (table.self_device_time_total <= table.device_time_total + eps).all()
    assert (table.device_time_total >= -eps).all() and (table.cpu_time_total >= -eps).all()
    assert abs(table.self_cpu_time_total.sum() - table.sum_self_cpu) < 1e-6 * max(1.0, table.sum_self_cpu)

    per_thread: dict[int, list[tuple[int, int]]] = {}
    for e in info["x"]:
        if e["cat"] in ("cpu_op", "user_annotation", "cuda_runtime") and e["name"] not in FILTERED_NAMES:
            per_thread.setdefault(e["tid"], []).append(e["ns"])
    roots_us = sum(_roots_total(v) for v in per_thread.values()) / 1000.0
    assert table.sum_self_cpu == pytest.approx(roots_us, abs=1e-6), (table.sum_self_cpu, roots_us)
    if nested:
        assert (table.self_cpu_time_total >= -eps).all(), table.rows()
        covered_us = sum(_union(v) for v in per_thread.values()) / 1000.0
        assert table.sum_self_cpu == pytest.approx(covered_us, abs=1e-6), (table.sum_self_cpu, covered_us)

    # device rows carry their own durations; CPU rows' own kernels never exceed the kernels that exist
    kern_us = sum(e["ns"][1] - e["ns"][0] for e in info["x"] if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset"))
    if table.backend:
        assert table.sum_self_device == pytest.approx(kern_us / 1000.0, abs=1e-6)
        cpu_rows = np.array([d == "CPU" for d in table.device_type], bool)
        assert table.self_device_time_total[cpu_rows].sum() <= kern_us / 1000.0 + 1e-6


def _load_checked(tmp: Path, data: bytes, info: dict):
    if not info["x"]:
        try:
            assert len(_load(tmp, data)) == 0
        except TrntuiError:
            pass
        return None
    prof = _load(tmp, data)
    assert len(prof) == len(info["x"])  # nothing silently lost
    assert not prof.meta.skipped
    assert (prof.end >= prof.start).all()
    return prof


@SETTINGS
@given(traces())
def test_loader_and_key_averages_invariants(tmp_path_factory, trace) -> None:
    data, info = trace
    prof = _load_checked(tmp_path_factory.mktemp("prop"), data, info)
    if prof is not None:
        _check_table(prof, info, nested=False)


@SETTINGS
@given(traces(overlaps=False))
def test_properly_nested_traces_self_cpu_is_covered_time(tmp_path_factory, trace) -> None:
    data, info = trace
    prof = _load_checked(tmp_path_factory.mktemp("nest"), data, info)
    if prof is not None:
        _check_table(prof, info, nested=True)


@SETTINGS
@given(traces())
def test_links_and_chains_terminate(tmp_path_factory, trace) -> None:
    data, info = trace
    if not info["x"]:
        return
    prof = _load(tmp_path_factory.mktemp("chain"), data)
    from trntui.analysis.links import build_links

    links = build_links(prof)
    n = len(prof)
    assert ((links.op_of >= -1) & (links.op_of < n)).all()
    try:
        from trntui.analysis.chains import follow
    except ImportError:
        return
    for i in range(n):
        follow(prof, i)


# ------------------------------------------------------------------------------------------------------
# bytes-level mutations of a valid trace
# ------------------------------------------------------------------------------------------------------
_VALID = valid_trace(n_steps=2)
_TOKENS = (b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\", b"N/A", b"NaN", b"-1e400", b"1e308", b"\x00",
           b"\xff", b"\x1b[2J", b'"ph": "B"', b'"ph": "E"', b'"ph": "X"', b'"dur": -5', b"null", b"true",
           b'"External id": "x"', b"9" * 40, b"\n")


@st.composite
def mutated(draw) -> bytes:
    data = bytearray(_VALID)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.integers(0, 3))
        pos = draw(st.integers(0, len(data)))
        if op == 0:  # truncate
            del data[pos:]
        elif op == 1:  # insert a token
            data[pos:pos] = draw(st.sampled_from(_TOKENS))
        elif op == 2:  # delete a span
            del data[pos : pos + draw(st.integers(1, 40))]
        else:  # flip a byte
            if pos < len(data):
                data[pos] ^= draw(st.integers(1, 255))
    return bytes(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(mutated())
def test_mutated_traces_only_raise_trntui_errors(tmp_path_factory, data: bytes) -> None:
    from trntui.analysis.key_averages import key_averages
    from trntui.report import render

    try:
        prof = _load(tmp_path_factory.mktemp("mut"), data)
    except TrntuiError:
        return
    table = key_averages(prof)
    for fmt in ("table", "csv", "json", "markdown"):
        render(prof, table, fmt)
    assert (table.count > 0).all()
