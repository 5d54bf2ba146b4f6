"""The Neuron capture path against a stand-in `torch_neuronx` (no Trainium here) — issue 4.

The fakes record how trntui builds the profiler: activities CPU + PrivateUse1, `NeuronConfig(modes=[DEVICE,
RUNTIME], profile_output_dir=..., capture_enabled_for_nc=..., correlate_device_time=True)`,
`NeuronProfiler(config).export_trace` as `on_trace_ready`, `torch.neuron.synchronize()` every step, and
`torch.compile(backend="neuron")` for the compiled variant. This checks our wiring against the documented API; it
says nothing about how real torch-neuronx behaves.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch  # captures or profiles with torch: `-m "not torch"` leaves them out

from torch.profiler import ProfilerAction, ProfilerActivity  # noqa: E402

from trntui.capture import (  # noqa: E402
    CaptureRequest,
    NeuronOptions,
    build_workload,
    capture,
    context_for,
    make_neuron_config,
    resolve_device,
    resolve_source,
)
from trntui.errors import TrntuiError  # noqa: E402
from trntui.session import find_runs, load_run  # noqa: E402

TRACE_SUBDIR = Path("i-0fake_pid_4242") / "20260101_000000_000"


def minimal_trace(prefix: str) -> dict:
    base = 1_700_000_000_000_000
    return {
        "schemaVersion": 1,
        "baseTimeNanoseconds": base * 1000,
        "traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1,
             "ts": base + 0.0, "dur": 100.0, "args": {"External id": 1}},
            {"ph": "X", "cat": "cpu_op", "name": f"{prefix}aten::mul", "pid": 1, "tid": 1,
             "ts": base + 10.0, "dur": 20.0, "args": {"External id": 2}},
        ],
    }


class Log:
    def __init__(self) -> None:
        self.events: list[str] = []
        self.configs: list[dict] = []
        self.profilers: list[Any] = []
        self.profiles: list[Any] = []
        self.backend_calls = 0


@pytest.fixture
def fake_neuron(monkeypatch: pytest.MonkeyPatch) -> Log:
    """Install `torch_neuronx`, `torch_neuronx.profiling`, `torch.neuron` and a "neuron" compile backend."""
    log = Log()

    class ProfileMode:
        DEVICE = "mode:DEVICE"
        RUNTIME = "mode:RUNTIME"
        CPU_UTIL = "mode:CPU_UTIL"
        HOST_MEMORY = "mode:HOST_MEMORY"

    class NeuronConfig:
        def __init__(self, modes, profile_output_dir, capture_enabled_for_nc=None, max_events_per_nc=None,
                     correlate_device_time=False, neff_cache_dir=None):
            self.profile_output_dir = profile_output_dir
            log.configs.append(dict(modes=modes, profile_output_dir=profile_output_dir,
                                    capture_enabled_for_nc=capture_enabled_for_nc,
                                    max_events_per_nc=max_events_per_nc,
                                    correlate_device_time=correlate_device_time,
                                    neff_cache_dir=neff_cache_dir))

    class NeuronProfiler:
        def __init__(self, config):
            self.config = config
            log.profilers.append(self)

        def export_trace(self, prof):
            log.events.append("export")
            target = Path(self.config.profile_output_dir) / TRACE_SUBDIR
            target.mkdir(parents=True)
            (target / "trace.json").write_text(json.dumps(minimal_trace("")))
            (target / "ntrace.pb").write_bytes(b"\x00")
            (target / "trace_info.pb").write_bytes(b"\x00")

    profiling = types.ModuleType("torch_neuronx.profiling")
    profiling.NeuronConfig, profiling.ProfileMode, profiling.NeuronProfiler = NeuronConfig, ProfileMode, NeuronProfiler
    tnx = types.ModuleType("torch_neuronx")
    tnx.__version__ = "0.0.0-standin"
    tnx.profiling = profiling
    monkeypatch.setitem(sys.modules, "torch_neuronx", tnx)
    monkeypatch.setitem(sys.modules, "torch_neuronx.profiling", profiling)

    def synchronize():
        log.events.append("sync")
        log.neff_env.append(os.environ.get("TORCH_NEURONX_NEFF_CACHE_DIR"))

    log.neff_env = []
    device = types.SimpleNamespace(is_available=lambda: True, synchronize=synchronize)
    monkeypatch.setattr(torch, "neuron", device, raising=False)

    from torch._dynamo.backends import registry

    def neuron_backend(gm, example_inputs):
        log.backend_calls += 1
        return gm.forward

    monkeypatch.setitem(registry._BACKENDS, "neuron", None)
    monkeypatch.setitem(registry._COMPILER_FNS, "neuron", neuron_backend)
    torch._dynamo.reset()
    log.profile_mode = ProfileMode
    log.neuron_config = NeuronConfig
    log.profiling = profiling
    yield log
    torch._dynamo.reset()


class FakeProfile:
    """Stands in for `torch.profiler.profile`: records kwargs; calls on_trace_ready as the schedule says."""

    log: Log

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.step_num = 0
        self.log.profiles.append(self)

    def __enter__(self) -> FakeProfile:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def step(self) -> None:
        self.log.events.append("step")
        if self.kwargs["schedule"](self.step_num) == ProfilerAction.RECORD_AND_SAVE:
            self.kwargs["on_trace_ready"](self)
        self.step_num += 1

    def export_chrome_trace(self, path: str) -> None:
        self.log.events.append("export")
        Path(path).write_text(json.dumps(minimal_trace("")))


def neuron_capture(log: Log, out: Path, variants: list[str], neuron: NeuronOptions | None = None):
    setup = resolve_device("neuron", neuron or NeuronOptions())
    assert setup.kind == "neuron" and setup.device == "neuron" and setup.compile_backend == "neuron"
    # No Neuron device exists here: keep the inputs on the CPU; everything else is the neuron setup.
    setup = dataclasses.replace(setup, device="cpu")
    source = resolve_source("rmsnorm")
    workload = build_workload(source, context_for(setup, "bf16", (4, 512)))
    FakeProfile.log = log
    request = CaptureRequest(workload=workload, variants=variants, out=out, command="test", dtype="bfloat16")
    return capture(request, setup, profile_factory=FakeProfile, progress=lambda m: None)


def test_neuron_profiler_built_as_documented(fake_neuron: Log, tmp_path: Path) -> None:
    out = tmp_path / "neuron"
    result = neuron_capture(fake_neuron, out, ["naive", "fused", "compiled"])
    assert len(fake_neuron.profiles) == 3 and len(fake_neuron.configs) == 3 and len(fake_neuron.profilers) == 3
    for name, prof, config, profiler in zip(("naive", "fused", "compiled"), fake_neuron.profiles,
                                            fake_neuron.configs, fake_neuron.profilers):
        kw = prof.kwargs
        assert kw["activities"] == [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]
        assert kw["on_trace_ready"] == profiler.export_trace
        assert kw["experimental_config"] is profiler.config
        assert kw["record_shapes"] is False
        actions = [kw["schedule"](i) for i in range(4)]
        assert actions == [ProfilerAction.NONE, ProfilerAction.NONE, ProfilerAction.WARMUP,
                           ProfilerAction.RECORD_AND_SAVE]
        assert config["modes"] == ["mode:DEVICE", "mode:RUNTIME"]
        assert Path(config["profile_output_dir"]).name == name
        assert Path(config["profile_output_dir"]).parent.name == "neuron.partial"  # renamed when complete
        assert config["capture_enabled_for_nc"] == "0"
        assert config["correlate_device_time"] is True
        assert config["max_events_per_nc"] is None
        assert Path(config["neff_cache_dir"]) == Path(config["profile_output_dir"]) / "neff_cache"  # NEFFs in the profile
    # three warm calls (each synchronised), then per step: synchronize before prof.step(); export on the 4th
    per_variant = ["sync"] * 3 + ["sync", "step"] * 3 + ["sync", "step", "export"]
    assert fake_neuron.events == per_variant * 3
    assert fake_neuron.backend_calls >= 1  # the compiled variant went through torch.compile(backend="neuron")

    for vr in result.variants:
        manifest = json.loads((out / vr.variant / "trntui.json").read_text())
        assert manifest["complete"] is True and list(manifest)[-1] == "complete"
        assert manifest["device"] == "neuron" and manifest["compile_backend"] == "neuron"
        assert manifest["versions"]["torch_neuronx"] == "0.0.0-standin"
        assert manifest["trace"] == (TRACE_SUBDIR / "trace.json").as_posix()
        assert manifest["profiler"]["activities"] == ["CPU", "PrivateUse1"]
        assert manifest["profiler"]["neuron_config"]["capture_enabled_for_nc"] == "0"
        assert manifest["profiler"]["dropped_options"] == []
        assert manifest["profiler"]["neuron_api"] == "documented"
        assert manifest["profiler"]["neff_cache_dir"] == "neff_cache"
        assert (out / vr.variant / "neff_cache").is_dir()
        assert (out / vr.variant / TRACE_SUBDIR / "ntrace.pb").is_file()
    # the NEFF cache variable pointed into the variant while it was compiled and captured, and is gone after
    assert all(v is not None and v.endswith("/neff_cache") for v in fake_neuron.neff_env)
    assert "TORCH_NEURONX_NEFF_CACHE_DIR" not in os.environ

    # the loaders find one run per variant and attach the manifest that sits above torch-neuronx's directories
    runs = find_runs(out)
    assert len(runs) == 3
    assert sorted(r.manifest["variant"] for r in runs) == ["compiled", "fused", "naive"]
    assert load_run(runs[0]).meta.trace_meta["manifest"]["device"] == "neuron"
    manifest_path = out / "fused" / "trntui.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["complete"] = False
    manifest_path.write_text(json.dumps(manifest))
    assert sorted(r.manifest["variant"] for r in find_runs(out)) == ["compiled", "naive"]


def test_unknown_neuron_config_option_is_dropped_with_a_warning(
    fake_neuron: Log, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    class OlderNeuronConfig:  # no correlate_device_time, like a torch-neuronx that never had it
        def __init__(self, modes, profile_output_dir, capture_enabled_for_nc=None):
            self.profile_output_dir = profile_output_dir
            fake_neuron.configs.append(dict(modes=modes, profile_output_dir=profile_output_dir,
                                            capture_enabled_for_nc=capture_enabled_for_nc))

    fake_neuron.profiling.NeuronConfig = OlderNeuronConfig
    out = tmp_path / "older"
    result = neuron_capture(fake_neuron, out, ["naive"])
    err = capsys.readouterr().err
    assert "warning" in err and "correlate_device_time" in err
    assert fake_neuron.configs == [dict(modes=["mode:DEVICE", "mode:RUNTIME"],
                                        profile_output_dir=fake_neuron.configs[0]["profile_output_dir"],
                                        capture_enabled_for_nc="0")]
    manifest = result.variants[0].manifest
    # an older NeuronConfig names neither option: both dropped (the NEFF cache variable still does its job)
    assert manifest["profiler"]["dropped_options"] == ["correlate_device_time", "neff_cache_dir"]
    assert "correlate_device_time" not in manifest["profiler"]["neuron_config"]
    assert any("correlate_device_time" in w for w in result.warnings)
    assert any("neff_cache_dir" in w and "TORCH_NEURONX_NEFF_CACHE_DIR" in w for w in result.warnings)


def test_make_neuron_config_degrades_one_option_at_a_time() -> None:
    calls: list[dict] = []

    def opaque(**kwargs):  # a C++ binding's TypeError names no argument
        calls.append(kwargs)
        if set(kwargs) - {"modes", "profile_output_dir", "capture_enabled_for_nc"}:
            raise TypeError("__init__(): incompatible function arguments")
        return "config"

    wanted = {"modes": [1], "profile_output_dir": "d", "capture_enabled_for_nc": "0", "max_events_per_nc": 10,
              "correlate_device_time": True}
    config, used, dropped = make_neuron_config(opaque, wanted)
    assert config == "config" and dropped == ["correlate_device_time", "max_events_per_nc"]
    assert used == {"modes": [1], "profile_output_dir": "d", "capture_enabled_for_nc": "0"}

    def rejects_required(**kwargs):
        raise TypeError("__init__() missing 1 required positional argument: 'profile_output_dir'")

    with pytest.raises(TrntuiError, match="NeuronConfig rejected"):
        make_neuron_config(rejects_required, {"modes": [1], "profile_output_dir": "d"})


def test_auto_picks_neuron_only_with_a_device(fake_neuron: Log, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_device("auto").kind == "neuron"
    monkeypatch.setattr(torch.neuron, "is_available", lambda: False)
    assert resolve_device("auto").kind == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(TrntuiError, match="no Neuron device"):
        resolve_device("neuron")


def test_neuron_options_reach_neuron_config(fake_neuron: Log, tmp_path: Path) -> None:
    options = NeuronOptions(modes=("RUNTIME", "CPU_UTIL"), capture_enabled_for_nc="0,1", max_events_per_nc=1000,
                            correlate_device_time=False)
    neuron_capture(fake_neuron, tmp_path / "opts", ["fused"], options)
    config = fake_neuron.configs[0]
    assert config["modes"] == ["mode:RUNTIME", "mode:CPU_UTIL"]
    assert config["capture_enabled_for_nc"] == "0,1" and config["max_events_per_nc"] == 1000
    assert config["correlate_device_time"] is False  # not passed at all: the fake's default


def test_unknown_neuron_mode_fails_cleanly(fake_neuron: Log, tmp_path: Path) -> None:
    with pytest.raises(TrntuiError, match="ProfileMode has no BOGUS"):
        neuron_capture(fake_neuron, tmp_path / "bad", ["naive"], NeuronOptions(modes=("BOGUS",)))
    assert not (tmp_path / "bad").exists()
    manifest = json.loads((tmp_path / "bad.partial" / "naive" / "trntui.json").read_text())
    assert manifest["complete"] is False and "BOGUS" in manifest["error"]


# ------------------------------------------------------------------------------------------------------------
# the other torch-neuronx API generations (public torch-neuronx source, 2026), by introspection
# ------------------------------------------------------------------------------------------------------------
UNIFIED_PID_DIR = "i-0fake_pid_4343"


@pytest.fixture
def unified_neuron(fake_neuron: Log, monkeypatch: pytest.MonkeyPatch) -> Log:
    """`torch_neuronx.profiling.NeuronProfiler(pytorch_activities=None, record_shapes=False, pytorch_trace_file=None,
    neuron_output_dir="./output", event_filters=None)`: a context manager that starts NRT and `torch.profiler`
    itself, writes `pytorch_trace.json` and `framework_mapping_<ts>.json`; no NeuronConfig / ProfileMode."""
    log = fake_neuron

    class NeuronProfiler:
        def __init__(self, pytorch_activities=None, record_shapes=False, pytorch_trace_file=None,
                     neuron_output_dir="./output", event_filters=None):
            self.activities = pytorch_activities or []
            self.record_shapes = record_shapes
            self.out = Path(neuron_output_dir)
            self.trace = self.out / (pytorch_trace_file or "pytorch_trace.json")
            log.profilers.append(dict(pytorch_activities=list(self.activities), record_shapes=record_shapes,
                                      neuron_output_dir=neuron_output_dir, event_filters=event_filters))

        def __enter__(self):
            log.events.append("start")
            self._prof = torch.profiler.profile(activities=self.activities, record_shapes=self.record_shapes)
            self._prof.__enter__()
            return self

        def __exit__(self, *exc):
            self._prof.__exit__(None, None, None)
            self._prof.export_chrome_trace(str(self.trace))
            nrt = self.out / UNIFIED_PID_DIR
            nrt.mkdir(parents=True)
            for name in ("ntrace.pb", "trace_info.pb"):
                (nrt / name).write_bytes(b"\x00")
            (nrt / "neff_9f8e7d6c5b4a.neff").write_bytes(b"NEFF")  # a hash that is not a number
            (nrt / "9f8e7d6c5b4a_instid_0_vnc_0.ntff").write_bytes(b"NTFF")
            (self.out / "framework_mapping_20260101_000000_000.json").write_text(json.dumps(
                {"version": 1, "data": [{"nrta_seq_id": 501, "framework_op_exec_ids": [
                    {"seq_nr": 7, "th_id": 1, "stream_id": 0}]}]}))
            log.events.append("stop")
            return False

    profiling = types.ModuleType("torch_neuronx.profiling")
    profiling.NeuronProfiler = NeuronProfiler
    sys.modules["torch_neuronx"].profiling = profiling
    monkeypatch.setitem(sys.modules, "torch_neuronx.profiling", profiling)
    log.profiling = profiling
    return log


def test_unified_neuron_profiler_generation(unified_neuron: Log, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "unified"
    result = neuron_capture(unified_neuron, out, ["naive"])
    (profiler,) = unified_neuron.profilers
    assert profiler["pytorch_activities"] == [ProfilerActivity.CPU]
    assert Path(profiler["neuron_output_dir"]).name == "naive"  # the variant directory: NRT files land in it
    assert profiler["event_filters"] == {"nc": ["0"]} and profiler["record_shapes"] is False
    assert unified_neuron.profiles == []  # torch.profiler.profile is NeuronProfiler's business here
    # 3 warm calls, the schedule's 3 unrecorded steps, then one recorded step inside the profiler
    assert unified_neuron.events == ["sync"] * 6 + ["start", "sync", "stop"]
    manifest = json.loads((out / "naive" / "trntui.json").read_text())
    assert manifest["profiler"]["neuron_api"] == "unified"
    assert "NeuronProfiler(pytorch_activities=" in manifest["profiler"]["neuron_api_label"]
    assert manifest["trace"] == "pytorch_trace.json"
    assert manifest["profiler"]["dropped_options"] == ["correlate_device_time"]
    assert manifest["profiler"]["neff_cache_dir"] == "neff_cache"
    assert "correlate_device_time" in capsys.readouterr().err
    # the recorded step is named like prof.step() names it, and the run loads with its mapping file
    (run,) = find_runs(out)
    profile = load_run(run)
    names = {profile.name_of(i) for i in range(len(profile))}
    assert "ProfilerStep#3" in names and "aten::mul" in names
    assert profile.meta.trace_meta["neuron_mapping"] == [(501, 7, 1, 0)]
    from trntui.commands.info import describe

    (session,) = describe(str(out))["sessions"]
    assert session["ntff_neff_pairs"] == [["9f8e7d6c5b4a_instid_0_vnc_0.ntff", "neff_9f8e7d6c5b4a.neff"]]
    assert not any("neff_9f8e7d6c5b4a.neff is missing" in p for p in session["problems"])


def test_kineto_custom_config_generation(fake_neuron: Log, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """torch_neuronx without a profiling module: torch.profiler with PrivateUse1 and
    `_ExperimentalConfig(custom_profiler_config="profile_output_dir:...;...")` (the profiler README's route)."""
    monkeypatch.delitem(sys.modules, "torch_neuronx.profiling")
    del sys.modules["torch_neuronx"].profiling
    out = tmp_path / "kineto"
    options = NeuronOptions(max_events_per_nc=100000, modes=("DEVICE", "RUNTIME", "HOST_MEMORY"))
    result = neuron_capture(fake_neuron, out, ["fused"], options)
    (prof,) = fake_neuron.profiles
    assert prof.kwargs["activities"] == [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]
    assert type(prof.kwargs["experimental_config"]).__name__ == "_ExperimentalConfig"
    manifest = result.variants[0].manifest
    vdir = out.with_name(out.name + ".partial") / "fused"
    assert manifest["profiler"]["neuron_api"] == "kineto"
    assert manifest["profiler"]["custom_profiler_config"] == (
        f"profile_output_dir:{vdir};capture_enabled_for_nc:0;max_events_per_nc:100000;host_memory:true")
    assert manifest["trace"] == "trace.json" and (out / "fused" / "trace.json").is_file()


def test_no_known_profiling_api_is_one_clear_error(fake_neuron: Log, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trntui.capture import neuron as nx

    monkeypatch.setattr(nx, "experimental_config_class", lambda: None)
    fake_neuron.profiling.NeuronConfig = None
    del fake_neuron.profiling.NeuronConfig
    with pytest.raises(TrntuiError, match="no profiling API trntui knows.*has: NeuronProfiler, ProfileMode"):
        neuron_capture(fake_neuron, tmp_path / "none", ["naive"])


def test_user_neff_cache_variable_is_kept(fake_neuron: Log, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", str(tmp_path / "my_neffs"))
    result = neuron_capture(fake_neuron, tmp_path / "kept", ["naive"])
    assert set(fake_neuron.neff_env) == {str(tmp_path / "my_neffs")}
    assert fake_neuron.configs[0]["neff_cache_dir"] == str(tmp_path / "my_neffs")
    assert result.variants[0].manifest["profiler"]["neff_cache_source"].endswith("(set by the user)")
    assert os.environ["TORCH_NEURONX_NEFF_CACHE_DIR"] == str(tmp_path / "my_neffs")


@pytest.mark.parametrize("name", ["pytorch_trace.json", "neuron_framework_trace_rank_3.json", "neuron_trace.json"])
def test_find_trace_accepts_every_generation_name(tmp_path: Path, name: str) -> None:
    from trntui.capture import find_trace

    d = tmp_path / "v" / "i-0abc_pid_1"
    d.mkdir(parents=True)
    (d / name).write_text(json.dumps(minimal_trace("")))
    (d / "framework_mapping_20260101_000000_000.json").write_text("{}")
    assert find_trace(tmp_path / "v") == d / name
