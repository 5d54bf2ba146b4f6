"""`trntui export PATH --to parquet DIR | --to chrome-trace FILE`: the run's tables as Parquet files (for DuckDB,
pandas, Spark), or the run as one Kineto-style JSON trace (Neuron system trace merged with the framework trace,
flows kept) that Perfetto UI opens."""

from __future__ import annotations

import argparse

from trntui.commands.options import add_memory_budget_option, add_merge_option, add_no_cache_option


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="write a run's tables as Parquet files, or the run as one chrome trace for Perfetto",
        description="Export the runs under PATH: --to parquet DIR writes one Parquet file per table of "
        "`trntui sql` (events, lanes, flows, links, steps, ops, kernels, counters, device tables; several runs: "
        "the `run` column); --to chrome-trace FILE writes the run as one Kineto-style JSON (Neuron system trace "
        "and framework trace merged, flows kept).",
    )
    p.add_argument("path", help="trace file or profile directory")
    p.add_argument("--to", nargs=2, metavar=("FORMAT", "TARGET"), required=True,
                   help="parquet DIR, or chrome-trace FILE (.json, or .json.gz to compress)")
    p.add_argument("--force", action="store_true",
                   help="replace existing files (never a symbolic link, a FIFO or a directory)")
    p.add_argument("--run", default=None, metavar="NAME", help="chrome-trace of a directory of several runs: which one")
    add_merge_option(p)
    add_no_cache_option(p)
    add_memory_budget_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from trntui.errors import TrntuiError
    from trntui.progress import finished
    from trntui.query.load import load_runs
    from trntui.commands.options import load_options
    from trntui.textsafe import safe_text

    from trntui import fsio

    kind, target = args.to
    if kind not in ("parquet", "chrome-trace"):
        raise TrntuiError(f"--to {safe_text(kind)}: use parquet DIR or chrome-trace FILE")
    if kind == "chrome-trace":
        fsio.check_target(target, force=args.force)  # before the load
    elif Path(target).exists() and not Path(target).is_dir():
        raise TrntuiError(f"{safe_text(target)}: not a directory")
    options = load_options(args)
    runs = load_runs(args.path, options, merge=getattr(args, "merge", False))
    finished()
    if kind == "parquet":
        from trntui.query.database import Database
        from trntui.query.export import parquet_tables

        out = Path(target)
        if out.exists() and not out.is_dir():
            raise TrntuiError(f"{safe_text(target)}: not a directory")
        with Database.of(runs) as db:
            try:
                written = parquet_tables(db, out, force=args.force)
            except OSError as exc:
                raise TrntuiError(f"{safe_text(target)}: cannot write ({exc.strerror or exc})") from None
        print(f"{safe_text(target)}: " + ", ".join(f"{n}.parquet ({rows:,} rows)" for n, rows in written.items()))
        return 0
    if args.run is not None:
        runs = [r for r in runs if r.name == args.run]
        if not runs:
            raise TrntuiError(f"{safe_text(args.path)}: no run {safe_text(args.run)!r}")
    if len(runs) != 1:
        names = ", ".join(r.name for r in runs[:6])
        raise TrntuiError(f"{safe_text(args.path)} holds {len(runs)} runs ({safe_text(names)}); pick one with --run")
    from trntui.commands.sql import _write_file
    from trntui.query.export import write_chrome_trace

    profile = runs[0].profile
    if target.endswith(".gz"):
        import gzip
        import io

        def write(path: str) -> int:
            with gzip.open(path, "wb") as raw, io.TextIOWrapper(raw, encoding="utf-8") as f:  # fsio: the temporary file
                return write_chrome_trace(profile, f)

        n = _write_file(target, write, binary=True, force=args.force)
    else:
        n = _write_file(target, lambda f: write_chrome_trace(profile, f), force=args.force)
    print(f"{safe_text(target)}: {n:,} events, {len(profile.flows):,} flow rows, {len(profile.lanes)} lanes")
    return 0
