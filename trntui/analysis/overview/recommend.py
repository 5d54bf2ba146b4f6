"""Recommendations: the plugin's seven rules with its thresholds (tb-plugin-analyses.md §10), then trntui's own,
each firing only where a figure shows a clear cause. Every recommendation carries the rule, the message and
the figure that triggered it, so a user (or a script reading the JSON) can check it.

Plugin rules, in its order: dataloader (> 5% of the step), dataparallel (DataParallel over > 1 device),
ddp_backend (DDP without NCCL on a GPU that has it), communication (> 10%), low_utilization (a GPU under 50%),
amp (no Tensor Core kernels although Tensor-Core-eligible ops ran on compute capability ≥ 7), memory (peak
allocated > 90% of the device's memory; the plugin also compared CPU peaks with the last GPU, trntui does not).
The AMP rule needs NVIDIA kernel names (its Tensor Core patterns), so it is skipped on ROCm and other devices.

trntui's own:
- launch_overhead: runtime calls (kernel launches, syncs) take > 10% of the step on a device trace → CUDA
  graphs or `torch.compile(mode="reduce-overhead")` remove per-kernel launches.
- host_bound: the device is under 50% busy while host ops cover > 50% of the step → the host cannot feed
  the device: `torch.compile`, fewer and bigger ops, or a bigger batch.
- memcpy: copies take > 10% of the step → pinned memory with `non_blocking=True`, keep tensors on the device.
- neuron_idle: on Neuron, the NeuronCores sit idle > 10% of the time between their executions in a step →
  the hardware waits for the host between separately dispatched ops: fuse them or `torch.compile` the region.
- neuron_dispatches: on Neuron, ≥ 4 separate hardware executions per step → each op runs as its own NEFF
  (eager mode, as in the reference walkthrough's naive RMSNorm: six executions where the fused and compiled
  versions need one, at about a sixth of the device time): fuse the ops (a fused op such as `torch.rms_norm`)
  or `torch.compile` the region so it runs as one NEFF, one dispatch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Recommendation:
    rule: str
    message: str
    value: Any
    """The figure that triggered it (a share in %, a list of devices, ...)."""
    source: str = "plugin"
    """`plugin` (the TensorBoard plugin's rule) or `trntui` (our own)."""


def _pct(x: float) -> str:
    return f"{100.0 * x:.1f}%"


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def recommend(ov: Any) -> list[Recommendation]:
    """`ov` is an `Overview` (see `trntui.analysis.overview`)."""
    out: list[Recommendation] = []
    avg = ov.average_ns
    total = avg.get("Total", 0.0)

    def share(cat: str) -> float:
        return avg.get(cat, 0.0) / total if total > 0 else 0.0

    # 1 DataLoader
    dl = share("DataLoader")
    if dl > 0.05:
        out.append(Recommendation(
            "dataloader",
            f"{_pct(dl)} of the step time is data loading. Use more DataLoader workers (num_workers > 0, "
            "multi-process loading) and pin_memory=True so batches are ready when the step needs them.",
            round(100 * dl, 2)))
    # 2 DataParallel
    if "DataParallel.forward" in ov.names_seen and ov.device_pids > 1:
        out.append(Recommendation(
            "dataparallel",
            "The model uses torch.nn.DataParallel over several GPUs. DistributedDataParallel is faster "
            "(one process per GPU, no per-step model replication).", ov.device_pids))
    # 3 DDP backend
    props = ov.device_properties
    if "DistributedDataParallel.forward" in ov.names_seen and "NCCL" not in ov.comm_libs and props:
        capable = [p for p in props if _cc(p) >= 3.5]
        if capable:
            out.append(Recommendation(
                "ddp_backend",
                "DistributedDataParallel runs without the NCCL backend on GPUs that support it: NCCL is the "
                "fastest backend for GPU training (init_process_group(backend='nccl')).",
                [str(p.get("name", "")) for p in capable]))
    # 4 Communication
    comm = share("Communication")
    if comm > 0.10:
        out.append(Recommendation(
            "communication",
            f"{_pct(comm)} of the step time is communication. Communicate less often or less: gradient "
            "accumulation over several micro-batches, a larger batch (it changes the effective batch; consider "
            "an optimizer made for large batches such as LAMB), or gradient compression.", round(100 * comm, 2)))
    # 5 Low utilization (GPU)
    if not ov.neuron and ov.devices is not None:
        low = [d for d in ov.devices.devices if d.utilization is not None and d.utilization < 0.5]
        if low:
            ids = [str(d.id) for d in low]
            verb = "has" if len(low) == 1 else "have"
            out.append(Recommendation(
                "low_utilization",
                f"GPU {_join(ids)} {verb} low utilization ({', '.join(_pct(d.utilization) for d in low)}). "
                "A larger batch gives each kernel more work (it may affect convergence; tune the learning rate).",
                {d.label: round(100 * d.utilization, 2) for d in low}))
    # 6 AMP
    if (props and ov.device_kind == "cuda" and _major(props[0]) >= 7 and ov.kernel_tables is not None
            and ov.kernel_tables.by_name and ov.kernel_tables.tc_used_ratio == 0.0):
        eligible = ov.tc_eligible_share()
        if eligible > 0:
            out.append(Recommendation(
                "amp",
                f"{round(100 * eligible)}% of the kernel time comes from ops that could use Tensor Cores, but no "
                "kernel does. Enable automatic mixed precision (torch.autocast) to run them in half precision.",
                round(100 * eligible, 2)))
    # 7 Memory
    if props and ov.memory is not None:
        for c in ov.memory.curves:
            if c.device_type != 1 or c.device_id < 0 or c.device_id >= len(props):
                continue
            cap = props[c.device_id].get("totalGlobalMem")
            if isinstance(cap, (int, float)) and cap > 0 and c.peak_all_records > 0.9 * cap:
                out.append(Recommendation(
                    "memory",
                    f"Memory usage peaks at {100 * c.peak_all_records / cap:.1f}% of the {cap / 1024**3:.1f} GB on "
                    f"GPU{c.device_id}. Gradient checkpointing or mixed precision (AMP) lowers it and leaves room "
                    "for a larger batch.", round(100 * c.peak_all_records / cap, 2)))
                break

    # -- trntui's own ------------------------------------------------------------------------------
    if ov.neuron:
        idle = ov.neuron_idle
        if idle is not None and idle["executions_per_step"] > 1 and idle["idle_share"] > 0.10:
            out.append(Recommendation(
                "neuron_idle",
                f"The NeuronCores are idle {_pct(idle['idle_share'])} of the time between their executions "
                f"({idle['executions_per_step']:.1f} per step): the hardware waits for the host to dispatch each "
                "op. Fuse the ops (a fused op such as torch.rms_norm) or torch.compile the region so it runs as "
                "one NEFF, one dispatch.",
                round(100 * idle["idle_share"], 2), "trntui"))
        if idle is not None and idle["executions_per_step"] >= 4:
            out.append(Recommendation(
                "neuron_dispatches",
                f"Each step runs {idle['executions_per_step']:.1f} separate NeuronCore executions: every op is "
                "dispatched on its own (eager mode) and its intermediates go through device memory. Fuse the ops "
                "(a fused op such as torch.rms_norm) or torch.compile the region: it then runs as one NEFF, one "
                "execution.",
                round(idle["executions_per_step"], 1), "trntui"))
        return out
    has_device = ov.devices is not None and bool(ov.devices.devices)
    rt = share("Runtime")
    if has_device and rt > 0.10:
        out.append(Recommendation(
            "launch_overhead",
            f"{_pct(rt)} of the step time is spent in runtime calls (kernel launches, synchronisation). "
            "CUDA graphs or torch.compile(mode='reduce-overhead') launch a whole step at once; avoid "
            "synchronising calls (.item(), .cpu(), printing tensors) inside the step.", round(100 * rt, 2), "trntui"))
    host = share("CPU Exec")
    util = ov.devices.utilization if has_device else None
    if util is not None and util < 0.5 and host > 0.5:
        out.append(Recommendation(
            "host_bound",
            f"The device is busy only {_pct(util)} of the time while host ops take {_pct(host)} of the step: "
            "the CPU cannot issue work fast enough. torch.compile fuses the ops into fewer kernels; a larger batch "
            "gives each launch more work.", round(100 * host, 2), "trntui"))
    cp = share("Memcpy")
    if cp > 0.10:
        out.append(Recommendation(
            "memcpy",
            f"{_pct(cp)} of the step time is memory copies. Use pinned memory (pin_memory=True) with "
            "non_blocking=True copies and keep tensors on the device between steps.", round(100 * cp, 2), "trntui"))
    return out


def _major(p: dict) -> float:
    try:
        return float(p.get("computeMajor", 0))
    except (TypeError, ValueError):
        return 0.0


def _cc(p: dict) -> float:
    try:
        return float(f"{p.get('computeMajor', 0)}.{p.get('computeMinor', 0)}")
    except (TypeError, ValueError):
        return 0.0
