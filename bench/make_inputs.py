"""Generate the benchmark inputs under bench/_data/ (git-ignored). Idempotent: existing files are kept.

    python bench/make_inputs.py [--only cpu|2m|5m|neuron] [--force]

- `cpu_transformer_400steps.json`: a real torch CPU trace: 4-layer `nn.TransformerEncoder`, eval forward
  steps, 400 profiled steps, `record_shapes=True` (about 160k events, about 67 MB).
- `cuda_2m.json`: about 2M events (~400 MB) made by replicating the events of the HTA ns-resolution CUDA trace
  (tests/data/kineto/cuda_ns_resolution_68k.json.gz) with shifted timestamps and fresh
  ids / correlations / External ids (docs/reference/kineto-traces.md §14).
- `cuda_5m.json`: the same at 5M events (~1 GB); only with `--only 5m` or `--big`.
- `neuron_2m/`: a Neuron profile directory of about 2M events (SYNTHETIC: the "naive" step of
  scripts/make_neuron_samples.py replicated ~29k times with shifted timestamps and fresh External ids, system
  row ids, flow ids, `nrt_sequence_id`s and `exec_id`s, so every chain still links): the framework
  `<instance>_pid_<pid>/<timestamp>/trace.json` (~0.5M events) and Explorer's Parquet export
  `explorer_parquet/SystemProfileEvents_<k>.parquet` (~1.5M rows, split in parts as Explorer splits large
  tables) + the small companion tables, in the layout `trntui summary DIR` / `find_runs` read.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "_data"
CORPUS = Path(os.environ.get("TRNTUI_CORPUS", HERE.parent / "tests" / "data" / "kineto"))
SEED_TRACE = CORPUS / "cuda_ns_resolution_68k.json.gz"

CPU_TRACE = DATA / "cpu_transformer_400steps.json"
CUDA_2M = DATA / "cuda_2m.json"
CUDA_5M = DATA / "cuda_5m.json"
NEURON_2M = DATA / "neuron_2m"
MTIA_GZ = DATA / "mtia_456k.json.gz"
"""The MTIA corpus trace replicated to ~456k events, gzip-compressed (the size issue 13 measured re-opens at)."""


def make_cpu_trace(path: Path = CPU_TRACE, steps: int = 400) -> Path:
    """Profile a small 4-layer TransformerEncoder training loop on CPU (torch), export the chrome trace."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    torch.set_num_threads(1)
    # eval + no_grad with a Python activation: the layer-by-layer path (the fused fast path would log ~1
    # op per layer), about 414 events per step, 413 bytes each with record_shapes.
    layer = nn.TransformerEncoderLayer(
        d_model=64, nhead=4, dim_feedforward=128, dropout=0.1, batch_first=True, activation=_relu
    )
    model = nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False).eval()
    x = torch.randn(4, 16, 64)

    def step() -> None:
        with torch.no_grad():
            model(x)

    for _ in range(3):  # warm up outside the profiler
        step()
    from torch.profiler import ProfilerActivity, profile, schedule

    sched = schedule(wait=0, warmup=1, active=steps, repeat=1)
    path.parent.mkdir(parents=True, exist_ok=True)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, schedule=sched,
                 on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
        for _ in range(steps + 1):
            step()
            prof.step()
    return path


def _relu(t):
    import torch

    return torch.relu(t)


def make_replicated(path: Path, target_events: int, seed: Path = SEED_TRACE) -> Path:
    """Replicate the seed trace's events with shifted timestamps and fresh ids (streamed, low memory)."""
    with gzip.open(seed, "rb") as f:
        top = json.load(f)
    events = top["traceEvents"]
    meta = [e for e in events if e.get("ph") == "M"]
    body = [e for e in events if e.get("ph") != "M"]
    ts = [float(e["ts"]) for e in body if "ts" in e]
    t0, t1 = min(ts), max(float(e["ts"]) + float(e.get("dur", 0) or 0) for e in body if "ts" in e)
    span = (t1 - t0) + 1000.0  # µs, with a 1 ms gap between copies
    ext_max = corr_max = flow_max = 0
    for e in body:
        a = e.get("args") or {}
        for k in ("External id", "external id"):
            if isinstance(a.get(k), (int, float)):
                ext_max = max(ext_max, int(a[k]))
        if isinstance(a.get("correlation"), (int, float)):
            corr_max = max(corr_max, int(a["correlation"]))
        if isinstance(e.get("id"), int):
            flow_max = max(flow_max, e["id"])
    copies = max(1, -(-target_events // len(body)))
    # pre-serialise one template per event with placeholders, then format per copy (fast, streamed)
    base_ns = top.get("baseTimeNanoseconds")
    tmp = path.with_suffix(".tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(tmp, "w") as out:
        head = {k: v for k, v in top.items() if k != "traceEvents"}
        out.write("{\n")
        for k, v in head.items():
            out.write(f"  {json.dumps(k)}: {json.dumps(v)},\n")
        out.write('  "traceEvents": [\n')
        first = True
        for e in meta:
            out.write(("" if first else ",\n") + json.dumps(e))
            first = False
        for c in range(copies):
            shift = c * span
            lines = []
            for e in body:
                e2 = dict(e)
                if "ts" in e2:
                    e2["ts"] = _shift_ts(e2["ts"], shift)
                a = e2.get("args")
                if a:
                    a = dict(a)
                    for k in ("External id", "external id"):
                        if isinstance(a.get(k), (int, float)) and a[k] > 0:
                            a[k] = int(a[k]) + c * (ext_max + 1)
                    if isinstance(a.get("correlation"), (int, float)) and a["correlation"] > 0:
                        a["correlation"] = int(a["correlation"]) + c * (corr_max + 1)
                    e2["args"] = a
                if isinstance(e2.get("id"), int):
                    e2["id"] = e2["id"] + c * (flow_max + 1)
                lines.append(json.dumps(e2, separators=(", ", ": ")))
            out.write(("" if first else ",\n") + ",\n".join(lines))
            first = False
        out.write("\n  ]\n}\n")
    tmp.replace(path)
    del base_ns
    return path


def _shift_ts(ts, shift: float):
    if isinstance(ts, int):
        return ts + int(shift)
    return round(float(ts) + shift, 3)


def make_neuron(out: Path, target_events: int = 2_000_000, part_rows: int = 500_000) -> Path:
    """A Neuron profile dir of ~`target_events` events: the sample's "naive" step replicated (see the docstring)."""
    import math
    import shutil

    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    sys.path.insert(0, str(HERE.parent / "scripts"))
    import make_neuron_samples as mns

    cap = mns.build_capture("naive")
    kin = cap.trace["traceEvents"]
    meta = [e for e in kin if e.get("ph") == "M"]
    span_ev = [e for e in kin if e.get("cat") == "Trace"]
    body = [e for e in kin if e.get("ph") != "M" and e.get("cat") != "Trace"]
    rows = sorted(cap.events, key=lambda r: (r["start_ts"], r["id"]))  # the order write_parquet_export uses
    per_copy = len(body) + len(rows)
    copies = max(1, -(-target_events // per_copy))
    last_us = max(max(e["ts"] + e["dur"] for e in body), (max(r["end_ts"] for r in rows) - mns.BASE_NS) / 1000)
    span_us = math.ceil(last_us) + 20  # whole µs: kineto µs and system ns shift by exactly the same amount
    span_ns = span_us * 1000

    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    # --- framework trace.json: one JSON template per event, External ids shifted per copy, ProfilerStep#k
    ext_max = max(int(e["args"].get("External id", 0)) for e in body)
    templates = []
    for e in body:
        e2 = dict(e, ts=-1.5, args=dict(e["args"]))
        if e2["name"].startswith("ProfilerStep#"):
            e2["name"] = "ProfilerStep#@STEP@"
        if "External id" in e2["args"]:
            e2["args"]["External id"] = -7
        t = json.dumps(e2, separators=(",", ":")).replace("{", "{{").replace("}", "}}")
        templates.append((e["ts"], int(e["args"].get("External id", 0)),
                          t.replace('"ts":-1.5', '"ts":{ts}').replace('"External id":-7', '"External id":{ext}')
                          .replace("@STEP@", "{step}")))
    trace = {k: v for k, v in cap.trace.items() if k != "traceEvents"}
    trace["traceName"] = f"bench: scripts/make_neuron_samples.py 'naive' step x {copies} (synthetic)"
    span_ev = [dict(e, dur=float(copies * span_us + 10)) for e in span_ev]
    session = tmp / f"{cap.instance}_pid_{cap.pid}" / mns.TIMESTAMP_DIR
    session.mkdir(parents=True)
    with open(session / "trace.json", "w") as f:
        f.write(json.dumps(trace, separators=(",", ":"))[:-1] + ',"traceEvents":[')
        f.write(",".join(json.dumps(e, separators=(",", ":")) for e in meta + span_ev))
        for c in range(copies):
            shift = c * span_us
            f.write("," + ",".join(t.format(ts=round(ts + shift, 3), ext=ext + c * (ext_max + 1), step=3 + c)
                                   for ts, ext, t in templates))
        f.write("]}\n")

    # --- Explorer Parquet export: the sample's companion tables (metadata spans the whole run), then
    # SystemProfileEvents rebuilt column by column with the sample's schema and split in parts
    end_all = mns.BASE_NS + (copies - 1) * span_ns + max(r["end_ts"] for r in rows) - mns.BASE_NS
    cap.metadata[0].update(last_ts=mns._human(end_all), last_ts_ns=str(end_all))
    export = tmp / mns.EXPORT_DIR
    mns.write_parquet_export(cap, export)
    schema = pq.read_schema(export / "SystemProfileEvents.parquet")
    (export / "SystemProfileEvents.parquet").unlink()
    n = len(rows)
    copy_of = np.repeat(np.arange(copies, dtype=np.int64), n)
    base_idx = pa.array(np.tile(np.arange(n, dtype=np.int64), copies))

    def ints(key: str, stride: int) -> pa.Array:
        vals = [r[key] for r in rows]
        if all(v is None for v in vals) or stride == 0:
            return pc.take(pa.array(vals, pa.int64()), base_idx)
        return pa.array(np.tile(np.array(vals, np.int64), copies) + copy_of * stride)

    ids = [r["id"] for r in rows]
    flows = [int(f) for r in rows for f in (r["flow_id"] or [])]
    f_lo, f_hi = min(flows), max(flows)
    # flow_id lists: the same lengths per copy, values + copy * (flow range)
    lengths = np.array([len(r["flow_id"] or []) for r in rows], np.int64)
    offsets = np.concatenate([[0], np.cumsum(np.tile(lengths, copies))])
    fvals = np.array(flows, np.int64)
    fvals = (np.tile(fvals, copies) + np.repeat(np.arange(copies, dtype=np.int64), len(fvals)) * (f_hi - f_lo + 1))
    flow_col = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pc.cast(pa.array(fvals), pa.string()),
                                        mask=pa.array(np.tile(np.array([r["flow_id"] is None for r in rows]), copies)))
    # extra attributes: nrt_sequence_id and exec_id fresh per copy, everything else as the sample wrote it
    seqs, execs, xtpl, xval = [], [], [], []
    for r in rows:
        x = json.loads(r["extra_attributes_json"]) if r["extra_attributes_json"] else None
        if x is None:
            xtpl.append(None)
            xval.append((0, 0))
            continue
        xval.append((x.get("nrt_sequence_id", 0), x.get("exec_id", 0)))
        if "nrt_sequence_id" in x:
            seqs.append(x["nrt_sequence_id"])
            x["nrt_sequence_id"] = -987654311
        if "exec_id" in x:
            execs.append(x["exec_id"])
            x["exec_id"] = -987654322
        xtpl.append(json.dumps(x, separators=(",", ":")).replace("{", "{{").replace("}", "}}")
                    .replace("-987654311", "{seq}").replace("-987654322", "{ex}"))
    seq_stride = max(seqs) - min(seqs) + 1 if seqs else 0
    ex_stride = max(execs) - min(execs) + 1 if execs else 0
    extra = [None if t is None else t.format(seq=xval[k][0] + c * seq_stride, ex=xval[k][1] + c * ex_stride)
             for c in range(copies) for k, t in enumerate(xtpl)]
    cols = {
        "id": ints("id", max(ids) - min(ids) + 1),
        "start_ts": ints("start_ts", span_ns),
        "end_ts": ints("end_ts", span_ns),
        "duration_ns": ints("duration_ns", 0),
        "flow_id": flow_col,
        "extra_attributes_json": pa.array(extra, pa.string()),
    }
    for name in schema.names:
        if name not in cols:
            cols[name] = pc.take(pa.array([r[name] for r in rows], schema.field(name).type), base_idx)
    table = pa.Table.from_arrays([cols[name] for name in schema.names], schema=schema)
    size = -(-table.num_rows // -(-table.num_rows // part_rows))  # equal parts of at most part_rows
    for k, a in enumerate(range(0, table.num_rows, size)):
        pq.write_table(table.slice(a, size), export / f"SystemProfileEvents_{k}.parquet")
    man = mns.manifest("naive")
    man.update(label=f"bench: naive RMSNorm step x {copies} (synthetic)", source="bench/make_inputs.py make_neuron")
    (tmp / "trntui.json").write_text(json.dumps(man, indent=1) + "\n", encoding="utf-8")
    shutil.rmtree(out, ignore_errors=True)
    tmp.replace(out)
    return out


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def count_events(path: Path) -> int:
    import msgspec

    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    events = msgspec.json.decode(data, type=dict[str, msgspec.Raw])["traceEvents"]
    return len(msgspec.json.decode(events, type=list[msgspec.Raw]))


def ensure(which: str, force: bool = False) -> Path:
    path = {"cpu": CPU_TRACE, "2m": CUDA_2M, "5m": CUDA_5M, "neuron": NEURON_2M, "mtia-gz": MTIA_GZ}[which]
    if path.exists() and not force:
        return path
    t = time.perf_counter()
    if which == "cpu":
        make_cpu_trace(path)
    elif which == "neuron":
        make_neuron(path)
    elif which == "mtia-gz":
        plain = make_replicated(path.with_suffix(""), 456_000, seed=CORPUS / "mtia_inference.json.gz")
        with open(plain, "rb") as src, gzip.open(path.with_suffix(".tmp"), "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        path.with_suffix(".tmp").replace(path)
        plain.unlink()
    else:
        make_replicated(path, 2_000_000 if which == "2m" else 5_000_000)
    print(f"made {path.name}: {dir_size(path) / 1e6:.0f} MB in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=("cpu", "2m", "5m", "neuron", "mtia-gz"))
    ap.add_argument("--big", action="store_true", help="also make the 5M-event trace (~1 GB)")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--count", action="store_true", help="print event counts")
    args = ap.parse_args(argv)
    which = [args.only] if args.only else ["cpu", "2m", "neuron"] + (["5m"] if args.big else [])
    for w in which:
        p = ensure(w, args.force)
        if args.count and p.is_file():
            print(f"{p.name}: {count_events(p)} events, {p.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
