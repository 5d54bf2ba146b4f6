"""Inside one NeuronCore execution: engine busy time, DMA, top instructions/opcodes/HLO/framework ops, roofline.

Pure functions over a `DeviceExport` (trntui.loaders.neuron_device); no Textual. Definitions:

- busy time of an engine = length of the union of its `Instruction` intervals (clipped to the window), which
  is how the schema defines `ActiveTime` and `*_engine_active_time`; busy % = busy ÷ the window;
- the window = one execution (`ExecutionInfo`, or the selected `nc_exec_running`), else the whole profile, whose
  length is `Summary.total_time` when the export states it (the device-measured execution time), else the span
  of instructions and DMA;
- DMA active time = union of `DmaPacket` intervals (`DmaPacketAggregated` when there are no packets); HBM bytes
  = DMA bytes read from / written to device memory (the `Summary.hbm_*_bytes` definition), or the
  instructions' `hbm_read_bytes`/`hbm_write_bytes` when the export has no DMA table;
- MFU = (Tensor Engine FLOPs − transpose FLOPs) ÷ (2 × rows × cols × Tensor Engine clock × time) and MBU = HBM
  bytes ÷ time ÷ `Metadata.hbm_ddr_bandwidth`, the `Summary` formulas of the schema reference;
- roofline (trntui.analysis.roofline): FLOPs (`raw_flops`, every engine) ÷ HBM bytes against the documented peak
  of the instance type (`Metadata.instance_type`, or the one given).

The package by job (every public name is importable from `trntui.analysis.device`, `Window` too):

- `windows`: the window to analyse (whole profile, an execution, the one under a system-trace event) and its shift;
- `groups`: interval unions, the framework/HLO op of each instruction, the grouped tables;
- `dma`: DMA active time, bytes, bandwidth by route and queue, HBM bytes;
- `rollup`: the hierarchy tables' own HBM bytes and intervals, merged into the op tables;
- `report`: `analyse()` and `DeviceReport` (engines, tops, MFU/MBU, roofline, the export's figures beside ours).
"""

from __future__ import annotations

from trntui.analysis.device.dma import DmaReport, is_hbm
from trntui.analysis.device.groups import UNATTRIBUTED, group_table, union_by_group, union_ns
from trntui.analysis.device.report import (
    MAX_OTHER_ENGINES,
    SEMAPHORE_OPCODES,
    Check,
    DeviceReport,
    EngineBusy,
    analyse,
    roof_of,
)
from trntui.analysis.device.windows import Target, executions, target_of, whole, window_for
from trntui.model.device import Window  # (part of this package's interface: DeviceReport.window, window_for)

__all__ = [
    "Target", "executions", "target_of", "whole", "window_for", "UNATTRIBUTED", "group_table", "union_by_group",
    "union_ns", "DmaReport", "is_hbm", "MAX_OTHER_ENGINES", "SEMAPHORE_OPCODES", "Check", "DeviceReport",
    "EngineBusy", "analyse", "roof_of", "Window",
]
