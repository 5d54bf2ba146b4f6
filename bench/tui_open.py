"""`trntui open` against `trntui summary --no-cache`, side by side (not a test): big traces must open in the app as
fast as the CLI reads them.

    python bench/tui_open.py [--trace bench/_data/cuda_2m.json] [--gz bench/_data/mtia_456k.json.gz] [--repeat 3]

1. Cold open: a fresh `trntui open` process (the app headless at 200x55) until the loaded profile is painted in
   every pane, the ops table included (the timeline, chain and call-tree panes show it earlier, while the loader
   computes the table: the mark "shown before the table"), with no cache entry for the trace (the loader process,
   forked before Textual is imported as `trntui open` does, decodes it and writes the entry; the app maps it), and
   a fresh `trntui summary --no-cache` process, alternately, `--repeat` times each; ratio of the medians (and of
   the best runs). Target: open <= 1.15x summary.
2. Re-open of a `.json.gz` trace from the cache: the app's load (its load worker from start to `ProfileLoaded`:
   mapping the entry, the key_averages record, the timeline rows kept beside it; wall and the worker thread's CPU
   time, which a busy machine does not inflate) and the whole process to first full paint. Target: load <= 0.5 s.

Inputs come from bench/make_inputs.py (`--only 2m`, `--only mtia-gz`); the cache lives in bench/_data/cache-open.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import make_inputs  # noqa: E402

CACHE = make_inputs.DATA / "cache-open"


def child(path: str, size: str) -> None:
    """In a fresh process: run the app headless, print when the loaded profile was painted (seconds after this
    process started) and how long the worker's load took."""
    started = time.perf_counter() - _process_age()
    from trntui import settings

    # as `trntui open` does (trntui/cli.py) before anything imports numpy: with OpenBLAS's worker thread started
    # this process is not single-threaded, and `prestart` would start the loader as a fresh interpreter instead
    # of forking it (the path `trntui open` takes), ~0.3 s of a core more on the decode's critical path
    settings.numpy_with_one_blas_thread()
    from trntui import cache
    from trntui.tui import loader
    from trntui.tui.loader import prestart

    marks: dict[str, float] = {}

    def at(name: str) -> None:
        marks.setdefault(name, round(time.perf_counter() - started, 3))

    real_run, real_read, real_records = loader._run_loader, cache.read_written, cache.load_records

    def run_loader(request, progress, *a, **k):  # noqa: ANN001 - marks the loader's stages as they arrive
        def stage(name: str, done: int, total: int) -> None:
            if name:  # ("": the loader is quiet, a chance to cancel)
                at(f"loader: {name.split(' ')[0]}")
            if progress is not None:
                progress(name, done, total)
        return real_run(request, stage, *a, **k)

    def read_written(d):  # noqa: ANN001
        at("profile written")
        return real_read(d)

    def load_records(*a):  # noqa: ANN002
        at("entry written")
        return real_records(*a)

    loader._run_loader, cache.read_written, cache.load_records = run_loader, read_written, load_records
    from trntui.request import resolve

    request = resolve(Path(path))  # as `trntui open` does before it imports Textual: the run found once
    prestarted = prestart(request)
    how = "none" if prestarted is None else "forked" if isinstance(prestarted.proc, loader.Forked) else "started"
    from trntui.tui.app import TrntuiApp
    from trntui.tui.messages import ProfileLoaded

    class Timed(TrntuiApp):
        painted = 0.0

        def on_profile_shown(self, message: object) -> None:  # the panes that need no table show the profile
            self.call_after_refresh(lambda: at("shown before the table"))

        def on_profile_loaded(self, message: ProfileLoaded) -> None:
            self.call_after_refresh(lambda: setattr(self, "painted", time.perf_counter() - started))

    width, height = (int(x) for x in size.split("x"))

    async def go() -> dict:
        app = Timed(path, prestarted=prestarted, request=request, runs=[request.run])
        async with app.run_test(size=(width, height)) as pilot:
            await app.workers.wait_for_complete()
            while not app.painted:
                await pilot.pause(0.01)
            assert app.profile is not None, app.load_error
            return {"painted": app.painted, "load": app.load_seconds, "load_cpu": app.load_cpu_seconds,
                    "events": len(app.profile), "marks": marks, "loader": how}

    result = asyncio.run(go())
    while True:  # reap the loader (if the app has not yet), so its CPU counts in this process tree's
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    print("RESULT " + json.dumps(result), flush=True)


def _process_age() -> float:
    """Seconds since this process started (from /proc; 0 where unknown), so imports count."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = float(Path("/proc/uptime").read_text().split()[0])
        return max(boot - ticks / os.sysconf("SC_CLK_TCK"), 0.0)
    except (OSError, ValueError, IndexError):
        return 0.0


def _env() -> dict:
    return dict(os.environ, TRNTUI_CACHE_DIR=str(CACHE), PYTHONPATH=str(ROOT), TEXTUAL_ANIMATIONS="none")


def _children_cpu() -> float:
    """User + system CPU seconds of this process's waited-for children (and theirs) so far."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def open_once(path: Path, size: str) -> dict:
    t, c = time.perf_counter(), _children_cpu()
    out = subprocess.run([sys.executable, __file__, "--child", str(path), "--size", size], capture_output=True,
                         text=True, env=_env(), cwd=str(ROOT), check=False)
    wall = time.perf_counter() - t
    cpu = _children_cpu() - c
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(f"open failed: {out.stderr[-2000:]}")
    return {**json.loads(line[7:]), "wall": wall, "cpu": cpu}


def summary_once(path: Path) -> tuple[float, float]:
    """(wall, CPU of the process tree) of one `trntui summary --no-cache`."""
    t, c = time.perf_counter(), _children_cpu()
    subprocess.run([sys.executable, "-m", "trntui.cli", "summary", str(path), "--no-cache", "--limit", "20"],
                   capture_output=True, env=_env(), cwd=str(ROOT), check=True)
    return time.perf_counter() - t, _children_cpu() - c


def clear_entry() -> None:
    shutil.rmtree(CACHE, ignore_errors=True)


def load_average() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def main(args: argparse.Namespace) -> int:
    lines = [f"load average at start: {load_average()}"]
    if args.trace.exists():
        opens, sums, open_cpu, sum_cpu, loads, marks, how = [], [], [], [], [], [], []
        for k in range(args.repeat):  # interleaved, the order swapped every round
            loads.append(load_average())
            for which in (("open", "summary") if k % 2 == 0 else ("summary", "open")):
                if which == "open":
                    clear_entry()
                    r = open_once(args.trace, args.size)
                    opens.append(r["painted"])
                    open_cpu.append(r["cpu"])
                    marks.append({**r.get("marks", {}), "painted": r["painted"]})
                    how.append(r["loader"])
                else:
                    wall, cpu = summary_once(args.trace)
                    sums.append(wall)
                    sum_cpu.append(cpu)
        med = statistics.median(opens) / statistics.median(sums)
        best = min(opens) / min(sums)
        per_round = statistics.median(o / s for o, s in zip(opens, sums))
        lines.append(f"cold open {args.trace.name} ({args.size}), first full paint: " + ", ".join(f"{x:.2f}" for x in opens)
                     + " s (CPU of the process tree " + ", ".join(f"{x:.2f}" for x in open_cpu) + " s); the loader process: "
                     + ", ".join(f"{how.count(h)}x {h}" for h in dict.fromkeys(how)) + " (trntui open forks it)")
        lines.append(f"summary --no-cache {args.trace.name}: " + ", ".join(f"{x:.2f}" for x in sums)
                     + " s (CPU " + ", ".join(f"{x:.2f}" for x in sum_cpu) + " s)")
        names = [n for n in ("loader: decoding", "loader: merging", "loader: writing", "profile written",
                             "shown before the table", "entry written", "painted")
                 if all(n in m for m in marks)]
        lines.append("open's marks (s after its start; median, min-max): " + "; ".join(
            f"{n} {statistics.median(m[n] for m in marks):.2f} ({min(m[n] for m in marks):.2f}-{max(m[n] for m in marks):.2f})"
            for n in names))
        lines.append(f"ratio open/summary: median {med:.2f}x, median of per-round ratios {per_round:.2f}x, best {best:.2f}x"
                     f" (target <= 1.15x); load average at each round: {' '.join(loads)}")
    else:
        lines.append(f"{args.trace} missing: python bench/make_inputs.py --only 2m")
    if args.gz.exists():
        clear_entry()
        first = open_once(args.gz, args.size)
        again = [open_once(args.gz, args.size) for _ in range(args.repeat)]
        lines.append(f"{args.gz.name} ({first['events']:,} events): first open {first['painted']:.2f} s (load {first['load']:.2f} s)")
        lines.append("re-open from the cache: load " + ", ".join(f"{r['load']:.2f}" for r in again)
                     + " s (CPU " + ", ".join(f"{r['load_cpu']:.2f}" for r in again) + " s); first full paint "
                     + ", ".join(f"{r['painted']:.2f}" for r in again) + " s (target: load <= 0.5 s)")
    else:
        lines.append(f"{args.gz} missing: python bench/make_inputs.py --only mtia-gz")
    lines.append(f"load average at end: {load_average()}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=make_inputs.CUDA_2M)
    parser.add_argument("--gz", type=Path, default=make_inputs.MTIA_GZ)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--size", default="200x55")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.child:
        child(ns.child, ns.size)
        sys.exit(0)
    sys.exit(main(ns))
