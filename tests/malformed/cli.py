"""Running the CLI in-process on a corpus case and checking its outcome (shared by the bad-input tests)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import warnings
from contextlib import contextmanager
from typing import Iterator

from . import Case

from trntui.cli import main
from trntui.report import EMPTY_TABLE_NOTE
from trntui.textsafe import safe_text

CASE_TIMEOUT_S = 60
"""The hang bound of one case run in-process: a case still running after it hangs (SIGALRM stops it and the test
fails). Not a speed claim: a malformed file takes well under a second; the bound only has to be far above what
a loaded machine makes of that, so that being slow never fails a test and a hang always does."""

CAPTURE_TIMEOUT_S = 120
"""The hang bound of a case that captures (`trntui profile`): a child process imports torch and runs the
workload, which on a loaded machine takes tens of seconds."""

GROUP_GONE_S = 15.0
"""How long after a case the process groups it started may take to empty (the kernel delivering SIGKILL)."""


class CaseTimeout(BaseException):
    """Not an Exception, so the CLI's last-resort handler cannot swallow it."""


@contextmanager
def time_limit(seconds: int):
    """Fail (instead of hanging) when the body runs longer than `seconds` (SIGALRM; main thread, POSIX)."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def on_alarm(signum, frame):  # noqa: ARG001
        raise CaseTimeout(f"took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@contextmanager
def new_process_groups() -> Iterator[list[int]]:
    """The ids of the process groups started meanwhile (`subprocess.Popen(..., start_new_session=True)` or
    `process_group=0`: the capture child, a converter's guard), as they are started."""
    started: list[int] = []
    original = subprocess.Popen.__init__

    def init(self, *args, **kwargs) -> None:
        original(self, *args, **kwargs)
        if kwargs.get("start_new_session") or kwargs.get("process_group") == 0:
            started.append(self.pid)

    subprocess.Popen.__init__ = init  # type: ignore[method-assign]
    try:
        yield started
    finally:
        subprocess.Popen.__init__ = original  # type: ignore[method-assign]


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of the process group `pgid`, from the process table (/proc)."""
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            found.append(int(name))
    return found


def groups_left(groups: list[int], within: float = GROUP_GONE_S) -> dict[int, list[int]]:
    """The processes still alive in `groups` `within` seconds from now (polled: {} as soon as none is)."""
    end = time.monotonic() + within
    while True:
        left = {g: m for g in groups if (m := group_members(g))}
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.05)


def run_cli(argv: list[str], capsys, timeout: int = CASE_TIMEOUT_S) -> tuple[int, str, str, list[str], float]:
    """`trntui argv` in-process: (exit code, stdout, stderr, warnings raised, seconds). `timeout`: the hang bound
    (`CASE_TIMEOUT_S`; `CAPTURE_TIMEOUT_S` for `profile`). Afterwards no process is left of a process group the
    command started (the capture child and what the workload left; a converter): asserted from /proc."""
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, time_limit(timeout), new_process_groups() as groups:
        warnings.simplefilter("always")
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse
            rc = exc.code if isinstance(exc.code, int) else 2
    secs = time.perf_counter() - t0
    out, err = capsys.readouterr()
    left = groups_left(groups)
    for pgid, members in left.items():
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)  # (not left to slow the tests that follow)
            except OSError:
                pass
    assert not left, f"processes left of the process groups {argv[:1]} started: {left}"
    return rc, out, err, [str(w.message) for w in caught], secs


def check_outcome(case: Case, rc: int, out: str, err: str, caught: list[str], fmt: str = "table") -> str:
    """Assert one of the two allowed outcomes; returns "loaded" or "error"."""
    assert "Traceback" not in out + err, err
    assert not caught, f"warnings: {caught}"
    if rc == 2:
        lines = err.splitlines()
        assert len(lines) == 1, f"expected one error line, got: {err!r}"
        line = lines[0]
        assert line.startswith("trntui: error: "), line
        assert "TRNTUI_DEBUG" not in line, f"an unexpected exception reached the CLI: {line}"
        assert safe_text(str(case.path)) in line, f"the error must name the file: {line}"
        assert case.expect in ("error", "either"), f"{case.name} should load, got: {line}"
        return "error"
    assert rc == 0, (rc, err)
    if case.path.is_dir():  # a directory of unrelated traces is several runs: each unreadable one is one line
        for line in err.splitlines():
            assert line.startswith("trntui: error: ") and safe_text(str(case.path)) in line, line
            assert case.expect in ("either",), f"{case.name} should load every run, got: {line}"
    else:
        assert err == "", err
    assert case.expect in ("load", "either", "ok"), f"{case.name} should fail with one line, loaded instead"
    if fmt == "table":
        assert "Self CPU time total:" in out or EMPTY_TABLE_NOTE in out  # an empty table is "" as torch's
        if case.expect == "load":
            tail = [ln for ln in out.splitlines() if ln.startswith(("Skipped ", "Note: "))]
            assert tail, f"{case.name} loaded without saying what was skipped or repaired:\n{out}"
    return "loaded"
