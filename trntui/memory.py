"""Memory budget for loads: how much RAM a load may take, and what a load of a given file will need.

A Kineto trace is loaded one of two ways (trntui/loaders/kineto/):
- in memory: the file is read (a big plain one is memory-mapped instead, its pages given back as they are
  decoded), decoded in chunks (two processes on 2+ cores) and its args bytes kept in RAM. Fastest; peak about
  `FULL_LOAD_FACTOR` x the JSON size (bench/RESULTS.md).
- streamed: the file is memory-mapped (a gzip file is first inflated into a temporary file), decoded chunk by
  chunk (by two processes on 2+ cores, as in memory), the pages already decoded are dropped, and every event's
  args bytes go to a spill file that is memory-mapped afterwards. RAM holds only the numeric columns: about `STREAMED_BYTES_PER_EVENT`
  per event at the peak.

The budget picks the first one that fits and refuses the load, before reading it all, when not even the
streamed form fits: a one-line error that says what it would need. A Neuron Parquet export is checked before it
is read (`NEURON_BYTES_PER_ROW` times the rows in its Parquet footers) and refused when it does not fit. Default: `$TRNTUI_MEMORY_BUDGET`, else 80%
of the memory available when the load starts (`MemAvailable`), so a trace too big for the machine is streamed
instead of being killed by the OOM killer.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from trntui.errors import TrntuiError
from trntui.units import format_bytes

FULL_LOAD_FACTOR = 2.4
"""Peak memory of an in-memory load / uncompressed JSON size. Measured again on 2026-12-04 (`summary`, peak RSS,
without and with the cache entry written): the Python parser 2.13x / 2.36x on the 69 MB CPU trace (the
interpreter's ~30 MB included) and 1.51x / 1.52x on the 401 MB 2M trace; the compiled parser 1.06x / 1.61x and
0.97x / 1.28x (a load that writes the entry copies the args). Kept at the Python parser's worst, rounded up (when
it was set, 1.8-1.9x in the parent plus a forked decoder child, since removed)."""

STREAMED_BYTES_PER_EVENT = 260
"""Peak RAM per trace event of a streamed load (numeric columns, merge and sort temporaries)."""

STREAMED_FIXED_BYTES = 100 << 20
"""Interpreter, libraries, one decoded chunk."""

NEURON_BYTES_PER_ROW = 900
"""Peak memory per system-trace row of a Neuron Parquet export (bench: ~1.5 GB for 1.5M rows plus a 0.5M-event
trace.json). Such exports are not streamed: a budget they do not fit refuses them before they are read."""

NEURON_PART_PAIR_BYTES = 320
"""Peak memory per pair of split parts (`SystemProfileEvents_<k>.parquet`) of a Neuron Parquet export, beyond its
rows: the peak grows with the square of the parts' count (measured on parts of 12 rows: 29 MiB more for 301
parts, 267 MiB for 1,001, ~300 B x parts^2; each part read as its own Arrow table, then converted and glued). Where
the square comes from is not pinned down; the figure keeps the check above it."""

NEURON_JSON_FACTOR = 8
"""Peak memory of a Neuron JSON export load / its uncompressed size: the text plus `json.loads`'s objects
measured 4.7x on a 74 MB export of 300k rows; rounded up for the conversion into rows. Checked while the
file is read (its inflation is bounded), before it is parsed."""

DEVICE_FIXED_BYTES = 200 << 20
"""Interpreter, numpy, pandas and pyarrow, before a device profile's first row (measured: the intercept of the peaks
below, 150-190 MiB)."""

DEVICE_REPORT_BYTES_PER_ROW = 600
"""Peak memory per row of a Neuron device profile's tables for `trntui device` and the app's Device view (the
typed columns read, then the analysis: the window's rows, the per-engine unions, the top tables), over
`DEVICE_FIXED_BYTES`. Measured with every used column present: 355 MiB at 400k Instruction rows, 615 MiB at 1M,
1.08 GiB at 2M (~435 B a row); again on 2026-12-04 (tests/test_hostile_round3.py's export): 200 / 568 MiB at
100k / 800k rows (~550 B a row), and without the compiled kernels 229 / 599 MiB, up to 399 MiB at 400k (above the
estimate of 520 B a row: a budget just above it could be exceeded); rounded up to stay above it."""

DEVICE_PROFILE_BYTES_PER_ROW = 360
"""Peak memory per row of a device profile read into a `Profile` (`trntui open`/`summary` on its directory: the
typed columns, the event columns, the lane index), over `DEVICE_FIXED_BYTES`. Measured 449 MiB at 1M rows,
750 MiB at 2M (~315 B a row); again on 2026-12-04 (`summary --no-cache` of tests/test_hostile_round3.py's export,
both Kineto parsers): 170-176 / 279-281 / 413-415 MiB at 100k / 400k / 800k rows (~355 B a row, the estimate 234 /
337 / 475 MiB); rounded up to stay above it."""

_SIZE_RX = re.compile(r"\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)(i?b?)\s*\Z", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


MAX_BUDGET = float(1 << 60)


def _shown(text: str) -> str:
    """A value for a message: cut when long (a 5,000-character argument is not repeated in full)."""
    return repr(text if len(text) <= 40 else text[:37] + "...")


def parse_size(text: str) -> int | None:
    """`4G`, `1.5GB`, `800M`, `512MiB`, bytes as a bare number → bytes; `none`/`off`/`0` → None (no budget)."""
    t = text.strip().lower()
    if t in ("none", "off", "unlimited", "0"):
        return None
    m = _SIZE_RX.match(t)
    if not m:
        raise TrntuiError(f"bad memory budget {_shown(text)}: use a size like 4G, 1.5GB, 800M, or 'none'")
    if len(m.group(1)) > 24:  # (a 400-digit number: never converted)
        raise TrntuiError(f"bad memory budget {_shown(text)}: more than any machine has (at most 1 EiB)")
    number = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if not number < MAX_BUDGET:  # (a 400-digit number is inf as a float)
        raise TrntuiError(f"bad memory budget {_shown(text)}: more than any machine has (at most 1 EiB)")
    value = int(number)
    if value <= 0:
        raise TrntuiError(f"bad memory budget {text!r}: must be more than 0")
    return value


def available_bytes() -> int | None:
    """`MemAvailable` from /proc/meminfo (Linux), else None."""
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def auto_budget() -> int | None:
    """80% of the memory available now, else None (unknown: no budget)."""
    avail = available_bytes()
    return int(avail * 0.8) if avail else None


def default_budget() -> int | None:
    """`$TRNTUI_MEMORY_BUDGET` if set, else `auto_budget()` (for the edge: trntui/settings.py)."""
    from trntui import settings

    env = settings.memory_budget()
    return parse_size(env) if env else auto_budget()


def parse_option(option: str | int) -> int | None:
    """Bytes from a budget value: an int (<= 0: no limit) or a size string (`parse_size`)."""
    if isinstance(option, int):
        return option if option > 0 else None
    return parse_size(option)


def resolve(option: str | int | None) -> int | None:
    """A budget from a CLI option value: None or "auto" → the default; a size string → bytes."""
    if option is None or (isinstance(option, str) and option.strip().lower() == "auto"):
        return default_budget()
    return parse_option(option)


DEFLATE_MAX_RATIO = 1032
"""deflate cannot expand data more than this (RFC 1951 limit): a larger gzip trailer size is not the truth."""
GZIP_GUESS_RATIO = 12
"""Uncompressed / compressed size of a trace assumed when a gzip trailer is unusable (chrome traces: 10-15x)."""


def json_size(path: Path) -> int:
    """The uncompressed size of a trace file: its size, or for gzip the size in its trailer (mod 4 GiB, so
    corrected upwards when implausibly small). A trailer no deflate stream could have (a file cut while it was
    written ends in arbitrary bytes) gives an estimate instead: `GZIP_GUESS_RATIO` x the file size. For gzip only
    a HINT (the trailer is written by whoever wrote the file, and may lie): a big hint sends the load to the
    streamed path at once; a small one is never trusted for memory, the inflation itself is bounded
    (trntui/loaders/files.py `read_bytes(limit=)`)."""
    from trntui import fsio

    size = path.stat().st_size
    with fsio.open_regular(path) as f:  # a FIFO: refused (a LoadError), never waited on
        if f.read(2) != b"\x1f\x8b":
            return size
        f.seek(-4, os.SEEK_END)
        isize = int.from_bytes(f.read(4), "little")
    most = size * DEFLATE_MAX_RATIO
    while isize < size and isize + (1 << 32) <= most:  # wrapped (over 4 GiB)
        isize += 1 << 32
    if isize < size or isize > most:  # a damaged trailer
        return size * GZIP_GUESS_RATIO
    return isize


def fmt(n: int) -> str:
    """Bytes for messages, in the binary units the option takes: `1.40 GiB`, `800 MiB`."""
    return format_bytes(n)


def events_text(n: int) -> str:
    """An event count for messages: `68,123 events` below a million, `2.4M events` above (never `0.0M`)."""
    n = int(n)
    if n < 1_000_000:
        return f"{n:,} event{'s' if n != 1 else ''}"
    return f"{n / 1e6:,.1f}M events"


def over_budget(path: Path, needed: int, budget: int, how: str) -> TrntuiError:
    from trntui.errors import OverBudget

    return OverBudget(
        path,
        f"{how} needs about {fmt(needed)} of memory, over the memory budget of {fmt(budget)}; "
        "raise it with --memory-budget (or TRNTUI_MEMORY_BUDGET), or load a smaller trace",
    )
