"""What a path holds: a trace file, a run directory, or a parent directory of runs (variants, ranks).

A run is one profile: its framework trace(s) plus, for Neuron captures, the system-trace files next to it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from trntui.errors import LoadError

TRACE_SUFFIXES = (".json", ".json.gz")
MANIFEST = "trntui.json"


@dataclass
class Run:
    """One loadable profile found under a path."""

    name: str
    root: Path
    framework_traces: list[Path] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)
    extra_loaders: list[Callable[[Any], None]] = field(default_factory=list)
    """Loaders for non-Kineto sources (Neuron system traces); each takes the `ProfileBuilder`."""
    notes: list[str] = field(default_factory=list)
    inputs: list[Path] | None = None
    """Every file the extra loaders read, when the discoverer knows them (the parsed-profile cache is keyed by
    them); None: unknown (e.g. a raw capture converted by an external tool), so such a run is not cached."""


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
    try:
        with path.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    stripped = head.lstrip()
    return stripped[:1] == b"[" or b'"traceEvents"' in head or b'"schemaVersion"' in head


def _manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    if not path.is_file():
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _nearest_manifest(directory: Path, root: Path) -> dict[str, Any]:
    """The manifest beside the trace, else the nearest one above it up to `root` (a `trntui profile` variant
    directory on Neuron holds its manifest above the `<instance>_pid_<pid>/<timestamp>/trace.json` torch-neuronx
    writes)."""
    current = directory
    while True:
        manifest = _manifest(current)
        if manifest or current == root or root not in current.parents:
            return manifest
        current = current.parent


def find_runs(path: Path) -> list[Run]:
    """The runs under `path`, sorted by name. Raises `LoadError` when there is nothing readable."""
    if not path.exists():
        raise LoadError(path, "no such file or directory")
    if path.is_file():
        return [Run(name=path.name, root=path.parent, framework_traces=[path])]
    if not path.is_dir():
        raise LoadError(path, "not a regular file or directory")
    hooks = _discovery_hooks()
    for hook in hooks:
        runs = hook(path)
        if runs:
            return runs
    runs: list[Run] = []
    for directory in sorted({p.parent for p in _walk_traces(path)}):
        traces = sorted(p for p in directory.iterdir() if p.is_file() and is_chrome_trace(p))
        if not traces:
            continue
        rel = directory.relative_to(path)
        name = str(rel) if str(rel) != "." else path.name
        manifest = _nearest_manifest(directory, path)
        if manifest.get("complete") is False:
            continue
        runs.append(Run(name=name, root=directory, framework_traces=traces, manifest=manifest))
    if not runs:
        raise LoadError(path, "no trace files found (expected trace.json, *.pt.trace.json[.gz] or a Neuron profile)")
    runs.sort(key=capture_order)
    return runs


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


def _walk_traces(path: Path, max_depth: int = 6) -> list[Path]:
    out: list[Path] = []
    base_depth = len(path.parts)
    for p in sorted(path.rglob("*")):
        if len(p.parts) - base_depth > max_depth:
            continue
        if p.is_file() and is_chrome_trace(p):
            out.append(p)
    return out


def _discovery_hooks() -> list[Callable[[Path], list[Run]]]:
    """Format-specific discovery (Neuron profile layouts) tried before the generic walk."""
    hooks: list[Callable[[Path], list[Run]]] = []
    try:
        from trntui.loaders.neuron import discover as neuron_discover  # noqa: F401
    except ImportError:
        return hooks
    hooks.append(neuron_discover.find_neuron_runs)
    return hooks
