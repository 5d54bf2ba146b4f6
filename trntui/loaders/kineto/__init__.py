"""Load torch.profiler / Kineto chrome traces (`trace.json`, `.json.gz`) into a `Profile`.

One typed msgspec pass decodes the events with `args` kept raw; the few args keys needed for linking
(External id, correlation) are decoded in one batch; the rest are parsed per event on demand.
Handles the object and bare-array forms, `X`/`B`/`E`/`i`/`s`/`f`/`M` phases, the three timestamp regimes
(`baseTimeNanoseconds` relative µs, epoch float µs, epoch int µs), legacy categories and flow names, and
string pids. Partial overlaps are kept; unpaired flow halves are counted, not fatal.

One module per job:

- `schema`: the event structs and their msgspec decoders.
- `chunks`: chunk scanning of a valid trace (head + event array + tail, the array decoded chunk by chunk).
- `pieces`: the event array's place in the document and the buffer its pieces are decoded from.
- `parser` / `compiled` / `_scan.c`: which parser a process uses, and the compiled column builder (one pass of
  C over a piece's text into the same columns; built by `pip install` where a compiler is available).
- `streaming`: memory-mapped input, args spilled to disk, the memory-budget projection (trntui/memory.py).
- `columns`: decoded events → per-chunk numpy columns (`Part`), ids, link columns, µs → ns.
- `merge`: parts → builder batches (metadata, intervals, B/E pairs, lanes); `flows`: flow binding;
  `device`: which accelerator the trace comes from.
- `tolerant` / `recover`: the whole-file fallbacks for damaged input (coercion, JSON repair, salvage of a
  truncated file).
- `load`: one file into a `ProfileBuilder` (in memory, mapped, or streamed under a budget).
- `discover` / `format`: which files are chrome traces and the runs they make; `FORMAT`, this format's entry
  in the registry (trntui/formats.py).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["FORMAT", "Ev", "add_events", "decode_trace", "load_kineto", "load_kineto_into"]

_LAZY = {"FORMAT": "format", "Ev": "schema", "add_events": "load", "decode_trace": "tolerant", "load_kineto": "load",
         "load_kineto_into": "load"}
"""The decoder is imported on first use: finding runs, or re-opening one from the cache, never pays for it."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
