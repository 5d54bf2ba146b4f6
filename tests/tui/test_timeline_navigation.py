"""Getting to what matters on the timeline: zoom to the selection, search, instances, idle gaps.

Each behaviour is checked on rendered lines at 80×24 and at 200×55; expected values are computed here from the
profile's own columns, not taken from the code under test.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from trntui.analysis.timeline import format_ns
from trntui.model.profile import Tier
from trntui.report import format_time

from .conftest import opened

SIZES = [(80, 24), (200, 55)]
NS68K = "cuda_ns_resolution_68k.json.gz"
NCCL = "cuda_sampled_rank0.json.gz"


def status(app) -> str:
    return app.timeline.render_line(1).text


def cursor_line(app) -> str:
    timeline = app.timeline
    return timeline.render_line(timeline.cursor_row - timeline.first_row + 2).text


async def filter_ops(pilot, pattern: str) -> None:
    await pilot.press("slash", *pattern, "enter")
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES)
async def test_enter_on_op_zooms_to_its_first_instance(corpus_dir, size):
    """Enter on the top op (a 30 ms NCCL kernel in a 1.2 s trace) zooms the timeline so the instance fills most
    of the pane, named in its bar; `f` does the same for the event under the timeline cursor."""
    async with opened(corpus_dir / NCCL, size=size) as (app, pilot):
        profile, timeline = app.profile, app.timeline
        await pilot.press("enter")
        await pilot.pause()
        events = np.asarray(app.table.rows_events[int(app.ops.view[0])])
        first = int(events[np.argmin(profile.start[events])])
        assert timeline.cursor_event == first
        a, b = timeline.window
        share = (profile.end[first] - profile.start[first]) / (b - a)
        assert 0.5 <= share <= 0.8, share
        assert profile.name_of(first)[:10] in cursor_line(app)
        # `f` on another event: fit it (and what it launched) with context
        await pilot.press("tab", "0")
        assert timeline.window[1] - timeline.window[0] > 1e9
        await pilot.press("right_square_bracket")
        event = timeline.event_under_cursor()
        assert event >= 0
        await pilot.press("f")
        a, b = timeline.window
        assert a <= profile.start[event] - timeline.origin and profile.end[event] - timeline.origin <= b
        assert (profile.end[event] - profile.start[event]) / (b - a) >= 0.3
        assert timeline.event_under_cursor() == event


@pytest.mark.parametrize("size", SIZES)
async def test_search_next_and_previous(corpus_dir, size):
    """`/` + a regex finds events by name: the title counts the matches, the cursor goes to the first one,
    `n`/`N` walk them in time order with "k/N" in the status line."""
    async with opened(corpus_dir / NS68K, size=size) as (app, pilot):
        profile, timeline = app.profile, app.timeline
        want = np.array([bool(re.search("cudnn_convolution$", n, re.I)) for n in profile.names])[profile.name]
        total = int(want.sum())
        assert total > 10
        await pilot.press("tab", "home", "slash", *"cudnn_convolution$", "enter")
        await pilot.pause()
        assert f"/cudnn_convolution$/: {total:,} matches" in str(timeline.border_title)
        first = timeline.event_under_cursor()
        assert want[first] and profile.start[first] == profile.start[want].min()
        assert f"aten::cudnn_convolution · " in status(app) and f" 1/{total:,} " in status(app)
        await pilot.press("n")
        second = timeline.event_under_cursor()
        assert want[second] and profile.start[second] >= profile.start[first] and second != first
        assert f" 2/{total:,} " in status(app)
        await pilot.press("N", "N")
        assert f" {total:,}/{total:,} " in status(app)  # wraps around to the last match


@pytest.mark.parametrize("size", SIZES)
async def test_longest_instance_and_instance_list(corpus_dir, size):
    """`L` on an op jumps to its longest instance (out of 1,600 aten::mm calls: not n × 1,600); `i` lists
    them longest first; `m` adds Min / Avg / Max columns that match the instances' durations."""
    async with opened(corpus_dir / NS68K, size=size) as (app, pilot):
        profile = app.profile
        await filter_ops(pilot, "^aten::mm$")
        row = int(app.ops.view[0])
        assert app.table.name[row] == "aten::mm"
        events = np.asarray(app.table.rows_events[row])
        dur = profile.end[events] - profile.start[events]
        longest = int(events[np.argmax(dur)])
        await pilot.press("L")
        await pilot.pause()
        assert app.timeline.cursor_event == longest
        assert f"aten::mm · {format_ns(int(dur.max()))} · " in status(app)
        assert app.chain.event == longest
        # again: the next longest
        app.timeline.focus()
        await pilot.press("L")
        second = int(events[np.argsort(-dur, kind="stable")[1]])
        assert app.timeline.cursor_event == second
        # the instance list, longest first; Enter shows the chosen one
        app.ops.focus()
        await pilot.press("i")
        await pilot.pause()
        listing = app.screen.query_one("#instances")
        assert listing.row_text(0).split()[1] == format_ns(int(dur.max()))
        assert [int(e) for e in listing.events] == [int(e) for e in events[np.lexsort((profile.start[events], -dur))]]
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.timeline.cursor_event == int(listing.events[1])
        # Min / Avg / Max columns
        app.ops.focus()
        await pilot.press("m")
        header = app.ops.render_line(0).text
        assert re.search(r"Min +Avg +Max", header)
        line = app.ops.render_line(1).text
        for value in (dur.min(), dur.mean(), dur.max()):
            assert format_time(value / 1000.0) in line
        await pilot.press("m")
        assert "Min" not in app.ops.render_line(0).text


def union_gaps(profile) -> list[tuple[int, int]]:
    """Idle gaps between hardware executions, computed here by a plain sort-and-sweep."""
    hw = [l.id for l in profile.lanes if l.tier == Tier.HARDWARE]
    mask = np.isin(profile.lane, hw) & (profile.end > profile.start)
    spans = sorted(zip(profile.start[mask].tolist(), profile.end[mask].tolist()))
    gaps, end = [], spans[0][1]
    for s, e in spans[1:]:
        if s > end:
            gaps.append((end, s))
        end = max(end, e)
    return gaps


@pytest.mark.parametrize("size", SIZES)
async def test_next_and_largest_idle_gap(corpus_dir, size):
    """`}` goes to the next moment no GPU stream runs anything, `>` to the largest such gap (`>` again: the
    next largest); the status line says how long the device sat idle; hardware labels show busy %."""
    async with opened(corpus_dir / NCCL, size=size) as (app, pilot):
        profile, timeline = app.profile, app.timeline
        gaps = union_gaps(profile)
        await pilot.press("tab", "home")
        t = timeline.origin + timeline.cursor_t
        nxt = next(g for g in gaps if g[0] > t)
        await pilot.press("right_curly_bracket")
        assert f"▸ idle {format_ns(nxt[1] - nxt[0])} · gap 1/{len(gaps):,} " in status(app)
        assert timeline.window[0] <= nxt[0] - timeline.origin and nxt[1] - timeline.origin <= timeline.window[1]
        await pilot.press("right_curly_bracket")
        assert f" · gap 2/{len(gaps):,} " in status(app)
        by_size = sorted(gaps, key=lambda g: (-(g[1] - g[0]), g[0]))
        await pilot.press("greater_than_sign")
        assert f"▸ idle {format_ns(by_size[0][1] - by_size[0][0])} · " in status(app) and "(#1 largest)" in status(app)
        await pilot.press("greater_than_sign")
        assert f"▸ idle {format_ns(by_size[1][1] - by_size[1][0])} · " in status(app) and "(#2 largest)" in status(app)
        await pilot.press("left_curly_bracket")
        assert "▸ idle " in status(app)
        # busy % of the hardware rows over the visible window
        await pilot.press("0")
        hw_rows = [k for k in range(timeline.first_row, timeline.first_row + timeline.visible_rows)
                   if k < len(timeline.display_rows) and timeline.display_rows[k].row is not None
                   and all(profile.lanes[l].tier == Tier.HARDWARE for l in timeline.display_rows[k].lanes)]
        assert hw_rows
        for k in hw_rows:
            assert re.search(r" (<1|\d+)% ", timeline.render_line(k - timeline.first_row + 2).text)


async def test_search_matches_listed_in_time_order(corpus_dir):
    """After `/`, `i` lists every match (issue 26 item 10: there was only n/N) in time order with its name,
    start and lane; `o` orders them longest first and back; Enter shows the chosen match on the timeline."""
    from trntui.analysis.timeline import format_offset
    from trntui.tui.screens.instances import InstancesScreen

    async with opened(corpus_dir / NS68K, size=(120, 30)) as (app, pilot):
        profile, timeline = app.profile, app.timeline
        want = np.nonzero(np.array([bool(re.search("conv", n, re.I)) for n in profile.names])[profile.name])[0]
        assert len({profile.name_of(int(e)) for e in want}) > 1  # matches of several names
        await pilot.press("tab", "home", "slash", *"conv", "enter")
        await pilot.pause()
        assert any("i: list them all" in str(n.message) for n in app._notifications)
        await pilot.press("i")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, InstancesScreen)
        title = str(screen.query_one("#instances-title").render())
        assert f"/conv/: {len(want):,} matches, in time order" in title and "o: order" in title
        listed = screen.list
        starts = profile.start[listed.events]
        assert sorted(listed.events.tolist()) == sorted(want.tolist()) and (np.diff(starts) >= 0).all()
        third = int(listed.events[2])
        line = listed.render_line(3).text
        assert profile.name_of(third)[:20] in line and profile.lane_of(third).label[:20] in line
        assert format_offset(int(profile.start[third]) - timeline.origin) in line
        await pilot.press("o")
        dur = profile.end[listed.events] - profile.start[listed.events]
        assert (np.diff(dur) <= 0).all() and "longest first" in str(screen.query_one("#instances-title").render())
        await pilot.press("o")
        await pilot.press("down", "down", "enter")
        await pilot.pause()
        assert app.screen is not screen and timeline.event_under_cursor() == third


async def test_select_a_time_range_and_zoom_to_it(corpus_dir):
    """A time range (issue 26 item 10): `x` marks one end at the cursor, the status line shows the range as the
    cursor moves, `x` again zooms to it; a drag on the ruler zooms to the dragged range."""
    async with opened(corpus_dir / NS68K, size=(120, 30)) as (app, pilot):
        timeline = app.timeline
        await pilot.press("tab")
        assert app.focused is timeline
        await pilot.press("x")
        start = timeline.cursor_t
        await pilot.press(*["full_stop"] * 10)
        end = timeline.cursor_t
        assert end > start
        status = timeline.render_line(1).text
        assert status.startswith("▸ range ") and "x: zoom to it" in status
        await pilot.press("x")
        a, b = timeline.window
        cell = timeline.ns_per_cell
        assert abs(a - start) <= cell and abs(b - end) <= 2 * cell and cell < (end - start) / 50
        assert not timeline.render_line(1).text.startswith("▸ range ")
        # the mouse: press on the ruler at one column, release at another
        await pilot.press("0")
        full = timeline.window
        dx = timeline.content_region.x - timeline.region.x
        dy = timeline.content_region.y - timeline.region.y  # the ruler: the first content line
        x0 = dx + timeline.label_width + 1  # the labels, the separator
        t_at = lambda col: timeline.t0 + col * timeline.ns_per_cell
        want = (t_at(10), t_at(41))
        await pilot.mouse_down(timeline, offset=(x0 + 10, dy))
        await pilot.mouse_up(timeline, offset=(x0 + 40, dy))
        await pilot.pause()
        a, b = timeline.window
        assert (a, b) != full and abs(a - want[0]) <= timeline.ns_per_cell and abs(b - want[1]) <= 2 * timeline.ns_per_cell


async def test_lanes_are_packed_again_on_resize(corpus_dir):
    """Enlarging the terminal packs the lanes again at once, without a key (issue 26 item 10): lanes summarised
    in `+N lanes` rows at 80×24 get their own rows at 200×60, and come back together at 80×24."""
    async with opened(corpus_dir / NS68K, size=(80, 24)) as (app, pilot):
        timeline = app.timeline
        small = [d.title for d in timeline.display_rows]
        assert any(t.startswith("+") and t.endswith(" lanes") for t in small), small
        await pilot.resize_terminal(200, 60)
        await pilot.pause()
        await pilot.pause()
        big = [d.title for d in timeline.display_rows]
        assert len(big) > len(small) and not any(t.endswith(" lanes") for t in big), big
        drawn = [timeline.render_line(y).text for y in range(timeline.size.height)]
        assert sum(1 for line in drawn if line.strip()) >= len(big)
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        await pilot.pause()
        assert [d.title for d in timeline.display_rows] == small
