"""Fixtures for the Pilot tests: real traces and a helper that opens the app and waits for the load."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import AsyncIterator, Callable

import pytest

from trntui.tui.app import TrntuiApp

REPO = Path(__file__).resolve().parents[2]
SAMPLE_CPU = REPO / "sample_profiles" / "cpu"


@pytest.fixture(scope="session")
def cpu_profile_dir(corpus_dir: Path) -> Path:
    """A CPU capture directory with several runs (naive/fused/compiled RMSNorm), else the corpus CPU trace."""
    if (SAMPLE_CPU / "naive").is_dir():
        return SAMPLE_CPU
    return corpus_dir / "cpu_only.json.gz"


@contextlib.asynccontextmanager
async def opened(path: Path, size: tuple[int, int] = (80, 24), run: str | None = None) -> AsyncIterator:
    """Run the app on `path` at `size`, wait for the load worker, yield (app, pilot)."""
    app = TrntuiApp(path, run)
    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        # the worker is done; wait until the app has handled what it posted (loaded, failed or a run picker)
        await settle(pilot, lambda: not any(pane.loading for pane in app.panes()))
        yield app, pilot


async def settle(pilot, condition: Callable[[], bool], timeout: float = 20.0) -> bool:
    """Let the app process its messages and repaint until `condition()` holds (a loaded machine can need more
    than one round), at most `timeout` seconds; returns whether it holds."""
    deadline = time.monotonic() + timeout
    await pilot.pause()
    while not condition() and time.monotonic() < deadline:
        await pilot.pause(0.02)
    await pilot.pause()
    return condition()
