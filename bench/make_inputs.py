"""Generate the benchmark inputs under bench/_data/ (git-ignored). Idempotent: existing files are kept.

    python bench/make_inputs.py [--only cpu|2m|5m] [--force]

- `cpu_transformer_400steps.json`: a real torch CPU trace: 4-layer `nn.TransformerEncoder`, eval forward
  steps, 400 profiled steps, `record_shapes=True` (about 160k events, about 67 MB).
- `cuda_2m.json`: about 2M events (~400 MB) made by replicating the events of the HTA ns-resolution CUDA trace
  (/work/shared/corpus/kineto/cuda_ns_resolution_68k.json.gz) with shifted timestamps and fresh
  ids / correlations / External ids (kineto-traces.md §14).
- `cuda_5m.json`: the same at 5M events (~1 GB); only with `--only 5m` or `--big`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "_data"
CORPUS = Path(os.environ.get("TRNTUI_CORPUS", HERE.parent.parent / "shared" / "corpus" / "kineto"))
SEED_TRACE = CORPUS / "cuda_ns_resolution_68k.json.gz"

CPU_TRACE = DATA / "cpu_transformer_400steps.json"
CUDA_2M = DATA / "cuda_2m.json"
CUDA_5M = DATA / "cuda_5m.json"


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


def count_events(path: Path) -> int:
    import msgspec

    return len(msgspec.json.decode(path.read_bytes(), type=dict[str, msgspec.Raw])["traceEvents"] and
               msgspec.json.decode(msgspec.json.decode(path.read_bytes(), type=dict[str, msgspec.Raw])["traceEvents"],
                                   type=list[msgspec.Raw]))


def ensure(which: str, force: bool = False) -> Path:
    path = {"cpu": CPU_TRACE, "2m": CUDA_2M, "5m": CUDA_5M}[which]
    if path.exists() and not force:
        return path
    t = time.perf_counter()
    if which == "cpu":
        make_cpu_trace(path)
    else:
        make_replicated(path, 2_000_000 if which == "2m" else 5_000_000)
    print(f"made {path.name}: {path.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=("cpu", "2m", "5m"))
    ap.add_argument("--big", action="store_true", help="also make the 5M-event trace (~1 GB)")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--count", action="store_true", help="print event counts")
    args = ap.parse_args(argv)
    which = [args.only] if args.only else ["cpu", "2m"] + (["5m"] if args.big else [])
    for w in which:
        p = ensure(w, args.force)
        if args.count:
            print(f"{p.name}: {count_events(p)} events, {p.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
