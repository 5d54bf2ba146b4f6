"""Fixtures for the Pilot tests: real traces and a helper that opens the app and waits for the load."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import AsyncIterator

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
        await pilot.pause()
        yield app, pilot
