"""The extras: mouse (click selects, wheel zooms/pans), `y` copies a name (OSC 52), `w` saves the filtered ops
table as CSV, and ops/events reachable from the command palette by name. At 80×24 and 200×55."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from textual import events

from trntui.analysis.timeline import format_ns

from .conftest import opened

SIZES = [(80, 24), (200, 55)]
NS68K = "cuda_ns_resolution_68k.json.gz"


@pytest.mark.parametrize("size", SIZES)
async def test_click_selects_and_wheel_zooms(corpus_dir, size):
    """A click on the timeline puts the cursor on that lane and cell; a double click opens the chain there;
    the wheel zooms around the mouse and shift+wheel pans; a double click on an ops row selects the op."""
    async with opened(corpus_dir / NS68K, size=size) as (app, pilot):
        timeline = app.timeline
        lane_row = next(k for k in range(timeline.first_row, timeline.first_row + timeline.visible_rows)
                        if timeline.display_rows[k].row is not None)
        gutter = timeline.styles.gutter  # the border: a top rule, and a left one on wide terminals
        y = gutter.top + 2 + lane_row - timeline.first_row  # ruler, status
        x = gutter.left + timeline.label_width + 1 + timeline.cells // 3
        await pilot.click(timeline, offset=(x, y))
        assert app.focused is timeline and timeline.cursor_row == lane_row
        assert timeline.cursor_col == timeline.cells // 3
        event = timeline.event_under_cursor()
        assert event >= 0
        await pilot.click(timeline, offset=(x, y), times=2)
        await pilot.pause()
        assert app.chain.event == event
        # wheel: zoom in around the time under the mouse, which stays under the mouse
        t_mouse = timeline.t0 + (timeline.cells // 3 + 0.5) * timeline.ns_per_cell
        before = timeline.ns_per_cell
        await pilot._post_mouse_events([events.MouseScrollUp], timeline, offset=(x, y))
        assert timeline.ns_per_cell < before
        assert abs(timeline.t0 + (timeline.cells // 3 + 0.5) * timeline.ns_per_cell - t_mouse) < 1
        t0 = timeline.t0
        await pilot._post_mouse_events([events.MouseScrollDown], timeline, offset=(x, y), shift=True)
        assert timeline.t0 > t0 and timeline.ns_per_cell < before
        # the ops table: double click selects a row
        await pilot.click(app.ops, offset=(2, 1 + 1 + 2), times=2)  # border, header, third row
        await pilot.pause()
        assert app.ops.cursor == 2 and app.ops.selected_row == int(app.ops.view[2])


@pytest.mark.parametrize("size", SIZES)
async def test_y_copies_names_and_w_saves_the_filtered_table(corpus_dir, size, tmp_path):
    """`y` copies the op / event / hop name under the cursor; `w` writes the rows the filter shows, in the
    order shown, with raw µs values, to the file named in its prompt."""
    async with opened(corpus_dir / NS68K, size=size) as (app, pilot):
        await pilot.press("y")
        assert app.clipboard == app.table.name[int(app.ops.view[0])]
        await pilot.press("slash", *"convolution", "enter")
        await pilot.pause()
        shown = [int(k) for k in app.ops.view]
        assert 1 < len(shown) < len(app.table)
        target = tmp_path / "ops.csv"
        await pilot.press("w")
        await pilot.pause()
        prompt = app.screen.query_one("#prompt-input")
        prompt.value = str(target)
        await pilot.press("enter")
        await pilot.pause()
        rows = list(csv.reader(io.StringIO(target.read_text(encoding="utf-8"))))
        assert rows[0][:3] == ["name", "device_type", "# Calls"]
        assert [r[0] for r in rows[1:]] == [app.table.name[k] for k in shown]
        total = rows[0].index(f"Self {app.table.backend}")
        assert [float(r[total]) for r in rows[1:]] == [round(float(app.table.self_device_time_total[k]), 3) for k in shown]
        # the timeline and chain copy what their cursor is on
        await pilot.press("enter")
        app.timeline.focus()
        await pilot.press("y")
        event = app.timeline.event_under_cursor()
        assert app.clipboard == app.profile.name_of(event)
        app.chain.focus()
        await pilot.press("j", "y")
        chain = app.chain
        hop = chain.line_events[chain.cursor_line]
        assert app.clipboard == app.profile.name_of(hop if hop >= 0 else chain.event)


@pytest.mark.parametrize("size", SIZES)
async def test_ops_and_events_in_the_command_palette(corpus_dir, size):
    """ctrl+p lists every op (`Op: name`, selecting it) and event name (`Event: name`, searching the timeline
    for exactly that name)."""
    async with opened(corpus_dir / NS68K, size=size) as (app, pilot):
        titles = [t for t, _, _ in app.palette_names()]
        assert "Op: aten::mm" in titles and "Event: cudaLaunchKernel" in titles
        await pilot.press("ctrl+p")
        app.post_message(events.Paste("Event: cudaLaunchKernel"))  # pasted: one search, not one per keystroke
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause()
        want = int(np.sum(app.profile.name == app.profile.name_id("cudaLaunchKernel")))
        assert f"/^cudaLaunchKernel$/: {want:,} matches" in str(app.timeline.border_title)
        assert app.profile.name_of(app.timeline.event_under_cursor()) == "cudaLaunchKernel"
        await pilot.press("ctrl+p")
        app.post_message(events.Paste("Op: aten::mm"))
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause()
        assert app.timeline.walking == "aten::mm"
        event = app.timeline.cursor_event
        assert app.profile.name_of(event) == "aten::mm"
        assert f"aten::mm · {format_ns(int(app.profile.end[event] - app.profile.start[event]))}" in app.timeline.render_line(1).text
