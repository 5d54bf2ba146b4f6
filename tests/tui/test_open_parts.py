"""`trntui open --steps / --window` (issue 7: a big trace explored in parts): the ops table counts only the
chosen part, as `trntui summary --steps` does, and the timeline opens fitted to it."""

from __future__ import annotations

import numpy as np

from trntui.analysis.key_averages import key_averages
from trntui.analysis.select import select_events, steps
from trntui.tui.app import TrntuiApp
from trntui.tui.capture import screen_text

TRACE = "cuda_ns_resolution_68k.json.gz"



async def test_steps_restrict_the_table_and_fit_the_timeline(corpus_dir):
    app = TrntuiApp(corpus_dir / TRACE, steps="102")
    async with app.run_test(size=(120, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        profile = app.profile
        sel = select_events(profile, steps_spec="102")
        want = key_averages(profile, events=sel)
        assert app.table.name == want.name and np.array_equal(app.table.count, want.count)
        full = key_averages(profile)
        assert int(app.table.count.sum()) < int(full.count.sum())
        lines = screen_text(app).splitlines()
        assert lines[0].endswith(f"45,422 events · span 495ms · steps 102: {len(sel):,} events")
        (step,) = [s for s in steps(profile) if s.number == 102]
        a, b = app.timeline.window
        origin = app.timeline.origin
        assert origin == step.start  # the clock starts at the selected step
        assert abs(a) < 1 and abs(b - (step.end - origin)) <= app.timeline.ns_per_cell
        title = next(line for line in lines if line.startswith("─Timeline"))
        assert "+0.0ms … +72.1ms" in title  # the 72.077ms step at 792µs/cell
        assert any("ProfilerStep#102" in line for line in lines)  # the timeline body is drawn
        await pilot.press("tab", "0")  # fit shows the whole trace again
        assert app.focused is app.timeline
        assert app.timeline.window[1] - app.timeline.window[0] > 400e6


async def test_window_restricts_the_table(corpus_dir):
    app = TrntuiApp(corpus_dir / TRACE, window="100ms:200ms")
    async with app.run_test(size=(120, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        sel = select_events(app.profile, window_spec="100ms:200ms")
        assert screen_text(app).splitlines()[0].endswith(f"window 100ms:200ms: {len(sel):,} events")
        a, b = app.timeline.window
        assert abs(a - 100e6) < 1 and abs(b - 200e6) <= app.timeline.ns_per_cell


async def test_unknown_step_is_an_error_notice(corpus_dir):
    app = TrntuiApp(corpus_dir / TRACE, steps="2")
    async with app.run_test(size=(120, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "no such step (this profile has steps 101-105)" in screen_text(app)
        assert app.profile is None


def test_open_rejects_a_malformed_steps_spec(capsys, corpus_dir):
    from tests.conftest import run_cli

    rc, _, err = run_cli(capsys, "open", str(corpus_dir / TRACE), "--steps", "x-y")  # argparse refuses it
    assert rc == 2 and err.startswith("trntui: error: bad --steps 'x-y'") and err.count("\n") == 1
