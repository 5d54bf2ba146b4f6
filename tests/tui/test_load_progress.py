"""Loading a big trace in the app (issue 7): the header shows the loader's progress, Esc cancels the load at the
loader's next chunk, and quitting during a load does not wait for the whole file."""

from __future__ import annotations

import threading
import time

from trntui import progress
from trntui.tui.app import TrntuiApp
from trntui.tui.capture import screen_text

from .conftest import opened


def _endless_load(started: threading.Event, stopped: list[float]):
    """A stand-in `load_run` that reports decoding progress until the reporter cancels it."""

    def load(run, *args, **kw):
        started.set()
        try:
            for k in range(10_000):
                progress.report("decoding", min(k + 1, 99), 200)
                time.sleep(0.01)
        finally:
            stopped.append(time.monotonic())
        raise AssertionError("never cancelled")

    return load


async def test_header_shows_percent_and_esc_cancels(corpus_dir, monkeypatch):
    from trntui import session as loaders

    started, stopped = threading.Event(), []
    monkeypatch.setattr(loaders, "load_run", _endless_load(started, stopped))
    app = TrntuiApp(corpus_dir / "cuda_simple_add.json.gz")
    async with app.run_test(size=(100, 24)) as pilot:
        started.wait(5)
        await pilot.pause(0.4)
        screen = screen_text(app).splitlines()
        head = screen[0]
        assert "loading: decoding" in head and "%" in head and "Esc cancels" in head
        pct = int(head.split("decoding ")[1].split("%")[0])
        assert 0 < pct < 50
        # the panes say "loading…" (drawn once, not Textual's indicator redrawn 16 times a second: the header moves)
        assert any("loading…" in line for line in screen[1:]) and not any("Loading..." in ln for ln in screen)
        await pilot.press("escape")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert stopped, "the loader was not stopped"
        head = screen_text(app).splitlines()[0]
        assert "load cancelled" in head and "q: quit" in head
        assert app.profile is None and not app.ops.loading
        await pilot.press("q")
    assert app.return_code == 0 or app.return_code is None


async def test_quit_during_load_stops_the_loader(corpus_dir, monkeypatch):
    from trntui import session as loaders

    started, stopped = threading.Event(), []
    monkeypatch.setattr(loaders, "load_run", _endless_load(started, stopped))
    app = TrntuiApp(corpus_dir / "cuda_simple_add.json.gz")
    t0 = time.monotonic()
    async with app.run_test(size=(80, 24)) as pilot:
        started.wait(5)
        await pilot.press("q")
    deadline = time.monotonic() + 5
    while not stopped and time.monotonic() < deadline:
        time.sleep(0.02)
    assert stopped and stopped[0] - t0 < 5  # stopped at a chunk, not after 10,000 of them (100 s)


async def test_real_load_still_opens_after_progress_reports(corpus_dir):
    """The real loader reports through the worker's reporter and the profile opens as before."""
    async with opened(corpus_dir / "cuda_ns_resolution_68k.json.gz") as (app, pilot):
        assert app.profile is not None and len(app.profile) > 0
        assert "loading" not in screen_text(app).splitlines()[0]


async def test_ctrl_c_during_load_cancels_it_and_quits(corpus_dir, monkeypatch):
    """Ctrl-C while the run loads (issue 26 item 9: it was ignored, Esc worked): the loader stops at its next
    chunk and the app quits with the code of q during a load, without an exception; once loaded, Ctrl-C only
    says how to quit."""
    from trntui import session as loaders

    started, stopped = threading.Event(), []
    monkeypatch.setattr(loaders, "load_run", _endless_load(started, stopped))
    app = TrntuiApp(corpus_dir / "cuda_simple_add.json.gz")
    t0 = time.monotonic()
    async with app.run_test(size=(80, 24)) as pilot:
        started.wait(5)
        await pilot.pause(0.2)
        assert app.loading_now()
        await pilot.press("ctrl+c")
        await pilot.pause(0.2)
        assert not app.is_running
    deadline = time.monotonic() + 5
    while not stopped and time.monotonic() < deadline:
        time.sleep(0.02)
    assert stopped and stopped[0] - t0 < 5  # stopped at a chunk, not after 10,000 of them (100 s)
    assert app.exit_code() == 0 and app._exception is None


async def test_ctrl_c_after_the_load_says_how_to_quit(corpus_dir):
    async with opened(corpus_dir / "cuda_simple_add.json.gz") as (app, pilot):
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running and app.profile is not None
        assert any("to quit" in str(n.message) for n in app._notifications)
