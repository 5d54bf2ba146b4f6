"""`trntui sql PATH [QUERY]`: SQL over the runs under PATH (an in-memory DuckDB, trntui/query/database.py).

One query prints its result (`--format`, `--out` streams big results to a file); no query on a terminal opens a
prompt (history, `.tables`, `.schema`); no query with a pipe on stdin reads the query from it. The database
cannot read or write files unless `--allow-files` is given.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from trntui.commands.options import add_memory_budget_option, add_merge_option, add_no_cache_option

HELP = """\
.tables            list the tables and views
.schema [NAME]     the columns of NAME (of every table without one)
.views             the views' SQL
.help              this text
.quit              leave (also Ctrl-D)
A query ends with ';' (or at the end of a line when it is one line)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sql",
        help="run SQL over a trace or profile directory (DuckDB; tables events, lanes, ops, kernels, ...)",
        description="Run SQL over the runs under PATH: tables events, lanes, flows, links, steps, ops, kernels, "
        "counters (and a Neuron device profile's tables), views top_kernels_per_step, launch_latency, idle_gaps, "
        "time_per_tier (docs/sql.md). Without QUERY on a terminal: an interactive prompt.",
    )
    p.add_argument("path", help="trace file or profile directory (every run in it: the `run` column)")
    p.add_argument("query", nargs="?", help="the SQL (without it: a prompt on a terminal, else read from stdin)")
    from trntui.report.results import FORMATS

    p.add_argument("--format", choices=FORMATS, default="table", help="output format (default: table)")
    p.add_argument("--out", metavar="FILE", help="write the result to FILE (every row, streamed; parquet needs it)")
    p.add_argument("--force", action="store_true", help="replace --out when it is an existing file")
    p.add_argument("--allow-files", action="store_true",
                   help="let queries read and write files (COPY ... TO, read_csv, read_parquet, ...): off by default")
    add_merge_option(p)
    add_no_cache_option(p)
    add_memory_budget_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from trntui.errors import TrntuiError
    from trntui.progress import finished
    from trntui.query.database import Database
    from trntui.query.load import load_runs
    from trntui.commands.options import load_options

    if args.format == "parquet" and not args.out:
        raise TrntuiError("--format parquet writes a file: give --out FILE")
    if args.out:
        from trntui import fsio

        fsio.check_target(args.out, force=args.force)  # before the load: a link or a user's file is refused now
    options = load_options(args)
    runs = load_runs(args.path, options, merge=getattr(args, "merge", False))
    finished()
    with Database.of(runs, allow_files=args.allow_files) as db:
        query = args.query
        if query is None:
            if sys.stdin is not None and sys.stdin.isatty():
                return prompt(db, args)
            query = sys.stdin.read() if sys.stdin is not None else ""
        if not query.strip():
            raise TrntuiError("no query (give one, or pipe it on stdin)")
        if query.lstrip().startswith("."):  # dot-commands piped in, one a line
            for line in query.splitlines():
                if line.strip() and dot_command(db, line.strip()) is False:
                    break
            return 0
        emit(db, query, args.format, args.out, force=args.force)
    return 0


def emit(db: Any, query: str, fmt: str, out: str | None, force: bool = False) -> int:
    """Run `query` and write its result to stdout or `out`; returns the rows written."""
    from trntui.report import results

    result = db.batches(query)
    if out:
        if fmt == "parquet":
            if result.schema is None:
                from trntui.errors import TrntuiError

                raise TrntuiError("the statement returns no rows to write")
            return _write_file(out, lambda path: results.write_parquet(result.schema, result, path), binary=True,
                               force=force)
        return _write_file(out, lambda f: _write(results, result, fmt, f), force=force)
    return _write(results, result, fmt, sys.stdout)


def _write(results: Any, result: Any, fmt: str, stream: Any) -> int:
    if fmt == "csv":
        return results.write_csv(result.columns, result, stream)
    if fmt == "json":
        return results.write_json(result.columns, result, stream)
    if not result.columns:
        return 0
    return results.write_text(result.columns, result, stream, fmt)


def _write_file(path: str, write: Any, binary: bool = False, force: bool = False) -> int:
    """Write `path` whole or not at all (trntui/fsio.py): into a temporary file beside it, put in place when
    complete; never through a symbolic link, never over a FIFO or a directory, over an existing file only with
    `force`. `write` gets the temporary file's path (`binary`) or a text stream."""
    from trntui import fsio

    if binary:
        return fsio.atomic_write(path, write, force=force)
    with fsio.open_replacing(path, "w", force=force) as f:
        return write(f)


def prompt(db: Any, args: argparse.Namespace) -> int:
    """The interactive prompt: one query or dot-command at a time; an error is one line and the prompt goes on."""
    from trntui.errors import TrntuiError
    from trntui.textsafe import safe_text

    _history()
    names = ", ".join(r.name for r in db.runs)
    print(f"trntui sql on {safe_text(names)}: {len(db.runs)} run{'s' if len(db.runs) != 1 else ''}. "
          f".tables lists the tables, .help the commands.")
    buf: list[str] = []
    while True:
        try:
            line = input("...> " if buf else "sql> ")
        except EOFError:
            print()
            return 0
        except KeyboardInterrupt:
            print()
            buf = []
            continue
        text = line.strip()
        if not buf and text.startswith("."):
            if dot_command(db, text) is False:
                return 0
            continue
        buf.append(line)
        query = "\n".join(buf).strip()
        if not query:
            buf = []
            continue
        if not (query.endswith(";") or (len(buf) == 1 and not _open(query))):
            continue
        buf = []
        try:
            emit(db, query, args.format if args.format != "parquet" else "table", None)
        except TrntuiError as exc:
            print(f"error: {safe_text(exc)}")


def _open(query: str) -> bool:
    """Whether a one-line query is unfinished (an open parenthesis or quote): the prompt asks for more."""
    return query.count("(") > query.count(")") or query.count("'") % 2 == 1


def dot_command(db: Any, text: str) -> bool | None:
    """`.tables`, `.schema [name]`, `.views`, `.help`; False for `.quit`."""
    from trntui.query.views import VIEWS
    from trntui.textsafe import safe_text

    word, _, rest = text.partition(" ")
    rest = rest.strip().rstrip(";")
    if word in (".quit", ".exit", ".q"):
        return False
    if word == ".tables":
        print("  ".join(db.table_names()))
    elif word == ".schema":
        for name in [rest] if rest else db.table_names():
            try:
                cols = db.columns(rest or name)
            except Exception as exc:  # noqa: BLE001 - an unknown name
                print(f"error: {safe_text(exc)}")
                return None
            print(f"{name}(" + ", ".join(f"{c} {t}" for c, t in cols) + ")")
    elif word == ".views":
        for name, view in VIEWS.items():
            print(f"-- {name}: {view.doc}\nCREATE VIEW {name} AS{view.sql.rstrip()};\n")
    elif word == ".help":
        print(HELP)
    else:
        print(f"error: unknown command {safe_text(word)} (.help lists them)")
    return None


def _history() -> None:
    """Line editing and a history file in the user's config directory, when readline is there."""
    try:
        import readline
    except ImportError:  # pragma: no cover - Windows
        return
    import atexit

    from trntui.settings import config_dir

    path = config_dir() / "sql_history"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            readline.read_history_file(str(path))
    except OSError:
        return
    readline.set_history_length(1000)

    def save() -> None:
        try:
            readline.write_history_file(str(path))
        except OSError:
            pass

    atexit.register(save)
