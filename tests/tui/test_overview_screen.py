"""The Overview screen (`o`): breakdown bars, device metrics, kernel table, recommendations, memory — read off
the rendered lines; Enter on a kernel shows its longest instance on the timeline."""

from __future__ import annotations

from pathlib import Path

import pytest

from trntui.tui.capture import screen_text
from trntui.tui.screens.overview import OverviewScreen

from .conftest import opened

REPO = Path(__file__).resolve().parents[2]


def region_words(app, selector: str) -> str:
    """The words a widget shows on screen (its region cut out of the rendered lines), wraps joined."""
    lines = screen_text(app).splitlines()
    r = app.screen.query_one(selector).region
    return " ".join(" ".join(line[r.x:r.right] for line in lines[r.y:r.bottom]).split())


async def _open_overview(app, pilot):
    await pilot.press("o")
    await pilot.pause()
    assert isinstance(app.screen, OverviewScreen)
    await app.screen.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()
    return app.screen


async def test_overview_screen_on_a_cuda_trace(corpus_dir):
    async with opened(corpus_dir / "cuda_ns_resolution_68k.json.gz", size=(120, 40)) as (app, pilot):
        assert ("Overview", "key: o") in [(t, h) for t, h, _ in app.palette_commands()]  # in the command palette
        screen = await _open_overview(app, pilot)
        lines = screen_text(app).splitlines()
        assert lines[0].strip() == "Overview · cuda_ns_resolution_68k.json.gz · CUDA · 5 steps · avg step 96.70ms"
        # breakdown: a legend with the average shares, then one bar per step, in Unicode blocks
        text = "\n".join(lines)
        assert "█ Kernel 96.8%" in text and "█ CPU Exec 1.3%" in text
        bars = [line for line in lines if line.lstrip().startswith(("avg ", "step 10"))]
        assert [b.split()[0:2] for b in bars] == [["avg", "96.70ms"], ["step", "101"], ["step", "102"], ["step", "103"],
                                                  ["step", "104"], ["step", "105"]]
        assert all("█" * 30 in b for b in bars)
        # the longest step draws the longest bar
        assert max(bars[1:], key=lambda b: b.count("█")).split()[1] == "101"
        # metrics
        assert any("GPU utilization" in line and line.rstrip().endswith("96.82%") for line in lines)
        assert any("Est. SM efficiency" in line and "94.92%" in line for line in lines)
        assert any("Est. achieved occupancy" in line and "46.45%" in line for line in lines)
        # kernel table, sorted by total time
        head = next(k for k, line in enumerate(lines) if line.startswith("─Kernels · sort: Total ↓ · 77/77 rows"))
        assert lines[head + 1].split()[:3] == ["Kernel", "Calls", "Total↓"]
        first = lines[head + 2]
        assert first.startswith("vectorized_elementwise_kernel<…CUDAFunctor_") and "160" in first and "26.30ms" in first
        # recommendation text
        assert region_words(app, "#ov-recs").startswith(
            "• [amp] 19% of the kernel time comes from ops that could use Tensor Cores, but no kernel does.")
        assert region_words(app, "#ov-memory").startswith("No [memory] records")


async def test_kernel_table_sort_filter_and_jump_to_the_longest_instance(corpus_dir):
    async with opened(corpus_dir / "cuda_ns_resolution_68k.json.gz", size=(120, 40)) as (app, pilot):
        screen = await _open_overview(app, pilot)
        table = screen.kernels
        await pilot.press("2")  # column 2: Calls
        assert table.title.startswith("Kernels · sort: Calls ↓")
        calls = [table.rows[k].calls for k in table.view]
        assert calls == sorted(calls, reverse=True)
        await pilot.press("slash")
        await pilot.press(*"sgemm", "enter")
        await pilot.pause()
        assert table.title.endswith("· filter: /sgemm/")
        assert table.view and all("sgemm" in table.rows[k].name for k in table.view)
        row = table.rows[table.view[0]]
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, OverviewScreen)  # back on the explorer
        prof = app.profile
        ev = app.timeline.cursor_event if hasattr(app.timeline, "cursor_event") else None
        assert row.longest >= 0 and prof.end[row.longest] - prof.start[row.longest] == row.max_ns
        if ev is not None:
            assert ev == row.longest
        assert prof.name_of(row.longest) in screen_text(app)


async def test_by_op_view_and_neuron_profile():
    async with opened(REPO / "sample_profiles" / "neuron" / "naive", size=(100, 32)) as (app, pilot):
        screen = await _open_overview(app, pilot)
        text = screen_text(app)
        assert "█ NeuronCore 95.2%" in text
        assert "NeuronCore busy  95.22%" in text and "NC0  95.22%  (6 executions" in text
        assert "[neuron_dispatches] Each step runs 6.0 separate NeuronCore executions" in region_words(app, "#ov-recs")
        await pilot.press("v")
        await pilot.pause()
        lines = screen_text(app).splitlines()
        head = next(k for k, line in enumerate(lines) if line.startswith("─Kernels × op"))
        rows = lines[head + 2: head + 6]
        assert any("aten::mul" in r and " 3 " in r and "1.16ms" in r for r in rows)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, OverviewScreen)


async def test_cpu_only_profile_has_no_kernel_table(corpus_dir):
    async with opened(corpus_dir / "cpu_only.json.gz", size=(100, 30)) as (app, pilot):
        await _open_overview(app, pilot)
        text = screen_text(app)
        assert "No device work in this profile" in text
        assert "─Kernels" not in text
        assert region_words(app, "#ov-recs").startswith("• [communication] 85.1% of the step time is communication")


@pytest.mark.torch  # profiles with torch
async def test_memory_curve_panel_on_a_profile_memory_capture(tmp_path):
    import pytest

    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, schedule

    model = torch.nn.Sequential(torch.nn.Linear(128, 512), torch.nn.ReLU(), torch.nn.Linear(512, 128))
    path = tmp_path / "trace.json"
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, schedule=schedule(wait=0, warmup=1, active=2, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
        for _ in range(3):
            model(torch.randn(32, 128)).sum().backward()
            prof.step()
    async with opened(path, size=(120, 40)) as (app, pilot):
        screen = await _open_overview(app, pilot)
        curve = screen.overview.memory.by_device("CPU")
        words = region_words(app, "#ov-memory")
        assert words.startswith("CPU peak ")
        assert f"in {curve.peak_op}" in words
        assert any(ch in words for ch in "▁▂▃▄▅▆▇█")
