"""Neuron Explorer device profiles (the instruction-level view inside one `nc_exec_running`).

A device profile is a directory of Parquet tables (`Instruction`, `ActiveTime`, `DmaPacketAggregated`,
`Summary`, `Metadata`, ... as `profile-schema-reference.rst` documents them), one per NeuronCore and session (or
NEFF). The system export's `DeviceProfileList` maps each to its instance, process and NeuronCore.

- `load_device(path)` reads one device profile into a `DeviceExport` (tables of the used columns only).
- `find_device_profiles(path)` lists the device profiles under a path (`discover.py`).
- `device_profile(export)` turns its instructions and DMA transfers into a `Profile` with one timeline lane per
  engine and DMA queue (`timeline.py`), so the app draws it with the same timeline widget.

Built from the public schema; no real device export was available (see the README's Part 2 section).
"""

from __future__ import annotations

from trntui.loaders.neuron_device.discover import (
    DeviceRef,
    device_profiles_for,
    device_profiles_of,
    find_device_profiles,
    is_device_profile,
    search_roots,
)
from trntui.loaders.neuron_device.export import DeviceExport, describe_device, load_device
from trntui.loaders.neuron_device.timeline import device_profile

__all__ = [
    "DeviceExport",
    "DeviceRef",
    "device_profile",
    "device_profiles_for",
    "device_profiles_of",
    "describe_device",
    "find_device_profiles",
    "is_device_profile",
    "load_device",
    "search_roots",
]
