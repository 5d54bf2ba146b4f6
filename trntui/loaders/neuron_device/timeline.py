"""A device profile as a `Profile`: one hardware lane per (physical core, engine) and per DMA queue.

So the device view draws engine activity with the same timeline widget, keys and labels as the system trace:
lanes are labelled like the system trace's hardware lanes plus the engine, `i-…/PID:51001/neuron_hw/NC0:0/Vector`,
instructions are named by opcode, DMA transfers by variable (category `neuron_hw`, like the system trace's
hardware rows). Times are
shifted by `shift` ns onto the system trace's clock when the device profile has its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from trntui.model.device import ENGINES, coded, engine_name
from trntui.model.builder import ProfileBuilder

CAT_HARDWARE = "neuron_hw"
"""The category of every device-profile event: Neuron hardware rows (model.categories.NEURON_SYSTEM), which key_averages leaves out like the
system trace's (a device profile has no framework ops; `trntui device` is its report)."""
from trntui.model.profile import Profile, ProfileMeta, Tier

if TYPE_CHECKING:
    from trntui.model.device import DeviceExport, Window


def _lanes_by_core(pcore: np.ndarray, codes: np.ndarray, labels: list[str], lane_of) -> np.ndarray:
    """Lane id of each row: one lane per (physical core, label) pair present, made by `lane_of(core, label)` in
    (core, label code) order; engine lanes and DMA-queue lanes are laid out alike."""
    if not len(codes):
        return np.zeros(0, np.int32)
    # the pairs present, by one sort (never a (cores x labels) table: 200k engine names on 256 cores is 51M
    # slots; nor a pass over the rows per pair)
    n, low = max(len(labels), 1), int(pcore.min())
    if (int(pcore.max()) - low + 1) * n < (1 << 62):  # (cores are 0-255 once read: always)
        keys, inverse = np.unique((pcore.astype(np.int64) - low) * n + codes, return_inverse=True)
        pairs = [(int(k // n + low), int(k % n)) for k in keys.tolist()]
    else:
        both, inverse = np.unique(np.stack([pcore.astype(np.int64), codes.astype(np.int64)], axis=1), axis=0,
                                  return_inverse=True)
        pairs = [(int(p), int(c)) for p, c in both.tolist()]
    ids = np.array([lane_of(p, labels[c]) for p, c in pairs], np.int32)
    return ids[inverse.reshape(-1)]


def device_profile(export: "DeviceExport", window: "Window | None" = None, shift: int = 0, nc: int | None = None) -> Profile:
    """Instructions (and DMA transfers) of `window` (default: all) as a Profile with engine and DMA lanes."""
    b = ProfileBuilder(ProfileMeta())
    add_device_events(export, b, window, shift, nc)
    return b.finish()


def add_device_events(export: "DeviceExport", b: ProfileBuilder, window: "Window | None" = None, shift: int = 0,
                      nc: int | None = None) -> None:
    """Add the instructions (and DMA transfers) of `window` (default: all) to `b` as engine and DMA lanes."""

    ident = export.identity
    nc = nc if nc is not None else (ident.nc if ident.nc is not None else 0)
    pid = ident.pid if ident.pid is not None else 0
    b.meta.sources.append(str(export.path))
    b.meta.device_kind, b.meta.backend = "neuron", "NEURON"
    b.meta.device_time_source = "Neuron device profile (Instruction table)"
    rank = {e: k for k, e in enumerate(ENGINES)}

    def rows(f, st, en):
        if window is None:
            return np.arange(len(st))
        m = (st >= window.start) & (st < window.end) if not window.whole else (st < window.end) & (en > window.start)
        return np.nonzero(m)[0]

    ins = export.instructions
    st = ins["start_ts"].to_numpy(np.int64)
    en = np.maximum(ins["end_ts"].to_numpy(np.int64), st)
    sel = rows(ins, st, en)
    pc = ins["pcore_idx"].to_numpy(np.int64)[sel]
    eng = coded(ins["engine"], engine_name)
    op = coded(ins["opcode"])
    ecodes = eng.codes[sel]
    lane_ids = _lanes_by_core(pc, ecodes, eng.labels, lambda p, e: b.lane(
        Tier.HARDWARE, "neuron_hw", f"NC{nc}:{p}/{e}", pid, p, instance=ident.instance, sort_index=p * 100 + rank.get(e, 50)))
    name_of = np.array([b.intern_name(x or "(no opcode)") for x in op.labels], np.int32)
    hw = b.intern_cat(CAT_HARDWARE)
    s0, e0 = st[sel] + shift, en[sel] + shift
    order = np.lexsort((-(e0 - s0), s0))  # (start, longest first): the builder's order, computed once here
    b.add_events(start=s0, end=e0, lane=lane_ids, name=name_of[op.codes[sel]] if len(sel) else np.empty(0, np.int32),
                 cat=np.full(len(sel), hw, np.int16), time_order=order)

    dma = export.table("DmaPacketAggregated")
    if dma is not None and len(dma):
        ds = dma["start_ts"].to_numpy(np.int64)
        de = np.maximum(dma["end_ts"].to_numpy(np.int64), ds)
        dsel = rows(dma, ds, de)
        q = coded(dma["queue_name"])
        var = coded(dma["variable"])
        dpc = dma["pcore_idx"].to_numpy(np.int64)[dsel]
        qc = q.codes[dsel]
        lanes = _lanes_by_core(dpc, qc, q.labels, lambda p, queue: b.lane(
            Tier.HARDWARE, "neuron_hw", f"NC{nc}:{p}/DMA:{queue or '?'}", pid, 1000 + p, instance=ident.instance,
            sort_index=10_000 + p))
        vname = np.array([b.intern_name(x or "dma transfer") for x in var.labels], np.int32)
        b.add_events(start=ds[dsel] + shift, end=de[dsel] + shift, lane=lanes,
                     name=vname[var.codes[dsel]] if len(dsel) else np.empty(0, np.int32),
                     cat=np.full(len(dsel), hw, np.int16))
