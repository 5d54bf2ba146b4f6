"""Where independent per-item work runs: in this process, in a local process pool, or on a Dask cluster.

`map_tasks(fn, items, options)` calls `fn(item)` for every item and returns the results in the items' order.
The items are independent (one rank of a distributed job each) and `fn` returns something small (a summary),
so the work scales out without sharing memory:

- `local` (default): a process pool of `jobs` workers (`concurrent.futures`, forkserver start: no fork of a
  process that may run threads); `jobs=1` runs in this process, one item after the other.
- `dask`: the same `fn` on a Dask distributed cluster: the scheduler at `scheduler` (`tcp://host:8786`; its
  workers must import trntui and see the same files), else a `LocalCluster` of `jobs` single-threaded worker
  processes started here and closed afterwards. Nothing here schedules, retries or moves data by itself:
  that is Dask's job.

Memory: at most `jobs` items are being worked on at once (local: one per worker process; Dask: at most `jobs`
tasks are submitted at a time), so at most `jobs` items' data is in memory. `memory_limit` (bytes) is handed
to a `LocalCluster`'s workers (Dask pauses and restarts a worker that goes over it).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import sys
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence, TypeVar

from trntui import children as _children
from trntui.errors import TrntuiError
from trntui.progress import Cancelled

ENGINES = ("local", "dask")

T = TypeVar("T")
R = TypeVar("R")

Progress = Callable[[int, int], None]
"""Called with (items done, items in all) after each result."""


@dataclass(frozen=True)
class EngineOptions:
    """How to run per-item work (the `--engine`, `--jobs` and `--scheduler` options)."""

    engine: str = "local"
    jobs: int | None = None
    """Workers (local) or tasks in flight (dask); None: the CPUs here (local, LocalCluster) or the threads of
    the cluster's workers (an existing scheduler)."""
    scheduler: str | None = None
    """Address of an existing Dask scheduler (`tcp://host:8786`); None starts a LocalCluster."""
    memory_limit: int | None = None
    """Bytes per LocalCluster worker (Dask's `memory_limit`); None: Dask's default share of the machine."""

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise TrntuiError(f"unknown engine {self.engine!r}: use one of {', '.join(ENGINES)}")
        if self.jobs is not None and self.jobs < 1:
            raise TrntuiError(f"--jobs must be at least 1 (got {self.jobs})")
        if self.scheduler and self.engine != "dask":
            raise TrntuiError("--scheduler needs --engine dask")

    def local_workers(self, items: int) -> int:
        """Worker processes for `items` items on this machine."""
        return max(1, min(self.jobs or cpu_count(), max(items, 1)))

    def describe(self, workers: int | None = None) -> str:
        """One line for reports: `local, 2 worker processes`, `dask LocalCluster, 2 workers`, `dask at tcp://…`."""
        if self.engine == "local":
            n = workers if workers is not None else (self.jobs or cpu_count())
            return "local, in this process" if n == 1 else f"local, {n} worker processes"
        if self.scheduler:
            return f"dask scheduler {self.scheduler}" + (f", {workers} tasks at a time" if workers else "")
        n = workers if workers is not None else (self.jobs or cpu_count())
        return f"dask LocalCluster, {n} worker{'s' if n != 1 else ''}"


def cpu_count() -> int:
    """CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def map_tasks(
    fn: Callable[[T], R],
    items: Sequence[T],
    options: EngineOptions,
    *,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    preload: Sequence[str] = (),
) -> list[R]:
    """`[fn(item) for item in items]` on the engine `options` names; results in the items' order.

    `fn` must be a module-level function and the items picklable (they travel to other processes).
    `preload`: modules the local pool's workers import once at start (the forkserver), instead of per task.
    `cancelled()` is polled between results: when it says yes, no new item starts and `progress.Cancelled` is
    raised.
    An exception raised by `fn` propagates (catch expected failures inside `fn` and return them as data).
    """
    items = list(items)
    results: list[Any] = [None] * len(items)
    total = len(items)
    if total == 0:
        return []
    done = 0
    for k, result in _run(fn, items, options, cancelled, preload):
        results[k] = result
        done += 1
        if progress is not None:
            progress(done, total)
    return results


def _run(fn: Callable, items: list, options: EngineOptions, cancelled: Callable[[], bool] | None,
         preload: Sequence[str]) -> Iterator[tuple[int, Any]]:
    if (options.engine == "local" and options.local_workers(len(items)) > 1) or (
            options.engine == "dask" and not options.scheduler):
        _refuse_unguarded_main()
    if options.engine == "dask":
        yield from _run_dask(fn, items, options, cancelled)
        return
    workers = options.local_workers(len(items))
    if workers == 1:
        for k, item in enumerate(items):
            if cancelled is not None and cancelled():
                raise Cancelled()
            yield k, fn(item)
        return
    yield from _run_pool(fn, items, workers, cancelled, preload)


def _refuse_unguarded_main() -> None:
    """Worker processes started here (forkserver/spawn, a LocalCluster's nannies) import the main script again
    (as `__mp_main__`). A script that starts the work from its top level, not under `if __name__ ==
    "__main__":`, would run again in every worker and start workers of its own: multiprocessing kills those, and
    all the parent sees is a dead worker. Say so before any worker starts."""
    script = unguarded_main_script()
    if script is not None:
        raise TrntuiError(
            f"{script} starts worker processes from its top level, not under `if __name__ == \"__main__\":`; "
            "each worker imports the main script again and would run that code again (multiprocessing stops "
            "it). Put the call under that guard, or use jobs=1 (work in this process)"
        )


def unguarded_main_script() -> str | None:
    """The main script, when the code calling this runs from its top level outside an `if __name__ ==
    "__main__":` block (and a spawned or forkserver worker would run that code again); else None."""
    main = sys.modules.get("__main__")
    if main is None:
        return None
    spec_name = getattr(getattr(main, "__spec__", None), "name", None)
    if spec_name is not None and (spec_name == "__main__" or spec_name.endswith(".__main__")):
        return None  # `python -m pkg`: workers do not run pkg/__main__.py again
    path = getattr(main, "__file__", None)
    if not path:
        return None  # interactive, `python -c`: nothing is imported again
    frame = sys._getframe(1)
    top = vars(main)
    while frame is not None and not (frame.f_globals is top and frame.f_code.co_name == "<module>"):
        frame = frame.f_back
    if frame is None:
        return None  # not called from the main script's top level (a function, a thread, the app)
    import ast
    import linecache

    source = linecache.getlines(frame.f_code.co_filename)
    try:
        tree = ast.parse("".join(source))
    except (SyntaxError, ValueError):
        return None
    if not source:
        return None  # no source to read (a .pyc, a zip): no guess
    line = frame.f_lineno
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _tests_name(node.test) and node.body and \
                node.body[0].lineno <= line <= (node.body[-1].end_lineno or node.body[-1].lineno):
            return None
    return str(path)


def _tests_name(test: Any) -> bool:
    """Whether an `if` test reads `__name__` (`__name__ == "__main__"`, and variants: `and`, reversed, ...)."""
    import ast

    return any(isinstance(n, ast.Name) and n.id == "__name__" for n in ast.walk(test))


@contextlib.contextmanager
def _stderr_with_a_file() -> Iterator[None]:
    """multiprocessing hands `sys.stderr.fileno()` to the helper processes it starts (resource tracker); inside
    the app, sys.stderr is Textual's capture, which has no file ("bad value(s) in fds_to_keep"). Point it at the
    real stderr (or /dev/null) while they start."""
    try:
        usable = sys.stderr is not None and sys.stderr.fileno() >= 0
    except (AttributeError, OSError, ValueError):
        usable = False
    if usable:
        yield
        return
    saved = sys.stderr
    spare = None
    try:
        real = sys.__stderr__
        if real is None or real.fileno() < 0:
            raise ValueError
    except (AttributeError, OSError, ValueError):
        real = spare = open(os.devnull, "w")  # noqa: SIM115
    sys.stderr = real
    try:
        yield
    finally:
        sys.stderr = saved
        if spare is not None:
            spare.close()


class _WorkerLog:
    """The file the forkserver's workers write their error output to (trntui/_forkserver.py), read from here:
    what a worker printed before it died is its reason, and nothing they print reaches the terminal (or the
    app's screen) directly."""

    def __init__(self, fd: int, forkserver_pid: int | None) -> None:
        self.fd = fd
        self.forkserver_pid = forkserver_pid

    def size(self) -> int:
        try:
            return os.fstat(self.fd).st_size
        except OSError:
            return 0

    def since(self, offset: int, limit: int = 64 << 10) -> str:
        """What was written after `offset` (its last `limit` bytes)."""
        end = self.size()
        start = max(offset, end - limit)
        try:
            return os.pread(self.fd, max(0, end - start), start).decode("utf-8", "replace")
        except OSError:
            return ""


_worker_log: _WorkerLog | None = None


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread while helpers start: they inherit the mask, so a Ctrl-C that reaches the
    whole process group while they start up cannot interrupt their interpreter's start (a traceback, or "Fatal
    Python error: init_import_site"); this process gets it once the mask is restored."""
    import signal

    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _start_helpers(ctx: Any) -> _WorkerLog | None:
    """Start multiprocessing's resource tracker (and the forkserver) now: with a stderr that has a file, no
    current directory on their `sys.path` (trntui/children.py), SIGINT blocked while they start, the forkserver
    tied to this process's life and writing its workers' error output to a file of ours. Returns that file
    (None where there is no forkserver of ours)."""
    global _worker_log
    from multiprocessing import resource_tracker

    forkserver = None
    if ctx is not None and ctx.get_start_method() == "forkserver":
        from multiprocessing import forkserver
    extra: dict[str, str] = {}
    log_fd = None
    if forkserver is not None and not _forkserver_running(forkserver):
        import tempfile

        log_fd, log_path = tempfile.mkstemp(prefix="trntui-workers-", suffix=".log")
        extra[_FORKSERVER_LOG] = log_path
    try:
        with _stderr_with_a_file():
            with _children.environment({"PYTHONWARNINGS": _TRACKER_QUIET}):
                resource_tracker.ensure_running()  # (blocks SIGINT while it starts, then unblocks it: before ours)
            if forkserver is not None:
                with _children.environment(extra), _sigint_blocked():
                    forkserver.ensure_running()
    finally:
        if log_fd is not None:  # the forkserver removes it once open; if it never opens it, this process at exit
            import atexit

            atexit.register(_remove, extra[_FORKSERVER_LOG])
    if log_fd is not None:
        if _worker_log is not None:
            with contextlib.suppress(OSError):
                os.close(_worker_log.fd)
        _worker_log = _WorkerLog(log_fd, getattr(forkserver._forkserver, "_forkserver_pid", None))
    return _worker_log if forkserver is not None else None


_TRACKER_QUIET = "ignore:resource_tracker:UserWarning"
"""The resource tracker outlives a trntui that was killed (SIGKILL) just long enough to free the semaphores the
pool held, and then warned about each on stderr, after the process had ended: it frees them silently."""

_FORKSERVER_LOG = "TRNTUI_WORKER_LOG"
"""(trntui/_forkserver.py LOG: not imported here, importing it is what sets a forkserver up.)"""


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _forkserver_running(forkserver: Any) -> bool:
    """Whether multiprocessing's forkserver of this process is running (ensure_running would reuse it)."""
    pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
    if pid is None:
        return False
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    if done:
        # it died (with the thread that started it, or killed): ensure_running starts another, but it reads
        # this from its own waitpid, which we took: forget it here as it would
        fs = forkserver._forkserver
        with contextlib.suppress(OSError, TypeError):
            os.close(fs._forkserver_alive_fd)
        fs._forkserver_address = fs._forkserver_alive_fd = fs._forkserver_pid = None
        return False
    return True


def _worker_start(parent: int) -> None:
    """First in every pool worker: it ignores Ctrl-C (this process stops the pool) and dies with the process
    it came from (the forkserver, else this process)."""
    import signal

    from trntui import children

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    boot = sys.modules.get("trntui._forkserver")
    server = getattr(boot, "PID", None)
    children.die_with_parent(server if server is not None else parent)


def _oom_kills() -> int | None:
    """The kernel's count of processes its out-of-memory killer ended in this cgroup (cgroup v2), if readable."""
    try:
        with open("/sys/fs/cgroup/memory.events", encoding="ascii") as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        pass
    return None


def _why_broken(procs: list, log: _WorkerLog | None, offset: int, oom_before: int | None) -> str:
    """Why a worker of the pool (`procs`, its processes) died, as the OS and the worker said it."""
    import signal

    from trntui import children

    codes = [p.exitcode for p in procs if p.exitcode is not None]
    # the pool terminates (SIGTERM) the workers left when one dies: the dead one is another code, if any
    dead = next((c for c in codes if c != -signal.SIGTERM), codes[0] if codes else None)
    text = log.since(offset) if log is not None else ""
    why = children.death_reason(dead, text)
    if dead == -signal.SIGKILL:
        oom = _oom_kills()
        if oom is not None and oom_before is not None and oom > oom_before:
            why += " (the kernel's out-of-memory killer: lower --jobs or --memory-budget)"
    return why


def _pool_context(preload: Sequence[str]) -> Any:
    """forkserver where there is one (a forked copy of a process running threads, like the app's, can hang);
    spawn elsewhere."""
    methods = multiprocessing.get_all_start_methods()
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["trntui._forkserver", *preload])
        return ctx
    return multiprocessing.get_context("spawn")


def _run_pool(fn: Callable, items: list, workers: int, cancelled: Callable[[], bool] | None,
              preload: Sequence[str]) -> Iterator[tuple[int, Any]]:
    ctx = _pool_context(preload)
    log = _start_helpers(ctx)
    offset = log.size() if log is not None else 0
    oom_before = _oom_kills()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_start,
                               initargs=(os.getpid(),))
    pending: dict[Future, int] = {}
    nxt = 0
    finished_all = False
    try:
        while nxt < len(items) or pending:
            # keep exactly `workers` items submitted: the rest wait here, not in the pool's queue
            while nxt < len(items) and len(pending) < workers:
                if cancelled is not None and cancelled():
                    raise Cancelled()
                pending[pool.submit(fn, items[nxt])] = nxt
                nxt += 1
            finished, _ = wait(list(pending), timeout=0.2, return_when=FIRST_COMPLETED)
            if cancelled is not None and cancelled():
                raise Cancelled()
            for fut in finished:
                k = pending.pop(fut)
                try:
                    yield k, fut.result()
                except BrokenProcessPool:
                    procs = list((getattr(pool, "_processes", None) or {}).values())
                    pool.shutdown(wait=True, cancel_futures=True)  # (joins them: their exit codes are known)
                    why = _why_broken(procs, log, offset, oom_before)
                    raise TrntuiError(
                        f"a worker process died while working on item {k + 1} of {len(items)}: it {why}"
                    ) from None
        finished_all = True
    finally:
        if not finished_all:  # interrupted, cancelled, an error: the items still running are not waited for
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    proc.kill()
        pool.shutdown(wait=True, cancel_futures=True)
        if finished_all and log is not None:
            _relay(log.since(offset))


def _relay(text: str) -> None:
    """What the workers wrote on their stderr, to this process's (the terminal's, or the app's capture)."""
    if text:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stderr.write(text if text.endswith("\n") else text + "\n")


SCHEDULER_TIMEOUT_S = 5.0
"""How long a Dask scheduler has to answer the comm handshake (`_probe_scheduler`) and the Client's connect."""


def _probe_scheduler(address: str, seconds: float) -> None:
    """Open one Dask comm to `address` and close it, within `seconds` in all (handshake included), on an event
    loop of its own; else one line. `Client(timeout=...)` does not bound the handshake: a port that accepts TCP
    and never answers (a wrong service, a hung scheduler) kept it waiting for ever (issue 28 class 3)."""
    import asyncio

    from distributed.comm import connect

    async def probe() -> None:
        comm = await asyncio.wait_for(connect(address, timeout=seconds), seconds + 1)
        await comm.close()

    try:
        asyncio.run(probe())
    except (asyncio.TimeoutError, TimeoutError):
        raise TrntuiError(f"cannot reach the Dask scheduler at {address}: no answer within {seconds + 1:g} s (is it a "
                          "Dask scheduler?)") from None
    except OSError as exc:
        raise TrntuiError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    except (ValueError, TypeError) as exc:
        raise TrntuiError(f"bad --scheduler {address!r}: {exc} (e.g. tcp://10.0.0.5:8786)") from None


SCHEDULER_SCHEMES = ("tcp", "tls", "ws", "wss")
"""The Dask comm protocols a scheduler on another host is reached by (inproc is one process's own; ucx needs a
plug-in trntui does not install)."""


def check_scheduler(address: str) -> None:
    """One line when `address` is no Dask scheduler address trntui can connect to: an unknown protocol, no port,
    a port outside 1-65535 (a 30-digit port was Python's "OverflowError: Python int too large to convert to C
    long" from the socket layer, issue 28 class 6). Checked before anything is loaded or started."""
    try:
        from distributed.comm.addressing import parse_address, parse_host_port
    except ImportError:
        raise TrntuiError("--engine dask needs Dask distributed: pip install 'trntui[dask]'") from None

    example = "(e.g. tcp://10.0.0.5:8786)"
    try:
        scheme, where = parse_address(address)
    except (ValueError, TypeError):
        raise TrntuiError(f"bad --scheduler {address!r}: not a Dask address {example}") from None
    if scheme not in SCHEDULER_SCHEMES:
        raise TrntuiError(f"bad --scheduler {address!r}: protocol {scheme}:// is not one of "
                          f"{', '.join(s + '://' for s in SCHEDULER_SCHEMES)} {example}")
    try:
        _, port = parse_host_port(where)
    except (ValueError, TypeError):
        raise TrntuiError(f"bad --scheduler {address!r}: expected HOST:PORT after {scheme}:// {example}") from None
    if not isinstance(port, int) or not 0 < port < 65536:
        raise TrntuiError(f"bad --scheduler {address!r}: port {port} is not a TCP port (1-65535) {example}")


def _run_dask(fn: Callable, items: list, options: EngineOptions,
              cancelled: Callable[[], bool] | None) -> Iterator[tuple[int, Any]]:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise TrntuiError("--engine dask needs Dask distributed: pip install 'trntui[dask]'") from None
    cluster = None
    client = None
    try:
        if options.scheduler:
            check_scheduler(options.scheduler)  # before a Client starts its IO-loop thread
            _probe_scheduler(options.scheduler, SCHEDULER_TIMEOUT_S)
            try:
                client = Client(options.scheduler, timeout=f"{SCHEDULER_TIMEOUT_S}s")
            except (OSError, TimeoutError) as exc:
                raise TrntuiError(f"cannot reach the Dask scheduler at {options.scheduler}: {exc}") from None
            except (ValueError, TypeError) as exc:  # not an address: 'foo', 'tcp://host' without a port
                raise TrntuiError(f"bad --scheduler {options.scheduler!r}: {exc} (e.g. tcp://10.0.0.5:8786)") from None
            in_flight = options.jobs or max(1, sum(client.nthreads().values()))
        else:
            workers = options.local_workers(len(items))
            _start_helpers(None)
            with _short_lived_workers():
                cluster = _local_cluster(LocalCluster, workers, options)
            client = Client(cluster)
            in_flight = workers
        futures: dict[Any, int] = {}
        nxt = 0

        def submit() -> Any:
            nonlocal nxt
            fut = client.submit(fn, items[nxt], pure=False, key=f"trntui-item-{nxt}-{os.getpid()}-{id(items)}")
            futures[fut] = nxt
            nxt += 1
            return fut

        first = [submit() for _ in range(min(in_flight, len(items)))]
        queue = as_completed(first)
        for fut in queue:
            k = futures.pop(fut)
            result = fut.result()
            fut.release()
            yield k, result
            if cancelled is not None and cancelled():
                raise Cancelled()
            if nxt < len(items):
                queue.add(submit())
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()


@contextlib.contextmanager
def _short_lived_workers() -> Iterator[None]:
    """Dask's nannies start workers with MALLOC_TRIM_THRESHOLD_=65536 (give freed memory back to the OS at once,
    for long-lived workers); for a LocalCluster that lives one command it cost ~30% CPU per rank (bench/ranks.py:
    0.51 -> 0.37 s per rank of the 68k-event trace, peak RSS 143 -> 155 MB). A cluster of the user's keeps its
    own settings."""
    import dask

    env = dict(dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {})
    env.pop("MALLOC_TRIM_THRESHOLD_", None)
    with dask.config.set({"distributed.nanny.pre-spawn-environ": env}):
        yield


def _local_cluster(LocalCluster: Any, workers: int, options: EngineOptions) -> Any:
    return LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        memory_limit=options.memory_limit if options.memory_limit else "auto",
        dashboard_address=None,
        host="127.0.0.1",
        silence_logs=logging.ERROR,
    )
