"""Layout: the ops table's name column widens with the terminal and scrolls horizontally, narrow terminals drop
the least important columns (never the sorted one), and a GPU annotation's row reads differently from its CPU
twin. At 80×24 and 200×55."""

from __future__ import annotations

import re

import pytest

from .conftest import opened

SIZES = [(80, 24), (200, 55)]
NS68K = "cuda_ns_resolution_68k.json.gz"


def name_width(app) -> int:
    """Cells of the name column (up to the first number column's title)."""
    return app.ops.render_line(0).text.index("# Calls")


@pytest.mark.parametrize("size", SIZES)
async def test_names_are_readable(corpus_dir, size):
    """Names get at least 32 cells at 80 columns and most of the extra width of a wide terminal; ←/→ scroll
    them so a long C++ kernel name reads in full; twin rows of a GPU annotation are marked [CUDA]."""
    async with opened(corpus_dir / NS68K, size=size) as (app, pilot):
        ops = app.ops
        width = ops.size.width
        assert name_width(app) >= 32
        if size[0] >= 200:
            assert name_width(app) >= width - 80  # the name column takes the extra width
            assert not ops.hidden_columns
        else:
            assert ops.hidden_columns and "Self CUDA" not in ops.hidden_columns
            assert "columns hidden" in str(ops.border_title)
        lines = [ops.row_text(k) for k in range(len(ops.view))]
        twins = [line for line in lines if line.startswith("DistributedDataParallel.forward")]
        assert len(twins) == 2 and len({t[:name_width(app)].rstrip() for t in twins}) == 2
        assert any("DistributedDataParallel.forward [CUDA]" in t for t in twins)
        # the longest kernel name, read in pieces with →
        k = max(range(len(ops.view)), key=lambda p: len(app.table.name[int(ops.view[p])]))
        name = app.table.name[int(ops.view[k])]
        assert len(name) > name_width(app)
        start = ops.row_text(k)[: name_width(app)].rstrip()
        assert start.endswith("…") and name.startswith(start[:-1])  # cut: the end is not visible yet
        assert name[-6:] not in start
        ops.focus()
        for _ in range(len(name) // 8 + 1):
            await pilot.press("right")
            shown = ops.row_text(k)[: name_width(app)].strip()
            assert shown.startswith("…") and shown.strip("…")[:10] in name  # a window onto the same name
        assert name[-6:] in ops.row_text(k)  # its end reads now
        await pilot.press(*["left"] * (len(name) // 8 + 2))
        assert ops.row_text(k)[: name_width(app)].rstrip() == start
        # sorting by a column that would give way keeps it on screen
        await pilot.press("4")  # CPU total
        assert re.search(r"CPU total[↓↑]", ops.render_line(0).text)
