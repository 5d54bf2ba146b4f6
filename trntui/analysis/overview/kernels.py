"""The kernel view (tb-plugin-analyses.md §6): per kernel name, and per kernel × launching op, with the
launch figures Kineto writes into each kernel's args (`blocks per SM`, `est. achieved occupancy %`) and
whether the kernel uses Tensor Cores (by the plugin's name patterns).

Means of blocks per SM and occupancy are weighted by kernel time, a missing value counting as 0, as the plugin
computed them. Rows are sorted by total time; each row knows its longest instance (for "jump to it").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np

from trntui.analysis.overview.cores import logical_core_of_lanes
from trntui.analysis.overview.event_args import (
    DEVICE_MAX,
    REGISTERS_MAX,
    SHARED_MEMORY_MAX,
    KernelArgs,
    LooseKernelArgs,
    decode_many,
)
from trntui.model.profile import Profile

TC_PATTERNS = (
    "h884", "s884", "h1688", "s1688", "hmma", "i8816", "16816", "dgrad_1x1_stride_2x2", "first_layer_wgrad_kernel",
    "conv1x1", "conv2d_c1_k1", "direct_group", "xmma_implicit_gemm", "xmma_sparse_conv",
    "xmma_warp_specialized_implicit_gemm", "xmma_gemm", "xmma_sparse_gemm", "c1688",
)
"""Kernel-name substrings of Tensor Core kernels (case-sensitive, the plugin's list)."""

TC_ELIGIBLE_OPS = frozenset(
    [f"aten::{n}" for n in (
        "_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
        "conv_transpose3d", "convolution", "cudnn_convolution", "cudnn_convolution_transpose", "prelu", "addmm",
        "addmv", "addr", "matmul", "mm", "mv", "linear", "addbmm", "baddbmm", "bmm", "chain_matmul",
        "linalg_multi_dot", "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "lstm_cell", "gru_cell",
        "rnn_tanh_cell", "rnn_relu_cell", "addmm_", "cudnn_convolution_backward", "cudnn_convolution_backward_input",
        "cudnn_convolution_backward_weight", "cudnn_convolution_transpose_backward",
        "cudnn_convolution_transpose_backward_input", "cudnn_convolution_transpose_backward_weight",
    )]
    + ["CudnnConvolutionBackward", "CudnnConvolutionTransposeBackward", "BmmBackward0", "MmBackward", "AddmvBackward",
       "MvBackward", "AddmmBackward", "AddbmmBackward"]
)
"""Ops whose kernels could use Tensor Cores (exact names, the plugin's allowlist)."""


def uses_tensor_cores(name: str) -> bool:
    return any(p in name for p in TC_PATTERNS)


@dataclass
class KernelFacts:
    """Per kernel event (aligned with `idx`): its args figures, decoded once per profile (and kept with a
    cached profile, so re-opening it decodes nothing)."""

    idx: np.ndarray
    device: np.ndarray
    """`args.device` (-1 where missing)."""
    blocks_per_sm: np.ndarray
    """nan where missing."""
    occupancy: np.ndarray
    """`est. achieved occupancy %`, nan where missing."""
    launch: np.ndarray
    """Per kernel: index of its launch configuration in `launches`."""
    launches: np.ndarray
    """(n, 3) int64: index into `dims` of the (grid, block) pair, registers per thread, shared memory."""
    tc_name: np.ndarray
    """Per name id: the name matches a Tensor Core pattern."""
    dims: list[tuple[str, str]] = field(default_factory=list)
    """Distinct (grid, block) as the plugin printed them: `[4, 106, 1]`, `[128, 1, 1]` (`None` when absent)."""

    def launch_text(self, k: int) -> tuple[str, str, str, str]:
        """Launch configuration `k` as the plugin printed it: grid, block, registers per thread, shared memory."""
        g, regs, smem = self.launches[k].tolist()
        grid, block = self.dims[g] if 0 <= g < len(self.dims) else ("None", "None")
        return grid, block, str(max(regs, 0)), str(max(smem, 0))


def _dims_text(raw: bytes) -> tuple[str, str]:
    import json

    out = []
    for part in raw.split(b"|", 1):  # b"<grid JSON>|<block JSON>"
        try:
            v = json.loads(part)
        except ValueError:
            v = None
        out.append("None" if v is None else str(v))
    return out[0], out[1]


_DERIVED = "overview_kernels_v2"


def _unique_rows(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows in sorted order, index of each row's distinct row): `np.unique(axis=0)` by one lexsort."""
    m = len(table)
    if not m:
        return np.zeros((0, table.shape[1]), np.int64), np.zeros(0, np.int64)
    o = np.lexsort(table.T[::-1])
    t = table[o]
    new = np.ones(m, bool)
    new[1:] = (t[1:] != t[:-1]).any(axis=1)
    group = np.cumsum(new) - 1
    inverse = np.empty(m, np.int64)
    inverse[o] = group
    return t[new], inverse


def kernel_facts(profile: Profile, idx: np.ndarray) -> KernelFacts:
    cached = profile.cache.get("overview_kernel_facts")
    if cached is not None and len(cached.idx) == len(idx) and np.array_equal(cached.idx, idx):
        return cached
    from trntui import cache

    tc_name = np.zeros(max(len(profile.names), 1), bool)
    for nid in np.unique(profile.name[idx]).tolist():
        tc_name[nid] = uses_tensor_cores(profile.names[nid])
    stored = cache.load_derived(profile, _DERIVED)
    if stored is not None and len(stored.get("idx", ())) == len(idx) and np.array_equal(stored["idx"], idx):
        facts = KernelFacts(idx, stored["device"], stored["blocks_per_sm"], stored["occupancy"], stored["launch"],
                            stored["launches"], tc_name, list(zip(stored["grids"].tolist(), stored["blocks"].tolist())))
    else:
        args = decode_many(profile, idx, KernelArgs, LooseKernelArgs)
        m = len(args)
        dev = np.fromiter((a.device if -1 <= a.device <= DEVICE_MAX else -1 for a in args), np.int64, count=m)
        bps = np.fromiter((a.blocks_per_sm for a in args), np.float64, count=m)
        occ = np.fromiter((a.occupancy for a in args), np.float64, count=m)
        with np.errstate(invalid="ignore"):  # out of range (1e300 %, a negative count): unknown, as when absent
            bps[~((bps >= 0) & (bps <= 1e6))] = np.nan
            occ[~((occ >= 0) & (occ <= 100))] = np.nan
        dim_ids: dict[bytes, int] = {}
        table = np.empty((m, 3), np.int64)
        if m:
            table[:, 0] = np.fromiter((dim_ids.setdefault(bytes(a.grid) + b"|" + bytes(a.block), len(dim_ids)) for a in args),
                                      np.int64, count=m)
            table[:, 1] = np.fromiter((a.registers if 0 <= a.registers <= REGISTERS_MAX else 0 for a in args), np.int64, count=m)
            table[:, 2] = np.fromiter((a.shared_memory if 0 <= a.shared_memory <= SHARED_MEMORY_MAX else 0 for a in args),
                                      np.int64, count=m)
        dims = [_dims_text(k) for k in dim_ids]
        launches, launch = _unique_rows(table)
        facts = KernelFacts(np.asarray(idx, np.int64), dev, bps, occ, launch.reshape(-1).astype(np.int64), launches,
                            tc_name, dims)
        cache.save_derived(profile, _DERIVED, {
            "idx": facts.idx, "device": dev, "blocks_per_sm": bps, "occupancy": occ, "launch": facts.launch,
            "launches": launches, "grids": np.array([g for g, _ in dims] or [""], dtype=str)[: len(dims)],
            "blocks": np.array([b for _, b in dims] or [""], dtype=str)[: len(dims)],
        })
    profile.cache["overview_kernel_facts"] = facts
    return facts


@dataclass
class KernelRow:
    name: str
    op: str
    """Launching op (kernel × op rows); empty in the per-name table."""
    calls: int
    total_ns: int
    max_ns: int
    min_ns: int
    blocks_per_sm: float | None
    occupancy: float | None
    tensor_cores: bool
    longest: int
    """Event index of the longest instance."""
    launch: tuple = ()
    """(grid, block, registers per thread, shared memory) for kernel × op rows."""
    op_tc_eligible: bool = False

    @property
    def mean_ns(self) -> float:
        return self.total_ns / self.calls if self.calls else 0.0


@dataclass
class KernelTables:
    by_name: list[KernelRow]
    by_op: list[KernelRow] = field(default_factory=list)
    has_blocks_per_sm: bool = False
    has_occupancy: bool = False
    tc_used_ratio: float = 0.0
    """Tensor Core kernel time / all kernel time (the plugin's TC pie)."""
    tensor_cores_known: bool = False
    """Whether the Tensor Core name patterns apply (NVIDIA kernels): else `tensor_cores` says nothing."""
    executions_per_core: dict[int, int] = field(default_factory=dict)
    """Neuron: logical executions per logical NeuronCore (index of `cores.logical_core_of_lanes`)."""


def _group(keys: np.ndarray, dur: np.ndarray, ev: np.ndarray, bps: np.ndarray, occ: np.ndarray):
    """Group kernels by integer key: per group (key, calls, total, max, min, Σbps·dur, Σocc·dur, longest event)."""
    o = np.lexsort((dur, keys))
    k, d, e = keys[o], dur[o], ev[o]
    new = np.ones(len(k), bool)
    new[1:] = k[1:] != k[:-1]
    first = np.nonzero(new)[0]
    last = np.append(first[1:], len(k)) - 1
    calls = np.diff(np.append(first, len(k)))
    total = np.add.reduceat(d, first)
    wb = np.add.reduceat(np.nan_to_num(bps[o]) * d, first)
    wo = np.add.reduceat(np.nan_to_num(occ[o]) * d, first)
    return k[first], calls, total, d[last], d[first], wb, wo, e[last]


def kernel_tables(profile: Profile, facts: KernelFacts, op_of: np.ndarray, select: np.ndarray | None = None) -> KernelTables:
    """`op_of[i]`: the launching op of kernel `facts.idx[i]` (-1: none). `select`: mask over kernels to count."""
    sel = np.ones(len(facts.idx), bool) if select is None else select
    idx = facts.idx[sel]
    if not len(idx):
        return KernelTables([])
    dur = (profile.end[idx] - profile.start[idx]).astype(np.int64)
    names = profile.name[idx].astype(np.int64)
    bps, occ, dev = facts.blocks_per_sm[sel], facts.occupancy[sel], facts.device[sel]
    has_dev = dev >= 0
    has_bps = bool(np.any((bps > 0) & has_dev))
    has_occ = bool(np.any((occ >= 0) & has_dev))

    def row(key_name: int, calls, total, mx, mn, wb, wo, longest, op: str = "", launch: tuple = (), eligible=False):
        w = float(total)
        return KernelRow(
            profile.names[key_name], op, int(calls), int(total), int(mx), int(mn),
            (float(wb) / w if w else 0.0) if has_bps else None,
            (float(wo) / w if w else 0.0) if has_occ else None,
            bool(facts.tc_name[key_name]), int(longest), launch, eligible,
        )

    g = _group(names, dur, idx, bps, occ)
    by_name = [row(*vals) for vals in zip(*(a.tolist() for a in g))]
    by_name.sort(key=lambda r: (-r.total_ns, r.name))

    # kernel × op: (name, op name, grid, block, registers, shared memory)
    ops = op_of[sel]
    op_name = np.where(ops >= 0, profile.name[np.maximum(ops, 0)], -1).astype(np.int64)
    lid = facts.launch[sel]
    nl = max(len(facts.launches), 1)
    nn = len(profile.names) + 1
    key = (names * nn + (op_name + 1)) * nl + lid
    g = _group(key, dur, idx, bps, occ)
    by_op = []
    for kv, calls, total, mx, mn, wb, wo, longest in zip(*(a.tolist() for a in g)):
        l = kv % nl
        rest = kv // nl
        opn = rest % nn - 1
        nm = rest // nn
        op = profile.names[opn] if opn >= 0 else "N/A"
        by_op.append(row(nm, calls, total, mx, mn, wb, wo, longest, op, facts.launch_text(l), op in TC_ELIGIBLE_OPS))
    by_op.sort(key=lambda r: (-r.total_ns, r.name, r.op))
    all_dur = float(dur.sum())
    tc = float(dur[facts.tc_name[names]].sum())
    return KernelTables(by_name, by_op, has_bps, has_occ, tc / all_dur if all_dur else 0.0)


# -- Neuron: hardware executions as the "kernels" ---------------------------------------------------------
class ExecutionArgs(msgspec.Struct):
    exec_id: Any = None
    model_id: Any = None
    model_name: Any = None


def _model_label(model_name: Any, model_id: Any) -> str:
    """A short name for the NEFF that ran: the model file's directory and name (`MODULE_10001_8417/model.neff`)."""
    if isinstance(model_name, str) and model_name:
        parts = [p for p in model_name.replace("\\", "/").split("/") if p]
        return "/".join(parts[-2:]) if len(parts) > 1 else parts[0]
    if model_id is not None:
        return f"model {model_id}"
    return "nc_exec_running"


def chain_tops(profile: Profile, links, rows: np.ndarray, max_depth: int = 64) -> np.ndarray:
    """Per row: the event at the top of its dependency chain (each step up takes the earliest-starting
    predecessor), or -1 when nothing is linked above it."""
    n = len(profile)
    up = np.full(n, -1, np.int64)
    src, dst = links.edge_src, links.edge_dst
    ok = src != dst
    src, dst = src[ok], dst[ok]
    if len(dst):
        o = np.lexsort((profile.start[src], dst))
        d, s = dst[o], src[o]
        first = np.ones(len(d), bool)
        first[1:] = d[1:] != d[:-1]
        up[d[first]] = s[first]
    top = np.full(len(rows), -1, np.int64)
    cur = up[rows]
    act = np.nonzero(cur >= 0)[0]
    for _ in range(max_depth):
        if not len(act):
            break
        top[act] = cur[act]
        nxt = up[cur[act]]
        go = nxt >= 0
        act = act[go]
        cur[act] = nxt[go]
    return top


def neuron_execution_tables(profile: Profile, links, executions: np.ndarray, select: np.ndarray | None = None) -> KernelTables:
    """`nc_exec_running` rows as a kernel table: one call per logical execution (the copies on the physical
    cores of one logical NeuronCore, same `exec_id`, merged into [first start, last end]), named after the NEFF
    that ran, and per launching framework op (the top of its dependency chain)."""
    if not len(executions):
        return KernelTables([])
    args = decode_many(profile, executions, ExecutionArgs)
    lnc = logical_core_of_lanes(profile)[profile.lane[executions]]
    exec_key = [
        (int(g), a.exec_id, a.model_id) if a.exec_id is not None else ("row", int(i))
        for g, a, i in zip(lnc.tolist(), args, executions.tolist())
    ]
    ids: dict[Any, int] = {}
    grp = np.fromiter((ids.setdefault(k, len(ids)) for k in exec_key), np.int64, count=len(exec_key))
    m = len(ids)
    s = np.full(m, np.iinfo(np.int64).max, np.int64)
    e = np.full(m, np.iinfo(np.int64).min, np.int64)
    np.minimum.at(s, grp, profile.start[executions])
    np.maximum.at(e, grp, profile.end[executions])
    rep = np.full(m, -1, np.int64)
    o = np.lexsort((profile.start[executions], grp))
    first = np.ones(len(o), bool)
    first[1:] = grp[o][1:] != grp[o][:-1]
    rep[grp[o][first]] = executions[o][first]
    keep = np.ones(m, bool) if select is None else np.zeros(m, bool)
    if select is not None:
        keep[grp[select]] = True
    s, e, rep = s[keep], e[keep], rep[keep]
    rep_pos = np.searchsorted(executions, rep)
    labels: dict[str, int] = {}
    name_key = np.fromiter(
        (labels.setdefault(_model_label(args[p].model_name, args[p].model_id), len(labels)) for p in rep_pos.tolist()),
        np.int64, count=len(rep_pos))
    label_list = list(labels)
    tops = chain_tops(profile, links, rep)
    tiers = np.array([int(l.tier) for l in profile.lanes] or [0], np.int64)
    from trntui.model.profile import Tier

    op_ok = (tops >= 0)
    op_ok[op_ok] = tiers[profile.lane[tops[op_ok]]] <= int(Tier.DEVICE)
    op_name = np.where(op_ok, profile.name[np.maximum(tops, 0)], -1).astype(np.int64)
    dur = e - s
    nanv = np.full(len(rep), np.nan)

    def rows(key: np.ndarray, with_op: bool) -> list[KernelRow]:
        out = []
        for kv, calls, total, mx, mn, _wb, _wo, longest in zip(*(a.tolist() for a in _group(key, dur, rep, nanv, nanv))):
            if with_op:
                nk, ok_ = divmod(kv, len(profile.names) + 1)
                op = profile.names[ok_ - 1] if ok_ > 0 else "N/A"
            else:
                nk, op = kv, ""
            out.append(KernelRow(label_list[nk], op, int(calls), int(total), int(mx), int(mn), None, None, False, int(longest)))
        out.sort(key=lambda r: (-r.total_ns, r.name, r.op))
        return out

    by_name = rows(name_key, False)
    by_op = rows(name_key * (len(profile.names) + 1) + (op_name + 1), True)
    core = lnc[rep_pos]
    per_core = dict(zip(*(a.tolist() for a in np.unique(core, return_counts=True))))
    return KernelTables(by_name, by_op, executions_per_core=per_core)
