"""What a trace format provides (`TraceFormat`) and what a load is told (`LoadOptions`).

A format is a package under `trntui/loaders/` whose `FORMAT` object has:

- `name`: the id written into the runs it finds (`Run.format`);
- `find_runs(path)`: the runs this format recognises under a file or directory, [] when none (the registry in
  trntui/formats.py asks each format in turn; the first that finds something wins);
- `load(run, builder, options)`: add the run's events, lanes and flows to a `ProfileBuilder`;
- `inputs(run)`: every file the load reads (the parsed-profile cache is keyed by them), None when they are not
  known (the run is then never cached);

may have `begin(run, options)`: a context manager the load runs inside, entered before the model (and numpy) is
imported, so the format can start work that needs neither (the Kineto format maps a big trace and starts its
first compiled scans: trntui/loaders/kineto/early.py); it must import no numpy and give the same profile as a
load without it;

and may have analysis hooks (attached in trntui/formats.py, implemented in `trntui/analysis/`, called through
`Profile.hooks` so analysis never imports a loader):

- `link_edges(profile, links)`: add dependency edges the generic rules do not find;
- `device_time(profile, links)`: per frontend op, device ns when the trace has no device rows ({} when none).

Adding a format = one package + one line in `trntui.formats.FORMATS` (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from trntui.loaders.discover import Run
    from trntui.model.builder import ProfileBuilder
    from trntui.progress import Reporter


@dataclass(frozen=True)
class LoadOptions:
    """Everything a load may depend on besides its files, passed down explicitly (no environment reads).

    Shells build it once (`LoadOptions.from_env(...)` merges command-line values with the documented
    variables, trntui/settings.py); `trntui.session.load_run` without options does the same."""

    memory_budget: int | str | None = "auto"
    """Bytes a load may use; None: no limit; "auto": 80% of the memory available when the load starts."""
    cache: bool = True
    """Read and write the parsed-profile cache (trntui/cache/) for runs that are worth it."""
    cache_dir: Path | None = None
    """The cache directory: parsed profiles, spill files of streamed loads, Neuron conversions. None: the
    parsed-profile cache is off and scratch files go to the system's temporary directory."""
    cache_min_bytes: int = 8 << 20
    """Runs whose inputs total fewer bytes are not cached."""
    progress: Reporter | None = None
    """`(stage, done, total)` callback for the load's progress; None: whatever reporter the caller installed
    with `trntui.progress.reporting` (if any)."""
    cancelled: Callable[[], bool] | None = None
    """Polled between chunks: when it returns True the load stops with `trntui.progress.Cancelled`."""
    convert_timeout: float | None = 300.0
    """Seconds a conversion of a raw Neuron capture may take (all of neuron-explorer's routes together; None: no
    limit); past it the framework trace loads alone with a note (trntui/loaders/neuron/convert.py)."""
    args_from_file: bool = True
    """A big plain trace's events' args are left in the file, as byte ranges read from it when they are asked for
    (never copied into memory: less memory, a faster load); a file changed on disk since the load then makes such
    a read a one-line `LoadError`. False: they are copied into memory at the load (the app's own loads: a session
    may outlive the file's content; a load that writes the cache: `session.load_run` sets it). Either way the
    profile is the same."""

    @classmethod
    def from_env(
        cls,
        *,
        memory_budget: int | str | None = None,
        cache: bool = True,
        progress: Reporter | None = None,
        cancelled: Callable[[], bool] | None = None,
        convert_timeout: float | None = None,
    ) -> LoadOptions:
        """Options from explicit values (a command's flags) over the documented user variables.

        `memory_budget`: a `--memory-budget` value (bytes or a size string; "auto" or None: the variable, else
        auto). A malformed size is a one-line `TrntuiError` here, before anything is read."""
        from trntui import memory, settings

        if memory_budget is None or (isinstance(memory_budget, str) and memory_budget.strip().lower() == "auto"):
            memory_budget = settings.memory_budget() or "auto"
        budget: int | str | None = "auto" if memory_budget == "auto" else memory.parse_option(memory_budget)
        return cls(
            memory_budget=budget,
            cache=cache and settings.cache_enabled(),
            cache_dir=settings.cache_dir(),
            cache_min_bytes=settings.cache_min_bytes(),
            progress=progress,
            cancelled=cancelled,
            convert_timeout=convert_timeout if convert_timeout is not None else settings.convert_timeout(),
        )

    def resolved(self) -> LoadOptions:
        """These options with "auto" replaced by the bytes it means now (when a load starts)."""
        if self.memory_budget != "auto":
            return self
        from trntui import memory

        return replace(self, memory_budget=memory.auto_budget())

    @property
    def budget(self) -> int | None:
        """The memory budget in bytes (None: no limit); "auto" is resolved now."""
        b = self.resolved().memory_budget
        return b if isinstance(b, int) else None

    @property
    def scratch_dir(self) -> Path | None:
        """Where a load's temporary files go (None: the system's temporary directory)."""
        return None if self.cache_dir is None else self.cache_dir / "spill"


class TraceFormat(Protocol):
    """A trace format (see the module docstring). The analysis hooks are optional attributes."""

    name: str

    def find_runs(self, path: Path) -> list[Run]: ...

    def load(self, run: Run, builder: ProfileBuilder, options: LoadOptions) -> None: ...

    def inputs(self, run: Run) -> list[Path] | None: ...

