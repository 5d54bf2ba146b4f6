"""The critical path on traces with a known answer, built here: every expected figure is computed by hand in the
docstring of its test (times in µs; HTA's rules: op edges inside a call stack, a zero-weight dependency between
two top-level ops (the thread idles there; ProfilerStep#N is a user annotation, not an op), blocking calls weigh 0,
launch delay when the stream was empty, kernel-kernel gap otherwise, sync edges weigh 0)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from trntui.analysis.critical_path import CUDA_BOUNDS, critical_paths
from trntui.errors import TrntuiError

HOST_PID, HOST_TID, STREAM = 100, 1, 7


class Trace:
    """A small Kineto trace: host ops, runtime calls with their kernels (by correlation), cuda_sync rows."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.corr = 1000

    def op(self, name: str, ts: float, dur: float, cat: str = "cpu_op", tid: int = HOST_TID) -> None:
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": HOST_PID, "tid": tid, "ts": ts, "dur": dur,
                            "args": {}})

    def launch(self, ts: float, dur: float, k_ts: float, k_dur: float, kernel: str = "k", stream: int = STREAM,
               name: str = "cudaLaunchKernel") -> int:
        self.corr += 1
        c = self.corr
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": HOST_PID, "tid": HOST_TID,
                            "ts": ts, "dur": dur, "args": {"correlation": c}})
        self.events.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": stream, "ts": k_ts,
                            "dur": k_dur, "args": {"correlation": c, "stream": stream, "device": 0}})
        self.events.append({"ph": "s", "id": c, "pid": HOST_PID, "tid": HOST_TID, "ts": ts, "cat": "ac2g",
                            "name": "ac2g"})
        self.events.append({"ph": "f", "id": c, "pid": 0, "tid": stream, "ts": k_ts, "cat": "ac2g", "name": "ac2g",
                            "bp": "e"})
        return c

    def sync_call(self, name: str, ts: float, dur: float, kind: str | None = None, stream: int = STREAM) -> None:
        self.corr += 1
        c = self.corr
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": HOST_PID, "tid": HOST_TID,
                            "ts": ts, "dur": dur, "args": {"correlation": c}})
        if kind:
            self.events.append({"ph": "X", "cat": "cuda_sync", "name": kind, "pid": 0, "tid": stream, "ts": ts,
                                "dur": dur, "args": {"correlation": c, "stream": stream, "device": 0,
                                                     "cuda_sync_kind": kind}})

    def write(self, path):
        meta = [{"ph": "M", "name": "process_name", "pid": HOST_PID, "tid": 0, "args": {"name": "python"}},
                {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
                {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}}]
        path.write_text(json.dumps({"schemaVersion": 1, "displayTimeUnit": "ms",
                                    "deviceProperties": [{"id": 0, "name": "GPU"}],
                                    "traceEvents": meta + self.events}))
        return path


def _load(path):
    import trntui.api as api

    return api.load(path, cache=False).profile


def _us(cp) -> dict[str, float]:
    return {b: v / 1000 for b, v in cp.breakdown_ns.items() if v}


def _names_on_path(cp) -> list[str]:
    return sorted({cp.profile.name_of(int(e)) for e in cp.on_path})


def launch_bound(tmp_path):
    """Ten iterations of: aten::mul [t, t+4] holding cudaLaunchKernel [t+1, t+3]; its tiny kernel [t+20, t+22] on
    an empty stream; cudaStreamSynchronize [t+5, t+23] (an `.item()`); t = 10 + 25 i; ProfilerStep#1 [0, 270]."""
    tr = Trace()
    tr.op("ProfilerStep#1", 0, 270, cat="user_annotation")
    for i in range(10):
        t = 10 + 25 * i
        tr.op("aten::mul", t, 4)
        tr.launch(t + 1, 2, t + 20, 2, kernel="tiny_kernel")
        tr.sync_call("cudaStreamSynchronize", t + 5, 18, kind="Stream Sync")
    return _load(tr.write(tmp_path / "launch.json"))


def test_launch_bound_loop_of_tiny_kernels(tmp_path):
    """Per iteration the path runs mul start → launch start (1, cpu: the mul), launch start → kernel start (19,
    launch overhead: the stream was empty), the kernel (2, compute), a sync edge to the end of the sync (0), a
    dependency to the next mul (0): cpu 10·1 = 10, launch 10·19 = 190, compute 10·2 = 20; path 220 of the step's
    270 (the rest is the host idle between ops, which bounds nothing)."""
    cp = critical_paths(launch_bound(tmp_path))[0]
    assert cp.step == 1 and cp.span_ns == 270_000
    assert _us(cp) == {"cpu_bound": 10, "gpu_kernel_launch_overhead": 190, "gpu_compute_bound": 20}
    assert cp.length_ns == 220_000 and cp.off_path_ns == 50_000 and cp.bound_by == "gpu_kernel_launch_overhead"
    assert sum(cp.breakdown_pct().values()) == pytest.approx(100.0)
    assert _names_on_path(cp) == ["aten::mul", "cudaLaunchKernel", "cudaStreamSynchronize",
                                  "tiny_kernel"]
    top = cp.top_events(None)
    # the launch edges are the runtime calls' (19 µs each), then the kernels (2 µs each)
    assert [(t.name, t.ns) for t in top[:10]] == [("cudaLaunchKernel", 19_000)] * 10
    assert {(t.name, t.ns, t.bound) for t in top if t.name == "tiny_kernel"} == {("tiny_kernel", 2_000,
                                                                                   "gpu_compute_bound")}
    # the longest waiting stretch: one launch delay of 19 µs (the kernels between them are work)
    st = cp.stretches()
    assert st[0].ns == 19_000 and st[0].bounds == {"gpu_kernel_launch_overhead": 19_000}


def gpu_bound(tmp_path, sync_kind: str | None = "Context Sync"):
    """Five aten::mm [10+10i, +8] holding cudaLaunchKernel [11+10i, +5]; kernel 0 [20, 220] on an empty stream,
    kernels 1-4 queued behind it, each 2 µs after the previous one's end ([222, 422], …, [828, 1028]);
    cudaDeviceSynchronize [60, 1030]; ProfilerStep#1 [0, 1040]."""
    tr = Trace()
    tr.op("ProfilerStep#1", 0, 1040, cat="user_annotation")
    k = 20
    for i in range(5):
        tr.op("aten::mm", 10 + 10 * i, 8)
        tr.launch(11 + 10 * i, 5, k, 200, kernel=f"gemm_{i}")
        k += 202
    tr.sync_call("cudaDeviceSynchronize", 60, 970, kind=sync_kind)
    return _load(tr.write(tmp_path / f"gpu_{sync_kind}.json"))


@pytest.mark.parametrize("sync_kind", ["Context Sync", None])
def test_gpu_bound_step_of_long_kernels(tmp_path, sync_kind):
    """Path: mm0 → its launch (1, cpu), launch delay 11 → 20 (9), the five kernels (1000, compute) with four 2 µs
    kernel-kernel gaps (8), the sync edge to the end of cudaDeviceSynchronize (0). Path 1018 of 1040. Without the
    trace's
    cuda_sync rows the wait is inferred from the device rows (with a note): the same path."""
    cp = critical_paths(gpu_bound(tmp_path, sync_kind))[0]
    assert _us(cp) == {"cpu_bound": 1, "gpu_kernel_launch_overhead": 9, "gpu_compute_bound": 1000,
                       "gpu_kernel_kernel_overhead": 8}
    assert cp.length_ns == 1_018_000 and cp.span_ns == 1_040_000 and cp.bound_by == "gpu_compute_bound"
    top = cp.top_events(5)
    assert [t.name for t in top] == [f"gemm_{i}" for i in range(5)] and [t.ns for t in top] == [202_000] * 4 + [200_000]
    # kernel-kernel delay is attributed to the earlier kernel: gemm_0..3 carry 202 µs
    ns = {cp.profile.name_of(e): v for e, v in cp.event_ns().items()}
    assert ns["gemm_0"] == 202_000 and ns["gemm_4"] == 200_000
    assert "ProfilerStep#1" not in ns and ns["aten::mm"] == 1_000 and ns["cudaLaunchKernel"] == 9_000
    if sync_kind is None:
        assert any("no CUDA synchronization events" in n for n in cp.notes)
        assert any("inferred" in n or "linked to the last device row" in n for n in cp.notes)
    else:
        assert any("Context Sync 1" in n for n in cp.notes)


def test_step_blocking_on_stream_synchronize(tmp_path):
    """aten::conv [10, 30] holds cudaLaunchKernel [12, 20] → conv_kernel [25, 425] (empty stream: launch delay
    13); aten::add [35, 45] holds cudaLaunchKernel [37, 42] → add_kernel [427, 437] (queued: gap 2);
    cudaStreamSynchronize [50, 440] (Stream Sync row); aten::copy_ [445, 480]; ProfilerStep#1 [0, 500].
    Path: 2 (cpu: conv) + 13 (launch) + 400 + 2 + 10 (kernels, gap) → sync end (0) → copy_ (a dependency, 0) + 35
    (cpu): cpu 37, launch 13, compute 410, kernel-kernel 2; length 462. aten::add is long but off the path."""
    tr = Trace()
    tr.op("ProfilerStep#1", 0, 500, cat="user_annotation")
    tr.op("aten::conv", 10, 20)
    tr.launch(12, 8, 25, 400, kernel="conv_kernel")
    tr.op("aten::add", 35, 10)
    tr.launch(37, 5, 427, 10, kernel="add_kernel")
    tr.sync_call("cudaStreamSynchronize", 50, 390, kind="Stream Sync")
    tr.op("aten::copy_", 445, 35)
    cp = critical_paths(_load(tr.write(tmp_path / "sync.json")))[0]
    assert _us(cp) == {"cpu_bound": 37, "gpu_kernel_launch_overhead": 13, "gpu_compute_bound": 410,
                       "gpu_kernel_kernel_overhead": 2}
    assert cp.length_ns == 462_000
    names = _names_on_path(cp)
    assert "aten::add" not in names and "aten::copy_" in names and "cudaStreamSynchronize" in names
    p = cp.profile
    add_kernel = [e for e in cp.on_path.tolist() if p.name_of(e) == "add_kernel"]
    assert add_kernel and cp.is_on_path(add_kernel[0])
    # the blocking call itself weighs nothing: its 390 µs are waiting, not work
    assert "cudaStreamSynchronize" not in {t.name for t in cp.top_events(None)}


def test_no_device_rows_says_so(tmp_path):
    tr = Trace()
    tr.op("ProfilerStep#1", 0, 100, cat="user_annotation")
    tr.op("aten::add", 10, 50)
    cp = critical_paths(_load(tr.write(tmp_path / "host.json")))[0]
    assert _us(cp) == {"cpu_bound": 50} and cp.bounds == CUDA_BOUNDS
    assert any("no device rows" in n for n in cp.notes)


def test_bad_window_is_an_error_not_a_crash(tmp_path):
    prof = launch_bound(tmp_path)
    with pytest.raises(TrntuiError, match="no event name contains"):
        critical_paths(prof, annotation="nosuchthing")
    with pytest.raises(TrntuiError, match="instance"):
        critical_paths(prof, annotation="ProfilerStep", instance="5")


# ---------------------------------------------------------------------------------------------------- what-if


def stream_sync(tmp_path):
    tr = Trace()
    tr.op("ProfilerStep#1", 0, 500, cat="user_annotation")
    tr.op("aten::conv", 10, 20)
    tr.launch(12, 8, 25, 400, kernel="conv_kernel")
    tr.op("aten::add", 35, 10)
    tr.launch(37, 5, 427, 10, kernel="add_kernel")
    tr.op("aten::view", 46, 3)
    tr.sync_call("cudaStreamSynchronize", 50, 390, kind="Stream Sync")
    tr.op("aten::copy_", 445, 35)
    return _load(tr.write(tmp_path / "sync.json"))


def test_what_if_by_hand(tmp_path):
    """GPU-bound step (1018 µs path, 1040 µs step): every gemm at 100 µs saves 5·100; kernels=0.8x saves 200;
    path=0.5x halves every edge of the path's events (509) and nothing else overtakes it."""
    cp = critical_paths(gpu_bound(tmp_path))[0]
    w = cp.what_if(["gemm_*=100us"])
    assert w.matched == 5 and w.saved_ns == 500_000 and w.length_ns == 518_000 and w.predicted_step_ns == 540_000
    assert w.breakdown_ns["gpu_compute_bound"] == 500_000
    w = cp.what_if(["kernels=0.8x"])
    assert w.saved_ns == 200_000 and w.breakdown_ns["gpu_compute_bound"] == 800_000
    w = cp.what_if(["path=0.5x"])
    assert w.length_ns == 509_000
    # an op's scale applies to what it calls and the device rows it launched: the kernels (1000 → 100) and the
    # 1 µs of mm0 on the path (→ 0.1)
    w = cp.what_if(["aten::mm=0.1x"])
    assert w.matched == 5 and w.saved_ns == 900_900
    d = w.to_dict(cp)
    assert d["bound_after"] == "gpu_compute_bound" and sum(d["breakdown_pct"].values()) == pytest.approx(100, abs=0.02)


def test_what_if_off_path_op_changes_nothing(tmp_path):
    cp = critical_paths(stream_sync(tmp_path))[0]
    assert not any(cp.profile.name_of(e) == "aten::view" for e in cp.on_path.tolist())
    assert not any(cp.profile.name_of(e) == "aten::add" for e in cp.on_path.tolist())
    for spec in ("aten::view=0.5x", "aten::view=1us", "aten::view=0x"):
        w = cp.what_if([spec])
        assert w.matched == 1 and w.saved_ns == 0 and w.breakdown_ns == cp.breakdown_ns, spec


OFF_PATH_OP_EXPECTED = {"cuda_ns_resolution_68k.json.gz", "cuda_sampled_rank0.json.gz",
                        "mtia_inference.json.gz"}


def _corpus_paths():
    from tests.conftest import CORPUS

    return sorted(p.name for p in CORPUS.iterdir() if ".json" in p.name)


@pytest.mark.parametrize("name", _corpus_paths())
def test_what_if_half_the_path_on_the_corpus(corpus_dir, name):
    """Scaling every event on the path by 0.5: the predicted step is no longer than half the step plus the
    off-path floor (the step time the path does not cover, plus the longest path left with the path's events at
    zero time). Exactly: the new path is at most 0.5·length + 0.5·floor, and at least half the old one. An op of
    the step that is nowhere on the path, scaled, changes nothing."""
    prof = _load(corpus_dir / name)
    try:
        cp = critical_paths(prof)[0]
    except TrntuiError:
        pytest.skip("no step")
    w = cp.what_if(["path=0.5x"])
    floor = cp.floor_ns()
    assert floor <= cp.length_ns
    assert w.predicted_step_ns <= cp.span_ns / 2 + cp.off_path_ns + floor
    assert cp.length_ns / 2 - 1 <= w.length_ns <= 0.5 * cp.length_ns + 0.5 * floor + 1
    # an op name none of whose rows is on the path
    g = cp.graph
    on = np.zeros(len(prof), bool)
    on[cp.on_path] = True
    host = g.host_events
    names_on = set(prof.name[cp.on_path].tolist())
    from trntui.analysis.links import thread_codes

    lane = thread_codes(prof)[1]  # the thread (framework and runtime lanes of one thread together)
    dev_of = {}
    for d, r in g.launcher_of.items():
        dev_of.setdefault(r, []).append(d)

    def untouched(name_id: int) -> bool:
        """No row of this name holds (on its lane) an event on the path or launched a device row on it."""
        for r in host[prof.name[host] == name_id].tolist():
            inner = host[(lane[host] == lane[r]) & (prof.start[host] >= prof.start[r]) & (prof.end[host] <= prof.end[r])]
            if on[inner].any() or any(on[d] for i in inner.tolist() for d in dev_of.get(i, [])):
                return False
        return True

    cands = [int(e) for e in host[np.argsort(-(prof.end[host] - prof.start[host]))].tolist()
             if int(prof.name[e]) not in names_on and prof.cats[int(prof.cat[e])] == "cpu_op"]
    off = [e for e in cands[:40] if untouched(int(prof.name[e]))]
    if name in OFF_PATH_OP_EXPECTED:
        assert off, "this trace has an op off the path"
    if off:
        spec = prof.name_of(off[0]).replace("[", "?").replace("]", "?").replace("*", "?") + "=0.5x"
        w = cp.what_if([spec])
        assert w.saved_ns == 0 and w.breakdown_ns == cp.breakdown_ns, spec


def test_what_if_spec_errors(tmp_path):
    cp = critical_paths(gpu_bound(tmp_path))[0]
    for bad in ("aten::mm", "aten::mm=fast", "=0.5x", "aten::mm=0.5y"):
        with pytest.raises(TrntuiError, match="--what-if"):
            cp.what_if([bad])
    with pytest.raises(TrntuiError, match="no event is named"):
        cp.what_if(["aten::nothing=0.5x"])


# ---------------------------------------------------------------------------------------------------- CLI


def test_overview_prints_the_critical_path(tmp_path, capsys):
    from tests.conftest import run_cli

    gpu_bound(tmp_path)
    path = str(tmp_path / "gpu_Context Sync.json")
    rc, out, err = run_cli(capsys, "overview", path, "--what-if", "kernels=0.5x")
    assert rc == 0, err
    sec = out[out.index("\nCritical path\n"):]
    assert "Critical path of step 1: 1,018.0 us (97.9% of the step's 1,040.0 us), bound by gpu_compute_bound" in sec
    rows = {line.split()[0]: line.split()[1:] for line in sec.splitlines() if line.startswith(("gpu_", "cpu_"))}
    assert rows["gpu_compute_bound"] == ["1,000.0", "98.2"] and rows["cpu_bound"] == ["1.0", "0.1"]
    assert "gemm_0" in sec and "What if kernels=0.5x (5 event(s)): path 518.0 us, predicted step 540.0 us" in sec
    rc, out, _ = run_cli(capsys, "overview", path, "--format", "markdown")
    assert rc == 0 and "## Critical path" in out and "| gpu_compute_bound | 1,000.0 | 98.2 |" in out
    rc, out, _ = run_cli(capsys, "overview", path, "--format", "json", "--what-if", "gemm_*=100us")
    doc = json.loads(out)
    (cp,) = doc["critical_path"]
    assert cp["path_us"] == 1018.0 and cp["step_us"] == 1040.0 and cp["bound_by"] == "gpu_compute_bound"
    assert cp["breakdown_us"]["gpu_kernel_kernel_overhead"] == 8.0 and cp["floor_us"] <= cp["path_us"]
    assert cp["top_events"][0]["name"] == "gemm_0" and cp["top_events"][0]["on_path_us"] == 202.0
    assert cp["what_if"][0]["saved_us"] == 500.0 and cp["what_if"][0]["matched_events"] == 5
    rc, out, _ = run_cli(capsys, "overview", path, "--no-critical-path")
    assert rc == 0 and "Critical path" not in out


def test_overview_what_if_errors_are_one_line(tmp_path, capsys):
    from tests.conftest import run_cli

    gpu_bound(tmp_path)
    path = str(tmp_path / "gpu_Context Sync.json")
    for bad in ("gemm", "nosuch=0.5x"):
        rc, out, err = run_cli(capsys, "overview", path, "--what-if", bad)
        assert rc == 2 and out == "" and err.startswith("trntui: error:") and len(err.strip().splitlines()) == 1, err


def test_compare_reports_the_breakdown_per_run(corpus_dir, capsys):
    """`trntui compare` prints, per run, the critical path of its longest step: the same figures as the analysis."""
    from tests.conftest import run_cli
    from trntui.analysis.critical_path import critical_paths as cps

    a, b = corpus_dir / "cuda_compare_base.json.gz", corpus_dir / "cuda_compare_test.json.gz"
    rc, out, err = run_cli(capsys, "compare", str(a), str(b), "--no-tui", "--only", "summary")
    assert rc == 0, err
    sec = out[out.index("Critical path per run"):].splitlines()
    head = next(line for line in sec if line.startswith("run"))
    assert head.split()[:5] == ["run", "bound", "by", "step", "path"]
    rows = {line.split()[0]: line.split() for line in sec if line.startswith("cuda_compare_")}
    for name, path in (("cuda_compare_base", a), ("cuda_compare_test", b)):
        cp = cps(_load(path))[0]
        pct = cp.breakdown_pct()
        assert rows[name][1:4] == [cp.bound_by, str(cp.step), f"{cp.length_ns / 1000:,.1f}"]
        shown = [bd for bd in cp.bounds if f"{bd} %" in head]
        assert rows[name][4:] == [f"{pct[bd]:.1f}" for bd in shown]
    rc, out, _ = run_cli(capsys, "compare", str(a), str(b), "--format", "json")
    doc = json.loads(out)
    assert [c["run"] for c in doc["critical_path"]] == ["cuda_compare_base", "cuda_compare_test"]
    cp = cps(_load(b))[0]
    assert doc["critical_path"][1]["path_us"] == cp.length_ns / 1000
    assert doc["critical_path"][1]["breakdown_pct"] == {k: round(v, 2) for k, v in cp.breakdown_pct().items()}


# ---------------------------------------------------------------------------------------------------- Neuron


def neuron_step(tmp_path, exec_us: float):
    """The synthetic fused-RMSNorm capture (scripts/make_neuron_samples.py, one NeuronCore execution, LNC=1),
    re-timed: aten::rms_norm [25.0, 79.9] holds aten::_fused_rms_norm [27.7, 77.2], whose nrta_execute_schedule
    runs late, at [76.0, 80.2] (torch-neuronx spent the op's time before dispatching); the execution
    nc_exec_running runs [81.2, 81.2 + exec_us]; the other runtime rows (submit, pre/post) are left out."""
    from tests.neuron_samples import generator

    g = generator()
    cap = g.build_capture("fused", lnc=1, driver_until_device_done=True)  # the shape these figures were worked out on

    def at(t: float) -> int:
        return g.BASE_NS + int(round(t * 1000))

    cap.events = [r for r in cap.events if r["name"] not in ("nrt_model_submit", "kbl_exec_pre", "kbl_exec_post")]
    for r in cap.events:
        if r["name"] == "nrta_execute_schedule":
            r["start_ts"], r["end_ts"] = at(76.0), at(80.2)
        elif r["name"] == "nc_exec_running":
            r["start_ts"], r["end_ts"] = at(81.2), at(81.2 + exec_us)
        r["duration_ns"] = r["end_ts"] - r["start_ts"]
    vdir = tmp_path / "fused"
    g.write_trace(cap, vdir / f"{cap.instance}_pid_{cap.pid}" / g.TIMESTAMP_DIR / "trace.json")
    g.write_parquet_export(cap, vdir / g.EXPORT_DIR)
    (vdir / "trntui.json").write_text(json.dumps(g.manifest("fused")))
    import trntui.api as api

    return api.runs(vdir, cache=False)[0].profile


@pytest.mark.parametrize("exec_us,expected,bound", [
    (2.0, {"framework_cpu": 2.7, "dispatch_overhead": 48.3, "runtime_queue_delay": 5.2, "neuroncore_compute": 2.0},
     "dispatch_overhead"),
    (300.0, {"framework_cpu": 2.7, "dispatch_overhead": 48.3, "runtime_queue_delay": 5.2, "neuroncore_compute": 300.0},
     "neuroncore_compute"),
])
def test_neuron_step_where_dispatch_dominates(tmp_path, exec_us, expected, bound):
    """Path: rms_norm start → _fused_rms_norm start (2.7, framework), _fused_rms_norm start → the schedule's
    start (76.0 − 27.7 = 48.3, dispatch: the framework call to nrta_execute_schedule), the schedule → the execution
    on the idle core (81.2 − 76.0 = 5.2, runtime queue delay), the execution (compute). With a 2 µs execution the
    path, 58.2 µs, outlasts the host's 54.9 µs and dispatch is 83% of it; with 300 µs the core bounds the step.
    Neuron bound names, not CUDA's."""
    from trntui.analysis.critical_path import NEURON_BOUNDS

    cp = critical_paths(neuron_step(tmp_path, exec_us))[0]
    assert cp.neuron and cp.bounds == NEURON_BOUNDS
    assert {b: round(v, 3) for b, v in _us(cp).items()} == expected
    assert cp.length_ns == round(sum(expected.values()) * 1000) and cp.bound_by == bound
    assert _names_on_path(cp) == ["aten::_fused_rms_norm", "aten::rms_norm", "nc_exec_running", "nrta_execute_schedule"]
    top = cp.top_events(2)
    if exec_us == 2.0:
        assert (top[0].name, top[0].ns, top[0].bound) == ("aten::_fused_rms_norm", 48_300, "dispatch_overhead")
        st = cp.stretches()
        assert st[0].ns == 53_500 and st[0].bounds == {"dispatch_overhead": 48_300, "runtime_queue_delay": 5_200}
    else:
        assert (top[0].name, top[0].ns, top[0].bound) == ("nc_exec_running", 300_000, "neuroncore_compute")
    # halving the op halves its dispatch time and the execution it dispatched (the op and its PrivateUse1
    # dispatch row share the name: two events matched)
    w = cp.what_if(["aten::_fused_rms_norm=0.5x"])
    assert w.matched == 2 and w.saved_ns == round((48.3 + exec_us) / 2 * 1000)


def test_host_time_under_a_dataloader_scope_is_data_loading(tmp_path):
    """enumerate(DataLoader)#… [5, 40] holds aten::copy_ [10, 30]; aten::mm [50, 60] after it: the path is both
    ops (a zero-weight dependency between them), 20 µs of data_loading and 10 of cpu_bound."""
    tr = Trace()
    tr.op("ProfilerStep#1", 0, 100, cat="user_annotation")
    tr.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 5, 35, cat="user_annotation")
    tr.op("aten::copy_", 10, 20)
    tr.op("aten::mm", 50, 10)
    cp = critical_paths(_load(tr.write(tmp_path / "dl.json")))[0]
    assert _us(cp) == {"data_loading": 20, "cpu_bound": 10} and cp.bound_by == "data_loading"


def test_steps_one_path_each_or_joined(corpus_dir, capsys):
    """--steps 102-103: one path per step; --join-steps: one path over both (HTA's advice for pipelined training),
    no shorter than either step's and no longer than their two spans."""
    from tests.conftest import run_cli

    path = str(corpus_dir / "cuda_ns_resolution_68k.json.gz")
    rc, out, _ = run_cli(capsys, "overview", path, "--format", "json", "--steps", "102-103")
    each = json.loads(out)["critical_path"]
    assert rc == 0 and [c["steps"] for c in each] == [[102], [103]]
    rc, out, _ = run_cli(capsys, "overview", path, "--format", "json", "--steps", "102-103", "--join-steps")
    (joined,) = json.loads(out)["critical_path"]
    assert joined["steps"] == [102, 103]
    assert max(c["path_us"] for c in each) < joined["path_us"] <= sum(c["step_us"] for c in each) + 1
    assert sum(joined["breakdown_pct"].values()) == pytest.approx(100, abs=0.05)


# ---------------------------------------------------------------------------------------------------- the solver


def _plain_longest(g, cw, xw) -> int:
    """The longest path of the graph by a plain topological sort (Kahn) over every chain and cross edge: the
    independent reference for the vectorised solver."""
    from collections import defaultdict, deque

    n = g.nodes
    out = defaultdict(list)
    indeg = [0] * n
    for v in range(1, n):
        if not g.seg_first[v]:
            out[v - 1].append((v, int(cw[v])))
            indeg[v] += 1
    for s, d, w in zip(g.x_src.tolist(), g.x_dst.tolist(), xw.tolist()):
        out[s].append((d, int(w)))
        indeg[d] += 1
    dist = [0] * n
    q = deque(v for v in range(n) if indeg[v] == 0)
    seen = 0
    while q:
        u = q.popleft()
        seen += 1
        for v, w in out[u]:
            dist[v] = max(dist[v], dist[u] + w)
            indeg[v] -= 1
            if indeg[v] == 0:
                q.append(v)
    assert seen == n, "cycle"
    return max(dist) if dist else 0


@pytest.mark.parametrize("name", _corpus_paths())
def test_solver_equals_a_plain_topological_sort(corpus_dir, name):
    prof = _load(corpus_dir / name)
    try:
        cp = critical_paths(prof)[0]
    except TrntuiError:
        pytest.skip("no step")
    g = cp.graph
    assert cp.length_ns == _plain_longest(g, g.chain_w, g.x_w)
    # the path's edges add up to its length and are consecutive
    p = cp.path
    assert int(p.weight.sum()) == cp.length_ns
    assert np.array_equal(p.src[1:], p.dst[:-1])
    w = cp.what_if(["path=0.5x"])
    from trntui.analysis.critical_path import apply_what_if

    cw, xw, _ = apply_what_if(cp, ["path=0.5x"])
    assert w.length_ns == _plain_longest(g, cw, xw)


def test_many_syncs_in_one_step(tmp_path):
    """A step that syncs after each of 400 tiny kernels switches chains 800 times: the same per-iteration answer
    as the 10-iteration loop (cpu 1, launch 19, compute 2 µs each) and the plain topological sort's length."""
    tr = Trace()
    n = 400
    tr.op("ProfilerStep#1", 0, 25 * n + 20, cat="user_annotation")
    for i in range(n):
        t = 10 + 25 * i
        tr.op("aten::mul", t, 4)
        tr.launch(t + 1, 2, t + 20, 2, kernel="tiny_kernel")
        tr.sync_call("cudaStreamSynchronize", t + 5, 18, kind="Stream Sync")
    cp = critical_paths(_load(tr.write(tmp_path / "many.json")))[0]
    assert _us(cp) == {"cpu_bound": n, "gpu_kernel_launch_overhead": 19 * n, "gpu_compute_bound": 2 * n}
    assert cp.length_ns == _plain_longest(cp.graph, cp.graph.chain_w, cp.graph.x_w) == 22_000 * n


def test_overview_what_if_on_a_directory_of_runs(capsys):
    """A directory of three runs: a malformed spec is one error before any load; a good one gives every run's
    path its what-if."""
    from tests.conftest import REPO, run_cli

    d = str(REPO / "sample_profiles" / "neuron")
    rc, out, err = run_cli(capsys, "overview", d, "--what-if", "nc_exec_running")
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1 and "--what-if" in err
    rc, out, err = run_cli(capsys, "overview", d, "--format", "json", "--what-if", "kernels=0.5x")
    assert rc == 0, err
    runs = json.loads(out)["runs"]
    assert len(runs) == 3
    for r in runs:
        (cp,) = r["critical_path"]
        assert cp["bound_by"] == "neuroncore_compute" and cp["what_if"][0]["saved_us"] > 0


def test_many_selected_steps_get_the_longest_eight(tmp_path, capsys):
    """--steps over 12 steps: the 8 longest get a path each (in time order), with a note; --join-steps one."""
    from tests.conftest import run_cli

    tr = Trace()
    for i in range(12):
        t0 = 1000 * i
        tr.op(f"ProfilerStep#{i + 1}", t0, 100 + 10 * i, cat="user_annotation")
        tr.op("aten::add", t0 + 5, 50 + 5 * i)
    path = str(tr.write(tmp_path / "steps.json"))
    rc, out, _ = run_cli(capsys, "overview", path, "--format", "json", "--steps", "1-12")
    cps = json.loads(out)["critical_path"]
    assert rc == 0 and [c["step"] for c in cps] == list(range(5, 13))
    assert [c["path_us"] for c in cps] == [50 + 5 * i for i in range(4, 12)]
    assert "the 8 longest of the 12 selected steps" in cps[0]["notes"][0]
    rc, out, _ = run_cli(capsys, "overview", path, "--format", "json", "--steps", "1-12", "--join-steps")
    (joined,) = json.loads(out)["critical_path"]
    assert joined["steps"] == list(range(1, 13)) and joined["path_us"] == sum(50 + 5 * i for i in range(12))
