"""The app shell: header, layout at 80×24 and wide, help, command palette, load errors, run picker, loading."""

from __future__ import annotations

import threading

import pytest

from textual.widgets import OptionList, Static

from trntui.tui.app import TrntuiApp
from trntui.tui.capture import screen_text
from trntui.tui.keys import key_reference, sections
from trntui.tui.screens.error import ErrorScreen
from trntui.tui.screens.help import HelpScreen
from trntui.tui.screens.runs import RunPicker

from .conftest import opened, settle


async def test_header_and_three_panes_at_80x24(corpus_dir):
    """At 80×24: a header saying what was loaded, the three pane titles and a footer with keys."""
    async with opened(corpus_dir / "cuda_ns_resolution_68k.json.gz") as (app, pilot):
        # what is asserted below, once painted (under load the header and titles can be one repaint behind)
        await settle(pilot, lambda: screen_text(app).splitlines()[0].strip().endswith("span 495ms")
                     and any(line.startswith("─Timeline · +") for line in screen_text(app).splitlines()))
        text = screen_text(app).splitlines()
        assert len(text) == 24
        assert text[0].strip() == (
            "cuda_ns_resolution_68k.json.gz · CUDA · 5 steps · 45,422 events · span 495ms"
        )
        assert text[1].startswith("─Ops · sort: Self CUDA ↓ · 191/191 rows")
        assert any(line.startswith("─Timeline · +0ms … +495ms") for line in text)
        assert any(line.startswith("─Chain") for line in text)
        assert "Quit" in text[-1] and "Help" in text[-1]


async def test_tab_moves_between_panes_and_z_maximizes(corpus_dir):
    """Tab / shift+Tab cycle ops → timeline → chain; `z` maximizes the focused pane and restores it."""
    async with opened(corpus_dir / "cuda_simple_add.json.gz") as (app, pilot):
        assert app.focused is app.ops
        await pilot.press("tab")
        assert app.focused is app.timeline
        await pilot.press("tab")
        assert app.focused is app.chain
        await pilot.press("shift+tab", "z")
        await pilot.pause()
        assert app.screen.maximized is app.timeline
        assert screen_text(app).splitlines()[0].startswith("─Timeline")
        await pilot.press("z")
        assert app.screen.maximized is None
        await pilot.press("shift+tab", "z")
        await pilot.pause()
        assert app.screen.maximized is not None and app.ops in (app.screen.maximized, *app.screen.maximized.children)
        await pilot.press("escape")
        assert app.screen.maximized is None


async def test_help_screen_lists_every_key(corpus_dir):
    """`?` opens the key list generated from the bindings; Esc closes it."""
    async with opened(corpus_dir / "cuda_simple_add.json.gz", size=(100, 60)) as (app, pilot):
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        help_widget = app.screen.query_one("#help-text", Static)
        lines = [help_widget.render_line(y).text.rstrip() for y in range(help_widget.size.height)]
        assert lines[0] == "trntui keys   (esc, q or ? closes)"
        assert "  ← / h                 Pan left" in lines
        assert "  + / =                 Zoom in" in lines
        assert "  /                     Filter" in lines
        assert "  Enter                 Chain" in lines
        for section, entries in key_reference(sections(TrntuiApp)):
            assert section in lines
            assert len(entries) >= 2
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


async def test_command_palette_sorts_by_a_column(corpus_dir):
    """ctrl+p lists every action, including sort by each column; choosing one runs it."""
    async with opened(corpus_dir / "cuda_simple_add.json.gz") as (app, pilot):
        titles = [title for title, _, _ in app.palette_commands()]
        for expected in ("Quit", "Help", "Maximize", "Ops: Filter", "Timeline: Zoom in", "Timeline: Fit all",
                         "Chain: Args", "Sort by Name", "Sort by # Calls", "Sort by Self CUDA", "Sort by % CUDA"):
            assert expected in titles
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"# calls")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert "sort: # Calls ↓" in str(app.ops.border_title)


async def test_load_error_is_one_line_and_app_stays_usable(tmp_path):
    """A file that is not a trace: an error screen with the reason, no traceback; the app keeps working."""
    bad = tmp_path / "trace.json"
    bad.write_text("this is not json at all {")
    async with opened(bad) as (app, pilot):
        assert isinstance(app.screen, ErrorScreen)
        reason = app.screen.query_one("#error-reason", Static).render_line(0).text.strip()
        assert reason and "Traceback" not in reason and "\n" not in app.load_error
        assert app.load_error.startswith(str(bad)) or "trace.json" in app.load_error
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ErrorScreen)
        assert "error:" in screen_text(app).splitlines()[0]
        await pilot.press("s", "tab", "l", "plus", "enter", "question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


async def test_missing_path_reports_error(tmp_path):
    """A path that does not exist is reported in one line."""
    async with opened(tmp_path / "nope") as (app, pilot):
        assert app.load_error.endswith("no such file or directory")


async def test_run_picker_and_switching_runs(cpu_profile_dir):
    """A directory with several runs asks which one; `r` switches later."""
    if not cpu_profile_dir.is_dir():
        pytest.skip("no multi-run sample profile directory (sample_profiles/cpu)")
    app = TrntuiApp(cpu_profile_dir)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, RunPicker)
        options = app.screen.query_one(OptionList)
        names = [str(options.get_option_at_index(k).prompt) for k in range(options.option_count)]
        assert {"naive", "fused", "compiled"} <= set(names)
        naive = names.index("naive")
        await pilot.press(*["down"] * naive, "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.run_name == "naive"
        assert "run naive" in screen_text(app).splitlines()[0]
        assert app.ops.table is not None and "aten::mul" in app.ops.table.name
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, RunPicker)
        await pilot.press("up", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.run_name == names[naive - 1]


async def test_first_paint_does_not_wait_for_the_load(corpus_dir, monkeypatch):
    """The UI paints and answers keys while the worker is still reading the file."""
    import trntui.session as loaders

    release = threading.Event()
    real = loaders.load_run

    def slow_load(run, *args, **kwargs):
        release.wait(10)
        return real(run, *args, **kwargs)

    monkeypatch.setattr(loaders, "load_run", slow_load)
    app = TrntuiApp(corpus_dir / "cuda_simple_add.json.gz")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.2)
        assert "loading: reading" in screen_text(app).splitlines()[0]
        assert app.profile is None
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.profile is not None


def test_open_command_is_registered():
    """`trntui open PATH [--run NAME]` is a CLI subcommand."""
    from trntui.cli import build_parser

    args = build_parser().parse_args(["open", "some/dir", "--rank", "rank1"])
    assert args.path == "some/dir" and args.run == "rank1"
    assert callable(args.func)


async def test_q_quits(corpus_dir):
    """`q` leaves the app (outside the filter box, where it is a letter)."""
    async with opened(corpus_dir / "cpu_only.json.gz") as (app, pilot):
        await pilot.press("slash", "q")
        await pilot.pause()
        assert app.is_running and app.query_one("#filter").value == "q"
        await pilot.press("escape", "q")
        await pilot.pause()
        assert not app.is_running
