"""`trntui summary --no-cache` against the shared decode floor (bench/msgspec_floor.py), whole process each.

    python bench/floor_ratio.py                 # both traces (CPU trace + 2M events), 7 interleaved rounds
    python bench/floor_ratio.py --rounds 11     # more rounds (medians settle on a noisy machine)
    python bench/floor_ratio.py --only cpu      # one trace: cpu, 2m or 5m
    python bench/floor_ratio.py --big           # the CPU trace, 2M and 5M events

For each trace and round the floor and trntui run back to back, their order swapped every round (so a drift in
the machine's speed hits both alike), after one untimed warm-up run of each (page cache, bytecode). Reported:
medians of wall time, the ratio of the medians and the median of the per-round ratios, CPU time (user+sys, every
process of the run, so trntui's forked decoder counts), peak RSS (`/usr/bin/time`: the largest process) and the
load average before and after, and the cost per event (median wall and CPU of trntui / events in the trace; and
net of the start-up: the median wall of `trntui summary` on a trace of 3 events, measured first, taken off). The
targets (issue 32): <= 0.8x the floor on the CPU trace and <= 0.6x on the 2M trace, peak RSS <= 1.5x the JSON size
(the 5M trace has no ratio target: its time, RSS and cost per event are reported).
Where the time above the floor goes: bench/floor_profile.py.

Both run as a user's install would: with compiled bytecode (in bench/_data/pycache; the environment's
PYTHONDONTWRITEBYTECODE would otherwise make every trntui run compile its modules first) and the bench's own cache
directory (unused: --no-cache).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import make_inputs  # noqa: E402

FLOOR = HERE / "msgspec_floor.py"
PYCACHE = make_inputs.DATA / "pycache"
TARGET_RATIO = {"cpu": 0.8, "2m": 0.6}
TARGET_RSS = 1.5

TRACES = {
    "cpu": ("cpu", "CPU trace (4-layer TransformerEncoder, record_shapes)"),
    "2m": ("2m", "2M events (CUDA corpus trace replicated)"),
    "5m": ("5m", "5M events (CUDA corpus trace replicated)"),
}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPYCACHEPREFIX=str(PYCACHE), PYTHONPATH=str(ROOT), TRNTUI_CACHE_DIR=str(make_inputs.DATA / "cache"))
    return env


def command(which: str, trace: Path) -> list[str]:
    if which == "floor":
        return [sys.executable, str(FLOOR), str(trace)]
    return [sys.executable, "-m", "trntui.cli", "summary", str(trace), "--no-cache", "--limit", "20"]


def run_once(cmd: list[str]) -> dict[str, float]:
    """Wall, CPU (user+sys of every process of the run) and peak RSS (MB) of one whole-process run."""
    timer = Path("/usr/bin/time")
    full = [str(timer), "-f", "BENCH_MAXRSS_KB=%M", *cmd] if timer.exists() else cmd
    t = time.perf_counter()
    proc = subprocess.Popen(full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(), cwd=str(ROOT))
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {err.decode(errors='replace')[-1500:]}")
    rss = usage.ru_maxrss / 1024
    for line in err.decode(errors="replace").splitlines():
        if line.startswith("BENCH_MAXRSS_KB="):
            rss = int(line.split("=", 1)[1]) / 1024
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": rss}


def measure(trace: Path, rounds: int, progress: bool = True) -> dict:
    """Interleaved runs of the floor and trntui on one trace; medians and ratios."""
    for which in ("floor", "trntui"):  # warm-up: page cache and bytecode, not counted
        run_once(command(which, trace))
    load_before = os.getloadavg()[0]
    runs: dict[str, list[dict[str, float]]] = {"floor": [], "trntui": []}
    for r in range(rounds):
        pair = ("floor", "trntui") if r % 2 == 0 else ("trntui", "floor")
        for which in pair:
            runs[which].append(run_once(command(which, trace)))
        if progress:
            f, t = runs["floor"][-1]["wall"], runs["trntui"][-1]["wall"]
            print(f"   round {r + 1}/{rounds}: floor {f:.3f} s, trntui {t:.3f} s ({t / f:.2f}x)", file=sys.stderr, flush=True)
    load_after = os.getloadavg()[0]
    med = {w: {k: statistics.median(x[k] for x in rs) for k in ("wall", "cpu")} for w, rs in runs.items()}
    size = trace.stat().st_size
    events = make_inputs.count_events(trace)
    return {
        "events": events,
        "us_per_event": med["trntui"]["wall"] / events * 1e6,
        "cpu_us_per_event": med["trntui"]["cpu"] / events * 1e6,
        "trace": trace,
        "size_mb": size / 1e6,
        "rounds": rounds,
        "load": (load_before, load_after),
        "floor": med["floor"],
        "trntui": med["trntui"],
        "floor_range": (min(x["wall"] for x in runs["floor"]), max(x["wall"] for x in runs["floor"])),
        "trntui_range": (min(x["wall"] for x in runs["trntui"]), max(x["wall"] for x in runs["trntui"])),
        "ratio": med["trntui"]["wall"] / med["floor"]["wall"],
        "ratio_per_round": statistics.median(t["wall"] / f["wall"] for f, t in zip(runs["floor"], runs["trntui"])),
        "cpu_ratio": med["trntui"]["cpu"] / med["floor"]["cpu"],
        "rss_mb": max(x["rss"] for x in runs["trntui"]),
        "floor_rss_mb": max(x["rss"] for x in runs["floor"]),
    }


def startup(rounds: int) -> float:
    """Median wall of `trntui summary --no-cache` on a trace of 3 events: what a run costs before its events (the
    interpreter, the imports, the table's set-up), taken off the per-event figures."""
    tiny = make_inputs.DATA / "three_events.json"
    if not tiny.exists():
        events = [{"ph": "X", "cat": "cpu_op", "name": f"aten::op{i}", "pid": 1, "tid": 1, "ts": i * 10, "dur": 5}
                  for i in range(3)]
        tiny.write_text(json.dumps({"traceEvents": events}))
    run_once(command("trntui", tiny))
    return statistics.median(run_once(command("trntui", tiny))["wall"] for _ in range(rounds))


def table(results: list[tuple[str, dict]], start: float | None = None) -> list[str]:
    lines = [
        "| trace | floor (median wall) | `trntui summary --no-cache` (median wall) | ratio of medians | median of per-round "
        "ratios | CPU: floor / trntui (ratio) | trntui peak RSS (/ JSON size) | trntui µs per event: wall, CPU "
        "| µs per event net of the start-up | load average before → after | target |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, label, r in results:
        target = TARGET_RATIO.get(key)
        rss_ok = r["rss_mb"] / r["size_mb"] <= TARGET_RSS
        if target is None:
            verdict = f"RSS ≤ {TARGET_RSS}× JSON: {'met' if rss_ok else 'NOT met'} (no ratio target)"
        else:
            ok = r["ratio"] <= target and rss_ok
            verdict = f"≤ {target}×, RSS ≤ {TARGET_RSS}× JSON: {'met' if ok else 'NOT met'}"
        lines.append(
            f"| {label}: `{r['trace'].name}`, {r['size_mb']:.0f} MB, {r['events']:,} events ({r['rounds']} rounds) "
            f"| {r['floor']['wall']:.3f} s ({r['floor_range'][0]:.3f}–{r['floor_range'][1]:.3f}) "
            f"| {r['trntui']['wall']:.3f} s ({r['trntui_range'][0]:.3f}–{r['trntui_range'][1]:.3f}) "
            f"| **{r['ratio']:.2f}×** | {r['ratio_per_round']:.2f}× "
            f"| {r['floor']['cpu']:.2f} s / {r['trntui']['cpu']:.2f} s ({r['cpu_ratio']:.2f}×) "
            f"| {r['rss_mb']:,.0f} MB ({r['rss_mb'] / r['size_mb']:.2f}×) "
            f"| {r['us_per_event']:.3f}, {r['cpu_us_per_event']:.3f} "
            f"| {(r['trntui']['wall'] - start) / r['events'] * 1e6:.3f} ({start:.3f} s off) " if start is not None else "| – "
        )
        lines[-1] += f"| {r['load'][0]:.1f} → {r['load'][1]:.1f} | {verdict} |"
    return lines


def run(which: list[str], rounds: int) -> list[str]:
    print("== start-up: trntui summary on a trace of 3 events", file=sys.stderr, flush=True)
    start = startup(rounds)
    results = []
    for key in which:
        kind, label = TRACES[key]
        trace = make_inputs.ensure(kind)
        print(f"== floor ratio: {label} ({trace.name})", file=sys.stderr, flush=True)
        results.append((key, label, measure(trace, rounds)))
    return table(results, start)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds per trace (default 7)")
    ap.add_argument("--only", choices=sorted(TRACES), help="one trace only")
    ap.add_argument("--big", action="store_true", help="also the 5M-event trace (980 MB; made on first use)")
    args = ap.parse_args(argv)
    which = [args.only] if args.only else ["cpu", "2m"] + (["5m"] if args.big else [])
    lines = run(which, args.rounds)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
