"""Run a capture in a child process and watch it: the workload's crash, exit or stray thread is reported.

`trntui profile` checks its arguments and `--out` (resolved to an absolute path once, up front, so a workload's
`os.chdir` cannot move it), then runs the capture itself (import the workload, set up the device, warm up,
profile, write the directory) in a fresh interpreter: `python -c` that puts this trntui first on `sys.path`
(never the current directory) and runs `trntui profile` with `TRNTUI_CAPTURE_CHILD=<fd>`. The child reports on
that pipe, one JSON object a line: `progress`, `warning`, `error`, `interrupted`, `done`; its stdout goes to the
parent's stderr (a workload's prints never mix into the tables). It ends with `os._exit`, so a non-daemon thread
the workload left running cannot keep `profile` from exiting. The parent turns every ending into one line: the
child's own error, a signal that killed it (a segfault in the workload), or an exit without a result
(`os._exit(0)` in the workload).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

from trntui.errors import TrntuiError

ENV = "TRNTUI_CAPTURE_CHILD"
STOP_GRACE_S = 10.0
"""How long the parent waits for the child after Ctrl-C or after its result before killing it."""


class Channel:
    """The child's end of the pipe."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        os.set_inheritable(fd, False)  # the workload's own subprocesses do not hold it open

    def send(self, **message: Any) -> None:
        data = (json.dumps(message, default=str) + "\n").encode()
        try:
            while data:
                data = data[os.write(self.fd, data):]
        except OSError:
            pass  # the parent is gone, or the workload closed the pipe: it reports the exit


def channel() -> Channel | None:
    """The child's channel when this process is a capture child, else None."""
    value = os.environ.pop(ENV, None)
    if value is None or not value.isdigit():
        return None
    from trntui import children

    children.started()  # the environment as the user had it for the workload; dies with its parent
    return Channel(int(value))


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def run_child(argv: list[str], staging: Path, progress: Callable[[str], None]) -> dict[str, Any]:
    """Run `trntui ARGV` as a capture child; return its `done` message or raise `TrntuiError` (one line)."""
    import trntui

    package_parent = str(Path(trntui.__file__).resolve().parents[1])
    code = (f"import sys; sys.path[0:1] = [{package_parent!r}]; from trntui.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    r, w = os.pipe()
    from trntui import children

    env = children.python_env(dict(os.environ, **{ENV: str(w)}), parent=True)
    try:
        # its own process group: what the workload leaves running (a helper, `sleep 600 &`) is ended with it; a
        # Ctrl-C here is passed on to it (`_interrupt`)
        proc = subprocess.Popen([sys.executable, "-c", code, *argv], pass_fds=(w,), env=env, stdout=2,
                                start_new_session=True)
    except OSError as exc:
        os.close(r)
        os.close(w)
        raise TrntuiError(f"cannot start the capture process: {exc.strerror or exc}") from None
    os.close(w)
    messages: dict[str, Any] = {}
    last = ["starting"]
    buf = b""

    def take(data: bytes) -> None:
        nonlocal buf
        buf += data
        *lines, buf = buf.split(b"\n")
        for line in lines:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            if "progress" in msg:
                last[0] = str(msg["progress"])
                progress(str(msg["progress"]))
            if "phase" in msg:  # where the child is, said only if it dies there
                last[0] = str(msg["phase"])
            for key in ("error", "done", "interrupted"):
                if key in msg:
                    messages[key] = msg[key]

    os.set_blocking(r, False)
    try:
        eof = False
        while True:
            if not eof:
                ready, _, _ = select.select([r], [], [], 0.2)
                if ready:
                    try:
                        chunk = os.read(r, 1 << 16)
                    except BlockingIOError:
                        chunk = None
                    if chunk == b"":
                        eof = True
                    elif chunk:
                        take(chunk)
            if ("done" in messages or "error" in messages or "interrupted" in messages) and proc.poll() is None:
                try:
                    proc.wait(timeout=STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if proc.poll() is not None:
                while True:  # what is left in the pipe
                    try:
                        chunk = os.read(r, 1 << 16)
                    except (BlockingIOError, OSError):
                        break
                    if not chunk:
                        break
                    take(chunk)
                break
            if eof:
                proc.wait()
    except KeyboardInterrupt:
        children.kill_group(proc.pid, signal.SIGINT)  # the Ctrl-C, passed on: it marks its manifest and stops
        try:
            proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    finally:
        os.close(r)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        children.kill_group(proc.pid, signal.SIGKILL)  # what the workload left in the group
    if "done" in messages:
        return messages["done"]
    if "error" in messages:
        raise TrntuiError(str(messages["error"]))
    if "interrupted" in messages:
        raise KeyboardInterrupt
    left = f"; incomplete capture left in {staging}" if staging.exists() else ""
    rc = proc.returncode
    if rc < 0:
        raise TrntuiError(f"the capture process died of {_signal_name(-rc)} (the workload crashed it) at: {last[0]}"
                          f"{left}")
    raise TrntuiError(f"the capture process exited with status {rc} before the capture finished (the workload "
                      f"ended the process, os._exit?) at: {last[0]}{left}")
