"""The ops pane: key_averages rows, sort keys, regex filter, a 10k-row table."""

from __future__ import annotations

import numpy as np

from trntui.analysis.key_averages import OpTable
from trntui.tui.widgets.op_table import OpTableView

from .conftest import opened


def first_names(ops: OpTableView, n: int = 3) -> list[str]:
    return [ops.render_line(y).text.split("  ")[0].strip() for y in range(1, n + 1)]


async def test_default_sort_is_device_time(corpus_dir):
    """A CUDA trace opens sorted by Self CUDA with torch's columns and formatting (every column fits at 120
    columns; at 80 the totals give way to the names: tests/tui/test_layout.py)."""
    async with opened(corpus_dir / "cuda_simple_add.json.gz", size=(120, 30)) as (app, pilot):
        ops = app.ops
        assert ops.render_line(0).text.split() == [
            "Name", "#", "Calls", "Self", "CPU", "CPU", "total", "Self", "CUDA↓", "CUDA", "total", "%", "CUDA",
        ]
        assert ops.render_line(1).text == (
            "aten::uniform_" + " " * 50 + "2  164.000us  231.000us   10.000us    10.000us   62.50%"
        )
        assert ops.render_line(3).text.startswith("aten::add" + " " * 55 + "2  579.000us  676.000us    6.000us")
        assert "sort: Self CUDA ↓" in str(ops.border_title)
        assert "25/25 rows" in str(ops.border_title)


async def test_sort_by_each_column(corpus_dir):
    """Digits sort by each column, `S` reverses, `s` cycles; the title names the sort."""
    async with opened(corpus_dir / "cuda_simple_add.json.gz") as (app, pilot):
        ops = app.ops
        await pilot.press("2")
        assert first_names(ops, 1) == ["cudaDeviceSynchronize"]  # the whole name fits now
        assert "sort: # Calls ↓" in str(ops.border_title)
        await pilot.press("3")
        assert first_names(ops, 3) == ["cudaDeviceGetStreamPriorityRange", "[param|cuda]", "aten::mul"]
        await pilot.press("4")
        assert first_names(ops, 3) == ["[param|cuda]", "aten::rand", "aten::empty"]
        await pilot.press("5")
        assert first_names(ops, 1) == ["aten::uniform_"]
        await pilot.press("6")
        assert first_names(ops, 2) == ["[param|cuda]", "aten::rand"]
        await pilot.press("7")
        assert "sort: % CUDA ↓" in str(ops.border_title)
        assert first_names(ops, 1) == ["aten::uniform_"]
        await pilot.press("1")
        assert "sort: Name ↑" in str(ops.border_title)
        assert first_names(ops, 1) == ["[param|clear_cache]"]
        await pilot.press("S")
        assert "sort: Name ↓" in str(ops.border_title)
        assert first_names(ops, 1) == ["vectorized_elementwise_kernel<…CUDAFun…>"]  # short: f shows it whole
        await pilot.press("s")
        assert "sort: # Calls ↓" in str(ops.border_title)


async def test_filter_regex_and_invalid_regex(corpus_dir):
    """`/` filters rows by a case-insensitive regex; an invalid regex is a notice, not a crash."""
    async with opened(corpus_dir / "cuda_simple_add.json.gz") as (app, pilot):
        ops = app.ops
        await pilot.press("slash", *"(ADD|mul)$", "enter")
        await pilot.pause()
        assert sorted(first_names(ops, 2)) == ["aten::add", "aten::mul"]
        assert ops.render_line(3).text.strip() == ""
        assert "2/25 rows" in str(ops.border_title)
        assert "filter: /(ADD|mul)$/" in str(ops.border_title)
        assert app.focused is ops
        await pilot.press("slash", "ctrl+u", "[", "enter")
        await pilot.pause()
        assert any("invalid regex" in n.message for n in app._notifications)
        assert "filter" not in str(ops.border_title)  # the last valid pattern (empty) stays
        await pilot.press("escape")
        await pilot.pause()
        assert "filter" not in str(ops.border_title)
        assert "25/25 rows" in str(ops.border_title)


async def test_enter_selects_op_everywhere(corpus_dir):
    """Enter on a row highlights its instances on the timeline and chains the first instance."""
    async with opened(corpus_dir / "cuda_simple_add.json.gz") as (app, pilot):
        await pilot.press("down", "down", "enter")  # aten::add
        await pilot.pause()
        profile = app.profile
        assert profile.name_of(app.chain.event) == "aten::add"
        assert len(app.timeline.instances) == 2
        assert profile.name_of(app.timeline.event_under_cursor()) == "aten::add"
        assert "aten::add" in app.timeline.render_line(1).text
        assert "Chain · aten::add" in str(app.chain.border_title)


def _big_table(rows: int) -> OpTable:
    rng = np.random.default_rng(0)
    count = rng.integers(1, 100, rows)
    self_cpu = rng.random(rows) * 1000
    return OpTable(
        name=[f"op_{k:05d}" for k in range(rows)],
        device_type=["CPU"] * rows,
        is_user_annotation=np.zeros(rows, bool),
        input_shapes=[""] * rows,
        count=count,
        self_cpu_time_total=self_cpu,
        cpu_time_total=self_cpu * 2,
        self_device_time_total=np.zeros(rows),
        device_time_total=np.zeros(rows),
        rows_events=[np.empty(0, np.int64)] * rows,
        sum_self_cpu=float(self_cpu.sum()),
    )


async def test_ten_thousand_rows_scroll_and_sort(corpus_dir):
    """A 20k-row table scrolls to the end and re-sorts without rebuilding the widget (virtualised)."""
    async with opened(corpus_dir / "cpu_only.json.gz", size=(80, 24)) as (app, pilot):
        ops = app.ops
        table = _big_table(20_000)
        ops.set_table(table)
        await pilot.pause()
        await pilot.press("end")
        await pilot.pause()
        assert ops.cursor == 19_999
        visible = [ops.render_line(y).text for y in range(1, ops.size.height)]
        assert any(line.strip() and line.split()[0] == ops.table.name[int(ops.view[-1])] for line in visible)
        await pilot.press("1", "home")
        await pilot.pause()
        assert ops.render_line(1).text.startswith("op_00000")
        await pilot.press("S")
        assert ops.render_line(1).text.startswith("op_19999")
