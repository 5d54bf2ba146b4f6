"""The compare view (issue 6): summary rows, op diff after sort/filter, Enter → the op in a run's timeline."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CORPUS
from trntui.compare_runs import load_runs
from trntui.tui.screens.compare import CompareApp, CompareScreen, OpTimelineScreen

SIZE = (180, 44)


@pytest.fixture(scope="module")
def corpus_runs():
    return load_runs([CORPUS / "cuda_compare_base.json.gz", CORPUS / "cuda_compare_test.json.gz"])


async def wait_for(pilot, condition, tries: int = 200) -> bool:
    """Let the app run until `condition()` holds (a loaded CI machine can need more than one refresh)."""
    for _ in range(tries):
        if condition():
            return True
        await pilot.pause(0.02)
    return condition()


async def open_filter(pilot, screen: CompareScreen) -> None:
    """`/`, then wait until the filter box has the focus (keys typed before that would go to the table)."""
    await pilot.press("slash")
    box = screen.query_one("#compare-filter")
    assert await wait_for(pilot, lambda: screen.focused is box)


def diff_text(screen: CompareScreen, rows: int) -> list[str]:
    """Rendered lines of the diff table: header then `rows` data rows."""
    return [screen.table.render_line(y).text for y in range(rows + 1)]


async def test_summary_and_default_sort(corpus_runs) -> None:
    app = CompareApp(corpus_runs)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.compare
        summary = screen.summary_text().splitlines()
        assert summary[0].startswith("# | Run | CUDA time | Self CPU | Dispatches | Host ops")
        assert summary[1].split(" | ")[:6] == ["#1", "cuda_compare_base", "1.694ms", "223.188ms", "6", "4"]
        assert summary[2].split(" | ")[:6] == ["#2", "cuda_compare_test", "1.690ms", "223.339ms", "5", "7"]
        lines = diff_text(screen, 4)
        assert "Calls #1" in lines[0] and "Δ Self CUDA" in lines[0]
        # default: by |Δ Self CUDA| — the two −4 µs rows, then the largest |Δ Self CPU|
        assert lines[1].split()[0] == "ProfilerStep*"
        assert lines[2].lstrip().startswith("void at::native::vectorized_elementwise_kernel")
        assert lines[3].split()[0] == "All2All_Pooled_Req" and "+1 (new)" in lines[3]
        title = str(screen.query_one("#compare-diff-title").render())
        assert "sort: |Δ Self CUDA|" in title and "18/18 ops" in title


async def test_sort_cycle_and_filter(corpus_runs) -> None:
    app = CompareApp(corpus_runs)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.compare
        await pilot.press("s")  # → |Δ Self CPU|
        await pilot.pause()
        assert screen.sort == "self_cpu"
        # the table lays out its rebuilt columns when idle: on a busy machine one pause can be too short
        await wait_for(pilot, lambda: diff_text(screen, 1)[1].split()[0] == "ProfilerStep*")
        names = [line.split()[0] for line in diff_text(screen, 4)[1:]]
        assert names == ["ProfilerStep*", "All2All_Pooled_Req", "AddmmBackward0", "nccl:all_reduce"]
        await pilot.press("s")  # → |Δ Calls|
        await pilot.pause()
        assert screen.sort == "calls"
        await open_filter(pilot, screen)
        await pilot.press(*"back", "enter")
        await pilot.pause()
        await wait_for(pilot, lambda: diff_text(screen, 1)[1].split()[0] == "AddmmBackward0")
        lines = diff_text(screen, 3)
        assert [line.split()[0] for line in lines[1:3]] == ["AddmmBackward0", "CatBackward0"]
        assert lines[3].strip() == ""
        assert "filter: /back/" in str(screen.query_one("#compare-diff-title").render())
        await pilot.press("escape")  # clears the filter
        await pilot.pause()
        assert len(screen.view) == 18
        await pilot.press("c")  # changed only
        await pilot.pause()
        assert {r.status for r in screen.view} <= {"new", "removed", "changed"} and len(screen.view) == 6


async def test_invalid_filter_keeps_rows(corpus_runs) -> None:
    app = CompareApp(corpus_runs)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.compare
        await open_filter(pilot, screen)
        await pilot.press("(")
        await pilot.pause()
        assert len(screen.view) == 18
        assert screen.query_one("#compare-filter").has_class("-invalid")


async def test_enter_opens_op_in_run_timeline(corpus_runs) -> None:
    app = CompareApp(corpus_runs)
    app.NOTIFICATION_TIMEOUT = 120  # the notice is checked after the screen change: a loaded machine took > 5 s
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.compare
        await open_filter(pilot, screen)
        await pilot.press(*"all2all", "enter")
        await pilot.pause()
        await pilot.press("1", "enter")  # not in the baseline run: opens where it is (#2), with a notice
        assert await wait_for(pilot, lambda: isinstance(app.screen, OpTimelineScreen))
        assert app.screen.number == 2
        assert any("not in run #1" in n.message for n in app._notifications)
        await pilot.press("escape")
        assert await wait_for(pilot, lambda: app.screen is screen)
        await pilot.press("2", "enter")
        assert await wait_for(pilot, lambda: isinstance(app.screen, OpTimelineScreen))
        timeline_screen = app.screen
        title = str(timeline_screen.query_one("#op-title").render())
        assert "#2 cuda_compare_test" in title and "All2All_Pooled_Req" in title
        timeline = timeline_screen.query_one("#op-timeline")
        # the cursor sits on the op's first instance (set after the first layout)
        assert await wait_for(pilot, lambda: "All2All_Pooled_Req" in timeline.render_line(1).text), \
            timeline.render_line(1).text
        await pilot.press("escape")
        assert await wait_for(pilot, lambda: app.screen is screen)


async def test_neuron_like_runs_render_without_device_rows() -> None:
    """Hardware lanes but no device rows in the op table: device time from executions, CPU-sorted diff."""
    from tests.test_compare import neuron_like_profile

    from trntui.analysis.compare import make_run

    runs = [make_run("naive", neuron_like_profile(6, 100_000, 300_000)),
            make_run("fused", neuron_like_profile(1, 400_000, 0))]
    app = CompareApp(runs)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        summary = app.compare.summary_text().splitlines()
        assert summary[1].split(" | ")[4] == "6" and summary[2].split(" | ")[4] == "1"
        assert app.compare.sort == "self_cpu"


async def test_explorer_c_key_opens_compare(tmp_path) -> None:
    """`trntui open DIR` on a directory of runs: `c` pushes the compare screen, Esc returns."""
    import shutil

    from trntui.tui.app import TrntuiApp

    for name in ("base", "test"):
        d = tmp_path / name
        d.mkdir()
        shutil.copy(CORPUS / f"cuda_compare_{name}.json.gz", d / "trace.json.gz")
    app = TrntuiApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(50):
            await pilot.pause(0.05)
            if len(app.runs) == 2:
                break
        await pilot.press("escape")  # leave the run picker
        await pilot.pause()
        app.ops.focus()  # (after the picker, focus may land on the hidden filter input)
        await pilot.pause()
        await pilot.press("c")
        for _ in range(100):
            await pilot.pause(0.05)
            if isinstance(app.screen, CompareScreen):
                break
        assert isinstance(app.screen, CompareScreen)
        assert [r.name for r in app.screen.runs] == ["base", "test"]
        await pilot.press("escape")
        assert await wait_for(pilot, lambda: not isinstance(app.screen, CompareScreen))


async def test_gaps_modal(corpus_runs) -> None:
    from trntui.tui.screens.compare import GapsScreen

    app = CompareApp(corpus_runs)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("g")
        assert await wait_for(pilot, lambda: isinstance(app.screen, GapsScreen))
        text = app.screen.gaps_text()
        assert "#1 cuda_compare_base" in text and "#2 cuda_compare_test" in text
        assert "all hardware lanes" in text and "PID:1/device/Stream:16" in text
        await pilot.press("escape")
        assert await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))


def help_lines(app) -> list[str]:
    from textual.widgets import Static

    widget = app.screen.query_one("#help-text", Static)
    return [widget.render_line(y).text.rstrip() for y in range(widget.size.height)]


def compare_binding_lines() -> list[str]:
    """The help line every CompareScreen binding must have (digits merged into one `1…9` line)."""
    from trntui.tui.keys import MERGED, class_bindings, key_display

    out = []
    for b in class_bindings(CompareScreen):
        if b.action.startswith("target_run("):
            continue
        out.append(f"  {key_display(b.key):<22}{b.description}".rstrip())
    out.append(f"  {'1…9':<22}{MERGED['target_run(']}")
    return out


async def test_help_on_compare_screen_lists_compare_keys(corpus_runs) -> None:
    """`?` on the compare view lists its own keys (from CompareScreen.BINDINGS) and the app's; Esc closes."""
    from trntui.tui.screens.help import HelpScreen

    app = CompareApp(corpus_runs)
    async with app.run_test(size=(100, 60)) as pilot:
        await pilot.pause()
        screen = app.compare
        await pilot.press("question_mark")
        assert await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        lines = help_lines(app)
        assert lines[0] == "trntui compare keys   (esc, q or ? closes)"
        assert "Compare view" in lines and "Everywhere" in lines
        for line in compare_binding_lines():
            assert line in lines, (line, lines)
        assert "  /                     Filter" in lines and "  c                     Changed only" in lines
        assert "  q                     Quit" in lines  # CompareApp's own key
        await pilot.press("escape")
        assert await wait_for(pilot, lambda: app.screen is screen)


async def test_help_on_compare_screen_in_explorer(tmp_path) -> None:
    """In `trntui open`, `?` on the compare screen shows the compare keys, and of the explorer's global keys
    only those the compare screen does not take over (`c` is "Changed only" there, not "Compare runs")."""
    import shutil

    from trntui.tui.app import TrntuiApp
    from trntui.tui.screens.help import HelpScreen

    for name in ("base", "test"):
        d = tmp_path / name
        d.mkdir()
        shutil.copy(CORPUS / f"cuda_compare_{name}.json.gz", d / "trace.json.gz")
    app = TrntuiApp(tmp_path)
    async with app.run_test(size=(100, 60)) as pilot:
        assert await wait_for(pilot, lambda: len(app.runs) == 2)
        await pilot.press("escape")  # leave the run picker
        await pilot.pause()
        app.ops.focus()
        await pilot.pause()
        await pilot.press("c")
        assert await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
        await pilot.press("question_mark")
        assert await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        lines = help_lines(app)
        for line in compare_binding_lines():
            assert line in lines, (line, lines)
        assert "  z                     Maximize" in lines and "  q                     Quit" in lines
        assert not any("Compare runs" in line for line in lines)
        await pilot.press("escape")
        assert await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))


async def test_escape_clears_an_applied_filter_from_the_table(corpus_runs) -> None:
    """With a filter in force and the diff table focused, Esc drops the filter (and hides the box)."""
    app = CompareApp(corpus_runs)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.compare
        await open_filter(pilot, screen)
        await pilot.press(*"all2all", "enter")
        assert await wait_for(pilot, lambda: screen.focused is screen.table and len(screen.view) == 1)
        box = screen.query_one("#compare-filter")
        assert box.has_class("-active")
        await pilot.press("escape")
        assert await wait_for(pilot, lambda: screen.pattern == "" and len(screen.view) == 18)
        assert not box.has_class("-active") and screen.focused is screen.table and app.screen is screen


@pytest.mark.parametrize("size", [(80, 24), (200, 55)])
async def test_name_and_sorted_column_stay_in_view(corpus_runs, size) -> None:
    """At 80×24 as at 200×55 the diff's visible lines show Name and the column it is sorted by (its per-run
    values and Δ come right after Name), for every sort."""
    app = CompareApp(corpus_runs)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        screen = app.compare
        for sort, title in (("self_device", "Δ Self CUDA"), ("self_cpu", "Δ Self CPU"), ("calls", "Δ Calls")):
            if screen.sort != sort:
                await pilot.press("s")
            assert screen.sort == sort
            assert await wait_for(pilot, lambda: title in diff_text(screen, 0)[0]), diff_text(screen, 0)[0]
            header, first = diff_text(screen, 1)
            assert header.split()[0] == "Name" and len(header) <= size[0]
            assert first.strip().startswith(screen.view[0].name[:10])
            end = header.index(title) + len(title)
            assert end <= size[0] and first[header.index(title):end].strip()  # the Δ cell is drawn, in view
