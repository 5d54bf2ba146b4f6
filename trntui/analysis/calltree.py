"""Call tree of one step (or any top-level event) on one thread: events merged by call path, with inclusive and
exclusive time, the way a profiler's call tree or flame graph shows them. Pure numpy + Python; no Textual.

The tree nests by time containment over every framework-dispatch lane of the root's host thread (torch puts
the Python frames recorded with `with_stack=True`, `python_function` events, on a lane of their own beside the
ops), so Python frames and the module scopes recorded with `with_modules=True` (`nn.Module: Linear_0`) are
nodes like the ops they call. Views leave some of them out:
`ops` keeps ops and annotations (frames removed, their children re-attached to the nearest kept ancestor),
`modules` keeps `nn.Module` scopes as well, `all` keeps every frame.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from trntui.model.categories import PYTHON
from trntui.model.profile import Profile

VIEWS = ("all", "modules", "ops")
"""Which events become nodes: every event, ops + annotations + nn.Module scopes, ops + annotations."""

MODULE_PREFIX = "nn.Module: "


@dataclass
class CallNode:
    """Events with the same call path (names from the root down) merged into one node."""

    name: str
    parent: int
    """Index of the parent node (-1 for the root)."""
    depth: int
    kind: str
    """`op`, `annotation`, `python` (a Python frame) or `module` (an nn.Module scope)."""
    events: list[int] = field(default_factory=list)
    children: list[int] = field(default_factory=list)
    """Child nodes, most inclusive time first."""
    inclusive_ns: int = 0
    """Sum of the events' durations."""
    exclusive_ns: int = 0
    """Inclusive time minus the time of the events' children (in this view)."""
    start_ns: int = 0
    """Start of the node's first event (absolute)."""

    @property
    def calls(self) -> int:
        return len(self.events)


@dataclass
class CallTree:
    """Nodes of one tree (node 0 is the root) over the events under `root_event` on its lane."""

    nodes: list[CallNode]
    root_event: int
    view: str
    has_python: bool
    """Whether the thread has Python frames (`with_stack=True`)."""
    has_modules: bool
    """Whether it has nn.Module scopes (`with_modules=True`)."""
    node_of: dict[int, int]
    """Event → node, for the events that are nodes in this view."""

    def path(self, node: int) -> list[int]:
        """Nodes from the root down to `node`."""
        out = []
        while node >= 0:
            out.append(node)
            node = self.nodes[node].parent
        return out[::-1]

    def siblings(self, node: int) -> list[int]:
        parent = self.nodes[node].parent
        return self.nodes[parent].children if parent >= 0 else [node]


def _kind(profile: Profile, event: int) -> str:
    cat = profile.cat_of(event)
    if cat == PYTHON:
        return "module" if profile.name_of(event).startswith(MODULE_PREFIX) else "python"
    if "annotation" in cat:
        return "annotation"
    return "op"


def thread_lanes(profile: Profile, event: int) -> list[int]:
    """The framework-dispatch lanes of `event`'s host thread (ops, annotations and Python frames)."""
    lane = profile.lane_of(event)
    return [l.id for l in profile.lanes if l.thread_key == lane.thread_key and l.tier == lane.tier]


def _thread_events(profile: Profile, lanes: list[int], t0: int, t1: int) -> np.ndarray:
    """Events of `lanes` inside [t0, t1], in (start, longest first) order."""
    parts = [profile.lane_window(l, t0, t1) for l in lanes]
    ev = np.concatenate(parts) if parts else np.empty(0, np.int64)
    ev = ev[(profile.start[ev] >= t0) & (profile.end[ev] <= t1)]
    return ev[np.lexsort((ev, -(profile.end[ev] - profile.start[ev]), profile.start[ev]))]


def _parents(profile: Profile, ordered: np.ndarray) -> dict[int, int]:
    """Innermost enclosing event of each of `ordered` (-1 at the top), by a stack walk in start order."""
    out: dict[int, int] = {}
    stack: list[tuple[int, int]] = []  # (end, event)
    starts = profile.start[ordered].tolist()
    ends = profile.end[ordered].tolist()
    for e, s, end in zip(ordered.tolist(), starts, ends):
        while stack and stack[-1][0] <= s and not (stack[-1][0] == s and end == s):
            stack.pop()
        while stack and stack[-1][0] < end:  # overlaps without containing: not a parent
            stack.pop()
        out[e] = stack[-1][1] if stack else -1
        stack.append((end, e))
    return out


def enclosing_step(profile: Profile, event: int) -> int:
    """The `ProfilerStep#N` enclosing `event` on its host thread, else its outermost enclosing event there."""
    s, e = int(profile.start[event]), int(profile.end[event])
    lanes = thread_lanes(profile, event)
    around = [int(x) for l in lanes for x in profile.lane_window(l, s, e)
              if profile.start[x] <= s and profile.end[x] >= e]
    steps = [x for x in around if profile.name_of(x).startswith("ProfilerStep#")]
    pool = steps or around or [event]
    return min(pool, key=lambda x: (int(profile.start[x]), -int(profile.end[x] - profile.start[x])))


def call_tree(profile: Profile, root_event: int, view: str = "all") -> CallTree:
    """The call tree under `root_event` (itself the root node) on its host thread, merging siblings of the same
    name."""
    if view not in VIEWS:
        raise ValueError(f"unknown call-tree view {view!r}; use one of {', '.join(VIEWS)}")
    key = ("call_tree", root_event, view)
    cached = profile.cache.get(key)
    if cached is not None:
        return cached
    s0, e0 = int(profile.start[root_event]), int(profile.end[root_event])
    ordered = _thread_events(profile, thread_lanes(profile, root_event), s0, e0)
    parent = _parents(profile, ordered)
    parent[root_event] = -1
    # the root and its descendants only (an event as long as the root may be listed before it)
    keep_set = {root_event}
    members = [root_event]
    for e in ordered.tolist():
        if e != root_event and parent.get(e, -1) in keep_set:
            keep_set.add(e)
            members.append(e)
    kinds = {e: _kind(profile, e) for e in members}
    has_python = any(k == "python" for k in kinds.values())
    has_modules = any(k == "module" for k in kinds.values())
    if view == "ops":
        shown = {e for e in members if kinds[e] not in ("python", "module")}
    elif view == "modules":
        shown = {e for e in members if kinds[e] != "python"}
    else:
        shown = set(members)
    shown.add(root_event)

    def kept_parent(e: int) -> int:
        p = parent[e]
        while p >= 0 and p not in shown:
            p = parent[p]
        return p

    nodes = [CallNode(profile.name_of(root_event), -1, 0, kinds[root_event])]
    node_of: dict[int, int] = {root_event: 0}
    by_path: dict[tuple[int, int], int] = {}
    child_ns: dict[int, int] = {}
    for e in members:
        if e not in shown:
            continue
        dur = int(profile.end[e] - profile.start[e])
        if e == root_event:
            node = 0
        else:
            p = kept_parent(e)
            pnode = node_of[p]
            child_ns[p] = child_ns.get(p, 0) + dur
            k = (pnode, int(profile.name[e]))
            node = by_path.get(k, -1)
            if node < 0:
                node = by_path[k] = len(nodes)
                nodes.append(CallNode(profile.name_of(e), pnode, nodes[pnode].depth + 1, kinds[e], start_ns=int(profile.start[e])))
                nodes[pnode].children.append(node)
            node_of[e] = node
        n = nodes[node]
        n.events.append(e)
        n.inclusive_ns += dur
    nodes[0].start_ns = s0
    for e, node in node_of.items():
        nodes[node].exclusive_ns += int(profile.end[e] - profile.start[e]) - child_ns.get(e, 0)
    for n in nodes:
        n.children.sort(key=lambda c: (-nodes[c].inclusive_ns, nodes[c].start_ns))
    tree = CallTree(nodes, root_event, view, has_python, has_modules, node_of)
    profile.cache[key] = tree
    return tree


def _enclosing(profile: Profile, event: int) -> list[int]:
    """Events of `event`'s host thread that contain it (itself excluded), outermost first."""
    s, e = int(profile.start[event]), int(profile.end[event])
    around = {int(x) for l in thread_lanes(profile, event) for x in profile.lane_window(l, s, e)
              if profile.start[x] <= s and profile.end[x] >= e and x != event}
    return sorted(around, key=lambda x: (int(profile.start[x]), -int(profile.end[x] - profile.start[x]), x))


def python_stack(profile: Profile, event: int, limit: int = 12) -> list[str]:
    """The Python frames (and nn.Module scopes) enclosing `event`, innermost first; empty without
    `with_stack=True`."""
    frames = [profile.name_of(x) for x in _enclosing(profile, event) if profile.cat_of(x) == PYTHON]
    return frames[::-1][:limit]


def module_path(profile: Profile, event: int) -> list[str]:
    """The nn.Module scopes enclosing `event` (and itself), outermost first: `Sequential_0`, `Linear_1`."""
    out = []
    for x in [*_enclosing(profile, event), event]:
        name = profile.name_of(x)
        if name.startswith(MODULE_PREFIX) and profile.cat_of(x) == PYTHON:
            out.append(name[len(MODULE_PREFIX):])
    return out


def icicle(tree: CallTree, width: int, depth_limit: int, root: int = 0, min_cells: int = 1,
           keep: int = -1) -> list[list[tuple[int, int, int]]]:
    """Rows of an icicle graph of the subtree at `root`: per depth, (first cell, end cell, node) of each node,
    widths proportional to inclusive time (children laid out left to right, biggest first). Nodes narrower
    than `min_cells` cells are not drawn one by one: each run of them is one entry with node -1 (their
    subtrees are left out), except `keep` (the cursor node) and the nodes above it, drawn at least a cell wide."""
    rows: list[list[tuple[int, int, int]]] = []
    total = max(tree.nodes[root].inclusive_ns, 1)
    on_path = set(tree.path(keep)) if keep >= 0 else set()
    level = [(root, 0.0)]
    for _ in range(depth_limit):
        if not level:
            break
        row: list[tuple[int, int, int]] = []
        nxt = []
        for node, x in level:
            n = tree.nodes[node]
            w = n.inclusive_ns * width / total
            a, b = int(round(x)), int(round(x + w))
            if node in on_path:
                b = max(b, a + 1)
            elif b - a < min_cells:
                if b > a:
                    if row and row[-1][2] == -1 and row[-1][1] >= a:
                        row[-1] = (row[-1][0], b, -1)  # one entry for a run of small nodes
                    else:
                        row.append((a, b, -1))
                continue
            if b > a:
                row.append((a, b, node))
            cx = x
            for c in n.children:
                nxt.append((c, cx))
                cx += tree.nodes[c].inclusive_ns * width / total
        rows.append(row)
        level = nxt
    return rows
