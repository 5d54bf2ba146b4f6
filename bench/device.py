"""Device-profile benchmark: `trntui device` on a large synthetic Neuron Explorer device export.

    python bench/device.py [--rows 2000000] [--force]

Input: `bench/_data/device_<rows>/<name>/` (git-ignored), SYNTHETIC: the naive RMSNorm device sample of
scripts/make_neuron_device_samples.py (6 executions, 159 instructions) replicated with shifted timestamps until
the Instruction table has `--rows` rows, written as Explorer splits large tables (`Instruction_<k>.parquet`), with
DmaPacket / DmaPacketAggregated / ActiveTime replicated alongside. Each case runs in a fresh process (its own peak
RSS). The floor is `pyarrow.parquet.read_table` of the columns trntui reads; the ratios are to that floor.

Cases: load (`load_device`), the whole-profile report (`analyse`, what `trntui device DIR` prints), one
execution's report and its engine-lane Profile (what the app's Device view builds for one `nc_exec_running`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = HERE / "_data"
PART_ROWS = 1 << 20


def make(rows: int, force: bool) -> Path:
    """Write the replicated export (kept when it exists)."""
    import importlib.util

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    root = DATA / f"device_{rows}"
    spec = importlib.util.spec_from_file_location("gen", REPO / "scripts" / "make_neuron_device_samples.py")
    gen = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules["gen"] = gen  # dataclasses look their module up
    spec.loader.exec_module(gen)
    name = f"{gen.INSTANCE}_pid_{gen.PIDS['naive']}_nc_0_session_0"
    pdir = root / name
    if pdir.is_dir() and not force:
        return pdir
    seed = gen.write_variant(root / "_seed", "naive")
    base = pq.read_table(seed / "Instruction.parquet")
    copies = -(-rows // base.num_rows)
    span = int(pc.max(base["end_ts"]).as_py()) - int(pc.min(base["start_ts"]).as_py()) + 20_000
    pdir.mkdir(parents=True, exist_ok=True)

    def replicate(table: pa.Table, n: int, limit: int | None = None) -> list[pa.Table]:
        out = []
        for k in range(n):
            t = table
            for col in ("start_ts", "end_ts"):
                if col in t.column_names:
                    t = t.set_column(t.column_names.index(col), col, pc.add(t[col], k * span))
            out.append(t)
        whole = pa.concat_tables(out)
        return [whole.slice(0, limit)] if limit else [whole]

    for table, limit in (("Instruction", rows), ("ActiveTime", None), ("DmaPacket", None), ("DmaPacketAggregated", None)):
        (t,) = replicate(pq.read_table(seed / f"{table}.parquet"), copies, limit)
        for k in range(-(-t.num_rows // PART_ROWS)):
            pq.write_table(t.slice(k * PART_ROWS, PART_ROWS), pdir / f"{table}_{k}.parquet")
    for table in ("Metadata", "FrameworkInstruction", "SchemaFields", "Warning", "ExecutionInfo"):
        pq.write_table(pq.read_table(seed / f"{table}.parquet"), pdir / f"{table}.parquet")
    return pdir


def case(which: str, pdir: str) -> dict:
    """One case, in this (fresh) process: wall seconds and peak RSS."""
    import resource

    sys.path.insert(0, str(REPO))
    t0 = time.perf_counter()
    if which == "floor":
        import pyarrow.parquet as pq

        from trntui.loaders.neuron.parquet import table_files
        from trntui.loaders.neuron_device.schema import TABLES

        for table, fields in TABLES.items():
            for f in table_files(Path(pdir), table):
                have = set(pq.ParquetFile(f).schema_arrow.names)
                pq.read_table(f, columns=[x.name for x in fields if x.name in have])
    else:
        from trntui.analysis.device import analyse, executions
        from trntui.loaders.neuron_device import device_profile, load_device

        export = load_device(pdir)
        if which == "report":
            analyse(export)
        elif which == "execution":
            w = executions(export)[0]  # the first of the seed's six (ExecutionInfo is copied once)
            analyse(export, window=w)
            device_profile(export, w)
    return {"seconds": time.perf_counter() - t0, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--case", help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.case:
        print(json.dumps(case(args.case, args.dir)))
        return
    pdir = make(args.rows, args.force)
    results = {}
    for which in ("floor", "load", "report", "execution"):
        out = subprocess.run([sys.executable, __file__, "--case", which, "--dir", str(pdir)], check=True,
                             capture_output=True, text=True).stdout
        results[which] = json.loads(out.strip().splitlines()[-1])
    floor = results["floor"]["seconds"]
    print(f"device profile: {args.rows:,} instructions ({pdir})")
    print(f"{'case':<42} {'seconds':>8} {'x floor':>8} {'peak RSS':>9}")
    labels = {"floor": "floor: pyarrow read of the used columns", "load": "load_device",
              "report": "load + whole-profile report", "execution": "load + 1 execution report + lanes"}
    for which, r in results.items():
        print(f"{labels[which]:<42} {r['seconds']:>8.2f} {r['seconds'] / floor:>8.1f} {r['rss_mb']:>7.0f} MB")


if __name__ == "__main__":
    main()
