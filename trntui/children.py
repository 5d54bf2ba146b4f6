"""How trntui starts processes of its own, so that none depends on the current directory or outlives trntui.

Every process trntui starts (the rank workers of a local pool and the forkserver they come from, the app's loader
process, the capture child of `trntui profile`, a Neuron converter) follows three rules:

- **No import from the current directory.** A Python child is started with `PYTHONSAFEPATH=1` (`python_env`):
  `python -c` and `python -m` then do not put the current directory first on `sys.path`, so a folder named
  `trntui` (the parent of a git clone) or `numpy` there cannot take the place of the real package. The variable
  is removed again from the child's environment once it runs (`started`), so that what the child starts in
  turn (a converter, a user's workload) sees the environment the user had.
- **It dies with trntui.** A child that runs trntui's code asks the kernel to kill it when its parent dies
  (`die_with_parent`: Linux `prctl(PR_SET_PDEATHSIG, SIGKILL)`, with a check that the parent it was started by is
  still its parent, since the parent may have died before the call); where there is no such call, a daemon thread
  polls the parent's process id instead. A child that runs someone else's program (a converter, a workload) runs
  in a process group of its own, killed as a whole when it finishes, times out or trntui is interrupted
  (`kill_group`), so a background process it left behind (`sleep 600 &`) goes with it. So that this holds also
  when trntui is killed outright (SIGKILL leaves no time to end anything), such a program is started under a
  guard of trntui's (`guarded`): a small Python process that leads the group, runs the program as its child and
  has the parent-death signal; when trntui dies the kernel signals the guard, which kills its whole group.
- **A death is reported with its cause.** `death_reason` turns an exit status into what the OS said (the
  signal's name, or the exit code) and, where the child's error output is at hand, its last exception line.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
from typing import Callable, Iterator

SAFE_PATH_MARK = "TRNTUI_SET_PYTHONSAFEPATH"
"""Set beside `PYTHONSAFEPATH=1` when trntui added it (not the user): the child removes both (`started`)."""

PARENT_PID = "TRNTUI_PARENT_PID"
"""The process id a child started with `python_env(parent=True)` must have as its parent (`started`)."""

WATCHDOG_POLL_S = 0.5
"""How often the fallback watchdog thread looks at the parent's process id (no `PR_SET_PDEATHSIG` here)."""

_PR_SET_PDEATHSIG = 1


def python_env(env: "dict[str, str] | None" = None, *, parent: bool = False) -> dict[str, str]:
    """The environment for a Python child of trntui (`env`, else this process's): `PYTHONSAFEPATH=1` (no
    current directory on its `sys.path`), marked as ours; `parent`: the child checks it still has this process as
    its parent when it starts (`started`)."""
    out = dict(os.environ if env is None else env)
    if out.get("PYTHONSAFEPATH") is None:
        out["PYTHONSAFEPATH"] = "1"
        out[SAFE_PATH_MARK] = "1"
    if parent:
        out[PARENT_PID] = str(os.getpid())
    return out


@contextlib.contextmanager
def environment(extra: "dict[str, str] | None" = None) -> Iterator[None]:
    """This process's environment as the Python children it starts meanwhile must copy it (`python_env(parent=
    True)`, plus `extra`), for a library that starts them from `os.environ` (multiprocessing's forkserver and
    resource tracker); restored afterwards."""
    saved = dict(os.environ)
    os.environ.update(python_env(parent=True))
    os.environ.update(extra or {})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def started(*, die: bool = True) -> None:
    """Called first in a child trntui started (`python_env`): the environment made as the user had it, and
    (`die`) the child tied to its parent's life (`die_with_parent`)."""
    expected = os.environ.pop(PARENT_PID, None)
    if os.environ.pop(SAFE_PATH_MARK, None) is not None:
        os.environ.pop("PYTHONSAFEPATH", None)
    if die:
        die_with_parent(int(expected) if expected and expected.isdigit() else None)


def die_with_parent(parent: "int | None" = None) -> None:
    """Make this process end when its parent does. `parent`: the process id its parent had when it was started
    (None: whatever its parent is now); if that parent is gone already, the process ends now."""
    if parent is None:
        parent = os.getppid()
    armed = _pdeathsig(signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)  # the parent died before the kernel could be asked to tell us: nobody waits for our work
    if not armed:
        _watchdog(parent)


def _pdeathsig(sig: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watchdog(parent: int, on_death: "Callable[[], None] | None" = None) -> None:
    import threading

    def watch() -> None:
        import time

        while os.getppid() == parent:
            time.sleep(WATCHDOG_POLL_S)
        if on_death is not None:
            on_death()
        os._exit(1)

    threading.Thread(target=watch, name="trntui-parent-watchdog", daemon=True).start()


GUARD_SIGNAL = signal.SIGUSR1
"""The parent-death signal of a guard (`guard`): not SIGTERM, which trntui sends the whole group to stop a
program gracefully (the guard then waits for the program as before)."""


def guarded(argv: "list[str]") -> "list[str]":
    """The command line that runs `argv`, someone else's program, under a guard (`guard`). Start it with
    `start_new_session=True` (the guard leads the group) and `env=python_env(parent=True)`; the program sees the
    environment without trntui's marks, inherits the standard streams and the working directory, and the guard
    exits with its status (or dies of its signal)."""
    from pathlib import Path

    package_parent = str(Path(__file__).resolve().parents[1])
    code = (f"import sys; sys.path.insert(0, {package_parent!r}); from trntui.children import guard; "
            "guard(sys.argv[1:])")
    return [sys.executable, "-c", code, *argv]


def guard(argv: "list[str]") -> None:
    """The guard's body (`guarded`): armed to kill its process group when its parent (trntui) dies, then runs
    `argv` as its child and ends as the child did. Never returns."""
    import subprocess

    expected = os.environ.get(PARENT_PID)
    started(die=False)
    parent = int(expected) if expected and expected.isdigit() else os.getppid()

    def end_group() -> None:
        kill_group(os.getpgrp(), signal.SIGKILL)  # the program, what it left in the group, and this guard
        os._exit(1)

    def on_guard_signal(_sig: int, _frame: object) -> None:
        if os.getppid() != parent:
            end_group()
        # not a parent death (the thread that started us ended, or someone sent the signal): watch instead
        _watchdog(parent, end_group)

    signal.signal(GUARD_SIGNAL, on_guard_signal)
    signal.signal(signal.SIGTERM, lambda _s, _f: None)  # trntui's graceful stop is for the program: wait for it
    armed = _pdeathsig(GUARD_SIGNAL)
    if os.getppid() != parent:
        end_group()  # trntui died before the kernel could be asked to tell us
    if not armed:
        _watchdog(parent, end_group)
    try:
        proc = subprocess.Popen(argv)
    except OSError as exc:
        print(f"could not start {argv[0] if argv else 'nothing'}: {exc.strerror or exc}", file=sys.stderr,
              flush=True)
        os._exit(127)
    while True:
        try:
            rc = proc.wait()
            break
        except KeyboardInterrupt:
            continue
    if rc < 0:  # died of a signal: so does the guard, for trntui to report it (`death_reason`)
        try:
            signal.signal(-rc, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # SIGKILL, SIGSTOP: their action is the default already
        os.kill(os.getpid(), -rc)
        os._exit(128 - rc)  # a signal whose default is to be ignored
    os._exit(rc & 0xFF)


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    """Send `sig` to the process group `pgid` (a child started with `start_new_session=True`: its id), if any of
    it is left."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def group_alive(pgid: int) -> bool:
    """Whether a live (not zombie) process is left in the process group `pgid`."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError, OSError):
        return False
    try:
        names = os.listdir("/proc")
    except OSError:
        return True
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False


def wait_group(pgid: int, timeout: float) -> bool:
    """Wait up to `timeout` seconds for the process group `pgid` to have no live process; True when it has none."""
    import time

    end = time.monotonic() + timeout
    while group_alive(pgid):
        if time.monotonic() >= end:
            return False
        time.sleep(0.02)
    return True


def signal_name(num: int) -> str:
    """`SIGKILL` for 9."""
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


_EXC_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Warning|Fault)\b.*$")


def last_exception(text: str) -> "str | None":
    """The last exception line of a traceback in `text` (`ImportError: cannot import name ...`), else None."""
    found = None
    lines = text.splitlines()
    for k, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last)"):
            for follow in lines[k + 1:]:
                if follow and not follow[0].isspace():
                    if _EXC_LINE.match(follow):
                        found = follow.strip()
                    break
    if found is None:
        for line in reversed(lines):
            if _EXC_LINE.match(line.strip()):
                return line.strip()
    return found


def death_reason(exitcode: "int | None", stderr: str = "") -> str:
    """Why a child ended, in the OS's words: `killed by SIGKILL`, `exited with status 1: ImportError: ...` (the
    last exception line of its error output, where it printed one)."""
    exc = last_exception(stderr) if stderr else None
    if exitcode is None:
        what = "ended"
    elif exitcode < 0:
        what = f"was killed by {signal_name(-exitcode)}"
    else:
        what = f"exited with status {exitcode}"
    return f"{what}: {exc}" if exc else what
