"""Issue 28, what rounds three left: a converter dies with trntui even when trntui is killed outright (class 4),
and no figure the text reports print is negative, NaN or infinite on the hostile inputs the tests build
(class 8). Every input is built here or by the builders the other hostile suites use."""

from __future__ import annotations

import os
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
