"""Chains on Neuron profiles: aten op → framework device event → nrta_execute_schedule → nc_exec_running, with
per-physical-core duplicates (LNC=2) merged into one hop, and broken links reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from trntui.analysis.chains import follow
from trntui.analysis.key_averages import key_averages
from trntui.analysis.neuron import device_time_info
from trntui.session import find_runs, load_profile, load_run
from trntui.model.profile import Tier

from tests.neuron_samples import generator

REPO = Path(__file__).resolve().parents[1]


_generator = generator


def _events(profile, name: str) -> list[int]:
    return [i for i in range(len(profile)) if profile.name_of(i) == name]


def test_chain_of_a_mul_with_lnc2_merge() -> None:
    profile = load_profile(REPO / "sample_profiles" / "neuron" / "naive")
    first_mul = _events(profile, "aten::mul")[0]
    chain = follow(profile, first_mul)
    assert chain.root == first_mul and not chain.missing
    (branch,) = chain.branches  # op -> dispatch and op -> driver (External id) are one path: listed once
    assert [h.name for h in branch] == ["aten::mul", "aten::mul.Tensor", "nrta_execute_schedule", "nc_exec_running"]
    assert [h.tier for h in branch] == [Tier.DISPATCH, Tier.DEVICE, Tier.RUNTIME, Tier.HARDWARE]
    assert [profile.cat_of(h.events[0]) for h in branch[:2]] == ["privateuse1_runtime", "privateuse1_driver"]
    assert [h.rule for h in branch] == ["External id", "flow", "flow", "flow"]
    hw = branch[-1]
    assert hw.cores == 2 and "(+1 core)" in hw.lane_label
    assert hw.duration == 388_100  # the merged [min start, max end] of the two physical-core rows
    assert hw.spread == 450  # core 1 started 0.45 us after core 0 (core 0 ended 0.3 us early)
    assert {profile.lane_of(e).ident for e in hw.events} == {"NC0:0", "NC0:1"}
    assert hw.gap is not None and hw.gap > 0


def test_chain_from_hardware_walks_up_to_the_op() -> None:
    profile = load_profile(REPO / "sample_profiles" / "neuron" / "compiled")
    hw = _events(profile, "nc_exec_running")[1]  # the second physical core's copy
    chain = follow(profile, hw)
    assert profile.name_of(chain.root) == "Torch-Compiled Region: 0/0"
    (branch,) = chain.branches
    assert branch[-1].cores == 2 and branch[-1].duration == 375_500


def test_scalar_copy_chain_reaches_runtime_only() -> None:
    profile = load_profile(REPO / "sample_profiles" / "neuron" / "naive")
    chain = follow(profile, _events(profile, "aten::copy_")[0])
    names = sorted(h.name for b in chain.branches for h in b)
    assert names == ["dmem_buf_copyin", "nrt_tensor_write"]
    assert any("no hardware execution" in m for m in chain.missing)


@pytest.mark.parametrize("lnc", [1, 2, 4])
def test_device_time_not_double_counted_for_any_lnc(tmp_path: Path, lnc: int) -> None:
    gen = _generator()
    gen.write_variant(tmp_path, "naive", lnc=lnc)
    profile = load_run(find_runs(tmp_path / "naive")[0])
    assert len(_events(profile, "nc_exec_running")) == 6 * lnc
    table = key_averages(profile)
    assert table.sum_self_device == pytest.approx(2354.9)
    assert device_time_info(profile)["executions"] == 6


def test_broken_link_is_partial_and_explained(tmp_path: Path) -> None:
    gen = _generator()
    gen.write_variant(tmp_path, "naive", drop_flow_for=2)  # the aten::mean execution lost its flow ids
    profile = load_run(find_runs(tmp_path / "naive")[0])
    mean = _events(profile, "aten::mean")[0]
    chain = follow(profile, mean)
    (branch,) = chain.branches
    assert [h.name for h in branch] == ["aten::mean", "aten::mean.dim", "nrta_execute_schedule"]
    assert any("no hardware execution linked" in m for m in chain.missing)
    table = key_averages(profile)
    assert table.self_device_time_total[table.find("aten::mean")] == 0
    assert table.self_device_time_total[table.find("aten::mul")] == pytest.approx(1164.5)
    assert table.sum_self_device == pytest.approx(2354.9 - 340.8)
    assert any("2 nc_exec_running row(s)" in n and "linked to no framework op" in n for n in profile.meta.notes)
    # the orphan execution has no op above it
    orphan = [e for e in _events(profile, "nc_exec_running") if profile.args(e)["exec_id"] == 2][0]
    assert follow(profile, orphan).missing
