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
