"""Sizes for people, in one place for every layer (loaders' messages, the progress line, reports); a leaf module.
The reports' other shared formats are in trntui/report/format.py, which re-exports this one."""

from __future__ import annotations

_BINARY = ("B", "KiB", "MiB", "GiB", "TiB")
_DECIMAL = ("B", "KB", "MB", "GB", "TB")


def format_bytes(n: float, *, binary: bool = True, decimals: int | None = None) -> str:
    """A size for people: `512 B`, `800 MiB`, `1.40 GiB` (by default GiB and up with 2 decimals, smaller units
    whole; `decimals` fixes the decimals of every unit above bytes, e.g. 1 for a file listing: `1.3 KiB`).

    `binary` (default): powers of 1024 with IEC names, the units `--memory-budget` takes and `trntui info`
    lists; `binary=False`: powers of 1000 (`50 MB`), for progress through a file. torch's own memory columns
    use torch's format instead (`report.summary.format_memory`), so the table reads like torch's.
    """
    step = 1024.0 if binary else 1000.0
    units = _BINARY if binary else _DECIMAL
    size = float(n)
    k = 0
    while abs(size) >= step and k < len(units) - 1:
        size /= step
        k += 1
    if k == 0:
        return f"{size:.0f} B"
    places = decimals if decimals is not None else 2 if k >= 3 else 0
    return f"{size:.{places}f} {units[k]}"
