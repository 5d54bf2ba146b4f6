"""The Device view (issue 18): from the naive sample's hardware lane, `D` on `nc_exec_running` opens it.

The samples are synthetic (scripts/make_neuron_device_samples.py, documented schema): this checks the screen
shows the engine lanes, the top instructions and the roofline verdict of the selected execution.
"""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable

from tests.tui.conftest import opened, settle
from trntui.tui.capture import screen_text
from trntui.tui.screens.device import DeviceScreen

REPO = Path(__file__).resolve().parents[2]
NAIVE = REPO / "sample_profiles" / "neuron" / "naive"


async def _to_hardware_lane(app, pilot) -> None:
    """Tab to the timeline, `j` down to the first hardware lane, `g` to the trace start, `]` to its first event."""
    while app.focused is not app.timeline:
        await pilot.press("tab")
    for _ in range(60):
        row = app.timeline.display_rows[app.timeline.cursor_row].row
        if row is not None and app.profile.lanes[row.lane].ident.startswith("NC0:0"):
            break
        await pilot.press("j")
    await pilot.press("g")
    await pilot.pause()
    tl = app.timeline
    if tl.event_under_cursor() < 0 or app.profile.name_of(tl.event_under_cursor()) != "nc_exec_running":
        await pilot.press("right_square_bracket")
        await pilot.pause()


async def _open_device_view(app, pilot) -> None:
    """`D`, then wait until the Device view has loaded (or failed) and drawn: the screen's module is imported on the
    key and its loader is a worker of the new screen, so one wait for the app's workers can come before it starts."""
    await pilot.press("D")

    def drawn() -> bool:
        screen = app.screen
        if not isinstance(screen, DeviceScreen):
            return False
        if screen.error:
            return True
        if screen.report is None or not screen.tables:
            return False
        table = screen.query_one("#device-table", DataTable)
        if table._require_update_dimensions or table._updated_cells:  # noqa: SLF001 - its columns are sized on idle
            return False
        text = screen_text(app)  # the title, the engines and the first table drawn, with its first row
        if "loading the device profile" in text or screen.tables[0].title.split(" (")[0] not in text:
            return False
        first = str(table.get_row_at(0)[0]).strip()[:10] if table.row_count else ""
        return not table.row_count or first in text

    await settle(pilot, drawn, timeout=90.0)  # (the view loads and analyses the device export in a thread: slow on a loaded box)
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_device_view_from_the_hardware_lane() -> None:
    async with opened(NAIVE, size=(160, 50)) as (app, pilot):
        await _to_hardware_lane(app, pilot)
        status = screen_text(app)
        assert "▸ nc_exec_running" in status  # the timeline's status line: the event under the cursor
        event = app.timeline.event_under_cursor()
        assert app.profile.lane_of(event).label.endswith("neuron_hw/NC0:0")
        await _open_device_view(app, pilot)
        screen = app.screen
        assert isinstance(screen, DeviceScreen) and screen.error == ""
        # (under a loaded full run the table's region was once seen blank right after the view had drawn it: the
        # screen is read once the table is back; a view that never shows it still fails below)
        table_shown = await settle(pilot, lambda: "Top instructions by duration" in screen_text(app), timeout=30.0)
        text = screen_text(app)
        # (seen failing three times in full loaded runs, never alone: the whole screen and its state, to tell next time
        # whether the table was pushed off, hidden by a maximized pane, or emptied)
        assert table_shown, ("the top-instructions table did not show within 30 s; the screen:\n" + text
                             + f"\nmaximized: {getattr(screen, 'maximized', None)!r}; table title: {screen.table_title()!r};"
                             + f" table rows: {screen.query_one('#device-table').row_count}; focused: {app.focused!r}")
        # the selected execution: the first aten::mul NEFF
        assert "execution 0 (MODULE_10001_8417/model.neff)" in text
        # engine busy bars and engine lanes (the explorer's timeline widget, same label scheme)
        assert "Vector (DVE)" in text and "Tensor (PE)" in text and "DMA" in text
        timeline = screen.timeline
        shown = {timeline.profile.lanes[k].ident for d in timeline.display_rows for k in d.lanes}
        assert {"NC0:0/Vector", "NC0:0/Sync", "NC0:1/Vector", "NC0:0/DMA:qSyncInput0"} <= shown
        assert any("0:0/Vector" in line and "TENSOR" in line for line in text.splitlines())  # drawn, named bars
        # top instructions
        assert "Top instructions by duration" in text and "TENSOR_TENSOR" in text and "multiply.3" in text
        # the roofline: verdict and plot
        assert "Verdict: memory-bound · AI 0.25 < ridge 218 FLOP/B" in text
        assert "x: arithmetic intensity, FLOP/byte (log)" in text
        assert "⚠ Synthetic data" in text
        # `s` shows the next table (framework ops with their roofline bound), Esc goes back
        await pilot.press("s")
        await pilot.pause()
        text = screen_text(app)
        assert "Framework ops" in text and "aten::mul.Tensor" in text and "memory-bound" in text
        # `p`: the roofline full size, with each framework op's verdict
        await pilot.press("p")
        await pilot.pause()
        text = screen_text(app)
        assert "Verdict: execution 0 (MODULE_10001_8417/model.neff): memory-bound" in text
        assert "aten::mul.Tensor: memory-bound: arithmetic intensity 0.25 FLOP/B is below the ridge 218 FLOP/B" in text
        assert "Peaks from: aws-neuron/aws-neuron-sdk about-neuron/arch/neuron-hardware/neuron-core-v3.rst" in text
        # the choices the schema leaves open, named as the CLI names them (issue 27): FLOPs of all engines with
        # the matmul-only figure beside it, semaphore waits in busy, which DMA labels are HBM
        flat = " ".join(text.split())
        assert "(raw_flops, all engines)" in flat and "Matmul-only intensity" in flat
        from textual.containers import VerticalScroll

        from trntui.report.device import DEFINITIONS

        app.screen.query_one(VerticalScroll).scroll_end(animate=False)  # the definitions close the modal's text
        await pilot.pause()
        await pilot.pause()
        flat = " ".join(screen_text(app).split())
        for d in DEFINITIONS:
            assert " ".join(("Definition: " + d).split())[:60] in flat
        await pilot.press("escape", "escape")
        await pilot.pause()
        assert not isinstance(app.screen, DeviceScreen)


async def test_device_view_says_which_busy_figure_is_the_union_and_which_one_core() -> None:
    """Issue 27: the engines pane shows the union over the two physical cores, the lane labels each core's own
    busy share; the screen names both (the heading, the lanes' border title), and the figures are those."""
    import re

    async with opened(NAIVE, size=(160, 50)) as (app, pilot):
        await _to_hardware_lane(app, pilot)
        await _open_device_view(app, pilot)
        screen = app.screen
        assert isinstance(screen, DeviceScreen) and screen.error == ""
        lines = screen_text(app).splitlines()
        report = screen.report
        assert report.pcores == [0, 1]
        assert any("Engine busy · union of cores 0,1 (busy on any core)" in x for x in lines)
        assert any("Engine lanes · lane % = one core's busy share of the span shown" in x for x in lines)
        vector = report.engine("Vector")
        union_line = next(x for x in lines if "Vector (DVE)" in x)
        assert f"{vector.percent:.1f}%" in union_line  # the bars: the union figure
        for core in (0, 1):  # each lane label: that core's own share (the span shown ≈ the execution's window)
            label = next(x for x in lines if f"NC0:{core}/Vector " in x)
            shown = int(re.search(r"NC0:%d/Vector (\d+)%%" % core, label).group(1))
            assert abs(shown - vector.per_core[core]) <= 1.5 and shown < vector.percent - 0.5
        for _ in range(len(screen.tables)):  # the engines table: the union and per-core columns, named
            if screen.tables[screen.table_index].key == "engines":
                break
            await pilot.press("s")
        await pilot.pause()
        text = screen_text(app)
        assert "Busy % (any core)" in text and "Core 0 %" in text and "Core 1 %" in text


async def test_device_view_at_80x24_keeps_the_verdict() -> None:
    async with opened(NAIVE, size=(80, 24)) as (app, pilot):
        await _to_hardware_lane(app, pilot)
        await _open_device_view(app, pilot)
        text = screen_text(app)
        assert "Verdict: memory-bound · AI 0.25 <" in text and "p: roofline plot" in text
        assert "Vector (DVE)" in text and "0:0/Vector" in text  # lane labels keep their end when cut


async def test_device_view_keys_zoom_the_engine_lanes() -> None:
    async with opened(NAIVE, size=(120, 40)) as (app, pilot):
        await _to_hardware_lane(app, pilot)
        for _ in range(3):  # the fourth execution: aten::rsqrt on the Scalar engine
            await pilot.press("right_square_bracket")
        await _open_device_view(app, pilot)
        screen = app.screen
        assert isinstance(screen, DeviceScreen)
        assert screen.report.window.index == 3 and screen.report.engine("Scalar").instructions == 2
        before = screen.timeline.ns_per_cell
        await pilot.press("plus")
        assert screen.timeline.ns_per_cell == before / 2  # the timeline's own zoom key


async def test_device_key_off_a_hardware_execution_says_what_to_do() -> None:
    async with opened(NAIVE, size=(120, 40)) as (app, pilot):
        await pilot.press("D")  # cursor on the first (framework) lane
        await pilot.pause()
        assert not isinstance(app.screen, DeviceScreen)
        assert any("nc_exec_running" in str(n.message) for n in app._notifications)  # noqa: SLF001


async def test_device_view_without_a_device_profile(tmp_path: Path) -> None:
    import shutil

    shutil.copytree(NAIVE, tmp_path / "naive")  # the system sample alone, away from sample_profiles/neuron/device
    async with opened(tmp_path / "naive", size=(120, 40)) as (app, pilot):
        await _to_hardware_lane(app, pilot)
        await _open_device_view(app, pilot)
        screen = app.screen
        assert isinstance(screen, DeviceScreen)
        assert "no device profile for PID 51001 NC0" in screen.error
        assert "Traceback" not in screen_text(app)
