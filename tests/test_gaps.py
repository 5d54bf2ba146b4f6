"""Gap analysis (issue 6): busy/idle per hardware lane, the largest gaps, LNC duplicates, windows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from trntui.analysis.gaps import device_dispatches, gap_report, merge_intervals
from trntui.report.gaps import render_gaps
from trntui.model.builder import ProfileBuilder
from trntui.model.profile import ProfileMeta, Tier

SAMPLES = Path(__file__).resolve().parents[1] / "sample_profiles"


def test_merge_intervals_union_and_provenance() -> None:
    s = np.array([0, 5, 20, 30, 31, 50], np.int64)
    e = np.array([10, 8, 30, 40, 35, 60], np.int64)
    ms, me, first, last = merge_intervals(s, e)
    assert ms.tolist() == [0, 20, 50] and me.tolist() == [10, 40, 60]  # [20,30] touches [30,40]: one block
    assert first.tolist() == [0, 2, 5] and last.tolist() == [0, 3, 5]
    ms, _, _, _ = merge_intervals(s, e, join_touching=False)
    assert ms.tolist() == [0, 20, 30, 50]
    empty = merge_intervals(np.empty(0, np.int64), np.empty(0, np.int64))
    assert all(len(x) == 0 for x in empty)


def profile_with(lanes: dict[str, list[tuple[int, int]]], name: str = "kernel_x", cat: str = "kernel"):
    b = ProfileBuilder(ProfileMeta(device_kind="cuda", backend="CUDA"))
    nm, ct = b.intern_name(name), b.intern_cat(cat)
    starts, ends, lane = [], [], []
    for ident, ivs in lanes.items():
        ln = b.lane(Tier.HARDWARE, "neuron_hw" if ident.startswith("NC") else "device", ident, 1, 0)
        for s, e in ivs:
            starts.append(s)
            ends.append(e)
            lane.append(ln)
    host = b.lane(Tier.DISPATCH, "framework", "TID:1", 1, 1)
    starts.append(0)
    ends.append(10_000)
    lane.append(host)
    n = len(starts)
    b.add_events(start=np.array(starts), end=np.array(ends), lane=np.array(lane),
                 name=np.array([nm] * (n - 1) + [b.intern_name("host")]),
                 cat=np.array([ct] * (n - 1) + [b.intern_cat("cpu_op")]))
    return b.finish()


def test_per_lane_busy_idle_and_largest_gaps() -> None:
    p = profile_with({"Stream:7": [(1000, 1100), (1300, 1400), (2400, 2500)], "Stream:8": [(1050, 1350)]})
    rep = gap_report(p, top=1)
    lanes = {lg.label.split("/")[-1]: lg for lg in rep.lanes}
    s7 = lanes["Stream:7"]
    assert (s7.executions, s7.window, s7.busy_ns, s7.idle_ns, s7.gap_count) == (3, (1000, 2500), 300, 1200, 2)
    assert [(g.start, g.duration) for g in s7.gaps] == [(1400, 1000)]  # top=1: the largest only
    assert p.name_of(s7.gaps[0].before) == "kernel_x" and p.start[s7.gaps[0].after] == 2400
    dev = rep.device  # union: [1000,1400] + [2400,2500]
    assert (dev.busy_ns, dev.idle_ns, dev.gap_count, dev.executions) == (500, 1000, 1, 4)
    assert dev.busy_fraction == pytest.approx(500 / 1500)
    d = rep.to_dict()
    assert d["device"]["window_us"] == [1.0, 2.5] and d["device"]["largest_gaps_us"][0]["start_us"] == pytest.approx(1.4)


def test_window_clips_and_counts_edge_gaps() -> None:
    p = profile_with({"Stream:7": [(1000, 1100), (1300, 1400)]})
    rep = gap_report(p, window=(900, 1500), top=None)
    dev = rep.device
    assert dev.window == (900, 1500) and dev.busy_ns == 200 and dev.idle_ns == 400
    assert sorted((g.start, g.end) for g in dev.gaps) == [(900, 1000), (1100, 1300), (1400, 1500)]
    clipped = gap_report(p, window=(1050, 1350), top=None).device
    assert clipped.busy_ns == 50 + 50 and clipped.idle_ns == 200
    assert gap_report(p, window=(5000, 6000)).device is None


def test_lnc_copies_count_once_but_back_to_back_executions_do_not_merge() -> None:
    lnc = profile_with({"NC0:4": [(0, 100), (100, 200), (300, 400)], "NC0:5": [(5, 105), (105, 205), (305, 405)]},
                       name="nc_exec_running", cat="neuron_hw")
    assert device_dispatches(lnc) == 3
    assert gap_report(lnc).device.executions == 3
    two_cores = profile_with({"NC0:4": [(0, 100)], "NC1:4": [(0, 100)]}, name="nc_exec_running", cat="neuron_hw")
    assert device_dispatches(two_cores) == 2  # different logical cores: two executions
    memcpy = profile_with({"Stream:7": [(0, 10)]}, name="Memcpy HtoD", cat="gpu_memcpy")
    assert device_dispatches(memcpy) == 0  # a copy is not an operator dispatch
    assert gap_report(memcpy).device.busy_ns == 10  # but it keeps the device busy


def test_cpu_only_has_no_hardware(corpus_dir) -> None:
    from trntui.session import load_profile

    rep = gap_report(load_profile(corpus_dir / "cpu_only.json.gz"))
    assert rep.device is None and rep.lanes == [] and not rep.has_hardware
    assert "no hardware lanes" in render_gaps(rep)


def test_render_formats() -> None:
    p = profile_with({"Stream:7": [(1000, 1100), (1300, 1400)]})
    rep = gap_report(p)
    text = render_gaps(rep)
    assert "all hardware lanes" in text and "200.000ns" not in text and "200ns" not in text
    assert "| Lane |" in render_gaps(rep, "markdown")
    csv_text = render_gaps(rep, "csv").splitlines()
    assert csv_text[0].startswith("lane,executions") and csv_text[1].startswith("all hardware lanes,2,0.4,0.2,0.2")


def test_neuron_samples_fusion_removes_gaps() -> None:
    root = SAMPLES / "neuron"
    if not root.is_dir():
        pytest.skip(f"{root} is not there (bundled Neuron-format RMSNorm samples)")
    from trntui.session import find_runs, load_run

    reps = {}
    for run in find_runs(root):
        variant = run.manifest.get("variant") or run.name
        reps[variant] = gap_report(load_run(run))
    if not {"naive", "fused", "compiled"} <= set(reps):
        pytest.skip(f"{root} lacks some variants: {sorted(reps)}")
    assert reps["naive"].device.executions == 6 and reps["naive"].device.gap_count == 5
    assert reps["naive"].device.idle_ns > 0
    for v in ("fused", "compiled"):
        assert reps[v].device.executions == 1 and reps[v].device.gap_count == 0 and reps[v].device.idle_ns == 0
