"""The app's `w` (save the ops table as CSV) under hostile targets (issue 28 class 2 and 3): a symbolic link is
refused (its target untouched), an existing file is replaced only after a yes, a FIFO is refused at once (the
app does not freeze: the test runs under an alarm that proves it returns)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.test_hostile_files import returns_within

from .conftest import opened, settle

TRACE = "cuda_simple_add.json.gz"


async def _save_to(app, pilot, target: Path) -> None:
    from textual.widgets import Input

    from trntui.tui.screens.prompt import PromptScreen

    await pilot.press("w")
    await settle(pilot, lambda: isinstance(app.screen, PromptScreen))
    app.screen.query_one(Input).value = str(target)
    await pilot.press("enter")
    await pilot.pause()


def _said(app) -> list[str]:
    return [str(n.message) for n in app._notifications]  # noqa: SLF001


async def test_w_refuses_a_symlink_and_a_dangling_one(corpus_dir, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "a.csv").symlink_to(victim)
    (tmp_path / "b.csv").symlink_to(tmp_path / "elsewhere.csv")
    async with opened(corpus_dir / TRACE, size=(100, 24)) as (app, pilot):
        for name in ("a.csv", "b.csv"):
            await _save_to(app, pilot, tmp_path / name)
            assert any("could not save" in m and name in m and "symbolic link" in m for m in _said(app)), _said(app)
    assert victim.read_text() == "precious" and not (tmp_path / "elsewhere.csv").exists()


async def test_w_asks_before_replacing_an_existing_file(corpus_dir, tmp_path):
    from trntui.tui.screens.prompt import ConfirmScreen

    mine = tmp_path / "mine.csv"
    mine.write_text("my own data")
    async with opened(corpus_dir / TRACE, size=(100, 24)) as (app, pilot):
        await _save_to(app, pilot, mine)
        assert await settle(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "exists" in app.screen.question and "Replace" in app.screen.question
        await pilot.press("n")
        await pilot.pause()
        assert mine.read_text() == "my own data" and any("not saved" in m for m in _said(app))
        await _save_to(app, pilot, mine)
        assert await settle(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await pilot.pause()
    assert mine.read_text().startswith("name,device_type,")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.csv"]  # no temporary file left


async def test_w_to_a_fifo_returns_at_once(corpus_dir, tmp_path):
    fifo = tmp_path / "out.csv"
    os.mkfifo(fifo)
    async with opened(corpus_dir / TRACE, size=(100, 24)) as (app, pilot):
        with returns_within():
            await _save_to(app, pilot, fifo)
        assert any("could not save" in m and "FIFO" in m for m in _said(app)), _said(app)
