"""Neuron Explorer device profiles (the instruction-level view inside one `nc_exec_running`).

A device profile is a directory of Parquet tables (`Instruction`, `ActiveTime`, `DmaPacketAggregated`,
`Summary`, `Metadata`, ... as `profile-schema-reference.rst` documents them), one per NeuronCore and session (or
NEFF). The system export's `DeviceProfileList` maps each to its instance, process and NeuronCore.

- `load_device(path)` reads one device profile into a `DeviceExport` (tables of the used columns only).
- `find_device_profiles(path)` lists the device profiles under a path (`discover.py`).
- `FORMAT`: the registry entry (trntui/formats.py): `trntui open` shows a device profile's engine lanes.
- `device_profile(export)` turns its instructions and DMA transfers into a `Profile` with one timeline lane per
  engine and DMA queue (`timeline.py`), so the app draws it with the same timeline widget.

Built from the public schema; no real device export was available (see the README's Part 2 section).
"""

from __future__ import annotations

from typing import Any

from trntui.loaders.neuron_device.format import FORMAT

_LAZY = {
    "DeviceRef": "discover", "device_profiles_for": "discover", "device_profiles_of": "discover",
    "find_device_profiles": "discover", "is_device_profile": "discover", "search_roots": "discover",
    "describe_device": "export", "load_device": "export", "device_profile": "timeline",
}


def __getattr__(name: str) -> Any:
    """The loader's functions, imported on first use (the registry imports this package on every command, and
    `trntui summary` must not pay for pandas/pyarrow)."""
    if name == "DeviceExport":
        from trntui.model.device import DeviceExport

        return DeviceExport
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(name)
    import importlib

    return getattr(importlib.import_module(f"trntui.loaders.neuron_device.{module}"), name)


__all__ = ["FORMAT", "DeviceExport", *_LAZY]
