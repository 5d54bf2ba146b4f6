"""Inside one NeuronCore execution: engine busy time, DMA, top instructions/opcodes/HLO/framework ops, roofline.

Pure functions over a `DeviceExport` (trntui.loaders.neuron_device); no Textual. Definitions:

- busy time of an engine = length of the union of its `Instruction` intervals (clipped to the window), which
  is how the schema defines `ActiveTime` and `*_engine_active_time`; busy % = busy ÷ the window;
- the window = one execution (`ExecutionInfo`, or the selected `nc_exec_running`), else the whole profile, whose
  length is `Summary.total_time` when the export states it (the device-measured execution time), else the span
  of instructions and DMA;
- DMA active time = union of `DmaPacket` intervals (`DmaPacketAggregated` when there are no packets); HBM bytes
  = DMA bytes read from / written to device memory (the `Summary.hbm_*_bytes` definition), or the
  instructions' `hbm_read_bytes`/`hbm_write_bytes` when the export has no DMA table;
- MFU = (Tensor Engine FLOPs − transpose FLOPs) ÷ (2 × rows × cols × Tensor Engine clock × time) and MBU = HBM
  bytes ÷ time ÷ `Metadata.hbm_ddr_bandwidth`, the `Summary` formulas of the schema reference;
- roofline (trntui.analysis.roofline): FLOPs (`raw_flops`, every engine) ÷ HBM bytes against the documented peak
  of the instance type (`Metadata.instance_type`, or the one given).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from trntui.analysis.roofline import Point, Roof, peak_for, roof_for
from trntui.analysis.timeline import format_ns
from trntui.model.device import ENGINES, Coded, Window, coded, engine_name  # (Window: part of this module's interface)

if TYPE_CHECKING:
    from trntui.model.device import DeviceExport
    from trntui.model.profile import Profile

UNATTRIBUTED = "(no framework op)"


def union_ns(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total length of the union of intervals [start, end) (any order; empty intervals add nothing)."""
    s = np.asarray(starts, np.int64)
    e = np.asarray(ends, np.int64)
    keep = e > s
    s, e = s[keep], e[keep]
    if not len(s):
        return 0
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    run = np.maximum.accumulate(e)
    new = np.empty(len(s), bool)
    new[0] = True
    new[1:] = s[1:] > run[:-1]
    first = np.nonzero(new)[0]
    last = np.append(first[1:] - 1, len(s) - 1)
    return int((run[last] - s[first]).sum())


def is_hbm(location: str) -> bool:
    """Whether a DMA source/destination (`[SB]`, `[OUTPUT]`, ...) is device memory (HBM) rather than on-chip
    SBUF/PSUM. The schema names HBM, SBUF and PSUM as the possible locations and shows `[SB]` and `[OUTPUT]`;
    input, output, weight and spill tensors live in HBM."""
    s = str(location).upper()
    if not s.strip("[] "):
        return False
    return not any(tok in s for tok in ("SB", "PSUM", "STATE"))


# ----------------------------------------------------------------------------------------------------------
# windows
# ----------------------------------------------------------------------------------------------------------
def _span(export: "DeviceExport") -> tuple[int, int]:
    ins = export.instructions
    lo = int(ins["start_ts"].min()) if len(ins) else 0
    hi = int(ins["end_ts"].max()) if len(ins) else 0
    for t in ("DmaPacket", "DmaPacketAggregated"):
        f = export.table(t)
        if f is not None and len(f):
            lo, hi = min(lo, int(f["start_ts"].min())), max(hi, int(f["end_ts"].max()))
    return lo, hi


def _md_int(export: "DeviceExport", key: str) -> int | None:
    v = export.metadata.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v < (1 << 62):
        return None
    return int(v)


def whole(export: "DeviceExport") -> Window:
    """The whole profile: from the first to the last of the executions (`ExecutionInfo`), the trace's own extent
    (`Metadata.first_hw_timestamp` / `last_hw_timestamp`) and the events. `Summary.total_time` (the runtime's
    on-device execution time) is not the window: with several executions it need not equal their extent, and it
    is shown beside ours (`DeviceReport.notes`)."""
    lo, hi = _span(export)
    runs = executions(export)
    if runs:
        lo, hi = min(lo, min(w.start for w in runs)), max(hi, max(w.end for w in runs))
    first, last = _md_int(export, "first_hw_timestamp"), _md_int(export, "last_hw_timestamp")
    if first is not None and last is not None and first <= lo and last >= hi and last - first <= 4 * (hi - lo) + 1_000_000:
        lo, hi = first, last  # the trace's extent on the same clock (a few ns around the events)
    return Window(lo, hi, "whole profile", whole=True)


def executions(export: "DeviceExport") -> list[Window]:
    """One window per `ExecutionInfo` row (its times are relative to the start of the profile: placed at
    `Metadata.first_hw_timestamp`, or at the first instruction); [] when the table is missing or has no times."""
    f = export.table("ExecutionInfo")
    t = export.tables.get("ExecutionInfo")
    if f is None or not len(f) or not (t.has("execution_start_ts") and t.has("execution_end_ts")):
        return []
    lo, hi = _span(export)
    base = _md_int(export, "first_hw_timestamp") or lo
    rel_s = f["execution_start_ts"].to_numpy(np.int64)
    rel_e = f["execution_end_ts"].to_numpy(np.int64)
    starts, ends = rel_s + base, rel_e + base
    if not np.any((starts < hi) & (ends > lo)) and np.any((rel_s < hi) & (rel_e > lo)):
        starts, ends = rel_s, rel_e  # already absolute (the docs say relative; tolerate either)
    neff = f["neff_name"].astype(str).tolist()
    idx = f["execution_index"].to_numpy(np.int64)
    out = [
        Window(int(s), int(e), f"execution {int(k)}" + (f" ({n})" if n else ""), int(k), n)
        for s, e, k, n in zip(starts, ends, idx, neff) if e > s  # (an execution without a timeline: pre-v6 NTFF)
    ]
    return sorted(out, key=lambda w: w.start)


def window_for(export: "DeviceExport", *, execution: int | None = None, system: tuple[int, int] | None = None,
               rank: int | None = None) -> tuple[Window, int]:
    """The window to analyse and the shift (ns) from the export's clock to the system trace's.

    `execution`: an `ExecutionInfo.execution_index`. `system`: the [start, end) of a selected `nc_exec_running`
    and `rank` its position among that core's executions: the window is the system interval itself when the
    instructions lie on the same clock, else the rank-th execution of the profile (shifted onto the system
    event). Neither: the whole profile.
    """
    runs = executions(export)
    if execution is not None:
        for w in runs:
            if w.index == execution:
                return w, 0
        from trntui.errors import TrntuiError

        have = ", ".join(str(w.index) for w in runs) or "none (no ExecutionInfo table)"
        raise TrntuiError(f"{export.path}: no execution {execution} (executions: {have})")
    if system is not None:
        s, e = system
        if runs:
            # the execution that covers the selected interval (same clock), else the one of the same rank
            def overlap(w: Window) -> int:
                return max(min(w.end, e) - max(w.start, s), 0)

            best = max(runs, key=overlap)
            if overlap(best) >= 0.9 * max(min(best.ns, e - s), 1):
                return best, s - best.start
            if rank is not None and 0 <= rank < len(runs):
                return runs[rank], s - runs[rank].start
        else:
            st = export.instructions["start_ts"].to_numpy(np.int64)
            if np.any((st >= s) & (st < e)):
                return Window(s, e, "selected execution"), 0
            return whole(export), s - _span(export)[0]
    if len(runs) == 1:
        w = runs[0]
        if w.start <= _span(export)[0] and w.end >= _span(export)[1]:
            return Window(w.start, w.end, w.label, w.index, w.neff, whole=True), 0
    return whole(export), 0


# ----------------------------------------------------------------------------------------------------------
# the report
# ----------------------------------------------------------------------------------------------------------
@dataclass
class EngineBusy:
    engine: str
    busy_ns: int
    percent: float
    instructions: int
    instruction_ns: int
    """Sum of instruction durations (overlaps added, the schema's `*_engine_instruction_time`)."""
    active_time_percent: float = math.nan
    """The same from the export's `ActiveTime` table (NaN when it has none)."""
    per_core: dict[int, float] = field(default_factory=dict)
    """Physical core → busy % of this engine on that core alone (the timeline's lane figures)."""
    busy_no_semaphore_ns: int = 0
    """Busy time without the semaphore-wait instructions (`SEMAPHORE_OPCODES`)."""

    @property
    def percent_no_semaphore(self) -> float:
        return self.busy_no_semaphore_ns * self.percent / self.busy_ns if self.busy_ns else (
            0.0 if math.isfinite(self.percent) else math.nan)


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


@dataclass
class Check:
    """One figure the export's own tables state, next to ours (the report shows both)."""

    metric: str
    ours: float
    export: float
    unit: str = "%"
    verdict: bool | None = None
    """Set when agreement is decided row by row (OpcodeSummary), not by the two totals."""

    @property
    def agrees(self) -> bool:
        if self.verdict is not None:
            return self.verdict
        if self.unit == "%":
            return abs(self.ours - self.export) <= 0.05 + 1e-3 * abs(self.export)
        return abs(self.ours - self.export) <= 1e-6 * max(abs(self.export), 1.0) + 1e-9


@dataclass
class DeviceReport:
    name: str
    window: Window
    shift: int
    engines: list[EngineBusy]
    dma: DmaReport | None
    instructions: pd.DataFrame
    opcodes: pd.DataFrame
    hlo: pd.DataFrame
    framework: pd.DataFrame
    flops: float
    hbm_bytes: float
    hbm_source: str
    tensor_flops: float
    """Tensor Engine FLOPs excluding transposes (the MFU numerator from instructions)."""
    mfu: float
    mbu: float
    roof: Roof | None
    roof_note: str
    execution: Point | None
    points: list[Point]
    checks: list[Check]
    instance_type: str
    instruction_count: int
    pcores: list[int]
    notes: list[str] = field(default_factory=list)
    export_summary: dict[str, float] = field(default_factory=dict)
    """The export's own roofline figures (`mm_arithmetic_intensity`, `peak_flops_bandwidth_ratio`), when stated."""
    tensor_engines: int = 1
    """Tensor Engines in the MFU denominator and the roof: the physical cores analysed."""

    @property
    def matmul_intensity(self) -> float:
        """(Tensor Engine FLOPs − transposes) ÷ HBM bytes: the schema's `mm_arithmetic_intensity`, from ours."""
        return self.tensor_flops / self.hbm_bytes if self.hbm_bytes > 0 and math.isfinite(self.tensor_flops) else math.nan

    @property
    def total_ns(self) -> int:
        return self.window.ns

    def engine(self, name: str) -> EngineBusy | None:
        return next((e for e in self.engines if e.engine == name), None)

    @property
    def verdict(self) -> str:
        return self.execution.verdict() if self.execution is not None else self.roof_note


class _Labels:
    """Distinct labels → ids (for building one key from several sources)."""

    def __init__(self) -> None:
        self.labels: list[str] = []
        self._ids: dict[str, int] = {}

    def id(self, label: str) -> int:
        k = self._ids.get(label)
        if k is None:
            k = self._ids[label] = len(self.labels)
            self.labels.append(label)
        return k


@dataclass
class _Named(Coded):
    by_id: dict[int, str] = field(default_factory=dict)
    """Hierarchy-table id → op name (what the table's own rows are matched by)."""


def _framework_coded(export: "DeviceExport", layer: pd.Series, raw_id: np.ndarray) -> _Named:
    """Framework op of each instruction, matched through `raw_framework_id` to FrameworkInstruction: its
    `framework_name` (optional in the schema), else the instruction's `layer` (the framework-level debug name),
    else `framework op <id>`; an instruction without an id takes its `layer`, else UNATTRIBUTED."""
    names = _Labels()
    lay = coded(layer)
    lay_map = np.array([names.id(x if x else UNATTRIBUTED) for x in lay.labels], np.int64)
    codes = lay_map[lay.codes] if len(lay.codes) else np.empty(0, np.int64)
    by_id: dict[int, str] = {}
    fw = export.tables.get("FrameworkInstruction")
    if fw is not None and len(fw.frame):
        f = fw.frame
        ids = f["raw_framework_id"].to_numpy(np.int64)
        given = f["framework_name"].astype(str).to_numpy(object) if fw.has("framework_name") else np.full(len(f), "", object)
        # the layer name the instructions of each id carry (the first one seen), for rows without framework_name
        layer_of: dict[int, str] = {}
        if len(raw_id) and not all(given):
            lay_labels = np.asarray(lay.labels, object)
            u, first = np.unique(raw_id, return_index=True)
            for k, j in zip(u.tolist(), first.tolist()):
                label = lay_labels[lay.codes[j]] if len(lay_labels) else ""
                if label:
                    layer_of[k] = str(label)
        for k, n in zip(ids.tolist(), given.tolist()):
            if k in by_id or k == -1:
                continue
            by_id[k] = str(n) if n else layer_of.get(k, f"framework op {k}")
        if len(raw_id) and by_id:
            uniq = np.array(list(by_id), np.int64)
            name_ids = np.array([names.id(by_id[int(k)]) for k in uniq], np.int64)
            pos = pd.Index(uniq).get_indexer(raw_id)
            mapped = np.where(pos >= 0, name_ids[np.maximum(pos, 0)], -1)
            codes = np.where(mapped >= 0, mapped, codes)
    return _Named(codes, names.labels, by_id)


def _hlo_coded(export: "DeviceExport", f: pd.DataFrame) -> Coded:
    """HLO op of each instruction: its `hlo_name` (optional in Instruction), else HloInstruction's (required
    there) through `raw_hlo_id`; "" when neither names one."""
    hlo = coded(f["hlo_name"])
    t = export.tables.get("HloInstruction")
    if t is None or not len(t.frame) or not export.has("Instruction", "raw_hlo_id"):
        return hlo
    h = t.frame
    by_id: dict[int, str] = {}
    for k, n in zip(h["raw_hlo_id"].to_numpy(np.int64).tolist(), h["hlo_name"].astype(str).tolist()):
        if n and k != -1:
            by_id.setdefault(k, n)
    if not by_id:
        return hlo
    names = _Labels()
    names.id("")
    own = np.array([names.id(x) for x in hlo.labels], np.int64)
    codes = own[hlo.codes] if len(hlo.codes) else np.empty(0, np.int64)
    raw = f["raw_hlo_id"].to_numpy(np.int64)
    uniq = np.array(list(by_id), np.int64)
    name_ids = np.array([names.id(by_id[int(k)]) for k in uniq], np.int64)
    pos = pd.Index(uniq).get_indexer(raw)
    mapped = np.where(pos >= 0, name_ids[np.maximum(pos, 0)], -1)
    codes = np.where((codes == 0) & (mapped >= 0), mapped, codes)  # the instruction's own name wins
    return Coded(codes, names.labels)


def _small(codes: np.ndarray, n: int) -> np.ndarray:
    """Codes in the narrowest integer type (numpy's stable sort is a radix sort up to 16 bits)."""
    return codes.astype(np.int16 if n < (1 << 15) else np.int32 if n < (1 << 31) else np.int64)


def union_by_group(codes: np.ndarray, s: np.ndarray, e: np.ndarray, n: int, *, by_start: bool = False) -> np.ndarray:
    """Union length of the intervals of each group 0..n-1. Groups are laid side by side on one axis (each
    `span` apart), so one merge pass does them all; `by_start`: the intervals are sorted by start already, and
    a stable sort by group (radix for few groups) is enough."""
    out = np.zeros(n, np.int64)
    s = np.asarray(s, np.int64)
    e = np.asarray(e, np.int64)
    keep = e > s
    if not keep.any():
        return out
    codes = np.asarray(codes, np.int64)
    if not keep.all():
        codes, s, e = codes[keep], s[keep], e[keep]
    t0 = int(s.min())
    span = int(e.max()) - t0 + 1
    if n * span >= (1 << 62):  # pragma: no cover - more than 2^62 ns of groups: one group at a time
        for g in range(n):
            m = codes == g
            out[g] = union_ns(s[m], e[m])
        return out
    if by_start:
        order = np.argsort(_small(codes, n), kind="stable")
        ks = codes[order] * span + (s[order] - t0)
        ke = codes[order] * span + (e[order] - t0)
    else:
        ks = codes * span + (s - t0)
        ke = codes * span + (e - t0)
        order = np.argsort(ks, kind="stable")
        ks, ke = ks[order], ke[order]
    run = np.maximum.accumulate(ke)
    new = np.empty(len(ks), bool)
    new[0] = True
    new[1:] = ks[1:] > run[:-1]
    first = np.nonzero(new)[0]
    last = np.append(first[1:] - 1, len(ks) - 1)
    np.add.at(out, ks[first] // span, run[last] - ks[first])
    return out


def group_table(columns: list[str], label: Any, key: np.ndarray, n: int, s: np.ndarray, e: np.ndarray,
                sums: dict[str, np.ndarray], total: int, *, by_start: bool = False) -> pd.DataFrame:
    """One row per key id present (`label(k)` gives its column values): count, sums of `sums`, busy (union of
    [s, e)), % of `total`, first start and last end; sorted by the first sum, then count (descending)."""
    cols = columns + ["count"] + list(sums) + ["busy_ns", "percent", "first", "last"]
    if not len(key):
        return pd.DataFrame({c: pd.Series(dtype=object if c in columns else float) for c in cols})
    key = np.asarray(key, np.int64)
    if n > 4 * len(key) + 1024:  # a sparse key space (e.g. engines × opcodes of a hostile export): only the keys used
        keys, key = np.unique(key, return_inverse=True)
        key = key.reshape(-1)
        n = len(keys)
    else:
        keys = None
    counts = np.bincount(key, minlength=n)
    present = np.nonzero(counts)[0]
    first = np.full(n, np.iinfo(np.int64).max, np.int64)
    last = np.full(n, np.iinfo(np.int64).min, np.int64)
    np.minimum.at(first, key, s)
    np.maximum.at(last, key, e)
    busy = union_by_group(key, s, e, n, by_start=by_start)
    orig = keys[present] if keys is not None else present
    data: dict[str, Any] = {c: [label(int(k))[j] for k in orig] for j, c in enumerate(columns)}
    data["count"] = counts[present]
    for name, v in sums.items():
        acc = np.bincount(key, weights=np.asarray(v, np.float64), minlength=n)[present]
        integral = np.issubdtype(np.asarray(v).dtype, np.integer) and (not len(acc) or float(np.abs(acc).max()) < 2.0**62)
        data[name] = acc.astype(np.int64) if integral else acc  # (sums beyond int64 stay floats: never wrapped)
    data["busy_ns"] = busy[present]
    data["percent"] = 100.0 * busy[present] / total if total else np.full(len(present), math.nan)
    data["first"] = first[present]
    data["last"] = last[present]
    out = pd.DataFrame(data, columns=cols)
    sort_by = next(iter(sums)) if sums else "count"
    return out.sort_values([sort_by, "count"], ascending=False, kind="stable").reset_index(drop=True)


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


def roof_of(export: "DeviceExport", instance_type: str | None = None, cores: int | None = None) -> tuple[Roof | None, str]:
    """The roof for this export: the documented peaks of its instance type × the physical cores analysed (`cores`:
    those selected with --pcore, else every core of the logical core); else the peaks its own Metadata states;
    else None with the reason."""
    it = instance_type or export.instance_type
    peak = peak_for(it) if it else None
    cores = cores if cores is not None else export.num_physical_cores
    if peak is not None:
        return roof_for(peak, cores), ""
    md = export.metadata
    rows, cols, clock, bw = (md.get(k) for k in ("tensor_engine_num_rows", "tensor_engine_num_cols",
                                                  "tensor_engine_clock_freq", "hbm_ddr_bandwidth"))
    if all(_positive(v) for v in (rows, cols, clock, bw)):
        flops = 2.0 * rows * cols * clock * 1e9 * cores
        src = ("the export's Metadata (2 × tensor_engine_num_rows × num_cols × clock per physical core; "
               "hbm_ddr_bandwidth: one HBM stack, the schema's MBU denominator)")
        lnc = f" ×{cores} physical cores" if cores > 1 else ""
        return Roof(flops, float(bw), src, f"{it or 'instance type unknown'} · from the export's Metadata{lnc}"), ""
    why = f"instance type {it!r} is not in trntui's table of documented peaks" if it else "the export does not say its instance type"
    return None, f"no roofline: {why} (pass --instance-type trn1|trn2|trn3|inf2)"


SEMAPHORE_OPCODES = ("EVENT_SEMAPHORE",)
"""Opcode prefixes of semaphore-wait instructions (`EVENT_SEMAPHORE`, `EVENT_SEMAPHORE_R…`, the setup opcodes
`Summary.total_exec_time` leaves out). Busy time counts them (the Instruction rows as written); the engines table
shows busy without them beside it (the schema's "excluding semaphore waits" does not say which is meant)."""

MAX_OTHER_ENGINES = 10
"""Engine names beyond the documented five shown in the report (the busiest); the rest are counted in a note."""


def analyse(
    export: "DeviceExport",
    *,
    window: Window | None = None,
    shift: int = 0,
    pcores: list[int] | None = None,
    instance_type: str | None = None,
    top: int = 15,
) -> DeviceReport:
    """Everything the device view and `trntui device` show, for one window of one device profile (no numpy
    warning escapes: every division by an empty or zero total is guarded or gives NaN, shown as unknown)."""
    with np.errstate(all="ignore"):
        return _analyse(export, window, shift, pcores, instance_type, top)


def _analyse(export: "DeviceExport", window: Window | None, shift: int, pcores: list[int] | None,
             instance_type: str | None, top: int) -> DeviceReport:
    w = window or window_for(export)[0]
    lo, hi = w.start, w.end
    total = w.ns
    f = export.instructions
    st_all = f["start_ts"].to_numpy(np.int64)
    en_all = np.maximum(f["end_ts"].to_numpy(np.int64), st_all)
    pc_all = f["pcore_idx"].to_numpy(np.int64)
    m = (st_all >= lo) & (st_all < hi) if not w.whole else (st_all < hi) & (en_all > lo)
    if pcores is not None:
        m &= np.isin(pc_all, pcores)
    sel = np.nonzero(m)[0]
    if len(sel) > 1 and not bool(np.all(st_all[sel][1:] >= st_all[sel][:-1])):
        sel = sel[np.argsort(st_all[sel], kind="stable")]  # by start once: every grouping below relies on it
    st, en, pc = st_all[sel], en_all[sel], pc_all[sel]
    s, e = np.clip(st, lo, hi), np.clip(en, lo, hi)
    dur = en - st
    col = lambda name: f[name].to_numpy(np.int64)[sel]  # noqa: E731
    eng = coded(f["engine"], engine_name)
    ecodes = eng.codes[sel]
    op = coded(f["opcode"])
    ocodes = op.codes[sel]
    notes: list[str] = []
    ins_t = export.tables["Instruction"]
    cores_here = sorted(np.unique(pc).tolist())
    n_cores = len(pcores) if pcores is not None else export.num_physical_cores

    # engines: the documented five first, then the other names the window uses (an engine outside the window,
    # e.g. `Collectives` only in another execution, is not a row)
    used = np.unique(ecodes)
    others = sorted({eng.labels[int(k)] for k in used} - set(ENGINES))
    present = list(ENGINES) + others
    pos = {name: k for k, name in enumerate(present)}
    to_present = np.array([pos.get(x, -1) for x in eng.labels], np.int64) if eng.labels else np.empty(0, np.int64)
    pcode = to_present[ecodes] if len(ecodes) else np.empty(0, np.int64)
    busy_by = union_by_group(pcode, s, e, len(present), by_start=True)
    counts = np.bincount(pcode, minlength=len(present))
    times = np.bincount(pcode, weights=dur, minlength=len(present)) if len(pcode) else np.zeros(len(present))
    sem_label = np.array([str(x).upper().startswith(SEMAPHORE_OPCODES) for x in op.labels], bool)
    sem = sem_label[ocodes] if len(ocodes) else np.zeros(0, bool)
    busy_nosem = union_by_group(pcode[~sem], s[~sem], e[~sem], len(present), by_start=True)
    per_core = {c: union_by_group(pcode[pc == c], s[pc == c], e[pc == c], len(present), by_start=True) for c in cores_here}
    at_busy = None
    at = export.table("ActiveTime")
    if at is not None:
        a_s = at["start_ts"].to_numpy(np.int64)
        a_e = at["end_ts"].to_numpy(np.int64)
        am = (a_s < hi) & (a_e > lo)
        if pcores is not None:
            am &= np.isin(at["pcore_idx"].to_numpy(np.int64), pcores)
        a_eng = coded(at["engine"], engine_name)
        a_map = np.array([pos.get(x, -1) for x in a_eng.labels], np.int64)
        a_codes = a_map[a_eng.codes[am]] if len(a_eng.labels) else np.empty(0, np.int64)
        ok = a_codes >= 0
        at_busy = union_by_group(a_codes[ok], np.clip(a_s[am], lo, hi)[ok], np.clip(a_e[am], lo, hi)[ok], len(present))
    pct_of = lambda v: 100.0 * float(v) / total if total else math.nan  # noqa: E731
    engines = [
        EngineBusy(name, int(busy_by[k]), pct_of(busy_by[k]), int(counts[k]), int(times[k]),
                   pct_of(at_busy[k]) if at_busy is not None else math.nan,
                   {c: pct_of(v[k]) for c, v in per_core.items()}, int(busy_nosem[k]))
        for k, name in enumerate(present)
    ]
    if len(others) > MAX_OTHER_ENGINES:
        extra = sorted(engines[len(ENGINES):], key=lambda x: (-x.busy_ns, x.engine))
        hidden = extra[MAX_OTHER_ENGINES:]
        engines = engines[: len(ENGINES)] + sorted(extra[:MAX_OTHER_ENGINES], key=lambda x: x.engine)
        notes.append(f"{len(others):,} engine names besides the documented five; the {MAX_OTHER_ENGINES} busiest are "
                     f"shown, {len(hidden):,} more ({sum(x.instructions for x in hidden):,} instructions) are not")
    if len(cores_here) > 1:
        notes.append("busy % of an engine is the union of its instructions on physical cores "
                     + ",".join(str(c) for c in cores_here) + " (busy on any core); the engines table also shows each "
                     "core's own busy % (the timeline's lane %), and the busy % without semaphore waits")

    # bytes and FLOPs per instruction
    hbm_i = col("hbm_read_bytes") + col("hbm_write_bytes")
    sbuf_i = col("sbuf_read_bytes") + col("sbuf_write_bytes")
    has_flops = ins_t.has("raw_flops")
    flops_i = col("raw_flops").astype(np.float64) if has_flops else np.full(len(sel), math.nan)
    if not has_flops:
        notes.append("Instruction has no raw_flops column: FLOPs, arithmetic intensity and MFU are unknown "
                     "(the roofline places nothing; bandwidth figures only)")
    fw = _framework_coded(export, f["layer"], f["raw_framework_id"].to_numpy(np.int64))
    fcodes = fw.codes[sel]
    hlo = _hlo_coded(export, f)
    hcodes = hlo.codes[sel]

    # top instructions (the longest single instructions)
    k = min(top, len(dur))
    cand = np.argpartition(-dur, k - 1)[:k] if 0 < k < len(dur) else np.arange(len(dur))
    cand = cand[np.lexsort((cand, -dur[cand]))]
    instructions = pd.DataFrame({
        "engine": [eng.labels[c] for c in ecodes[cand]], "pcore": pc[cand], "opcode": [op.labels[c] for c in ocodes[cand]],
        "hlo": [hlo.labels[c] for c in hcodes[cand]], "framework_op": [fw.labels[c] for c in fcodes[cand]],
        "start_ns": st[cand] - lo, "duration_ns": dur[cand], "hbm_bytes": hbm_i[cand], "sbuf_bytes": sbuf_i[cand],
        "flops": flops_i[cand],
    })

    sums = {"time_ns": dur, "hbm_bytes": hbm_i, "sbuf_bytes": sbuf_i, "flops": flops_i}
    no = max(len(op.labels), 1)
    opcodes = group_table(["engine", "opcode"], lambda k: (eng.labels[k // no], op.labels[k % no]),
                          ecodes * no + ocodes, len(eng.labels) * no, s, e, sums, total, by_start=True)
    named = np.array([bool(x) for x in hlo.labels], bool)[hcodes] if len(hcodes) else np.zeros(0, bool)
    hlo_df = group_table(["hlo"], lambda k: (hlo.labels[k],), hcodes[named], len(hlo.labels), s[named], e[named],
                         {n: v[named] for n, v in sums.items()}, total, by_start=True)
    framework = group_table(["framework_op"], lambda k: (fw.labels[k],), fcodes, len(fw.labels), s, e, sums, total,
                            by_start=True)
    # the hierarchy tables' own HBM bytes (required there; the per-instruction counts are optional)
    framework = _with_rollup(framework, "framework_op", _rollup(export, "FrameworkInstruction", w, fw.by_id),
                             total, pcores, ins_t.has("hbm_read_bytes"), notes, "FrameworkInstruction")
    hlo_df = _with_rollup(hlo_df, "hlo", _rollup(export, "HloInstruction", w, None), total, pcores,
                          ins_t.has("hbm_read_bytes"), notes, "HloInstruction")

    # DMA and HBM bytes
    dma = _dma(export, w, total, pcores, notes)
    if dma is not None and (dma.hbm_read or dma.hbm_write):
        hbm_bytes, hbm_source = float(dma.hbm_read + dma.hbm_write), "DMA transfers to/from HBM"
    else:
        hbm_bytes, hbm_source = float(hbm_i.sum()), "instructions' hbm_read_bytes + hbm_write_bytes"
    flops = float(flops_i.sum()) if has_flops else math.nan
    tmask = np.array([x == "Tensor" for x in eng.labels], bool)[ecodes] if len(ecodes) else np.zeros(0, bool)
    tensor_flops = float(flops_i[tmask].sum() - col("flops_transpose")[tmask].sum()) if has_flops else math.nan

    # roofline
    roof, roof_note = roof_of(export, instance_type, n_cores)
    execution: Point | None = None
    points: list[Point] = []
    if len(framework):
        framework["seconds"] = (framework["last"] - framework["first"]) / 1e9
    if roof is not None:
        execution = Point(w.label if not w.whole else "execution", flops, hbm_bytes, total / 1e9, roof)
        for row in framework.itertuples(index=False):
            points.append(Point(str(row.framework_op), float(row.flops), float(row.hbm_bytes), float(row.seconds), roof))
        if len(framework):
            framework["intensity"] = [p.intensity for p in points]
            framework["bound"] = [p.bound for p in points]
            framework["headroom"] = [p.headroom for p in points]
    opcodes = opcodes.drop(columns=["first", "last"])
    hlo_df = hlo_df.drop(columns=["first", "last"])

    # MFU / MBU (Summary's formulas); the Tensor Engines of every physical core analysed
    md = export.metadata
    rows_, cols_, clock = (md.get(k) for k in ("tensor_engine_num_rows", "tensor_engine_num_cols", "tensor_engine_clock_freq"))
    per_te = 2.0 * rows_ * cols_ * clock * 1e9 if all(_positive(v) for v in (rows_, cols_, clock)) else (
        roof.flops / max(n_cores, 1) if roof is not None else 0.0)
    max_ops = per_te * max(n_cores, 1)
    secs = total / 1e9
    mfu = 100.0 * tensor_flops / (max_ops * secs) if max_ops and secs and math.isfinite(tensor_flops) else math.nan
    hbm_bw = md.get("hbm_ddr_bandwidth")
    hbm_bw = float(hbm_bw) if _positive(hbm_bw) else (roof.bandwidth if roof is not None else 0.0)
    mbu = 100.0 * hbm_bytes / secs / hbm_bw if hbm_bw and secs else math.nan

    checks = _checks(export, w, engines, dma, mfu, mbu, total, hbm_bytes, opcodes) if w.whole and pcores is None else []
    if not w.whole and export.summary:
        notes.append("the export's Summary covers the whole profile, not this execution: not compared")
    tt = export.summary.get("total_time")
    if w.whole and _positive(tt) and total and abs(tt * 1e9 - total) > 0.01 * total:
        notes.append(f"Summary.total_time is {format_ns(int(tt * 1e9))}, the window {format_ns(total)} (from the first "
                     f"execution's start to the last one's end): busy %, MFU and MBU are over the window; over "
                     f"total_time they would be ×{total / (tt * 1e9):.3g}")
    return DeviceReport(
        name=export.name, window=w, shift=shift, engines=engines, dma=dma, instructions=instructions,
        opcodes=opcodes, hlo=hlo_df, framework=framework, flops=flops, hbm_bytes=hbm_bytes, hbm_source=hbm_source,
        tensor_flops=tensor_flops, mfu=mfu, mbu=mbu, roof=roof, roof_note=roof_note, execution=execution,
        points=points, checks=checks, instance_type=instance_type or export.instance_type,
        instruction_count=len(sel), pcores=cores_here, notes=notes, tensor_engines=max(n_cores, 1),
        export_summary={k: float(export.summary[k]) for k in ("mm_arithmetic_intensity", "peak_flops_bandwidth_ratio")
                        if _positive(export.summary.get(k)) and w.whole},
    )


def _intervals(text: Any) -> list[tuple[int, int]] | None:
    """`time_intervals` (`"[[1, 10], [20, 50]]"`) as pairs; None when it is not that (nested too deep, junk)."""
    if not isinstance(text, str) or not text.strip() or len(text) > 1 << 22:
        return None
    import json

    try:
        v = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(v, list):
        return None
    out = []
    for x in v:
        if (not isinstance(x, list) or len(x) != 2 or not all(isinstance(t, int) and not isinstance(t, bool) for t in x)
                or not 0 <= x[0] <= x[1] < (1 << 62)):
            return None
        out.append((x[0], x[1]))
    return out


@dataclass
class _Roll:
    """One op of a hierarchy table (FrameworkInstruction / HloInstruction), in the window."""

    hbm_bytes: float = 0.0
    known: bool = True
    """Whether the window's HBM bytes are known (per-interval sizes, or every interval inside the window)."""
    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)


def _rollup(export: "DeviceExport", table: str, w: Window, names_by_id: dict[int, str] | None) -> dict[str, _Roll]:
    """Op name → its HBM bytes and time intervals inside window `w`, from a hierarchy table's rows (all rows of
    one name together). The bytes of an execution are the sizes of its intervals (`hbm_transfer_size_per_interval`,
    intervals starting inside it); the whole profile takes the row totals (`hbm_read_bytes + hbm_write_bytes`)."""
    t = export.tables.get(table)
    if t is None or not len(t.frame):
        return {}
    f = t.frame
    lo, hi = w.start, w.end
    if table == "FrameworkInstruction":
        ids = f["raw_framework_id"].to_numpy(np.int64)
        names = [(names_by_id or {}).get(int(k), "") for k in ids]
    else:
        names = [str(x) for x in f["hlo_name"].astype(str)]
    total_b = f["hbm_read_bytes"].to_numpy(np.int64).astype(np.float64) + f["hbm_write_bytes"].to_numpy(np.int64)
    has_iv, has_sz, has_se = t.has("time_intervals"), t.has("hbm_transfer_size_per_interval"), t.has("start_ts") and t.has("end_ts")
    ivs = f["time_intervals"].astype(str).tolist() if has_iv else None
    sizes = f["hbm_transfer_size_per_interval"].tolist() if has_sz else None
    s0 = f["start_ts"].to_numpy(np.int64) if has_se else None
    e0 = f["end_ts"].to_numpy(np.int64) if has_se else None
    out: dict[str, _Roll] = {}
    for k, name in enumerate(names):
        if not name:
            continue
        iv = _intervals(ivs[k]) if ivs is not None else None
        if iv is None and s0 is not None and e0[k] >= s0[k]:
            iv = [(int(s0[k]), int(e0[k]))]
        sz = sizes[k] if sizes is not None else None
        if not (isinstance(sz, list) and iv is not None and len(sz) == len(iv)
                and all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= (1 << 50) for x in sz)):
            sz = None
        r = out.setdefault(name, _Roll())
        if iv is None:  # no times: only the whole profile can take its bytes
            if w.whole:
                r.hbm_bytes += total_b[k]
            else:
                r.known = False
            continue
        inside = [j for j, (a, b) in enumerate(iv) if ((a < hi and b > lo) if w.whole else lo <= a < hi)]
        for j in inside:
            r.starts.append(max(iv[j][0], lo))
            r.ends.append(min(iv[j][1], hi))
        if w.whole or len(inside) == len(iv):
            r.hbm_bytes += total_b[k]
        elif sz is not None:
            r.hbm_bytes += float(sum(sz[j] for j in inside))
        elif inside:
            r.known = False
    return out


def _with_rollup(df: pd.DataFrame, key: str, roll: dict[str, _Roll], total: int, pcores: list[int] | None,
                 per_instruction_bytes: bool, notes: list[str], table: str) -> pd.DataFrame:
    """The op table with each op's HBM bytes taken from its hierarchy table (`roll`) and the ops that only the
    hierarchy table knows added (no instruction names them: count, time and FLOPs unknown)."""
    if not roll:
        return df
    if pcores is not None and per_instruction_bytes:
        notes.append(f"{table} has no pcore_idx: with --pcore the {key.replace('_', ' ')} HBM bytes are the "
                     "instructions' own counts")
        return df
    df = df.copy()
    df["bytes_from"] = "instructions"
    have = set(df[key].astype(str)) if len(df) else set()
    if len(df):
        vals = df["hbm_bytes"].to_numpy(np.float64).copy()
        src = df["bytes_from"].to_numpy(object).copy()
        for j, name in enumerate(df[key].astype(str)):
            r = roll.get(name)
            if r is not None and r.known:
                vals[j], src[j] = r.hbm_bytes, table
        df["hbm_bytes"] = vals
        df["bytes_from"] = src
    added = []
    for name, r in roll.items():
        if name in have or not r.starts:
            continue
        s = np.asarray(r.starts, np.int64)
        e = np.asarray(r.ends, np.int64)
        busy = union_ns(s, e)
        added.append({key: name, "count": 0, "time_ns": 0, "hbm_bytes": r.hbm_bytes if r.known else math.nan,
                      "sbuf_bytes": 0, "flops": math.nan, "busy_ns": busy,
                      "percent": 100.0 * busy / total if total else math.nan, "first": int(s.min()),
                      "last": int(e.max()), "bytes_from": table})
    if added:
        notes.append(f"{len(added):,} {key.replace('_', ' ')}s known only from {table} (no instruction names them): "
                     "their instruction count, time and FLOPs are unknown")
        df = pd.concat([df, pd.DataFrame(added)], ignore_index=True) if len(df) else pd.DataFrame(added)
    return df


def _checks(export: "DeviceExport", w: Window, engines: list[EngineBusy], dma: DmaReport | None, mfu: float,
            mbu: float, total: int, hbm_bytes: float, opcodes: pd.DataFrame | None = None) -> list[Check]:
    """Our figures next to the ones `Summary` states (only for the whole profile, which Summary describes)."""
    sm = export.summary
    out: list[Check] = []

    def add(metric: str, ours: float, key: str, unit: str = "%", scale: float = 1.0) -> None:
        v = sm.get(key)
        if isinstance(v, (int, float)) and math.isfinite(v) and math.isfinite(ours):
            out.append(Check(metric, ours, float(v) * scale, unit))

    add("MFU", mfu, "mfu_estimated_percent")
    add("MBU", mbu, "mbu_estimated_percent")
    for e in engines:
        add(f"{e.engine} engine active", e.percent, f"{e.engine.lower()}_engine_active_time_percent")
    if dma is not None:
        add("DMA active", dma.percent, "dma_active_time_percent")
    oc = export.table("OpcodeSummary")
    if oc is not None and len(oc) and opcodes is not None:
        ours = {(str(e), str(o)): int(b) for e, o, b in zip(opcodes["engine"], opcodes["opcode"], opcodes["busy_ns"])}
        theirs = [((engine_name(e), str(o)), int(a)) for e, o, a in zip(oc["engine"].astype(str), oc["opcode"].astype(str),
                                                                      oc["active_time_ns"])]
        differ = sum(1 for k, a in theirs if ours.get(k, 0) != a)
        out.append(Check(f"OpcodeSummary active time ({len(theirs)} rows" + (f", {differ} differ)" if differ else ")"),
                         float(sum(ours.get(k, 0) for k, _ in theirs)), float(sum(a for _, a in theirs)), "ns",
                         verdict=differ == 0))
        if dma.hbm_read or dma.hbm_write:
            add("HBM read bytes", float(dma.hbm_read), "hbm_read_bytes", "B")
            add("HBM write bytes", float(dma.hbm_write), "hbm_write_bytes", "B")
    return out


# ----------------------------------------------------------------------------------------------------------
# from a system-trace event to its device profile
# ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Target:
    """A hardware execution selected on the system timeline: which process/NeuronCore, when, and its rank
    among that core lane's executions (matched to the device profile's executions when the clocks differ)."""

    instance: str
    pid: int
    nc: int | None
    pcore: int | None
    start: int
    end: int
    rank: int
    name: str


def target_of(profile: "Profile", event: int) -> Target | None:
    """The device-profile target of a system-trace event: an `nc_exec_running`-like row on a hardware lane
    (`neuron_hw/NC<l>:<p>`), else None."""
    import re

    from trntui.model.profile import Tier

    lane = profile.lane_of(event)
    if lane.tier != Tier.HARDWARE:
        return None
    m = re.fullmatch(r"NC(\d+)(?::(\d+))?", lane.ident)
    args = profile.args(event)
    nc = int(m.group(1)) if m else _int(args.get("nc_idx", args.get("lnc_idx")))
    pcore = int(m.group(2)) if m and m.group(2) is not None else None
    if nc is None and lane.subsystem != "neuron_hw":
        return None
    same = np.nonzero((profile.lane == profile.lane[event]) & (profile.name == profile.name[event]))[0]
    order = same[np.argsort(profile.start[same], kind="stable")]
    rank = int(np.nonzero(order == event)[0][0]) if len(order) else 0
    return Target(lane.instance, lane.pid, nc, pcore, int(profile.start[event]), int(profile.end[event]), rank,
                  profile.name_of(event))


def _positive(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 < v < 1e30


def _int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None
