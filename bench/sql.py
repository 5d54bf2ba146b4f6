"""SQL benchmark: what DuckDB over a loaded run costs (issue 30), on the 2M-event trace.

    python bench/sql.py [--trace bench/_data/cuda_2m.json] [--repeat 3] [--no-baseline]

Each case runs in a fresh process (its own peak RSS, `ru_maxrss`), `--repeat` times interleaved; the table
shows medians. The cases:

- `load`: `trntui.load(path, cache=False).profile` — the load alone (the reference for the RSS ratio);
- `load + register`: the same, then `Database` over the run (the events' zero-copy Arrow table registered in an
  in-memory DuckDB) and `SELECT count(*) FROM events` — what a first query adds to the load, in time and peak RSS;
- `group-by`: after registering, `SELECT name, count(*), sum(dur_ns) FROM events GROUP BY name ORDER BY 3 DESC`
  (and the same by `lane`), timed alone;
- `DuckDB read_json` (baseline): DuckDB's own JSON reader on the same file, unnesting `traceEvents` and grouping
  by name — what a user without trntui would run. It needs the whole file as one JSON object, so it may fail on
  memory; the row then says so.

Targets (issue 30): registering adds <= 5% to the load's peak RSS and <= 0.2 s; the group-by answers in <= 0.5 s.
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
REPO = HERE.parent
DEFAULT = HERE / "_data" / "cuda_2m.json"

GROUP_BY_NAME = "SELECT name, count(*) AS n, sum(dur_ns) AS total FROM events GROUP BY name ORDER BY total DESC"
GROUP_BY_LANE = "SELECT lane, count(*) AS n, sum(dur_ns) AS total FROM events GROUP BY lane ORDER BY total DESC"

CHILD = r"""
import json, resource, sys, time
case, path = sys.argv[1], sys.argv[2]
out = {}
if case == "baseline":
    import duckdb
    con = duckdb.connect(":memory:")
    con.execute("SET enable_progress_bar = false")
    t = time.perf_counter()
    q = ("SELECT e.name, count(*), sum(e.dur) FROM (SELECT unnest(traceEvents) AS e FROM read_json(?, "
         "maximum_object_size=2000000000, columns={'traceEvents': 'STRUCT(name VARCHAR, dur DOUBLE)[]'})) "
         "GROUP BY 1 ORDER BY 3 DESC")
    rows = con.execute(q, [path]).fetchall()
    out["query_s"] = time.perf_counter() - t
    out["rows"] = len(rows)
else:
    import trntui
    t = time.perf_counter()
    run = trntui.load(path, cache=False)
    profile = run.profile
    out["load_s"] = time.perf_counter() - t
    out["events"] = len(profile)
    rss_load = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out["rss_after_load_kb"] = rss_load
    if case in ("register", "groupby"):
        t = time.perf_counter()
        import duckdb, pyarrow  # noqa: E401,F401 - timed apart: a one-time cost per process
        out["imports_s"] = time.perf_counter() - t
        t = time.perf_counter()
        db = run.database()
        n = db.rows("SELECT count(*) FROM events")[0][0]
        out["register_s"] = time.perf_counter() - t
        assert n == len(profile), (n, len(profile))
    if case == "groupby":
        for key, q in (("groupby_name_s", sys.argv[3]), ("groupby_lane_s", sys.argv[4])):
            t = time.perf_counter()
            rows = db.rows(q)
            out[key] = time.perf_counter() - t
            out[key + "_rows"] = len(rows)
out["peak_rss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print("\nRESULT " + json.dumps(out))
"""


def run_case(case: str, path: Path) -> dict:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", CHILD, case, str(path), GROUP_BY_NAME, GROUP_BY_LANE],
                       capture_output=True, text=True, cwd=REPO)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or ["(no message)"])[-1]
        return {"failed": f"exit {p.returncode}: {tail[:200]}", "wall_s": wall}
    lines = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
    if not lines:
        tail = (p.stderr.strip().splitlines() or p.stdout.strip().splitlines() or ["(no output)"])[-1]
        return {"failed": f"no result (exit {p.returncode}): {tail[:200]}", "wall_s": wall}
    out = json.loads(lines[-1][7:])
    out["wall_s"] = wall
    return out


def med(rows: list[dict], key: str) -> float | None:
    vals = [r[key] for r in rows if key in r]
    return statistics.median(vals) if vals else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-baseline", action="store_true")
    args = ap.parse_args(argv)
    if not args.trace.is_file():
        print(f"{args.trace}: not found (python bench/make_inputs.py --only 2m)", file=sys.stderr)
        return 2
    cases = ["load", "register", "groupby"] + ([] if args.no_baseline else ["baseline"])
    results: dict[str, list[dict]] = {c: [] for c in cases}
    for _ in range(args.repeat):
        for c in cases:
            r = run_case(c, args.trace)
            results[c].append(r)
            print(c, json.dumps(r), file=sys.stderr)
    size = args.trace.stat().st_size
    load_rss = med(results["load"], "peak_rss_kb")
    reg_rss = med(results["register"], "peak_rss_kb")
    events = med(results["load"], "events")
    try:
        load_avg = " load average %.2f %.2f %.2f;" % os.getloadavg()
    except OSError:  # pragma: no cover
        load_avg = ""
    print(f"### `{args.trace.name}`, {size / 1e6:,.0f} MB, {events:,.0f} timeline events (flows and metadata "
          f"are not events); medians of {args.repeat} interleaved fresh processes;{load_avg} {os.cpu_count()} CPUs\n")
    print("| case | time | peak RSS | target | holds |")
    print("|---|---|---|---|---|")
    print(f"| load (`trntui.load(path, cache=False)`) | {med(results['load'], 'load_s'):.2f} s | "
          f"{load_rss / 1024:,.0f} MB |  |  |")
    reg_s = med(results["register"], "register_s")
    imp_s = med(results["register"], "imports_s")
    extra = (reg_rss - load_rss) / load_rss
    print(f"| `import duckdb, pyarrow` (once per process, before the first query) | {imp_s:.3f} s |  |  |  |")
    print(f"| register the tables + `count(*) FROM events` (added to the load) | {reg_s:.3f} s | "
          f"{reg_rss / 1024:,.0f} MB ({extra * 100:+.1f}%) | <= 0.2 s, <= +5% RSS | "
          f"{'yes' if reg_s <= 0.2 and extra <= 0.05 else 'NO'} |")
    print(f"| the same with the imports | {reg_s + imp_s:.3f} s |  | <= 0.2 s | {'yes' if reg_s + imp_s <= 0.2 else 'NO'} |")
    for key, label in (("groupby_name_s", "GROUP BY name"), ("groupby_lane_s", "GROUP BY lane")):
        s = med(results["groupby"], key)
        print(f"| `{label}` over all events (sum of dur_ns) | {s:.3f} s |  | <= 0.5 s | {'yes' if s <= 0.5 else 'NO'} |")
    if not args.no_baseline:
        b = results["baseline"]
        ok = [r for r in b if "query_s" in r]
        if ok:
            print(f"| DuckDB `read_json` on the file, unnest + GROUP BY name (baseline, whole query) | "
                  f"{med(ok, 'query_s'):.2f} s | {med(ok, 'peak_rss_kb') / 1024:,.0f} MB |  |  |")
        else:
            print(f"| DuckDB `read_json` on the file (baseline) | failed: {b[0]['failed']} |  |  |  |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
