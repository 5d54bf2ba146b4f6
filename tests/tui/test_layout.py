"""Layout: panes that tile the terminal (stacked when narrow; four ruled-off quadrants when wide, the fourth the
call tree of the selection), the ops table's name column widens with the terminal and scrolls horizontally,
narrow terminals drop the least important columns (never the sorted one), and a GPU annotation's row reads
differently from its CPU twin. At 80×24 and 200×55."""

from __future__ import annotations

import re

import pytest

from trntui.analysis.links import build_links
from trntui.report.format import simplified_name
from trntui.tui.capture import screen_text

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
        # a long kernel name (over the column by 64 cells or more: 8+ steps of →; the shortest such, as a
        # 608-character one takes 150 key presses to read and come back), read in pieces with →
        long = [p for p in range(len(ops.view)) if len(app.table.name[int(ops.view[p])]) >= name_width(app) + 64]
        k = min(long, key=lambda p: len(app.table.name[int(ops.view[p])]))
        name = app.table.name[int(ops.view[k])]
        assert len(name) > name_width(app)
        start = ops.row_text(k)[: name_width(app)].rstrip()
        assert len(start) < len(name) and not start.startswith("void ")  # shortened: its own name, not `void at::…`
        assert start.startswith(simplified_name(name).split("<")[0][:24]) and not start.startswith("void ")
        assert name[-6:] not in start
        ops.focus()
        presses = 0
        while name[-6:] not in ops.row_text(k) and presses <= len(name) // 8:
            await pilot.press("right")
            presses += 1
            shown = ops.row_text(k)[: name_width(app)].strip()
            assert shown.startswith("…") and shown.strip("…")[:10] in name  # a window onto the same name
        assert presses >= 8 and name[-6:] in ops.row_text(k)  # its end reads now
        await pilot.press(*["left"] * (presses + 1))  # and one more than needed: back at the start, not past it
        assert ops.row_text(k)[: name_width(app)].rstrip() == start
        # sorting by a column that would give way keeps it on screen
        await pilot.press("4")  # CPU total
        assert re.search(r"CPU total[↓↑]", ops.render_line(0).text)


@pytest.mark.parametrize("size", SIZES)
async def test_panes_tile_the_terminal(corpus_dir, size):
    """80×24: ops, timeline and chain stacked across the full width (no call-tree pane; Tab skips it). 200×55:
    four quadrants with no dead one: ops | timeline over chain | call tree, the right column ruled off by a
    line on every row; after Enter on the top op each quadrant shows something, the call tree that of the
    chained op's step with the cursor on it, and Enter there highlights its calls on the timeline."""
    async with opened(corpus_dir / "cuda_sampled_rank0.json.gz", size=size) as (app, pilot):
        width, height = size
        panes = [app.query_one("#ops-pane"), app.timeline, app.chain, app.calltree]
        ops, timeline, chain, tree = (p.region for p in panes)
        if width < 150:
            assert not app.calltree.display
            assert ops.width == timeline.width == chain.width == width
            assert ops.bottom <= timeline.y and timeline.bottom <= chain.y
            await pilot.press("tab", "tab", "tab")
            assert app.focused is app.ops
            return
        assert app.calltree.display
        # the quadrants: they share the columns and rows and cover everything between header and footer
        assert ops.x == chain.x == 0 and timeline.x == tree.x == ops.right
        assert ops.y == timeline.y == 1 and chain.y == tree.y == ops.bottom == timeline.bottom
        assert chain.bottom == tree.bottom == height - 1 and tree.right == width
        lines = screen_text(app).splitlines()
        for y in range(timeline.y, height - 1):
            assert lines[y][timeline.x] == ("┌" if y in (timeline.y, tree.y) else "│"), (y, lines[y])  # ruled off
        await pilot.press("tab", "tab", "tab")
        assert app.focused is app.calltree
        app.ops.focus()
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        lines = screen_text(app).splitlines()
        for region in (ops, timeline, chain, tree):  # something below the title of every quadrant
            assert any(lines[y][region.x + 1:region.right].strip() for y in range(region.y + 3, region.bottom)), region
        view, profile = app.calltree, app.profile
        step = view.root_event
        assert profile.name_of(step).startswith("ProfilerStep#")
        title = str(app.calltree.border_title)
        assert title.startswith(f"Call tree · {profile.name_of(step)} · ")
        assert f"Call tree · {profile.name_of(step)} · " in lines[tree.y]
        node = view.calltree.nodes[view.node]
        chained = app.chain.event  # the top op's first instance: a kernel
        launcher = int(build_links(profile).op_of[chained])
        assert launcher in node.events  # the kernel's launching op, inside its step
        cursor_y = tree.y + 1 + 1 + view.cursor - int(view.scroll_offset.y)
        assert node.name[:12] in lines[cursor_y]
        app.calltree.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert sorted(int(e) for e in app.timeline.instances) == sorted(int(e) for e in node.events)
        assert app.focused is app.timeline


@pytest.mark.parametrize("size", SIZES)
async def test_numbers_are_never_cut(size, tmp_path):
    """A number wider than its column's default (a negative Self CPU of ProfilerStep*, `-5576.313us`, on a naive
    capture whose driver rows outlast their ops) widens the column instead of being cut with `…`."""
    from tests.neuron_samples import generator

    gen = generator()
    cap = gen.build_capture("naive", driver_until_device_done=True)
    root = tmp_path / "naive"
    gen.write_trace(cap, root / f"{cap.instance}_pid_{cap.pid}" / gen.TIMESTAMP_DIR / "trace.json")
    gen.write_parquet_export(cap, root / gen.EXPORT_DIR)
    async with opened(root, size=size) as (app, pilot):
        ops = app.ops
        name_cells = ops.render_line(0).text.index("# Calls")
        rows = [ops.row_text(k) for k in range(len(ops.view))]
        step = next(r for r in rows if r.startswith("ProfilerStep*"))
        assert re.search(r" -\d+\.\d{3}us! ", step), step  # marked: analysis/surprises.py
        assert not any("…" in r[name_cells:] for r in rows), rows
