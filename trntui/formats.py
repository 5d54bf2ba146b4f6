"""The trace-format registry: one list, asked in order.

A format is a package under `trntui/loaders/` with a `FORMAT` object (trntui/loaders/protocol.py). Its optional
analysis hooks live in `trntui/analysis/` and are attached to it here, the one module that sees both layers
(analysis never imports a loader, loaders never import analysis). Adding a format = one package + one line in
`FORMATS` (docs/architecture.md).

- `find_runs(path)`: the runs of the first format that finds any (Neuron layouts before the generic Kineto walk);
  each run's `inputs` are its format's `inputs(run)`.
- `read_run(run, options)`: the run's format loads it into a fresh `ProfileBuilder`; the `Profile` gets the
  format's hooks. No cache and no analysis here: that is trntui/session.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trntui.analysis import neuron as neuron_analysis
from trntui.errors import LoadError
from trntui.loaders import kineto, neuron, neuron_device
from trntui.loaders.discover import Run
from trntui.loaders.protocol import LoadOptions, TraceFormat
from trntui.model.builder import ProfileBuilder
from trntui.model.profile import AnalysisHooks, Profile, ProfileMeta


@dataclass(frozen=True)
class WithHooks:
    """A format with analysis hooks attached (they are implemented in `trntui/analysis/`)."""

    format: Any
    link_edges: Callable[..., Any] | None = None
    device_time: Callable[..., Any] | None = None

    @property
    def name(self) -> str:
        return self.format.name

    def find_runs(self, path: Path) -> list[Run]:
        return self.format.find_runs(path)

    def load(self, run: Run, builder: ProfileBuilder, options: LoadOptions) -> None:
        self.format.load(run, builder, options)

    def inputs(self, run: Run) -> list[Path] | None:
        return self.format.inputs(run)


FORMATS: list[TraceFormat] = [
    WithHooks(neuron.FORMAT, link_edges=neuron_analysis.link_edges, device_time=neuron_analysis.device_time),
    neuron_device.FORMAT,
    kineto.FORMAT,
]
"""Every format trntui reads, in the order `find_runs` asks them (the generic Kineto walk last)."""


def format_of(run: Run) -> TraceFormat:
    for fmt in FORMATS:
        if fmt.name == run.format:
            return fmt
    raise LoadError(run.root, f"no trace format named {run.format!r} is registered")


def find_runs(path: str | Path) -> list[Run]:
    """The runs under `path`: a trace file, a run directory, or a parent directory of runs (variants, ranks).
    Raises `LoadError` when there is nothing readable."""
    path = Path(path)
    if not path.exists():
        raise LoadError(path, "no such file or directory")
    if not path.is_file() and not path.is_dir():
        raise LoadError(path, "not a regular file or directory")
    for fmt in FORMATS:
        runs = fmt.find_runs(path)
        if runs:
            for run in runs:
                run.inputs = format_of(run).inputs(run)
            return runs
    raise LoadError(path, "no trace files found (expected trace.json, *.pt.trace.json[.gz] or a Neuron profile)")


def inputs_of(run: Run) -> list[Path] | None:
    """The files that key the run's cache entry: `run.inputs` as discovery set them, else its format's answer
    (a `Run` made by hand)."""
    return run.inputs if run.inputs is not None else format_of(run).inputs(run)


def read_run(run: Run, options: LoadOptions | None = None) -> Profile:
    """Read every readable file of one run into one `Profile` (no cache: see trntui/session.py)."""
    options = (options or LoadOptions(cache=False)).resolved()
    fmt = format_of(run)
    with reporting(options):
        builder = ProfileBuilder(ProfileMeta())
        fmt.load(run, builder, options)
        profile = builder.finish()
    finish(run, profile)
    return profile


def finish(run: Run, profile: Profile) -> None:
    """What a loaded profile of `run` gets, fresh or from the cache: its format's hooks and the run's metadata."""
    fmt = format_of(run)
    hooks = AnalysisHooks()
    for name in ("link_edges", "device_time"):
        hook = getattr(fmt, name, None)
        if hook is not None:
            getattr(hooks, name).append(hook)
    profile.hooks = hooks
    profile.meta.trace_meta.setdefault("run_name", run.name)
    if run.manifest:
        profile.meta.trace_meta["manifest"] = run.manifest


@contextmanager
def reporting(options: LoadOptions) -> Iterator[None]:
    """Install the options' progress reporter / cancel check for the block (else leave the caller's)."""
    progress, cancelled = options.progress, options.cancelled
    if progress is None and cancelled is None:
        yield
        return
    from trntui.progress import Cancelled, current, reporting as install

    outer = progress or current()

    def report(stage: str, done: int, total: int) -> None:
        if cancelled is not None and cancelled():
            raise Cancelled()
        if outer is not None:
            outer(stage, done, total)

    with install(report):
        yield
