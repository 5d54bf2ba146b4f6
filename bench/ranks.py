"""Bench of `trntui ranks`: a 64-rank job of the 68k-event corpus trace on each engine.

    python bench/ranks.py                 # 64 ranks; writes bench/RANKS.md
    python bench/ranks.py --ranks 16 --no-write
    python bench/ranks.py --repeat 3      # best of 3 per case

Input (generated once under bench/_data/ranks64/, git-ignored): scripts/make_rank_job.py replicates the HTA
ns-resolution CUDA trace (68,692 events, 15 MB of JSON, 1.1 MB gzip) into 64 ranks with rank 5 slowed 1.3x and
the collectives synchronised (SYNTHETIC timings, real events). Each case is a fresh
`python -m trntui.cli ranks DIR --format json --no-cache ...` process:

- `--jobs 1`: every rank in the driver process, one after the other;
- `--jobs 2`: a local process pool of 2 workers;
- `--engine dask --jobs 2`: a Dask LocalCluster of 2 single-threaded worker processes (its start-up included).

Wall time is the whole command; the CPU time each worker spent per rank shows the work itself whatever else ran on
the machine, and the load average says how busy it was. Peak RSS per worker comes from the workers themselves (each
rank's summary says which process computed it and that process's peak RSS afterwards: `ran_on`); the driver's own
peak RSS and CPU time from the driver process itself at exit. The summaries must be identical across the cases
(checked).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import make_inputs  # noqa: E402

CASES = (
    ("--jobs 1 (in the driver)", ["--jobs", "1"]),
    ("--jobs 2 (process pool)", ["--jobs", "2"]),
    ("--engine dask --jobs 2 (LocalCluster)", ["--engine", "dask", "--jobs", "2"]),
)


def slow_rank(ranks: int) -> int:
    return 5 if ranks > 5 else ranks - 1


def make_job(ranks: int) -> Path:
    out = make_inputs.DATA / f"ranks{ranks}"
    done = out / ".complete"
    if done.exists():
        return out
    spec = importlib.util.spec_from_file_location("make_rank_job", ROOT / "scripts" / "make_rank_job.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    t = time.perf_counter()
    print(f"generating {ranks} ranks of {make_inputs.SEED_TRACE.name} under {out} ...", file=sys.stderr)
    mod.make_job(make_inputs.SEED_TRACE, out, ranks=ranks, slow_rank=slow_rank(ranks), slow=1.3)
    done.write_text("ok")
    print(f"  {time.perf_counter() - t:.0f} s", file=sys.stderr)
    return out


DRIVER = """
import os, resource, sys
from trntui.cli import main
try:
    rc = main(sys.argv[1:])
finally:
    u = resource.getrusage(resource.RUSAGE_SELF)
    peak = u.ru_maxrss
    try:
        with open("/proc/self/status") as f:
            peak = next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:"))
    except (OSError, StopIteration, ValueError):
        pass
    t = os.times()
    print(f"TRNTUI_DRIVER {peak} {t.user + t.system}", file=sys.stderr)
sys.exit(rc)
"""
"""The command, reporting its own peak RSS (kB) and CPU time at exit, not its workers': /usr/bin/time's %M is the
largest of the command and every process it waited for (for Dask: the nannies' workers), and ru_maxrss after a
vfork+exec starts at the parent's peak (this bench's, on Linux); VmHWM is this process's own."""


def run_case(job: Path, args: list[str]) -> dict:
    cmd = [sys.executable, "-c", DRIVER, "ranks", str(job), "--format", "json", "--no-cache", *args]
    env = dict(os.environ, PYTHONPATH=str(ROOT), TRNTUI_CACHE_DIR=str(make_inputs.DATA / "cache"))
    load0 = os.getloadavg()[0]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - t
    load1 = os.getloadavg()[0]
    if proc.returncode != 0:
        raise SystemExit(f"case {' '.join(args)} failed:\n{proc.stderr}")
    driver_kb = cpu = None
    for line in proc.stderr.splitlines():
        if line.startswith("TRNTUI_DRIVER "):
            parts = line.split()
            driver_kb = int(parts[1])
            cpu = float(parts[2])  # the driver process alone
    doc = json.loads(proc.stdout)
    per_worker: dict[str, int] = {}
    ranks_of: dict[str, int] = {}
    for r in doc["ranks"]:
        w = r["ran_on"]["worker"]
        per_worker[w] = max(per_worker.get(w, 0), r["ran_on"]["peak_rss_bytes"] or 0)
        ranks_of[w] = ranks_of.get(w, 0) + 1
    rank_seconds = sorted(r["ran_on"]["seconds"] for r in doc["ranks"])
    rank_cpu = sorted(r["ran_on"].get("cpu_seconds") or 0.0 for r in doc["ranks"])
    return {
        "wall": wall,
        "cpu": cpu,
        "load": (load0 + load1) / 2,
        "driver_mb": driver_kb / 1024 if driver_kb else None,
        "workers": {w: (mb / 2**20, ranks_of[w]) for w, mb in per_worker.items()},
        "rank_s_median": rank_seconds[len(rank_seconds) // 2],
        "rank_cpu_median": rank_cpu[len(rank_cpu) // 2],
        "rank_cpu_total": sum(rank_cpu),
        "stragglers": doc["stragglers"],
        "doc": doc,
    }


def results(doc: dict) -> dict:
    doc = json.loads(json.dumps(doc))
    doc.pop("engine", None)
    for r in doc["ranks"]:
        r.pop("ran_on", None)
    return doc


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=64)
    p.add_argument("--repeat", type=int, default=1, help="best of N per case")
    p.add_argument("--no-write", action="store_true", help="print only; leave bench/RANKS.md alone")
    a = p.parse_args(argv)
    job = make_job(a.ranks)
    size = sum(f.stat().st_size for f in job.glob("*.json.gz"))
    rows = []
    base = None
    for title, args in CASES:
        best = None
        for _ in range(a.repeat):
            res = run_case(job, args)
            if best is None or res["wall"] < best["wall"]:
                best = res
        if base is None:
            base = best
        elif results(best["doc"]) != results(base["doc"]):
            raise SystemExit(f"{title}: the summaries differ from {CASES[0][0]}")
        rows.append((title, best))
        print(f"{title}: {best['wall']:.1f} s", file=sys.stderr)
    lines = [
        f"# `trntui ranks` bench: {a.ranks} ranks × the 68k-event corpus trace",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
        f"{time.strftime('%Y-%m-%d %H:%M')}; input {a.ranks} × {make_inputs.SEED_TRACE.name} "
        f"({size / 2**20:.0f} MB gzip in all), generated by scripts/make_rank_job.py; best of {a.repeat}. "
        "Each case is a fresh `trntui ranks DIR --format json --no-cache` process.",
        "",
        "| case | wall | vs --jobs 1 | per rank: wall / CPU (median) | Σ rank CPU | worker processes "
        "| peak RSS per worker | driver peak RSS | driver CPU | load average |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for title, r in rows:
        workers = sorted(r["workers"].values(), key=lambda x: -x[0])
        rss = ", ".join(f"{mb:.0f} MB ({n} ranks)" for mb, n in workers)
        driver = f"{r['driver_mb']:.0f} MB" if r["driver_mb"] else "-"
        cpu = f"{r['cpu']:.1f} s" if r["cpu"] is not None else "-"
        lines.append(f"| {title} | {r['wall']:.1f} s | {base['wall'] / r['wall']:.2f}x | {r['rank_s_median']:.2f} s / "
                     f"{r['rank_cpu_median']:.2f} s | {r['rank_cpu_total']:.1f} s | {len(workers)} | {rss} | {driver} | "
                     f"{cpu} | {r['load']:.1f} |")
    lines += ["", f"Stragglers found (every case): {', '.join(base['stragglers']) or 'none'} "
              f"(the generator slowed rank {slow_rank(a.ranks)}). Summaries identical across the cases. Per rank: the wall and CPU time its "
              "worker spent on it (CPU does not depend on how busy the machine was; Σ rank CPU / workers + start-up is "
              "the wall time on idle cores); driver: the trntui process itself, its peak RSS and CPU time (with --jobs 1 "
              "it does the ranks' work; a LocalCluster's scheduler runs in it); load average: the machine's 1-minute load during the case "
              f"({os.cpu_count()} CPUs: above that, other processes were taking CPU time)."]
    text = "\n".join(lines) + "\n"
    print(text)
    if not a.no_write:
        (HERE / "RANKS.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
