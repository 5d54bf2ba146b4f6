"""The Ranks screen (R): a generated 4-rank job (a real corpus rank replicated, rank 1 slowed) as a ranks × steps
heatmap, the straggler marked, Enter opens a rank in the explorer, space + c compares two ranks."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.rank_job import make_job
from tests.tui.test_compare_view import wait_for
from trntui.tui.app import TrntuiApp
from trntui.tui.screens.compare import CompareScreen
from trntui.tui.screens.ranks import RanksScreen
from trntui.tui.screens.runs import RunPicker

SIZE = (160, 40)


@pytest.fixture(scope="module")
def job4(corpus_dir: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("job4")
    make_job(corpus_dir, out, ranks=4, slow_rank=1, slow=1.3)
    return out


async def open_ranks(app: TrntuiApp, pilot) -> RanksScreen:
    await app.workers.wait_for_complete()
    await pilot.pause()
    assert isinstance(app.screen, RunPicker)  # four runs: the explorer asks which one
    await pilot.press("escape")
    await pilot.press("R")
    assert await wait_for(pilot, lambda: isinstance(app.screen, RanksScreen))
    screen = app.screen
    assert await wait_for(pilot, lambda: screen.report is not None, tries=1500)
    await pilot.pause()
    return screen


async def test_heatmap_straggler_and_open_a_rank(job4: Path) -> None:
    app = TrntuiApp(job4)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_ranks(app, pilot)
        title = str(screen.query_one("#ranks-title").render())
        assert f"Ranks · {job4.name} · 4 ranks · 2 steps · stragglers: 1 · median rank" in title
        hm = screen.heatmap
        assert hm.line_text(0).startswith("rank").__bool__() and "mean ms │" in hm.line_text(0)
        lines = [hm.line_text(y) for y in range(1, 5)]
        assert [ln.split()[0] for ln in lines] == ["0", "1", "2", "3"]
        assert lines[1].split()[1] == "*" and all("*" not in ln for k, ln in enumerate(lines) if k != 1)
        cells = lines[0].split("│")[1]
        assert set(cells.strip()) <= set("░▒▓█ ") and len(cells.strip()) >= 2
        assert "shade: ░ " in str(screen.query_one("#ranks-rule").render())
        await pilot.press("down")
        detail = screen.detail_text()
        assert detail.startswith("rank 1 (rank1) · STRAGGLER: working time")
        assert "step 551:" in detail and "top ops (self device): torch::autograd::CppNode" in detail
        await pilot.press("right")
        assert "step 552:" in screen.detail_text()
        report = screen.report
        await pilot.press("enter")
        assert await wait_for(pilot, lambda: app.run_name == "rank1", tries=1500)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not isinstance(app.screen, RanksScreen)
        assert "run rank1" in str(app.query_one("#info").render())
        assert app.focused is app.timeline  # Enter opened the rank's timeline
        await pilot.press("R")  # back to the same report, not summarised again
        assert await wait_for(pilot, lambda: isinstance(app.screen, RanksScreen))
        assert app.screen.report is report


async def test_compare_two_marked_ranks(job4: Path) -> None:
    app = TrntuiApp(job4)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_ranks(app, pilot)
        await pilot.press("space", "down", "down", "space")
        assert [screen.report.rows[i].label for i in screen.heatmap.marked] == ["0", "2"]
        assert screen.compare_pair() == (0, 2)
        await pilot.press("c")
        assert await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen), tries=1500)
        cmp = app.screen
        assert [r.name for r in cmp.runs] == ["rank0", "rank2"]
        assert "rank0 vs rank2" in str(cmp.query_one("#compare-title").render())
        await pilot.press("escape")
        assert await wait_for(pilot, lambda: isinstance(app.screen, RanksScreen))
        await pilot.press("s")  # sort by step time: the slowest rank first
        assert screen.heatmap.line_text(1).split()[0] == "1"


async def test_two_jobs_under_the_path_the_ranks_of_the_run_on_screen(corpus_dir: Path, tmp_path: Path) -> None:
    """A folder holding two jobs: R shows the job of the rank being explored (the CLI asks for --job instead)."""
    make_job(corpus_dir, tmp_path / "exp1", ranks=3, slow_rank=1)
    make_job(corpus_dir, tmp_path / "exp2", ranks=3, slow_rank=2)
    app = TrntuiApp(tmp_path, "exp2: rank0")
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.run_name == "exp2: rank0"
        await pilot.press("R")
        assert await wait_for(pilot, lambda: isinstance(app.screen, RanksScreen))
        screen = app.screen
        assert await wait_for(pilot, lambda: screen.report is not None, tries=1500)
        await pilot.pause()
        assert "Ranks · exp2 · 3 ranks" in str(screen.query_one("#ranks-title").render())
        assert screen.heatmap.line_text(3).split()[:2] == ["2", "*"]


_RANKS_APP = '''
import asyncio, sys
import trntui.engine
trntui.engine.cpu_count = lambda: 2  # a pool of two worker processes on any machine (the case that crashed)
from trntui.tui.app import TrntuiApp
from trntui.tui.screens.ranks import RanksScreen
from trntui.tui.screens.runs import RunPicker


async def main(job):
    app = TrntuiApp(job)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        if isinstance(app.screen, RunPicker):
            await pilot.press("escape")
        await pilot.press("R")
        for _ in range(6000):
            screen = app.screen
            if isinstance(screen, RanksScreen) and (screen.report is not None or str(
                    screen.query_one("#ranks-title").render()).startswith("ranks: ")):  # shown, or failed
                break
            await pilot.pause(0.02)
        await pilot.pause()
        screen = app.screen
        print("TITLE", str(screen.query_one("#ranks-title").render()))
        for y in range(1, 5):
            print("ROW", screen.heatmap.line_text(y))


if __name__ == "__main__":  # the worker processes import this script again, as __mp_main__
    asyncio.run(main(sys.argv[1]))
'''


def test_ranks_screen_from_a_directory_holding_a_trntui_folder(job4: Path, tmp_path: Path) -> None:
    """Issue 26 item 1, the app's side: `R` run from the parent of a clone (a current directory holding a folder
    named `trntui`) summarises the ranks in worker processes and shows them, with no traceback on the terminal.
    The app runs in a process of its own, started as the `trntui` console script starts (its script's directory
    first on `sys.path`), since the crash was in the worker processes' start-up from that directory."""
    import subprocess
    import sys

    from tests.test_processes import _env, _kill_session

    shadowed = tmp_path / "parent-of-a-clone"
    (shadowed / "trntui").mkdir(parents=True)
    script = tmp_path / "bin" / "ranks_app.py"
    script.parent.mkdir()
    script.write_text(_RANKS_APP)
    proc = subprocess.Popen([sys.executable, str(script), str(job4)], cwd=shadowed, env=_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=300)
    finally:
        _kill_session(proc.pid)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "ImportError" not in err and "worker process died" not in out, err
    title = next(line for line in out.splitlines() if line.startswith("TITLE "))
    assert f"Ranks · {job4.name} · 4 ranks · 2 steps · stragglers: 1" in title, out
    rows = [line.split()[1:] for line in out.splitlines() if line.startswith("ROW ")]
    assert [r[0] for r in rows] == ["0", "1", "2", "3"] and rows[1][1] == "*", out
