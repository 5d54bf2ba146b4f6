"""Neuron profiles: discovery of capture sessions and ranks, and the Explorer exports of their system traces.

- `discover`: what a Neuron profile directory holds (sessions, ranks, framework traces, exports, NEFF/NTFF).
- `system`: system-trace rows → profile events, lanes and flows (shared by both export readers).
- `parquet` / `json_export`: Neuron Explorer's Parquet and JSON exports.
- `convert`: a raw capture (`.pb` / `.ntff`) converted with `neuron-explorer`, then read as an export.
- `format`: `FORMAT`, this format's entry in the registry (trntui/formats.py).

The framework trace of a session (`trace.json`) is a Kineto trace, read by `trntui.loaders.kineto`.
"""

from __future__ import annotations

from trntui.loaders.neuron.format import FORMAT

__all__ = ["FORMAT"]
