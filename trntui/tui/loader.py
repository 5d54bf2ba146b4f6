"""The app's load of a big run, as fast as `trntui summary`: a loader process writes the parsed-profile cache, the
app maps it.

The app loads in a thread, and its process keeps the interpreter busy drawing; for a run the cache takes, the
app starts a loader process instead: a fresh single-threaded interpreter that is sent the `LoadRequest` itself
(trntui/request.py, over its stdin: the run is never looked for again there) and loads it the way the CLI does
writes the cache entry (profile + key_averages table), reports its progress on
stdout and exits. The two are pipelined: as soon as the profile's arrays are in the entry's temporary directory
the loader says so (`PROFILE_WRITTEN`), the app reads them and builds the timeline's rows while the loader
computes the key_averages table; once the entry is in place the app takes the table from it. The timeline's nesting and rows,
computed by the app (after its first frame for a big run), are kept beside the entry (`save_timeline`) so a
re-open draws at once.
Cancelling kills the loader's process group. Runs the cache does not take (small, cache off) load in the app's
own process as before.

This module imports no Textual: the loader process stays light.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:
    from trntui.model.profile import Profile
    from trntui.request import LoadRequest

NESTING = "timeline_nesting"
"""Derived-array record holding `Profile.nesting()` (parent, depth) beside the cached profile."""


RESTORED = "timeline_restored"
"""Profile cache key set when the timeline's rows came from beside the cache entry (nothing to save again)."""

TIMELINE_ROWS = "timeline_rows_{depth}"
"""Derived-array records holding the timeline's rows (`build_rows(profile, depth)`) beside the cached profile."""


def save_timeline(profile: "Profile", max_depth: int) -> None:
    """Keep the profile's nesting and timeline rows beside its cache entry (no-op when it is not cached), so a
    re-open draws at once instead of sorting every event again."""
    from trntui.analysis.timeline import build_rows, rows_to_arrays
    from trntui.cache import save_derived

    if profile.cache.get("cache_entry") is None or profile.cache.get(RESTORED):
        return
    parent, depth = profile.nesting()
    save_derived(profile, NESTING, {"parent": parent, "depth": depth})
    for d in (1, max_depth):
        save_derived(profile, TIMELINE_ROWS.format(depth=d), rows_to_arrays(build_rows(profile, d)))


def _restore_timeline(profile: "Profile", max_depth: int) -> None:
    """Take the nesting and timeline rows stored beside the cached profile, when there are any."""
    from trntui.analysis.timeline import rows_from_arrays
    from trntui.cache import load_derived

    arrays = load_derived(profile, NESTING)
    if arrays is None or len(arrays.get("parent", ())) != len(profile):
        return
    rows = {}
    for d in (1, max_depth):
        stored = load_derived(profile, TIMELINE_ROWS.format(depth=d))
        if stored is None:
            return
        try:
            rows[d] = rows_from_arrays(profile, stored)
        except (KeyError, ValueError, IndexError):
            return
    profile.cache["nesting"] = (arrays["parent"], arrays["depth"])
    for d, r in rows.items():
        profile.cache[("timeline_rows", d)] = r
    profile.cache[RESTORED] = True


def in_app(options: Any = None) -> Any:
    """`options` (None: the defaults) for a load whose profile the app itself holds: the events' args copied into
    memory (`LoadOptions.args_from_file=False`), since a session may outlive the trace file's content."""
    from trntui.loaders.protocol import LoadOptions

    return dataclasses.replace(options if options is not None else LoadOptions.from_env(), args_from_file=False)


def load_run(
    request: "LoadRequest",
    progress: Callable[[str, int, int], None] | None = None,
    max_depth: int = 4,
    started: "subprocess.Popen | Forked | None" = None,
    prepare: Callable[["Profile"], None] | None = None,
) -> "Profile":
    """`trntui.request.load` for the app: from the cache when it holds the run, through the loader process when
    the cache takes the run, else in this process. `progress(stage, done, total)` may raise
    `trntui.progress.Cancelled` to stop (the loader process is killed). `started`: a loader process already
    started for this request (`prestart`), followed instead of a new one; `prepare(profile)`: work on the
    profile (the timeline's rows) done while the loader process computes the table, when the profile comes from
    a loader process (the returned profile is then the one prepared)."""
    from trntui import cache as profile_cache
    from trntui import request as requests
    from trntui import session
    from trntui.formats import finish

    run, resolved = request.run, request.options.resolved()

    def here() -> "Profile":  # (args copied into memory: the app may outlive the trace file's content)
        return requests.load(request.with_options(args_from_file=False))

    inputs = run.inputs if resolved.cache and resolved.cache_dir is not None else None
    if not inputs or not profile_cache.cacheable(inputs, resolved.cache_min_bytes):
        if started is not None:
            _kill(started)
        return here()
    hit = session.cached(run, resolved) if started is None else None
    if hit is None:
        written: list[tuple["Profile", dict[str, int]]] = []

        def take(tmp_name: str) -> None:
            """The loader wrote the profile into its temporary entry directory: read it and prepare it now."""
            assert resolved.cache_dir is not None
            d = profile_cache.entry_dir(inputs, resolved.cache_dir).parent / tmp_name
            if not tmp_name.startswith(".tmp-") or "/" in tmp_name or written:
                return
            got = profile_cache.read_written(d)
            if got is None:
                return  # renamed into place already, or given up: the entry is read below
            finish(run, got[0])
            written.append(got)
            if prepare is not None:
                prepare(got[0])

        if not _run_loader(request, progress, started, take):
            return here()  # the loader process could not start or write the entry: load it here
        if written:
            profile, sums = written[0]
            records = profile_cache.load_records(inputs, resolved.cache_dir, profile, sums)
            if records is not None and session.with_records(profile, records):
                return profile
        hit = session.cached(run, resolved)
    if hit is None:  # the loader could not write the entry (a read-only cache dir, a full disk): load here
        return here()
    _restore_timeline(hit, max_depth)
    return hit


ENTRY_WRITTEN = "@entry-written"
"""The loader's last stdout line: the cache entry is in place (the app takes it without waiting for the
process to finish exiting: a process that held a big profile takes a moment to tear down)."""

PROFILE_WRITTEN = "@profile-written"
"""The loader's stdout line (`PROFILE_WRITTEN<tab>temporary directory name`) once the profile's arrays are in
the entry's temporary directory (`cache.store(on_profile=...)`), before the table is computed."""


def _start_loader(request: "LoadRequest") -> subprocess.Popen | None:
    """Start a fresh loader process for `request` (sent whole on its stdin); None when it cannot be started."""

    root = str(Path(__file__).resolve().parents[2])  # this trntui, whether installed or run from a checkout
    boot = f"import sys; sys.path.insert(0, {root!r}); from trntui.tui.loader import child; sys.exit(child())"
    return _spawn([sys.executable, "-c", boot], request)


def _spawn(cmd: list[str], request: "LoadRequest") -> subprocess.Popen | None:
    """Run `cmd` (a Python that calls `child()`) in its own session and send it `request` on its stdin, as
    `multiprocessing` sends a task to a worker (pickled by the standard connection: the loader trusts only its
    parent, which wrote the pipe); None when it cannot be started."""
    from multiprocessing.connection import Connection

    read, write = os.pipe()
    try:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=read,
            start_new_session=True, text=True, encoding="utf-8", errors="replace",
        )
    except OSError:
        os.close(write)
        return None
    finally:
        os.close(read)
    conn = Connection(write, readable=False)
    try:
        conn.send(request)  # a few kB: fits the pipe; a loader that died first makes this a BrokenPipeError
    except OSError:
        pass
    finally:
        conn.close()
    return proc


def child() -> int:
    """The loader process started by `_start_loader`: take the request from stdin, then `main(request)`."""
    from multiprocessing.connection import Connection

    try:
        request = Connection(0, writable=False).recv()
    except (OSError, EOFError):
        return 1
    return main(request)


class Forked:
    """A loader process forked from `trntui open` before Textual is imported (`prestart`): it starts decoding
    at once, with trntui and numpy already imported (a fresh interpreter spends ~0.3 s of a core on that, on
    the decode's critical path). What `_run_loader` and `_kill` use of `subprocess.Popen`."""

    def __init__(self, pid: int, out_fd: int, err_fd: int) -> None:
        self.pid = pid
        self.stdout = open(out_fd, encoding="utf-8", errors="replace")  # noqa: SIM115 - closed by communicate / GC
        self.stderr = open(err_fd, encoding="utf-8", errors="replace")  # noqa: SIM115
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            try:
                _, status = os.waitpid(self.pid, 0)
                self.returncode = os.waitstatus_to_exitcode(status)
            except ChildProcessError:  # reaped by another thread (`_reap_later` and `_kill`)
                self.returncode = self.returncode if self.returncode is not None else -signal.SIGKILL
        return self.returncode

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def communicate(self) -> tuple[str, str]:
        out, err = self.stdout.read(), self.stderr.read()
        self.wait()
        self.stdout.close()
        self.stderr.close()
        return out, err


def _fork_loader(request: "LoadRequest") -> Forked | None:
    """Fork this (single-threaded) process into the loader process; None where that is not possible."""
    from trntui.threads import threads_alive

    if not hasattr(os, "fork") or threads_alive(native=True):  # (a fork copies a consistent state only then)
        return None
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    try:
        pid = os.fork()
    except OSError:
        for fd in (out_r, out_w, err_r, err_w):
            os.close(fd)
        return None
    if pid == 0:  # the loader: its own session (killed as a group), stdout/stderr to the app, never back here
        code = 1
        try:
            os.setsid()
            os.close(out_r)
            os.close(err_r)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
            code = main(request)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001 - a failure here is the app's "load it yourself", never a traceback upstairs
            code = 1
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    os.close(out_w)
    os.close(err_w)
    return Forked(pid, out_r, err_r)


def _run_loader(
    request: "LoadRequest", progress: Callable[[str, int, int], None] | None,
    started: "subprocess.Popen | Forked | None" = None, written: Callable[[str], None] | None = None,
) -> bool:
    """Start the loader process for `request`, or take the one already `started` for it, and follow it to the
    end (`written(name)` when it says the profile is in the temporary directory `name`). True when it
    wrote the cache; its one-line error about the input (exit 2) becomes a TrntuiError; any other failure is
    False."""
    from trntui.errors import TrntuiError

    proc = started if started is not None else _start_loader(request)
    if proc is None:
        return False
    try:
        assert proc.stdout is not None
        for line in _lines(proc.stdout, progress):
            stage, _, rest = line.rstrip("\n").partition("\t")
            if stage == PROFILE_WRITTEN:
                if written is not None:
                    written(rest)
                continue
            if stage == ENTRY_WRITTEN:
                _reap_later(proc)
                return True
            done, _, total = rest.partition("\t")
            if progress is not None and stage:
                progress(stage, int(done or 0) if done.isdigit() else 0, int(total or 0) if total.isdigit() else 0)
        err = proc.stderr.read() if proc.stderr is not None else ""
        code = proc.wait()
    except BaseException:
        _kill(proc)
        raise
    if code == 2:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        raise TrntuiError(lines[-1] if lines else f"{request.path}: could not be read")
    return code == 0


QUIET_POLL_S = 0.1
"""While the loader process prints nothing (its table takes ~1 s on a big trace), the app's progress callback is
still called this often with an empty stage, so that a cancel (Esc) stops the load at once."""


def _lines(stream: Any, progress: Callable[[str, int, int], None] | None) -> Iterator[str]:
    """The lines the loader process prints on `stream` (its stdout), as they come; `progress("", 0, 0)` every
    `QUIET_POLL_S` while it prints nothing (the callback may raise `Cancelled`). Read from the pipe itself, not
    through the file object's buffer, so that no line waits in a buffer while the pipe is quiet."""
    import select

    try:
        fd = stream.fileno()
        select.select([fd], [], [], 0)
    except (AttributeError, OSError, ValueError):  # no pollable pipe (not a POSIX system): plain lines
        yield from stream
        return
    pending = b""
    while True:
        ready, _, _ = select.select([fd], [], [], QUIET_POLL_S)
        if not ready:
            if progress is not None:
                progress("", 0, 0)
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        *done, pending = (pending + chunk).split(b"\n")
        for raw in done:
            yield raw.decode("utf-8", "replace") + "\n"
    if pending:
        yield pending.decode("utf-8", "replace")


def _reap_later(proc: subprocess.Popen) -> None:
    """Wait for a loader that has done its work in a daemon thread (reading what it may still write)."""
    import threading

    def reap() -> None:
        try:
            proc.communicate()
        except (OSError, ValueError):
            pass

    threading.Thread(target=reap, name="trntui-loader-reaper", daemon=True).start()


class Prestarted:
    """A loader process `trntui open` started before the app imported Textual (`prestart`), for the app's
    first load to follow instead of starting its own: the decode overlaps the app's start-up."""

    def __init__(self, request: "LoadRequest", proc: "subprocess.Popen | Forked") -> None:
        self.request = request
        self.proc = proc

    @property
    def run_name(self) -> str:
        return self.request.run.name

    def take(self, request: "LoadRequest") -> "subprocess.Popen | Forked | None":
        """The process, once, when it loads `request` (else None, and it is stopped)."""
        proc, self.proc = self.proc, None
        if proc is not None and request != self.request:
            _kill(proc)
            return None
        return proc

    def stop(self) -> None:
        """Stop the process if nobody took it (the app quit first, or failed to start)."""
        proc, self.proc = self.proc, None
        if proc is not None:
            _kill(proc)


def prestart(request: "LoadRequest") -> Prestarted | None:
    """Start the loader process for the request `trntui open PATH` resolved (one run, or `--run` named it), when
    the cache takes the run and holds no entry for it yet (then the app would start the same process itself,
    after its own start-up). None otherwise, and on any doubt."""
    from trntui import cache as profile_cache

    try:
        resolved = request.options.resolved()
        if not resolved.cache or resolved.cache_dir is None:
            return None
        inputs = request.run.inputs
        if not inputs or not profile_cache.cacheable(inputs, resolved.cache_min_bytes):
            return None
        if os.path.lexists(profile_cache.entry_dir(inputs, resolved.cache_dir)):
            return None  # an entry (maybe stale): the app decides
    except Exception:  # noqa: BLE001 - only a head start: the app finds and reports any problem itself
        return None
    proc = _fork_loader(request) or _start_loader(request)
    return Prestarted(request, proc) if proc is not None else None


def _kill(proc: "subprocess.Popen | Forked") -> None:
    """Stop the loader (its own process group: whatever it started goes with it)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        proc.kill()
    proc.wait()


def main(request: "LoadRequest") -> int:
    """The loader process: load the request's run like the CLI, write the cache, report on stdout."""
    import time

    from trntui.settings import hold_one_blas_thread

    hold_one_blas_thread()  # as the CLI does: one BLAS thread, numpy imported once the load has begun its scans
    from trntui import request as requests
    from trntui.errors import TrntuiError

    last = [0.0]

    def report(stage: str, done: int, total: int) -> None:
        now = time.perf_counter()
        if stage and (now - last[0] >= 0.1 or done == 0):
            last[0] = now
            print(f"{stage}\t{done}\t{total}", flush=True)

    try:
        profile = requests.load(request.with_options(cache=True), progress=report,
                                on_profile=lambda d: print(f"{PROFILE_WRITTEN}\t{d.name}", flush=True))
        if profile.cache.get("cache_entry") is not None:
            print(ENTRY_WRITTEN, flush=True)
    except TrntuiError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


class AppLoad:
    """What the app's load worker posts of a loaded request (`open_for_app`)."""

    def __init__(self, profile: "Profile", table: Any, part: tuple[Any, Any, str], header: str, early: bool) -> None:
        self.profile, self.table, self.header, self.early = profile, table, header, early
        self.subset, self.view, self.subset_text = part


def open_for_app(
    request: "LoadRequest",
    *,
    progress: Callable[[str, int, int], None],
    stage: Callable[[str], None],
    check: Callable[[], None],
    part: Callable[["Profile"], tuple[Any, Any, str]],
    describe: Callable[["Profile"], str],
    shown: Callable[["Profile", Any], None],
    max_depth: int,
    background_events: int,
    started: "subprocess.Popen | Forked | None" = None,
) -> AppLoad:
    """The app's whole load of one request, Textual-free (the worker only posts what this calls back):
    the run read (`load_run`: the cache, a loader process or this process), the `--steps`/`--window` part
    (`part(profile)` -> events, view, header text), its key_averages table, the timeline's nesting and rows,
    the header line (`describe`). `stage(text)`: the next stage to show (the app counts them); `check()`:
    raises `Cancelled` when the user cancelled; `shown(profile, view)`: the profile is ready for the panes that need no table (called
    while a loader process computes the table); `progress`: the loader's progress callback."""
    from trntui.analysis.key_averages import key_averages
    from trntui.analysis.timeline import display_span, lane_groups
    from trntui.errors import TrntuiError
    from trntui.progress import reporting

    early: dict[str, Any] = {}

    def prepare(profile: "Profile") -> None:
        """The timeline's rows, built while the loader process computes the table; then the panes that draw
        from the profile alone show it (`shown`), so that only the ops table is left to draw when the table
        comes."""
        stage(f"timeline rows of {len(profile):,} events")
        if len(profile) < background_events:
            profile.nesting()
        lane_groups(profile, max_depth)
        display_span(profile)
        try:
            early["part"] = part(profile)
        except TrntuiError:
            return  # (--steps naming no step of this trace) raised again, and shown, once the load is done
        early["header"] = describe(profile)
        early["profile"] = profile
        check()
        shown(profile, early["part"][1])
        stage(f"key_averages over {len(profile):,} events")

    stage(f"reading {request.run.name}")
    with reporting(progress):  # the worker's reporter: progress messages, and Cancelled once cancelled
        # a run the cache takes is read by a loader process (loaded as the CLI loads it) and mapped
        profile = load_run(request, progress, max_depth, started=started, prepare=prepare)
    check()
    prepared = early.get("profile") is profile  # shown early: its rows are built, its table came with it
    if not prepared:
        stage(f"key_averages over {len(profile):,} events")
    chosen = early["part"] if prepared else part(profile)
    table = key_averages(profile, events=chosen[0])
    check()
    if not prepared:
        stage("nesting and timeline rows")
    if len(profile) < background_events:
        profile.nesting()  # small: sub-rows at once; big: after the first frame (the app's own worker)
    lane_groups(profile, max_depth)  # the timeline's rows, built here rather than on the first frame
    if len(profile) < background_events:
        save_timeline(profile, max_depth)  # for the next open (when the run is cached)
    display_span(profile)
    check()
    return AppLoad(profile, table, chosen, early["header"] if prepared else describe(profile), prepared)
