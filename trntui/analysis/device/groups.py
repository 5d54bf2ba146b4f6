"""Instructions grouped into tables: interval unions (`union_ns`, `union_by_group`), the framework op and HLO
op of each instruction (through `FrameworkInstruction` / `HloInstruction`), and the grouped tables with count,
sums, busy time and share of the window (`group_table`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from trntui.model.device import Coded, coded

if TYPE_CHECKING:
    from trntui.model.device import DeviceExport

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
