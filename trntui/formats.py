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
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trntui.errors import LoadError
from trntui.loaders import kineto, neuron, neuron_device
from trntui.loaders.discover import Group, Run
from trntui.loaders.protocol import LoadOptions, TraceFormat

if TYPE_CHECKING:  # (the model imports numpy: `read_run` imports it once its format has begun the load)
    from trntui.model.builder import ProfileBuilder
    from trntui.model.profile import Profile


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

    def begin(self, run: Run, options: LoadOptions) -> AbstractContextManager[None]:
        return begin_load(self.format, run, options)

    def load(self, run: Run, builder: ProfileBuilder, options: LoadOptions) -> None:
        self.format.load(run, builder, options)

    def inputs(self, run: Run) -> list[Path] | None:
        return self.format.inputs(run)


class MergedFormat:
    """`--merge`: every run found under a path read into one profile (the table sums them). Each member is read by
    its own format with its own lanes (instance = the member) and its own External ids, correlations and flow
    keys, so nothing links across members; an unreadable member is skipped and counted."""

    name = "merged"

    def find_runs(self, path: Path) -> list[Run]:
        return []  # made by `find_runs(path, merge=True)`, never found

    def load(self, run: Run, builder: ProfileBuilder, options: LoadOptions) -> None:
        from trntui.errors import OverBudget

        members: list[Run] = list(run.source or [])
        failures: list[LoadError] = []
        for k, member in enumerate(members):
            mark = builder.mark()
            builder.lane_scope = member.name
            try:
                format_of(member).load(member, builder, options)
            except OverBudget:
                raise
            except LoadError as exc:
                failures.append(exc)
                builder.meta.skip("unreadable trace files", 1)
                builder.meta.notes.append(f"skipped {exc}")
            finally:
                builder.lane_scope = ""
            builder.namespace_ids(mark, k)
        if failures and len(failures) == len(members):
            raise failures[0]

    def inputs(self, run: Run) -> list[Path] | None:
        files: list[Path] = []
        for member in run.source or []:
            got = format_of(member).inputs(member)
            if got is None:
                return None
            files += got
        return files


MERGED = MergedFormat()


def merged_run(path: Path, runs: list[Run]) -> Run:
    """All of `runs` as one run (`--merge`)."""
    name = path.name or str(path)
    files = sorted({f for r in runs for f in r.framework_traces})
    what = f"{len(runs)} runs" if any(r.format != "kineto" or len(r.framework_traces) != 1 for r in runs) else \
        f"{len(files)} trace files"
    return Run(name=name, root=path if path.is_dir() else path.parent, framework_traces=files,
               manifest=runs[0].manifest if len(runs) == 1 else {}, format=MERGED.name, source=list(runs),
               group=Group("merged", name, f"--merge: {what} read as one run"))


def _neuron_link_edges(profile: Profile, links: Any) -> None:
    """trntui/analysis/neuron.py's `link_edges`, imported when a Neuron run's links are built (not by every start)."""
    from trntui.analysis import neuron as neuron_analysis

    neuron_analysis.link_edges(profile, links)


def _neuron_device_time(profile: Profile, links: Any) -> dict[int, int]:
    """trntui/analysis/neuron.py's `device_time`, imported on first use."""
    from trntui.analysis import neuron as neuron_analysis

    return neuron_analysis.device_time(profile, links)


FORMATS: list[TraceFormat] = [
    WithHooks(neuron.FORMAT, link_edges=_neuron_link_edges, device_time=_neuron_device_time),
    neuron_device.FORMAT,
    kineto.FORMAT,
]
"""Every format trntui reads, in the order `find_runs` asks them (the generic Kineto walk last)."""


def format_of(run: Run) -> TraceFormat:
    if run.format == MERGED.name:
        return MERGED
    for fmt in FORMATS:
        if fmt.name == run.format:
            return fmt
    raise LoadError(run.root, f"no trace format named {run.format!r} is registered")


def find_runs(path: str | Path, *, merge: bool = False) -> list[Run]:
    """The runs under `path`: a trace file, a run directory, or a parent directory of runs (variants, ranks, a
    worker's spans: each run says which group it belongs to and why, trntui/loaders/grouping.py); with `merge`,
    one run of them all. Raises `LoadError` when there is nothing readable."""
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
            if merge and (len(runs) > 1 or len(runs[0].framework_traces) > 1):
                run = merged_run(path, runs)
                run.inputs = MERGED.inputs(run)
                return [run]
            return runs
    from trntui.loaders.discover import unreadable_dirs

    blocked = unreadable_dirs(path)
    if blocked and blocked[0] == path:
        raise LoadError(path, "cannot read this directory (permission denied)")
    if blocked:
        more = f" and {len(blocked) - 1} more" if len(blocked) > 1 else ""
        dirs = "directory" if len(blocked) == 1 else "directories"
        raise LoadError(path, f"no trace files found; {len(blocked)} {dirs} could not be read "
                              f"(permission denied: {blocked[0]}{more})")
    raise LoadError(path, "no trace files found (expected trace.json, *.pt.trace.json[.gz] or a Neuron profile)")


def inputs_of(run: Run) -> list[Path] | None:
    """The files that key the run's cache entry: `run.inputs` as discovery set them, else its format's answer
    (a `Run` made by hand)."""
    return run.inputs if run.inputs is not None else format_of(run).inputs(run)


def read_run(run: Run, options: LoadOptions | None = None) -> Profile:
    """Read every readable file of one run into one `Profile` (no cache: see trntui/session.py)."""
    options = (options or LoadOptions(cache=False)).resolved()
    fmt = format_of(run)
    with reporting(options), begin_load(fmt, run, options):
        from trntui import settings
        from trntui.model.builder import ProfileBuilder  # numpy, imported now beside the scans the format has begun
        from trntui.model.profile import ProfileMeta

        settings.release_blas_hold()  # (the CLI's one BLAS thread is in: processes started later get the user's)

        builder = ProfileBuilder(ProfileMeta())
        fmt.load(run, builder, options)
        profile = builder.finish()
    finish(run, profile)
    return profile


def begin_load(fmt: Any, run: Run, options: LoadOptions) -> AbstractContextManager[None]:
    """The format's optional `begin(run, options)`: what its load can start before the model (numpy) is imported,
    for the block around the load (trntui/loaders/protocol.py); else nothing."""
    begin = getattr(fmt, "begin", None)
    return begin(run, options) if begin is not None else nullcontext()


def finish(run: Run, profile: Profile) -> None:
    """What a loaded profile of `run` gets, fresh or from the cache: its format's hooks and the run's metadata."""
    from trntui.model.profile import AnalysisHooks

    hooks = AnalysisHooks()
    fmts = [format_of(m) for m in (run.source or [])] if run.format == MERGED.name else [format_of(run)]
    for fmt in dict.fromkeys(fmts, None):
        for name in ("link_edges", "device_time"):
            hook = getattr(fmt, name, None)
            if hook is not None and hook not in getattr(hooks, name):
                getattr(hooks, name).append(hook)
    profile.hooks = hooks
    profile.meta.trace_meta.setdefault("run_name", run.name)
    if run.manifest:
        profile.meta.trace_meta["manifest"] = run.manifest
        profiler = run.manifest.get("profiler")
        cut = profiler.get("harness_frames_cut") if isinstance(profiler, dict) else None
        if isinstance(cut, int) and not isinstance(cut, bool) and cut > 0:
            from trntui.capture.stacks import NOTE

            note = NOTE.format(n=cut)
            if note not in profile.meta.notes:
                profile.meta.notes.append(note)


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
