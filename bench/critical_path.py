"""Critical-path benchmark (issue 31 Must show 4): the critical path of the busiest step of the 2M-event trace.

    python bench/critical_path.py [--trace bench/_data/cuda_2m.json] [--repeat 3] [--hta PYTHON]

The trace is bench/make_inputs.py's `cuda_2m.json` (the HTA ns-resolution CUDA trace replicated to ~2M events;
`python bench/make_inputs.py --only 2m` makes it). Each round runs in a fresh process: it loads the trace
(`trntui.load(path, cache=False)`, not timed), then times everything the path needs after the load: finding the
steps, picking the busiest (most events starting in its host span; the replicated trace repeats step numbers, so
the step is taken by position, not by `--steps N`), links, the graph, the longest path, the breakdown; then the
same again (steps and links cached on the profile), and a `--what-if path=0.5x` recomputation. Medians over `--repeat` rounds. Target: <= 1 s after the load.

`--hta PYTHON`: a Python with HolisticTraceAnalysis installed (not a dependency of trntui) runs HTA's
`critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=K)` on the same step of the same file
(K: the step's index among the ProfilerStep rows) as a baseline row: TraceAnalysis load not timed, the analysis
timed. It may need minutes and GBs; a failure is reported as such.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT = HERE / "_data" / "cuda_2m.json"

CHILD = r"""
import json, sys, time
import numpy as np
import trntui
from trntui.analysis.critical_path import critical_path
from trntui.analysis.critical_path.steps import _steps
path = sys.argv[1]
t = time.perf_counter()
profile = trntui.load(path, cache=False).profile
load_s = time.perf_counter() - t


def busiest_path():
    table = _steps(profile)
    starts = np.sort(profile.start)
    counts = [int(np.searchsorted(starts, s.host_end, "right") - np.searchsorted(starts, s.host_start))
              for s in table.steps]
    k = int(np.argmax(counts))
    s = table.steps[k]
    cp = critical_path(profile, s.host_start, s.host_end, s.start, s.end, step=s.number)
    return cp, k, counts[k], len(table.steps)


t = time.perf_counter()
cp, index, n_events, n_steps = busiest_path()
first_s = time.perf_counter() - t
t = time.perf_counter()
cp2, _, _, _ = busiest_path()
again_s = time.perf_counter() - t
t = time.perf_counter()
w = cp.what_if(["path=0.5x"])
what_if_s = time.perf_counter() - t
assert cp2.length_ns == cp.length_ns
print(json.dumps({"events": len(profile), "load_s": load_s, "steps": n_steps, "step": cp.step,
                  "step_index": index, "step_events": n_events, "first_s": first_s, "again_s": again_s,
                  "what_if_s": what_if_s, "nodes": cp.graph.nodes, "edges": cp.graph.edges,
                  "path_us": cp.length_ns / 1000, "step_us": cp.span_ns / 1000, "bound_by": cp.bound_by,
                  "breakdown_pct": {k: round(v, 2) for k, v in cp.breakdown_pct().items() if v}}))
"""

HTA_CHILD = r"""
import json, logging, os, sys, time
logging.disable(logging.WARNING)
import warnings; warnings.filterwarnings("ignore")
os.environ["CRITICAL_PATH_ADD_ZERO_WEIGHT_LAUNCH_EDGE"] = "1"
from hta.trace_analysis import TraceAnalysis
d, k = sys.argv[1], int(sys.argv[2])
t = time.perf_counter()
ta = TraceAnalysis(trace_dir=d)
load_s = time.perf_counter() - t
t = time.perf_counter()
g, ok = ta.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=k)
cp_s = time.perf_counter() - t
edf = g.get_critical_path_breakdown()
tot = float(edf.duration.sum())
pct = {str(b): round(100 * float(v) / tot, 2) for b, v in edf.groupby("bound_by").duration.sum().items() if v}
print(json.dumps({"ok": bool(ok), "load_s": load_s, "cp_s": cp_s, "path_us": tot, "breakdown_pct": pct}))
"""


def run_child(code: str, argv: list[str], python: str = sys.executable, timeout: float = 1800) -> dict:
    proc = subprocess.run([python, "-c", code, *argv], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    if proc.returncode:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", type=Path, default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hta", metavar="PYTHON", help="a Python with HolisticTraceAnalysis, for the baseline row")
    a = ap.parse_args(argv)
    if not a.trace.exists():
        print(f"{a.trace} not found: python bench/make_inputs.py --only 2m", file=sys.stderr)
        return 2
    rounds = [run_child(CHILD, [str(a.trace)]) for _ in range(a.repeat)]
    r0 = rounds[0]
    med = {k: statistics.median(r[k] for r in rounds) for k in ("load_s", "first_s", "again_s", "what_if_s")}
    print(f"trace: {a.trace.name}, {r0['events']:,} events, {r0['steps']} steps; the busiest, ProfilerStep#{r0['step']} "
          f"(#{r0['step_index']} in time order; {r0['step_events']:,} events "
          f"in its host span, {r0['step_us']:,.1f} us); graph {r0['nodes']:,} nodes, {r0['edges']:,} edges")
    print(f"path {r0['path_us']:,.1f} us, bound by {r0['bound_by']}: {r0['breakdown_pct']}")
    print()
    print(f"| case (median of {a.repeat}, fresh process each) | seconds |")
    print("| --- | ---: |")
    print(f"| load (not part of the figure) | {med['load_s']:.2f} |")
    print(f"| critical path of the step, first call after the load | {med['first_s']:.3f} |")
    print(f"| the same again (steps and links cached) | {med['again_s']:.3f} |")
    print(f"| --what-if path=0.5x on it | {med['what_if_s']:.3f} |")
    if a.hta:
        with tempfile.TemporaryDirectory(prefix="trntui-hta-") as d:
            os.symlink(a.trace.resolve(), Path(d) / "rank-0.json")
            try:
                h = run_child(HTA_CHILD, [d, str(r0["step_index"])], python=a.hta)
                print(f"| HTA critical_path_analysis, same step (baseline; its load {h['load_s']:.1f} s not "
                      f"counted) | {h['cp_s']:.3f} |")
                print(f"\nHTA: path {h['path_us']:,.1f} us, {h['breakdown_pct']}")
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                print(f"| HTA critical_path_analysis (baseline) | did not complete: {str(exc)[:120]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
