"""Where `trntui summary --no-cache` spends the time the floor (bench/msgspec_floor.py) does not: the profile behind
bench/RESULTS.md's issue-20 section.

    python bench/floor_profile.py                # both traces, 3 runs of each phase split
    python bench/floor_profile.py --only cpu     # one trace: cpu or 2m
    python bench/floor_profile.py --split        # also the in-process CPU split of the decode (msgspec vs columns)

Phases: each run is a fresh process (as in bench/floor_ratio.py: compiled bytecode, the bench's cache directory)
that marks wall and CPU time between the steps of the summary: imports, run discovery, the decode (the compiled
scan on threads, or msgspec), the merge of the pieces, `finish`, links, key_averages and printing; the floor's
process marks its import, read and decode. Medians of the runs.

Split (`--split`, in one process, CPU time, best of runs): msgspec over trntui's decode pieces against the floor's
decode of the whole file, then the same pieces turned into columns (`columns.part_of`, link ids only where the
trace has rows that link, as a load does).
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
sys.path.insert(0, str(HERE))

PHASES = ("imports (msgspec)", "imports (trntui, numpy-free)", "find the run", "decode (numpy's import beside it)",
          "merge pieces, finish", "links", "key_averages", "print")


def _trntui_phases(trace: str) -> dict[str, list[float]]:
    """Runs in a fresh process: (wall, CPU) seconds of each phase of `trntui summary --no-cache`."""
    marks: list[tuple[str, float, float]] = [("start", time.perf_counter(), time.process_time())]

    def mark(label: str) -> None:
        marks.append((label, time.perf_counter(), time.process_time()))

    import gc

    from trntui import cli, settings

    gc.set_threshold(cli.GC_FIRST_GENERATION, *gc.get_threshold()[1:])  # as trntui/cli.py `entry` does
    settings.hold_one_blas_thread()  # as trntui/cli.py does before a command runs (numpy comes with the load)
    import msgspec  # noqa: F401

    mark(PHASES[0])
    from trntui.session import LoadOptions, find_runs, load_run  # (no numpy: the load begins its scans first)

    mark(PHASES[1])
    from trntui.loaders.kineto import chunks  # (numpy-free; load.py takes `decode_chunked` from it when imported)

    decode_chunked = chunks.decode_chunked

    def timed_decode(*a, **k):  # type: ignore[no-untyped-def]
        out = decode_chunked(*a, **k)
        mark(PHASES[3])
        return out

    chunks.decode_chunked = timed_decode
    (run,) = find_runs(Path(trace))
    mark(PHASES[2])
    profile = load_run(run, LoadOptions.from_env(cache=False))
    mark(PHASES[4])
    from trntui.analysis.key_averages import key_averages
    from trntui.analysis.links import build_links
    from trntui.report import render

    build_links(profile)
    mark(PHASES[5])
    table = key_averages(profile)
    mark(PHASES[6])
    sort_by = "self_device_time_total" if table.has_device else "self_cpu_time_total"
    render(profile, table, "table", sort_by, 20, False, None)
    mark(PHASES[7])
    out: dict[str, list[float]] = {}
    for (_, w0, c0), (label, w1, c1) in zip(marks, marks[1:]):
        out[label] = [w1 - w0, c1 - c0]
    out["total (from the first mark)"] = [marks[-1][1] - marks[0][1], marks[-1][2] - marks[0][2]]
    return out


def _floor_types() -> dict:
    """The floor's own types (bench/msgspec_floor.py, everything before its decode line), run as it is written."""
    src = (HERE / "msgspec_floor.py").read_text()
    ns: dict = {"__name__": "msgspec_floor"}
    exec(compile(src[: src.index("d = msgspec")], "msgspec_floor.py", "exec", dont_inherit=True), ns)
    return ns


def _floor_phases(trace: str) -> dict[str, list[float]]:
    """The floor's code (bench/msgspec_floor.py), with marks: import, read, decode."""
    w0, c0 = time.perf_counter(), time.process_time()
    import msgspec

    ns = _floor_types()
    w1, c1 = time.perf_counter(), time.process_time()
    with open(trace, "rb") as f:
        data = f.read()
    w2, c2 = time.perf_counter(), time.process_time()
    msgspec.json.Decoder(ns["T"]).decode(data)
    w3, c3 = time.perf_counter(), time.process_time()
    return {"import msgspec": [w1 - w0, c1 - c0], "read": [w2 - w1, c2 - c1], "decode": [w3 - w2, c3 - c2],
            "total (from the first mark)": [w3 - w0, c3 - c0]}


def _in_child(which: str, trace: Path) -> dict[str, list[float]]:
    import floor_ratio

    env = floor_ratio._env()
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", which, str(trace)],
                          capture_output=True, text=True, env=env, cwd=str(floor_ratio.ROOT), check=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["whole process (wall)"] = [time.perf_counter() - t, 0.0]
    return out


def phases(trace: Path, runs: int) -> list[str]:
    lines = [f"\n#### Phases: `{trace.name}` ({trace.stat().st_size / 1e6:.0f} MB), median of {runs} fresh processes "
             f"(load average {os.getloadavg()[0]:.1f})\n", "| phase | wall | CPU |", "|---|---|---|"]
    for which, title in (("floor", "floor"), ("trntui", "trntui summary --no-cache")):
        results = [_in_child(which, trace) for _ in range(runs)]
        lines.append(f"| **{title}** | | |")
        for label in results[0]:
            wall = statistics.median(r[label][0] for r in results)
            cpu = statistics.median(r[label][1] for r in results)
            shown = [f"{v * 1e3:,.0f} ms" if v else "" for v in (wall, cpu)]
            lines.append(f"| {label} | {shown[0]} | {shown[1]} |")
    return lines


def split(trace: Path, runs: int) -> list[str]:
    """In-process CPU: the floor's decode, msgspec over trntui's pieces, and the pieces' columns."""
    import gc

    import msgspec

    from trntui.loaders.kineto import columns
    from trntui.loaders.kineto.pieces import _PAR_CHUNK, BOUNDARY, PIECES

    ns = _floor_types()
    floor = msgspec.json.Decoder(ns["T"])
    raw = trace.read_bytes()
    a = raw.index(b"[", raw.index(b'"traceEvents"'))
    inner = memoryview(raw)[a + 1: raw.rindex(b"]")]
    pieces = []  # ~4 MB pieces, cut from the front at candidate event boundaries (most of the two-process decode's)
    x = 0
    while x < len(inner):
        m = BOUNDARY.search(inner, x + _PAR_CHUNK) if x + _PAR_CHUNK < len(inner) else None
        pieces.append((x, len(inner) if m is None else m.start() + 1))
        x = len(inner) if m is None else m.end() - 1

    def best(fn) -> float:  # type: ignore[no-untyped-def]
        out = float("inf")
        for _ in range(runs):
            gc.collect()
            t = time.process_time()
            fn()
            out = min(out, time.process_time() - t)
        return out

    floor_s = best(lambda: floor.decode(raw))
    gc.disable()  # as the load runs (trntui/loaders/kineto/load.py `_decoding`)
    pieces_s = best(lambda: [len(PIECES.decode(inner[x:y])) for x, y in pieces])
    linking = [False]

    def with_columns() -> None:
        for x, y in pieces:
            part = columns.part_of(PIECES.decode(inner[x:y]), links=linking[0])
            linking[0] = linking[0] or part.linking

    both_s = best(with_columns)
    gc.enable()
    return [f"\n#### Decode split: `{trace.name}`, one process, CPU time, best of {runs} "
            f"(load average {os.getloadavg()[0]:.1f})\n", "| step | CPU |", "|---|---|",
            f"| floor: msgspec decode of the whole file (GC on, as the floor runs) | {floor_s:.3f} s |",
            f"| trntui: msgspec over its {len(pieces)} pieces (reused buffer, GC off) | {pieces_s:.3f} s |",
            f"| trntui: the same + the pieces' columns (`columns.part_of`) | {both_s:.3f} s |",
            f"| so the columns cost | {both_s - pieces_s:.3f} s ({(both_s - pieces_s) / pieces_s:.0%} of the msgspec "
            f"decode) |"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=("cpu", "2m"), help="one trace only")
    ap.add_argument("--runs", type=int, default=3, help="fresh processes per phase split (default 3)")
    ap.add_argument("--split", action="store_true", help="also the in-process CPU split of the decode")
    ap.add_argument("--child", nargs=2, metavar=("WHICH", "TRACE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:  # a measured process: nothing imported before the marks

        which, trace = args.child
        print(json.dumps(_floor_phases(trace) if which == "floor" else _trntui_phases(trace)), flush=True)
        if which == "trntui":  # ends as the `trntui` program does (trntui/cli.py `entry`): no interpreter teardown
            os._exit(0)
        return 0
    import floor_ratio
    import make_inputs

    lines: list[str] = []
    for key in [args.only] if args.only else list(floor_ratio.TRACES):
        trace = make_inputs.ensure(floor_ratio.TRACES[key][0])
        print(f"== phases: {trace.name}", file=sys.stderr, flush=True)
        lines += phases(trace, args.runs)
        if args.split:
            print(f"== decode split: {trace.name}", file=sys.stderr, flush=True)
            lines += split(trace, args.runs)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
