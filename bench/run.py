"""trntui benchmark suite: one command, a markdown table of times, ratios and peak RSS.

    python bench/run.py            # CPU trace (~165k events) + 2M-event trace + 2M-event Neuron profile; writes bench/RESULTS.md
    python bench/run.py --quick    # the CPU trace only, one repeat
    python bench/run.py --big      # also the 5M-event (~1 GB) trace
    python bench/run.py --no-write # print, leave bench/RESULTS.md alone
    python bench/run.py --hta      # also HTA's TraceAnalysis load of the CPU trace (optional baseline, own venv)
    python bench/run.py --hta --hta-2m  # ... and of the 2M-event trace too (several GB of RAM, minutes)
    python bench/run.py --only neuron   # just the Neuron section (prints; never writes RESULTS.md)
    python bench/run.py --only hta      # just the CPU trace's baselines + the HTA row (prints only)
    python bench/run.py --only floor    # just the ratio to the shared floor (bench/floor_ratio.py; prints only)
    python bench/run.py --floor-rounds 11  # more interleaved rounds for that table (default 7; --quick: 3)

The first table is `trntui summary --no-cache` against the shared decode floor (bench/msgspec_floor.py, vendored
verbatim), whole process each, runs interleaved, medians (bench/floor_ratio.py): the CPU trace and 2M events (the
CPU trace only with --quick).
    python bench/run.py --only overview # `trntui overview` on the 2M trace vs `summary --no-cache` (prints only)

Inputs are generated under bench/_data/ (git-ignored) by bench/make_inputs.py when missing. Every big case runs
in a fresh subprocess so its peak RSS (`wait4` rusage of that child) is its own; interactive operations
(frame render, sort, filter, chain lookup) are timed in one process on a loaded profile. The parsed-profile
cache used here lives in bench/_data/cache (never the user's).

Neuron section (default and --big runs, not --quick): `bench/_data/neuron_2m/`, a synthetic Neuron profile dir of
~2M events (framework trace.json + Explorer Parquet `SystemProfileEvents_<k>.parquet`, see make_inputs.py).
Its floor is `pyarrow.parquet.read_table` of every Parquet file + the msgspec typed decode of trace.json, in a
worker process; the cases are trntui open in-process, `trntui summary --no-cache`, and the cached summary when
trntui's cache covers the run (today it covers pure-Kineto runs only, so the row says so instead).

HTA (HolisticTraceAnalysis) is an opt-in extra baseline (`--hta`), never a dependency of trntui: it runs in its
own venv, bench/_data/hta-venv (override with HTA_PYTHON=/path/to/python), created on first use with
`python3 -m venv` + `pip install HolisticTraceAnalysis==0.5.0` (0.5.0 needs no torch; its requirements are
jupyterlab, numpy, networkx, pandas, plotly, pydot, pytest). The worker symlinks the trace as `rank-0.json` in a
temporary dir under bench/_data (HTA reads every *.json / *.json.gz of `trace_dir`; the rank comes from
`distributedInfo`, default 0) and times `TraceAnalysis(trace_dir=...)` in a fresh process (wall, peak RSS). When
HTA cannot be installed or cannot parse the trace, the row says why instead of failing the bench.
"""

from __future__ import annotations

import argparse
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
sys.path.insert(0, str(ROOT))

import make_inputs  # noqa: E402

CACHE_DIR = make_inputs.DATA / "cache"
HTA_VENV = make_inputs.DATA / "hta-venv"
HTA_VERSION = "0.5.0"


# ----------------------------------------------------------------------------------------------------
# workers (run in a fresh process: `python bench/run.py --worker CASE FILE`)
# ----------------------------------------------------------------------------------------------------
def _worker(case: str, path: str) -> dict:
    out: dict = {}
    t = time.perf_counter()
    if case == "json_load":
        import json as _json

        with open(path, "rb") as f:
            _json.load(f)
    elif case == "msgspec_typed":
        from trntui.loaders.files import read_bytes
        from trntui.loaders.kineto.schema import trace_decoder as _trace_decoder

        data, _ = read_bytes(Path(path))
        ev = _trace_decoder.decode(data).traceEvents
        out["events"] = len(ev)
    elif case == "overview_inprocess":  # load from the cache + the overview, best of 3 in this process
        os.environ["TRNTUI_CACHE_DIR"] = str(CACHE_DIR)
        from trntui.analysis.overview import overview
        from trntui.session import find_runs, load_run

        (run,) = find_runs(Path(path))
        best = {"load": float("inf"), "overview": float("inf"), "both": float("inf"), "cpu": float("inf")}
        for _ in range(3):
            c0 = time.process_time()
            t0 = time.perf_counter()
            profile = load_run(run)
            t1 = time.perf_counter()
            overview(profile).to_dict()
            t2 = time.perf_counter()
            best = {"load": min(best["load"], t1 - t0), "overview": min(best["overview"], t2 - t1),
                    "both": min(best["both"], t2 - t0), "cpu": min(best["cpu"], time.process_time() - c0)}
        out["phases"] = best
        out["cached"] = "cache_entry" in profile.cache
    elif case == "parquet_floor":  # a Neuron profile dir: every Parquet table + the framework trace.json
        import pyarrow.parquet as pq

        from trntui.loaders.files import read_bytes
        from trntui.loaders.kineto.schema import trace_decoder as _trace_decoder

        rows = kineto = 0
        for f in sorted(Path(path).rglob("*.parquet")):
            t0 = pq.read_table(f)
            if f.name.startswith("SystemProfileEvents"):
                rows += t0.num_rows
        for f in sorted(Path(path).rglob("trace.json")):
            data, _ = read_bytes(f)
            kineto += len(_trace_decoder.decode(data).traceEvents)
        out.update(events=rows + kineto, system_rows=rows, trace_events=kineto)
    elif case == "hta_load":  # runs under the HTA venv's python: stdlib + hta only
        import shutil
        import tempfile

        tmp = tempfile.mkdtemp(prefix="hta-", dir=str(Path(__file__).resolve().parent / "_data"))
        try:
            os.symlink(os.path.abspath(path), os.path.join(tmp, "rank-0.json"))
            t0 = time.perf_counter()
            from hta.trace_analysis import TraceAnalysis

            imp = time.perf_counter() - t0
            t0 = time.perf_counter()
            ta = TraceAnalysis(trace_dir=tmp)
            load = time.perf_counter() - t0
            df = ta.t.get_trace(0)
            out.update(events=len(df), phases={"import hta": imp, "TraceAnalysis load": load})
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    elif case == "trntui_open":
        import gc

        phases = {}
        t0 = time.perf_counter()
        from trntui.analysis.key_averages import key_averages
        from trntui.analysis.links import build_links
        from trntui.session import find_runs, load_run

        phases["import"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        (run,) = find_runs(Path(path))
        profile = load_run(run, cache=False)
        phases["load (read+decode+columns+sort)"] = time.perf_counter() - t0
        gc.collect()
        t0 = time.perf_counter()
        build_links(profile)
        phases["links"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        table = key_averages(profile)
        phases["key_averages"] = time.perf_counter() - t0
        out.update(phases=phases, events=len(profile), rows=len(table))
    else:
        raise SystemExit(f"unknown case {case}")
    out["seconds"] = time.perf_counter() - t
    return out


def run_worker(case: str, path: Path, env: dict | None = None, python: str | None = None) -> dict:
    """Run a worker (or a CLI command) in a fresh process; wall time and that child's peak RSS."""
    cli = case.startswith("summary") or case in ("overview_cold", "overview_first", "overview_cached")
    if case.startswith("summary"):
        cmd = [sys.executable, "-m", "trntui.cli", "summary", str(path), "--limit", "20"]
        if case in ("summary_cold", "summary_streamed"):
            cmd.append("--no-cache")
    elif cli:
        cmd = [sys.executable, "-m", "trntui.cli", "overview", str(path)]
        if case == "overview_cold":
            cmd.append("--no-cache")
    else:
        cmd = [python or sys.executable, str(Path(__file__).resolve()), "--worker", case, str(path)]
    if case in ("summary_first", "overview_first"):  # a cache miss that writes the entry: a first command's cost
        import shutil

        os.environ["TRNTUI_CACHE_DIR"] = str(CACHE_DIR)
        from trntui.cache import entry_dir
        from trntui.session import find_runs

        for run in find_runs(path):  # the entry is keyed by every input file of the run (Neuron: the export too)
            shutil.rmtree(entry_dir(run.inputs or [path], CACHE_DIR), ignore_errors=True)
    # Peak RSS comes from /usr/bin/time, which runs the command as its own (small) child: a child forked from
    # this big bench process inherits this process's high-water mark in wait4's ru_maxrss, even after exec.
    timer = Path("/usr/bin/time")
    if timer.exists():
        cmd = [str(timer), "-f", "BENCH_MAXRSS_KB=%M", *cmd]
    full_env = dict(os.environ, TRNTUI_CACHE_DIR=str(CACHE_DIR), PYTHONPATH=str(ROOT))
    full_env.update(env or {})
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env, cwd=str(ROOT))
    out_b, err_b = b"", b""
    # read pipes fully, then reap with wait4 for this child's own rusage
    out_b, err_b = proc.stdout.read(), proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"{case} failed ({proc.returncode}): {err_b.decode(errors='replace')[-2000:]}")
    res = {"wall": wall, "maxrss_mb": usage.ru_maxrss / 1024, "cpu": usage.ru_utime + usage.ru_stime}
    marks = [ln for ln in err_b.decode(errors="replace").splitlines() if ln.startswith("BENCH_MAXRSS_KB=")]
    if marks:
        res["maxrss_mb"] = int(marks[-1].split("=", 1)[1]) / 1024
    if not cli:
        res.update(json.loads(out_b.decode().strip().splitlines()[-1]))
    if case == "summary_streamed" and b"streamed to stay within the memory budget" not in out_b:
        raise RuntimeError("summary_streamed: the load was not streamed")
    return res


# ----------------------------------------------------------------------------------------------------
# interactive operations on a loaded profile (this process)
# ----------------------------------------------------------------------------------------------------
def _best(fn, repeat: int = 5, number: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t) / number)
    return best


def interactive(path: Path, quick: bool) -> dict:
    import numpy as np

    os.environ["TRNTUI_CACHE_DIR"] = str(CACHE_DIR)
    from trntui.analysis.key_averages import OpTable, key_averages, select_rows
    from trntui.session import find_runs, load_run

    (run,) = find_runs(path)
    profile = load_run(run)  # cached when the summary cases ran first
    table = key_averages(profile)
    res: dict = {"events": len(profile)}
    rep = 3 if quick else 7

    # --- timeline frame, model side: 30 lanes x 200 columns, per-lane lane_window + per-cell busy fraction
    t = time.perf_counter()
    profile._lane_index()
    profile.lane_starts()
    res["lane index build (once)"] = time.perf_counter() - t
    counts = np.bincount(profile.lane, minlength=len(profile.lanes))
    lanes = [int(k) for k in np.argsort(-counts)[:30]]
    t0, t1 = profile.span
    cols = 200
    frames = {}
    for label, width in (("full span", t1 - t0), ("1/100 span", (t1 - t0) // 100),
                         ("1/10k span", (t1 - t0) // 10_000), ("~1 us", 1_000 * cols // 200)):
        center = t0 + (t1 - t0) // 2
        a = center - width // 2
        b = a + max(width, cols)
        edges = a + (np.arange(cols + 1, dtype=np.int64) * (b - a)) // cols

        def frame(a=a, b=b, edges=edges):
            out = []
            for lane in lanes:
                idx = profile.lane_window(lane, a, b)
                if len(idx) == 0:
                    out.append(np.zeros(cols))
                    continue
                # busy ns before x: sum of clip(x - s, 0, e - s) = #starts<x * x - sum(starts<x) - (same for ends)
                s = profile.start[idx]  # sorted by start (lane order)
                e = np.sort(profile.end[idx])
                cs = np.concatenate([[0], np.cumsum(s)])
                ce = np.concatenate([[0], np.cumsum(e)])
                k_s = np.searchsorted(s, edges, side="left")
                k_e = np.searchsorted(e, edges, side="left")
                f = (k_s * edges - cs[k_s]) - (k_e * edges - ce[k_e])
                out.append(np.minimum(np.diff(f) / np.maximum(np.diff(edges), 1), 1.0))
            return out

        frames[label] = _best(frame, rep)
    res["frame (lane_window + busy fraction, 30 lanes x 200 cols)"] = frames

    # --- the TUI's own row renderer, if present: build_rows (once) + row_cells per visible row
    try:
        from trntui.analysis.timeline import build_rows, cell_bounds, row_cells

        t = time.perf_counter()
        rows = build_rows(profile, 4)
        res["timeline rows build (once, nesting + unions)"] = time.perf_counter() - t
        rows30 = sorted(rows, key=lambda r: -len(r.events))[:30]
        tui = {}
        for label, width in (("full span", t1 - t0), ("1/100 span", (t1 - t0) // 100), ("1/10k span", (t1 - t0) // 10_000)):
            a = t0 + (t1 - t0) // 2 - width // 2
            npc = max(width, cols) / cols

            def frame_tui(a=a, npc=npc):
                bounds = cell_bounds(a, npc, cols)
                for r in rows30:
                    row_cells(r, a, npc, cols, None, bounds)

            tui[label] = _best(frame_tui, rep)
        res["frame (analysis.timeline.row_cells, 30 rows x 200 cols)"] = tui
        widget = _widget_frame(profile, rep)
        if widget:
            res["frame (tui Timeline.render_line, 30 rows x 200 cols)"] = widget
    except ImportError:
        pass

    # --- ops table: sort and filter on 10k rows (the real table tiled to 10k rows)
    reps = max(1, -(-10_000 // max(len(table), 1)))
    big = OpTable(
        name=(table.name * reps)[:10_000],
        device_type=(table.device_type * reps)[:10_000],
        is_user_annotation=np.tile(table.is_user_annotation, reps)[:10_000],
        input_shapes=(table.input_shapes * reps)[:10_000],
        count=np.tile(table.count, reps)[:10_000],
        self_cpu_time_total=np.tile(table.self_cpu_time_total, reps)[:10_000],
        cpu_time_total=np.tile(table.cpu_time_total, reps)[:10_000],
        self_device_time_total=np.tile(table.self_device_time_total, reps)[:10_000],
        device_time_total=np.tile(table.device_time_total, reps)[:10_000],
        backend=table.backend,
        sum_self_cpu=table.sum_self_cpu,
    )
    res["sort 10k rows (OpTable.order)"] = {
        k: _best(lambda k=k: big.order(k), rep) for k in ("self_cpu_time_total", "count", "name")
    }
    res["filter 10k rows (select_rows regex)"] = _best(lambda: select_rows(big, "conv|mm"), rep)

    # --- chain lookup
    try:
        from trntui.analysis.chains import follow

        rng = np.random.default_rng(0)
        picks = rng.choice(len(profile), size=min(200, len(profile)), replace=False)
        t = time.perf_counter()
        follow(profile, int(picks[0]))
        res["chain: first follow (builds links/indexes)"] = time.perf_counter() - t
        t = time.perf_counter()
        for i in picks[1:].tolist():
            follow(profile, i)
        res["chain: follow per event (mean of 199)"] = (time.perf_counter() - t) / max(len(picks) - 1, 1)
    except ImportError:
        pass
    return res


def _widget_frame(profile, rep: int) -> dict | None:
    """Time `Timeline.render_line` for 30 rows inside a headless Textual app (None if that is not possible)."""
    try:
        import asyncio

        from textual.app import App

        from trntui.tui.widgets.timeline import Timeline
    except Exception:  # noqa: BLE001 - the widget is optional here
        return None
    result: dict = {}

    class _Bench(App):
        def compose(self):
            yield Timeline(id="tl")

    async def go() -> None:
        app = _Bench()
        async with app.run_test(size=(200 + 40, 34)) as pilot:
            tl = app.query_one(Timeline)
            tl.set_profile(profile)
            await pilot.pause()
            span = tl.ns_per_cell
            for label, factor in (("fit", 1.0), ("x100", 0.01), ("x10k", 0.0001)):
                tl.set_window(tl.t0, span * factor)

                def frame():
                    tl._cache.clear()
                    for y in range(2, 32):
                        tl.render_line(y)

                result[label] = _best(frame, rep)

    try:
        asyncio.run(go())
    except Exception as exc:  # noqa: BLE001
        result["error"] = f"{type(exc).__name__}: {exc}"
    return result


# ----------------------------------------------------------------------------------------------------
# HTA (optional baseline, its own venv)
# ----------------------------------------------------------------------------------------------------
def hta_python() -> tuple[str | None, str]:
    """The python of a venv where `import hta` works (created on first use), or (None, why not)."""
    py = os.environ.get("HTA_PYTHON") or str(HTA_VENV / "bin" / "python")
    probe = [py, "-c", "import hta.trace_analysis, importlib.metadata as m; print(m.version('HolisticTraceAnalysis'))"]

    def works() -> str | None:
        try:
            r = subprocess.run(probe, capture_output=True, text=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return r.stdout.strip() if r.returncode == 0 else None

    v = works()
    if v:
        return py, v
    if os.environ.get("HTA_PYTHON"):
        return None, f"HTA_PYTHON={py} cannot import hta"
    print(f"   creating {HTA_VENV} (HolisticTraceAnalysis=={HTA_VERSION}; no torch needed) ...", file=sys.stderr, flush=True)
    try:
        subprocess.run(["python3", "-m", "venv", str(HTA_VENV)], check=True, capture_output=True, timeout=300)
        r = subprocess.run([str(HTA_VENV / "bin" / "pip"), "install", "-q", f"HolisticTraceAnalysis=={HTA_VERSION}"],
                           capture_output=True, text=True, timeout=1200, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"could not create the HTA venv ({type(exc).__name__}: {exc})"
    if r.returncode != 0:
        return None, "pip install HolisticTraceAnalysis failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]
    v = works()
    return (py, v) if v else (None, "HTA installed but `import hta.trace_analysis` fails")


def hta_case(path: Path, res: dict, notes: list[str], label: str) -> None:
    """Add res["hta_load"] (a measurement, or {"error": why}); never raises."""
    py, version = hta_python()
    if py is None:
        res["hta_load"] = {"error": version}
        return
    print(f"   hta_load (HTA {version}) ...", file=sys.stderr, flush=True)
    try:
        r = run_worker("hta_load", path, python=py)
    except Exception as exc:  # noqa: BLE001 - an optional baseline never fails the bench
        msg = str(exc).strip().splitlines()
        res["hta_load"] = {"error": f"HTA {version} could not load it: " + (msg[-1] if msg else type(exc).__name__)}
        return
    r["version"] = version
    res["hta_load"] = r
    print(f"   hta_load: {r['wall']:.2f} s wall, {r['maxrss_mb']:.0f} MB", file=sys.stderr, flush=True)
    ph = r.get("phases", {})
    notes.append(f"{label}: HTA {version} (own venv, {HTA_VENV.relative_to(ROOT)}): "
                 + ", ".join(f"{k} {fmt_s(v)}" for k, v in ph.items()) + f"; {r.get('events', 0):,} rows in its DataFrame")


# ----------------------------------------------------------------------------------------------------
# report
# ----------------------------------------------------------------------------------------------------
def machine() -> str:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(next(line for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")).split()[1])
        mem = f"{kb / 2**20:.0f} GiB RAM"
    except (OSError, StopIteration, ValueError):
        pass
    import msgspec
    import numpy

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{os.cpu_count()} CPUs ({cpu}), {mem}, {platform.system()} {platform.release()}, "
        f"CPython {platform.python_version()}, numpy {numpy.__version__}, msgspec {msgspec.__version__}; "
        f"load average at start {load:.1f}"
    )


def fmt_s(x: float) -> str:
    if x >= 1:
        return f"{x:.2f} s"
    if x >= 1e-3:
        return f"{x * 1e3:.1f} ms"
    return f"{x * 1e6:.0f} µs"


ALL_CASES = ("json_load", "msgspec_typed", "trntui_open", "summary_cold", "summary_first", "summary_cached",
             "summary_streamed")


def bench_file(path: Path, label: str, quick: bool, lines: list[str], notes: list[str], targets: dict,
               hta: bool = False, cases: tuple[str, ...] = ALL_CASES) -> dict:
    size_mb = path.stat().st_size / 1e6
    print(f"== {label}: {path.name} ({size_mb:.0f} MB)", file=sys.stderr, flush=True)
    res: dict = {}
    reps = 1 if quick else 3 if size_mb < 200 else 1  # small inputs: best of 3 per case (as timeit does), for the ratios
    for case in cases:
        if case == "json_load" and size_mb > 600:
            continue  # stdlib json on 1 GB: minutes and ~10 GB; not informative
        env = None
        if case == "summary_streamed":  # a budget under an in-memory load's need, 10% over the streamed estimate
            from trntui import memory

            events_all = res["msgspec_typed"].get("events_all") or res["msgspec_typed"].get("events", 0)
            need = memory.STREAMED_FIXED_BYTES + events_all * memory.STREAMED_BYTES_PER_EVENT
            budget = min(int(need * 1.1), int(path.stat().st_size * memory.FULL_LOAD_FACTOR) - 1)
            env = {"TRNTUI_MEMORY_BUDGET": str(budget)}
            res["streamed_budget_mb"] = budget / 2**20
        r = min((run_worker(case, path, env) for _ in range(reps)), key=lambda x: x["wall"])
        res[case] = r
        print(f"   {case}: {r['wall']:.2f} s wall, {r['maxrss_mb']:.0f} MB", file=sys.stderr, flush=True)
    if hta:
        hta_case(path, res, notes, label)
    base_json = res.get("json_load", {}).get("wall")
    base_ms = res["msgspec_typed"]["wall"]
    events = res["msgspec_typed"].get("events", 0)
    lines.append(f"\n### {label}: `{path.name}`, {size_mb:.0f} MB, {events:,} events\n")
    lines.append("| case | wall | CPU | × json.load (wall) | × msgspec typed (wall) | × msgspec typed (CPU) | peak RSS "
                 "| RSS / JSON size | target |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for case, title in (
        ("json_load", "`json.load` (stdlib)"),
        ("msgspec_typed", "msgspec typed decode (`args: Raw`), the floor"),
        ("trntui_open", "trntui open: load + links + key_averages (in-process)"),
        ("summary_cold", "`trntui summary --no-cache` (whole process)"),
        ("summary_first", "`trntui summary`, first run: parse + write cache (whole process)"),
        ("summary_cached", "`trntui summary`, cached (whole process)"),
        ("summary_streamed", f"`trntui summary --no-cache`, streamed under a {res.get('streamed_budget_mb', 0):,.0f} MiB "
                             "budget (whole process)"),
        ("hta_load", "HTA `TraceAnalysis(trace_dir=...)` load (optional baseline, own venv, whole process)"),
    ):
        r = res.get(case)
        if r is None:
            continue
        if "error" in r:
            lines.append(f"| {title}: not measured ({r['error']}) | n/a | n/a | n/a | n/a | n/a | n/a | n/a | |")
            continue
        wall = r["wall"]
        xj = f"{wall / base_json:.2f}×" if base_json else "n/a"
        xm = f"{wall / base_ms:.2f}×"
        xmc = f"{r['cpu'] / res['msgspec_typed']['cpu']:.2f}×"
        rss = r["maxrss_mb"]
        lines.append(
            f"| {title} | {fmt_s(wall)} | {fmt_s(r['cpu'])} | {xj} | {xm} | {xmc} | {rss:,.0f} MB | {rss / size_mb:.2f}× | "
            f"{targets.get(case, '')} |"
        )
    ph = res.get("trntui_open", {}).get("phases", {})
    if ph:
        notes.append(f"{label}: trntui open phases: " + ", ".join(f"{k} {fmt_s(v)}" for k, v in ph.items()))
    return res


def bench_neuron(path: Path, label: str, lines: list[str], notes: list[str]) -> dict:
    """The Neuron profile dir: pyarrow + msgspec floor, trntui open in-process, summary (no cache / cached)."""
    size_mb = make_inputs.dir_size(path) / 1e6
    pq_mb = sum(f.stat().st_size for f in path.rglob("*.parquet")) / 1e6
    print(f"== {label}: {path.name}/ ({size_mb:.0f} MB)", file=sys.stderr, flush=True)
    res: dict = {}
    os.environ["TRNTUI_CACHE_DIR"] = str(CACHE_DIR)
    from trntui import cache, settings
    from trntui.session import find_runs

    (run,) = find_runs(path)
    cases = ["parquet_floor", "trntui_open", "summary_cold"]
    if cache.cacheable(run.inputs or [], settings.cache_min_bytes()):
        cases += ["summary_first", "summary_cached"]
    for case in cases:
        r = run_worker(case, path)  # one repeat: each trntui case takes tens of seconds on 2 cores
        res[case] = r
        print(f"   {case}: {r['wall']:.2f} s wall, {r['maxrss_mb']:.0f} MB", file=sys.stderr, flush=True)
    base = res["parquet_floor"]
    lines.append(f"\n### {label}: `{path.name}/`, {size_mb:.0f} MB ({pq_mb:.0f} MB Parquet + "
                 f"{size_mb - pq_mb:.0f} MB trace.json), {base.get('events', 0):,} events "
                 f"({base.get('system_rows', 0):,} system-trace rows + {base.get('trace_events', 0):,} trace.json events)\n")
    lines.append("| case | wall | CPU | × floor (wall) | × floor (CPU) | peak RSS | RSS / input size | target |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for case, title in (
        ("parquet_floor", "`pyarrow.parquet.read_table` of every table + msgspec typed decode of trace.json, the floor"),
        ("trntui_open", "trntui open: load + links + key_averages (in-process)"),
        ("summary_cold", "`trntui summary --no-cache` (whole process)"),
        ("summary_first", "`trntui summary`, first run: parse + write cache (whole process)"),
        ("summary_cached", "`trntui summary`, cached (whole process)"),
    ):
        r = res.get(case)
        if r is None:
            continue
        rss = r["maxrss_mb"]
        lines.append(f"| {title} | {fmt_s(r['wall'])} | {fmt_s(r['cpu'])} | {r['wall'] / base['wall']:.2f}× | "
                     f"{r['cpu'] / base['cpu']:.2f}× | {rss:,.0f} MB | {rss / size_mb:.2f}× | |")
    if "summary_cached" not in res:
        lines.append("| `trntui summary`, cached: not measured (trntui's parsed-profile cache covers pure-Kineto runs "
                     "only, `trntui.cache.cacheable`; a Neuron run is parsed every time) | n/a | n/a | n/a | n/a | n/a | n/a | |")
    ph = res["trntui_open"].get("phases", {})
    if ph:
        notes.append(f"{label}: trntui open phases: " + ", ".join(f"{k} {fmt_s(v)}" for k, v in ph.items()))
    notes.append(f"{label}: SYNTHETIC (bench/make_inputs.py make_neuron): the 'naive' step of "
                 "scripts/make_neuron_samples.py replicated with fresh ids; it measures trntui's reading of the "
                 "documented schema at scale, not a real capture")
    return res


def bench_overview(path: Path, label: str, lines: list[str], notes: list[str], quick: bool = False) -> dict:
    """`trntui overview` on the big trace against `trntui summary --no-cache` measured in the same run: cold
    (no cache) ≤ 1.2× the summary; from the cache ≤ 1 s. Cold cases alternate (summary, overview, ...) and the
    best of each counts, so a busy moment on a shared machine does not decide the ratio."""
    size_mb = path.stat().st_size / 1e6
    print(f"== overview: {label}: {path.name} ({size_mb:.0f} MB)", file=sys.stderr, flush=True)
    res: dict = {}
    reps = 1 if quick else 2
    for _ in range(reps):
        for case in ("summary_cold", "overview_cold"):
            r = run_worker(case, path)
            if case not in res or r["wall"] < res[case]["wall"]:
                res[case] = r
            print(f"   {case}: {r['wall']:.2f} s wall, {r['maxrss_mb']:.0f} MB", file=sys.stderr, flush=True)
    res["overview_first"] = run_worker("overview_first", path)
    res["overview_cached"] = min((run_worker("overview_cached", path) for _ in range(1 if quick else 3)),
                                 key=lambda x: x["wall"])
    res["overview_inprocess"] = run_worker("overview_inprocess", path)
    for case in ("overview_first", "overview_cached", "overview_inprocess"):
        print(f"   {case}: {res[case]['wall']:.2f} s wall", file=sys.stderr, flush=True)
    base = res["summary_cold"]["wall"]
    lines.append(f"\n### Overview: `{path.name}`, {size_mb:.0f} MB (load average {os.getloadavg()[0]:.1f} on "
                 f"{os.cpu_count()} CPUs: on a loaded machine wall times stretch, compare the CPU column)\n")
    lines.append("| case | wall | CPU | × `summary --no-cache` (wall) | peak RSS | target |")
    lines.append("|---|---|---|---|---|---|")
    for case, title, target in (
        ("summary_cold", "`trntui summary --no-cache` (whole process), the baseline", ""),
        ("overview_cold", "`trntui overview --no-cache` (whole process)", "≤ 1.2×"),
        ("overview_first", "`trntui overview`, first run: parse + write cache + kernel args (whole process)", ""),
        ("overview_cached", "`trntui overview`, cached (whole process)", "≤ 1.0 s"),
    ):
        r = res[case]
        lines.append(f"| {title} | {fmt_s(r['wall'])} | {fmt_s(r['cpu'])} | {r['wall'] / base:.2f}× | "
                     f"{r['maxrss_mb']:,.0f} MB | {target} |")
    ph = res["overview_inprocess"].get("phases", {})
    if ph:
        lines.append(f"| in-process: cached load {fmt_s(ph['load'])} + overview {fmt_s(ph['overview'])} (best of 3) | "
                     f"{fmt_s(ph['both'])} | {fmt_s(ph['cpu'])} | {ph['both'] / base:.2f}× | | ≤ 1.0 s |")
        if not res["overview_inprocess"].get("cached"):
            notes.append("overview in-process: the profile did not come from the cache")
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="CPU trace only, fewer repeats")
    ap.add_argument("--big", action="store_true", help="also the 5M-event (~1 GB) trace")
    ap.add_argument("--no-write", action="store_true", help="do not write bench/RESULTS.md")
    ap.add_argument("--hta", action="store_true", help="also time HTA's TraceAnalysis load of the CPU trace (own venv)")
    ap.add_argument("--hta-2m", action="store_true", help="with --hta: also HTA on the 2M-event trace (GBs, minutes)")
    ap.add_argument("--only", choices=("neuron", "hta", "overview", "floor"),
                    help="run just that section and print it (no RESULTS.md)")
    ap.add_argument("--floor-rounds", type=int, default=None, help="interleaved rounds of the floor table (default 7)")
    ap.add_argument("--worker", nargs=2, metavar=("CASE", "FILE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(_worker(*args.worker)))
        return 0

    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    mach = machine()
    if args.only:
        args.no_write = True
        args.hta = args.hta or args.only == "hta"
    cpu_trace = make_inputs.ensure("cpu")
    files = [(cpu_trace, "CPU trace (4-layer TransformerEncoder, 400 steps, record_shapes)")]
    if not args.quick:
        files.append((make_inputs.ensure("2m"), "2M events (HTA ns trace replicated)"))
    if args.big:
        files.append((make_inputs.ensure("5m"), "5M events (HTA ns trace replicated)"))
    neuron = None
    if args.only == "neuron" or (not args.quick and not args.only):
        neuron = make_inputs.ensure("neuron")
    if args.only in ("neuron", "overview", "floor"):
        files = []
    elif args.only == "hta":
        files = files[:2] if args.hta_2m else files[:1]
    lines = [f"# trntui benchmarks\n\n{started}; machine: {mach}.\n", "Command: `python bench/run.py"
             + (" --quick" if args.quick else "") + (" --big" if args.big else "")
             + (f" --only {args.only}" if args.only else "") + (" --hta" if args.hta and args.only != "hta" else "")
             + (" --hta-2m" if args.hta_2m else "") + "`.\n"]
    notes: list[str] = []
    inter: dict = {}
    if args.only in (None, "floor"):
        import floor_ratio

        rounds = args.floor_rounds or (3 if args.quick else 7)
        lines.append("\n### `trntui summary --no-cache` / the shared decode floor (whole process each, interleaved, "
                     "medians)\n")
        lines.append("The floor is `bench/msgspec_floor.py`, vendored verbatim from the project's shared bench (a typed "
                     "msgspec decode of every event, args kept raw). Target (issue 20): ≤ 1.2× on both traces, peak "
                     "RSS ≤ 2× the JSON size.\n")
        lines.extend(floor_ratio.run(["cpu"] if args.quick else ["cpu", "2m"], rounds))
    for path, label in files:
        big = path.stat().st_size > 100e6
        targets = {
            "summary_cold": "≤ 6 s, RSS ≤ 3× JSON" if big else "< 1.5 s; ≤ 1.5× msgspec typed",
            "summary_cached": "≤ 1.0 s" if big else "",
        }
        hta = args.hta and (path == cpu_trace or (args.hta_2m and path.name == make_inputs.CUDA_2M.name))
        if args.only == "hta":
            bench_file(path, label, args.quick, lines, notes, targets, hta=True, cases=("json_load", "msgspec_typed"))
            continue
        bench_file(path, label, args.quick, lines, notes, targets, hta=hta)
        if path != cpu_trace:
            print(f"   interactive on {path.name} ...", file=sys.stderr, flush=True)
            inter[path.name] = interactive(path, args.quick)
    if args.only == "overview" or (not args.quick and not args.only):
        bench_overview(make_inputs.ensure("2m"), "2M events (HTA ns trace replicated)", lines, notes)
    if neuron is not None:
        bench_neuron(neuron, "Neuron profile, ~2M events (synthetic sample step replicated; Parquet export + trace.json)",
                     lines, notes)
    if args.quick and not args.only:
        inter[cpu_trace.name] = interactive(cpu_trace, args.quick)
    for name, res in inter.items():
        lines.append(f"\n### Interactive operations on `{name}` ({res['events']:,} events; best of repeats)\n")
        lines.append("| operation | time | target |")
        lines.append("|---|---|---|")
        for k, v in res.items():
            if k == "events":
                continue
            target = ""
            if k.startswith("frame"):
                target = "≤ 10 ms"
            elif k.startswith("sort"):
                target = "≤ 50 ms"
            if isinstance(v, dict):
                for sub, t in v.items():
                    lines.append(f"| {k}: {sub} | {t if isinstance(t, str) else fmt_s(t)} | {target} |")
            else:
                lines.append(f"| {k} | {fmt_s(v)} | {target} |")
    if notes:
        lines.append("\nNotes:\n")
        lines.extend(f"- {n}" for n in notes)
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        out = HERE / "RESULTS.md"
        extra = ""
        if out.exists():
            old = out.read_text()
            marker = "\n## Analysis"
            if marker in old:
                extra = old[old.index(marker):]
        out.write_text(text + extra)
        print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
