"""`trntui open` on Neuron profiles: a multi-rank directory offers one run per rank; a rank opens by name and
its Neuron lanes and chains render (Textual Pilot, headless)."""

from __future__ import annotations

from pathlib import Path

from trntui.tui.app import TrntuiApp

from tests.neuron_samples import generator

REPO = Path(__file__).resolve().parents[1]
INST = "i-0a1b2c3d4e5f60718"


_generator = generator


def _ranks(tmp_path: Path) -> Path:
    gen = _generator()
    out = tmp_path / "profile_output"
    for rank, pid in enumerate((100, 200)):
        cap = gen.build_capture("naive", pid=pid, rank=rank)
        ts = out / f"{INST}_pid_{pid}" / gen.TIMESTAMP_DIR
        gen.write_trace(cap, ts / "trace.json")
        gen.write_parquet_export(cap, ts / "explorer_parquet")
    return out


async def test_open_multi_rank_lists_ranks_and_opens_one(tmp_path: Path) -> None:
    out = _ranks(tmp_path)
    app = TrntuiApp(out, None)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert [r.name for r in app.runs] == [f"rank0 ({INST}_pid_100)", f"rank1 ({INST}_pid_200)"]
    app = TrntuiApp(out, "rank1")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.run_name == f"rank1 ({INST}_pid_200)"
        profile = app.profile
        labels = {lane.label for lane in profile.lanes}
        assert f"{INST}/PID:200/neuron_hw/NC0:1" in labels
        assert profile.meta.backend == "NEURON"
