"""Counter lanes: sampled series (host CPU, host memory, HBM used) drawn as one-row sparklines on the timeline.

A series is a step function: each sample holds until the next one (Explorer's `CpuUsage` is the average over
the second before its timestamp, memory tables are the usage from that moment on). A cell shows the highest
value the series takes inside it; cells before the first sample are blank. The
scale is the series' own minimum..maximum over the whole profile, so panning never rescales a lane.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trntui.model.profile import Profile

SPARKS = "▁▂▃▄▅▆▇█"


@dataclass
class Counter:
    name: str
    label: str
    unit: str
    ts: np.ndarray
    values: np.ndarray

    @property
    def low(self) -> float:
        return float(self.values.min()) if len(self.values) else 0.0

    @property
    def high(self) -> float:
        return float(self.values.max()) if len(self.values) else 0.0

    def at(self, t: int) -> float | None:
        """The value held at absolute time `t` (None before the first sample)."""
        k = int(np.searchsorted(self.ts, t, "right")) - 1
        return float(self.values[k]) if k >= 0 else None


def counters(profile: Profile) -> list[Counter]:
    """The profile's counter series (`ProfileMeta.counters`), sorted by time, cached on the profile."""
    cached = profile.cache.get("counters")
    if cached is not None:
        return cached
    out = []
    for c in getattr(profile.meta, "counters", None) or []:
        ts = np.asarray(c.get("ts") or [], np.int64)
        values = np.asarray(c.get("values") or [], np.float64)
        if not len(ts) or len(ts) != len(values):
            continue
        o = np.argsort(ts, kind="stable")
        out.append(Counter(str(c.get("name", "")), str(c.get("label", "")), str(c.get("unit", "")), ts[o], values[o]))
    profile.cache["counters"] = out
    return out


def cell_values(counter: Counter, bounds: np.ndarray) -> np.ndarray:
    """Per cell [bounds[k], bounds[k+1]): the highest sample inside it, else the value held from before it;
    NaN before the first sample."""
    lo, hi = bounds[:-1], bounds[1:]
    a = np.searchsorted(counter.ts, lo, "left")
    b = np.searchsorted(counter.ts, hi, "left")
    held = np.where(a > 0, counter.values[np.maximum(a - 1, 0)], np.nan)
    out = held.copy()
    inside = b > a
    if inside.any():
        # cells are contiguous, so the samples of successive non-empty cells are contiguous too: one reduceat
        # over the samples up to the last such cell's end gives each cell's maximum
        starts = a[inside]
        peak = np.maximum.reduceat(counter.values[: int(b[inside][-1])], starts)
        # the value held from before the cell's first sample counts too (unless that sample opens the cell)
        opens = counter.ts[starts] == lo[inside]
        out[inside] = np.where(opens, peak, np.fmax(peak, held[inside]))
    return out


def sparkline(counter: Counter, bounds: np.ndarray) -> str:
    """The lane's glyphs for cells `bounds` (len cells + 1 absolute ns boundaries)."""
    values = cell_values(counter, bounds)
    low, high = counter.low, counter.high
    span = high - low
    if span > 0:
        level = np.clip(np.floor((values - low) / span * (len(SPARKS) - 1) + 0.5), 0, len(SPARKS) - 1)
    else:
        level = np.full(len(values), (len(SPARKS) - 1) // 2, np.float64)
    glyphs = np.array(list(SPARKS) + [" "], dtype=object)
    idx = np.where(np.isnan(values), len(SPARKS), np.nan_to_num(level, nan=0.0)).astype(np.int64)
    return "".join(glyphs[idx].tolist())


def format_value(value: float | None, unit: str) -> str:
    if value is None:
        return "–"
    if unit == "bytes":
        size = float(value)
        for suffix in ("B", "KiB", "MiB", "GiB", "TiB"):
            if abs(size) < 1024 or suffix == "TiB":
                return f"{size:.0f} {suffix}" if suffix == "B" else f"{size:.1f} {suffix}"
            size /= 1024
    if unit == "%":
        return f"{value:.1f}%"
    return f"{value:g} {unit}".strip()
