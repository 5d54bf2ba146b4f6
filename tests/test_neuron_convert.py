"""Raw captures (only .pb/.ntff): converted with neuron-explorer into the trntui cache, or the exact command is
named when the tool is absent. The real tool is not available here: a fake executable stands in for it."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from trntui.analysis.key_averages import key_averages
from trntui.cli import main
from trntui.errors import LoadError
from trntui.session import find_runs, load_run
from trntui.loaders.neuron import convert as neuron_convert

REPO = Path(__file__).resolve().parents[1]
INST = "i-0a1b2c3d4e5f60718"
PID = 51001

FAKE_TOOL = """#!{python}
import os, sys
from pathlib import Path
args = sys.argv[1:]
with open(os.environ["FAKE_NEURON_LOG"], "a") as fh:
    fh.write(" ".join(args) + "\\n")
if os.environ.get("FAKE_NEURON_FAIL"):
    print("ERROR_PROCESS_INCOMPLETE: NTFF version 4 is not supported", file=sys.stderr)
    sys.exit(1)
Path("stray_system_profile.json").write_text("{{}}")  # Explorer drops files into its working directory
import importlib.util
spec = importlib.util.spec_from_file_location("mns", {script!r})
gen = importlib.util.module_from_spec(spec)
sys.modules["mns"] = gen
spec.loader.exec_module(gen)
cap = gen.build_capture("naive", pid={pid})
out = args[args.index("--output-file") + 1]
if args[args.index("--output-format") + 1] == "parquet":
    gen.write_parquet_export(cap, Path(out))
else:
    gen.write_json_export(cap, Path(out))
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
    def install(name: str = "neuron-explorer") -> Path:
        bindir = tmp_path / "bin"
        bindir.mkdir(exist_ok=True)
        exe = bindir / name
        exe.write_text(FAKE_TOOL.format(python=sys.executable, script=str(REPO / "scripts" / "make_neuron_samples.py"), pid=PID))
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
        monkeypatch.setenv("PATH", str(bindir))
        monkeypatch.setattr(neuron_convert, "EXTRA_PATHS", ())
        monkeypatch.setenv("TRNTUI_CACHE_DIR", str(tmp_path / "cache"))
        monkeypatch.setenv("FAKE_NEURON_LOG", str(tmp_path / "calls.log"))
        return tmp_path / "calls.log"

    return install


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


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
    profile = load_run(run)
    table = key_averages(profile)
    assert table.self_device_time_total[table.find("aten::mul")] == pytest.approx(1164.5)
    err = capsys.readouterr().err
    assert "$ " in err and "view -d" in err and "--output-format parquet --output-file" in err
    assert _snapshot(root) == before  # the profile directory is never written to
    cache = tmp_path / "cache" / "neuron"
    (entry,) = list(cache.iterdir())
    assert (entry / "stray_system_profile.json").is_file()  # the tool ran inside the cache, not the profile
    assert not (Path.cwd() / "stray_system_profile.json").exists()
    # a second open reuses the conversion
    load_run(find_runs(root)[0])
    assert len(log.read_text().splitlines()) == 1
    assert "using the conversion cached" in capsys.readouterr().err


def test_fake_neuron_profile_json_fallback(tmp_path: Path, fake_tool) -> None:
    log = fake_tool("neuron-profile")
    root = _raw_capture(tmp_path)
    profile = load_run(find_runs(root)[0])
    assert "--output-format json" in log.read_text()
    table = key_averages(profile)
    assert table.sum_self_device == pytest.approx(2354.9)


def test_failing_tool_reports_its_last_line(tmp_path: Path, fake_tool, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_tool()
    monkeypatch.setenv("FAKE_NEURON_FAIL", "1")
    root = _raw_capture(tmp_path)
    with pytest.raises(LoadError, match=r"failed \(exit 1\).*NTFF version 4"):
        load_run(find_runs(root)[0])
    assert not any((tmp_path / "cache" / "neuron").glob("[0-9a-f]*"))  # nothing half-written is cached


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
