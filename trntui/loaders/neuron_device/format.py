"""`FORMAT`: Neuron Explorer device profiles as a trace format of the registry (trntui/formats.py).

A device profile opened with `trntui open` / `summary` / `compare` loads as a `Profile` whose hardware lanes
are the engines and DMA queues of the NeuronCore (`timeline.add_device_events`); the engine, DMA and roofline
report is `trntui device` (and the app's Device view).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trntui.loaders.discover import Run

if TYPE_CHECKING:
    from trntui.model.device import Identity

@dataclass(frozen=True)
class DeviceSource:
    """What a device-profile run reads: the profile directory and whose it is (plain data: runs pickle)."""

    path: Path
    identity: Identity


class DeviceFormat:
    """Directories holding a Neuron Explorer device profile (`Instruction.parquet` and companions)."""

    name = "neuron-device"

    def find_runs(self, path: Path) -> list[Run]:
        if not path.is_dir():  # (before the import: a plain trace file must not pay for the device modules)
            return []
        from trntui.loaders.neuron_device.discover import find_device_profiles

        return [Run(name=r.name, root=r.path, format=self.name, source=DeviceSource(r.path, r.identity))
                for r in find_device_profiles(path)]

    def load(self, run: Run, builder, options) -> None:
        from trntui import memory
        from trntui.loaders.neuron_device.export import load_device
        from trntui.loaders.neuron_device.timeline import add_device_events

        src: DeviceSource = run.source
        # (refused before anything is read when the tables cannot fit: memory.DEVICE_PROFILE_BYTES_PER_ROW a row)
        export = load_device(src.path, src.identity, budget=options.budget, per_row=memory.DEVICE_PROFILE_BYTES_PER_ROW)
        add_device_events(export, builder)
        builder.meta.notes.append(
            f"Neuron device profile: engines and DMA queues as hardware lanes; `trntui device {src.path}` reports "
            "busy %, DMA, top instructions and the roofline"
        )

    def inputs(self, run: Run) -> list[Path] | None:
        from trntui.loaders.neuron.parquet import table_files
        from trntui.loaders.neuron_device.schema import TABLES

        src: DeviceSource = run.source
        return [p for t in TABLES for p in table_files(src.path, t)]


FORMAT = DeviceFormat()
