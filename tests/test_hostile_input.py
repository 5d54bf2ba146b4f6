"""Issue 19, items 2, 4 and 5, through the real CLI.

Item 2: bombs respect `--memory-budget`: every inflation is bounded as it goes (never by the gzip trailer), the
streamed path checks each piece before it writes it to the spill file, Neuron Parquet is budgeted from its real
decoded sizes. The bound is measured: peak RSS of a child process (`wait4`) under a 500 MB budget; a watchdog
kills the child past 1.5 GB so a regression can never take the machine's memory.
Item 4: whitespace scans are vectorised and cancellable at every piece; `trntui open` without a terminal is one
line and exit 2, not an app drawing into a pipe.
Item 5: a workload that raises a BaseException subclass, or calls sys.exit(N), ends in one line that says so
(with the exit code), never a traceback or a silent exit.
"""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from malformed import valid_trace  # noqa: E402
from malformed.bombs import (  # noqa: E402
    MiB,
    nul_bomb,
    parquet_dictionary_bomb,
    trace_bomb,
    whitespace_bomb,
)
from malformed.cli import CAPTURE_TIMEOUT_S, run_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BUDGET = "500M"
BOUND = 500 * MiB
WATCHDOG = 1536 * MiB


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _written(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/io").read_text().splitlines():
            if line.startswith("wchar:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _child(pid: int) -> int:
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return int(kids[0]) if kids else 0
    except (OSError, ValueError):
        return 0


def run_measured(*argv: str, timeout: float = 120) -> tuple[int, str, str, int, int]:
    """`trntui ARGV` in a child process: (exit code, stdout, stderr, peak RSS in bytes from wait4, bytes it
    wrote). The child is started by a small launcher (tests/malformed/measure.py: started from pytest, its
    peak would include pytest's own). A watchdog kills it if its RSS ever passes 1.5 GB (the test then fails
    on the exit code)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), TRNTUI_NO_PROGRESS="1")
    out_f, err_f = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "result"
        launcher = subprocess.Popen([sys.executable, str(Path(__file__).parent / "malformed" / "measure.py"),
                                     str(result), sys.executable, "-m", "trntui.cli", *argv],
                                    env=env, stdout=out_f, stderr=err_f)
        wrote = [0]
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                pid = _child(launcher.pid)
                if pid and _rss(pid) > WATCHDOG:
                    os.kill(pid, 9)
                    return
                if pid:
                    wrote[0] = max(wrote[0], _written(pid))
                time.sleep(0.02)

        t = threading.Thread(target=watch, daemon=True)
        t.start()
        try:
            try:
                launcher.wait(timeout)
            except subprocess.TimeoutExpired:
                pid = _child(launcher.pid)
                if pid:
                    os.kill(pid, 9)
                launcher.wait()
        finally:
            stop.set()
            t.join()
        code, peak = (int(v) for v in result.read_text().split())
    out_f.seek(0)
    err_f.seek(0)
    out, err = out_f.read().decode(), err_f.read().decode()
    out_f.close()
    err_f.close()
    return code, out, err, peak, wrote[0]


def _one_line_error(rc: int, out: str, err: str, path: Path) -> str:
    assert "Traceback" not in out + err, err
    assert rc == 2, (rc, err[-2000:])
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("trntui: error: "), err
    assert str(path) in lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def bombs(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("bombs")
    return {
        "nul": nul_bomb(d / "nul.json.gz"),  # 1.5 GiB of NUL bytes, 1.5 MB on disk
        "trace": trace_bomb(d / "lying_trailer.json.gz"),  # 600 MiB of events, trailer says 100 MiB, ~8 MB on disk
        "parquet": parquet_dictionary_bomb(d / "parquet_dictionary"),  # 2 GiB of one shared string, ~12 KB on disk
        # the whitespace .gz ("200 MB: 35 s, 1.5 GB never ends"): 1.5 GiB of whitespace after a trace
        "whitespace": whitespace_bomb(d / "whitespace.json.gz", size=1536 * MiB, gz=True, where="tail"),
    }


@pytest.mark.parametrize("name,expect", [
    ("nul", r"not a chrome trace|decompression bomb"),
    ("trace", r"over the memory budget of 500 MiB"),
    ("whitespace", r"inflates more than 200x its compressed size .*: not a trace \(a decompression bomb\?\)"),
    ("parquet", r"this Neuron export \(2,000 system-trace rows, .* of text once decoded\) needs about .* over the memory budget of 500 MiB"),
])
def test_bombs_stay_under_the_memory_budget(bombs, name, expect) -> None:
    path = bombs[name]
    rc, out, err, peak, wrote = run_measured("summary", "--no-cache", "--memory-budget", BUDGET, str(path))
    line = _one_line_error(rc, out, err, path)
    assert re.search(expect, line), line
    assert peak < BOUND, f"peak RSS {peak / MiB:.0f} MiB under a 500 MB budget"
    if name != "parquet":  # the streamed path checks before it writes the spill: never the whole stream
        assert wrote < 400 * MiB, f"wrote {wrote / MiB:.0f} MiB while inflating a bomb"


def test_nul_bomb_without_a_budget_is_still_refused_at_once(bombs) -> None:
    """`--memory-budget none`: no memory bound asked, yet a stream inflating >200x is not inflated to the end."""
    path = bombs["nul"]
    rc, out, err, peak, _ = run_measured("summary", "--no-cache", "--memory-budget", "none", str(path))
    line = _one_line_error(rc, out, err, path)
    assert "decompression bomb" in line or "not a chrome trace" in line
    assert peak < BOUND


def test_a_lying_gzip_trailer_is_never_trusted(tmp_path, monkeypatch, capsys) -> None:
    """A trailer that says 100 bytes: the in-memory inflation stops at the budget and the load is streamed
    (same table as without a budget), instead of inflating it all into memory."""
    from trntui import memory
    import trntui.loaders.kineto.chunks as K

    trace = tmp_path / "small_trailer.json.gz"
    trace.write_bytes(gzip.compress(valid_trace(n_steps=40), mtime=0))
    with open(trace, "r+b") as f:
        f.seek(-4, 2)
        f.write((100).to_bytes(4, "little"))
    rc, full, err, _, _ = run_cli(["summary", "--no-cache", "--memory-budget", "none", "--format", "csv", str(trace)], capsys)
    assert rc == 0, err
    monkeypatch.setattr(K, "_CHUNK_BYTES", 64 << 10)  # streaming scaled to a small trace
    monkeypatch.setattr(memory, "STREAMED_FIXED_BYTES", 0)
    monkeypatch.setattr(memory, "STREAMED_BYTES_PER_EVENT", 1)
    inflated = len(valid_trace(n_steps=40))
    budget = str(int(inflated * memory.FULL_LOAD_FACTOR) - 1)  # the real size does not fit in memory
    rc, out, err, _, _ = run_cli(["summary", "--no-cache", "--memory-budget", budget, str(trace)], capsys)
    assert rc == 0, err
    assert "streamed to stay within the memory budget" in out
    rc, csv_out, err, _, _ = run_cli(["summary", "--no-cache", "--memory-budget", budget, "--format", "csv", str(trace)], capsys)
    assert csv_out == full


# ------------------------------------------------------------------------------------------------------
# item 4
# ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["head", "inner", "tail"])
def test_whitespace_is_scanned_in_cancellable_pieces(tmp_path, where) -> None:
    """64 MiB of whitespace before, inside or after a trace: the load reports progress after every 1 MiB
    piece of the scan (so a cancel lands within one piece), and a cancel stops it there."""
    from trntui.progress import Cancelled
    from trntui.session import LoadOptions, find_runs, load_run

    path = whitespace_bomb(tmp_path / f"ws_{where}.json", size=64 * MiB, where=where)
    stages: list[tuple[str, int]] = []
    (run,) = find_runs(path)
    profile = load_run(run, LoadOptions(cache=False, memory_budget=None, progress=lambda s, d, t: stages.append((s, d))))
    assert len(profile) > 0
    scans = [d for s, d in stages if s == "skipping whitespace"]
    assert len(scans) >= 32, "the scan must report (and so be cancellable) at every piece"
    asked: list[int] = []

    def cancelled() -> bool:
        asked.append(1)
        return sum(1 for s, _ in stages if s == "skipping whitespace") > 3

    stages.clear()
    with pytest.raises(Cancelled):
        load_run(run, LoadOptions(cache=False, memory_budget=None, cancelled=cancelled,
                                  progress=lambda s, d, t: stages.append((s, d))))
    assert sum(1 for s, _ in stages if s == "skipping whitespace") <= 5  # stopped at the next piece


def test_whitespace_tail_loads_without_copying_the_file(tmp_path) -> None:
    """200 MB of whitespace after the document under a 500 MB budget: loads, and stays under the budget (it
    used to copy the tail twice and walk it a byte at a time in Python)."""
    path = whitespace_bomb(tmp_path / "ws_tail.json", size=200 * MiB, where="tail")
    rc, out, err, peak, _ = run_measured("summary", "--no-cache", "--memory-budget", BUDGET, str(path), timeout=60)
    assert rc == 0 and "Traceback" not in err and err == "", err
    assert "Self CPU time total:" in out
    assert peak < BOUND, f"peak RSS {peak / MiB:.0f} MiB"
    path.unlink()


@pytest.mark.parametrize("stdin,stdout", [("devnull", "devnull"), ("devnull", "pipe"), ("tty?", "pipe")])
def test_open_without_a_terminal_is_one_line(tmp_path, stdin, stdout) -> None:
    trace = tmp_path / "trace.json"
    trace.write_bytes(valid_trace())
    env = dict(os.environ, PYTHONPATH=str(REPO))
    with open(os.devnull, "rb") as dn_in, open(os.devnull, "wb") as dn_out:
        proc = subprocess.run([sys.executable, "-m", "trntui.cli", "open", str(trace)], env=env,
                              stdin=dn_in if stdin == "devnull" else subprocess.PIPE,
                              stdout=dn_out if stdout == "devnull" else subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=60)
    err = proc.stderr.decode()
    assert proc.returncode == 2
    assert err == "trntui: error: open needs a terminal on stdin and stdout (for text output use: trntui summary PATH)\n"
    assert "\x1b" not in err and not (proc.stdout or b"")


# ------------------------------------------------------------------------------------------------------
# item 5
# ------------------------------------------------------------------------------------------------------
WORKLOADS = {
    "base_exception_in_the_call": ("""
        import torch

        class Stop(BaseException):
            pass

        def step(x):
            raise Stop("not an Exception")

        def make_workload(ctx):
            return step, (torch.ones(4),)
    """, r"the workload raised Stop: not an Exception during warm-up"),
    "sys_exit_in_the_call": ("""
        import sys, torch

        def step(x):
            sys.exit(3)

        def make_workload(ctx):
            return step, (torch.ones(4),)
    """, r"the workload called sys\.exit\(3\) during warm-up \(exit code 3\)"),
    "sys_exit_with_a_message": ("""
        import sys, torch

        def step(x):
            sys.exit("giving up")

        def make_workload(ctx):
            return step, (torch.ones(4),)
    """, r"the workload called sys\.exit\('giving up'\) during warm-up \(exit code 1\)"),
    "sys_exit_in_the_factory": ("""
        import sys

        def make_workload(ctx):
            sys.exit(4)
    """, r"make_workload called sys\.exit\(4\) \(exit code 4\)"),
    "base_exception_in_the_factory": ("""
        class Stop(BaseException):
            pass

        def make_workload(ctx):
            raise Stop("factory")
    """, r"make_workload raised Stop: factory"),
    "base_exception_at_import": ("""
        class Stop(BaseException):
            pass

        raise Stop("at import")
    """, r"error while importing it: Stop: at import"),
}


@pytest.mark.parametrize("name", list(WORKLOADS))
@pytest.mark.torch  # profiles with torch
def test_profile_workload_exits_are_one_line(name, tmp_path, capsys) -> None:
    pytest.importorskip("torch")
    source, expect = WORKLOADS[name]
    f = tmp_path / "wl.py"
    f.write_text(textwrap.dedent(source))
    # the capture child imports torch: a hang bound for a loaded machine; run_cli also checks that nothing of the
    # child's process group (the workload and what it left) outlives the case
    rc, out, err, caught, _ = run_cli(["profile", f"{f}:make_workload", "--device", "cpu", "--no-tui",
                                       "--steps", "1", "--out", str(tmp_path / "out")], capsys,
                                      timeout=CAPTURE_TIMEOUT_S)
    assert rc == 2, (rc, out, err)
    assert "Traceback" not in out + err
    errors = [ln for ln in err.splitlines() if ln.startswith("trntui: error: ")]
    assert len(errors) == 1 and errors[0] == err.splitlines()[-1], err
    assert re.search(expect, errors[0]), errors[0]
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------------
# item 8
# ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind,skipped_values,skipped_rows", [("json", 7, 2), ("parquet", 8, 3)])
def test_neuron_values_out_of_int64_range_are_skipped_and_counted(kind, skipped_values, skipped_rows, tmp_path, capsys) -> None:
    """ts 1e400, pid "inf", 2**70, -2**64, NaN, a uint64 past 2**63 in a JSON export or Parquet: each such cell
    is left empty and counted; a row without a usable timestamp is skipped and said; the rest loads."""
    import json

    from malformed.bombs import neuron_json_out_of_range, parquet_out_of_range

    if kind == "json":
        d = tmp_path / "export"
        d.mkdir()
        neuron_json_out_of_range(d / "system_profile.json")
    else:
        d = parquet_out_of_range(tmp_path / "export")
    rc, out, err, caught, _ = run_cli(["summary", "--no-cache", str(d)], capsys)
    assert rc == 0 and err == "" and "Traceback" not in out, err
    assert (f"Skipped {skipped_values} input record(s): {skipped_values} Neuron values out of the int64 range"
            in out), out
    assert f"Note: {skipped_rows} system-trace row(s) without a name or timestamp skipped" in out
    rc, out, err, caught, _ = run_cli(["summary", "--no-cache", "--format", "json", str(d)], capsys)
    doc = json.loads(out)
    assert sum(doc["profile"]["skipped"].values()) == skipped_values
    good = 5 if kind == "json" else 8 - skipped_rows
    assert doc["profile"]["events"] >= good
