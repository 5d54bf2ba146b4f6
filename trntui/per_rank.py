"""Per-rank work for a distributed job: each rank loaded, summarised and cached by itself, on an engine.

`summarize_ranks(runs, engine=...)` maps `summarize_task` over the job's ranks with `trntui.engine.map_tasks`
(this process, a local process pool of `--jobs` workers, or Dask) and compares the summaries
(`trntui.analysis.ranks.compare_ranks`). A worker loads one rank, summarises it and drops it before taking the
next, so at most `jobs` ranks' events are in memory at once, and only the small `RankSummary` (a few kB) comes
back. Each worker gets its own memory budget (`--memory-budget` applies per worker; by default this machine's
budget divided among the local workers, or, on a Dask cluster, each worker's own budget divided among its
threads).

Summaries are cached as small JSON files (`<cache dir>/rank-summaries/`), keyed by the rank's files (path, size,
mtime) and the options, so a second look at a 1,000-rank job reads 1,000 small files instead of 1,000 traces.
The parsed-profile cache is read when it already holds a rank but never written from here (its few entries would
only churn). Each task carries the rank's `LoadRequest` (trntui/request.py: its run and the options, the
budget that worker may use among them) as the command made it: a worker finds nothing and reads no environment.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from trntui.analysis.ranks import DEFAULT_FLOOR, DEFAULT_K, TOP_OPS, RankFailure, RankSummary, RanksReport, compare_ranks
from trntui.engine import EngineOptions, map_tasks
from trntui.errors import TrntuiError

SUMMARY_FORMAT = 2
"""Bumped whenever `RankSummary` or how it is computed changes (old cached summaries become misses)."""


@dataclass(frozen=True)
class RankTask:
    """What one worker needs for one rank (pickled to the worker: plain data only)."""

    request: Any
    """The rank's `LoadRequest`: its `Run` (files) and `LoadOptions`. `options.memory_budget` is this rank's
    load's bytes (the command's budget per worker, or this machine's split among its local workers), or "auto"
    on a remote cluster: that worker's own (80% of its machine's available memory / `share`). Its cache
    directory keeps the rank summaries (None: no cache); parsed profiles are read from it, never written."""
    rank: int | None
    steps: str | None = None
    share: int = 1
    """Loads running at once on this worker's machine (divides its own budget)."""
    top: int = TOP_OPS

    @property
    def run(self) -> Any:
        return self.request.run


def run_files(run: Any) -> list[Path]:
    """Every file a run is read from (the summary cache's key)."""
    files = getattr(run, "inputs", None) or []
    return [Path(f) for f in (list(files) or list(getattr(run, "framework_traces", []) or []))]


def _summary_key(task: RankTask) -> Path | None:
    from trntui import __version__
    from trntui.cache import code_stamp

    cache_dir = task.request.options.cache_dir
    if cache_dir is None or getattr(task.run, "inputs", None) is None:
        return None
    files = run_files(task.run)
    if not files:
        return None
    try:
        stamp = [[str(f.resolve()), f.stat().st_size, f.stat().st_mtime_ns] for f in files]
    except OSError:
        return None
    key = json.dumps({"files": stamp, "steps": task.steps, "top": task.top, "rank": task.rank, "name": task.run.name,
                      "version": __version__, "format": SUMMARY_FORMAT, "code": code_stamp()}, sort_keys=True)
    h = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return Path(cache_dir) / "rank-summaries" / f"{h}.json"


SUMMARY_LIMIT = 64 << 20
"""Largest rank-summary cache entry read (a summary is KBs; anything larger is not one of ours)."""


def _read_cached(path: Path | None) -> RankSummary | None:
    """The cached summary, or None (a miss). An entry that is not a regular file of ours (a FIFO, a link to
    /dev/zero, a huge file) is never opened or read to the end (trntui/fsio.py): it is removed, as a link or
    FIFO itself, and the rank is summarised again."""
    if path is None:
        return None
    from trntui import fsio

    try:
        raw = fsio.read_bounded(path, SUMMARY_LIMIT, follow_symlinks=False)
    except fsio.FileRefused as exc:
        if exc.problem != "no such file":
            try:
                fsio.remove_file(path)
            except fsio.FileRefused:
                pass
        return None
    try:
        return RankSummary.from_dict(json.loads(raw))
    except (ValueError, KeyError, TypeError, RecursionError, AttributeError):
        return None


def _write_cached(path: Path | None, summary: RankSummary) -> None:
    if path is None:
        return
    from trntui import fsio

    try:
        fsio.ensure_dir(path.parent)
        fsio.atomic_write(path, json.dumps(summary.to_dict()), force=True)
    except fsio.FileRefused:
        pass  # a read-only cache dir (or an entry that is not a regular file) only costs speed


def _worker_budget(task: RankTask) -> int | None:
    """The budget of this rank's load: its request's, with "auto" resolved on this worker (its machine's
    budget shared by the loads that run on it at once)."""
    budget = task.request.options.memory_budget
    if budget != "auto":
        return budget
    from trntui.memory import auto_budget

    share = task.share
    try:  # on a Dask worker: its threads share the machine
        from distributed import get_worker

        share = max(share, int(get_worker().state.nthreads))
    except (ImportError, ValueError, AttributeError):
        pass
    budget = auto_budget()
    return None if budget is None else max(budget // max(share, 1), 1)


def summarize_task(task: RankTask) -> RankSummary | RankFailure:
    """Load one rank, summarise it, drop it (runs on a worker). Expected failures come back as `RankFailure`."""
    from trntui.analysis.ranks import summarize_rank
    from trntui.progress import reporting

    import time

    began = time.perf_counter()
    cpu0 = _cpu_seconds()
    key = _summary_key(task)
    cached = _read_cached(key)
    if cached is not None:
        cached.ran_on = {"worker": "cache", "peak_rss_bytes": None, "seconds": round(time.perf_counter() - began, 3),
                         "cpu_seconds": round(_cpu_seconds() - cpu0, 3)}
        return cached
    try:
        with reporting(None):  # a worker never draws progress on the terminal
            profile = _load(task)
        rank = task.rank
        if rank is None:
            rank = _distributed_rank(profile)
        summary = summarize_rank(profile, name=task.run.name, rank=rank, files=[str(f) for f in run_files(task.run)],
                                 steps=task.steps, top=task.top)
    except TrntuiError as exc:
        return RankFailure(task.run.name, task.rank, str(exc))
    _write_cached(key, summary)
    summary.ran_on = {"worker": _worker_name(), "peak_rss_bytes": _peak_rss(),
                      "seconds": round(time.perf_counter() - began, 3),
                      "cpu_seconds": round(_cpu_seconds() - cpu0, 3)}
    return summary


def _cpu_seconds() -> float:
    """CPU time of this process and the children it waited for (the loader's forked decode helper)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _worker_name() -> str:
    import socket

    return f"{socket.gethostname()}:{os.getpid()}"


def _peak_rss() -> int | None:
    """This process's peak resident memory so far (bytes), where the platform says. On Linux VmHWM (this
    process's own): ru_maxrss of a process started by vfork+exec (a Dask nanny's worker) begins at its parent's
    peak."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
        import sys

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(peak) if sys.platform == "darwin" else int(peak) * 1024
    except (ImportError, OSError, ValueError):
        return None


def _load(task: RankTask) -> Any:
    from trntui.formats import read_run
    from trntui.session import cached

    import dataclasses

    options = task.request.options
    if options.cache_dir is not None:  # a rank someone already opened; never written from here (module docstring)
        hit = cached(task.run, dataclasses.replace(options, cache=True))
        if hit is not None:
            return hit
    return read_run(task.run, dataclasses.replace(options, memory_budget=_worker_budget(task), cache=False))


def _distributed_rank(profile: Any) -> int | None:
    info = profile.meta.trace_meta.get("distributedInfo")
    if isinstance(info, dict):
        r = info.get("rank")
        if isinstance(r, int) and not isinstance(r, bool):
            return r
        if isinstance(r, str) and r.strip().isdigit():
            return int(r)
    return None


def worker_budget(options: Any, engine: EngineOptions, ranks: int) -> tuple[int | None, int]:
    """(memory budget per worker in bytes or None for "each worker decides", workers sharing this machine).

    A set budget (`--memory-budget` / `TRNTUI_MEMORY_BUDGET`, in `options`) applies per worker as given. On "auto",
    local workers (a pool, a LocalCluster) split this machine's budget; workers of a remote cluster each use
    their own machine's (None here).
    """
    from trntui.memory import auto_budget

    local = engine.engine == "local" or not engine.scheduler
    workers = engine.local_workers(ranks) if local else 1
    option = options.memory_budget
    if option != "auto":
        return option, workers
    if not local:
        return None, workers
    budget = auto_budget()
    return (None if budget is None else max(budget // workers, 1)), workers


def rank_requests(runs: Sequence[Any], options: Any = None, engine: EngineOptions = EngineOptions()) -> list[Any]:
    """One `LoadRequest` per rank of a job, made once by the command: the rank's run and the command's options
    with the budget of one worker (`worker_budget`; "auto" on a remote cluster) and the cache directory only
    when the cache is on. These travel to the workers unchanged."""
    from trntui.loaders.protocol import LoadOptions
    from trntui.request import LoadRequest

    if options is None:
        options = LoadOptions.from_env()
    budget, _ = worker_budget(options, engine, len(runs))
    if budget is None and options.memory_budget == "auto":
        budget = "auto"  # a remote worker decides (its own machine)
    cache_dir = options.cache_dir if options.cache else None
    per_rank = dataclasses.replace(options, memory_budget=budget, cache_dir=cache_dir, progress=None, cancelled=None)
    return [LoadRequest(Path(r.root), r, per_rank) for r in runs]


def summarize_ranks(
    runs: Sequence[Any],
    *,
    engine: EngineOptions = EngineOptions(),
    ranks: Sequence[int | None] | None = None,
    steps: str | None = None,
    options: Any = None,
    top: int = TOP_OPS,
    k: float = DEFAULT_K,
    floor: float = DEFAULT_FLOOR,
    progress: Callable[[int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> RanksReport:
    """Summarise every rank of a job on `engine` and compare them (`RanksReport`). `runs`: the job's `Run`s, or
    the `LoadRequest`s the command made of them (`rank_requests`: sent to the workers as they are); `options`:
    the command's `LoadOptions` for `Run`s (memory budget per worker, cache directory; None: the defaults)."""
    from trntui.request import LoadRequest

    runs = list(runs)
    if not runs:
        raise TrntuiError("no ranks to compare")
    requests = runs if all(isinstance(r, LoadRequest) for r in runs) else rank_requests(runs, options, engine)
    runs = [q.run for q in requests]
    rank_ids = list(ranks) if ranks is not None else [getattr(r, "rank", None) for r in runs]
    if len({r for r in rank_ids if r is not None}) != len([r for r in rank_ids if r is not None]):
        rank_ids = [None] * len(runs)  # duplicate ids: the ranks' own distributedInfo decides, else their names
    share = engine.local_workers(len(runs)) if engine.engine == "local" or not engine.scheduler else 1
    budget = requests[0].options.memory_budget
    if engine.engine == "dask" and not engine.scheduler and isinstance(budget, int):
        # Dask pauses a worker at 80% of its limit: room for the load's budget plus the interpreter
        engine = dataclasses.replace(engine, memory_limit=engine.memory_limit or int(budget / 0.8))
    tasks = [RankTask(request=q, rank=rid, steps=steps, share=share, top=top) for q, rid in zip(requests, rank_ids)]
    results = map_tasks(summarize_task, tasks, engine, progress=progress, cancelled=cancelled,
                        preload=("trntui.per_rank", "trntui.session", "trntui.analysis.ranks"))
    summaries = [x for x in results if isinstance(x, RankSummary)]
    failures = [x for x in results if isinstance(x, RankFailure)]
    if not summaries:
        raise TrntuiError(f"no rank could be read ({failures[0].name}: {failures[0].error})" if failures else "no ranks")
    labels = [s.rank for s in summaries]
    if None in labels or len(set(labels)) != len(labels):
        for s in summaries:  # ranks without (distinct) ids are shown by name
            s.rank = None
    return compare_ranks(summaries, failures, k=k, floor=floor)
