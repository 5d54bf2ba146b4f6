"""Which files are chrome traces, and the runs a file or directory of them holds: one per file, unless files
belong together (a job's ranks, a worker's spans: trntui/loaders/grouping.py)."""

from __future__ import annotations

from pathlib import Path

from trntui.loaders.discover import MANIFEST, Group, Run

TRACE_SUFFIXES = (".json", ".json.gz")


def is_chrome_trace(path: Path) -> bool:
    """A `.json`/`.json.gz` file that looks like a chrome trace (not a manifest or an Explorer export)."""
    name = path.name
    if not name.endswith(TRACE_SUFFIXES) or name == MANIFEST:
        return False
    if name in ("trace.json", "trace.json.gz", "pytorch_trace.json", "neuron_trace.json") or ".pt.trace.json" in name:
        return True
    if name.startswith("neuron_framework_trace_rank_"):
        return True
    if name.endswith(".gz"):
        return True
    from trntui import fsio
    from trntui.errors import LoadError

    try:
        with fsio.open_regular(path) as fh:  # a FIFO is not a trace: refused at once
            head = fh.read(4096)
    except (OSError, LoadError):
        return False
    stripped = head.lstrip()
    return stripped[:1] == b"[" or b'"traceEvents"' in head or b'"schemaVersion"' in head


def find_kineto_runs(path: Path) -> list[Run]:
    """A file: one run of it. A directory: its chrome traces as runs, grouped (trntui/loaders/grouping.py): a
    job's ranks and a worker's spans first, then runs of their own in capture order (runs whose manifest says
    the capture did not complete are left out); [] when there is none."""
    if path.is_file():
        return [Run(name=path.name, root=path.parent, framework_traces=[path], group=Group("single", path.name, "a trace file"))]
    if not path.is_dir():
        return []
    traces = _walk_traces(path)
    if not traces:
        return []
    from trntui.loaders.grouping import kineto_runs

    return kineto_runs(traces, path)


def _walk_traces(path: Path, max_depth: int = 6) -> list[Path]:
    """Chrome traces at most `max_depth` directories below `path` (a pruned walk: a tree 1,500 levels deep
    is not walked to its bottom, and links to directories are not followed)."""
    from trntui.loaders.discover import walk

    files, _unreadable = walk(path, max_depth)
    return [p for p in files if is_chrome_trace(p)]
