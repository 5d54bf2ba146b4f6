"""Find Neuron profiles under a path: capture sessions, ranks, framework traces, converted exports, NEFF/NTFF.

Layouts handled (neuron-formats.md §3): TorchNeuron `profile_output/<instance>_pid_<pid>/<timestamp>/`, the same
without the `<timestamp>` level (`neuron-explorer inspect`, env-var captures), vLLM's `neuron_profiles/` with a
sibling `neffs/`, several ranks (one `_pid_` dir each), framework traces named `trace.json`, `pytorch_trace.json`,
`neuron_trace.json` or `neuron_framework_trace_rank_<N>.json` (in the timestamp dir or its `_pid_` parent),
Explorer exports (`<Table>*.parquet` directories, `system_profile.json`) inside a session or beside it.

`find_neuron_runs(path)` returns one `Run` per session (rank), named like `rank0 (i-abc_pid_123)`, whose `source` (a
`NeuronSource`: plain data) says what to read besides its framework trace: its export, or its raw `.pb`/`.ntff` files
to convert, and mapping files (trntui/loaders/neuron/format.py reads them). It returns [] when the path holds no
Neuron evidence, so the generic trace walk runs instead. `scan(path)` gives the full picture for
`trntui info`. Nothing here writes to the profile directory.

Built from the documentation only (no Trainium hardware was available); unknown layouts fall back to "any
directory holding Neuron files is a session".

The package by job: `layout` (what a file and a session are: the name patterns, `FileInfo`, `Export`,
`Session`, `Layout`, classifying a file, a trace's head), `scan` (walking a directory into a `Layout`: sessions,
their traces and exports, ranks and names, the problems `trntui info` reports), `runs` (a session as a `Run`:
`NeuronSource`, mapping files, `find_neuron_runs` and the grouping of ranks into a job). They import each other
one way only (layout <- scan <- runs); this module re-exports the public names.
"""

from __future__ import annotations

from trntui.loaders.neuron.discover.layout import (
    CONVERT_HINT,
    FRAMEWORK_PRIORITY,
    MAPPING_RX,
    MAX_DEPTH,
    NEFF_CACHE_DIR,
    NEFF_RX,
    NTFF_RX,
    PB_FILES,
    RANK_TRACE_RX,
    SESSION_RX,
    Export,
    FileInfo,
    Layout,
    Session,
    classify,
)
from trntui.loaders.neuron.discover.runs import NeuronSource, find_neuron_runs, read_mapping, run_for
from trntui.loaders.neuron.discover.scan import scan

__all__ = [
    "CONVERT_HINT", "FRAMEWORK_PRIORITY", "MAPPING_RX", "MAX_DEPTH", "NEFF_CACHE_DIR", "NEFF_RX", "NTFF_RX", "PB_FILES",
    "RANK_TRACE_RX", "SESSION_RX", "Export", "FileInfo", "Layout", "NeuronSource", "Session", "classify",
    "find_neuron_runs", "read_mapping", "run_for", "scan",
]
