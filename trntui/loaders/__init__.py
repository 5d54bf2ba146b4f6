"""Loaders: one package per trace format (`kineto/`, `neuron/`), each a `TraceFormat` (protocol.py) that finds
the runs a path holds and reads a run into a `ProfileBuilder` under explicit `LoadOptions`.

The registry of formats is `trntui.formats`; loading a run with the cache and the default table is
`trntui.session` (`find_runs`, `load_run`, `load_profile`). Shared pieces: `discover` (the `Run`, manifests),
`files` (reading possibly gzipped bytes).
"""

from __future__ import annotations

from trntui.loaders.discover import Run
from trntui.loaders.protocol import LoadOptions, TraceFormat

__all__ = ["LoadOptions", "Run", "TraceFormat"]
