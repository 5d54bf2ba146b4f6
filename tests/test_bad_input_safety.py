"""Hostile input cannot make trntui open or run anything: paths written in a trace are data (never opened,
executed or imported), and the code has no eval/exec/pickle. Checked statically (source scan) and
dynamically (a `sys.addaudithook` recorder around loading and printing a trace full of paths)."""

from __future__ import annotations

import io
import json
import re
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "trntui"

FORBIDDEN = {
    r"(?<![\w.])eval\(": "eval",
    r"(?<![\w.])exec\(": "exec",
    r"^\s*(import|from)\s+(pickle|cPickle|dill|marshal|shelve|cloudpickle)\b": "pickle-like deserialisation",
    r"\byaml\.(unsafe_)?load\(": "yaml.load",
    r"allow_pickle\s*=\s*True": "numpy allow_pickle",
    r"shell\s*=\s*True": "shell=True",
    r"\bos\.(system|popen|exec\w*|spawn\w*)\(": "os process execution",
    r"torch\.load\(": "torch.load (pickle)",
}

SUBPROCESS_ALLOWED = ("capture/", "children.py", "commands/profile.py", "loaders/neuron/convert.py", "tui/loader.py")
"""Modules that run external tools by design (profiling a user's workload, converting NTFF with
`neuron-profile` under children.py's guard that kills it when trntui dies, the app's loader process, a fresh interpreter sent its `LoadRequest`): they build argv lists from the user's
command line and known file layouts, never a shell."""


def _sources() -> list[tuple[str, str]]:
    return [(str(p.relative_to(PKG)), p.read_text(encoding="utf-8")) for p in sorted(PKG.rglob("*.py"))]


def test_no_eval_exec_pickle_or_shell_in_the_package() -> None:
    problems = []
    for rel, text in _sources():
        for pattern, what in FORBIDDEN.items():
            for m in re.finditer(pattern, text, re.MULTILINE):
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"{rel}:{line}: {what}")
    assert not problems, "\n".join(problems)


def test_subprocess_only_where_running_tools_is_the_point() -> None:
    users = [rel for rel, text in _sources() if re.search(r"^\s*(import subprocess|from subprocess)", text, re.M)]
    unexpected = [rel for rel in users if not rel.startswith(SUBPROCESS_ALLOWED)]
    assert not unexpected, unexpected
    loaders = [rel for rel in users if rel.startswith(("loaders/kineto", "loaders/files",
                                                       "loaders/discover", "model/", "analysis/", "report"))]
    assert not loaders


# ------------------------------------------------------------------------------------------------------
# dynamic: record what the process does while it loads a trace that is full of paths
# ------------------------------------------------------------------------------------------------------
_RECORD: list[tuple[str, tuple]] | None = None
WATCHED = ("open", "os.", "subprocess.", "pickle.", "marshal.", "exec", "compile", "ctypes.", "socket.",
           "shutil.", "webbrowser.", "import", "urllib.")


def _hook(event: str, args: tuple) -> None:
    if _RECORD is not None and event.startswith(WATCHED):
        _RECORD.append((event, args))


_installed = False


def _install() -> None:
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True


def _trace_with_paths(sentinel: Path, script: Path) -> bytes:
    s, x = str(sentinel), str(script)
    ev = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": s}},
        {"ph": "X", "cat": "python_function", "name": f"{x}(1): <module>", "pid": 1, "tid": 1, "ts": 1, "dur": 100,
         "args": {"Python id": 1, "Python file": x, "Source Location": s}},
        {"ph": "X", "cat": "cpu_op", "name": s, "pid": 1, "tid": 1, "ts": 2, "dur": 50,
         "args": {"External id": 1, "Call stack": f"{x}(3): f;{s}(1): g", "Input Dims": [[1]],
                  "Concrete Inputs": [s, f"$(sh {x})", f"`{x}`"], "Trace name": s, "Trace iteration": 1}},
        {"ph": "X", "cat": "kernel", "name": f"file://{s}", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
         "args": {"External id": 1, "correlation": 1, "device": 0}},
    ]
    return json.dumps({
        "traceEvents": ev, "traceName": s, "schemaVersion": 1,
        "deviceProperties": [{"name": s, "id": 0}],
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1, "pg_config": s},
        "trace_id": x, "baseTimeNanoseconds": 0,
    }).encode()


def _opened_paths(record: list[tuple[str, tuple]]) -> set[str]:
    out = set()
    for event, args in record:
        if event == "open" and args and isinstance(args[0], (str, bytes, Path)):
            p = args[0]
            out.add(p.decode() if isinstance(p, bytes) else str(p))
    return out


def test_paths_in_a_trace_are_never_opened_or_run(tmp_path: Path) -> None:
    global _RECORD
    from trntui.cli import main

    sentinel = tmp_path / "secret.json"
    sentinel.write_text('{"traceEvents": []}')
    script = tmp_path / "evil.py"
    script.write_text("raise SystemExit('executed')\n")
    trace = tmp_path / "profile" / "trace.json"
    trace.parent.mkdir()
    trace.write_bytes(_trace_with_paths(sentinel, script))
    _install()

    def run_all() -> None:
        for fmt in ("table", "csv", "json", "markdown"):
            with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
                assert main(["summary", "--format", fmt, "--group-by-input-shapes", str(trace)]) == 0
        from trntui.analysis.links import build_links
        from trntui.session import load_profile

        prof = load_profile(trace.parent)
        build_links(prof)
        for i in range(len(prof)):
            prof.args(i)
        try:
            from trntui.analysis.chains import follow
        except ImportError:
            return
        for i in range(len(prof)):
            follow(prof, i)

    run_all()  # warm-up: lazy imports happen here, not in the recorded run
    _RECORD = []
    try:
        run_all()
        record = list(_RECORD)
    finally:
        _RECORD = None
    opened = _opened_paths(record)
    assert str(trace) in opened  # the recorder works: the trace itself is read
    assert str(sentinel) not in opened and str(script) not in opened, opened
    assert all(Path(p).resolve().is_relative_to(trace.parent.resolve()) or "/trntui/" in p or "site-packages" in p
               or p.startswith(("/dev/", "/proc/", sys.prefix, sys.base_prefix)) for p in opened), opened
    forbidden = [e for e, _ in record if e.startswith(("subprocess.", "os.system", "os.exec", "os.posix_spawn",
                                                        "os.spawn", "pickle.", "marshal.loads", "ctypes.dlopen",
                                                        "socket.", "webbrowser.", "urllib."))]
    assert not forbidden, forbidden
    executed = [a for e, a in record if e in ("exec", "compile")]
    assert not executed, executed[:3]


def test_neuron_loaders_do_not_follow_paths_in_traces(tmp_path: Path) -> None:
    """Paths inside Neuron JSON (e.g. a NEFF path recorded by the runtime) are not opened by the loader."""
    try:
        from trntui.loaders.neuron import json_export as neuron_json  # noqa: F401
    except ImportError:
        pytest.skip("no Neuron JSON loader in this build")
    global _RECORD
    from trntui.cli import main

    sentinel = tmp_path / "elsewhere" / "model.neff"
    sentinel.parent.mkdir()
    sentinel.write_bytes(b"NEFF")
    doc = {"traceEvents": [
        {"ph": "X", "cat": "privateuse1_runtime", "name": str(sentinel), "pid": 1, "tid": 1, "ts": 1, "dur": 5,
         "args": {"neff_path": str(sentinel), "ntff": str(sentinel), "model": str(sentinel)}}]}
    trace = tmp_path / "run" / "neuron_framework_trace_rank_0.json"
    trace.parent.mkdir()
    trace.write_text(json.dumps(doc))
    _install()
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        main(["summary", str(trace.parent)])
        _RECORD = []
        try:
            main(["summary", str(trace.parent)])
            record = list(_RECORD)
        finally:
            _RECORD = None
    assert str(sentinel) not in _opened_paths(record)
