"""Loaders: files and profile directories → `Profile`.

`find_runs(path)` says what a path holds (one run per variant/rank); `load_run(run)` reads one;
`load_profile(path)` does both when the path holds exactly one run.
"""

from __future__ import annotations

from pathlib import Path

from trntui.errors import LoadError, OverBudget
from trntui.loaders.discover import Run, find_runs
from trntui.model.builder import ProfileBuilder
from trntui.model.profile import Profile, ProfileMeta

__all__ = ["Run", "find_runs", "load_run", "load_profile", "load_path"]


def load_run(run: Run, *, cache: bool = True, memory_budget: str | int | None = None) -> Profile:
    """Read every readable file of one run into one `Profile`.

    With `cache`, big Kineto runs are read from / written to the parsed-profile cache (trntui/cache.py).
    `memory_budget`: bytes, a size string (`4G`), "none", or None/"auto" for the default (trntui/memory.py);
    Kineto files that do not fit in memory are streamed, and refused when not even that fits.
    Progress goes to the reporter installed with `trntui.progress.reporting`.
    """
    from trntui import memory

    budget = memory.resolve(memory_budget)
    if cache:
        from trntui import cache as profile_cache

        cached = profile_cache.load(run)
        if cached is not None:
            _apply_run_meta(run, cached)
            return cached
    builder = ProfileBuilder(ProfileMeta())
    from trntui.loaders.kineto import load_kineto_into

    failures: list[LoadError] = []
    builder.memory_budget = budget

    def left() -> int | None:
        return None if budget is None else max(budget - builder.nbytes, 1)

    for trace in run.framework_traces:
        if len(run.framework_traces) == 1 and not run.extra_loaders:
            load_kineto_into(trace, builder, budget=left())
            continue
        try:  # one broken file of several (e.g. a rank killed mid-write) must not hide the others
            load_kineto_into(trace, builder, budget=left())
        except OverBudget:
            raise
        except LoadError as exc:
            failures.append(exc)
            builder.meta.skip("unreadable trace files", 1)
            builder.meta.notes.append(f"skipped {exc}")
    if failures and len(failures) == len(run.framework_traces) and not run.extra_loaders:
        raise failures[0]
    for loader in run.extra_loaders:
        loader(builder)
    profile = builder.finish()
    _apply_run_meta(run, profile)
    if cache:
        from trntui.progress import report

        report("writing the cache", 0, 0)
        profile_cache.store(run, profile)
    return profile


def _apply_run_meta(run: Run, profile: Profile) -> None:
    profile.meta.trace_meta.setdefault("run_name", run.name)
    if run.manifest:
        profile.meta.trace_meta["manifest"] = run.manifest


def load_profile(path: str | Path) -> Profile:
    """Load a trace file, or a directory holding exactly one run."""
    runs = find_runs(Path(path))
    if len(runs) > 1:
        names = ", ".join(r.name for r in runs[:6])
        raise LoadError(path, f"holds {len(runs)} runs ({names}{', ...' if len(runs) > 6 else ''}); pick one")
    return load_run(runs[0])


def load_path(path: str | Path) -> list[tuple[Run, Profile]]:
    """Every run under `path`, loaded."""
    return [(run, load_run(run)) for run in find_runs(Path(path))]
