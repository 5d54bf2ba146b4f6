"""Every real trace of the corpus loads, and its table is sane (issue 2, must-show 2)."""

from __future__ import annotations

import numpy as np
import pytest

from trntui.analysis.key_averages import key_averages
from trntui.analysis.links import build_links
from trntui.session import load_profile
from trntui.model.profile import Tier

CORPUS_FILES = [
    "cpu_only.json.gz",
    "cuda_alexnet.json.gz",
    "cuda_backward_thread.json",
    "cuda_compare_base.json.gz",
    "cuda_compare_test.json.gz",
    "cuda_event_sync_multistream.json.gz",
    "cuda_ns_resolution_68k.json.gz",
    "cuda_sampled_rank0.json.gz",
    "cuda_simple_add.json.gz",
    "cuda_triton.json.gz",
    "legacy_2020_inference.json.gz",
    "mtia_inference.json.gz",
    "rocm_mi250_train.json.gz",
]
DEVICE_KIND = {
    "cpu_only.json.gz": "cpu",
    "mtia_inference.json.gz": "mtia",
    "rocm_mi250_train.json.gz": "rocm",
}
MODERN_CUDA = [
    "cuda_alexnet.json.gz",
    "cuda_event_sync_multistream.json.gz",
    "cuda_ns_resolution_68k.json.gz",
    "cuda_simple_add.json.gz",
    "cuda_triton.json.gz",
    "rocm_mi250_train.json.gz",
]


def test_corpus_is_complete(corpus_dir) -> None:
    """The list above covers every trace in the corpus, so a new file cannot slip through untested."""
    present = sorted(p.name for p in corpus_dir.iterdir() if p.name.endswith((".json", ".json.gz")))
    assert present == sorted(CORPUS_FILES)


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_corpus_trace_loads_with_sane_totals(corpus_dir, name) -> None:
    profile = load_profile(corpus_dir / name)
    assert len(profile) > 0
    assert profile.meta.device_kind == DEVICE_KIND.get(name, "cuda")
    assert (profile.end >= profile.start).all()
    table = key_averages(profile)
    assert len(table) > 0
    assert (table.count > 0).all()
    assert (table.self_cpu_time_total >= -1e-9).all(), "negative self CPU time"
    assert (table.self_cpu_time_total <= table.cpu_time_total + 1e-6).all()
    assert (table.self_device_time_total >= -1e-9).all()
    assert (table.self_device_time_total <= table.device_time_total + 1e-6).all()
    # Σ self CPU equals the time covered by root events: every ns is counted once
    assert table.sum_self_cpu == pytest.approx(float(table.self_cpu_time_total.sum()))
    if DEVICE_KIND.get(name, "cuda") != "cpu":
        assert table.has_device, "device trace without device columns"
        assert table.sum_self_device > 0
    else:
        assert not table.has_device
    # every lane has a tier and an Explorer-style label
    assert all(isinstance(l.tier, Tier) and l.label for l in profile.lanes)


@pytest.mark.parametrize("name", MODERN_CUDA)
def test_modern_cuda_kernels_are_attributed_to_ops(corpus_dir, name) -> None:
    profile = load_profile(corpus_dir / name)
    links = build_links(profile)
    device_rows = np.nonzero(links.device)[0]
    linked = (links.op_of[device_rows] >= 0).mean()
    assert linked >= 0.75, f"only {linked:.0%} of device rows linked to an op"
    table = key_averages(profile)
    cpu_rows = [k for k in range(len(table)) if table.device_type[k] == "CPU"]
    assert any(table.self_device_time_total[k] > 0 for k in cpu_rows), "no op received device time"


def test_ns_resolution_trace_attribution_matches_raw_links(corpus_dir) -> None:
    """Self CUDA of aten ops equals the sum of the durations of the device rows naming them by External id."""
    import gzip
    import json

    raw = json.load(gzip.open(corpus_dir / "cuda_ns_resolution_68k.json.gz", "rt"))
    events = raw["traceEvents"]
    ops = {e["args"]["External id"]: e["name"] for e in events if e.get("cat") == "cpu_op" and "args" in e}
    expected: dict[str, float] = {}
    for e in events:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("ph") == "X":
            name = ops.get(e.get("args", {}).get("External id"))
            if name is not None:
                expected[name] = expected.get(name, 0.0) + e["dur"]
    table = key_averages(load_profile(corpus_dir / "cuda_ns_resolution_68k.json.gz"))
    checked = 0
    for name, total in sorted(expected.items(), key=lambda kv: -kv[1])[:15]:
        k = table.find(name)
        assert k >= 0, name
        assert table.self_device_time_total[k] == pytest.approx(total, abs=0.01 * table.count[k] + 0.01), name
        checked += 1
    assert checked >= 10


def test_kineto_categories_and_lanes(corpus_dir) -> None:
    """cudaLaunchKernel sits on a runtime lane, kernels on a hardware lane, ops on a dispatch lane."""
    profile = load_profile(corpus_dir / "cuda_simple_add.json.gz")
    tiers = {}
    for i in range(len(profile)):
        tiers.setdefault(profile.cat_of(i), set()).add(profile.lane_of(i).tier)
    assert tiers["cpu_op"] == {Tier.DISPATCH}
    assert tiers["cuda_runtime"] == {Tier.RUNTIME}
    assert tiers["kernel"] == {Tier.HARDWARE}
    labels = {l.label for l in profile.lanes}
    assert any(lab.endswith("/framework/TID:" + lab.rsplit(":", 1)[-1]) for lab in labels)


def test_legacy_flow_names_and_lowercase_external_id(corpus_dir) -> None:
    """2020 traces: `Runtime`/`Kernel` categories, `async_gpu` flows, lowercase `external id`."""
    profile = load_profile(corpus_dir / "legacy_2020_inference.json.gz")
    assert "ac2g" in profile.cats  # async_gpu was normalised
    links = build_links(profile)
    kernels = np.nonzero(links.device)[0]
    assert len(kernels) == 4
    assert (links.runtime_of[kernels] >= 0).all()  # every kernel found its cudaLaunchKernel by correlation


def test_relative_timestamps_use_base_time(corpus_dir) -> None:
    profile = load_profile(corpus_dir / "rocm_mi250_train.json.gz")
    base = profile.meta.base_ns
    assert base > 1_600_000_000 * 10**9
    assert profile.span[0] > base
