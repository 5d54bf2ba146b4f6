"""Convert a raw Neuron capture (`ntrace.pb`, `trace_info.pb`, `.ntff`) with `neuron-explorer`, then load it.

The `.pb` and `.ntff` files have no public schema (neuron-formats.md §4), so trntui never parses them. When a
session holds only raw files:

- with `neuron-explorer` on PATH: run `neuron-explorer view -d SESSION --output-format parquet --output-file OUT`
  into a cache directory *outside* the profile (`<cache dir>/neuron/<hash>`, `LoadOptions.cache_dir`; the hash
  covers the session path and its files' sizes and mtimes), printing the exact command and progress; the tool
  runs with the cache directory as its working directory (Explorer drops stray files into the CWD);
- with only the older `neuron-profile`: `neuron-profile view -d SESSION --output-format json --output-file
  OUT/system_profile.json`;
- with neither: say exactly which command to run on the Trn host (the framework trace still loads).

The user's profile directory is never written to. No Trainium hardware or neuron-explorer binary was available
while writing this: the command lines follow the documentation (`--output-format parquet`, `--output-file`), and
the tests use a fake executable.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from trntui.errors import LoadError
from trntui.textsafe import safe_text

TOOLS = ("neuron-explorer", "neuron-profile")
EXTRA_PATHS = ("/opt/aws/neuron/bin",)
DONE_MARKER = ".trntui-complete"


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


def command_for(tool: str, exe: str, session_dir: Path, out: Path) -> list[str]:
    if tool == "neuron-profile":
        return [exe, "view", "-d", str(session_dir), "--output-format", "json", "--output-file", str(out / "system_profile.json")]
    return [exe, "view", "-d", str(session_dir), "--output-format", "parquet", "--output-file", str(out)]


def manual_command(session_dir: Path) -> str:
    """The command to run on a host with the Neuron tools (aws-neuronx-tools)."""
    out = f"{session_dir.name}_parquet"
    return (
        f"neuron-explorer view -d {shlex.quote(str(session_dir))} --output-format parquet "
        f"--output-file {shlex.quote(out)}"
    )


def find_export(directory: Path) -> tuple[Path, str] | None:
    """The Parquet directory or JSON file that a conversion produced under `directory` (searched recursively)."""
    from trntui.loaders.neuron.json_export import looks_like_export
    from trntui.loaders.neuron.parquet import is_parquet_export

    if not directory.is_dir():
        return None
    for d, _dirs, files in sorted(os.walk(directory)):
        p = Path(d)
        if is_parquet_export(p):
            return p, "parquet"
    for d, _dirs, files in sorted(os.walk(directory)):
        for fn in sorted(files):
            p = Path(d) / fn
            if fn.endswith(".json") and looks_like_export(p):
                return p, "json"
    return None


def cached_export(session_dir: Path, cache_dir: Path | None = None) -> tuple[Path, str] | None:
    out = cache_dir_for(session_dir, cache_dir)
    if (out / DONE_MARKER).is_file():
        return find_export(out / "export")
    return None


def convert(
    session_dir: Path,
    *,
    progress: Callable[[str], None] | None = None,
    timeout: float | None = None,
    cache_dir: Path | None = None,
) -> tuple[Path, str]:
    """Convert one session into the cache (or reuse a previous conversion). Returns (export path, format)."""
    session_dir = Path(session_dir)
    say = progress or (lambda msg: print(f"trntui: {safe_text(msg)}", file=sys.stderr, flush=True))
    hit = cached_export(session_dir, cache_dir)
    if hit:
        say(f"using the conversion cached in {hit[0]}")
        return hit
    found = find_tool()
    if found is None:
        raise LoadError(
            session_dir,
            "holds only raw Neuron files (ntrace.pb / .ntff), and neuron-explorer is not installed here; run on the "
            f"Trn host: {manual_command(session_dir)} and open the output directory (or this directory with it inside)",
        )
    tool, exe = found
    final = cache_dir_for(session_dir, cache_dir)
    final.parent.mkdir(parents=True, exist_ok=True)
    work = final.parent / f".{final.name}.tmp{os.getpid()}"
    if work.exists():
        shutil.rmtree(work, ignore_errors=True)
    (work / "export").mkdir(parents=True)
    cmd = command_for(tool, exe, session_dir, work / "export")
    say(f"converting {session_dir} with {tool} (large captures take minutes)")
    say("$ " + " ".join(shlex.quote(c) for c in cmd))
    t0 = time.monotonic()
    log_path = work / "convert.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, cwd=work, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        last = t0
        while True:
            try:
                rc = proc.wait(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                now = time.monotonic()
                if timeout is not None and now - t0 > timeout:
                    proc.kill()
                    proc.wait()
                    raise LoadError(session_dir, f"{tool} did not finish within {timeout:.0f} s") from None
                if now - last >= 10:
                    say(f"... {tool} still running ({now - t0:.0f} s)")
                    last = now
    tail = log_path.read_text(encoding="utf-8", errors="replace")[-2000:].strip()
    if rc != 0:
        shutil.rmtree(work, ignore_errors=True)
        last_line = tail.splitlines()[-1] if tail else "no output"
        raise LoadError(session_dir, f"{tool} failed (exit {rc}): {last_line}")
    hit = find_export(work / "export")
    if hit is None:
        shutil.rmtree(work, ignore_errors=True)
        raise LoadError(session_dir, f"{tool} finished but wrote no Parquet/JSON export ({tail[-300:] or 'no output'})")
    (work / DONE_MARKER).write_text(" ".join(cmd) + "\n", encoding="utf-8")
    if final.exists():
        shutil.rmtree(final, ignore_errors=True)
    os.replace(work, final)
    say(f"converted in {time.monotonic() - t0:.1f} s into {final}")
    return find_export(final / "export")  # type: ignore[return-value]


def load_converted(source: Any, builder: Any, *, cache_dir: Path | None, has_framework: bool) -> None:
    """Load a raw session (`NeuronSource`): convert it (or reuse the cached conversion) and read the export;
    without the tool, a note (or an error when the session has no framework trace to show either)."""
    from trntui.loaders.neuron.json_export import load_json_export
    from trntui.loaders.neuron.parquet import load_parquet_export

    session_dir = source.session_dir
    if cached_export(session_dir, cache_dir) is None and find_tool() is None:
        msg = (
            f"{session_dir.name}: only raw Neuron files (ntrace.pb / .ntff) and neuron-explorer is not installed "
            f"here; to see runtime and hardware rows run on the Trn host: {manual_command(session_dir)}"
        )
        if has_framework:
            builder.meta.notes.append(msg)
            return
        raise LoadError(session_dir, msg.split(": ", 1)[1])
    path, fmt = convert(session_dir, cache_dir=cache_dir)
    kwargs = dict(pid_filter=source.pid, label=f"{session_dir.name} (converted)", instance_hint=source.instance)
    if fmt == "parquet":
        load_parquet_export(path, builder, **kwargs)
    else:
        load_json_export(path, builder, **kwargs)
