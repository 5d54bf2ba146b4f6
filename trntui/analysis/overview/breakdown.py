"""Step-time breakdown by priority (tb-plugin-analyses.md §4) and the computation/communication overlap (§9).

Every instant of a step is given to the highest-priority category busy at that instant (Kernel before Memcpy
before ... CPU Exec), and what no category covers is Other, so the categories of a step add up to its
duration exactly. (The plugin restarts its free slots when a category covers a whole step, which can make a
step's categories add up to more than the step: trntui does not; see docs/overview.md.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trntui.analysis.overview import ranges as R
from trntui.analysis.overview.roles import Roles
from trntui.analysis.overview.steps import Step
from trntui.model.profile import Profile


@dataclass
class Breakdown:
    categories: tuple[str, ...]
    costs: np.ndarray
    """ns, shape (steps, categories): the time of each step given to each category."""
    totals: np.ndarray
    """ns per step (its duration)."""
    role_ranges: list[R.Ranges]
    """Merged busy time of each category's events (Other: empty), over the whole trace."""


def role_ranges(profile: Profile, roles: Roles) -> list[R.Ranges]:
    """The merged range list of each category (events are time-sorted, so masks keep them sorted)."""
    cached = profile.cache.get("overview_role_ranges")
    if cached is not None:
        return cached
    from trntui import cache

    stored = cache.load_derived(profile, "overview_ranges_v1")
    if stored is not None and len(stored) == 2 * len(roles.categories):
        out = [(stored[f"s{k}"], stored[f"e{k}"]) for k in range(len(roles.categories))]
        profile.cache["overview_role_ranges"] = out
        return out
    presorted = profile.time_sorted()
    by_role = np.argsort(roles.role, kind="stable")  # one pass; each category's events stay in time order
    counts = np.bincount(roles.role.astype(np.int64) + 1, minlength=len(roles.categories) + 1)
    bounds = np.cumsum(counts)
    out = []
    for k, cat in enumerate(roles.categories):
        if cat == "Other":
            out.append(R.empty())
            continue
        idx = by_role[bounds[k] : bounds[k + 1]]  # role k sits after the NONE (-1) block
        out.append(R.merge(profile.start[idx], profile.end[idx], presorted=presorted))
    profile.cache["overview_role_ranges"] = out
    arrays = {}
    for k, (a, b) in enumerate(out):
        arrays[f"s{k}"], arrays[f"e{k}"] = a, b
    cache.save_derived(profile, "overview_ranges_v1", arrays)
    return out


def breakdown(profile: Profile, roles: Roles, steps: list[Step]) -> Breakdown:
    """Category r of a step gets |step ∩ (roles 0..r)| - |step ∩ (roles 0..r-1)|: the time the first r+1
    categories cover minus what the higher-priority ones already took, i.e. the plugin's slot subtraction.
    The costs of a cached profile's steps are kept with it (re-opening it skips the unions)."""
    from trntui import cache

    cats = roles.categories
    ranges = role_ranges(profile, roles)
    s0 = np.array([s.start for s in steps], np.int64)
    s1 = np.array([s.end for s in steps], np.int64)
    stored = cache.load_derived(profile, "overview_costs_v1")
    if stored is not None and stored["costs"].ndim == 2 and stored["costs"].shape[1] == len(cats) and len(s0):
        pos = np.minimum(np.searchsorted(stored["s0"], s0), max(len(stored["s0"]) - 1, 0))
        if len(stored["s0"]) and np.array_equal(stored["s0"][pos], s0) and np.array_equal(stored["s1"][pos], s1):
            return Breakdown(cats, stored["costs"][pos], s1 - s0, ranges)  # these steps' rows of the kept costs
    costs = _costs(ranges, cats, s0, s1)
    if stored is None:  # the first breakdown of this cached profile (all its steps, or the ones first asked for)
        cache.save_derived(profile, "overview_costs_v1", {"s0": s0, "s1": s1, "costs": costs})
    return Breakdown(cats, costs, s1 - s0, ranges)


def _costs(ranges: list[R.Ranges], cats: tuple[str, ...], s0: np.ndarray, s1: np.ndarray) -> np.ndarray:
    costs = np.zeros((len(s0), len(cats)), np.int64)
    union = R.empty()
    before = np.zeros(len(s0), np.int64)
    for k, cat in enumerate(cats):
        if cat == "Other":
            costs[:, k] = (s1 - s0) - before
            continue
        if len(ranges[k][0]):
            union = R.union(union, ranges[k]) if len(union[0]) else ranges[k]
        now = R.covered(union, s0, s1)
        costs[:, k] = now - before
        before = now
    return costs


@dataclass
class Communication:
    """Per step (ns): computation (kernels; host ops when there are no kernels), communication, their
    overlap, and other = total + overlap - computation - communication."""

    computation: np.ndarray
    communication: np.ndarray
    overlap: np.ndarray
    other: np.ndarray


def communication(roles: Roles, bd: Breakdown, steps: list[Step]) -> Communication | None:
    ci = roles.index("Communication")
    comm = bd.role_ranges[ci]
    if not len(comm[0]):
        return None
    comp = bd.role_ranges[0]  # Kernel / NeuronCore
    if not len(comp[0]):
        comp = bd.role_ranges[roles.index("Framework" if roles.neuron else "CPU Exec")]
    s0 = np.array([s.start for s in steps], np.int64)
    s1 = np.array([s.end for s in steps], np.int64)
    overlap = R.covered(R.intersect(comp, comm), s0, s1)
    computation = R.covered(comp, s0, s1)
    communication_ = R.covered(comm, s0, s1)
    other = (s1 - s0) + overlap - computation - communication_
    return Communication(computation, communication_, overlap, other)
