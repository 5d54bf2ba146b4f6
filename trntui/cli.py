"""The `trntui` command line: a thin shell over the core. Subcommands live in `trntui.commands.*`.

Every expected failure (missing file, unreadable trace, bad option) is one line on stderr and exit code 2;
never a traceback (set TRNTUI_DEBUG=1 to see one).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys

from trntui import __version__

COMMAND_MODULES = ("summary", "overview", "open", "profile", "info", "compare", "device", "ranks")
"""Each `trntui.commands.<name>` module defines `register(subparsers)`; absent modules are skipped."""

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse's default prints usage too)
        self.exit(EXIT_USAGE, f"trntui: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="trntui",
        description="Terminal profiler explorer for PyTorch traces (Kineto trace.json, Neuron system traces).",
    )
    parser.add_argument("--version", action="version", version=f"trntui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        modname = f"trntui.commands.{name}"
        if importlib.util.find_spec(modname) is None:
            continue
        importlib.import_module(modname).register(sub)
    return parser


PROGRESS_COMMANDS = ("summary", "overview", "compare", "ranks")
"""Commands that print results: a long load draws a progress line on a terminal's stderr (the app shows its own)."""


def add_part_options(p: argparse.ArgumentParser, also: str = "") -> None:
    """`--steps N-M` and `--window T0:T1` (trntui/analysis/select.py) for commands that can show part of a trace;
    `also` ends each help text (what else the command does with the part)."""
    p.add_argument(
        "--steps",
        metavar="N-M",
        help="only events inside these ProfilerStep#N windows, e.g. 3-5 or 3,7-9 (device rows follow their op)" + also,
    )
    p.add_argument(
        "--window",
        metavar="T0:T1",
        help="only events starting in this time window, relative to the timeline's +0 (ns/us/ms/s, default ms), "
        "e.g. 100ms:250ms or :2s" + also,
    )


def convert_timeout(value: str) -> float:
    """`--convert-timeout` seconds: a positive number."""
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {value!r}") from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds: {value!r}")
    return seconds


def add_merge_option(p: argparse.ArgumentParser) -> None:
    """`--merge` for commands that find runs under a path (trntui/loaders/grouping.py)."""
    p.add_argument(
        "--merge",
        action="store_true",
        help="read every trace file under PATH as one run (sums across files); by default each file is a run of its "
        "own unless the files are the ranks of one job or the spans of one worker (trntui info PATH shows the grouping)",
    )


def add_memory_budget_option(p: argparse.ArgumentParser) -> None:
    """`--memory-budget SIZE` (trntui/memory.py) and `--convert-timeout SECONDS` (raw Neuron captures) for
    commands that load traces."""
    p.add_argument(
        "--convert-timeout",
        metavar="SECONDS",
        type=convert_timeout,
        help="most time neuron-explorer may take to convert a raw Neuron capture (.pb/.ntff) before the framework "
        "trace is shown alone with the command to run by hand (default: $TRNTUI_CONVERT_TIMEOUT, else 300)",
    )
    p.add_argument(
        "--memory-budget",
        metavar="SIZE",
        help="most memory a load may use, e.g. 4G or 800M (default: $TRNTUI_MEMORY_BUDGET, else 80%% of the "
        "available memory); a trace that does not fit in memory is streamed with its args on disk, and refused "
        "with an error when not even that fits; 'none' for no limit",
    )


def main(argv: list[str] | None = None) -> int:
    from trntui.errors import TrntuiError

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        budget = getattr(args, "memory_budget", None)
        if budget:
            from trntui.memory import parse_size

            parse_size(budget)  # a bad value is a one-line error before anything is read (commands pass it down)
        if args.command in PROGRESS_COMMANDS:
            from trntui.progress import terminal_progress

            with terminal_progress():
                return int(args.func(args) or 0)
        return int(args.func(args) or 0)
    except TrntuiError as exc:
        _fail(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _fail("interrupted")
        return 130
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        except OSError:
            pass
        return 0
    except Exception as exc:  # noqa: BLE001 - the promise is: no tracebacks for users
        from trntui import settings

        if settings.debug():
            raise
        _fail(f"unexpected {type(exc).__name__}: {exc} (set TRNTUI_DEBUG=1 for details)")
        return EXIT_USAGE


def _fail(message: str) -> None:
    from trntui.textsafe import safe_text

    print(f"trntui: error: {safe_text(message)}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
