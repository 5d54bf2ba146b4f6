"""The `trntui` command line: a thin shell over the core. Subcommands live in `trntui.commands.*`.

Every expected failure (missing file, unreadable trace, bad option) is one line on stderr and exit code 2;
never a traceback (set TRNTUI_DEBUG=1 to see one).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import re
import sys
from typing import Any, NoReturn

from trntui import __version__

COMMAND_MODULES = ("summary", "overview", "open", "profile", "info", "compare", "device", "ranks", "sql", "export")
"""Each `trntui.commands.<name>` module defines `register(subparsers)`; absent modules are skipped."""

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse's default prints usage too)
        # "argument --window: bad --window '...': ..." names the argument twice: once is enough
        m = re.match(r"argument (-[-\w]+)(?:/-[-\w]+)*: (?=(?:bad )?\1\b)", message)
        if m:
            message = message[m.end():]
        self.exit(EXIT_USAGE, f"trntui: error: {message}\n")

    def _get_value(self, action: argparse.Action, arg_string: str):  # type: ignore[no-untyped-def]
        """Every argument value of every command passes here: bounded length, and the plain `type=int` /
        `type=float` of any command's flags become bounded ones (trntui/commands/options.py), so no flag can
        take a 5,000-digit number or `nan` into a command."""
        from trntui.commands import options

        if isinstance(action, argparse._SubParsersAction):  # the command's own parser checks its arguments
            return super()._get_value(action, arg_string)
        if isinstance(arg_string, str) and len(arg_string) > options.MAX_ARG_CHARS:
            name = argparse._get_action_name(action) or "value"
            self.error(f"argument {name}: {options.shown(arg_string)} is too long ({len(arg_string):,} characters)")
        if action.type is int:
            action.type = options.whole_number
        elif action.type is float:
            action.type = options.finite_number
        return super()._get_value(action, arg_string)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; `only` (a command's name): that command's parser alone under the top level, as
    a run of that command needs (importing and building the eight commands' parsers cost ~12 ms of a summary's
    start)."""
    parser = _Parser(
        prog="trntui",
        description="Terminal profiler explorer for PyTorch traces (Kineto trace.json, Neuron system traces).",
    )
    parser.add_argument("--version", action=_Version, help="print the version and the Kineto parser in use")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES if only not in COMMAND_MODULES else (only,):
        modname = f"trntui.commands.{name}"
        if importlib.util.find_spec(modname) is None:
            continue
        importlib.import_module(modname).register(sub)
    return parser


PROGRESS_COMMANDS = ("summary", "overview", "compare", "ranks", "sql", "export")
"""Commands that print results: a long load draws a progress line on a terminal's stderr (the app shows its own)."""


class _Version(argparse.Action):
    """`trntui --version`: the version and which Kineto parser this install uses (compiled or Python)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kw: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from trntui.loaders.kineto.parser import describe

        print(f"trntui {__version__}\n{describe()}")
        parser.exit()


def main(argv: list[str] | None = None) -> int:
    """Run one command and return its exit code (the process goes on: tests and embedders call this; the
    `trntui` program is `entry`). Everything it prints passes the terminal-safety pass (trntui/textsafe.py) at the output
    streams, whose encoding errors are escaped instead of raised (an ASCII or strict UTF-8 stdout)."""
    from trntui.textsafe import install_safe_streams, restore_streams

    streams = install_safe_streams()
    try:
        return _main(argv)
    finally:
        from trntui import settings

        settings.release_blas_hold()  # (a command that never imported numpy: the embedder's environment as it was)
        restore_streams(streams)


def _command_word(argv: list[str]) -> str | None:
    """The command named on the line (the first word not an option: the top-level parser has only options)."""
    return next((a for a in argv if not a.startswith("-")), None)


def _main(argv: list[str] | None) -> int:
    from trntui.errors import TrntuiError

    argv_ = sys.argv[1:] if argv is None else argv
    word = _command_word(argv_)
    if word in COMMAND_MODULES and word != "profile":
        # every command but `profile` (whose workload keeps its BLAS) reads traces with numpy: it gets one BLAS
        # thread wherever it is first imported (checking the arguments can import it; a load imports it once its
        # first scans have started: trntui/loaders/kineto/early.py), and the variable goes once it is imported
        from trntui import settings

        settings.hold_one_blas_thread()
    parser = build_parser(word)  # a known command: its parser only (no command or a typo: all, to list them)
    args = parser.parse_args(argv)  # a bad argument: one line naming it (commands/options.py), exit 2, no work
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
        return _interrupted()
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


FAST_EXIT_COMMANDS = ("summary", "overview", "compare", "info", "device", "ranks", "sql", "export")
"""Commands that read traces and print: their process ends as soon as the output is out (`entry`). Not `open`
(the app) and not `profile` (a workload's libraries may still have work to do at exit)."""


GC_FIRST_GENERATION = 50_000
"""The cyclic GC's first threshold for a command in FAST_EXIT_COMMANDS (Python's default: 700)."""


def entry() -> NoReturn:
    """The `trntui` program (pyproject [project.scripts], `python -m trntui`, `python -m trntui.cli`): `main()`, then,
    for a command that only reads and prints, the process ends at once: the output flushed and the atexit callbacks
    run, but the interpreter's teardown (freeing every object and module, cyclic collections over them) skipped with
    `os._exit` (after a 69 MB trace's summary: 47 M instructions, 84 ms between the output's write and the end at
    load ~3), time a user waits for nothing. Where another thread is still alive (a Dask client, a pool) the
    interpreter ends as usual, so that it is joined."""
    fast = _command_word(sys.argv[1:]) in FAST_EXIT_COMMANDS
    if fast:
        # The start imports ~300 modules, which live until the end: the cyclic GC ran ~48 times over them before
        # the decode started (gen-0 every 700 allocations; ~25 M instructions), freeing ~400 objects. A one-shot
        # command collects every 50,000 allocations instead (loads switch it off while they decode anyway).
        import gc

        gc.set_threshold(GC_FIRST_GENERATION, *gc.get_threshold()[1:])
    try:
        code = main()
    except KeyboardInterrupt:  # before main's own handler (numpy's import, the arguments' checks): one line too
        code = _interrupted()
    from trntui.threads import threads_alive

    if not fast or threads_alive():
        sys.exit(code)
    code = _flush_streams(code)
    import atexit

    atexit._run_exitfuncs()  # what the interpreter would run (multiprocessing's, logging's, any library's)
    code = _flush_streams(code)
    os._exit(code)


def _interrupted() -> int:
    try:
        _fail("interrupted")
    except (OSError, ValueError, KeyboardInterrupt):
        pass
    return 130


def _flush_streams(code: int) -> int:
    """Flush stdout and stderr as the interpreter's exit would. A reader that went away (`| head -1`) is not an
    error (as in `_main`: the output it did not want is dropped); output that could not be written (a full
    disk) is one line on stderr and exit code 2, where the interpreter would print a traceback-like warning."""
    for stream in (sys.stdout, sys.stderr):
        if stream is None:
            continue
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # ValueError: a closed stream
            pass
        except OSError as exc:
            if stream is sys.stdout:
                try:
                    _fail(f"the output could not be written: {exc}")
                    sys.stderr.flush()
                except (OSError, ValueError):
                    pass
                code = code or EXIT_USAGE
    return code


if __name__ == "__main__":  # pragma: no cover
    entry()
