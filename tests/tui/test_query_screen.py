"""The query screen (`:`): a query runs, its rows are shown, Enter on a row jumps to that event on the timeline;
sorting, errors, history, completion and saved queries."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("duckdb")

from trntui.tui.capture import screen_text  # noqa: E402
from trntui.tui.screens.query import QueryScreen, store_path  # noqa: E402

from .conftest import opened, settle  # noqa: E402

QUERY = "SELECT id, name, dur_us FROM kernels ORDER BY dur_ns DESC LIMIT 5"


async def _open(app, pilot) -> QueryScreen:
    await pilot.press("colon")
    await settle(pilot, lambda: isinstance(app.screen, QueryScreen))
    assert isinstance(app.screen, QueryScreen)
    return app.screen


async def _run(app, pilot, screen: QueryScreen, query: str) -> None:
    screen.box.value = query
    screen.box.focus()
    await pilot.press("enter")
    await settle(pilot, lambda: "running" not in str(screen.query_one("#q-status").render()), timeout=60)
    await screen.workers.wait_for_complete()
    await pilot.pause()


async def test_query_runs_shows_rows_and_enter_jumps_to_the_event(corpus_dir):
    async with opened(corpus_dir / "cuda_alexnet.json.gz", size=(140, 40)) as (app, pilot):
        assert ("SQL query", "key: :") in [(t, h) for t, h, _ in app.palette_commands()]
        screen = await _open(app, pilot)
        await _run(app, pilot, screen, QUERY)
        table = screen.results
        assert table.row_count == 5
        text = screen_text(app)
        assert "5 rows · Enter: show on the timeline" in text
        lines = text.splitlines()
        head = next(k for k, line in enumerate(lines) if line.split()[:3] == ["id", "name", "dur_us"])
        first = lines[head + 1].split()
        # the longest hardware row of the trace, as the data says
        p = app.profile
        longest = max((i for i in range(len(p)) if p.lane_of(i).tier == 3), key=lambda i: (int(p.end[i] - p.start[i]), -i))
        assert int(first[0]) == longest and p.name_of(longest).startswith(first[1])
        # Enter on the second row: the screen closes and the timeline shows that event
        await pilot.press("down", "enter")
        await settle(pilot, lambda: not isinstance(app.screen, QueryScreen))
        second = int(lines[head + 2].split()[0])
        assert app.timeline.event_under_cursor() == second
        chain = app.chain.chain  # the chain pane follows it: the kernel is on one of its hops
        assert chain is not None and chain.selected == second
        assert second in [e for b in chain.branches for h in b for e in h.events]


async def test_sort_errors_history_completion_and_saved_queries(corpus_dir):
    async with opened(corpus_dir / "cuda_alexnet.json.gz", size=(140, 40)) as (app, pilot):
        screen = await _open(app, pilot)
        await _run(app, pilot, screen, "SELECT name, count(*) AS n FROM events GROUP BY name ORDER BY name LIMIT 20")
        screen.sort_by("n")
        await pilot.pause()
        ns = [screen._raw[k][1] for k in screen.results.rows]
        assert ns == sorted(ns)
        screen.sort_by("n")
        await pilot.pause()
        ns = [screen._raw[k][1] for k in screen.results.rows]
        assert ns == sorted(ns, reverse=True)
        # an error is one line under the box; the table keeps the last result
        await _run(app, pilot, screen, "SELECT nope FROM events")
        status = str(screen.query_one("#q-status").render())
        assert status.startswith("error: Binder Error") and "nope" in status and screen.results.row_count == 20
        # history: Up brings back the previous query
        screen.box.focus()
        screen.box.value = ""
        await pilot.press("up", "up")
        assert screen.box.value.startswith("SELECT name, count(*)")
        # completion of table and column names
        await settle(pilot, lambda: screen.box.suggester is not None)
        screen.box.value = ""
        await pilot.press(*"SELECT launch_lat")
        await pilot.pause()
        await pilot.press("right")
        assert screen.box.value == "SELECT launch_latency"
        # saved queries: in the config directory, back with Ctrl+O in a new screen
        screen.box.value = "SELECT count(*) AS saved_one FROM lanes"
        await pilot.press("ctrl+s")
        await pilot.press("escape")
        await settle(pilot, lambda: not isinstance(app.screen, QueryScreen))
        assert "SELECT count(*) AS saved_one FROM lanes" in json.loads(store_path().read_text())["saved"]
        screen = await _open(app, pilot)
        await pilot.press("ctrl+o")
        assert screen.box.value == "SELECT count(*) AS saved_one FROM lanes"


async def test_a_row_with_a_span_zooms_the_timeline(corpus_dir):
    async with opened(corpus_dir / "cuda_alexnet.json.gz", size=(140, 40)) as (app, pilot):
        screen = await _open(app, pilot)
        await _run(app, pilot, screen, "SELECT label, start_ns, end_ns, gap_ns FROM idle_gaps ORDER BY gap_ns DESC LIMIT 3")
        assert screen.results.row_count == 3
        gap = screen._raw[next(iter(screen.results.rows))]
        await pilot.press("enter")
        await settle(pilot, lambda: not isinstance(app.screen, QueryScreen))
        t0, t1 = app.timeline.window
        # the gap is on screen, over most of the width (the timeline's clock is the database's: +0 the same)
        assert t0 <= gap[1] and gap[2] <= t1 and (gap[2] - gap[1]) >= 0.5 * (t1 - t0)
