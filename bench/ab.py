"""A/B bench of two checkouts: the same `trntui` CLI commands as whole processes, interleaved, medians.

    python bench/ab.py --tree before=/tmp/bv-before --tree after=/tmp/bv-after --rounds 5 [--out ab.json]

Used for refactors that must not change speed (issue 16): each case runs once per tree per round, the trees'
order alternating between rounds (A B, B A, ...) so a busy moment on the shared machine lands on both sides.
Every run is a fresh `python -m trntui.cli summary FILE --limit 20 [--no-cache]` with `PYTHONPATH` at that
tree, its own cache dir (`/tmp/bv-cache-<name>` unless --cache-root) and bytecode cache (`...-pyc`), under `/usr/bin/time` for the peak
RSS; wall (perf_counter), CPU (user + sys of the child and what it waited for, from wait4) and the 1-minute
load average at its start are recorded. Cached cases are warmed once per tree first (the first run writes the
entry). Small corpus traces are cached only with `TRNTUI_CACHE_MIN_BYTES=0`, which both trees read, so the
cached corpus cases set it; their --no-cache twins show the parse. Stdout of the two trees is compared
per case (a refactor should print the same table).

The inputs: every trace in tests/data/kineto (the vendored corpus) and bench/_data's CPU trace and 2M-event
trace (bench/make_inputs.py makes them).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TIME = "/usr/bin/time"


def inputs(which: str) -> list[Path]:
    corpus = sorted(p for p in (ROOT / "tests" / "data" / "kineto").iterdir() if ".json" in p.name)
    big = [HERE / "_data" / "cpu_transformer_400steps.json", HERE / "_data" / "cuda_2m.json"]
    return {"corpus": corpus, "big": big, "all": corpus + big}[which]


def run_one(tree: Path, cache: Path, path: Path, cold: bool, small_cache: bool) -> dict:
    cmd = [TIME, "-f", "AB_MAXRSS_KB=%M", sys.executable, "-m", "trntui.cli", "summary", str(path), "--limit", "20"]
    if cold:
        cmd.append("--no-cache")
    env = dict(os.environ, PYTHONPATH=str(tree), TRNTUI_CACHE_DIR=str(cache), TRNTUI_NO_PROGRESS="1")
    env.pop("TRNTUI_MEMORY_BUDGET", None)
    # bytecode cached per tree, as an installed package has it (a PYTHONDONTWRITEBYTECODE environment would
    # otherwise make every run compile every module: more code would look slower for that alone)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(cache) + "-pyc"
    if small_cache:
        env["TRNTUI_CACHE_MIN_BYTES"] = "0"
    load = os.getloadavg()[0]
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(tree))
    out, err = proc.communicate()
    wall = time.perf_counter() - t
    # communicate() reaped it: its rusage is in RUSAGE_CHILDREN; take the difference around the run instead
    return {"wall": wall, "load": load, "rc": proc.returncode, "out": hashlib.sha1(out).hexdigest()[:12],
            "rss_mb": next((int(ln.split("=")[1]) / 1024 for ln in err.decode(errors="replace").splitlines()
                            if ln.startswith("AB_MAXRSS_KB=")), float("nan")),
            "err": err.decode(errors="replace")[-400:] if proc.returncode else ""}


def timed(tree: Path, cache: Path, path: Path, cold: bool, small_cache: bool) -> dict:
    import resource

    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = run_one(tree, cache, path, cold, small_cache)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    res["cpu"] = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", action="append", required=True, help="NAME=PATH of a checkout (two of them)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--inputs", choices=("corpus", "big", "all"), default="all")
    ap.add_argument("--modes", default="cold,cached", help="cold (--no-cache) and/or cached")
    ap.add_argument("--cache-root", default="/tmp", help="cache dirs are <root>/bv-cache-<name>")
    ap.add_argument("--out", help="write every measurement as JSON here")
    ap.add_argument("--table", metavar="JSON", help="print the table of a saved --out file and exit")
    args = ap.parse_args(argv)
    if args.table:
        data = json.loads(Path(args.table).read_text())
        names = list(data["trees"])
        seen = list(dict.fromkeys((r["file"], r["mode"]) for r in data["runs"]))
        print(table(data, names, [(Path(f), m) for f, m in seen]))
        return 0
    trees = [(n, Path(p).resolve()) for n, p in (t.split("=", 1) for t in args.tree)]
    caches = {n: Path(args.cache_root) / f"bv-cache-{n}" for n, _ in trees}
    cases = [(p, mode) for p in inputs(args.inputs) for mode in args.modes.split(",")]
    small = {p: p.stat().st_size < (8 << 20) for p, _ in cases}
    # warm: .pyc of each tree and the cache entries of the cached cases
    for name, tree in trees:
        for p, mode in cases:
            if mode == "cached":
                r = run_one(tree, caches[name], p, False, small[p])
                if r["rc"]:
                    print(f"warm {name} {p.name}: rc {r['rc']}: {r['err']}", file=sys.stderr)
        run_one(tree, caches[name], cases[0][0], True, False)
    data: dict = {"trees": {n: str(t) for n, t in trees}, "runs": []}
    for rnd in range(args.rounds):
        order = trees if rnd % 2 == 0 else trees[::-1]
        for p, mode in cases:
            for name, tree in order:
                r = timed(tree, caches[name], p, mode == "cold", small[p] and mode == "cached")
                r.update(round=rnd, tree=name, file=p.name, mode=mode)
                data["runs"].append(r)
                if r["rc"]:
                    print(f"{name} {p.name} {mode}: rc {r['rc']}: {r['err']}", file=sys.stderr)
        print(f"round {rnd + 1}/{args.rounds} done, load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(data, indent=1))
    print(table(data, [n for n, _ in trees], cases))
    return 0


def fmt(s: float) -> str:
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s"


def table(data: dict, names: list[str], cases: list[tuple[Path, str]]) -> str:
    a, b = names
    lines = [f"| trace | mode | wall {a}, median (min–max) | wall {b} | Δ wall | CPU {a} | CPU {b} | Δ CPU | peak RSS {a} | "
             f"peak RSS {b} | load avg | same output |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for p, mode in cases:
        rows = {n: [r for r in data["runs"] if r["tree"] == n and r["file"] == p.name and r["mode"] == mode]
                for n in names}
        med = {n: {k: statistics.median(r[k] for r in rows[n]) for k in ("wall", "cpu", "rss_mb")} for n in names}
        rng = {n: {k: (min(r[k] for r in rows[n]), max(r[k] for r in rows[n])) for k in ("wall", "cpu")} for n in names}

        def cell(n: str, k: str) -> str:  # median (min–max over the rounds)
            lo, hi = rng[n][k]
            return f"{fmt(med[n][k])} ({fmt(lo)}–{fmt(hi)})"

        loads = [r["load"] for n in names for r in rows[n]]
        same = len({r["out"] for n in names for r in rows[n]}) == 1
        lines.append(
            f"| `{p.name}` | {'`--no-cache`' if mode == 'cold' else 'cached'} | {cell(a, 'wall')} | "
            f"{cell(b, 'wall')} | {100 * (med[b]['wall'] / med[a]['wall'] - 1):+.0f}% | {cell(a, 'cpu')} | "
            f"{cell(b, 'cpu')} | {100 * (med[b]['cpu'] / med[a]['cpu'] - 1):+.0f}% | {med[a]['rss_mb']:,.0f} MB | "
            f"{med[b]['rss_mb']:,.0f} MB | {min(loads):.1f}–{max(loads):.1f} | {'yes' if same else 'no'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
