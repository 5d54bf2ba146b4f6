"""Which files are chrome traces, and the runs a file or directory of them holds: one per file, unless files
belong together (a job's ranks, a worker's spans: the rule is trntui/loaders/grouping.py's `group_files`; the
runs made of its groups, and their names, are `kineto_runs` here)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from trntui.loaders.discover import MANIFEST, Group, Run

if TYPE_CHECKING:
    from trntui.loaders.grouping import FileGroup, Member

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
    return kineto_runs(traces, path)


def _walk_traces(path: Path, max_depth: int = 6) -> list[Path]:
    """Chrome traces at most `max_depth` directories below `path` (a pruned walk: a tree 1,500 levels deep
    is not walked to its bottom, and links to directories are not followed)."""
    from trntui.loaders.discover import walk

    files, _unreadable = walk(path, max_depth)
    return [p for p in files if is_chrome_trace(p)]


def _member_name(g: FileGroup, m: Member, root: Path, many_jobs: bool) -> str:
    from trntui.loaders.grouping import relative_name

    if g.kind == "job":
        name = f"rank{m.rank}" + (f" span {m.span}" if m.span else "")
        return f"{g.name}: {name}" if many_jobs else name
    if g.kind == "worker":
        return f"{g.name} span {m.span}"
    if g.kind == "single":
        p = m.files[0]
        if p.parent != root and len(_traces_in(p.parent)) == 1:  # the only trace of its directory: it names it
            return relative_name(p.parent, root)
        return g.name
    return g.name


def _traces_in(directory: Path) -> list[Path]:
    try:
        return [q for q in directory.iterdir() if q.is_file() and is_chrome_trace(q)]
    except OSError:
        return []


def kineto_runs(traces: Sequence[Path], root: Path) -> list[Any]:
    """The runs of chrome trace files found under `root`, grouped (module docstring): a job's ranks and a
    worker's spans in order first, then runs of their own in capture order. Runs whose manifest says the
    capture did not complete are left out."""
    from trntui.loaders.discover import capture_order, nearest_manifest
    from trntui.loaders.grouping import group_files

    groups = group_files(traces, root=root)
    many_jobs = sum(g.kind == "job" for g in groups) > 1
    grouped: list[Run] = []
    singles: list[Run] = []
    for g in groups:
        members = []
        for m in g.members:
            name = _member_name(g, m, root, many_jobs)
            parent = m.files[0].parent
            members.append(Run(name=name, root=parent, framework_traces=list(m.files),
                               manifest=nearest_manifest(parent, root),
                               rank=m.rank if g.kind == "job" else None, span=m.span))
        group = Group(g.kind, members[0].name if g.kind == "single" else g.name, g.reason, g.world_size)
        for r in members:
            r.group = group
        members = [r for r in members if r.manifest.get("complete") is not False]
        (singles if g.kind == "single" else grouped).extend(members)
    return grouped + sorted(singles, key=capture_order)
