"""Timeline occupancy: per (lane, sub-row) interval indexes and per-cell busy fractions (pure numpy).

The TUI draws one text row per (lane, nesting depth) and one character per time cell. Each row keeps its
events sorted by start plus the union of their intervals with a running sum of busy time, so the busy time of
any cell is two binary searches: a frame costs O(rows × cells × log n) whatever the number of events.

The package by job (every public name is importable from `trntui.analysis.timeline`, `format_ns` too):

- `rows`: the rows (`Intervals`, `TimelineRow`) built once per profile, their arrays for the cache;
- `plan`: which rows fit the height (`lane_groups`, `plan_rows`);
- `cells`: a row drawn into cells (busy fractions, shades, highlights, names inside bars);
- `axis`: the span to fit, cell boundaries, the ruler and the time labels;
- `navigate`: name search, the event under a cell, next/previous event, idle gaps.
"""

from __future__ import annotations

from trntui.analysis.timeline.axis import (
    cell_bounds,
    display_span,
    format_absolute,
    format_offset,
    nice_steps,
    ruler_marks,
)
from trntui.analysis.timeline.cells import (
    GLYPHS,
    LABEL_MIN_CELLS,
    bar_labels,
    busy_fraction,
    busy_fractions,
    row_cells,
    selected_intervals,
    shade,
)
from trntui.analysis.timeline.navigate import (
    IdleGaps,
    count_matches,
    event_at,
    event_span,
    idle_gaps,
    matching_names,
    next_event,
    search_events,
)
from trntui.analysis.timeline.plan import ALL, FIT, LANES, LaneInfo, PlannedRow, depths_ready, lane_groups, plan_rows
from trntui.analysis.timeline.rows import (
    Intervals,
    TimelineRow,
    build_rows,
    display_lanes,
    merged_row,
    rows_from_arrays,
    rows_to_arrays,
)
from trntui.units import format_ns  # (imported from here by the app)

__all__ = [
    "cell_bounds", "display_span", "format_absolute", "format_offset", "nice_steps", "ruler_marks", "GLYPHS",
    "LABEL_MIN_CELLS", "bar_labels", "busy_fraction", "busy_fractions", "row_cells", "selected_intervals", "shade",
    "IdleGaps", "count_matches", "event_at", "event_span", "idle_gaps", "matching_names", "next_event",
    "search_events", "ALL", "FIT", "LANES", "LaneInfo", "PlannedRow", "depths_ready", "lane_groups", "plan_rows",
    "Intervals", "TimelineRow", "build_rows", "display_lanes", "merged_row", "rows_from_arrays", "rows_to_arrays",
    "format_ns",
]
