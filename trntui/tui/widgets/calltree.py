"""The call-tree pane: one step's call tree (ops, annotations, Python frames, nn.Module scopes merged by call
path) as an expandable list with calls, inclusive and exclusive time, and its icicle graph below.

Drawn with the Line API from `trntui.analysis.calltree.CallTree`; the cursor walks parent / children /
siblings; Enter shows the node's events on the timeline (`NodeChosen`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.segment import Segment
from rich.style import Style
from textual import work
from textual.binding import Binding
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from trntui.analysis.calltree import VIEWS, CallTree, call_tree, icicle, module_path, python_stack
from trntui.analysis.timeline import format_ns
from trntui.textsafe import safe_text
from trntui.tui.messages import PaneTitleChanged
from trntui.tui.widgets.rows import RowList, cursor_bindings
from trntui.tui.widgets.timeline_draw import fit_cells

if TYPE_CHECKING:
    from trntui.model.profile import Profile

KIND_MARKS = {"op": " ", "annotation": "#", "python": "ƒ", "module": "▣"}
"""A mark before each name: annotation (record_function), Python frame, nn.Module scope."""

HINT = "Enter on an op (or t on the timeline) shows the call tree of its step here."

VIEW_TITLES = {"all": "ops + Python frames", "modules": "ops + nn.Module scopes", "ops": "ops only"}


def _tree(profile: "Profile", root_event: int, view: str) -> tuple[CallTree, str]:
    """The call tree and the view it is drawn in (without Python frames "all" is "ops": named for what it is)."""
    tree = call_tree(profile, root_event, view)
    if view == "all" and not tree.has_python:
        view = "ops"
        tree = call_tree(profile, root_event, view)
    return tree, view


class CallTreeView(RowList):
    """The tree as lines `▾ name  calls  inclusive  exclusive  % of the root`."""

    ALLOW_MAXIMIZE = True

    HELP = "Call tree: the step's ops merged by call path; → opens, ← closes / goes up, Enter shows on the timeline."

    BINDINGS = [
        *cursor_bindings("calltree", down="Next line", up="Previous line", paging=False),
        Binding("right,l", "open", "Open / first child", id="calltree-open"),
        Binding("left,h", "close", "Close / parent", id="calltree-close"),
        Binding("p", "parent", "Parent", show=False, id="calltree-parent"),
        Binding("right_square_bracket", "sibling(1)", "Next sibling", show=False, id="calltree-next-sibling"),
        Binding("left_square_bracket", "sibling(-1)", "Prev sibling", show=False, id="calltree-prev-sibling"),
        Binding("asterisk", "open_all", "Open all below", show=False, id="calltree-open-all"),
        Binding("v", "cycle_view", "View: frames / modules / ops", id="calltree-view"),
        Binding("enter", "choose", "Show on timeline", id="calltree-show"),
        Binding("y", "copy_name", "Copy the name", show=False, id="calltree-copy"),
    ]

    COMPONENT_CLASSES = {"calltree--header", "calltree--cursor", "calltree--muted", "calltree--python"}

    DEFAULT_CSS = """
    CallTreeView { scrollbar-size-vertical: 1; overflow-x: hidden; }
    CallTreeView > .calltree--header { text-style: bold; color: $text-accent; }
    CallTreeView > .calltree--cursor { background: $block-cursor-blurred-background; }
    CallTreeView:focus > .calltree--cursor { background: $block-cursor-background; color: $block-cursor-foreground; }
    CallTreeView > .calltree--muted { color: $text-muted; }
    CallTreeView > .calltree--python { color: $text-success; }
    """

    class NodeChosen(Message):
        """Enter on a node: show its events on the timeline."""

        def __init__(self, view: "CallTreeView", events: list[int]) -> None:
            self.view = view
            self.events = events
            super().__init__()

        @property
        def control(self) -> "CallTreeView":
            return self.view

    class CursorMoved(Message):
        """The cursor moved to another node (the icicle and the detail line follow)."""

        def __init__(self, view: "CallTreeView") -> None:
            self.view = view
            super().__init__()

        @property
        def control(self) -> "CallTreeView":
            return self.view

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.profile: Profile | None = None
        self.calltree: CallTree | None = None
        self.root_event = -1
        self.view = "all"
        self.opened: set[int] = set()
        """Nodes whose children are shown."""
        self.line_nodes: list[int] = []
        """Node of each visible line."""
        self.cursor = 0
        """Line of the cursor."""
        self.pending = -1
        """The event to follow once the pane is displayed (`follow`)."""
        self.hint = HINT
        """What the pane says while it has no tree."""

    # -- model -----------------------------------------------------------------------------------
    def show_run(self, run) -> None:  # run: tui.panes.LoadedRun
        """The `Pane` interface: a run was loaded; the tree follows the event the other panes select."""
        self.profile = run.profile
        self.calltree = None
        self.view = "all"
        self.root_event = -1
        self.line_nodes = []
        self.cursor = 0
        self.pending = -1
        self.hint = HINT
        self.refresh()
        self.post_message(PaneTitleChanged(self))

    def follow(self, event: int) -> None:
        """Show the call tree of the step enclosing `event` (of the op that launched it, for a device row).

        As a pane it follows the event the other panes select; the tree is built only while the pane is
        displayed (wide terminals; on narrow ones it waits until it is shown) and in a worker thread, so a big
        step never holds up the keys."""
        if self.profile is None or event < 0:
            return
        self.pending = event
        if self.display and self.is_mounted:
            self._follow_pending()

    def on_show(self) -> None:
        self._follow_pending()

    def _follow_pending(self) -> None:
        event, self.pending = self.pending, -1
        if event < 0 or self.profile is None:
            return
        from trntui.analysis.calltree import enclosing_step
        from trntui.analysis.links import launching_op
        from trntui.model.profile import Tier

        profile = self.profile
        if profile.lane_of(event).tier != Tier.DISPATCH:
            event = launching_op(profile, event)
            if event < 0:
                self.calltree, self.root_event, self.line_nodes = None, -1, []
                self.hint = "The selected event has no launching op on a host thread: no call tree."
                self.refresh()
                self.post_message(PaneTitleChanged(self))
                return
        root = enclosing_step(profile, event)
        if root == self.root_event and self.calltree is not None and event in self.calltree.node_of:
            self.go_to_node(self.calltree.node_of[event])
            return
        self._build_in_background(profile, root, event, self.view)

    @work(thread=True, exclusive=True, group="calltree", exit_on_error=False)
    def _build_in_background(self, profile: "Profile", root_event: int, focus_event: int, view: str) -> None:
        tree, view = _tree(profile, root_event, view)
        self.app.call_from_thread(self._apply_if_current, profile, root_event, focus_event, view, tree)

    def _apply_if_current(self, profile: "Profile", root_event: int, focus_event: int, view: str, tree: CallTree) -> None:
        if profile is self.profile:  # not a tree of the run shown before another was loaded
            self._apply(profile, root_event, focus_event, view, tree)

    def show(self, profile: "Profile", root_event: int, focus_event: int = -1, view: str | None = None) -> None:
        """The tree under `root_event`, opened down to the node of `focus_event` (cursor on it)."""
        tree, view = _tree(profile, root_event, view if view is not None else self.view)
        self._apply(profile, root_event, focus_event, view, tree)

    def _apply(self, profile: "Profile", root_event: int, focus_event: int, view: str, tree: CallTree) -> None:
        self.profile = profile
        self.root_event = root_event
        self.view = view
        self.calltree = tree
        self.opened = {0}
        target = self.calltree.node_of.get(focus_event, 0)
        self.opened.update(self.calltree.path(target)[:-1])
        # open the heaviest path a few levels, so the first screen says where the time went
        node = 0
        for _ in range(3):
            self.opened.add(node)
            kids = self.calltree.nodes[node].children
            if not kids:
                break
            node = kids[0]
        self._relayout()
        self.cursor = self.line_nodes.index(target) if target in self.line_nodes else 0
        self.scroll_cursor_visible()
        self.call_after_refresh(self.scroll_cursor_visible)  # again once the new virtual size is laid out
        self.post_message(self.CursorMoved(self))
        self.post_message(PaneTitleChanged(self))

    @property
    def node(self) -> int:
        """The node under the cursor (-1 without a tree)."""
        return self.line_nodes[self.cursor] if self.line_nodes else -1

    @property
    def title(self) -> str:
        if self.calltree is None or self.profile is None:
            return "Call tree"
        root = self.calltree.nodes[0]
        lane = self.profile.lane_of(self.root_event)
        view = VIEW_TITLES[self.view]
        return f"Call tree · {safe_text(root.name)} · {format_ns(root.inclusive_ns)} · TID:{lane.tid} · {view} (v)"

    def _relayout(self) -> None:
        lines: list[int] = []
        tree = self.calltree

        def walk(node: int) -> None:
            lines.append(node)
            if node in self.opened:
                for c in tree.nodes[node].children:
                    walk(c)

        if tree is not None:
            walk(0)
        self.line_nodes = lines
        self.cursor = min(self.cursor, max(len(lines) - 1, 0))
        self.update_extent()
        self.refresh()

    def line_text(self, k: int, width: int = 100) -> str:
        """Plain text of visible line `k` (tests, docs)."""
        return "".join(seg.text for seg in self._line(k, width))

    def _line(self, k: int, width: int) -> list[Segment]:
        tree = self.calltree
        node = tree.nodes[self.line_nodes[k]]
        root = max(tree.nodes[0].inclusive_ns, 1)
        numbers = f" {node.calls:>7,} {format_ns(node.inclusive_ns):>9} {format_ns(node.exclusive_ns):>9} {100 * node.inclusive_ns / root:>6.1f}%"
        arrow = ("▾ " if self.line_nodes[k] in self.opened else "▸ ") if node.children else "  "
        head = "  " * node.depth + arrow + KIND_MARKS.get(node.kind, " ") + " "
        name_width = max(width - len(numbers) - len(head), 8)
        name = fit_cells(safe_text(node.name), name_width).ljust(name_width)
        role = "python" if node.kind in ("python", "module") else ""
        return [Segment(head, self._style("muted")), Segment(name, self._style(role)), Segment(numbers, self._style(""))]

    def _style(self, role: str) -> Style:
        base = self.rich_style
        return base + self.get_component_rich_style(f"calltree--{role}") if role else base

    # -- actions ---------------------------------------------------------------------------------
    def row_count(self) -> int:
        return len(self.line_nodes)

    def cursor_moved(self) -> None:
        self.post_message(self.CursorMoved(self))

    def _moved(self) -> None:
        self.move_cursor(self.cursor)

    def go_to_node(self, node: int) -> None:
        """Put the cursor on `node`, opening its ancestors."""
        if self.calltree is None:
            return
        self.opened.update(self.calltree.path(node)[:-1])
        self._relayout()
        self.cursor = self.line_nodes.index(node)
        self._moved()

    def action_open(self) -> None:
        node = self.node
        if node < 0 or not self.calltree.nodes[node].children:
            return
        if node in self.opened:
            self.go_to_node(self.calltree.nodes[node].children[0])
        else:
            self.opened.add(node)
            self._relayout()
            self._moved()

    def action_close(self) -> None:
        node = self.node
        if node < 0:
            return
        if node in self.opened and self.calltree.nodes[node].children:
            self.opened.discard(node)
            self._relayout()
            self._moved()
        else:
            self.action_parent()

    def action_parent(self) -> None:
        node = self.node
        if node > 0:
            self.go_to_node(self.calltree.nodes[node].parent)

    def action_sibling(self, direction: int) -> None:
        node = self.node
        if node <= 0:
            return
        siblings = self.calltree.siblings(node)
        k = siblings.index(node) + direction
        if 0 <= k < len(siblings):
            self.go_to_node(siblings[k])

    def action_open_all(self) -> None:
        node = self.node
        if node < 0:
            return
        stack = [node]
        while stack:
            n = stack.pop()
            self.opened.add(n)
            stack.extend(self.calltree.nodes[n].children)
        self._relayout()
        self._moved()

    def action_cycle_view(self) -> None:
        if self.calltree is None:
            return
        event = self.calltree.nodes[self.node].events[0] if self.node >= 0 else -1
        views = VIEWS if self.calltree.has_python or self.calltree.has_modules else ("ops",)
        self.view = views[(views.index(self.view) + 1) % len(views)] if self.view in views else views[0]
        self.show(self.profile, self.root_event, event)

    def action_choose(self) -> None:
        if self.node >= 0:
            self.post_message(self.NodeChosen(self, list(self.calltree.nodes[self.node].events)))

    def action_copy_name(self) -> None:
        if self.node >= 0:
            self.app.copy_to_clipboard(self.calltree.nodes[self.node].name)
            self.notify(f"copied {safe_text(self.calltree.nodes[self.node].name)[:60]}", markup=False)

    # -- rendering -------------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width or self.size.width
        base = self.rich_style
        if self.calltree is None:
            text = self.hint if y == 0 else ""
            return Strip([Segment(text, self._style("muted"))]).crop_extend(0, width, base)
        if y == 0:
            numbers = f" {'calls':>7} {'incl':>9} {'excl':>9} {'%':>7}"
            head = "name".ljust(max(width - len(numbers), 8)) + numbers
            return Strip([Segment(head, self._style("header"))]).crop_extend(0, width, base)
        k = self.row_at(y)
        if k >= len(self.line_nodes):
            return Strip.blank(width, base)
        segments = self._line(k, width)
        if k == self.cursor:
            cursor = self.get_component_rich_style("calltree--cursor")
            segments = [Segment(s.text, (s.style or base) + cursor) for s in segments]
            return Strip(segments).crop_extend(0, width, base + cursor)
        return Strip(segments).crop_extend(0, width, base)

    def resized(self) -> None:
        # a tree shown before the first layout (the call-tree screen) could not scroll yet: its cursor line may
        # be below the view; bring it in once the size is known
        self.call_after_refresh(self.scroll_cursor_visible)


ICICLE_MIN_CELLS = 3
"""Nodes narrower than this are drawn as one dotted run per row (`·`), not as slivers."""

ICICLE_LABEL_CELLS = 6
"""A node's name is written inside its bar when the bar has this many cells for it (else the bar is bare)."""


def icicle_label(name: str, room: int) -> str:
    """What a bar of `room` cells says: the name if it fits, else without its namespaces (`aten::addmm` ->
    `addmm`, a frame's `file.py(12): fn` -> `fn`) cut to the room; nothing under `ICICLE_LABEL_CELLS` cells
    unless the whole name fits (the status line names the cursor node in full)."""
    if len(name) <= room:
        return name
    if room < ICICLE_LABEL_CELLS:
        return ""
    short = name.rsplit("::", 1)[-1].rsplit(": ", 1)[-1].strip() or name
    return fit_cells(short, room)


class Icicle(Widget):
    """The icicle (top-down flame) graph of the cursor node's subtree: one row per depth, widths by inclusive
    time, names inside the bars wide enough to read them, nodes narrower than `ICICLE_MIN_CELLS` merged into
    dotted runs; the cursor node is highlighted. Under it: a status line with the cursor node's full name and
    times, then the Python stack and module path."""

    COMPONENT_CLASSES = {"icicle--bar", "icicle--cursor", "icicle--muted"}

    DEFAULT_CSS = """
    Icicle { height: 12; }
    Icicle > .icicle--bar { background: $primary-darken-1; color: $text; }
    Icicle > .icicle--cursor { background: $accent; color: $text; text-style: bold; }
    Icicle > .icicle--muted { color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.calltree: CallTree | None = None
        self.profile: Profile | None = None
        self.root = 0
        """Node drawn across the full width (the parent of the cursor node, so its siblings show too)."""
        self.cursor = 0

    def show(self, profile: "Profile", tree: CallTree, cursor: int) -> None:
        self.profile, self.calltree, self.cursor = profile, tree, cursor
        parent = tree.nodes[cursor].parent
        self.root = parent if parent >= 0 else cursor
        self.refresh()

    def status_lines(self, width: int) -> list[str]:
        """The cursor node's full name (folded over up to three lines) and its times: inclusive (and its share
        of the node drawn across), exclusive, calls."""
        if self.calltree is None:
            return []
        node = self.calltree.nodes[self.cursor]
        top = self.calltree.nodes[self.root]
        share = f" ({100.0 * node.inclusive_ns / top.inclusive_ns:.1f}% of {safe_text(top.name)})" \
            if top.inclusive_ns and self.root != self.cursor else ""
        text = (f"▸ {safe_text(node.name)} · {format_ns(node.inclusive_ns)}{share} · self "
                f"{format_ns(node.exclusive_ns)} · {node.calls} call{'s' if node.calls != 1 else ''}")
        width = max(width, 20)
        lines = [text[k : k + width] for k in range(0, len(text), width)][:3]
        return lines

    def detail_lines(self) -> list[str]:
        """The Python stack (innermost first) and module path of the cursor node's first event."""
        if self.calltree is None or self.profile is None:
            return []
        event = self.calltree.nodes[self.cursor].events[0]
        out = []
        modules = module_path(self.profile, event)
        if modules:
            out.append("module: " + " › ".join(safe_text(m) for m in modules))
        stack = python_stack(self.profile, event, limit=6)
        if stack:
            out.append("python: " + " ‹ ".join(safe_text(f) for f in stack))
        return out

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        if self.calltree is None:
            return Strip.blank(width, base)
        details = self.status_lines(width) + self.detail_lines()
        depth_rows = max(self.size.height - len(details), 1)
        if y >= depth_rows:
            text = details[y - depth_rows]
            return Strip([Segment(text, base + self.get_component_rich_style("icicle--muted"))]).crop_extend(0, width, base)
        rows = icicle(self.calltree, width, depth_rows, self.root, min_cells=ICICLE_MIN_CELLS, keep=self.cursor)
        if y >= len(rows):
            return Strip.blank(width, base)
        bar = base + self.get_component_rich_style("icicle--bar")
        cur = base + self.get_component_rich_style("icicle--cursor")
        muted = base + self.get_component_rich_style("icicle--muted")
        segments: list[Segment] = []
        done = 0
        for a, b, node in rows[y]:
            a = max(a, done)
            if b <= a:
                continue
            if a > done:
                segments.append(Segment(" " * (a - done), base))
            if node < 0:  # nodes too narrow to draw one by one
                segments.append(Segment("·" * (b - a), muted))
            else:
                room = b - a - 1
                text = icicle_label(safe_text(self.calltree.nodes[node].name), room)
                segments.append(Segment(text.ljust(room) + "▏", cur if node == self.cursor else bar))
            done = b
        return Strip(segments).crop_extend(0, width, base)

    def row_text(self, y: int) -> str:
        return self.render_line(y).text
