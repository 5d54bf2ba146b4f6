"""The capture runs in a watched child process — issue 28 classes 3, 6, 8 and "also".

A workload that leaves a non-daemon thread, calls `os._exit(0)`, segfaults, closes fd 1, deletes its
`.partial` or changes directory: `trntui profile` ends, with one line naming what happened, exit 2 (or 0 with
the capture where the capture did finish), never a traceback or a silent exit.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from tests.conftest import run_cli  # noqa: E402
from trntui.session import find_runs  # noqa: E402

HEAD = """
    import os, sys, threading, time, torch

    def make_workload(ctx):
        x = torch.ones(4)
        calls = []

        def step(x):
            calls.append(1)
            {body}
            return x + 1

        return step, (x,)
"""


REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's trntui, from any directory


def workload(tmp_path: Path, body: str) -> Path:
    f = tmp_path / "wl.py"
    f.write_text(textwrap.dedent(HEAD).replace("{body}", body))
    return f


def profile(capsys, f: Path, out: str | Path, *extra: str):
    return run_cli(capsys, "profile", f"{f}:make_workload", "--device", "cpu", "--no-tui", "--steps", "1",
                   "--out", str(out), *extra)


def one_error(rc, out, err) -> str:
    assert rc == 2, (rc, out, err)
    assert "Traceback" not in err
    errors = [ln for ln in err.splitlines() if ln.startswith("trntui: error: ")]
    assert len(errors) == 1 and errors[0] == err.splitlines()[-1], err
    return errors[0]


def test_a_non_daemon_thread_does_not_keep_profile_running(tmp_path) -> None:
    f = workload(tmp_path, "threading.Thread(target=time.sleep, args=(3600,)).start() if len(calls) == 1 else None")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "trntui", "profile", f"{f}:make_workload", "--device", "cpu",
                           "--no-tui", "--steps", "1", "--out", str(out)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr
    assert [r.name for r in find_runs(out)] == ["step"]


def test_os_exit_0_in_the_warm_up_is_an_error_not_a_silent_success(tmp_path, capsys) -> None:
    f = workload(tmp_path, "os._exit(0)")
    line = one_error(*profile(capsys, f, tmp_path / "out"))
    assert "exited with status 0 before the capture finished" in line and "warming up" in line, line
    assert "incomplete capture left in" in line and str(tmp_path / "out.partial") in line
    assert not (tmp_path / "out").exists()


def test_a_segfault_in_the_workload_is_one_line(tmp_path, capsys) -> None:
    f = workload(tmp_path, "import ctypes; ctypes.string_at(0)")
    line = one_error(*profile(capsys, f, tmp_path / "out"))
    assert "died of SIGSEGV (the workload crashed it)" in line, line


def test_a_workload_that_closes_fd_1_still_gets_its_tables(tmp_path) -> None:
    f = workload(tmp_path, "os.close(1) if len(calls) == 1 else None")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "trntui", "profile", f"{f}:make_workload", "--device", "cpu",
                           "--no-tui", "--steps", "1", "--out", str(out)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr
    assert "aten::add" in proc.stdout and "Traceback" not in proc.stderr


def test_a_workload_that_deletes_its_partial_is_one_line(tmp_path, capsys) -> None:
    f = workload(tmp_path, f"import shutil; shutil.rmtree({str(tmp_path / 'out.partial')!r}, ignore_errors=True)")
    line = one_error(*profile(capsys, f, tmp_path / "out"))
    assert "out.partial" in line, line


def test_a_relative_out_does_not_follow_the_workloads_chdir(tmp_path, monkeypatch, capsys) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    f = workload(tmp_path, f"os.chdir({str(elsewhere)!r})")
    monkeypatch.chdir(tmp_path)
    rc, out, err = profile(capsys, f, "rel-out")
    assert rc == 0, err
    assert [r.name for r in find_runs(tmp_path / "rel-out")] == ["step"]
    assert not (elsewhere / "rel-out").exists() and not (elsewhere / "rel-out.partial").exists()
    assert os.getcwd() == str(tmp_path)


def test_a_nested_profiler_that_crashes_torch_is_one_line(tmp_path, capsys) -> None:
    """The issue's case: a workload that opens its own torch.profiler inside trntui's (torch 2.13 segfaults)."""
    f = workload(tmp_path, "with torch.profiler.profile():\n            x = x * 1")
    rc, out, err = profile(capsys, f, tmp_path / "out", "--steps", "2")
    line = one_error(rc, out, err)  # (the pinned torch segfaults here; trntui says so and names where)
    assert "the capture process died of SIGSEGV (the workload crashed it) at: [1/1] step:" in line, line
    assert "incomplete capture left in" in line


@pytest.mark.torch
def test_ctrl_c_during_a_capture_is_one_line_and_leaves_no_process(tmp_path) -> None:
    """Ctrl-C (SIGINT to the terminal's process group, trntui's) while the workload runs its steps: one line,
    exit 130 (profile's code for an interrupted capture), the capture child and a helper the workload started
    (one that ignores Ctrl-C) are gone."""
    import signal
    import time

    pids = tmp_path / "pids"
    f = tmp_path / "wl.py"
    f.write_text(textwrap.dedent(f"""
        import os, signal, subprocess, sys, time, torch

        def make_workload(ctx):
            x = torch.ones(4)
            helper = subprocess.Popen([sys.executable, "-c",
                                       "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(600)"])
            open({str(pids)!r}, "w").write(f"{{os.getpid()}} {{helper.pid}}")

            def step(x):
                time.sleep(0.2)
                return x + 1

            return step, (x,)
    """))
    proc = subprocess.Popen([sys.executable, "-m", "trntui", "profile", f"{f}:make_workload", "--device", "cpu",
                             "--no-tui", "--steps", "50", "--out", str(tmp_path / "out")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=ENV, start_new_session=True)
    try:
        end = time.monotonic() + 120
        while not (pids.exists() and pids.read_text()) and time.monotonic() < end and proc.poll() is None:
            time.sleep(0.05)
        assert pids.exists(), proc.communicate()
        time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert [ln for ln in err.splitlines() if ln.startswith("trntui: error")] == ["trntui: error: interrupted"], err
    assert err.splitlines()[-1] == "trntui: error: interrupted"  # (after the progress lines)
    child, helper = (int(x) for x in pids.read_text().split())
    deadline = time.monotonic() + 10
    while (_alive(child) or _alive(helper)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child) and not _alive(helper)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")
