"""Compare runs (issue 6): op diff on the corpus pair, run metrics, host-op definition, rules, samples."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from trntui.analysis.compare import (
    METRICS,
    RunMetrics,
    check_rules,
    diff_ops,
    host_op_calls,
    make_run,
    parse_rule,
    run_metrics,
)
from trntui.errors import TrntuiError
from trntui.session import load_profile
from trntui.model.builder import ProfileBuilder
from trntui.model.profile import ProfileMeta, Tier

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_profiles"

# -- an independent reference computation over the raw JSON ---------------------------------------------------

CPU_CATS = {"cpu_op", "user_annotation", "cuda_runtime", "cuda_driver"}
DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def _raw_events(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    return [e for e in doc["traceEvents"] if e.get("ph") == "X"]


def _contains(p: dict, e: dict) -> bool:
    return p is not e and p["ts"] <= e["ts"] and p["ts"] + p["dur"] >= e["ts"] + e["dur"] and (
        (p["ts"], -p["dur"]) < (e["ts"], -e["dur"])
    )


def reference_rows(path: Path) -> dict[tuple[str, bool], dict[str, float]]:
    """(name, is_device) → calls, self_cpu (µs), self_device (µs), by brute force over the JSON events.

    Self CPU = own duration minus direct children on the same thread; a device row's Self device is its
    duration; an op's Self device is the sum of the device rows whose runtime launch (same correlation) sits
    directly inside it.
    """
    events = _raw_events(path)
    cpu = [e for e in events if e.get("cat") in CPU_CATS]
    dev = [e for e in events if e.get("cat") in DEVICE_CATS]

    def parent(e: dict) -> dict | None:
        cands = [p for p in cpu if (p["pid"], p["tid"]) == (e["pid"], e["tid"]) and _contains(p, e)]
        # the innermost container: the one contained by all others
        return min(cands, key=lambda p: p["dur"]) if cands else None

    parents = {id(e): parent(e) for e in cpu}
    rows: dict[tuple[str, bool], dict[str, float]] = defaultdict(lambda: {"calls": 0, "self_cpu": 0.0, "self_device": 0.0})
    for e in cpu:
        name = "ProfilerStep*" if e["name"].startswith("ProfilerStep#") else e["name"]
        kids = [c for c in cpu if parents[id(c)] is e]
        r = rows[(name, False)]
        r["calls"] += 1
        r["self_cpu"] += e["dur"] - sum(c["dur"] for c in kids)
    runtime_by_corr = {e["args"]["correlation"]: e for e in cpu if e.get("cat") == "cuda_runtime"}
    for d in dev:
        r = rows[(d["name"], True)]
        r["calls"] += 1
        r["self_device"] += d["dur"]
        launch = runtime_by_corr.get(d["args"].get("correlation"))
        op = parents.get(id(launch)) if launch is not None else None
        if op is not None:
            name = "ProfilerStep*" if op["name"].startswith("ProfilerStep#") else op["name"]
            rows[(name, False)]["self_device"] += d["dur"]
    return dict(rows)


@pytest.fixture(scope="module")
def corpus_pair(corpus_dir):
    base = corpus_dir / "cuda_compare_base.json.gz"
    test = corpus_dir / "cuda_compare_test.json.gz"
    runs = [make_run("base", load_profile(base)), make_run("test", load_profile(test))]
    return base, test, runs


def test_corpus_diff_matches_reference(corpus_pair) -> None:
    base, test, runs = corpus_pair
    diff = diff_ops([r.table for r in runs], ["base", "test"])
    ref = [reference_rows(base), reference_rows(test)]
    keys = set(ref[0]) | set(ref[1])
    got = {(r.name, r.is_device): r for r in diff.rows}
    assert set(got) == keys
    for key in keys:
        row = got[key]
        for k in (0, 1):
            exp = ref[k].get(key)
            if exp is None:
                assert row.calls[k] is None, key
                continue
            assert row.calls[k] == exp["calls"], (key, k)
            assert row.self_cpu[k] == pytest.approx(exp["self_cpu"], abs=1e-6), (key, k)
            assert row.self_device[k] == pytest.approx(exp["self_device"], abs=1e-6), (key, k)
        # deltas are test − base with absent = 0
        for col in ("calls", "self_cpu", "self_device"):
            e0 = ref[0].get(key, {}).get(col, 0)
            e1 = ref[1].get(key, {}).get(col, 0)
            assert row.delta(col, 1) == pytest.approx(e1 - e0, abs=1e-6)


def test_corpus_diff_changed_ops(corpus_pair) -> None:
    base, test, runs = corpus_pair
    diff = diff_ops([r.table for r in runs], ["base", "test"])
    ref0, ref1 = reference_rows(base), reference_rows(test)
    new = {k[0] for k in ref1 if k not in ref0}
    removed = {k[0] for k in ref0 if k not in ref1}
    changed = {k[0] for k in ref0 if k in ref1 and ref0[k] != ref1[k]}
    assert new == {"All2All_Pooled_Req", "AddmmBackward0", "CatBackward0"}
    assert removed == set()
    status = {r.name: r.status for r in diff.rows}
    assert {n for n, s in status.items() if s == "new"} == new
    assert {n for n, s in status.items() if s == "changed"} == changed
    assert "nccl:all_reduce" in changed
    nccl = next(r for r in diff.rows if r.name == "nccl:all_reduce")
    assert (nccl.calls, nccl.delta("calls", 1)) == ([2, 1], -1)
    kernel = next(r for r in diff.rows if r.is_device and r.status == "changed")
    assert kernel.delta("calls", 1) == -1 and kernel.delta("self_device", 1) == pytest.approx(-4.0)
    # default sort: device time is present → by |Δ Self device|, the two −4 µs rows first
    ordered = diff.sorted_rows()
    assert diff.default_sort == "self_device"
    assert {abs(r.delta("self_device", 1)) for r in ordered[:2]} == {4.0}
    assert all(abs(r.delta("self_device", 1)) == 0 for r in ordered[2:])
    # ties on device delta are broken by |Δ Self CPU|: the 311 µs new op comes next
    assert ordered[2].name == "All2All_Pooled_Req"
    # filter
    assert [r.name for r in diff.sorted_rows(pattern="backward")] == ["AddmmBackward0", "CatBackward0"]
    assert [r.name for r in diff.sorted_rows("name", "ALL2all")] == ["All2All_Pooled_Req"]


def test_corpus_metrics_match_reference(corpus_pair) -> None:
    base, test, runs = corpus_pair
    for path, run in zip((base, test), runs):
        events = _raw_events(path)
        kernels = [e for e in events if e.get("cat") == "kernel"]
        assert run.metrics.dispatches == len(kernels)
        dev = [e for e in events if e.get("cat") in DEVICE_CATS]
        assert run.metrics.device_time == pytest.approx(sum(e["dur"] for e in dev))
        # busy = union of device intervals, idle = active window − busy
        iv = sorted((e["ts"], e["ts"] + e["dur"]) for e in dev)
        busy, cur = 0, None
        for s, e in iv:
            if cur is None or s > cur[1]:
                if cur:
                    busy += cur[1] - cur[0]
                cur = [s, e]
            else:
                cur[1] = max(cur[1], e)
        busy += cur[1] - cur[0]
        window = max(e for _, e in iv) - iv[0][0]
        assert run.metrics.busy == pytest.approx(busy)
        assert run.metrics.idle == pytest.approx(window - busy)
        steps = [e for e in events if e["name"].startswith("ProfilerStep#")]
        assert run.metrics.steps == len(steps)
        assert run.metrics.span == pytest.approx(max(e["ts"] + e["dur"] for e in steps) - min(e["ts"] for e in steps))
        # host ops: cpu_op events inside a step with no enclosing cpu_op on their thread
        ops = [e for e in events if e.get("cat") == "cpu_op"]
        inside = [e for e in ops if any(s["ts"] <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"] for s in steps)]
        top = [e for e in inside if not any((p["pid"], p["tid"]) == (e["pid"], e["tid"]) and _contains(p, e) for p in ops)]
        assert run.metrics.host_ops == len(top)
    assert [r.metrics.host_ops for r in runs] == [4, 7]
    assert [r.metrics.dispatches for r in runs] == [6, 5]


def test_by_shapes_splits_rows(corpus_pair) -> None:
    base, test, _ = corpus_pair
    runs = [make_run("a", load_profile(base), group_by_input_shapes=True),
            make_run("b", load_profile(test), group_by_input_shapes=True)]
    diff = diff_ops([r.table for r in runs], ["a", "b"], by_shapes=True)
    a2a = [r for r in diff.rows if r.name == "All2All_Pooled_Req"]
    assert len(a2a) == 1 and a2a[0].input_shapes == "[[2048, 34820]]"
    # metrics do not depend on the shape grouping
    assert runs[0].metrics.device_time == make_run("a", load_profile(base)).metrics.device_time


# -- host-op definition on a synthetic RMSNorm-like trace ------------------------------------------------------


def _write_trace(path: Path, events: list[dict]) -> Path:
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def _op(name, ts, dur, cat="cpu_op", tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


def naive_events() -> list[dict]:
    ev = [_op("aten::randn", 0, 5), _op("ProfilerStep#3", 10, 200, cat="user_annotation")]
    t = 12
    for name in ("aten::mul", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul", "aten::mul"):
        ev.append(_op(name, t, 20))
        if name == "aten::mean":
            ev.append(_op("aten::sum", t + 2, 10))  # nested: not top level
            ev.append(_op("aten::div_", t + 13, 4))
        t += 25
    ev.append(_op("aten::is_leaf", t, 1))  # filtered by torch
    ev.append(_op("aten::empty", 300, 2))  # outside the step
    return ev


def test_host_ops_count_outermost_ops_in_step(tmp_path) -> None:
    prof = load_profile(_write_trace(tmp_path / "naive.json", naive_events()))
    names = sorted(prof.name_of(i) for i in host_op_calls(prof))
    assert names == sorted(["aten::mul"] * 3 + ["aten::mean", "aten::add", "aten::rsqrt"])
    m = run_metrics("naive", prof)
    assert m.host_ops == 6 and m.dispatches is None and m.device_time is None and m.busy is None
    assert m.span == pytest.approx(200.0) and m.steps == 1


def test_host_ops_wrappers_are_transparent_and_compiled_region_counts_once(tmp_path) -> None:
    fused = [_op("ProfilerStep#3", 10, 100, cat="user_annotation"),
             _op("my_scope", 11, 90, cat="user_annotation"),
             _op("aten::rms_norm", 12, 50), _op("aten::_fused_rms_norm", 13, 40)]
    compiled = [_op("ProfilerStep#3", 10, 100, cat="user_annotation"),
                _op("Torch-Compiled Region: 0/0", 12, 80, cat="user_annotation"),
                _op("## Call CompiledFxGraph f ##", 14, 70, cat="user_annotation"),
                _op("aten::empty_strided", 15, 2), _op("aten::empty_strided", 18, 2)]
    pf = load_profile(_write_trace(tmp_path / "f.json", fused))
    pc = load_profile(_write_trace(tmp_path / "c.json", compiled))
    assert [pf.name_of(i) for i in host_op_calls(pf)] == ["aten::rms_norm"]
    assert [pc.name_of(i) for i in host_op_calls(pc)] == ["Torch-Compiled Region: 0/0"]


# -- Neuron-style hardware lanes: LNC per-physical-core duplicates ---------------------------------------------


def neuron_like_profile(n_exec: int, dur_ns: int, gap_ns: int, lnc2: bool = True):
    b = ProfileBuilder(ProfileMeta(device_kind="neuron", backend="NEURON"))
    lanes = [b.lane(Tier.HARDWARE, "neuron_hw", "NC0:4", 7, 0)]
    if lnc2:
        lanes.append(b.lane(Tier.HARDWARE, "neuron_hw", "NC0:5", 7, 0))
    rt = b.lane(Tier.RUNTIME, "neuron_rt", "NC:0", 7, 0)
    nm = b.intern_name("nc_exec_running")
    sync = b.intern_name("timestamp_sync_point")
    sched = b.intern_name("nrta_execute_schedule")
    cat = b.intern_cat("neuron_hw")
    rcat = b.intern_cat("neuron_rt")
    starts, ends, lane, names, cats, kinds = [], [], [], [], [], []
    t = 1_000_000
    for k in range(n_exec):
        for j, ln in enumerate(lanes):
            skew = 300 * j  # the second core starts a little later
            starts.append(t + skew)
            ends.append(t + dur_ns + skew)
            lane.append(ln)
            names.append(nm)
            cats.append(cat)
            kinds.append(0)
        starts.append(t - 5_000)
        ends.append(t - 1_000)
        lane.append(rt)
        names.append(sched)
        cats.append(rcat)
        kinds.append(0)
        t += dur_ns + gap_ns
    starts.append(500)  # an instant on the hardware lane: not an execution
    ends.append(500)
    lane.append(lanes[0])
    names.append(sync)
    cats.append(cat)
    kinds.append(1)
    b.add_events(start=np.array(starts), end=np.array(ends), lane=np.array(lane), name=np.array(names),
                 cat=np.array(cats), kind=np.array(kinds))
    return b.finish()


def test_dispatches_merge_lnc_duplicates_and_device_time_falls_back_to_executions() -> None:
    naive = neuron_like_profile(6, 100_000, 300_000)
    fused = neuron_like_profile(1, 400_000, 0)
    single_core = neuron_like_profile(6, 100_000, 300_000, lnc2=False)
    mn, mf, ms = run_metrics("naive", naive), run_metrics("fused", fused), run_metrics("one", single_core)
    assert (mn.dispatches, mf.dispatches, ms.dispatches) == (6, 1, 6)
    # no device rows in the op table: device time = merged executions ([min start, max end] per execution)
    assert mn.device_time == pytest.approx(6 * 100.3)
    assert ms.device_time == pytest.approx(6 * 100.0)
    assert mn.busy == pytest.approx(6 * 100.3)
    assert mn.idle == pytest.approx(5 * (300.0 - 0.3))
    assert mf.idle == pytest.approx(0.0)


# -- rules ---------------------------------------------------------------------------------------------------


def _metrics(name: str, **kw) -> RunMetrics:
    base = dict(backend="NEURON", device_time=100.0, self_cpu=50.0, dispatches=6, host_ops=6, span=500.0,
                busy=100.0, idle=40.0, steps=1)
    base.update(kw)
    return RunMetrics(name=name, **base)


def test_rules_relative_to_baseline_and_constants() -> None:
    runs = [_metrics("base"), _metrics("ok", device_time=109.0), _metrics("slow", device_time=111.0, span=6000.0)]
    res = check_rules([parse_rule("device_time > 1.10*baseline")], runs)
    assert [(r.run, r.failed) for r in res] == [("ok", False), ("slow", True)]
    assert res[1].left == pytest.approx(111.0) and res[1].right == pytest.approx(110.0)
    res = check_rules([parse_rule("span > 5ms")], runs)  # constants are checked on every run, baseline too
    assert [(r.run, r.failed) for r in res] == [("base", False), ("ok", False), ("slow", True)]
    res = check_rules([parse_rule("dispatches >= baseline.dispatches + 1"), parse_rule("(busy + idle) / span > 0.5")], runs)
    assert not any(r.failed for r in res)
    assert "REGRESSION" in check_rules([parse_rule("device_time>=baseline*1.1")], runs)[1].message()


def test_rules_skip_unavailable_metrics() -> None:
    runs = [_metrics("a", device_time=None, busy=None), _metrics("b", device_time=None, busy=None)]
    res = check_rules([parse_rule("device_time > baseline")], runs)
    assert len(res) == 1 and not res[0].failed and res[0].missing == "device_time"
    assert "not checked" in res[0].message()


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("", "empty"),
        ("device_time", "comparison"),
        ("foo > 1", "unknown name 'foo'"),
        ("baseline.bar > 1", "unknown metric 'bar'"),
        ("device_time > ", "unexpected end"),
        ("device_time > 1 2", "unexpected '2'"),
        ("busy > baseline + idle", "exactly one metric"),
        ("1 < 2", "names no metric"),
        ("__import__('os') > 1", "cannot read"),
        ("device_time > (1", "expected ')'"),
        ("span > 5 ms", "unexpected 'ms'"),
    ],
)
def test_rule_errors_are_one_line_trntui_errors(text: str, fragment: str) -> None:
    with pytest.raises(TrntuiError) as exc:
        parse_rule(text)
    assert fragment in str(exc.value) and "\n" not in str(exc.value)


def test_rule_units_and_arithmetic() -> None:
    r = parse_rule("span - 1.5ms * 2 + -idle / 4 >= 1s")
    failed, left, right = r.evaluate(_metrics("x").values(), _metrics("x").values())
    assert left == pytest.approx(500.0 - 3000.0 - 10.0) and right == 1e6 and not failed
    assert set(METRICS) >= r.metrics == {"span", "idle"}
    assert parse_rule("host_ops != baseline").evaluate({"host_ops": 6.0}, {"host_ops": 1.0})[0]
    pct = parse_rule("device_time > baseline * (1 + 10%)")
    assert pct.evaluate({"device_time": 111.0}, {"device_time": 100.0})[0]
    assert not pct.evaluate({"device_time": 109.0}, {"device_time": 100.0})[0]


# -- bundled RMSNorm samples (walkthrough structure) --------------------------------------------------------------


def _sample_runs(kind: str):
    from trntui.compare_runs import load_runs

    root = SAMPLES / kind
    if not root.is_dir():
        pytest.skip(f"{root} is not there (the bundled {kind} RMSNorm samples are created by `trntui profile`)")
    runs = load_runs([root])
    names = {r.name.split("/")[-1]: r for r in runs}
    missing = {"naive", "fused", "compiled"} - set(names)
    if missing:
        pytest.skip(f"{root} lacks variant(s) {sorted(missing)}")
    return runs, names


def test_cpu_samples_walkthrough_structure() -> None:
    runs, by = _sample_runs("cpu")
    assert [r.name.split("/")[-1] for r in runs][:3] == ["naive", "fused", "compiled"]  # manifest order
    assert by["naive"].metrics.host_ops == 6
    assert by["fused"].metrics.host_ops == 1
    assert by["compiled"].metrics.host_ops == 1


def test_neuron_samples_walkthrough_figures() -> None:
    runs, by = _sample_runs("neuron")
    assert [by[v].metrics.dispatches for v in ("naive", "fused", "compiled")] == [6, 1, 1]
    assert [by[v].metrics.host_ops for v in ("naive", "fused", "compiled")] == [6, 1, 1]
    dev = [by[v].metrics.device_time for v in ("naive", "fused", "compiled")]
    assert [round(d) for d in dev] == [2355, 403, 376]
    # fusion removes the gaps between hardware executions
    assert by["naive"].metrics.idle > by["fused"].metrics.idle


def test_cpu_and_device_rows_with_one_name_stay_apart(tmp_path) -> None:
    ev = [_op("ProfilerStep#1", 0, 100, cat="user_annotation"),
          _op("scope", 1, 50, cat="user_annotation", **{"External id": 7}),
          {"ph": "X", "cat": "gpu_user_annotation", "name": "scope", "pid": 0, "tid": 7, "ts": 10, "dur": 30,
           "args": {"External id": 7}},
          {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 12, "dur": 5,
           "args": {"External id": 7, "correlation": 9}}]
    prof = load_profile(_write_trace(tmp_path / "a.json", ev))
    run = make_run("a", prof)
    diff = diff_ops([run.table, run.table], ["a", "b"])
    scope = sorted((r.label, r.is_device) for r in diff.rows if r.name == "scope")
    assert scope == [("scope", False), ("scope [device]", True)]
