"""Flags several commands share, defined once so they read and behave the same everywhere."""

from __future__ import annotations

import argparse

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


def add_no_cache_option(p: argparse.ArgumentParser) -> None:
    """`--no-cache` for commands that load traces (trntui/cache.py)."""
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="parse the trace again instead of using (and writing) the parsed-profile cache",
    )
