"""Flags several commands share, defined once so they read and behave the same everywhere; and how every
argument is checked before any work (`checked`, and the parser's `check_value` hook in cli.py).

A value a command cannot use is refused by argparse itself: one line naming the argument
(`trntui: error: argument --window: ...`), exit 2, before a file is read or a workload runs. The checks parse
the value the way the command will (the same function), so what passes here cannot fail later as
"unexpected OverflowError" after every run was loaded; the command still receives the text as typed.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from typing import Any

MAX_ARG_CHARS = 4096
"""Longer arguments are refused (a rule, a pattern or a name is never this long)."""
MAX_INT_DIGITS = 18
"""Whole numbers fit an int64 (a 5,000-digit `--limit` or `--baseline` is refused, not converted)."""


def shown(text: str, width: int = 40) -> str:
    """An argument as messages quote it: cut when long (a 5,000-character value is not repeated in full)."""
    return repr(text if len(text) <= width else text[: width - 3] + "...")


def _message(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def checked(parse: Callable[[str], Any], name: str = "value") -> Callable[[str], str]:
    """An argparse `type=` that runs `parse` on the text (raising `TrntuiError`, `ValueError`, ...) and keeps
    the text as typed: argparse then prints ONE line naming the argument and exits 2, before any work."""

    def check(text: str) -> str:
        if len(text) > MAX_ARG_CHARS:
            raise argparse.ArgumentTypeError(f"{shown(text)} is too long ({len(text):,} characters)")
        try:
            parse(text)
        except (ValueError, TypeError, OverflowError, RecursionError, re.error) as exc:
            raise argparse.ArgumentTypeError(_message(exc)) from None
        except Exception as exc:  # noqa: BLE001 - TrntuiError (imported lazily: options stay cheap to import)
            from trntui.errors import TrntuiError

            if isinstance(exc, TrntuiError):
                raise argparse.ArgumentTypeError(_message(exc)) from None
            raise
        return text

    check.__name__ = name
    return check


def whole_number(text: str) -> int:
    """`type=int`, bounded: at most `MAX_INT_DIGITS` digits (the parser hook uses it for every `type=int`)."""
    t = text.strip()
    if not re.fullmatch(r"[-+]?\d{1,%d}" % MAX_INT_DIGITS, t):
        if re.fullmatch(r"[-+]?\d+", t):
            raise argparse.ArgumentTypeError(f"{shown(text)} is too large (at most {MAX_INT_DIGITS} digits)")
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a whole number")
    return int(t)


def finite_number(text: str) -> float:
    """`type=float`, finite (no nan, inf, 1e400): the parser hook uses it for every `type=float`."""
    if len(text) > 64:
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a number")
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a finite number")
    return value


def _budget(text: str) -> None:
    from trntui.memory import parse_option

    if text.strip().lower() != "auto":
        parse_option(text)


def _sort_key(text: str) -> None:
    from trntui.analysis.sort_keys import normalize_sort_key

    normalize_sort_key(text)


def _steps(text: str) -> None:
    from trntui.analysis.select import parse_steps

    parse_steps(text)


def _window(text: str) -> None:
    from trntui.analysis.select import parse_window_spec

    parse_window_spec(text)


def _pattern(text: str) -> None:
    re.compile(text, re.IGNORECASE)


def _rule(text: str) -> None:
    from trntui.analysis.compare import parse_rule

    parse_rule(text)


def _run_choice(text: str) -> None:
    if not text.strip():
        raise ValueError("empty run name")
    if text.strip().isdigit() and len(text.strip()) > 9:
        raise ValueError(f"{shown(text)}: not a run position (1, 2, ...) nor a run name")


memory_budget = checked(_budget, "memory budget")
sort_key = checked(_sort_key, "sort key")
steps_spec = checked(_steps, "steps")
window_spec = checked(_window, "window")
pattern = checked(_pattern, "pattern")
rule = checked(_rule, "rule")
run_choice = checked(_run_choice, "run")

REPORT_FORMATS = ("table", "csv", "json", "markdown")
"""What `--format` offers for a table report (trntui/report/)."""


def add_format_option(p: argparse.ArgumentParser, default: str | None = "table", help: str | None = None) -> None:
    """`--format table|csv|json|markdown` for commands that print a report."""
    p.add_argument("--format", choices=REPORT_FORMATS, default=default, help=help)


def add_part_options(p: argparse.ArgumentParser, also: str = "") -> None:
    """`--steps N-M` and `--window T0:T1` (trntui/analysis/select.py) for commands that can show part of a trace;
    `also` ends each help text (what else the command does with the part)."""
    p.add_argument(
        "--steps",
        metavar="N-M",
        type=steps_spec,
        help="only events inside these ProfilerStep#N windows, e.g. 3-5 or 3,7-9 (device rows follow their op)" + also,
    )
    p.add_argument(
        "--window",
        metavar="T0:T1",
        type=window_spec,
        help="only events starting in this time window, relative to the timeline's +0 (ns/us/ms/s, default ms), "
        "e.g. 100ms:250ms or :2s" + also,
    )


def convert_timeout(value: str) -> float:
    """`--convert-timeout` seconds: a positive number."""
    try:
        seconds = float(value) if len(value) <= 64 else math.nan
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {shown(value)}") from None
    if not (math.isfinite(seconds) and seconds > 0):  # (inf, 1e400 and nan too: a timer cannot take them)
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds more than 0: {shown(value)}")
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
        type=memory_budget,
        help="most memory a load may use, e.g. 4G or 800M (default: $TRNTUI_MEMORY_BUDGET, else 80%% of the "
        "available memory); a trace that does not fit in memory is streamed with its args on disk, and refused "
        "with an error when not even that fits; 'none' for no limit",
    )


def load_options(args: argparse.Namespace) -> Any:
    """The command's `LoadOptions`, built once from its load flags (`--memory-budget`, `--convert-timeout`,
    `--no-cache`, whichever it has) over the documented variables (trntui/settings.py). Every command that loads
    takes its options from here (a new load option: its flag above, its field in `LoadOptions`, one line here)."""
    made = getattr(args, "_load_options", None)
    if made is None:
        from trntui.loaders.protocol import LoadOptions

        made = LoadOptions.from_env(memory_budget=getattr(args, "memory_budget", None),
                                    cache=not getattr(args, "no_cache", False),
                                    convert_timeout=getattr(args, "convert_timeout", None))
        args._load_options = made
    return made


def add_no_cache_option(p: argparse.ArgumentParser) -> None:
    """`--no-cache` for commands that load traces (trntui/cache/)."""
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="parse the trace again instead of using (and writing) the parsed-profile cache",
    )
