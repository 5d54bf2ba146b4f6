"""The overview analysis (trntui.analysis.overview) on real traces: step breakdown, device metrics, kernel view,
recommendations.

The breakdown is checked against a plain-Python reimplementation written here from the TensorBoard plugin's
description (tb-plugin-analyses.md §2-§4): its own event typing, the plugin's two-pointer step walk, and an
elementary-segment sweep instead of trntui's cumulative unions.
"""

from __future__ import annotations

import bisect
import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from trntui.analysis.overview import overview
from trntui.session import find_runs, load_run

REPO = Path(__file__).resolve().parents[1]
NEURON_SAMPLES = REPO / "sample_profiles" / "neuron"


def _load(path: Path):
    runs = find_runs(path)
    assert runs, path
    return load_run(runs[0], cache=False)


# ---------------------------------------------------------------------------------------------------------
# an independent reference, in plain Python
# ---------------------------------------------------------------------------------------------------------
def _ns(us: float) -> int:
    """µs float → int ns (the loader's conversion: whole µs exact, the fraction rounded to the ns)."""
    whole = math.floor(us)
    return int(whole) * 1000 + round((us - whole) * 1000.0)


COMM = {f"{lib}:{op}" for lib in ("nccl", "gloo") for op in ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter")}
ORDER = ["Kernel", "Memcpy", "Memset", "Communication", "Runtime", "DataLoader", "CPU Exec"]


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for s, e in sorted(r for r in ranges if r[1] > r[0]):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def _covers(merged: list[tuple[int, int]], t: int) -> bool:
    k = bisect.bisect_right(merged, (t, float("inf"))) - 1
    return k >= 0 and merged[k][0] <= t < merged[k][1]


def reference_breakdown(trace: Path) -> list[tuple[int, dict[str, int]]]:
    """(step duration, {category: ns}) per kept step, computed the plugin's way from the raw JSON."""
    opener = gzip.open if trace.suffix == ".gz" else open
    with opener(trace, "rt") as f:
        data = json.load(f)
    events = [e for e in data["traceEvents"] if e.get("ph") == "X" and "cat" in e]
    for e in events:
        e["_s"] = _ns(float(e["ts"]))
        e["_e"] = e["_s"] + _ns(float(e.get("dur", 0)))
    events.sort(key=lambda e: e["_s"])
    comm_ext = {e["args"].get("External id") for e in events if e["name"] in COMM and e["cat"].lower() in ("cpu_op", "user_annotation")}
    roles: dict[str, list[tuple[int, int]]] = {r: [] for r in ORDER}
    steps: list[list[int]] = []
    runtimes: list[dict] = []
    device: list[dict] = []
    for e in events:
        cat, name, span = e["cat"].lower(), e["name"], (e["_s"], e["_e"])
        args = e.get("args") or {}
        if cat == "kernel":
            comm = args.get("External id") in comm_ext or name.startswith(("nccl", "rccl"))
            roles["Communication" if comm else "Kernel"].append(span)
            device.append(e)
        elif cat in ("gpu_memcpy", "memcpy"):
            roles["Memcpy"].append(span)
            device.append(e)
        elif cat in ("gpu_memset", "memset"):
            roles["Memset"].append(span)
            device.append(e)
        elif cat in ("cuda_runtime", "runtime"):
            roles["Runtime"].append(span)
            runtimes.append(e)
        elif cat in ("cpu_op", "user_annotation"):  # host rows only (not gpu_user_annotation)
            if name.startswith("ProfilerStep#"):
                steps.append([e["_s"], e["_e"]])
            elif name.startswith("enumerate(DataLoader)#") and name.endswith(".__next__"):
                roles["DataLoader"].append(span)
            elif name in COMM:
                roles["Communication"].append(span)
            else:
                roles["CPU Exec"].append(span)
    merged = {r: _merge(v) for r, v in roles.items()}

    # the plugin's two-pointer walk over runtimes sorted by start (event_parser.py, _find_device_steps)
    by_corr: dict[int, list[dict]] = {}
    for d in device:
        by_corr.setdefault(d["args"].get("correlation"), []).append(d)
    rts = sorted(runtimes, key=lambda r: r["_s"])
    big = 2**62
    dev_ext = [(big, -big)] * len(steps)
    count = [0] * len(steps)
    matched: set[int] = set()
    i = j = 0
    lo, hi = big, -big
    while i < len(steps) and j < len(rts):
        r = rts[j]
        if r["_s"] < steps[i][0]:
            j += 1
        elif r["_e"] <= steps[i][1]:
            for d in by_corr.get(r["args"].get("correlation"), []):
                lo, hi = min(lo, d["_s"]), max(hi, d["_e"])
                matched.add(id(d))
                count[i] += 1
            j += 1
        elif r["_s"] < steps[i][1]:
            j += 1
        else:
            dev_ext[i] = (lo, hi)
            i += 1
            lo, hi = big, -big
    while i < len(steps):
        dev_ext[i] = (lo, hi)
        lo, hi = big, -big
        i += 1
    if matched:
        prev = steps[0][0]
        if dev_ext[0][0] != big:
            for d in device:
                if id(d) not in matched and d["_e"] < dev_ext[0][0]:
                    prev = max(prev, d["_e"])
        for k, st in enumerate(steps):
            s = max(prev, st[0])
            e = max(st[1], dev_ext[k][1]) if dev_ext[k][0] != big else max(st[1], s)
            e = max(e, s)
            steps[k] = [s, e]
            prev = e
        if len(steps) > 1:
            last = max(k for k in range(len(steps)) if count[k] > 0)
            keep = last + 1
            if last > 0 and count[last - 1] * 0.8 > count[last]:
                keep = last
            steps = steps[:keep]

    # elementary segments: every instant goes to the first category (in priority order) that covers it
    out = []
    for s, e in steps:
        cuts = {s, e}
        for ranges in merged.values():
            for a, b in ranges:
                if s < a < e:
                    cuts.add(a)
                if s < b < e:
                    cuts.add(b)
        cuts_sorted = sorted(cuts)
        cost = {r: 0 for r in ORDER + ["Other"]}
        for a, b in zip(cuts_sorted, cuts_sorted[1:]):
            owner = next((r for r in ORDER if _covers(merged[r], a)), "Other")
            cost[owner] += b - a
        out.append((e - s, cost))
    return out


# ---------------------------------------------------------------------------------------------------------
def test_breakdown_equals_independent_interval_union_on_a_real_cuda_trace(corpus_dir):
    trace = corpus_dir / "cuda_ns_resolution_68k.json.gz"
    ref = reference_breakdown(trace)
    ov = overview(_load(trace))
    assert len(ref) == len(ov.steps) == 5
    assert [s.number for s in ov.steps] == [101, 102, 103, 104, 105]
    for k, (total, cost) in enumerate(ref):
        assert ov.steps[k].duration == total
        got = {c: int(ov.costs[k, ov.categories.index(c)]) for c in ov.categories}
        assert got == cost, (k, got, cost)
    # the numbers are not trivial: kernels dominate, every category the trace has is present
    avg = ov.to_dict()["average"]["breakdown_pct"]
    assert avg["Kernel"] > 90 and avg["Memcpy"] > 0 and avg["Runtime"] > 0 and avg["CPU Exec"] > 0
    assert "Communication" in avg  # the trace has nccl:all_reduce / nccl:broadcast


CORPUS_FILES = [
    "cpu_only.json.gz", "cuda_alexnet.json.gz", "cuda_backward_thread.json", "cuda_compare_base.json.gz",
    "cuda_compare_test.json.gz", "cuda_event_sync_multistream.json.gz", "cuda_ns_resolution_68k.json.gz",
    "cuda_sampled_rank0.json.gz", "cuda_simple_add.json.gz", "cuda_triton.json.gz", "legacy_2020_inference.json.gz",
    "mtia_inference.json.gz", "rocm_mi250_train.json.gz",
]


@pytest.mark.parametrize("name", CORPUS_FILES + ["neuron:naive", "neuron:fused", "neuron:compiled"])
def test_categories_sum_to_the_step_time(corpus_dir, name):
    path = NEURON_SAMPLES / name.split(":")[1] if name.startswith("neuron:") else corpus_dir / name
    ov = overview(_load(path))
    assert ov.steps
    doc = ov.to_dict()
    for k, step in enumerate(ov.steps):
        assert int(ov.costs[k].sum()) == step.duration
        assert (ov.costs[k] >= 0).all()
        assert sum(doc["steps"][k]["breakdown_us"].values()) == pytest.approx(doc["steps"][k]["total_us"], abs=1e-2)
    assert sum(doc["average"]["breakdown_us"].values()) == pytest.approx(doc["average"]["total_us"], abs=1e-2)
    steps = [(s.start, s.end) for s in ov.steps]
    assert all(a[1] <= b[0] for a, b in zip(steps, steps[1:])), "steps overlap"


def test_gpu_mirror_of_a_step_is_not_a_step(corpus_dir):
    """Real traces carry gpu_user_annotation rows named ProfilerStep#N (the plugin counted them as extra
    steps): only host steps count."""
    trace = corpus_dir / "rocm_mi250_train.json.gz"
    prof = _load(trace)
    mirrors = [i for i in range(len(prof)) if prof.cat_of(i) == "gpu_user_annotation" and prof.name_of(i).startswith("ProfilerStep#")]
    assert mirrors
    ov = overview(prof)
    host = [i for i in range(len(prof)) if prof.cat_of(i) == "user_annotation" and prof.name_of(i).startswith("ProfilerStep#")]
    assert len(ov.step_table.steps) + ov.step_table.dropped_tail == len(host)


# ---------------------------------------------------------------------------------------------------------
# Neuron
# ---------------------------------------------------------------------------------------------------------
def _executions_from_parquet(variant: str) -> dict[tuple, tuple[int, int]]:
    """Logical executions read straight from the Explorer export: the per-physical-core copies of one
    execution (same process, logical core and exec_id) merged into [first start, last end]."""
    import pyarrow.parquet as pq

    rows = pq.read_table(NEURON_SAMPLES / variant / "explorer_parquet" / "SystemProfileEvents.parquet").to_pylist()
    out: dict[tuple, tuple[int, int]] = {}
    copies = 0
    for r in rows:
        if r["name"] != "nc_exec_running":
            continue
        copies += 1
        key = (r["process_id"], r["nc_idx"], json.loads(r["extra_attributes_json"])["exec_id"])
        s, e = out.get(key, (r["start_ts"], r["end_ts"]))
        out[key] = (min(s, r["start_ts"]), max(e, r["end_ts"]))
    assert copies == 2 * len(out), "the sample runs at LNC=2: two physical-core copies per execution"
    return out


@pytest.mark.parametrize("variant", ["naive", "fused", "compiled"])
def test_neuroncore_busy_equals_the_sum_of_executions_lnc_copies_once(variant):
    execs = _executions_from_parquet(variant)
    expected = sum(e - s for s, e in execs.values())
    ov = overview(_load(NEURON_SAMPLES / variant))
    assert ov.neuron and ov.categories[0] == "NeuronCore"
    busy = int(ov.costs[:, 0].sum())
    assert busy == expected
    (core,) = ov.devices.devices
    assert core.label == "NC0" and core.busy_ns == expected
    assert len(core.lanes) == 2  # NC0:0 and NC0:1 merged into one logical core
    # the kernel view counts one call per logical execution, not per copy
    assert sum(r.calls for r in ov.kernel_tables.by_name) == len(execs)


def test_neuron_naive_vs_fused_recommendation_and_kernel_view():
    naive = overview(_load(NEURON_SAMPLES / "naive"))
    fused = overview(_load(NEURON_SAMPLES / "fused"))
    rules = {r.rule: r for r in naive.recommendations}
    assert "neuron_dispatches" in rules and rules["neuron_dispatches"].value == 6.0
    assert "torch.compile" in rules["neuron_dispatches"].message
    assert not [r for r in fused.recommendations if r.rule.startswith("neuron_")]
    # per op: the walkthrough's aten::mul, 3 executions, 1,164.5 us on the device
    by_op = {r.op: r for r in naive.kernel_tables.by_op}
    assert by_op["aten::mul"].calls == 3
    assert by_op["aten::mul"].total_ns == 1_164_500


# ---------------------------------------------------------------------------------------------------------
# device metrics, kernel view
# ---------------------------------------------------------------------------------------------------------
def test_gpu_utilization_and_kernel_table_against_the_raw_trace(corpus_dir):
    trace = corpus_dir / "cuda_ns_resolution_68k.json.gz"
    with gzip.open(trace, "rt") as f:
        data = json.load(f)
    kernels = [e for e in data["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
    ov = overview(_load(trace))
    S, E = ov.steps[0].start, ov.steps[-1].end
    # utilization: merged kernel time inside the steps' span / span (same ns conversion as the loader)
    shift = int(data.get("baseTimeNanoseconds", 0))
    spans = _merge([(_ns(float(e["ts"])) + shift, _ns(float(e["ts"])) + shift + _ns(float(e["dur"]))) for e in kernels])
    busy = sum(max(0, min(b, E) - max(a, S)) for a, b in spans)
    assert ov.devices.devices[0].busy_ns == busy
    assert ov.devices.utilization == pytest.approx(busy / (E - S))
    # kernel table: calls and totals per name, mean blocks per SM weighted by duration
    by_name: dict[str, list[dict]] = {}
    for e in kernels:
        by_name.setdefault(e["name"], []).append(e)
    rows = {r.name: r for r in ov.kernel_tables.by_name}
    assert set(rows) == set(by_name)
    for name, evs in by_name.items():
        r = rows[name]
        assert r.calls == len(evs)
        assert r.total_ns == sum(_ns(float(e["dur"])) for e in evs)
        w = sum(_ns(float(e["dur"])) for e in evs)
        bps = sum(float(e["args"].get("blocks per SM", 0)) * _ns(float(e["dur"])) for e in evs) / w
        assert r.blocks_per_sm == pytest.approx(bps)
    totals = [r.total_ns for r in ov.kernel_tables.by_name]
    assert totals == sorted(totals, reverse=True)
    longest = ov.kernel_tables.by_name[0]
    prof = _load(trace)
    assert prof.end[longest.longest] - prof.start[longest.longest] == longest.max_ns


def test_json_interface_keys(corpus_dir):
    doc = overview(_load(corpus_dir / "cuda_ns_resolution_68k.json.gz")).to_dict()
    assert {"steps", "average", "gpu", "kernels", "communication", "recommendations"} <= set(doc)
    step = doc["steps"][0]
    assert {"step", "total_us", "breakdown_us"} <= set(step)
    assert list(step["breakdown_us"]) == ["Kernel", "Memcpy", "Memset", "Communication", "Runtime", "DataLoader", "CPU Exec", "Other"]
    assert {"total_us", "breakdown_us"} <= set(doc["average"])
    assert {"utilization_pct", "sm_efficiency_pct", "achieved_occupancy_pct", "tensor_core_pct"} <= set(doc["gpu"])
    assert {"name", "calls", "total_us", "mean_us", "max_us", "min_us", "blocks_per_sm", "occupancy_pct", "tensor_cores"} <= set(doc["kernels"][0])
    for r in doc["recommendations"]:
        assert {"rule", "message", "value"} <= set(r)
    json.dumps(doc)  # plain data


def test_steps_selection(corpus_dir):
    from trntui.errors import TrntuiError

    prof = _load(corpus_dir / "cuda_ns_resolution_68k.json.gz")
    full = overview(prof)
    part = overview(prof, "102-103")
    assert [s.number for s in part.steps] == [102, 103]
    assert np.array_equal(part.costs, full.costs[1:3])
    assert part.average_ns["Total"] == pytest.approx((full.steps[1].duration + full.steps[2].duration) / 2)
    assert sum(r.calls for r in part.kernel_tables.by_name) < sum(r.calls for r in full.kernel_tables.by_name)
    with pytest.raises(TrntuiError, match="no such step"):
        overview(prof, "7")


def test_step_rows_match_the_overview(corpus_dir):
    from trntui.analysis.overview import step_rows

    prof = _load(corpus_dir / "cuda_sampled_rank0.json.gz")
    ov = overview(prof)
    rows = step_rows(prof)
    assert [r["step"] for r in rows] == [s.number for s in ov.steps]
    for k, r in enumerate(rows):
        assert r["total_ns"] == r["end_ns"] - r["start_ns"] == sum(r["breakdown_ns"].values())
        assert r["communication_ns"] == ov.communication.communication[k] > 0
        assert r["computation_ns"] + r["communication_ns"] - r["overlap_ns"] + r["other_ns"] == r["total_ns"]


def test_recommendations_carry_their_figures(corpus_dir):
    ov = overview(_load(corpus_dir / "cuda_sampled_rank0.json.gz"))
    rules = {r.rule: r for r in ov.recommendations}
    comm = 100 * ov.average_ns["Communication"] / ov.average_ns["Total"]
    assert comm > 10 and rules["communication"].value == round(comm, 2)
    assert f"{comm:.1f}%" in rules["communication"].message
    util = ov.devices.devices[0].utilization
    assert util < 0.5 and rules["low_utilization"].value == {"GPU 0": round(100 * util, 2)}
    assert rules["low_utilization"].source == "plugin"


# ---------------------------------------------------------------------------------------------------------
# a real CPU capture with a DataLoader (torch 2.13)
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.torch  # profiles with torch
def test_dataloader_share_on_a_real_cpu_capture(tmp_path):
    torch = pytest.importorskip("torch")
    import time

    from torch.profiler import ProfilerActivity, profile, schedule

    class SlowData(torch.utils.data.Dataset):
        def __len__(self):
            return 40  # five batches: one warm-up step, four recorded

        def __getitem__(self, i):
            time.sleep(0.0005)  # a slow decode, as real input pipelines have
            return torch.randn(32)

    loader = torch.utils.data.DataLoader(SlowData(), batch_size=8, num_workers=0)
    model = torch.nn.Linear(32, 32)
    path = tmp_path / "trace.json"
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=4, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
        for batch in loader:
            model(batch).sum().backward()
            prof.step()
    ov = overview(_load(path))
    assert len(ov.steps) >= 3
    assert not ov.has_device and "Kernel" not in ov.visible
    dl = ov.average_ns["DataLoader"] / ov.average_ns["Total"]
    assert dl > 0.05
    rules = {r.rule: r for r in ov.recommendations}
    assert rules["dataloader"].value == round(100 * dl, 2)
    for k, step in enumerate(ov.steps):
        assert ov.costs[k, ov.categories.index("DataLoader")] > 0
        assert int(ov.costs[k].sum()) == step.duration


def test_cached_run_keeps_kernel_figures_and_gives_the_same_overview(tmp_path, corpus_dir, monkeypatch):
    """The kernels' args figures are decoded once and kept with the cached profile; a re-open reads them back
    (and gives the same overview); changing the trace rebuilds the entry and drops them."""
    import os
    import shutil

    from trntui import cache

    monkeypatch.setenv("TRNTUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRNTUI_CACHE_MIN_BYTES", "0")
    monkeypatch.delenv("TRNTUI_NO_CACHE", raising=False)
    trace = tmp_path / "cuda_sampled_rank0.json.gz"
    shutil.copy(corpus_dir / "cuda_sampled_rank0.json.gz", trace)
    (run,) = find_runs(trace)
    first = load_run(run)  # parsed, entry written
    doc1 = overview(first).to_dict()
    entry = first.cache["cache_entry"]
    assert (entry / "derived_overview_kernels_v2.npz").is_file()
    again = load_run(run)  # from the cache
    assert "cache_entry" in again.cache
    stored = cache.load_derived(again, "overview_kernels_v2")
    assert stored is not None and len(stored["idx"]) == sum(r.calls for r in overview(first).kernel_tables.by_name)
    assert overview(again).to_dict() == doc1
    assert overview(load_run(run), "552").to_dict()["steps"] == [doc1["steps"][1]]  # rows of the kept costs
    os.utime(trace, ns=(1, 1))  # a changed file: a miss, the entry is rebuilt without the derived arrays
    third = load_run(run)
    assert cache.load_derived(third, "overview_kernels_v2") is None


@pytest.mark.torch  # profiles with torch
def test_memory_curve_on_a_real_profile_memory_capture(tmp_path):
    """A profile_memory=True capture: the CPU curve has every [memory] record, its peak is the largest
    `Total Allocated`, and the op named at the peak is the innermost op around that record (read here from the
    raw JSON)."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, schedule

    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256))
    x = torch.randn(64, 256)
    path = tmp_path / "trace.json"
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, schedule=schedule(wait=0, warmup=1, active=2, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
        for _ in range(3):
            model(x).relu().sum().backward()
            prof.step()
    events = json.loads(path.read_text())["traceEvents"]
    records = [e for e in events if e.get("name") == "[memory]" and e["args"].get("Device Type") == 0]
    assert records
    peak = max(records, key=lambda e: e["args"]["Total Allocated"])
    around = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op" and e["tid"] == peak["tid"]
              and e["ts"] <= peak["ts"] <= e["ts"] + e["dur"]]
    innermost = max(around, key=lambda e: (e["ts"], -e["dur"]))["name"]

    ov = overview(_load(path))
    cpu = ov.memory.by_device("CPU")
    assert cpu is not None and cpu.records == len([r for r in records if r["args"].get("Addr") is not None])
    assert cpu.peak_allocated == peak["args"]["Total Allocated"]
    assert cpu.peak_op == innermost or cpu.peak_op.endswith(f"({innermost})")
    assert int(cpu.allocated.max()) == cpu.peak_allocated and np.all(np.diff(cpu.t) >= 0)
    doc = ov.to_dict()["memory"][0]
    assert doc["device"] == "CPU" and doc["peak_allocated_bytes"] == cpu.peak_allocated and doc["peak_op"] == cpu.peak_op
