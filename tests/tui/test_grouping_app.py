"""What a run is, in the app: a folder of unrelated traces asks which one to open (one run per trace), and
`trntui open --merge` opens one run whose ops table sums the files'."""

from __future__ import annotations

import shutil
from pathlib import Path

from trntui.analysis.key_averages import key_averages
from trntui.session import find_runs, load_run
from trntui.tui.app import TrntuiApp
from trntui.tui.screens.runs import RunPicker

NAMES = ("cuda_compare_base.json.gz", "cuda_compare_test.json.gz")
OP = "Memcpy HtoD (Pinned -> Device)"


def _two_traces(corpus_dir: Path, out: Path) -> Path:
    out.mkdir()
    for name in NAMES:
        shutil.copy(corpus_dir / name, out / name)
    return out


def _calls(table, name: str) -> int:
    return sum(r["count"] for r in table.rows() if r["name"] == name)


async def test_a_folder_of_two_traces_is_two_runs_and_merge_is_one(corpus_dir: Path, tmp_path: Path) -> None:
    folder = _two_traces(corpus_dir, tmp_path / "two")
    app = TrntuiApp(folder)
    async with app.run_test(size=(120, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, RunPicker)
        assert sorted(r.name for r in app.runs) == sorted(NAMES)
    singles = [load_run(r) for r in find_runs(folder)]
    want = sum(_calls(key_averages(p), OP) for p in singles)
    assert want > 0
    app = TrntuiApp(folder, merge=True)
    async with app.run_test(size=(120, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not isinstance(app.screen, RunPicker)
        assert [r.name for r in app.runs] == ["two"] and app.run_name == "two"
        assert len(app.profile) == sum(len(p) for p in singles)
        row = next(app.ops.render_line(y).text for y in range(1, 30)
                   if app.ops.render_line(y).text.split("  ")[0].strip() == OP)
        assert int(row[len(OP):].split()[0]) == want
