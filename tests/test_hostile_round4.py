"""Issue 28, what rounds three left: a converter dies with trntui even when trntui is killed outright (class 4),
and no figure the text reports print is negative, NaN or infinite on the hostile inputs the tests build
(class 8). Every input is built here or by the builders the other hostile suites use."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_neuron_convert import FULL_HELP, _raw_capture
from tests.test_processes import _env

PROC = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc")


def _stat_fields(pid: int) -> "list[str] | None":
    """The fields of /proc/PID/stat after the command name (state, ppid, pgrp, session, ...); None if gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _live(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _group_members(pgid: int) -> list[int]:
    """The live processes whose process group or session is `pgid`."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _stat_fields(int(name))
            if fields and fields[0] not in ("Z", "X") and str(pgid) in (fields[2], fields[3]):
                found.append(int(name))
    return found


def _left(pids: list[int], pgid: int, within: float) -> list[int]:
    """Which of `pids` and of the group `pgid` are still alive `within` seconds from now (polled)."""
    end = time.monotonic() + within
    while True:
        left = sorted({p for p in pids if _live(p)} | set(_group_members(pgid)))
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.05)


# ----------------------------------------------------------------------------------------------------------
# class 4: SIGKILL of trntui while a converter runs leaves no converter (nor what it started) behind
# ----------------------------------------------------------------------------------------------------------
STUCK_TOOL = """#!{python}
import os, subprocess, sys, time
if "--help" in sys.argv:
    print(os.environ["FAKE_HELP"])
    sys.exit(0)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # `sleep 600 &`
with open(os.environ["FAKE_PIDS"] + ".tmp", "w") as f:
    f.write(f"{{os.getpid()}} {{child.pid}} {{os.getpgrp()}}")
os.rename(os.environ["FAKE_PIDS"] + ".tmp", os.environ["FAKE_PIDS"])
time.sleep(600)  # converting, for a long time
"""


@PROC
@pytest.mark.parametrize("command", ["summary", "overview"])
def test_sigkill_of_trntui_while_it_converts_leaves_no_converter(command: str, tmp_path: Path) -> None:
    """`trntui summary` on a raw capture runs the (stand-in) neuron-explorer, which leaves a background child
    and converts for ten minutes; trntui is killed with SIGKILL (no handler runs): within a bounded wait neither
    the converter, nor its child, nor any process of its process group is left in the process table."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "neuron-explorer"
    exe.write_text(STUCK_TOOL.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    root = _raw_capture(tmp_path)
    pids_file = tmp_path / "pids"
    env = dict(_env(), PATH=str(bindir) + os.pathsep + os.path.dirname(sys.executable),
               TRNTUI_CACHE_DIR=str(tmp_path / "cache"), FAKE_HELP=FULL_HELP, FAKE_PIDS=str(pids_file))
    proc = subprocess.Popen([sys.executable, "-m", "trntui", command, str(root), "--convert-timeout", "600"],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    tool = child = group = None
    try:
        end = time.monotonic() + 120
        while not pids_file.exists():
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else proc.returncode
            assert time.monotonic() < end, "the converter never started"
            time.sleep(0.05)
        tool, child, group = (int(x) for x in pids_file.read_text().split())
        assert _live(tool) and _live(child) and group != proc.pid  # running, in a process group of its own
        proc.kill()
        proc.wait(timeout=30)
        left = _left([tool, child], group, within=20.0)
        assert left == [], f"alive 20 s after SIGKILL of trntui: {left}"
    finally:
        proc.kill()
        proc.wait()
        for pid in (tool, child):
            if pid is not None and _live(pid):
                os.kill(pid, signal.SIGKILL)
        if group is not None:
            try:
                os.killpg(group, signal.SIGKILL)
            except OSError:
                pass


# ----------------------------------------------------------------------------------------------------------
# the harness of the in-process CLI cases (tests/malformed/cli.py): its process-group check can fail
# ----------------------------------------------------------------------------------------------------------
@PROC
def test_the_harness_sees_a_process_left_in_a_group_it_started() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from malformed.cli import groups_left, new_process_groups

    with new_process_groups() as groups:
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
        subprocess.run([sys.executable, "-c", "pass"], check=True)  # not a group of its own: not recorded
    try:
        assert groups == [proc.pid]
        assert groups_left(groups, within=0.2) == {proc.pid: [proc.pid]}
    finally:
        proc.kill()
        proc.wait()
    assert groups_left(groups, within=5.0) == {}


# ----------------------------------------------------------------------------------------------------------
# class 8: a scan of every figure summary / overview / device / ranks print on the hostile inputs the suites
# build — none negative, NaN or infinite where the quantity cannot be; no warning; strict JSON
# ----------------------------------------------------------------------------------------------------------
BAD_FIGURE = re.compile(
    r"(?<![\w.+])-\d[\d,.]*\s?(?:[kMGTPE]i?B|B|ns|us|µs|ms|s|%|×|x|k?FLOP(?:/s|/B)?|[kMGTP]?B/s)(?!\w)"
    r"|\binf\b|\bnan\b|∞", re.IGNORECASE)
"""A figure no report may print: a negative byte count, time, share, rate or FLOPs; inf, NaN. (`(?!\\w)`, not
`\\b`, after the unit: `%` and `×` are not word characters, so `\\b` never matched after them.)"""

EXPLAINS = ("Note:", "note:", "Skipped", "Definition:", "not read:", "trntui:", "rule:", "  Peaks from:")
"""Lines that quote the input or explain a rule (`skipped ts 1e400, 'inf'`, `moved -74 us onto trace.json's
clock`): their figures are the input's or signed shifts, not report figures."""

SIGNED_DELTA = re.compile(r"(?<!\S)[+-]\d[\d,.]*%(?!\S)")
"""The ranks table's `vs median` cell: a signed difference, printed with its sign either way (`+0.0%`)."""


def bad_figures(command: str, out: str) -> list[str]:
    """The lines of `out` (a text report of `command`) that print a figure that cannot be."""
    bad = []
    for line in out.splitlines():
        if line.startswith(EXPLAINS):
            continue
        text = SIGNED_DELTA.sub("", line) if command == "ranks" else line
        if not BAD_FIGURE.search(text):
            continue
        if command == "summary" and line.split() and any(
                n.startswith("Note: negative Self CPU") and f" {line.split()[0]} (-" in n for n in out.splitlines()):
            continue  # torch's negative Self CPU, marked and explained under the table
        bad.append(line)
    return bad


SIGNED_KEYS = {"vs_median_pct", "vs_median_us", "self_cpu_percent", "self_cpu_time_total"}
"""JSON fields that may be negative: the ranks' signed difference to the median, torch's Self CPU."""


def _negative_fields(doc: object, key: str = "") -> "list[str]":
    if isinstance(doc, dict):
        return [f for k, v in doc.items() for f in _negative_fields(v, str(k))]
    if isinstance(doc, list):
        return [f for v in doc for f in _negative_fields(v, key)]
    if isinstance(doc, (int, float)) and not isinstance(doc, bool) and doc < 0 and key not in SIGNED_KEYS:
        return [f"{key}={doc}"]
    return []


def strict_json_problem(out: str) -> "str | None":
    """Why `out` is not strict JSON (a NaN or Infinity token) or holds a negative figure in a field that cannot
    be negative; None when neither."""
    def refuse(token: str) -> None:
        raise ValueError(f"{token} in the JSON")

    try:
        doc = json.loads(out, parse_constant=refuse)
    except ValueError as exc:
        return str(exc)[:200]
    negative = _negative_fields(doc)
    return f"negative figures {negative[:3]}" if negative else None


def _scan(runs: "list[tuple[str, list[str]]]", capsys) -> list[str]:
    """Run each (label, argv) in-process (tests/malformed/cli.py: hang bound, warnings recorded, no process
    left); the problems found, one line each."""
    sys.path.insert(0, str(Path(__file__).parent))
    from malformed.cli import run_cli

    failures = []
    for label, argv in runs:
        rc, out, err, caught, _ = run_cli(argv, capsys)
        command = argv[0]
        why = []
        if rc not in (0, 2):
            why.append(f"exit {rc}")
        if "Traceback" in out + err or "unexpected" in err:
            why.append(f"crash: {err.strip()[-200:]!r}")
        if caught:
            why.append(f"warnings: {caught[:3]}")
        if "--format" in argv and argv[argv.index("--format") + 1] == "json":
            if rc == 0 and (problem := strict_json_problem(out)):
                why.append(problem)
        else:
            why += [f"prints {line.strip()[:160]!r}" for line in bad_figures(command, out)[:3]]
        if why:
            failures.append(f"{label} {' '.join(argv[:-1])}: {'; '.join(why)}")
    return failures


def _step(n: int, ts: float, dur: float) -> dict:
    return {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1, "tid": 1, "ts": ts, "dur": dur}


_OP = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 20, "dur": 5}
_RUNTIME = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 21, "dur": 2,
            "args": {"correlation": 1}}
_KERNEL = {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 22, "dur": 3,
           "args": {"device": 0, "stream": 7, "correlation": 1}}
_NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"


def _mem(ts: int, allocated: int, reserved: int, nbytes: int, addr: int = 1) -> dict:
    return {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts, "s": "t",
            "args": {"Total Reserved": reserved, "Total Allocated": allocated, "Bytes": nbytes, "Addr": addr,
                     "Device Type": 1, "Device Id": 0}}


HOSTILE_KINETO = {
    # name: (events, extra top-level keys) — values a real trace never has, in the fields the reports add up
    "a step of negative duration": ([_step(1, 0, -5), _step(2, 10, 100), _OP], {}),
    "a step of 1e20 us": ([_step(1, 0, 1e20), _step(2, 10, 100), _OP], {}),
    "steps at +-9.2e15 us": ([_step(1, 9.2e15, 100), _step(2, -9.2e15, 100), _OP], {}),
    "times at the int64 edge": ([_step(1, 9223372036854775, 100), {**_OP, "ts": 9223372036854775,
                                                                   "dur": 9223372036854775}], {}),
    "a kernel of negative duration": ([_step(1, 0, 100), _OP, _RUNTIME, {**_KERNEL, "dur": -3}], {}),
    "kernel args negative": ([_step(1, 0, 100), _OP, _RUNTIME, {**_KERNEL, "args": {
        **_KERNEL["args"], "est. achieved occupancy %": -50, "blocks per SM": -1, "registers per thread": -1,
        "shared memory": -5, "grid": [-1, 0, 1], "block": [10**20, 1, 1], "warps per SM": -4}}], {}),
    "a memcpy of -1 bytes at 1e308 GB/s": ([_step(1, 0, 100), _OP, {**_RUNTIME, "name": "cudaMemcpyAsync"},
                                            {**_KERNEL, "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)",
                                             "args": {**_KERNEL["args"], "bytes": -1, "memory bandwidth (GB/s)": 1e308}}], {}),
    "memory totals negative and 2^62": ([_step(1, 0, 100), _OP, _mem(21, -7, -5, -(1 << 62)),
                                         _mem(22, 1 << 62, 1 << 62, 1 << 62), _mem(23, 1 << 62, 1 << 62, 1 << 62, 2)], {}),
    "collectives of negative and 1e18 us": ([_step(1, 0, 100), _OP, _RUNTIME, {**_KERNEL, "name": _NCCL, "dur": -30},
                                             {**_KERNEL, "name": _NCCL, "ts": 5, "dur": 1e18}], {}),
    "rank -1 of world size 0": ([_step(1, 0, 100), _OP], {"distributedInfo": {"rank": -1, "world_size": 0,
                                                                               "backend": "nccl"}}),
    "a kernel 1e12 us before its launch": ([_step(1, 1000, 100), {**_OP, "ts": 1010},
                                            {**_RUNTIME, "ts": 1011}, {**_KERNEL, "ts": -1e12}], {}),
}


def _write_traces(root: Path) -> list[tuple[str, Path]]:
    from tests.test_hostile_round3 import KINETO_CASES

    cases = {**{k: (e, x) for k, (e, x, _s, _n) in KINETO_CASES.items()}, **HOSTILE_KINETO}
    out = []
    for name, (events, extra) in cases.items():
        d = root / "".join(c if c.isalnum() else "_" for c in name)
        d.mkdir(parents=True)
        (d / "trace.json").write_text(json.dumps({"schemaVersion": 1, "traceEvents": events, **extra}))
        out.append((name, d / "trace.json"))
    return out


def _write_device_exports(root: Path) -> list[tuple[str, Path]]:
    """Device exports with the values the device suites probe one by one, and more (tests/device_exports.py)."""
    import pyarrow as pa

    from tests.device_exports import T0, TRN2_LNC2, dma, instr, two_executions, write_table

    out = []

    def case(name: str) -> Path:
        d = root / name / "i-0abc_pid_1_nc_0_session_0"
        out.append((name, d))
        return d

    big = 2**62
    write_table(case("inverted instruction"), "Instruction", [instr(5000, 1000, "vector", "X", raw_flops=10),
                                                              instr(6000, 7000, "tensor", "MATMUL", raw_flops=10)])
    write_table(case("sums past int64"), "Instruction", [
        instr(1000 * k, 1000 * k + 500, "tensor", "MATMUL", raw_flops=2**61, hbm_read_bytes=2**61,
              hbm_write_bytes=2**61) for k in range(8)])
    write_table(case("flops nan inf negative"), "Instruction", [
        instr(1000, 2000, "tensor", "MATMUL", raw_flops=v) for v in (float("nan"), float("inf"), -1.0, 1e300)]
        + [instr(3000, 4000, "vector", "X", raw_flops=5.0)], types={"raw_flops": pa.float64()})
    write_table(case("negative bytes"), "Instruction", [
        instr(1000, 2000, "tensor", "MATMUL", hbm_read_bytes=-5, hbm_write_bytes=-(2**63), raw_flops=-7),
        instr(3000, 4000, "vector", "X", raw_flops=5)])
    write_table(case("times at the int64 edges"), "Instruction", [
        dict(instr(-(2**63), 2**63 - 1, "vector", "X"), duration_ns=0),
        dict(instr(0, 2**63 - 1, "tensor", "M"), duration_ns=0), instr(1000, 2000, "vector", "X")])
    d = case("dma inverted negative and 2^62")
    write_table(d, "Instruction", [instr(1000, 2000, "vector", "X")])
    write_table(d, "DmaPacketAggregated", [dma(1000, 500, 0, -5, "[INPUT]", "[SB]"),
                                           dma(1000, 2000, 0, big, "[SB]", "[OUTPUT]"),
                                           dma(1000, 2000, 0, big, "[SB]", "[OUTPUT]"),
                                           dma(2000, 3000, 0, 100, "[INPUT]", "[SB]")])
    d = case("metadata hostile")
    write_table(d, "Instruction", [instr(1000, 2000, "tensor", "MATMUL", raw_flops=1000, hbm_read_bytes=64)])
    write_table(d, "Metadata", [dict(TRN2_LNC2, first_hw_timestamp=2**63 - 1, last_hw_timestamp=-(2**63),
                                     tensor_engine_clock_freq=float("nan"), hbm_ddr_bandwidth=-1.0,
                                     dma_ddr_bandwidth=0.0, num_physical_cores=-3, tensor_engine_num_rows=0,
                                     ticks_per_nanosec=0)])
    d = case("summary table hostile")
    write_table(d, "Instruction", [instr(1000, 2000, "tensor", "MATMUL", raw_flops=1000)])
    write_table(d, "Summary", [{"total_time": 1e300, "hbm_read_bytes": -(2**63), "mfu": float("nan"),
                                "total_instructions": float("inf")}])
    d = two_executions(root / "two executions plus", extra_instructions=[
        instr(T0 + 200, T0 + 100, "tensor", "MATMUL", 0, raw_flops=big),
        instr(T0 + 300, T0 + 400, "vector", "X", 1, hbm_read_bytes=big)])
    out.append(("two executions plus", d))
    return out


@pytest.fixture(scope="module")
def hostile_inputs(tmp_path_factory) -> dict[str, list[tuple[str, Path]]]:
    """Every hostile input the suites build, by kind: the malformed Kineto corpus (tests/malformed), the
    malformed Neuron corpus (test_bad_input_neuron), round three's and these Kineto values, device exports."""
    sys.path.insert(0, str(Path(__file__).parent))
    from malformed import build_corpus
    from test_bad_input_neuron import build_neuron_corpus

    root = tmp_path_factory.mktemp("round4")
    return {
        "kineto corpus": [(c.name, c.path) for c in build_corpus(root / "kineto")],
        "neuron corpus": [(c.name, c.path) for c in build_neuron_corpus(root / "neuron")],
        "kineto values": _write_traces(root / "values"),
        "device exports": _write_device_exports(root / "device"),
    }


def _roots(cases: "list[tuple[str, Path]]") -> list[Path]:
    """The directories `ranks --all` reads the cases from (each case's top directory under the corpus)."""
    common = Path(os.path.commonpath([str(p) for _n, p in cases]))
    return [common]


@pytest.mark.parametrize("kind", ["kineto corpus", "neuron corpus", "kineto values", "device exports"])
@pytest.mark.parametrize("command", ["summary", "overview"])
def test_no_impossible_figure_in_summary_or_overview(kind, command, hostile_inputs, capsys) -> None:
    cases = [(n, p) for n, p in hostile_inputs[kind] if n != "fifo.json"]  # (the FIFO: its own tests)
    assert cases
    runs = [(name, [command, "--no-cache", *fmt, str(path)]) for name, path in cases
            for fmt in ([], ["--format", "json"])]
    failures = _scan(runs, capsys)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("kind", ["kineto corpus", "neuron corpus", "kineto values", "device exports"])
def test_no_impossible_figure_in_ranks(kind, hostile_inputs, capsys) -> None:
    """Every case of the kind compared as one job (`ranks --all`), in this process (`--jobs 1`)."""
    (root,) = _roots(hostile_inputs[kind])
    failures = _scan([(kind, ["ranks", "--all", "--jobs", "1", "--no-cache", *fmt, str(root)])
                      for fmt in ([], ["--format", "json"])], capsys)
    assert not failures, "\n".join(failures)


def test_no_impossible_figure_in_device(hostile_inputs, capsys) -> None:
    runs = [(name, ["device", *fmt, str(path)]) for name, path in hostile_inputs["device exports"]
            for fmt in ([], ["--format", "json"])]
    failures = _scan(runs, capsys)
    assert not failures, "\n".join(failures)


def test_a_step_of_negative_duration_is_left_out_and_counted(tmp_path: Path, capsys) -> None:
    """`ProfilerStep#1` with dur -5 (read as an instant, as every event of negative duration): not a 0 us step
    that halves the average step in the overview and in ranks, but left out with a note saying why."""
    from tests.conftest import run_cli

    events, extra = HOSTILE_KINETO["a step of negative duration"]
    d = tmp_path / "job"
    for rank in (0, 1):
        (d / f"r{rank}").mkdir(parents=True)
        (d / f"r{rank}" / "trace.json").write_text(json.dumps({"schemaVersion": 1, "traceEvents": events, **extra}))
    rc, out, err = run_cli(capsys, "overview", "--no-cache", str(d / "r0" / "trace.json"))
    assert rc == 0 and err == "", err
    assert "Overview · CPU · 1 step · average step 100.0 us" in out, out
    assert ("Note: 1 ProfilerStep#N span of no duration left out of the steps (a negative duration in the trace, "
            "read as an instant)") in out
    rc, out, err = run_cli(capsys, "overview", "--no-cache", "--format", "json", str(d / "r0" / "trace.json"))
    doc = json.loads(out)
    assert rc == 0 and [s["step"] for s in doc["steps"]] == [2], doc["steps"]
    assert any(n.startswith("1 ProfilerStep#N span of no duration left out") for n in doc["notes"]), doc["notes"]
    rc, out, err = run_cli(capsys, "ranks", "--all", "--jobs", "1", "--no-cache", "--format", "json", str(d))
    doc = json.loads(out)
    assert rc == 0 and [r["steps"] for r in doc["ranks"]] == [1, 1] and doc["ranks"][0]["step_mean_us"] == 100.0
    assert "1 events with negative duration shown as instants" in doc["ranks"][0]["notes"]


def test_the_overview_says_what_the_load_skipped_and_read_as_instants(tmp_path: Path, capsys) -> None:
    """A collective kernel of -30 us (read as an instant: 0.0 us in the kernel table) and one of 1e18 us (out of
    range: skipped): the overview's figures come without them, and it says so under them, as summary does."""
    from tests.conftest import run_cli

    events, extra = HOSTILE_KINETO["collectives of negative and 1e18 us"]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events, **extra}))
    rc, out, err = run_cli(capsys, "overview", "--no-cache", "--wide", str(path))
    assert rc == 0 and err == "", err
    tail = out.rstrip("\n").splitlines()[-2:]
    assert tail == ["Skipped 1 input record(s): 1 events with non-finite or out-of-range timestamps",
                    "Note: 1 events with negative duration shown as instants"], tail
    rc, out, err = run_cli(capsys, "overview", "--no-cache", "--format", "json", str(path))
    doc = json.loads(out)
    assert doc["input_skipped"] == {"events with non-finite or out-of-range timestamps": 1}
    assert doc["input_notes"] == ["1 events with negative duration shown as instants"]


@pytest.mark.parametrize("code, rc", [
    ("import sys; sys.exit(3)", 3),
    ("print('converted')", 0),
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", -signal.SIGKILL),  # the OOM killer
    ("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", -signal.SIGSEGV),
])
def test_the_guard_ends_as_the_converter_did(code: str, rc: int, tmp_path: Path) -> None:
    """Under the guard a converter's exit status or death by a signal reaches trntui unchanged (the failure line
    says `exit 3` / `exit -9`, as before there was a guard); its output goes to the log."""
    from trntui.loaders.neuron import convert

    got, tail, why = convert._run([sys.executable, "-c", code], tmp_path, tmp_path / "tool.log", 60, lambda _m: None)
    assert (got, why) == (rc, "")
    assert tail == ("converted\n" if rc == 0 else "")


def test_device_rows_that_end_before_they_start_are_dropped_and_counted(tmp_path: Path, capsys) -> None:
    """An Instruction and a DMA row with end_ts < start_ts: each is skipped and said (they were dropped from the
    report without a word: an instant at the window's edge is outside it); the bytes out of range of the other
    rows are counted on the rows kept only."""
    from tests.conftest import run_cli
    from tests.device_exports import dma, instr, write_table

    d = tmp_path / "i-0abc_pid_1_nc_0_session_0"
    write_table(d, "Instruction", [instr(5000, 1000, "vector", "X", raw_flops=10),
                                   instr(6000, 7000, "tensor", "MATMUL", raw_flops=10)])
    write_table(d, "DmaPacketAggregated", [dma(6000, 5500, 0, -5, "[INPUT]", "[SB]"),
                                           dma(6000, 6500, 0, 2**62, "[SB]", "[OUTPUT]"),
                                           dma(6500, 7000, 0, 100, "[INPUT]", "[SB]")])
    rc, out, err = run_cli(capsys, "device", str(d))
    assert rc == 0 and err == "", err
    assert "Note: Instruction: 1 of 2 rows skipped (1 end_ts before start_ts)" in out
    assert "Note: DmaPacketAggregated: 1 of 3 rows skipped (1 end_ts before start_ts)" in out
    assert "Note: DmaPacketAggregated.read_bytes: 1 values not a number in range" in out  # the 2^62, not the -5
    assert "DMA: 100 B in 2 transfers" in out and bad_figures("device", out) == []
