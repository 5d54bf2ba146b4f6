"""The device report: `analyse()` of one window of one device profile (engine busy %, top instructions,
opcodes, HLO and framework ops, DMA, MFU/MBU, the roofline) as a `DeviceReport`, with the export's own
`Summary` figures beside ours (`Check`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from trntui.analysis.device.dma import DmaReport, _dma
from trntui.analysis.device.groups import _framework_coded, _hlo_coded, group_table, union_by_group
from trntui.analysis.device.rollup import _rollup, _with_rollup
from trntui.analysis.device.windows import window_for
from trntui.analysis.roofline import Point, Roof, peak_for, roof_for
from trntui.analysis.timeline import format_ns
from trntui.model.device import ENGINES, Window, coded, engine_name

if TYPE_CHECKING:
    from trntui.model.device import DeviceExport

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
    if w.whole and tt is not None and tt != 0 and not _positive(tt):  # (1e300, inf, -5: no device time)
        notes.append(f"Summary.total_time {tt!r:.40} is not a time in seconds (expected a positive number under "
                     "1e30): not used")
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


def _positive(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 < v < 1e30
