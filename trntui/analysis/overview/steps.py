"""Step boundaries as the plugin drew them (tb-plugin-analyses.md §3): host `ProfilerStep#N` spans, each
stretched to the end of the device work it launched, so steps never overlap and a step's kernels count for it.

- Device work joins a step through its launcher (the runtime call with the same correlation; on Neuron the
  runtime row linked above the execution): a launcher fully inside a host step adds its device rows to it.
- With any matched device row ("a GPU run"): start_i = max(end of the previous step, host start_i), end_i =
  max(host end_i, last device end_i); the first step starts after unmatched device work that ended before
  its own device work.
- The last steps are dropped when they launched nothing, and the last one too when it launched less than 80%
  of the one before (the profiler probably cut it off).
- No steps at all: one step over the host ops' extent, numbered 0.
- A `ProfilerStep#N` span of no duration is no step (the loader shows an event of negative duration as an
  instant): it is left out and counted (`StepTable.empty_steps`), never a 0 us step in the averages.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trntui.analysis.overview.roles import Roles
from trntui.model.profile import Profile


@dataclass(frozen=True)
class Step:
    number: int
    start: int
    end: int
    host_start: int
    host_end: int
    device_rows: int
    """Device rows launched from inside the host step."""
    event: int = -1
    """The `ProfilerStep#N` event (-1 for the synthetic whole-trace step)."""

    @property
    def duration(self) -> int:
        return self.end - self.start


@dataclass
class StepTable:
    steps: list[Step]
    gpu_run: bool
    dropped_tail: int = 0
    """How many trailing steps were dropped as cut off by the profiler."""
    synthetic: bool = False
    """No ProfilerStep#N in the trace: one step spans the host ops."""
    empty_steps: int = 0
    """`ProfilerStep#N` spans of no duration (a negative duration in the trace) left out of the steps."""


def find_steps(profile: Profile, roles: Roles) -> StepTable:
    host = [s for s in roles.host_steps if s.end > s.start]
    empty = len(roles.host_steps) - len(host)
    synthetic = not host
    if synthetic:
        a, b = roles.cpu_extent
        hs = np.array([a], np.int64)
        he = np.array([b], np.int64)
        nums = [0]
        evs = [-1]
    else:
        hs = np.array([s.start for s in host], np.int64)
        he = np.array([s.end for s in host], np.int64)
        nums = [s.number for s in host]
        evs = [s.event for s in host]
    m = len(hs)
    dev = roles.device
    ds, de = profile.start[dev], profile.end[dev]
    lk = roles.launcher
    has = lk >= 0
    ls = np.where(has, profile.start[np.maximum(lk, 0)], 0)
    le = np.where(has, profile.end[np.maximum(lk, 0)], 0)
    k = np.searchsorted(hs, ls, side="right") - 1
    matched = has & (k >= 0)
    kk = np.maximum(k, 0)
    matched &= le <= he[kk]
    count = np.bincount(k[matched], minlength=m) if len(k) else np.zeros(m, np.int64)
    dmin = np.full(m, np.iinfo(np.int64).max, np.int64)
    dmax = np.full(m, np.iinfo(np.int64).min, np.int64)
    if matched.any():
        np.minimum.at(dmin, k[matched], ds[matched])
        np.maximum.at(dmax, k[matched], de[matched])
    gpu_run = bool(matched.any())
    start = hs.copy()
    end = he.copy()
    if gpu_run:
        prev_end = int(hs[0])
        if count[0] > 0:
            early = ~matched & (de < dmin[0])
            if early.any():
                prev_end = max(prev_end, int(de[early].max()))
        for i in range(m):
            s = max(prev_end, int(hs[i]))
            e = max(int(he[i]), int(dmax[i])) if count[i] > 0 else max(int(he[i]), s)
            e = max(e, s)
            start[i], end[i] = s, e
            prev_end = e
    keep = m
    if gpu_run and m > 1:
        nz = np.nonzero(count > 0)[0]
        last = int(nz[-1])
        keep = last + 1
        if last > 0 and count[last - 1] * 0.8 > count[last]:
            keep = last
    steps = [
        Step(int(nums[i]), int(start[i]), int(end[i]), int(hs[i]), int(he[i]), int(count[i]), int(evs[i]))
        for i in range(keep)
    ]
    return StepTable(steps, gpu_run, m - keep, synthetic, empty)
