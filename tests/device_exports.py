"""Device exports built from the documented schema, row by row, for the tests of the device view.

`write_table` types every column as `profile-schema-reference.rst` (schema 7.4.0) does, through the sample
generator's own table of fields (scripts/make_neuron_device_samples.py `_schema`): required fields a row does not
give get a neutral value (0, ""), optional ones a row does not give are left out of the file, as Explorer leaves
out what a profile does not have. `two_executions` is the export of issue 27's errors 1-3: a logical NeuronCore
of two physical cores (LNC=2) running two executions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.neuron_device_samples import generator

T0 = 1_796_040_000_000_000_000
"""The trace's first timestamp (Metadata.first_hw_timestamp), ns."""

TRN2_LNC2 = {
    "profile_schema_version": "7.4.0", "ntff_version": 6, "num_physical_cores": 2, "vnc_enabled": True,
    "first_hw_timestamp": T0, "last_hw_timestamp": T0 + 128_700, "first_ts": "", "last_ts": "",
    "dma_ddr_bandwidth": 4.375e11, "num_dma_engines_per_neuroncore": 16, "hbm_ddr_bandwidth": 7.25e11,
    "tensor_engine_num_rows": 128, "tensor_engine_num_cols": 128, "tensor_engine_clock_freq": 2.4,
    "vector_engine_clock_freq": 1.2, "vector_engine_num_channels": 128, "scalar_engine_clock_freq": 1.2,
    "scalar_engine_num_channels": 128, "gpsimd_engine_clock_freq": 1.2, "gpsimd_engine_num_channels": 8,
    "neuroncore_clock_freq": 1.2, "ticks_per_nanosec": 1, "instance_type": "trn2.48xlarge", "neuroncore_idx": 0,
}
PER_TE = 2 * 128 * 128 * 2.4e9
"""One Tensor Engine's peak from that Metadata (the schema's tensor_engine_max_ops_per_sec)."""


def _neutral(t: pa.DataType) -> Any:
    if pa.types.is_string(t):
        return ""
    if pa.types.is_boolean(t):
        return False
    if pa.types.is_list(t):
        return []
    return 0


def write_table(d: Path, table: str, rows: list[dict[str, Any]], *, required_only: bool = False,
                types: dict[str, pa.DataType] | None = None) -> Path:
    """`d/<table>.parquet` from `rows`, typed as the schema says (`types` overrides one column's type, to build a
    hostile file: e.g. `start_ts` as strings or lists)."""
    d.mkdir(parents=True, exist_ok=True)
    spec = generator()._schema().get(table)
    if spec is None:  # Summary: every field optional, numbers
        names = list(dict.fromkeys(k for r in rows for k in r))
        spec = [(n, pa.float64() if any(isinstance(r.get(n), float) for r in rows) else pa.int64(), False) for n in names]
    cols: dict[str, Any] = {}
    for name, typ, req in spec:
        given = any(name in r for r in rows)
        if (required_only and not req) or (not req and not given):
            continue
        typ = (types or {}).get(name, typ)
        vals = [r.get(name, _neutral(typ) if req else None) for r in rows]
        cols[name] = pa.array(vals, type=typ)
    for name, typ in (types or {}).items():  # a column the schema table does not list
        if name not in cols and any(name in r for r in rows):
            cols[name] = pa.array([r.get(name) for r in rows], type=typ)
    path = d / f"{table}.parquet"
    pq.write_table(pa.table(cols), path)
    return path


def instr(start: int, end: int, engine: str, opcode: str, pcore: int = 0, **kw: Any) -> dict[str, Any]:
    row = {"start_ts": start, "end_ts": end, "duration_ns": end - start, "engine": engine, "opcode": opcode,
           "operands": "", "id": start, "pc": 0, "bir_id": "sg0000:0", "pcore_idx": pcore}
    row.update(kw)
    return row


def dma(start: int, end: int, pcore: int, nbytes: int, source: str, dest: str, variable: str = "x") -> dict[str, Any]:
    return {"start_ts": start, "end_ts": end, "duration_ns": end - start, "id": start, "pcore_idx": pcore,
            "queue_name": "qSyncIO0", "queue_type": "input" if dest == "[SB]" else "output", "op": "read",
            "variable": variable, "read_bytes": nbytes, "write_bytes": nbytes, "transfer_bytes": nbytes,
            "throughput": 1.0, "source": source, "dest": dest}


def two_executions(root: Path, *, extra_instructions: list[dict[str, Any]] | None = None) -> Path:
    """A trn2 LNC=2 device profile with two executions, on both physical cores:

    - execution 0, [T0, T0+60 µs): Vector work (1e6 FLOPs per core) from T0+100 ns; DMA in 1 MB per core;
    - execution 1, [T0+70 µs, T0+128.7 µs): a matmul of 5e9 FLOPs per core in [71, 127 µs); DMA in 2 MB and out
      1 MB per core, the last bytes at 120-128 µs.

    `Summary.total_time` is 85.6 µs (the runtime's on-device time: not the executions' extent, 128.7 µs)."""
    d = root / "i-0abc_pid_4242_nc_0_session_0"
    rows = []
    for p in (0, 1):
        rows += [
            instr(T0 + 100, T0 + 50_100, "vector", "TENSOR_TENSOR", p, raw_flops=1_000_000, raw_framework_id=1,
                  layer="model/scale", hlo_name="multiply.1"),
            instr(T0 + 71_000, T0 + 127_000, "tensor", "MATMUL", p, raw_flops=5_000_000_000, raw_framework_id=2,
                  layer="model/matmul", hlo_name="dot.2"),
        ]
    rows += extra_instructions or []
    rows.sort(key=lambda r: r["start_ts"])
    write_table(d, "Instruction", rows)
    transfers = []
    for p in (0, 1):
        transfers += [dma(T0 + 200, T0 + 10_200, p, 1_000_000, "[INPUT]", "[SB]"),
                      dma(T0 + 70_100, T0 + 71_000, p, 2_000_000, "[WEIGHT]", "[SB]", "w"),
                      dma(T0 + 120_000, T0 + 128_600, p, 1_000_000, "[SB]", "[OUTPUT]", "out")]
    write_table(d, "DmaPacketAggregated", transfers)
    write_table(d, "ExecutionInfo", [
        {"execution_index": 0, "neff_name": "a.neff", "execution_start_ts": 0, "execution_end_ts": 60_000},
        {"execution_index": 1, "neff_name": "b.neff", "execution_start_ts": 70_000, "execution_end_ts": 128_700}])
    write_table(d, "Metadata", [TRN2_LNC2])
    write_table(d, "Summary", [{"total_time": 85.6e-6}])
    return d
