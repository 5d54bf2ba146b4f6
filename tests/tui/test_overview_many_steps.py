"""The Overview screen on a run of 100,000 steps (issue 28 class 3): the figures are computed in a worker and at
most `MAX_STEP_BARS` step bars are drawn (a line says how many more), so Esc closes it and q quits while it
computes and after; the bound below only catches a screen that stops answering (it took minutes)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_hostile_files import returns_within
from trntui.tui.screens.overview import OverviewScreen
from trntui.tui.widgets.overview_panels import MAX_STEP_BARS, OverviewPanel

from .conftest import opened, settle

STEPS = 100_000


def _many_steps(path: Path) -> Path:
    events = []
    for i in range(STEPS):
        ts = i * 100.0
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
                       "ts": ts, "dur": 90.0})
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": ts + 1.0,
                       "dur": 50.0})
    path.write_text(json.dumps({"traceEvents": events}))
    return path


async def test_overview_of_100k_steps_answers_esc_and_q(tmp_path):
    trace = _many_steps(tmp_path / "steps.json")
    async with opened(trace, size=(120, 40)) as (app, pilot):
        with returns_within(60):
            await pilot.press("o")
            await pilot.press("escape")  # while it computes, or at once after
            assert await settle(pilot, lambda: not isinstance(app.screen, OverviewScreen))
            await pilot.press("o")
            assert await settle(pilot, lambda: isinstance(app.screen, OverviewScreen) and app.screen.overview)
            await pilot.pause()
            bars = app.screen.query_one("#ov-bars", OverviewPanel)
            lines = [bars.render_line(y).text.strip() for y in range(bars.size.height)]
            assert sum(line.startswith("step ") for line in lines) == MAX_STEP_BARS
            assert any(f"… {STEPS - MAX_STEP_BARS:,} more steps" in line for line in lines), lines[-5:]
            await pilot.press("escape")
            assert await settle(pilot, lambda: not isinstance(app.screen, OverviewScreen))
            await pilot.press("o")
            await pilot.press("q")
            assert await settle(pilot, lambda: not app.is_running)


def _many_devices(path: Path, n: int) -> Path:
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0.0,
               "dur": n * 10.0 + 100}]
    for i in range(n):
        events.append({"ph": "X", "cat": "kernel", "name": "k", "pid": i, "tid": 7, "ts": 10.0 + i * 10, "dur": 5.0,
                       "args": {"device": i, "stream": 7}})
        events.append({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1,
                       "ts": 10.0 + i * 10, "s": "t", "args": {"Device Type": 1, "Device Id": i, "Addr": i,
                                                                "Bytes": 1024, "Total Allocated": 1024,
                                                                "Total Reserved": 2048}})
    path.write_text(json.dumps({"traceEvents": events}))
    return path


async def test_overview_of_5k_devices_lists_some_and_says_how_many_more(tmp_path):
    """(Issue 28 saw 20k device ids never answer; 5k take the same path at a quarter of the suite's time.)"""
    from trntui.tui.widgets.overview_panels import MAX_DEVICE_LINES, MAX_MEMORY_CURVES

    n = 5_000
    trace = _many_devices(tmp_path / "devices.json", n)
    async with opened(trace, size=(120, 40)) as (app, pilot):
        with returns_within(120):
            await pilot.press("o")
            await pilot.press("escape")  # while it computes: the screen closes
            assert await settle(pilot, lambda: not isinstance(app.screen, OverviewScreen))
            await pilot.press("o")
            assert await settle(pilot, lambda: isinstance(app.screen, OverviewScreen) and app.screen.overview,
                                timeout=90)
            await pilot.pause()

            def shown(selector: str) -> list[str]:
                panel = app.screen.query_one(selector, OverviewPanel)
                return [panel.render_line(y).text.strip() for y in range(panel.size.height)]

            metrics = shown("#ov-metrics")
            assert sum(": util " in line for line in metrics) == MAX_DEVICE_LINES
            assert any(f"… {n - MAX_DEVICE_LINES:,} more devices" in line for line in metrics)
            memory = shown("#ov-memory")
            assert any(f"more devices' memory curves" in line for line in memory), memory[-3:]
            assert sum(" peak " in line for line in memory) == MAX_MEMORY_CURVES
            await pilot.press("q")
            assert await settle(pilot, lambda: not app.is_running)
