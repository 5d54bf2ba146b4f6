"""The load request: what the user asked to load, resolved once, handed whole to every process that loads it.

A shell turns what the user typed (a path, maybe a run name, `--merge`, the load flags) into a `LoadRequest`
with `resolve(...)`: the runs under the path are found once (`trntui.formats.find_runs`), the run is picked by
the one rule `match_run` applies, and the `LoadOptions` are built once (flags over the documented variables,
`LoadOptions.from_env`). From then on the request travels whole: to the app's load worker, to its loader
process (sent as the request itself, never as a path and a name to look up again), to the rank workers (a
process pool or Dask pickle it) and to the cache (keyed by `request.run.inputs`). Nothing that is handed a
request looks for its run again, and every reader gets its options (the memory budget above all) only from
`request.options`.

A request holds no callbacks (progress and cancel belong to the process that loads: `load(request,
progress=...)`), so it pickles and compares equal after a round trip.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trntui.loaders.discover import Run
from trntui.loaders.protocol import LoadOptions

if TYPE_CHECKING:
    from trntui.model.profile import Profile
    from trntui.progress import Reporter

__all__ = ["Ambiguous", "LoadRequest", "choose", "load", "match_run", "request_for", "resolve"]


@dataclass(frozen=True)
class LoadRequest:
    """One run to load and how: plain data (it pickles; equal after a round trip)."""

    path: Path
    """What the user typed (the file or directory the run was found under; for messages and headers)."""
    run: Run
    """The run, as discovery found it: its format, its files (`framework_traces`, `source`) and `inputs` (what
    keys its cache entry). Final once resolved: nothing changes it afterwards."""
    options: LoadOptions = field(default_factory=LoadOptions)
    """How to load it (memory budget, cache, conversion timeout), without callbacks."""
    merge: bool = False
    """The run is every trace under `path` read as one (`--merge`)."""

    def __post_init__(self) -> None:
        if self.options.progress is not None or self.options.cancelled is not None:
            object.__setattr__(self, "options", dataclasses.replace(self.options, progress=None, cancelled=None))

    @property
    def name(self) -> str:
        return self.run.name

    def with_options(self, **changes: Any) -> LoadRequest:
        """The same run with some options changed (e.g. a rank worker's share of the memory budget)."""
        return dataclasses.replace(self, options=dataclasses.replace(self.options, **changes))

    def with_run(self, run: Run) -> LoadRequest:
        """The same path and options for another run already found (a rank of a job, a run the user picked)."""
        return dataclasses.replace(self, run=run)


class Ambiguous(Exception):
    """The path holds several runs and none was named (the app asks; the CLI loads them all)."""

    def __init__(self, runs: list[Run]) -> None:
        super().__init__(f"{len(runs)} runs")
        self.runs = runs


def match_run(runs: list[Run], name: str, path: Path | str = "") -> Run:
    """The run called `name` among `runs`: the one with exactly that name, else the only one whose name starts
    with `name` followed by `:`, `/` or a space (a variant, a rank directory, a span). A one-line `TrntuiError`
    naming the runs there are when none or several match. The one rule every command and the app use."""
    from trntui.errors import TrntuiError

    matches = [r for r in runs if r.name == name] or [
        r for r in runs if r.name.startswith((f"{name}:", f"{name}/", f"{name} "))
    ]
    if len(matches) != 1:
        names = ", ".join(r.name for r in runs[:8]) + (f" and {len(runs) - 8} more" if len(runs) > 8 else "")
        what = "several runs match" if matches else "no run named"
        raise TrntuiError(f"{path}: {what} {name!r} (runs: {names})")
    return matches[0]


def resolve(
    path: str | Path, run_name: str | None = None, *, options: LoadOptions | None = None, merge: bool = False,
) -> LoadRequest:
    """The request for `run_name` (or the only run) under `path`: its runs found once, the run matched by
    `match_run`, `options` (None: `LoadOptions.from_env()`). Raises `LoadError` when the path holds nothing
    readable, `TrntuiError` when no run has that name, `Ambiguous` (with the runs) when there are several runs
    and no name."""
    from trntui.formats import find_runs

    return choose(path, find_runs(Path(path), merge=merge), run_name, options=options, merge=merge)


def choose(
    path: str | Path, runs: list[Run], run_name: str | None = None, *, options: LoadOptions | None = None,
    merge: bool = False,
) -> LoadRequest:
    """`resolve` on the runs the caller already found under `path` (the app keeps them for its run picker)."""
    if run_name is None:
        if len(runs) != 1:
            raise Ambiguous(list(runs))
        run = runs[0]
    else:
        run = match_run(list(runs), run_name, path)
    return request_for(path, run, options=options, merge=merge)


def request_for(path: str | Path, run: Run, *, options: LoadOptions | None = None, merge: bool = False) -> LoadRequest:
    """The request for a run already found (the ranks of a job, every run of a directory for `summary`)."""
    return LoadRequest(Path(path), run, options if options is not None else LoadOptions.from_env(), merge)


def load(
    request: LoadRequest, *, progress: Reporter | None = None, cancelled: Any = None, on_profile: Any = None,
) -> Profile:
    """Load the request's run in this process, through the parsed-profile cache when its options say so
    (`trntui.session.load_run`); `progress`/`cancelled`: this process's callbacks (trntui/progress.py)."""
    from trntui.session import load_run

    options = request.options
    if progress is not None or cancelled is not None:
        options = dataclasses.replace(options, progress=progress, cancelled=cancelled)
    return load_run(request.run, options, on_profile=on_profile)
