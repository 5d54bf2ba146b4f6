"""The timeline's idle gaps (a mixin of `Timeline`, trntui/tui/widgets/timeline.py): `{`/`}` walk the gaps between
hardware executions of the cursor's hardware lane (or all), `>` the largest first; the status line's gap text."""

from __future__ import annotations


import numpy as np

from trntui.analysis.timeline import format_ns, idle_gaps
from trntui.model.profile import Tier
from trntui.textsafe import safe_text

class TimelineGaps:
    """Idle-gap navigation (see the module docstring)."""

    def _hardware(self, lanes: tuple[int, ...]) -> bool:
        return bool(lanes) and all(self.profile.lanes[l].tier == Tier.HARDWARE for l in lanes)

    def _gap_scope(self) -> tuple[int, ...] | None:
        """The hardware lanes gap keys look at: those of the gap the cursor is on, else the cursor row's when it
        is a hardware row, else all of them."""
        if self.gap is not None and self._current_gap(self.gap[0]) >= 0:
            return self.gap[0]
        item = self.display_rows[self.cursor_row] if self.display_rows else None
        if item is not None and self._hardware(item.lanes):
            return tuple(sorted(item.lanes))
        return None

    def _current_gap(self, scope: tuple[int, ...] | None) -> int:
        """Index of the gap (of `scope`) the cursor is on, or -1."""
        if self.gap is None or self.gap[0] != scope:
            return -1
        gaps = idle_gaps(self.profile, scope)
        k = self.gap[1]
        t = self._abs(self.cursor_t)
        return k if k < len(gaps) and gaps.starts[k] <= t < gaps.ends[k] else -1

    def _gaps_or_warn(self, scope: tuple[int, ...] | None):
        if self.profile is None:
            return None
        gaps = idle_gaps(self.profile, scope)
        if len(gaps) == 0:
            has_hw = any(l.tier == Tier.HARDWARE for l in self.profile.lanes)
            self.notify("no idle gap between hardware executions" if has_hw else "no hardware lanes in this profile",
                        severity="warning")
            return None
        return gaps

    def action_gap(self, direction: int) -> None:
        """Go to the next (previous) idle gap of the cursor's hardware lane(s), or of all hardware lanes."""
        scope = self._gap_scope()
        gaps = self._gaps_or_warn(scope)
        if gaps is None:
            return
        k = self._current_gap(scope)
        t = self._abs(self.cursor_t)
        if k >= 0:
            k += direction
        elif direction > 0:
            k = int(np.searchsorted(gaps.starts, t, side="right"))
        else:
            k = int(np.searchsorted(gaps.ends, t, side="left")) - 1
        if not 0 <= k < len(gaps):
            self.notify("no more idle gaps that way", severity="information")
            return
        self.show_gap(scope, k)
        self._ranked_gap = False

    def action_largest_gap(self) -> None:
        """Go to the largest idle gap; pressed again on it, to the next largest, and so on."""
        scope = self._gap_scope()
        gaps = self._gaps_or_warn(scope)
        if gaps is None:
            return
        ranked = gaps.ranked()
        k = self._current_gap(scope) if self._ranked_gap else -1
        r = int(np.nonzero(ranked == k)[0][0]) + 1 if k >= 0 else 0
        self.show_gap(scope, int(ranked[r % len(ranked)]))
        self._ranked_gap = True

    def show_gap(self, scope: tuple[int, ...] | None, k: int) -> None:
        """Zoom to gap `k` of `scope` with the executions on both sides in view, cursor in the gap."""
        gaps = idle_gaps(self.profile, scope)
        a, b = int(gaps.starts[k]), int(gaps.ends[k])
        if scope is None:  # all hardware lanes: the cursor goes to the lane that runs next
            lane = int(self.profile.lane[gaps.after[k]])
            row = self._row_of_lane(lane)
            if not self._hardware(self.display_rows[row].lanes if self.display_rows else ()):
                self.pinned = tuple(dict.fromkeys((lane, *self.pinned)))[:4]
                self._build_display(lane)
                row = self._row_of_lane(lane)
            self.cursor_row = row
        self.zoom_to_span(a, b)
        self.gap = (scope, k)
        self.cursor_event = -1
        self.cursor_t = (a + b) / 2 - self.origin
        self._scroll_to_cursor()
        self._changed()

    def _gap_status(self) -> str:
        """The status line for the gap under the cursor, or ""."""
        scope = self.gap[0] if self.gap is not None else None
        k = self._current_gap(scope) if self.gap is not None else -1
        if k < 0:
            return ""
        gaps = idle_gaps(self.profile, scope)
        rank = int(np.nonzero(gaps.ranked() == k)[0][0]) + 1
        p = self.profile
        where = "all hardware lanes" if scope is None else (
            safe_text(p.lanes[scope[0]].label) if len(scope) == 1 else f"{len(scope)} hardware lanes")
        return (
            f"▸ idle {format_ns(int(gaps.ends[k] - gaps.starts[k]))} · gap {k + 1:,}/{len(gaps):,}"
            f" (#{rank:,} largest) · after {safe_text(p.name_of(int(gaps.before[k])))}"
            f" · before {safe_text(p.name_of(int(gaps.after[k])))} · {where}"
        )
