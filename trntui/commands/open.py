"""`trntui open PATH`: the terminal explorer (ops table, timeline, dependency chains)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from trntui.commands.options import add_memory_budget_option, add_merge_option, add_part_options


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "open",
        help="explore a trace or profile directory in the terminal UI",
        description="Open the terminal explorer on a trace.json(.gz) or a profile directory: the key_averages "
        "table, a lane timeline and the op → runtime → hardware chain of any event. Press ? for keys.",
    )
    p.add_argument("path", help="trace file or profile directory")
    p.add_argument(
        "--run",
        "--rank",
        dest="run",
        default=None,
        metavar="NAME",
        help="which run to open when the directory holds several (variant or rank directory name); "
        "without it the explorer asks",
    )
    add_part_options(p, "; the ops table counts only them and the timeline opens fitted to them")
    add_merge_option(p)
    add_memory_budget_option(p)
    p.set_defaults(func=run)


def has_terminal() -> bool:
    """Whether the app can run here: stdin and stdout are terminals (keys come in, the screen goes out)."""
    import sys

    try:
        return sys.stdin is not None and sys.stdout is not None and sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def require_terminal() -> None:
    """One line and exit 2 instead of an app that waits forever for keys or draws into a pipe."""
    if not has_terminal():
        from trntui.errors import TrntuiError

        raise TrntuiError("open needs a terminal on stdin and stdout (for text output use: trntui summary PATH)")


def launch(
    path: str | Path, run: str | None = None, *, steps: str | None = None, window: str | None = None, options: Any = None,
    merge: bool = False,
) -> int:
    """Open the explorer on `path` and return when the user quits (also used by `trntui profile`); `options`:
    the `LoadOptions` of its loads (None: the defaults, trntui/settings.py)."""
    from trntui.errors import LoadError

    path = Path(path)
    if not path.exists():
        raise LoadError(path, "no such file or directory")
    if steps:
        from trntui.analysis.select import parse_steps

        parse_steps(steps)  # a malformed spec is a one-line error before the app starts
    require_terminal()
    from trntui.errors import TrntuiError
    from trntui.formats import find_runs
    from trntui.request import Ambiguous, choose
    from trntui.tui.loader import prestart

    # the run is found once, here: the app and its loader process are handed the request (trntui/request.py)
    runs: list[Any] = []
    request = None
    try:
        runs = find_runs(path, merge=merge)
        request = choose(path, runs, run, options=options, merge=merge)
    except Ambiguous:
        pass  # the app asks which run
    except TrntuiError:
        pass  # the app shows the error (a notice, and exit 2 when quit with nothing loaded)
    # a run that needs the loader process gets it now: it decodes while Textual is imported and the app starts
    prestarted = prestart(request) if request is not None else None
    try:
        from trntui.tui.app import TrntuiApp

        app = TrntuiApp(path, run, steps=steps, window=window, load_options=options, merge=merge,
                        prestarted=prestarted, request=request, runs=runs)
        app.run()
    finally:
        if prestarted is not None:
            prestarted.stop()
    return app.exit_code()


def run(args: argparse.Namespace) -> int:
    from trntui.commands.options import load_options

    options = load_options(args)
    return launch(args.path, args.run, steps=args.steps, window=args.window, options=options, merge=args.merge)
