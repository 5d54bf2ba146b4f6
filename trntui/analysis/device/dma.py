"""DMA in a device-profile window: active time (union of `DmaPacket`, else `DmaPacketAggregated`, intervals),
bytes and bandwidth by route and by queue, and the HBM bytes read and written (`is_hbm`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from trntui.analysis.device.groups import group_table, union_ns
from trntui.model.device import Window, coded

if TYPE_CHECKING:
    from trntui.model.device import DeviceExport


def is_hbm(location: str) -> bool:
    """Whether a DMA source/destination (`[SB]`, `[OUTPUT]`, ...) is device memory (HBM) rather than on-chip
    SBUF/PSUM. The schema names HBM, SBUF and PSUM as the possible locations and shows `[SB]` and `[OUTPUT]`;
    input, output, weight and spill tensors live in HBM."""
    s = str(location).upper()
    if not s.strip("[] "):
        return False
    return not any(tok in s for tok in ("SB", "PSUM", "STATE"))


@dataclass
class DmaReport:
    active_ns: int
    percent: float
    transfers: int
    packets: int
    bytes: int
    hbm_read: int
    hbm_write: int
    by_route: pd.DataFrame
    by_queue: pd.DataFrame
    source_table: str
    """Which table the active time came from: `DmaPacket` or `DmaPacketAggregated`."""

    @property
    def bandwidth(self) -> float:
        """Bytes per second while at least one transfer was active."""
        return self.bytes / (self.active_ns / 1e9) if self.active_ns else 0.0


def _dma(export: "DeviceExport", w: Window, total: int, pcores: list[int] | None = None,
         notes: list[str] | None = None) -> DmaReport | None:
    agg = export.table("DmaPacketAggregated")
    pk = export.table("DmaPacket")
    if agg is None and pk is None:
        return None
    lo, hi = w.start, w.end
    if pcores is not None:
        for name in ("DmaPacketAggregated", "DmaPacket"):
            if export.table(name) is not None and not export.has(name, "pcore_idx") and notes is not None:
                notes.append(f"{name} has no pcore_idx column: its DMA is every physical core's, not only core "
                             + ",".join(str(p) for p in pcores))

    def clip(f: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = f["start_ts"].to_numpy(np.int64)
        e = f["end_ts"].to_numpy(np.int64)
        m = (s < hi) & (e > lo)
        if not w.whole:
            m &= s >= lo  # a transfer belongs to the execution it started in
        if pcores is not None and "pcore_idx" in f.columns:
            name = "DmaPacket" if f is pk else "DmaPacketAggregated"
            if export.has(name, "pcore_idx"):
                m &= np.isin(f["pcore_idx"].to_numpy(np.int64), pcores)
        idx = np.nonzero(m)[0]
        idx = idx[np.argsort(s[idx], kind="stable")]
        return idx, np.clip(s[idx], lo, hi), np.clip(e[idx], lo, hi)

    act = pk if pk is not None else agg
    act_idx, act_s, act_e = clip(act)
    active = union_ns(act_s, act_e)
    f = agg if agg is not None else act
    idx, s, e = clip(f) if agg is not None else (act_idx, act_s, act_e)
    nbytes = f["transfer_bytes"].to_numpy(np.int64)[idx]
    route_cols = ["source", "dest", "transfers", "bytes", "busy_ns", "bandwidth"]

    def finish(t: pd.DataFrame) -> pd.DataFrame:
        t = t.rename(columns={"count": "transfers"})
        t["bandwidth"] = np.where(t["busy_ns"] > 0, t["bytes"] / np.maximum(t["busy_ns"], 1) * 1e9, 0.0)
        return t.drop(columns=["first", "last", "percent"])

    hbm_read = hbm_write = 0
    if agg is not None:
        src, dst = coded(agg["source"]), coded(agg["dest"])
        sc, dc = src.codes[idx], dst.codes[idx]
        src_hbm = np.array([is_hbm(x) for x in src.labels], bool)
        dst_hbm = np.array([is_hbm(x) for x in dst.labels], bool)
        hbm_read = int(agg["read_bytes"].to_numpy(np.int64)[idx][src_hbm[sc]].sum()) if len(idx) else 0
        hbm_write = int(agg["write_bytes"].to_numpy(np.int64)[idx][dst_hbm[dc]].sum()) if len(idx) else 0
        nd = max(len(dst.labels), 1)
        by_route = finish(group_table(["source", "dest"], lambda k: (src.labels[k // nd], dst.labels[k % nd]),
                                      sc * nd + dc, len(src.labels) * nd, s, e, {"bytes": nbytes}, total, by_start=True))
    else:
        by_route = pd.DataFrame(columns=route_cols)
    q, qt = coded(f["queue_name"]), coded(f["queue_type"])
    nt = max(len(qt.labels), 1)
    by_queue = finish(group_table(["queue", "type"], lambda k: (q.labels[k // nt], qt.labels[k % nt]),
                                  q.codes[idx] * nt + qt.codes[idx], len(q.labels) * nt, s, e, {"bytes": nbytes}, total,
                                  by_start=True))
    return DmaReport(
        active_ns=active,
        percent=100.0 * active / total if total else 0.0,
        transfers=len(idx) if agg is not None else 0,
        packets=len(act_idx) if pk is not None else 0,
        bytes=int(nbytes.sum()),
        hbm_read=hbm_read,
        hbm_write=hbm_write,
        by_route=by_route,
        by_queue=by_queue,
        source_table="DmaPacket" if pk is not None else "DmaPacketAggregated",
    )
