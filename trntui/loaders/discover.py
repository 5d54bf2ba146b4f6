"""What every format's discovery shares: the `Run` a path holds, and the manifest `trntui profile` writes.

A run is one profile: a framework trace (Kineto), possibly with other files of its format (a Neuron system-trace
export), found by a format's `find_runs` (trntui/loaders/protocol.py; the registry is trntui/formats.py).
A `Run` is plain data (it pickles: a worker process can load it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MANIFEST = "trntui.json"
MANIFEST_LIMIT = 16 << 20
"""Largest `trntui.json` read (trntui writes a few KB; a larger one is not ours and is ignored)."""


@dataclass
class Run:
    """One loadable profile found under a path."""

    name: str
    root: Path
    framework_traces: list[Path] = field(default_factory=list)
    """Kineto chrome traces of the run (the framework trace of a Neuron session, every file of a run of ranks)."""
    manifest: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    format: str = "kineto"
    """The name of the format that loads it (`TraceFormat.name`)."""
    source: Any = None
    """The format's own description of what to read besides `framework_traces` (plain data), e.g. the Neuron
    session's export or raw files."""
    inputs: list[Path] | None = None
    """Every file the load reads, as the format's `inputs(run)` gave them at discovery (the parsed-profile cache
    is keyed by them); None: unknown (e.g. a raw capture converted by an external tool), never cached."""
    rank: int | None = None
    """The run's rank when it is one rank of a distributed job (trntui/loaders/grouping.py)."""
    span: int | None = None
    """1-based span number when its worker (or rank) wrote several successive traces."""
    group: Group | None = None
    """What the run belongs to and why: a job of ranks, a worker's spans, or a run of its own."""


@dataclass(frozen=True)
class Group:
    """Why runs go together (shared by the runs of one job or worker; a run of its own has its own)."""

    kind: str
    """`job` (ranks of a distributed job), `worker` (successive spans of one worker), `single` (a run of its own),
    `merged` (everything under a path, on request)."""
    name: str
    reason: str
    world_size: int | None = None


def read_manifest(directory: Path) -> dict[str, Any]:
    """The `trntui.json` manifest in `directory`, or {} when there is none or it is unreadable."""
    path = directory / MANIFEST
    if not path.is_file():
        return {}
    from trntui import fsio
    from trntui.errors import LoadError

    try:
        value = json.loads(fsio.read_bounded(path, MANIFEST_LIMIT).decode("utf-8", "replace"))
    except (OSError, ValueError, LoadError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def nearest_manifest(directory: Path, root: Path) -> dict[str, Any]:
    """The manifest beside the trace, else the nearest one above it up to `root` (a `trntui profile` variant
    directory on Neuron holds its manifest above the `<instance>_pid_<pid>/<timestamp>/trace.json` torch-neuronx
    writes)."""
    current = directory
    while True:
        manifest = read_manifest(current)
        if manifest or current == root or root not in current.parents:
            return manifest
        current = current.parent


def manifest_position(run: Run) -> float | None:
    """Where the run's manifest places it among its sibling runs: its variant's index in `variants` (the order
    `trntui profile` ran them: naive, fused, compiled), else a numeric `order` / `variant_index` / `index`;
    None when the manifest says nothing."""
    manifest = run.manifest or {}
    variants, variant = manifest.get("variants"), manifest.get("variant")
    if isinstance(variants, list) and variant in variants:
        return float(variants.index(variant))
    for key in ("order", "variant_index", "index"):
        value = manifest.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


def capture_order(run: Run) -> tuple[float, str]:
    """Sort key for runs: by `manifest_position` (runs without one last), then by name."""
    position = manifest_position(run)
    return (position if position is not None else float("inf"), run.name)


def walk(root: Path, max_depth: int, *, skip_hidden: bool = False) -> tuple[list[Path], list[Path]]:
    """(regular files at most `max_depth` levels below `root` (`root/x` is level 1), directories that could not
    be read). Links to directories are not followed. Pruned as it goes, so a tree 1,500 levels deep (or a
    loop of links) costs what `max_depth` levels cost, and an unreadable directory is reported, not taken for
    an empty one."""
    import os
    import stat

    files: list[Path] = []
    unreadable: list[Path] = []
    base = len(root.parts)

    def failed(err: OSError) -> None:
        unreadable.append(Path(err.filename) if err.filename else root)

    for dirpath, dirnames, filenames in os.walk(root, onerror=failed):
        d = Path(dirpath)
        if len(d.parts) - base >= max_depth - 1:
            dirnames[:] = []
        elif skip_hidden:
            dirnames[:] = [x for x in dirnames if not x.startswith(".")]
        for fn in filenames:
            p = d / fn
            try:
                if stat.S_ISREG(p.stat().st_mode):
                    files.append(p)
            except OSError:
                continue
    return sorted(files), unreadable


def unreadable_dirs(root: Path, max_depth: int = 8) -> list[Path]:
    """Directories under `root` (itself included) that cannot be listed (permission denied, I/O errors)."""
    import os

    if not root.is_dir():
        return []
    unreadable: list[Path] = []
    base = len(root.parts)

    def failed(err: OSError) -> None:
        unreadable.append(Path(err.filename) if err.filename else root)

    for dirpath, dirnames, _ in os.walk(root, onerror=failed):  # directories only: no file is stat'ed
        if len(Path(dirpath).parts) - base >= max_depth:
            dirnames[:] = []
    return sorted(unreadable)


def unreadable_warning(path: Path) -> str | None:
    """One line naming the directories under `path` that could not be searched, for a command that found runs
    beside them (what it shows may be missing runs); None when every directory could be read."""
    path = Path(path)
    blocked = unreadable_dirs(path)
    if not blocked:
        return None

    def rel(p: Path) -> str:
        try:
            return str(p.relative_to(path)) or "."
        except ValueError:
            return str(p)

    names = ", ".join(rel(p) for p in blocked[:5]) + (f" and {len(blocked) - 5} more" if len(blocked) > 5 else "")
    what = "directory" if len(blocked) == 1 else "directories"
    return f"{path}: {len(blocked)} {what} could not be read (permission denied; not searched): {names}"
