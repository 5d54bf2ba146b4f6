"""Raw captures (only .pb/.ntff): converted with neuron-explorer into the trntui cache, never hanging the tool.

The real tool is not available here: fake executables stand in for it, each shaped like a behaviour seen in the
documentation or in third-party reports (neuron-formats.md §5, §12): a version that converts, one that blocks
forever (its UI server), one that stops with `FATA[0000] Missing --display-name`, one that leaves a partial
export, one that waits for an answer on stdin. Whatever the tool does, trntui ends within the timeout, shows
trace.json's table, exits 0 and says in one note which command to run by hand.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from trntui.analysis.key_averages import key_averages
from trntui.cli import main
from trntui.errors import LoadError
from trntui.loaders.neuron import convert as neuron_convert
from trntui.session import find_runs, load_run

REPO = Path(__file__).resolve().parents[1]
INST = "i-0a1b2c3d4e5f60718"
PID = 51001

FULL_HELP = """Usage: neuron-explorer view [flags]
Flags:
  -d, --directory string        profile directory
      --output-format string    parquet (default), json, perfetto, summary-text, summary-json
      --output-file string      where to write the output
      --ignore-device-profile   process the system profile only
      --ingest-only             process into the data path and exit
      --data-path string        data directory (default ~/.local/share/neuron-explorer)
      --display-name string     name of the profile
      --disable-ui              do not start the UI server
      --force                   overwrite existing output
"""
OLD_HELP = """Usage: neuron-explorer view -d DIR [--output-format FORMAT] [--output-file FILE]
"""

FAKE_TOOL = """#!{python}
import os, sys, time
from pathlib import Path
args = sys.argv[1:]
mode = os.environ.get("FAKE_MODE", "ok")
with open(os.environ["FAKE_NEURON_LOG"], "a") as fh:
    fh.write(" ".join(args) + "\\n")
if "--help" in args:
    print(os.environ.get("FAKE_HELP", ""))
    sys.exit(0)
Path("stray_system_profile.json").write_text("{{}}")  # Explorer drops files into its working directory
if mode == "hang":  # the UI server: never exits (a child in its process group too)
    import subprocess
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    Path(os.environ["FAKE_CHILD_PID"]).write_text(str(child.pid))
    print("Neuron Explorer listening on :3001", flush=True)
    time.sleep(3600)
if mode == "background":  # converts, and leaves a child running in its process group (`sleep 600 &`)
    import subprocess
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    Path(os.environ["FAKE_CHILD_PID"]).write_text(str(child.pid))
if mode == "ui":
    print("Neuron Explorer UI at http://localhost:3001 (ctrl-c to exit)", flush=True)
    time.sleep(3600)
if mode == "fata" or (mode == "fata-unless-name" and "--display-name" not in args):
    print("FATA[0000] Missing --display-name", file=sys.stderr)
    sys.exit(1)
if mode == "stdin":
    sys.stdout.write("Output exists. Overwrite? [y/N] ")
    sys.stdout.flush()
    if sys.stdin.readline().strip().lower() != "y":
        print("aborted: no answer", file=sys.stderr)
        sys.exit(1)
if mode == "fail":
    print("ERROR_PROCESS_INCOMPLETE: NTFF version 4 is not supported", file=sys.stderr)
    sys.exit(1)
import importlib.util
spec = importlib.util.spec_from_file_location("mns", {script!r})
gen = importlib.util.module_from_spec(spec)
sys.modules["mns"] = gen
spec.loader.exec_module(gen)
cap = gen.build_capture("naive", pid={pid})
if "--ingest-only" in args:
    out = Path(args[args.index("--data-path") + 1]) / "profiles" / "global" / (args[args.index("--display-name") + 1] + "@latest")
    fmt = "parquet"
else:
    out = Path(args[args.index("--output-file") + 1])
    fmt = args[args.index("--output-format") + 1]
if fmt == "parquet":
    gen.write_parquet_export(cap, out)
    if mode == "partial":  # cut short: the events table is a torn write
        p = out / "SystemProfileEvents.parquet"
        p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 3])
else:
    gen.write_json_export(cap, out)
"""


def _raw_capture(tmp_path: Path, with_trace: bool = True) -> Path:
    from tests.neuron_samples import generator

    gen = generator()
    ts = tmp_path / "profile_output" / f"{INST}_pid_{PID}" / "20261130_120000_000"
    ts.mkdir(parents=True)
    if with_trace:
        gen.write_trace(gen.build_capture("naive"), ts / "trace.json")
    for pb in ("ntrace.pb", "trace_info.pb"):
        (ts / pb).write_bytes(b"\x0a\x03raw")
    return tmp_path / "profile_output"


@pytest.fixture
def no_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty_bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(neuron_convert, "EXTRA_PATHS", ())
    monkeypatch.setenv("TRNTUI_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def fake_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def install(name: str = "neuron-explorer", mode: str = "ok", help_text: str = FULL_HELP) -> Path:
        bindir = tmp_path / "bin"
        bindir.mkdir(exist_ok=True)
        exe = bindir / name
        exe.write_text(FAKE_TOOL.format(python=sys.executable, script=str(REPO / "scripts" / "make_neuron_samples.py"), pid=PID))
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
        monkeypatch.setenv("PATH", str(bindir) + os.pathsep + os.path.dirname(sys.executable))
        monkeypatch.setattr(neuron_convert, "EXTRA_PATHS", ())
        monkeypatch.setenv("TRNTUI_CACHE_DIR", str(tmp_path / "cache"))
        monkeypatch.setenv("FAKE_NEURON_LOG", str(tmp_path / "calls.log"))
        monkeypatch.setenv("FAKE_MODE", mode)
        monkeypatch.setenv("FAKE_HELP", help_text)
        monkeypatch.setenv("FAKE_CHILD_PID", str(tmp_path / "child.pid"))
        (tmp_path / "calls.log").touch()
        return tmp_path / "calls.log"

    return install


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def _conversion_calls(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if "--help" not in line]


def test_without_the_tool_the_command_is_named(tmp_path: Path, no_tool: None, capsys: pytest.CaptureFixture) -> None:
    root = _raw_capture(tmp_path)
    (run,) = find_runs(root)
    assert run.name == f"rank0 ({INST}_pid_{PID})"
    profile = load_run(run)  # the framework trace still loads
    note = next(n for n in profile.meta.notes if "neuron-explorer is not installed" in n)
    assert f"neuron-explorer view -d {run.root} --output-format parquet --output-file" in note
    assert main(["summary", str(root)]) == 0
    assert "neuron-explorer view -d" in capsys.readouterr().out
    assert main(["info", str(root)]) == 0
    assert "neuron-explorer view -d" in capsys.readouterr().out


def test_without_the_tool_and_without_trace_json_it_fails_with_the_command(
    tmp_path: Path, no_tool: None, capsys: pytest.CaptureFixture
) -> None:
    root = _raw_capture(tmp_path, with_trace=False)
    assert main(["summary", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("trntui: error:") and "neuron-explorer view -d" in err and "--output-format parquet" in err
    assert len(err.strip().splitlines()) == 1


def test_fake_neuron_explorer_converts_into_the_cache(tmp_path: Path, fake_tool, capsys: pytest.CaptureFixture) -> None:
    log = fake_tool()
    root = _raw_capture(tmp_path)
    before = _snapshot(root)
    (run,) = find_runs(root)
    assert run.inputs is None  # not converted yet: nothing to key a cache entry by
    profile = load_run(run)
    table = key_averages(profile)
    assert table.self_device_time_total[table.find("aten::mul")] == pytest.approx(1164.5)
    err = capsys.readouterr().err
    assert "$ " in err and "view -d" in err and "--output-format parquet --output-file" in err
    (call,) = _conversion_calls(log)
    assert "--ignore-device-profile" in call  # the installed version lists it: the system trace is all we read
    assert _snapshot(root) == before  # the profile directory is never written to
    cache = tmp_path / "cache" / "neuron"
    (entry,) = [p for p in cache.iterdir() if not p.name.startswith(".")]
    assert (entry / "stray_system_profile.json").is_file()  # the tool ran inside the cache, not the profile
    assert not (Path.cwd() / "stray_system_profile.json").exists()
    # a second open reuses the conversion, and the converted output is an input like any other: cacheable
    (run2,) = find_runs(root)
    assert run2.inputs is not None and any(p.name == "ntrace.pb" for p in run2.inputs)
    assert any(p.name == "SystemProfileEvents.parquet" for p in run2.inputs)
    load_run(run2)
    assert len(_conversion_calls(log)) == 1
    assert "using the conversion cached" in capsys.readouterr().err


def test_fake_neuron_profile_json_fallback(tmp_path: Path, fake_tool) -> None:
    log = fake_tool("neuron-profile")
    root = _raw_capture(tmp_path)
    profile = load_run(find_runs(root)[0])
    assert "--output-format json" in log.read_text()
    table = key_averages(profile)
    assert table.sum_self_device == pytest.approx(2354.9)


def test_routes_follow_the_installed_help(tmp_path: Path) -> None:
    s = tmp_path / "s"
    full = neuron_convert.routes("neuron-explorer", "ne", s, tmp_path / "w", FULL_HELP)
    assert [r.name for r in full] == ["parquet", "ingest", "disable-ui"]
    assert full[0].argv[-1] == "--ignore-device-profile"
    assert full[1].argv[full[1].argv.index("--display-name") + 1] == "trntui"
    assert full[1].export_dir == tmp_path / "w" / "data" / "profiles" / "global" / "trntui@latest"
    assert full[2].argv[-2:] == ["--disable-ui", "--force"]
    old = neuron_convert.routes("neuron-explorer", "ne", s, tmp_path / "w", OLD_HELP)
    assert [r.name for r in old] == ["parquet"] and "--ignore-device-profile" not in old[0].argv
    assert [r.name for r in neuron_convert.routes("neuron-explorer", "ne", s, tmp_path / "w", "")] == ["parquet"]


def test_display_name_route_after_fata(tmp_path: Path, fake_tool) -> None:
    """A version that wants --display-name: route 1 stops with FATA, the ingest route reads
    D/profiles/global/N@latest/."""
    log = fake_tool(mode="fata-unless-name")
    root = _raw_capture(tmp_path)
    profile = load_run(find_runs(root)[0])
    assert key_averages(profile).sum_self_device == pytest.approx(2354.9)
    calls = _conversion_calls(log)
    assert len(calls) == 2 and "--ingest-only" in calls[1] and "--display-name trntui" in calls[1]
    assert not any("could not convert" in n for n in profile.meta.notes)


@pytest.mark.parametrize(
    "mode,why",
    [
        ("hang", r"timed out after 4 s"),
        ("ui", r"started its UI server"),
        ("fata", r"exit 1: FATA\[0000\] Missing --display-name"),
        ("partial", r"unreadable SystemProfileEvents Parquet .* \(a partial export\)"),
        ("stdin", r"exit 1: Output exists\. Overwrite\? \[y/N\] aborted: no answer"),  # EOF, not a wait
    ],
)
def test_a_tool_that_hangs_or_fails_never_sinks_the_load(tmp_path: Path, fake_tool, mode: str, why: str) -> None:
    """The CLI in a process of its own, its stdin an open pipe nobody writes to (a tool that inherited it would
    wait forever): within the timeout it prints trace.json's table, exits 0, and one note says what happened and
    the exact command to run by hand. Nothing half-written stays in the cache; no process is left behind."""
    fake_tool(mode=mode)
    root = _raw_capture(tmp_path)
    before = _snapshot(root)
    env = dict(os.environ, PYTHONPATH=str(REPO), TRNTUI_NO_PROGRESS="1")
    with (tmp_path / "out.txt").open("wb") as out_f, (tmp_path / "err.txt").open("wb") as err_f:
        proc = subprocess.Popen([sys.executable, "-m", "trntui.cli", "summary", str(root), "--convert-timeout", "4"],
                                stdin=subprocess.PIPE, stdout=out_f, stderr=err_f, env=env, cwd=tmp_path)
        try:
            rc = proc.wait(timeout=180)  # a hang fails the test here instead of blocking the suite
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdin.close()
    out, err = (tmp_path / "out.txt").read_text(), (tmp_path / "err.txt").read_text()
    assert rc == 0, err
    assert re.search(r"^\s+aten::mul\s", out, re.M)  # trace.json's table
    notes = [line for line in out.splitlines() if line.startswith("Note:") and "neuron-explorer" in line]
    assert len(notes) == 1, out
    (note,) = notes
    assert re.search(why, note), note
    assert "showing the framework trace alone. To convert by hand: neuron-explorer view -d " in note
    assert "--output-format parquet --output-file 20261130_120000_000_parquet --ignore-device-profile" in note
    assert _snapshot(root) == before
    cache = tmp_path / "cache" / "neuron"
    assert not (cache.exists() and any(cache.iterdir()))  # nothing half-written is kept
    child = tmp_path / "child.pid"
    if child.exists():  # the hanging tool's child was stopped with its process group
        assert not _alive(int(child.read_text()))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_a_background_child_the_tool_leaves_ends_with_it(tmp_path: Path, fake_tool) -> None:
    """A tool that converts and exits but leaves `sleep 600 &` in its process group: the group is ended when the
    tool finishes, nothing of it outlives the conversion."""
    fake_tool(mode="background")
    root = _raw_capture(tmp_path)
    profile = load_run(find_runs(root)[0])
    assert key_averages(profile).sum_self_device == pytest.approx(2354.9)
    child = int((tmp_path / "child.pid").read_text())
    assert not _alive(child)


def test_an_interrupted_conversion_ends_the_tools_process_group(tmp_path: Path) -> None:
    """Ctrl-C (here: KeyboardInterrupt from a timer) while the tool runs: the tool and its background child are
    ended before the interruption goes on."""
    import signal

    pids = tmp_path / "pids"
    script = ("import os, subprocess, sys, time\n"
              "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
              f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{c.pid}}')\n"
              "time.sleep(600)\n")

    def interrupt(*_a: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            neuron_convert._run([sys.executable, "-c", script], tmp_path, tmp_path / "tool.log", 60, lambda _m: None)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    tool, child = (int(x) for x in pids.read_text().split())
    assert not _alive(tool) and not _alive(child)


def test_failure_without_trace_json_is_one_line_error(tmp_path: Path, fake_tool, capsys: pytest.CaptureFixture) -> None:
    fake_tool(mode="fail")
    root = _raw_capture(tmp_path, with_trace=False)
    assert main(["summary", str(root), "--convert-timeout", "30"]) == 2
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if x.startswith("trntui: error:")]  # progress lines aside, one error
    assert "NTFF version 4" in line and "To convert by hand: neuron-explorer view -d" in line
    with pytest.raises(LoadError, match="could not convert"):
        load_run(find_runs(root)[0])


def test_cache_dir_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRNTUI_CACHE_DIR", str(tmp_path / "c"))
    assert neuron_convert.cache_root() == tmp_path / "c" / "neuron"
    monkeypatch.delenv("TRNTUI_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert neuron_convert.cache_root() == tmp_path / "x" / "trntui" / "neuron"
    d = tmp_path / "s"
    d.mkdir()
    (d / "ntrace.pb").write_bytes(b"1")
    h1 = neuron_convert.session_hash(d)
    (d / "ntrace.pb").write_bytes(b"22")
    assert neuron_convert.session_hash(d) != h1
    assert os.sep not in neuron_convert.session_hash(d)


def test_convert_timeout_option_is_checked(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        main(["summary", "x", "--convert-timeout", "soon"])
    assert "not a number of seconds" in capsys.readouterr().err
