"""Convert a raw Neuron capture (`ntrace.pb`, `trace_info.pb`, `.ntff`) with `neuron-explorer`, then load it.

The `.pb` and `.ntff` files have no public schema (neuron-formats.md §4), so trntui never parses them. When a
session holds only raw files and `neuron-explorer` is installed (PATH or `/opt/aws/neuron/bin`), trntui asks it
for `view --help` and tries the documented non-interactive routes the installed version lists, in order:

1. `view -d SESSION --output-format parquet --output-file OUT` (+ `--ignore-device-profile` when listed: the
   system trace is all trntui reads, and the device profile takes most of the time);
2. `view -d SESSION --ingest-only --data-path D --display-name N`, then `D/profiles/global/N@latest/*.parquet`
   (versions that stop with `FATA Missing --display-name`);
3. route 1 with `--disable-ui --force` (versions whose `view` starts the UI server: "ctrl-c to exit").

Every run has stdin closed, its own process group (led by trntui's guard, which kills the group when trntui
dies, even of SIGKILL: trntui/children.py), a working directory inside the cache (Explorer drops stray
files into its CWD), and one overall timeout (`LoadOptions.convert_timeout`, `--convert-timeout`, default a few
minutes); a tool that announces its UI server is stopped at once. A route that fails, times out or leaves an
unreadable or partial export is discarded (nothing half-written is kept). When no route works, trace.json loads
alone and one note gives the exact command to run by hand; without trace.json that is a one-line error. The
older `neuron-profile` has one route (`--output-format json`).

Conversions are kept in `<cache dir>/neuron/<hash>` (the hash covers the session path and its files' names,
sizes and mtimes) and then read like any other export, so the parsed profile is cached too. The user's profile
directory is never written to. No Trainium hardware or neuron-explorer binary was available: the flags follow
the documentation and third-party scripts (neuron-formats.md §5, §12), and the tests use fake executables.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from trntui import fsio
from trntui.errors import LoadError
from trntui.textsafe import safe_text

TOOLS = ("neuron-explorer", "neuron-profile")
EXTRA_PATHS = ("/opt/aws/neuron/bin",)
DONE_MARKER = ".trntui-complete"
LOG_LIMIT = 64 << 20
"""Most output a converter may write (its convert.log) before it is stopped; the cache keeps the last
`LOG_KEEP` bytes of it."""
LOG_KEEP = 256 << 10
FILE_LIMIT = 32 << 30
"""Largest file of a conversion kept in the cache (a Neuron export's events table is GBs for a long capture)."""
TOTAL_LIMIT = 128 << 30
"""Most bytes one conversion may keep in the cache, all files together."""
MAX_ENTRIES = 100_000
"""Most files and directories one conversion may leave."""


def cache_root(cache_dir: Path | None = None) -> Path:
    """Where conversions are kept: `<cache dir>/neuron` (`LoadOptions.cache_dir`; without one, the documented
    default, trntui/settings.py)."""
    if cache_dir is None:
        from trntui import settings

        cache_dir = settings.cache_dir()
    return cache_dir / "neuron"


def session_hash(session_dir: Path) -> str:
    """Identity of a capture: resolved path + (name, size, mtime) of its files."""
    h = hashlib.sha256(str(session_dir.resolve()).encode())
    try:
        entries = sorted(p for p in session_dir.iterdir() if p.is_file())
    except OSError:
        entries = []
    for p in entries:
        try:
            st = p.stat()
        except OSError:
            continue
        h.update(f"{p.name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def cache_dir_for(session_dir: Path, cache_dir: Path | None = None) -> Path:
    return cache_root(cache_dir) / session_hash(session_dir)


def find_tool() -> tuple[str, str] | None:
    """(tool name, executable path) of neuron-explorer, else neuron-profile; None when neither is installed."""
    for name in TOOLS:
        exe = shutil.which(name)
        if exe is None:
            for extra in EXTRA_PATHS:
                cand = Path(extra) / name
                if cand.is_file() and os.access(cand, os.X_OK):
                    exe = str(cand)
                    break
        if exe:
            return name, exe
    return None


DEFAULT_TIMEOUT_S = 300.0
"""Default of `--convert-timeout`: all routes together (a few minutes; large captures need `--convert-timeout`)."""
HELP_TIMEOUT_S = 20.0
UI_MARKERS = ("ctrl-c to exit", "ctrl+c to exit", "press ctrl-c", "press ctrl+c")
"""Output that means the tool started its UI server instead of converting (it would never exit)."""
DISPLAY_NAME = "trntui"


@dataclass
class Route:
    """One way to run the tool: the command, where its export lands, and what to tell a human."""

    name: str
    argv: list[str]
    export_dir: Path


def _flags(help_text: str) -> set[str]:
    return set(re.findall(r"--[a-z][a-z0-9-]*", help_text))


def tool_help(exe: str, cwd: Path) -> str:
    """`<tool> view --help` (else `<tool> --help`): its output, "" when it fails or hangs (stdin closed, with a
    short timeout; a hanging `--help` is killed with its process group)."""
    for argv in ([exe, "view", "--help"], [exe, "--help"]):
        rc, out, _why = _run(argv, cwd, cwd / "help.log", HELP_TIMEOUT_S, lambda _m: None)
        if out.strip() and rc is not None:
            return out
    return ""


def routes(tool: str, exe: str, session_dir: Path, work: Path, help_text: str) -> list[Route]:
    """The documented non-interactive routes the installed tool's help lists, in the order they are tried."""
    out = work / "export"
    if tool == "neuron-profile":
        return [Route("json", [exe, "view", "-d", str(session_dir), "--output-format", "json", "--output-file",
                               str(out / "system_profile.json")], out)]
    flags = _flags(help_text)
    known = bool(flags)
    lean = ["--ignore-device-profile"] if "--ignore-device-profile" in flags else []
    parquet = [exe, "view", "-d", str(session_dir), "--output-format", "parquet", "--output-file", str(out)] + lean
    found: list[Route] = []
    if not known or {"--output-format", "--output-file"} <= flags:
        found.append(Route("parquet", parquet, out))
    if {"--ingest-only", "--data-path"} <= flags:
        data = work / "data"
        found.append(Route("ingest", [exe, "view", "-d", str(session_dir), "--ingest-only", "--data-path", str(data),
                                      "--display-name", DISPLAY_NAME] + lean,
                           data / "profiles" / "global" / f"{DISPLAY_NAME}@latest"))
    if "--disable-ui" in flags:
        found.append(Route("disable-ui", parquet + ["--disable-ui"] + (["--force"] if "--force" in flags else []), out))
    if not found:  # the help lists none of the documented flags: try the documented default anyway
        found.append(Route("parquet", parquet, out))
    return found


def manual_command(session_dir: Path, help_text: str = "") -> str:
    """The command to run by hand on a host with the Neuron tools (aws-neuronx-tools)."""
    out = f"{session_dir.name}_parquet"
    flags = _flags(help_text)
    cmd = (
        f"neuron-explorer view -d {shlex.quote(str(session_dir))} --output-format parquet "
        f"--output-file {shlex.quote(out)}"
    )
    if "--ignore-device-profile" in flags:
        cmd += " --ignore-device-profile"
    if "--disable-ui" in flags:
        cmd += " --disable-ui"
    return cmd


def _run(argv: list[str], cwd: Path, log_path: Path, timeout: float, say: Callable[[str], None]) -> tuple[int | None, str, str]:
    """Run `argv` with stdin closed in its own process group; (exit code or None, output tail, why it was
    stopped). Stopped at the deadline, or at once when it announces a UI server. The group is led by trntui's
    guard (`children.guarded`), which kills it when trntui dies, even of SIGKILL."""
    from trntui import children

    t0 = time.monotonic()
    with fsio.create_new(log_path) as log:
        try:
            proc = subprocess.Popen(children.guarded(argv), cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    env=children.python_env(parent=True))
        except OSError as exc:
            return None, "", f"could not start: {exc}"
        last = t0
        why = ""
        rc: int | None = None
        try:
            while True:
                try:
                    rc = proc.wait(timeout=0.25)
                    break
                except subprocess.TimeoutExpired:
                    now = time.monotonic()
                    if now - t0 > timeout:
                        why = f"timed out after {timeout:.0f} s"
                    elif os.fstat(log.fileno()).st_size > LOG_LIMIT:
                        why = f"wrote more than {LOG_LIMIT >> 20} MiB of output"
                    elif any(m in _tail(log_path, 4096).lower() for m in UI_MARKERS):
                        why = "started its UI server instead of converting (\"ctrl-c to exit\")"
                    if why:
                        _stop(proc)
                        rc = None
                        break
                    if now - last >= 10:
                        say(f"... still running ({now - t0:.0f} s of at most {timeout:.0f} s)")
                        last = now
        finally:
            # what the tool left in its process group (a server, `sleep 600 &`) ends with it: after its exit,
            # a timeout, or an interruption here (Ctrl-C, a cancelled load)
            _stop(proc)
    return rc, _tail(log_path, 2000), why


def _stop(proc: subprocess.Popen) -> None:
    """End the tool's process group (a tool may have started a server child, or left one in the background):
    SIGTERM, then SIGKILL for what is left; the tool itself reaped."""
    import signal

    from trntui import children

    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        children.kill_group(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM and children.group_alive(proc.pid):
            # (the tool is gone; a child of it may still be on its way out: a moment, then SIGKILL)
            children.wait_group(proc.pid, 0.5)
            continue
        return


def _tail(path: Path, n: int) -> str:
    """The last `n` bytes of a log (never following a link, never blocking on a FIFO a tool left there)."""
    return fsio.read_tail(path, n, follow_symlinks=False).decode("utf-8", "replace")


def export_problem(path: Path, fmt: str) -> str | None:
    """Why an export a route left cannot be read (partial or damaged), None when it can."""
    if fmt == "parquet":
        from trntui.loaders.neuron.parquet import EVENTS, table_files

        try:
            import pyarrow.parquet as pq

            for f in table_files(path, EVENTS):  # a part that is not a regular file: LoadError, never opened
                meta = pq.ParquetFile(f).schema_arrow
                if "name" not in meta.names:
                    return f"{f.name} has no name column"
        except LoadError as exc:
            return f"{Path(exc.path).name} {exc.problem}"
        except Exception as exc:  # noqa: BLE001 - any pyarrow failure means a partial file
            return f"unreadable {EVENTS} Parquet ({type(exc).__name__})"
        return None
    try:
        st = fsio.check_regular(path, what="a JSON export")
        if st.st_size < 64 << 20:
            import json

            json.loads(fsio.read_bounded(path, 64 << 20))
    except LoadError as exc:
        return f"{path.name} {exc.problem}"
    except (OSError, ValueError) as exc:
        return f"unreadable JSON export ({type(exc).__name__})"
    return None


class ConversionFailed(LoadError):
    """No route produced a readable export; `manual` is the command to run by hand."""

    def __init__(self, path: Path, message: str, manual: str) -> None:
        super().__init__(path, message)
        self.manual = manual


def find_export(directory: Path) -> tuple[Path, str] | None:
    """The Parquet directory or JSON file that a conversion produced under `directory` (searched recursively)."""
    from trntui.loaders.neuron.json_export import looks_like_export
    from trntui.loaders.neuron.parquet import is_parquet_export

    if not directory.is_dir():
        return None
    walked = list(fsio.walk_dirs(directory, max_entries=MAX_ENTRIES))  # iterative: any depth
    for d, _files in walked:
        if is_parquet_export(d):
            return d, "parquet"
    for d, files in walked:
        for fn in files:
            p = d / fn
            if fn.endswith(".json") and looks_like_export(p):
                return p, "json"
    return None


def cached_export(session_dir: Path, cache_dir: Path | None = None) -> tuple[Path, str] | None:
    """The export of a finished conversion of this session (its files unchanged), else None."""
    out = cache_dir_for(session_dir, cache_dir)
    try:
        marker = json.loads(fsio.read_bounded(out / DONE_MARKER, 1 << 20, follow_symlinks=False))
        rel, fmt = Path(marker["export"]), marker["format"]
    except (LoadError, OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    if rel.is_absolute() or ".." in rel.parts or fmt not in ("parquet", "json"):
        return None  # not what convert() writes: the entry is converted again
    path = out / rel
    if path.is_symlink() or not path.exists():
        return None
    return path, fmt


def convert(
    session_dir: Path,
    *,
    progress: Callable[[str], None] | None = None,
    timeout: float | None = DEFAULT_TIMEOUT_S,
    cache_dir: Path | None = None,
) -> tuple[Path, str]:
    """Convert one session into the cache (or reuse a previous conversion). Returns (export path, format).
    Raises `ConversionFailed` (with the command to run by hand) when no route gives a readable export within
    `timeout` seconds (all routes together; None: no limit)."""
    session_dir = Path(session_dir)
    say = progress or (lambda msg: print(f"trntui: {safe_text(msg)}", file=sys.stderr, flush=True))
    hit = cached_export(session_dir, cache_dir)
    if hit:
        say(f"using the conversion cached in {hit[0]}")
        return hit
    found = find_tool()
    if found is None:
        manual = manual_command(session_dir)
        raise ConversionFailed(
            session_dir,
            "holds only raw Neuron files (ntrace.pb / .ntff), and neuron-explorer is not installed here; run on the "
            f"Trn host: {manual} and open the output directory (or this directory with it inside)",
            manual,
        )
    tool, exe = found
    final = cache_dir_for(session_dir, cache_dir)
    fsio.ensure_dir(final.parent)
    base = final.parent / f".{final.name}.tmp{os.getpid()}"
    _remove_quietly(base)
    base.mkdir(parents=True)
    limit = float("inf") if timeout is None else max(float(timeout), 0.0)
    t0 = time.monotonic()
    help_text = tool_help(exe, base) if tool == "neuron-explorer" else ""
    manual = manual_command(session_dir, help_text)
    failures: list[str] = []
    try:
        for k, route in enumerate(routes(tool, exe, session_dir, base, help_text)):
            left = limit - (time.monotonic() - t0)
            if left <= 0:
                failures.append(f"{route.name}: not tried (time limit reached)")
                continue
            work = base / f"route{k}"
            _remove_quietly(work)
            work.mkdir()
            route = _rebase(route, base, work)
            (work / "export").mkdir(exist_ok=True)
            say(f"converting {session_dir} with {tool} (route {k + 1}: {route.name}; large captures take minutes)")
            say("$ " + " ".join(shlex.quote(c) for c in route.argv))
            rc, tail, why = _run(route.argv, work, work / "convert.log", left, say)
            last = tail.strip().splitlines()[-1] if tail.strip() else "no output"
            if rc is None:
                failures.append(f"{route.name}: {why}")
                continue
            if rc != 0:
                failures.append(f"{route.name}: exit {rc}: {last}")
                continue
            # keep only regular files, bounded (issue 28 class 7): what the tool left is moved into a fresh
            # tree; a symbolic link (to /, /dev/zero, a FIFO ...) or a special file in its export refuses it
            keep = base / f"keep{k}"
            try:
                _kept, refused = fsio.copy_tree(work, keep, file_limit=FILE_LIMIT, total_limit=TOTAL_LIMIT,
                                                max_entries=MAX_ENTRIES, move=True,
                                                skip=lambda rel: rel == "convert.log")
            except LoadError as exc:
                failures.append(f"{route.name}: {safe_text(exc.problem)}: {safe_text(Path(exc.path).name)}")
                continue
            export_rel = route.export_dir.relative_to(work).as_posix() if route.export_dir.is_relative_to(work) else ""
            bad = [r for r in refused if not export_rel or r.startswith(export_rel)]
            if bad:
                more = f" and {len(bad) - 1} more" if len(bad) > 1 else ""
                failures.append(f"{route.name}: its output holds {safe_text(bad[0])}{more}, which trntui does not "
                                "copy into its cache (regular files only)")
                continue
            try:
                hit = find_export(keep / export_rel if export_rel else keep)
            except LoadError as exc:
                failures.append(f"{route.name}: {safe_text(Path(exc.path).name)} {safe_text(exc.problem)}")
                continue
            if hit is None:
                failures.append(f"{route.name}: wrote no Parquet/JSON export ({last})")
                continue
            problem = export_problem(*hit)
            if problem:
                failures.append(f"{route.name}: {safe_text(problem)} (a partial export)")
                continue
            # done: this route's kept files are the cache entry, with the end of its log
            with fsio.create_new(keep / "convert.log") as log:
                log.write(fsio.read_tail(work / "convert.log", LOG_KEEP))
            rel = hit[0].relative_to(keep)
            marker = {"command": route.argv, "route": route.name, "export": rel.as_posix(), "format": hit[1],
                      "not_copied": refused[:20]}
            fsio.atomic_write(keep / DONE_MARKER, json.dumps(marker) + "\n")
            if os.path.lexists(final):
                fsio.remove_tree(final)
            fsio.rename(keep, final)
            say(f"converted in {time.monotonic() - t0:.1f} s into {final}")
            return final / rel, hit[1]
    finally:
        _remove_quietly(base)
    raise ConversionFailed(
        session_dir, f"{tool} could not convert it ({'; '.join(failures) or 'no route'})", manual
    )


def _remove_quietly(path: Path) -> None:
    """Remove trntui's own scratch tree (iteratively, never following a link the tool left in it)."""
    try:
        fsio.remove_tree(path)
    except LoadError:
        pass


def _rebase(route: Route, old: Path, new: Path) -> Route:
    """The route with paths under `old` moved under `new` (each route runs in a directory of its own)."""
    def move(x: str) -> str:
        return str(new / Path(x).relative_to(old)) if x.startswith(str(old) + os.sep) else x

    return Route(route.name, [move(x) for x in route.argv], Path(move(str(route.export_dir))))


def load_converted(source: Any, builder: Any, *, cache_dir: Path | None, has_framework: bool,
                   timeout: float | None = DEFAULT_TIMEOUT_S, budget: int | None = None) -> None:
    """Load a raw session (`NeuronSource`): convert it (or reuse the cached conversion) and read the export.
    When that is impossible (no tool, a failure, the time limit) trace.json loads alone with one note naming
    the command to run by hand; with no trace.json either, a one-line `LoadError`."""
    from trntui.loaders.neuron.json_export import load_json_export
    from trntui.loaders.neuron.parquet import load_parquet_export

    session_dir = source.session_dir
    try:
        path, fmt = convert(session_dir, cache_dir=cache_dir, timeout=timeout)
    except ConversionFailed as exc:
        if "not installed" in str(exc):
            msg = (f"{session_dir.name}: only raw Neuron files (ntrace.pb / .ntff) and neuron-explorer is not "
                   f"installed here; to see runtime and hardware rows run on the Trn host: {exc.manual}")
        else:
            msg = (f"{session_dir.name}: {exc.problem}; showing the framework trace alone. To convert by hand: "
                   f"{exc.manual} (then open the output directory)")
        if has_framework:
            builder.meta.notes.append(msg)
            return
        raise LoadError(session_dir, msg.split(": ", 1)[1]) from None
    kwargs = dict(pid_filter=source.pid, label=f"{session_dir.name} (converted)", instance_hint=source.instance,
                  budget=budget)
    if fmt == "parquet":
        load_parquet_export(path, builder, **kwargs)
    else:
        load_json_export(path, builder, **kwargs)
