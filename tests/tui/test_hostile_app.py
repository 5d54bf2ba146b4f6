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
def slow_bomb(tmp_path, monkeypatch) -> tuple[Path, list[int]]:
    """The bomb, and the count of scan pieces reported so far (one per 1 MiB piece)."""
    import trntui.loaders.scan as scan

    real = scan.report
    pieces = [0]

    def slow_report(*a):
        pieces[0] += 1
        time.sleep(PIECE_DELAY)
        real(*a)

    monkeypatch.setattr(scan, "report", slow_report)
    return whitespace_bomb(tmp_path / "whitespace.json", size=PIECES * MiB, where="head"), pieces


async def _wait_for(pilot, app, text: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        if text in screen_text(app).splitlines()[0]:
            return True
    return False


# The checks count pieces, not seconds: the load stops at the first piece after the key (a few pieces on a
# busy machine), where it used to scan all of them (and, before that, the whole file in one go).
async def test_escape_cancels_a_whitespace_bomb_promptly(slow_bomb):
    bomb, pieces = slow_bomb
    app = TrntuiApp(bomb, load_options=LoadOptions(cache=False, memory_budget=None))
    async with app.run_test(size=(120, 30)) as pilot:
        assert await _wait_for(pilot, app, "skipping whitespace", 30), screen_text(app).splitlines()[0]
        at_key = pieces[0]
        await pilot.press("escape")
        assert await _wait_for(pilot, app, "load cancelled", 30), screen_text(app).splitlines()[0]
        assert not app.loading_now() and app.profile is None
        after = pieces[0] - at_key
        assert after < (PIECES - at_key) // 2, f"{after} of the {PIECES - at_key} pieces left were scanned after Esc"
        await pilot.press("q")


async def test_q_quits_during_a_whitespace_bomb_promptly(slow_bomb):
    bomb, pieces = slow_bomb
    app = TrntuiApp(bomb, load_options=LoadOptions(cache=False, memory_budget=None))
    async with app.run_test(size=(120, 30)) as pilot:
        assert await _wait_for(pilot, app, "skipping whitespace", 30)
        at_key = pieces[0]
        await pilot.press("q")
    after = pieces[0] - at_key
    time.sleep(10 * PIECE_DELAY)  # a scan still running in a thread behind the closed app would go on counting
    assert pieces[0] - at_key == after, "the load went on after the app was closed"
    assert after < (PIECES - at_key) // 2, f"{after} of the {PIECES - at_key} pieces left were scanned after q"
