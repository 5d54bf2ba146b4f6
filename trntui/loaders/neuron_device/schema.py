"""The device-profile fields trntui reads, as Neuron Explorer's profile schema documents them.

Source: aws-neuron/aws-neuron-sdk `tools/neuron-explorer/profile-schema-reference.rst` (schema 7.4.0, Neuron
2.31; generated from the OpenAPI document that `neuron-explorer --show-profile-schema` prints). Only the
columns the device view uses are listed; every other column of an export is left unread. `required` is the
schema's own "Required" flag: a required field that is missing means the export's schema renamed or removed it
(a MAJOR version change), so the load stops with one line naming it. Missing optional fields are tolerated.

Kinds: `int` (int64 in the schema; ids and timestamps may arrive as strings and are parsed), `float`, `str`,
`bool`, `list` (an array of int64, kept as Python lists: only the small hierarchy tables have them).
"""

from __future__ import annotations

from dataclasses import dataclass

DOCUMENTED_VERSION = "7.4.0"
"""The schema version the field lists below were taken from."""
KNOWN_MAJORS = range(7, 13)
"""MAJOR versions the docs mention (7.4.0 in the 2.31 reference, 12.0.1 in the 2.33 docs): others get a note."""


@dataclass(frozen=True)
class Field:
    name: str
    kind: str
    required: bool


def _f(spec: str) -> tuple[Field, ...]:
    """`"start_ts:int! engine:str! pcore_idx:int"`: `!` marks a field the schema says is required."""
    out = []
    for item in spec.split():
        name, kind = item.split(":")
        out.append(Field(name, kind.rstrip("!"), kind.endswith("!")))
    return tuple(out)


TABLES: dict[str, tuple[Field, ...]] = {
    # compute-engine instructions: the timeline, busy time, top tables, FLOPs and bytes
    "Instruction": _f(
        "start_ts:int! end_ts:int! engine:str! opcode:str! pcore_idx:int hlo_name:str raw_hlo_id:int raw_framework_id:int "
        "layer:str hbm_read_bytes:int hbm_write_bytes:int sbuf_read_bytes:int sbuf_write_bytes:int raw_flops:int "
        "flops_transpose:int"
    ),
    # merged busy intervals per engine (Explorer's own union of Instruction intervals): a cross-check
    "ActiveTime": _f("start_ts:int! end_ts:int! engine:str! pcore_idx:int!"),
    # DMA transfers (aggregated per queue/block: routes, bytes) and the individual packets (active time)
    "DmaPacketAggregated": _f(
        "start_ts:int! end_ts:int! pcore_idx:int queue_name:str! queue_type:str variable:str! read_bytes:int! "
        "write_bytes:int! transfer_bytes:int! source:str! dest:str!"
    ),
    "DmaPacket": _f("start_ts:int! end_ts:int! pcore_idx:int transfer_bytes:int! queue_type:str! queue_name:str"),
    # the compiler hierarchy's framework and HLO levels: names, merged time intervals and HBM bytes (per interval).
    # The schema requires all of these; only the key, the name and the byte totals are needed here, so the
    # others are read when present (a hand-made export without them still shows its ops).
    "FrameworkInstruction": _f(
        "raw_framework_id:int! framework_name:str hbm_read_bytes:int! hbm_write_bytes:int! start_ts:int end_ts:int "
        "time_intervals:str hbm_transfer_size_per_interval:list"
    ),
    "HloInstruction": _f(
        "raw_hlo_id:int! hlo_name:str! hbm_read_bytes:int! hbm_write_bytes:int! start_ts:int end_ts:int "
        "time_intervals:str hbm_transfer_size_per_interval:list"
    ),
    # Explorer's per-opcode active time: a cross-check
    "OpcodeSummary": _f("engine:str! opcode:str! active_time_ns:int!"),
    # whole-profile figures (every field optional in the schema): the window and the cross-checks
    "Summary": _f(
        "total_time:float mm_arithmetic_intensity:float peak_flops_bandwidth_ratio:float mfu_estimated_percent:float "
        "mbu_estimated_percent:float hbm_read_bytes:int hbm_write_bytes:int dma_active_time_percent:float "
        "tensor_engine_active_time_percent:float vector_engine_active_time_percent:float "
        "scalar_engine_active_time_percent:float gpsimd_engine_active_time_percent:float "
        "sync_engine_active_time_percent:float"
    ),
    # schema version, hardware figures (MFU/MBU denominators, roof fallback), instance type, NeuronCore, extent
    "Metadata": _f(
        "profile_schema_version:str! ntff_version:int num_physical_cores:int first_hw_timestamp:int "
        "last_hw_timestamp:int hbm_ddr_bandwidth:float tensor_engine_num_rows:int tensor_engine_num_cols:int "
        "tensor_engine_clock_freq:float instance_type:str neuroncore_idx:int"
    ),
    "ExecutionInfo": _f("execution_index:int! neff_name:str execution_start_ts:int execution_end_ts:int"),
    "Warning": _f("message:str! category:str!"),
    "SchemaFields": _f("table_name:str! field_name:str!"),
}
"""Table → the fields trntui reads from it."""

REQUIRED_TABLES = ("Instruction",)
"""Without instructions there is no device view; every other table adds to it and is reported when missing."""

OPTIONAL_TABLES = tuple(t for t in TABLES if t not in REQUIRED_TABLES)

SYSTEM_TABLES = {"DeviceProfileList": _f("device_profile_name:str! instance_id:str! process_id:int! nc_id:int! "
                                         "session_id:int model_id:int")}
"""The system export's map of device profiles (one row per device profile: which process and NeuronCore)."""


def fields(table: str) -> tuple[Field, ...]:
    return TABLES.get(table) or SYSTEM_TABLES[table]


def major(version: str) -> int | None:
    """The MAJOR of a `MAJOR.MINOR.PATCH` version (None when it is not one: empty, junk, absurdly long)."""
    head = str(version).strip()[:64].lstrip("vV").split(".")[0]
    return int(head) if head.isdigit() and len(head) <= 6 else None


DOCUMENTED_MAJOR = major(DOCUMENTED_VERSION)

ESSENTIAL = ("start_ts", "end_ts")
"""Fields without which no row of a table can be placed: a missing one stops the load in any version."""


def is_newer(version: str) -> bool:
    """Whether `version` has a higher MAJOR than the documented schema trntui's field lists come from."""
    mj = major(version)
    return mj is not None and DOCUMENTED_MAJOR is not None and mj > DOCUMENTED_MAJOR


def tolerates_missing(version: str, f: Field) -> bool:
    """A required field the files lack is tolerated (read by name: the table loads without it, and the loss is
    reported) when the export's MAJOR version differs from the documented one, whose MAJOR changes are exactly
    field renames and removals; in the documented MAJOR it means a broken export (one line, exit 2). Timestamps
    are never optional."""
    mj = major(version)
    return f.name not in ESSENTIAL and mj is not None and mj != DOCUMENTED_MAJOR

