"""Running the CLI in-process on a corpus case and checking its outcome (shared by the bad-input tests)."""

from __future__ import annotations

import signal
import time
import warnings
from contextlib import contextmanager

from . import Case

from trntui.cli import main
from trntui.report import EMPTY_TABLE_NOTE
from trntui.textsafe import safe_text

CASE_TIMEOUT_S = 5


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


def run_cli(argv: list[str], capsys) -> tuple[int, str, str, list[str], float]:
    """`trntui argv` in-process: (exit code, stdout, stderr, warnings raised, seconds)."""
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, time_limit(CASE_TIMEOUT_S):
        warnings.simplefilter("always")
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse
            rc = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return rc, out, err, [str(w.message) for w in caught], time.perf_counter() - t0


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
