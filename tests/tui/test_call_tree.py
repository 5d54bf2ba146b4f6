"""The call tree (`t`): a step's ops, Python frames and nn.Module scopes merged by call path, walked with the keys,
with inclusive/exclusive times, the icicle graph and the Python stack; Enter shows a node on the timeline.
At 80×24 and 200×55, on a `with_stack=True, with_modules=True` capture made by torch here."""

from __future__ import annotations

import re

import numpy as np
import pytest

from trntui.analysis.timeline import format_ns
from trntui.tui.capture import screen_text

from .conftest import opened, settle

SIZES = [(80, 24), (200, 55)]


@pytest.fixture(scope="module")
def stack_trace(tmp_path_factory):
    """A real torch CPU capture of a small MLP with Python stacks and module scopes (one ProfilerStep)."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    x = torch.randn(4, 8)
    with profile(activities=[ProfilerActivity.CPU], with_stack=True, with_modules=True) as prof:
        with torch.profiler.record_function("ProfilerStep#1"):
            model(x).sum().backward()
    path = tmp_path_factory.mktemp("stack") / "trace.json"
    prof.export_chrome_trace(str(path))
    return path


def tree_lines(screen) -> list[str]:
    view = screen.tree_view
    return [view.line_text(k, 120) for k in range(len(view.line_nodes))]


def cursor_text(screen) -> str:
    view = screen.tree_view
    return view.render_line(view.cursor - int(view.scroll_offset.y) + 1).text


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.torch  # profiles with torch
async def test_call_tree_walks_the_step(stack_trace, size):
    """`t` on `aten::addmm` opens its step's tree with the cursor on it, inside its module and Python frames;
    p / ] / l / h walk parent, siblings and children; v leaves the Python frames out; the icicle and the
    Python stack follow the cursor; Enter highlights the node's calls on the timeline."""
    async with opened(stack_trace, size=size) as (app, pilot):
        profile = app.profile
        addmm = [i for i in range(len(profile)) if profile.name_of(i) == "aten::addmm"]
        first = min(addmm, key=lambda i: profile.start[i])
        step = next(i for i in range(len(profile)) if profile.name_of(i) == "ProfilerStep#1")
        app.timeline.focus()
        app.timeline.go_to_event(first)
        await pilot.press("t")
        await pilot.pause()
        screen = app.screen
        assert type(screen).__name__ == "CallTreeScreen"
        view = screen.tree_view
        title = str(screen.query_one("#calltree-title").render())
        assert title.startswith(f"Call tree · ProfilerStep#1 · {format_ns(int(profile.end[step] - profile.start[step]))}")
        node = view.calltree.nodes[view.node]
        assert node.name == "aten::addmm" and node.events == [first]
        dur = int(profile.end[first] - profile.start[first])
        assert re.search(rf"aten::addmm +1 +{re.escape(format_ns(dur))} ", cursor_text(screen))
        # drawn on the terminal (not only rendered on request): the header and the cursor line
        cursor_row = re.compile(rf"aten::addmm +1 +{re.escape(format_ns(dur))} ")
        await settle(pilot, lambda: any(cursor_row.search(line) for line in screen_text(app).splitlines()))
        shown = screen_text(app).splitlines()
        assert any(re.match(r"name +calls +incl +excl +%", line) for line in shown), shown
        assert any(cursor_row.search(line) for line in shown), shown
        # the module path and the Python stack of the cursor node
        details = screen.icicle.detail_lines()
        assert details[0] == "module: Sequential_0 › Linear_0"
        assert details[1].startswith("python: ") and "linear.py" in details[1]
        # exclusive = inclusive - the children's inclusive
        children = sum(view.calltree.nodes[c].inclusive_ns for c in node.children)
        assert node.exclusive_ns == node.inclusive_ns - children
        # walk: parent, sibling, first child, close
        path = [view.calltree.nodes[n].name for n in view.calltree.path(view.node)]
        await pilot.press("p")
        assert view.calltree.nodes[view.node].name == path[-2]
        parent = view.node
        await pilot.press("l")  # open: first child (the heaviest)
        assert view.calltree.nodes[view.node].parent == parent
        assert view.node == view.calltree.nodes[parent].children[0]
        await pilot.press("right_square_bracket")
        assert view.node == view.calltree.nodes[parent].children[1]
        await pilot.press("h", "h")  # a leaf: to its parent; then close it
        assert view.node == parent and parent not in view.opened
        # the icicle: the cursor node's parent across the full width, the cursor node in the next row
        icicle = screen.icicle
        assert view.calltree.nodes[view.calltree.nodes[parent].parent].name[:6] in icicle.row_text(0)
        # views: ops only has no Python frames (ƒ) or modules (▣)
        assert any(" ƒ " in line for line in tree_lines(screen))
        await pilot.press("v", "v")
        assert view.view == "ops"
        await pilot.press("asterisk")
        lines = tree_lines(screen)
        assert lines and not any(" ƒ " in line or " ▣ " in line for line in lines)
        assert any("aten::addmm" in line for line in lines)
        # Enter: back on the timeline with the node's events highlighted
        view.go_to_node(next(n for n in range(len(view.calltree.nodes)) if view.calltree.nodes[n].name == "aten::addmm"))
        chosen = list(view.calltree.nodes[view.node].events)
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is not screen
        assert sorted(int(e) for e in app.timeline.instances) == sorted(chosen)
        assert app.timeline.event_under_cursor() == min(chosen, key=lambda i: profile.start[i])


@pytest.mark.parametrize("size", SIZES)
async def test_call_tree_of_a_kernel_is_its_ops_step(corpus_dir, size):
    """On a CUDA trace, `t` on a kernel opens the tree of the step of the op that launched it; the root's
    inclusive time is the step's duration and the children's calls add up to the events under it."""
    async with opened(corpus_dir / "cuda_ns_resolution_68k.json.gz", size=size) as (app, pilot):
        profile = app.profile
        kernels = [i for i in range(len(profile)) if profile.cats[int(profile.cat[i])] == "kernel"]
        app.timeline.focus()
        from trntui.analysis.links import build_links

        links = build_links(profile)
        kernel = next(k for k in kernels if links.op_of[k] >= 0 and profile.lane_of(int(links.op_of[k])).tid == 1102)
        app.timeline.go_to_event(kernel)
        await pilot.press("t")
        await pilot.pause()
        screen = app.screen
        view = screen.tree_view
        root = view.calltree.nodes[0]
        assert root.name.startswith("ProfilerStep#")
        step = root.events[0]
        assert root.inclusive_ns == int(profile.end[step] - profile.start[step])
        assert view.calltree.nodes[view.node].events[0] == int(links.op_of[kernel])
        lane = profile.lane_of(step)
        inside = [i for i in range(len(profile)) if profile.lane_of(i).thread_key == lane.thread_key
                  and profile.lane_of(i).tier == lane.tier and profile.start[i] >= profile.start[step]
                  and profile.end[i] <= profile.end[step] and i != step]
        assert sum(n.calls for n in view.calltree.nodes[1:]) == len(inside)
        icicle = screen.icicle  # the cursor node's parent spans the first row, its children below
        assert icicle.row_text(0).startswith(view.calltree.nodes[icicle.root].name[:5])
        await pilot.press("escape")
        assert app.screen is not screen


async def test_icicle_names_are_readable(corpus_dir):
    """The icicle (`g`) at 80 columns (issue 26 item 10: it was slivers with no readable names): no bar is
    narrower than `ICICLE_MIN_CELLS` (narrower nodes are one dotted run), every bar with room for a label
    carries its node's name, and a status line gives the cursor node's full name and times."""
    from trntui.analysis.calltree import icicle
    from trntui.tui.widgets.calltree import ICICLE_LABEL_CELLS, ICICLE_MIN_CELLS, icicle_label

    async with opened(corpus_dir / "cuda_ns_resolution_68k.json.gz", size=(80, 24)) as (app, pilot):
        profile = app.profile
        step = next(i for i in range(len(profile)) if profile.name_of(i).startswith("ProfilerStep#"))
        app.timeline.focus()
        app.timeline.go_to_event(step)
        await pilot.press("t")
        await pilot.pause()
        screen = app.screen
        view, ice = screen.tree_view, screen.icicle
        tree = view.calltree
        longest = max(range(1, len(tree.nodes)), key=lambda n: len(tree.nodes[n].name))
        view.go_to_node(longest)
        await pilot.pause()
        node = tree.nodes[longest]
        status = ice.status_lines(ice.size.width)
        shown = [ice.row_text(y) for y in range(ice.size.height)]
        assert status[0] in shown  # drawn under the graph
        joined = "".join(status)
        assert joined.startswith(f"▸ {node.name} · {format_ns(node.inclusive_ns)}"), status
        assert f"self {format_ns(node.exclusive_ns)}" in joined
        depth = ice.size.height - len(status) - len(ice.detail_lines())
        rows = icicle(tree, ice.size.width, depth, ice.root, min_cells=ICICLE_MIN_CELLS, keep=longest)
        path = set(tree.path(longest))
        bars = [(y, a, b, n) for y, row in enumerate(rows) for a, b, n in row if n >= 0]
        assert bars and all(b - a >= ICICLE_MIN_CELLS for _, a, b, n in bars if n not in path)
        assert any(n < 0 for row in rows for _, _, n in row)  # the small nodes are there, as dotted runs
        labelled = 0
        for y, a, b, n in bars:
            text = ice.row_text(y)[a : b - 1]
            if b - a - 1 >= ICICLE_LABEL_CELLS:
                label = icicle_label(tree.nodes[n].name, b - a - 1)
                assert text.rstrip() == label and len(label) >= ICICLE_LABEL_CELLS - 1, (text, tree.nodes[n].name)
                labelled += 1
        assert labelled >= 3
        await pilot.press("g")
        assert ice.has_class("-hidden")
