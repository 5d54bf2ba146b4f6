"""`trntui ranks PATH`: the ranks of a distributed job side by side, stragglers, and who collectives wait for."""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from trntui.commands import options


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ranks",
        help="compare the ranks of a distributed job: step times, breakdown, stragglers, collective waits",
        description="One row per rank of a distributed job (step time mean and per step, computation, "
        "communication, overlap, idle, top ops by device time, difference from the median rank), the stragglers "
        "by a robust rule (printed with the result) and, for collectives, which rank arrives last and how long "
        "the others wait. Each rank is loaded and summarised by itself, on a local process pool (--jobs) or on "
        "Dask (--engine dask), so only --jobs ranks are in memory at once.",
    )
    p.add_argument("path", help="directory holding the job's traces (one per rank), or a Neuron profile directory")
    p.add_argument("--format", choices=("table", "csv", "json", "markdown", "parquet"), default="table",
                   help="output format (parquet: tables under --out DIR, for DuckDB or pandas)")
    p.add_argument("--out", metavar="DIR", help="directory for --format parquet")
    p.add_argument("--force", action="store_true",
                   help="replace the Parquet files already in --out (never a symbolic link or a non-regular file)")
    p.add_argument("--steps", metavar="N-M", type=options.steps_spec, help="only these ProfilerStep#N numbers, e.g. 3-5 or 3,7-9")
    p.add_argument("--engine", choices=("local", "dask"), default="local",
                   help="local: a process pool of --jobs workers (default); dask: Dask distributed (--scheduler, "
                   "else a LocalCluster of --jobs workers)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="an existing Dask scheduler, e.g. tcp://10.0.0.5:8786 (its workers need trntui and the files)")
    p.add_argument("--jobs", "-j", type=int, metavar="N",
                   help="ranks worked on at once (worker processes; default: the CPUs here, or the cluster's threads)")
    p.add_argument("--job", metavar="NAME", help="which job, when PATH holds several")
    p.add_argument("--all", action="store_true",
                   help="compare every run under PATH as one rank each (when the files do not say they are ranks)")
    p.add_argument("--span", type=int, metavar="N", help="which span (profiler cycle), when the ranks have several")
    p.add_argument("--threshold", type=float, default=3.0, metavar="K",
                   help="straggler rule: over median + K x max(1.4826 x MAD, 1%% of the median) (default 3)")
    p.add_argument("--top", type=int, default=5, metavar="N", help="top ops per rank (default 5)")
    p.add_argument("--fail-on-stragglers", action="store_true", help="exit code 1 when a straggler is found (CI)")
    p.add_argument("--no-cache", action="store_true",
                   help="summarise every rank again (default: summaries are cached by the ranks' files)")
    from trntui.commands.options import add_memory_budget_option

    add_memory_budget_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from trntui.engine import EngineOptions
    from trntui.errors import TrntuiError
    from trntui.per_rank import rank_requests, summarize_ranks
    from trntui.progress import finished, report
    from trntui.report.ranks import check_parquet_out, render, write_parquet

    if args.format == "parquet" and not args.out:
        raise TrntuiError("--format parquet needs --out DIR")
    if args.format == "parquet":
        check_parquet_out(Path(args.out), args.force)  # before any rank is summarised
    if not (math.isfinite(args.threshold) and args.threshold > 0):
        raise TrntuiError(f"--threshold must be a positive number (got {args.threshold:g})")
    if args.top < 0:
        raise TrntuiError(f"--top must be 0 or more (got {args.top})")
    if args.steps:
        from trntui.analysis.select import parse_steps

        parse_steps(args.steps)
    engine = EngineOptions(args.engine, args.jobs, args.scheduler)
    if engine.engine == "dask" and engine.scheduler:
        from trntui.engine import check_scheduler

        check_scheduler(engine.scheduler)  # before any rank is found or loaded
    path = Path(args.path)
    from trntui.loaders.grouping import groups_of, pick_job
    from trntui.commands.options import load_options
    from trntui.session import find_runs

    options = load_options(args)
    job = pick_job(groups_of(find_runs(path)), path, args.job, args.all)
    name, runs, why = job.name, job.runs, job.reason
    spans = sorted({r.span for r in runs if r.span is not None})
    if spans:
        span = args.span if args.span is not None else spans[0]
        if span not in spans:
            raise TrntuiError(f"--span {span}: the ranks have spans {spans[0]}-{spans[-1]}")
        runs = [r for r in runs if r.span == span]
        name = f"{name} span {span}"
    elif args.span not in (None, 1):
        raise TrntuiError(f"--span {args.span}: the ranks have one span each")
    began = time.perf_counter()

    def progress(done: int, total: int) -> None:
        report(f"ranks summarised ({done}/{total})", done, total)

    result = summarize_ranks(
        rank_requests(runs, options, engine),  # the ranks' load requests, made once here, sent to the workers as they are
        engine=engine,
        steps=args.steps,
        top=args.top,
        k=args.threshold,
        progress=progress,
    )
    finished()
    context = {"job": name, "why": why, "engine": engine.describe(engine.local_workers(len(runs)) if engine.engine == "local"
                                                                    or not engine.scheduler else None),
               "seconds": time.perf_counter() - began}
    if args.format == "parquet":
        written = write_parquet(result, Path(args.out), context, force=args.force)
        sys.stdout.write(f"wrote {len(written)} tables for {len(result.rows)} ranks under {args.out}: "
                         + ", ".join(p.name for p in written) + "\n")
    else:
        sys.stdout.write(render(result, args.format, context))
    if args.format in ("csv", "json", "parquet"):  # (the table and markdown say it themselves)
        from trntui.textsafe import safe_text

        for f in result.failures:
            print(f"trntui: error: {safe_text(f.name)}: {safe_text(f.error)}", file=sys.stderr)
    if args.fail_on_stragglers and result.stragglers:
        return 1
    return 0
