"""The screens a `Timeline` asks for, opened by the app (messages up: the widget imports no screen).

`TimelineRequests` is mixed into each app that shows a timeline (the explorer, the compare app): `i` opens the
instance list, `/` the search prompt, `t` the call tree; what the user picks there goes back to the timeline
that asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trntui.tui.widgets.timeline import Timeline


class TimelineRequests:
    """App handlers for `Timeline.InstancesRequested`, `SearchRequested` and `CallTreeRequested`."""

    push_screen: Any

    def on_timeline_instances_requested(self, message: "Timeline.InstancesRequested") -> None:
        from trntui.tui.screens.instances import InstancesScreen

        timeline = message.timeline

        def chosen(event: int | None) -> None:
            if event is not None:
                timeline.zoom_to_event(event)

        self.push_screen(InstancesScreen(timeline.profile, message.events, timeline.origin, message.what), chosen)

    def on_timeline_search_requested(self, message: "Timeline.SearchRequested") -> None:
        from trntui.analysis.timeline import count_matches
        from trntui.tui.screens.search import SearchPrompt

        timeline = message.timeline
        profile = timeline.profile
        self.push_screen(SearchPrompt(timeline.search_pattern, lambda p: count_matches(profile, p)), timeline.searched)

    def on_timeline_call_tree_requested(self, message: "Timeline.CallTreeRequested") -> None:
        from trntui.tui.screens.calltree import CallTreeScreen

        timeline = message.timeline

        def chosen(events: list[int] | None) -> None:
            if events:
                timeline.show_events(events)

        self.push_screen(CallTreeScreen(timeline.profile, message.step, message.event), chosen)
