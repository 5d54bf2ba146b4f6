"""Issue 19, item 4, in the app: Esc and q work promptly on a whitespace bomb, with the REAL loader (its
whitespace scans report, and so can be cancelled, after every 1 MiB piece). The scan is slowed (40 ms per
piece) so that the load is surely still running when the key is pressed; without the per-piece reports the
load would run to its end (seconds) before either key took effect."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))

from malformed.bombs import MiB, whitespace_bomb  # noqa: E402

from trntui.session import LoadOptions  # noqa: E402
from trntui.tui.app import TrntuiApp  # noqa: E402
from trntui.tui.capture import screen_text  # noqa: E402

PIECE_DELAY = 0.04
PIECES = 96


@pytest.fixture
def slow_bomb(tmp_path, monkeypatch) -> Path:
    import trntui.loaders.scan as scan

    real = scan.report

    def slow_report(*a):
        time.sleep(PIECE_DELAY)
        real(*a)

    monkeypatch.setattr(scan, "report", slow_report)
    return whitespace_bomb(tmp_path / "whitespace.json", size=PIECES * MiB, where="head")


async def _wait_for(pilot, app, text: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        if text in screen_text(app).splitlines()[0]:
            return True
    return False


async def test_escape_cancels_a_whitespace_bomb_promptly(slow_bomb):
    app = TrntuiApp(slow_bomb, load_options=LoadOptions(cache=False, memory_budget=None))
    async with app.run_test(size=(120, 30)) as pilot:
        assert await _wait_for(pilot, app, "skipping whitespace", 20), screen_text(app).splitlines()[0]
        t0 = time.monotonic()
        await pilot.press("escape")
        assert await _wait_for(pilot, app, "load cancelled", 5), screen_text(app).splitlines()[0]
        took = time.monotonic() - t0
        assert took < 1.5, f"Esc took {took:.1f} s (the load had {PIECES * PIECE_DELAY:.1f} s to go)"
        assert not app.loading_now() and app.profile is None
        await pilot.press("q")


async def test_q_quits_during_a_whitespace_bomb_promptly(slow_bomb):
    app = TrntuiApp(slow_bomb, load_options=LoadOptions(cache=False, memory_budget=None))
    async with app.run_test(size=(120, 30)) as pilot:
        assert await _wait_for(pilot, app, "skipping whitespace", 20)
        t0 = time.monotonic()
        await pilot.press("q")
    took = time.monotonic() - t0
    assert took < 2.0, f"q took {took:.1f} s to leave (the load had {PIECES * PIECE_DELAY:.1f} s to go)"
