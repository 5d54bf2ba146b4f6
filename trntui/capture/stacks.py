"""Cut trntui's own capture harness out of a `--with-stack` trace.

With `with_stack=True` torch records every Python frame on the stack, so a capture run by `trntui profile`
holds the frames of trntui itself (`trntui(8): <module>`, `trntui/cli.py(...): entry`, `runner.py(...):
_capture_variant`, ...) above the user's code, where they would top the ops table and the call tree. A user's
profile shows the user's code: the `python_function` events of trntui's files (every module of the package but
the built-in workloads in `capture/builtins.py`) and the frames that enclose them (the console script, runpy)
are removed from the trace file; a frame they called keeps its place with no Python parent. The count goes into
the manifest (`profiler.harness_frames_cut`) and the loaded profile says so in its notes (torch's own table of
the same run would list those frames).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

PYTHON = "python_function"
_FRAME = re.compile(r"^(.*)\((\d+)\): ")
WORKLOAD_FILES = ("capture/builtins.py",)
"""trntui files that hold workload code (kept: they are what is being profiled)."""


def harness_files() -> tuple[str, ...]:
    """Paths, relative to the trntui package, of the modules whose frames are the capture harness."""
    root = Path(__file__).resolve().parents[1]
    rels = []
    for p in root.rglob("*.py"):
        rel = p.relative_to(root).as_posix()
        if rel not in WORKLOAD_FILES:
            rels.append(rel)
    return tuple(sorted(rels))


def _is_harness(name: str, root: str, rels: frozenset[str]) -> bool:
    m = _FRAME.match(name)
    if not m:
        return False
    path = m.group(1).replace(os.sep, "/")
    if path.startswith(root + "/"):
        return path[len(root) + 1:] in rels
    head, sep, tail = path.rpartition("trntui/")
    return bool(sep) and (not head or head.endswith("/")) and tail in rels


def cut_harness_frames(trace: Path) -> int:
    """Remove the harness's `python_function` events (and the frames enclosing them) from a JSON trace file,
    in place (atomically); return how many were removed. Other files (gzip) are left as they are: 0."""
    if trace.suffix != ".json":
        return 0
    from trntui import fsio

    with fsio.open_regular(trace, follow_symlinks=False) as f:  # the trace the profiler just wrote
        doc = json.load(f)
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        return 0
    root = Path(__file__).resolve().parents[1].as_posix()
    rels = frozenset(harness_files())
    frames = {}
    parent: dict[object, object] = {}
    cut_ids: set[object] = set()
    for e in events:
        if isinstance(e, dict) and e.get("cat") == PYTHON and isinstance(e.get("args"), dict):
            pid = e["args"].get("Python id")
            if pid is None:
                continue
            frames[pid] = e
            parent[pid] = e["args"].get("Python parent id")
            if _is_harness(str(e.get("name", "")), root, rels):
                cut_ids.add(pid)
    # the frames that enclose the harness (the console script, runpy, a test runner) are not the user's either
    for pid in list(cut_ids):
        up = parent.get(pid)
        while up is not None and up in frames and up not in cut_ids:
            cut_ids.add(up)
            up = parent.get(up)
    if not cut_ids:
        return 0
    kept = []
    for e in events:
        if isinstance(e, dict) and e.get("cat") == PYTHON and isinstance(e.get("args"), dict):
            args = e["args"]
            if args.get("Python id") in cut_ids:
                continue
            if args.get("Python parent id") in cut_ids:
                args["Python parent id"] = None
        kept.append(e)
    doc["traceEvents"] = kept
    with fsio.open_replacing(trace, "w", force=True) as f:  # a temporary file beside it, renamed over it
        json.dump(doc, f)
    return len(cut_ids)


NOTE = ("{n} Python frame(s) of trntui's capture harness were cut from this capture's stacks (torch's own "
        "table of the same run would list them above your code)")
