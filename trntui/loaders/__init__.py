"""Loaders: one package per trace format (`kineto/`, `neuron/`), each a `TraceFormat` (protocol.py) that finds
the runs a path holds and reads a run into a `ProfileBuilder` under explicit `LoadOptions`.

The registry of formats is `trntui.formats`; loading a run with the cache and the default table is
`trntui.session` (`find_runs`, `load_run`, `load_profile`). Shared pieces: `discover` (the `Run`, manifests),
`files` (reading possibly gzipped bytes).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["LoadOptions", "Run", "TraceFormat"]

_LAZY = {"Run": "discover", "LoadOptions": "protocol", "TraceFormat": "protocol"}
"""Imported on first use (their dataclasses cost ~10 ms to create)."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
