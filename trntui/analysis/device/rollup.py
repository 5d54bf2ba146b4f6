"""The hierarchy tables' own figures (`FrameworkInstruction`, `HloInstruction`): each op's HBM bytes and time
intervals inside the window, merged into the op tables (ops only those tables know are added)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from trntui.analysis.device.groups import union_ns
from trntui.model.device import Window

if TYPE_CHECKING:
    from trntui.model.device import DeviceExport


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
