"""Reading the timeline without pressing keys: names inside bars, every tier on the first screen, one clock.

Each behaviour is checked on rendered lines at 80×24 and at 200×55.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from trntui.analysis.timeline import format_ns, format_offset
from trntui.model.profile import Tier
from trntui.tui.capture import screen_text

from .conftest import opened

SIZES = [(80, 24), (200, 55)]
SCIENTIFIC = re.compile(r"\d[eE][+-]?\d")


def timeline_lines(timeline) -> list[str]:
    return [timeline.render_line(y).text for y in range(timeline.size.height)]


def drawn_rows(timeline) -> list[int]:
    """Display rows inside the pane's visible area."""
    return list(range(timeline.first_row, min(timeline.first_row + timeline.visible_rows, len(timeline.display_rows))))


@pytest.mark.parametrize("size", SIZES)
async def test_names_inside_bars_in_every_tier(corpus_dir, size):
    """Zoomed so the longest event of a lane spans a good part of the pane, its name is drawn inside its bar,
    in every tier (framework, framework device, runtime, hardware); at fit-all the steps are named."""
    async with opened(corpus_dir / "cuda_ns_resolution_68k.json.gz", size=size) as (app, pilot):
        await pilot.press("tab", "z")
        await pilot.pause()
        timeline, profile = app.timeline, app.profile
        assert any(re.search(r"ProfilerStep#\d+", line) for line in timeline_lines(timeline))
        tiers_seen = set()
        for k, item in enumerate(timeline.display_rows):
            if item.row is None or item.is_summary:
                continue
            row = item.row
            longest = int(row.events[np.argmax(row.ends - row.starts)])
            s, e = int(profile.start[longest]), int(profile.end[longest])
            if e == s:
                continue  # a lane of instants (trace-window markers): nothing to write a name in
            timeline.set_window(s - (e - s) // 4, (e - s) * 1.5 / timeline.cells)
            timeline.cursor_row = k
            timeline._scroll_to_cursor()
            await pilot.pause()
            y = k - timeline.first_row + 2
            line = timeline.render_line(y).text
            name = profile.name_of(longest)
            shown = name if len(name) <= 12 else name[:10]
            assert shown in line, (name, line)
            tiers_seen.add(profile.lanes[row.lane].tier)
        assert tiers_seen == {Tier.DISPATCH, Tier.DEVICE, Tier.RUNTIME, Tier.HARDWARE}


@pytest.mark.parametrize("size", SIZES)
async def test_first_screen_shows_every_tier(corpus_dir, size):
    """On a DDP/NCCL CUDA trace the first screen draws a row for every tier that has events, the GPU streams
    included, and no row is below the pane."""
    async with opened(corpus_dir / "cuda_sampled_rank0.json.gz", size=size) as (app, pilot):
        timeline, profile = app.timeline, app.profile
        tiers_with_events = {profile.lanes[int(l)].tier for l in np.unique(profile.lane)}
        assert Tier.HARDWARE in tiers_with_events
        shown = {profile.lanes[lane].tier for k in drawn_rows(timeline) for lane in timeline.display_rows[k].lanes}
        assert shown == tiers_with_events
        screen = screen_text(app)
        assert "── hardware" in screen or re.search(r"(^|\s)hw ", screen), screen
        assert "Stream:" in screen
        # every drawn row is inside the pane: the last drawn row is the pane's last line at most
        assert len(drawn_rows(timeline)) + 2 <= timeline.size.height


@pytest.mark.parametrize("size", SIZES)
async def test_jump_to_a_hop_scrolls_its_lane_into_view(corpus_dir, size):
    """Enter on the kernel hop of an op's chain puts the timeline cursor on the kernel's own lane row, drawn."""
    async with opened(corpus_dir / "cuda_sampled_rank0.json.gz", size=size) as (app, pilot):
        await pilot.press("enter")  # top op by device time
        await pilot.pause()
        chain = app.chain
        hop = next(k for k, e in enumerate(chain.line_events) if e >= 0 and app.profile.lane_of(e).tier == Tier.HARDWARE)
        chain.focus()
        chain.cursor_line = hop
        await pilot.press("enter")
        await pilot.pause()
        timeline = app.timeline
        event = chain.line_events[hop]
        item = timeline.display_rows[timeline.cursor_row]
        assert item.lanes == (int(app.profile.lane[event]),)  # its own row, not a summary
        assert timeline.first_row <= timeline.cursor_row < timeline.first_row + timeline.visible_rows
        y = timeline.cursor_row - timeline.first_row + 2
        assert y < timeline.size.height and timeline.render_line(y).text.startswith("▸")
        assert app.profile.name_of(event)[:12] in timeline.render_line(1).text


@pytest.mark.parametrize("size", SIZES)
async def test_one_relative_clock_without_scientific_notation(corpus_dir, size):
    """Ruler marks, pane title and status line are offsets from the trace start in one auto-scaled unit per
    ruler, at every zoom (fit-all of a 43 s trace down to 1 ns per cell); `A` shows absolute time."""
    async with opened(corpus_dir / "cuda_alexnet.json.gz", size=size) as (app, pilot):
        await pilot.press("tab")
        timeline = app.timeline
        for presses in (0, 4, 12, 40):
            await pilot.press(*(["plus"] * presses))
            await pilot.pause()
            ruler, status = timeline.render_line(0).text, timeline.render_line(1).text
            title = str(timeline.border_title)
            marks = re.findall(r"[|▼]([+-][\d.]+)(ns|µs|ms|s)\b", ruler)
            assert len(marks) >= 2, ruler
            assert len({unit for _, unit in marks}) == 1, ruler  # one unit per ruler
            values = [float(v) for v, _ in marks]
            assert values == sorted(values)
            for text in (ruler, status, title, screen_text(app)):
                assert not SCIENTIFIC.search(text), text
            assert re.match(r"Timeline · [+-][\d.]+(ns|µs|ms|s) … [+-][\d.]+(ns|µs|ms|s) · ", title)
        await pilot.press("A")
        assert "UTC" in timeline.render_line(1).text
        await pilot.press("A")
        assert "UTC" not in timeline.render_line(1).text


def test_time_formats_scale_without_scientific_notation():
    """Durations and offsets from 1 ns to 10^6 s: auto-scaled units, never `e+05`."""
    for exponent in range(0, 16):
        for mantissa in (1, 2.5, 7.71):
            ns = mantissa * 10**exponent
            for text in (format_ns(ns), format_offset(ns), format_offset(-ns), format_offset(ns, 1.0, ns)):
                assert not SCIENTIFIC.search(text), text
                assert re.fullmatch(r"[+-]?\d+(\.\d+)?(ns|µs|ms|s)", text), text
    assert format_ns(771e12) == "771000s"
    assert format_offset(3_368_811_500, resolution=500) == "+3.3688115s"
