"""Which rows the timeline draws in the height it has: lanes grouped by tier with their busy time and sub-rows
(`lane_groups`), and the row plan for a mode (`fit`, `lanes`, `all`) with pinned lanes first (`plan_rows`)."""

from __future__ import annotations

from dataclasses import dataclass

from trntui.analysis.timeline.rows import build_rows, display_lanes
from trntui.model.profile import Profile


@dataclass(frozen=True)
class LaneInfo:
    """What the row planner needs to know about one lane."""

    lane: int
    activity: int
    """Busy ns (the union of its events); -1 for trace-window marker lanes, which never get a row of their own
    when space is short."""
    depths: int
    """Nesting sub-rows it has (1 when every event is at depth 0)."""


@dataclass(frozen=True)
class PlannedRow:
    """A row of the timeline: a tier heading, one lane (one depth, or every depth when `depth` is None), or a
    summary of several lanes of a tier drawn as one row."""

    tier: int
    lanes: tuple[int, ...] = ()
    """Empty for a heading."""
    depth: int | None = None

    @property
    def is_heading(self) -> bool:
        return not self.lanes


def depths_ready(profile: Profile) -> bool:
    """Whether the nesting the timeline's sub-rows need is computed (a big profile gets it after the first
    frame, in the background)."""
    return "nesting" in profile.cache


def lane_groups(profile: Profile, max_depth: int = 4) -> list[tuple[int, list[LaneInfo]]]:
    """Lanes with events grouped by tier in display order, with their busy time and sub-row count (cached;
    builds the per-depth and one-per-lane rows, so a load worker can call it before the first frame). Before
    the nesting is computed (`depths_ready`), every lane counts one sub-row and no depth rows are built."""
    with_depths = depths_ready(profile)
    key = ("timeline_lane_groups", max_depth, with_depths)
    cached = profile.cache.get(key)
    if cached is not None:
        return cached
    merged = {r.lane: r for r in build_rows(profile, 1)}
    depths: dict[int, int] = {}
    for r in build_rows(profile, max_depth) if with_depths else ():
        depths[r.lane] = depths.get(r.lane, 0) + 1
    groups: list[tuple[int, list[LaneInfo]]] = []
    for lane in display_lanes(profile):
        row = merged.get(lane.id)
        if row is None:
            continue
        activity = -1 if lane.subsystem == "markers" else int(row.busy.cum[-1])
        info = LaneInfo(lane.id, activity, depths.get(lane.id, 1))
        if groups and groups[-1][0] == int(lane.tier):
            groups[-1][1].append(info)
        else:
            groups.append((int(lane.tier), [info]))
    profile.cache[key] = groups
    return groups


FIT, LANES, ALL = "fit", "lanes", "all"
"""Row modes: fit the rows to the height (default), one row per lane, one row per lane and nesting depth."""


def plan_rows(
    groups: list[tuple[int, list[LaneInfo]]], budget: int, mode: str = FIT, pinned: tuple[int, ...] = ()
) -> list[PlannedRow]:
    """The rows to draw for lanes grouped by tier (in display order) in `budget` rows.

    `all` and `lanes` draw every lane under its tier heading (with or without nesting sub-rows). `fit` picks
    the fullest of these that fits; when even one row per lane does not fit, it drops the headings and gives
    every tier one row at least: its busiest lanes get rows of their own and the rest of the tier shares one
    summary row, so every tier that has events is on the first screen. `pinned` lanes (most wanted first: a
    jump target, the cursor's lane) come before the busiest; only the first may take a row past the budget.
    """
    pin = set(pinned)
    full = sum(1 + sum(l.depths for l in lanes) for _, lanes in groups)
    if mode == ALL or (mode == FIT and full <= budget):
        out: list[PlannedRow] = []
        for tier, lanes in groups:
            out.append(PlannedRow(tier))
            out += [PlannedRow(tier, (l.lane,), d) for l in lanes for d in range(l.depths)]
        return out
    per_lane = sum(1 + len(lanes) for _, lanes in groups)
    if mode == LANES or per_lane <= budget:
        expanded: set[int] = set()
        if mode == FIT:
            spare = budget - per_lane
            by_activity = sorted((l for _, lanes in groups for l in lanes), key=lambda l: (l.lane not in pin, -l.activity))
            for l in by_activity:
                if 0 < l.depths - 1 <= spare:
                    expanded.add(l.lane)
                    spare -= l.depths - 1
        out = []
        for tier, lanes in groups:
            out.append(PlannedRow(tier))
            for l in lanes:
                if l.lane in expanded:
                    out += [PlannedRow(tier, (l.lane,), d) for d in range(l.depths)]
                else:
                    out.append(PlannedRow(tier, (l.lane,), None))
        return out
    # compact: one row per tier to start with, then the busiest lanes get their own
    promoted: dict[int, set[int]] = {tier: set() for tier, _ in groups}
    used = len(groups)
    rank = {lane: k for k, lane in enumerate(pinned)}
    candidates = [(tier, l) for tier, lanes in groups for l in lanes if l.activity > 0 or l.lane in pin]
    candidates.sort(key=lambda tl: (rank.get(tl[1].lane, len(rank)), -tl[1].activity))
    size = {tier: len(lanes) for tier, lanes in groups}
    for tier, l in candidates:
        if len(promoted[tier]) >= size[tier] - 1:
            continue  # the tier's last lane is drawn as itself anyway
        if used >= budget and not (pinned and l.lane == pinned[0]):
            continue  # only the first pinned lane may push the rows past the pane
        promoted[tier].add(l.lane)
        used += 1
    out = []
    for tier, lanes in groups:
        rest = tuple(l.lane for l in lanes if l.lane not in promoted[tier])
        out += [PlannedRow(tier, (l.lane,), None) for l in lanes if l.lane in promoted[tier]]
        if rest:
            out.append(PlannedRow(tier, rest, None))
    return out
