"""The Critical path screen (`P`) and the timeline's `m` marks, on a trace with a hand-computed path
(tests/test_critical_path.py `gpu_bound`: five 200 µs kernels on one stream, path 1,018 µs of the 1,040 µs step,
gpu_compute_bound 98.2%)."""

from __future__ import annotations

import numpy as np

from tests.test_critical_path import gpu_bound
from trntui.tui.capture import screen_text
from trntui.tui.screens.critical_path import CriticalPathScreen

from .conftest import opened, settle


async def _open(app, pilot):
    await pilot.press("P")
    await pilot.pause()
    assert isinstance(app.screen, CriticalPathScreen)
    await app.screen.workers.wait_for_complete()
    await settle(pilot, lambda: app.screen.cp is not None)
    return app.screen


async def test_screen_shows_the_breakdown_and_enter_shows_the_event(tmp_path):
    gpu_bound(tmp_path)
    path = tmp_path / "gpu_Context Sync.json"
    async with opened(path, size=(130, 40)) as (app, pilot):
        assert ("Critical path", "key: P") in [(t, h) for t, h, _ in app.palette_commands()]
        await _open(app, pilot)
        text = screen_text(app)
        lines = text.splitlines()
        assert lines[0].strip().startswith(
            "gpu_Context Sync.json · Critical path of step 1: 1,018.0 us (97.9% of the step's 1,040.0 us), bound by "
            "gpu_compute_bound")
        # the bar: one row of blocks, almost all compute; a legend line per bound type with its share
        bar = next(line for line in lines if line.strip().startswith("█" * 20))
        assert bar.count("█") >= 100
        for legend in ("█ cpu_bound 0.1% · 1.0 us", "█ gpu_compute_bound 98.2% · 1,000.0 us",
                       "█ gpu_kernel_kernel_overhead 0.8% · 8.0 us", "█ gpu_kernel_launch_overhead 0.9% · 9.0 us"):
            assert legend in text, legend
        # the events on the path, by time on it
        rows = [line.split() for line in lines if line.lstrip().startswith("gemm_")]
        assert [r[0] for r in rows] == ["gemm_0", "gemm_1", "gemm_2", "gemm_3", "gemm_4"]
        assert rows[0][1:3] == ["202.0", "us"] and rows[4][1:3] == ["200.0", "us"]
        # Enter on the first row: the screen closes, the timeline shows gemm_0, the chain says it is on the path
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, CriticalPathScreen)
        prof = app.profile
        gemm0 = int(next(e for e in range(len(prof)) if prof.name_of(e) == "gemm_0"))
        assert app.timeline.cursor_event == gemm0 or gemm0 in app.timeline.selection.tolist()
        await settle(pilot, lambda: any("critical path of step 1" in t for t in app.chain.text_lines))
        chain = [t for t in app.chain.text_lines if "critical path of step 1" in t]
        assert chain and "the op is on it" in chain[0], app.chain.text_lines


async def test_timeline_toggle_marks_the_path_events(tmp_path):
    gpu_bound(tmp_path)
    path = tmp_path / "gpu_Context Sync.json"
    async with opened(path, size=(130, 40)) as (app, pilot):
        await pilot.press("tab")
        assert app.focused is app.timeline
        timeline = app.timeline
        await pilot.press("m")
        await timeline.workers.wait_for_complete()
        await settle(pilot, lambda: len(timeline.selection) > 0)
        from trntui.analysis.critical_path import critical_paths

        expected = critical_paths(app.profile)[0].on_path
        assert np.array_equal(np.unique(timeline.selection), expected)
        names = sorted({app.profile.name_of(int(e)) for e in timeline.selection})
        assert names == ["aten::mm", "cudaLaunchKernel", "gemm_0", "gemm_1", "gemm_2", "gemm_3", "gemm_4"]
        assert f"critical path of step 1: {len(expected)} events" in str(timeline.border_title)
        # the marked events are drawn highlighted: the kernel lane's row has highlighted cells
        kernel_row = next(d for d in timeline.display_rows if d.title.endswith("Stream:7"))
        assert timeline._selection_in(kernel_row.row) is not None
        # n walks the path's events in time order
        await pilot.press("n")
        await pilot.pause()
        assert timeline.cursor_event in expected.tolist()
        # again: cleared
        await pilot.press("m")
        await pilot.pause()
        assert len(timeline.selection) == 0 and "critical path" not in str(timeline.border_title)


async def test_names_from_the_trace_are_shown_not_obeyed(tmp_path):
    """Kernel and op names with Textual markup and terminal escapes: shown literally on the screen, never styled
    or sent to the terminal."""
    from tests.test_critical_path import Trace

    tr = Trace()
    tr.op("ProfilerStep#1", 0, 500, cat="user_annotation")
    tr.op("aten::[bold red]op[/]", 10, 20)
    tr.launch(12, 8, 25, 400, kernel="[b]evil_kernel[/b]\x1b[31m\x07")
    tr.sync_call("cudaStreamSynchronize", 50, 390, kind="Stream Sync")
    path = tr.write(tmp_path / "hostile.json")
    async with opened(path, size=(130, 40)) as (app, pilot):
        await _open(app, pilot)
        text = screen_text(app)
        assert "[b]evil_kernel[/b]" in text
        assert "\x1b" not in text and "\x07" not in text


async def test_screen_on_a_neuron_run():
    """The naive RMSNorm sample (synthetic, made to the Neuron docs): Neuron bound names in the legend, the
    executions on top, the figures the analysis gives."""
    from trntui.analysis.critical_path import critical_paths

    from .conftest import REPO

    async with opened(REPO / "sample_profiles" / "neuron" / "naive", size=(130, 40)) as (app, pilot):
        await _open(app, pilot)
        cp = critical_paths(app.profile)[0]
        text = screen_text(app)
        pct = cp.breakdown_pct()
        assert f"█ neuroncore_compute {pct['neuroncore_compute']:.1f}% · " in text
        assert f"█ dispatch_overhead {pct['dispatch_overhead']:.1f}% · " in text
        rows = [line.split() for line in text.splitlines() if line.lstrip().startswith("nc_exec_running")]
        assert len(rows) == 6 and all(r[-2] == "neuroncore_compute" or "neuroncore_compute" in r for r in rows)


async def test_chain_shown_before_the_screen_says_so_after_it(tmp_path):
    """An op chained before the path is known: no path line; after P and Esc, the line is there."""
    gpu_bound(tmp_path)
    async with opened(tmp_path / "gpu_Context Sync.json", size=(130, 40)) as (app, pilot):
        prof = app.profile
        mm = int(next(e for e in range(len(prof)) if prof.name_of(e) == "aten::mm"))
        app.chain_event(mm)
        await pilot.pause()
        assert not any("critical path" in t for t in app.chain.text_lines)
        await _open(app, pilot)
        await pilot.press("escape")
        await settle(pilot, lambda: any("critical path of step 1" in t for t in app.chain.text_lines))
        line = next(t for t in app.chain.text_lines if "critical path of step 1" in t)
        assert "the op is on it" in line and "of the path's 1,018.0 us" in line
