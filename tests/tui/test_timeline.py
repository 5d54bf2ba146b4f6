"""The timeline pane: lanes grouped by tier, busy cells for a known window, pan/zoom/step keys, Enter → chain."""

from __future__ import annotations

import numpy as np

from trntui.analysis.timeline import build_rows

from .conftest import opened

ADD_OP = 33
"""Event index of the first `aten::add` in cuda_simple_add.json.gz."""

WINDOW = [
    "50µs/cell                         |+19.642s       ▼   |+19.643s",
    "▸ [param|cuda] · 19.8s · start +0ns · PID:563677/framework/TID:563677",
    "── framework dispatch ──────────────────────────────────────────────────────────",
    "▸…amework/TID:563677 [param|cuda]███████████████████████████████████████████████",
    "                  +1 [param|torch.add|0|0|0]████████████████████████████████████",
    "                  +2 [param|torch.add|0|0|0|warmup|forward]█████████████████████",
    "                  +3 [param|torch.add|0|0|0|warmup|forward]█████████████████████",
    "markers",
    "markers/Traces",
    "markers/Spans        PyTorch Profiler (0)███████████████████████████████████████",
    "── runtime ─────────────────────────────────────────────────────────────────────",
    "…/runtime/TID:563677 ░   ▓░▒cudaDeviceSynchronize█████████████████████████▓",
    "── hardware ────────────────────────────────────────────────────────────────────",
    "…device/Stream:7 <1%                                                      ░",
]
"""Maximized at 80×24: every lane and sub-row fits, so tier headings and full labels; names inside the bars."""


def lines(widget, count: int) -> list[str]:
    return [widget.render_line(y).text.rstrip() for y in range(count)]


async def focus_timeline_maximized(app, pilot) -> None:
    await pilot.press("tab")
    assert app.focused is app.timeline
    await pilot.press("z")
    await pilot.pause()


async def test_known_window_rows(corpus_dir):
    """A fixed window of a CUDA trace: ruler, tier headings, Explorer-style labels, shaded busy cells."""
    async with opened(corpus_dir / "cuda_simple_add.json.gz") as (app, pilot):
        await focus_timeline_maximized(app, pilot)
        timeline = app.timeline
        timeline.set_window(int(app.profile.start[ADD_OP]) - 100_000, 50_000)
        await pilot.pause()
        assert lines(timeline, len(WINDOW)) == WINDOW
        assert str(timeline.border_title) == "Timeline · +19.64132s … +19.64427s · 50µs/cell"


async def test_selected_op_instances_are_highlighted(corpus_dir):
    """After Enter on `aten::add` in the ops table, the cells of its kernel are drawn in the selection style."""
    async with opened(corpus_dir / "cuda_simple_add.json.gz") as (app, pilot):
        await pilot.press("down", "down", "enter", "tab", "d", "d")  # every lane and sub-row
        await pilot.pause()
        timeline = app.timeline
        timeline.set_window(int(app.profile.start[ADD_OP]) - 100_000, 50_000)
        kernel_row = next(k for k, d in enumerate(timeline.display_rows) if d.title == "PID:0/device/Stream:7")
        strip = timeline._render_row(kernel_row, 80, False)
        selected = timeline.get_component_rich_style("timeline--selected")
        busy_segments = [seg for seg in list(strip)[2:] if seg.text.strip(" ")]
        assert busy_segments and all(seg.style.bold and seg.style.color == selected.color for seg in busy_segments)
        # a lane with no instance of the op keeps the plain busy style
        markers_row = next(k for k, d in enumerate(timeline.display_rows) if d.title.endswith("markers/Spans"))
        plain = [seg for seg in list(timeline._render_row(markers_row, 80, False))[2:] if "█" in seg.text]
        assert plain and not any(seg.style.bold for seg in plain)


async def test_pan_zoom_fit_keys(corpus_dir):
    """`+`/`-` zoom around the cursor, `h`/`l` pan by an eighth of the window, `0` fits everything."""
    async with opened(corpus_dir / "cuda_alexnet.json.gz") as (app, pilot):
        await pilot.press("tab")
        timeline = app.timeline
        fitted = (timeline.t0, timeline.ns_per_cell)
        col = timeline.cursor_col
        await pilot.press("plus")
        assert timeline.ns_per_cell == fitted[1] / 2
        assert timeline.cursor_col == col
        await pilot.press("plus", "plus", "minus")
        assert timeline.ns_per_cell == fitted[1] / 4
        t0 = timeline.t0
        await pilot.press("l")
        assert timeline.t0 == t0 + (timeline.cells // 8) * timeline.ns_per_cell
        await pilot.press("h", "left")
        assert timeline.t0 == t0 - (timeline.cells // 8) * timeline.ns_per_cell
        await pilot.press("0")
        assert (timeline.t0, timeline.ns_per_cell) == fitted
        assert str(timeline.border_title).startswith("Timeline · +0.0s … +43.4s")
        # g / G (home / end) jump to the trace's start and end at the current zoom
        await pilot.press("plus", "plus", "plus", "G")
        first, last = timeline.window
        assert timeline.cursor_col >= 0 and last >= timeline.cursor_t > first
        assert timeline.cursor_t >= fitted[1] * timeline.cells * 0.9  # near the end of the 43 s trace
        await pilot.press("home")
        assert timeline.cursor_t == 0.0 and timeline.window[0] <= 0.0


async def test_next_instance_and_next_event(corpus_dir):
    """`n`/`N` walk the selected op's instances; `]`/`[` step through the events of the cursor lane."""
    async with opened(corpus_dir / "cuda_simple_add.json.gz") as (app, pilot):
        await pilot.press("down", "down", "enter", "tab")
        timeline = app.timeline
        first, second = (int(e) for e in timeline.instances)
        assert timeline.event_under_cursor() == first
        await pilot.press("n")
        assert timeline.event_under_cursor() == second
        assert "aten::add" in timeline.render_line(1).text
        await pilot.press("n")
        assert timeline.event_under_cursor() == first  # wraps around
        await pilot.press("N")
        assert timeline.event_under_cursor() == second
        profile = app.profile
        await pilot.press("left_square_bracket")
        before = timeline.event_under_cursor()
        assert profile.lane[before] == profile.lane[second]
        assert profile.start[before] <= profile.start[second] and before != second
        assert profile.name_of(before) in timeline.render_line(1).text
        await pilot.press("right_square_bracket")
        assert timeline.event_under_cursor() == second
        await pilot.press("right_square_bracket")  # the last event of its sub-row: stays
        assert timeline.event_under_cursor() == second


async def test_enter_on_kernel_opens_its_chain(corpus_dir):
    """Enter on a hardware event shows the chain of the op that launched it."""
    async with opened(corpus_dir / "cuda_simple_add.json.gz") as (app, pilot):
        await pilot.press("tab")
        profile = app.profile
        kernel = int(np.nonzero([profile.name_of(i).startswith("void at::native::vectorized") for i in range(len(profile))])[0][0])
        app.timeline.go_to_event(kernel)
        await pilot.press("j", "k")  # lane moves keep working around the kernel row
        app.timeline.go_to_event(kernel)
        await pilot.press("enter")
        await pilot.pause()
        assert app.chain.event == kernel
        assert app.chain.chain.root == ADD_OP
        assert app.chain.text_lines[1].startswith("aten::add")


async def test_cpu_capture_lanes(cpu_profile_dir):
    """A CPU capture: framework dispatch lanes only, labelled instance/PID/framework/TID like Explorer."""
    run = "naive" if cpu_profile_dir.is_dir() else None
    async with opened(cpu_profile_dir, size=(100, 30), run=run) as (app, pilot):
        timeline = app.timeline
        titles = [d.title for d in timeline.display_rows]
        assert titles[0] == "framework dispatch"
        assert "runtime" not in titles and "hardware" not in titles
        assert any("/framework/TID:" in t for t in titles)
        text = "\n".join(lines(timeline, timeline.size.height))
        assert "── framework dispatch ──" in text
        assert "█" in text


async def test_subrows_toggle(corpus_dir):
    """`d` cycles the rows: fitted to the pane → one row per lane → one row per lane and depth → fitted."""
    async with opened(corpus_dir / "cuda_simple_add.json.gz") as (app, pilot):
        await pilot.press("down", "down", "enter", "tab")
        timeline = app.timeline
        event = timeline.event_under_cursor()
        fitted = [d.title for d in timeline.display_rows]
        assert len(fitted) <= timeline.visible_rows
        lanes = {lane for d in timeline.display_rows for lane in d.lanes}
        assert lanes == {r.lane for r in build_rows(app.profile, 1)}  # every lane is drawn, some shared
        await pilot.press("d")
        merged = [d.title for d in timeline.display_rows]
        assert "framework dispatch" in merged and "+1" not in merged
        assert len({d.row.lane for d in timeline.display_rows if d.row is not None}) == len(
            [d for d in timeline.display_rows if d.row is not None]
        )
        assert timeline.event_under_cursor() == event
        await pilot.press("n")
        assert app.profile.name_of(timeline.event_under_cursor()) == "aten::add"
        await pilot.press("d")
        expanded = [d.title for d in timeline.display_rows]
        assert "+1" in expanded and len(expanded) > len(merged)
        await pilot.press("d")
        assert [d.title for d in timeline.display_rows] == fitted


async def test_lane_paging(corpus_dir):
    """PgDn/PgUp move the lane cursor a page at a time and scroll the rows with it."""
    async with opened(corpus_dir / "cuda_ns_resolution_68k.json.gz") as (app, pilot):
        await pilot.press("tab")
        timeline = app.timeline
        start = timeline.cursor_row
        await pilot.press("pagedown", "pagedown", "pagedown")
        assert timeline.cursor_row > start
        assert timeline.first_row <= timeline.cursor_row < timeline.first_row + timeline.visible_rows
        assert timeline.display_rows[timeline.cursor_row].row is not None
        await pilot.press("pageup", "pageup", "pageup", "pageup")
        assert timeline.cursor_row <= start


async def test_big_profile_gets_its_sub_rows_after_the_first_frame(corpus_dir, monkeypatch):
    """A profile too big to nest before its first frame (`BACKGROUND_NESTING_EVENTS`) is drawn first with one
    row per lane, then gets the same sub-rows (and the same screen) as a profile nested up front."""
    import trntui.tui.app as app_module
    from trntui.analysis.timeline import depths_ready

    from .conftest import opened, settle

    trace = corpus_dir / "cuda_ns_resolution_68k.json.gz"
    async with opened(trace, size=(200, 55)) as (app, pilot):
        upfront = [app.timeline.render_line(y).text for y in range(app.timeline.size.height)]
        assert any(d.row is not None and d.row.depth > 0 for d in app.timeline.display_rows)
    monkeypatch.setattr(app_module, "BACKGROUND_NESTING_EVENTS", 1000)
    async with opened(trace, size=(200, 55)) as (app, pilot):
        assert await settle(pilot, lambda: depths_ready(app.profile) and not any(w.is_running for w in app.workers))
        assert await settle(pilot, lambda: any(d.row is not None and d.row.depth > 0 for d in app.timeline.display_rows))
        assert [app.timeline.render_line(y).text for y in range(app.timeline.size.height)] == upfront
