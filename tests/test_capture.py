"""`trntui profile rmsnorm --device cpu --no-tui`, for real (torch CPU, no mocks) — issue 4.

One capture of all three variants (module-scoped; the compiled variant costs an inductor compile) feeds every
assertion about directories, manifests and the printed tables.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch  # captures or profiles with torch: `-m "not torch"` leaves them out

from trntui.analysis.key_averages import key_averages  # noqa: E402
from trntui.cli import main  # noqa: E402
from trntui.session import find_runs, load_run  # noqa: E402

VARIANTS = ("naive", "fused", "compiled")
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cpu_capture(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("capture") / "rmsnorm-cpu"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        rc = main(["profile", "rmsnorm", "--device", "cpu", "--no-tui", "--out", str(out)])
    return {"rc": rc, "out": out, "stdout": stdout.getvalue(), "stderr": stderr.getvalue()}


def table_sections(text: str) -> dict[str, dict[str, int]]:
    """`== title ==` sections of printed key_averages tables → {title: {row name: # of Calls}}."""
    sections: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in text.splitlines():
        m = re.fullmatch(r"== (.+) ==", line.strip())
        if m:
            current = sections.setdefault(m.group(1), {})
            continue
        if current is None or not line or line.startswith(("-", "Name", "Self ")):
            continue
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) >= 7 and cells[-1].isdigit():
            current[cells[0]] = current.get(cells[0], 0) + int(cells[-1])
    return sections


def assert_rmsnorm_shape(counts: dict[str, dict[str, int]]) -> None:
    naive = counts["naive"]
    assert naive["aten::mul"] == 3
    for op in ("aten::mean", "aten::rsqrt", "aten::add"):
        assert naive[op] == 1, (op, naive)
    fused = counts["fused"]
    fused_op = "aten::_fused_rms_norm" if "aten::_fused_rms_norm" in fused else "aten::rms_norm"
    assert fused[fused_op] == 1
    compiled = counts["compiled"]
    regions = [name for name in compiled if name.startswith("Torch-Compiled Region")]
    assert len(regions) == 1 and compiled[regions[0]] == 1, compiled
    assert "aten::rsqrt" not in compiled  # fused by inductor into one kernel call


def test_capture_exits_zero_and_reports_progress(cpu_capture: dict) -> None:
    assert cpu_capture["rc"] == 0, cpu_capture["stderr"]
    err = cpu_capture["stderr"]
    for name in VARIANTS:
        assert f"{name}: warming up" in err and f"wrote {name}/trace.json" in err
    assert "error" not in err


def test_variant_directories_and_manifests(cpu_capture: dict) -> None:
    out: Path = cpu_capture["out"]
    assert sorted(p.name for p in out.iterdir()) == sorted(VARIANTS)
    assert not out.with_name(out.name + ".partial").exists()
    for name in VARIANTS:
        vdir = out / name
        assert (vdir / "trace.json").is_file()
        manifest = json.loads((vdir / "trntui.json").read_text())
        assert list(manifest)[-1] == "complete" and manifest["complete"] is True
        assert manifest["workload"] == "rmsnorm" and manifest["variant"] == name
        assert manifest["device"] == "cpu" and manifest["dtype"] == "bfloat16"
        assert manifest["shape"] == [4, 512]
        assert manifest["input_shapes"] == [[4, 512], [512]]
        assert manifest["versions"]["torch"] == torch.__version__
        assert "torch_neuronx" not in manifest["versions"]
        assert manifest["host"] and manifest["started"] and manifest["finished"]
        assert manifest["command"].startswith("trntui profile rmsnorm --device cpu")
        assert manifest["trace"] == "trace.json"
        assert manifest["profiler"]["activities"] == ["CPU"]
        assert manifest["profiler"]["schedule"] == {"wait": 2, "warmup": 1, "active": 1, "repeat": 1, "steps": 4}
        assert manifest["compile_backend"] == "inductor"


def test_printed_tables_have_the_walkthrough_shape(cpu_capture: dict) -> None:
    counts = table_sections(cpu_capture["stdout"])
    assert set(VARIANTS) <= set(counts)
    assert_rmsnorm_shape(counts)
    # one warm step recorded: one ProfilerStep row per variant
    for name in VARIANTS:
        steps = [n for n in counts[name] if n.startswith("ProfilerStep")]
        assert len(steps) == 1 and counts[name][steps[0]] == 1
    assert "Variant" in cpu_capture["stdout"].splitlines()[-4]  # the side-by-side lines close the output


def test_loaders_and_summary_accept_parent_and_variant(cpu_capture: dict, capsys: pytest.CaptureFixture) -> None:
    out: Path = cpu_capture["out"]
    runs = find_runs(out)
    assert [r.name for r in runs] == list(VARIANTS)  # in capture order, from the manifests
    counts = {}
    for run in runs:
        assert run.manifest["complete"] is True and run.manifest["variant"] == run.name
        table = key_averages(load_run(run))
        counts[run.name] = {table.name[k]: int(table.count[k]) for k in range(len(table))}
    assert_rmsnorm_shape(counts)
    assert main(["summary", str(out)]) == 0
    parent = capsys.readouterr().out
    assert all(f"== {name} ==" in parent for name in VARIANTS)
    assert main(["summary", str(out / "naive")]) == 0
    single = capsys.readouterr().out
    assert "aten::rsqrt" in single and "==" not in single


def test_incomplete_manifest_hides_a_variant(cpu_capture: dict, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(cpu_capture["out"], copy)
    manifest_path = copy / "fused" / "trntui.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["complete"] = False
    manifest_path.write_text(json.dumps(manifest))
    assert [r.name for r in find_runs(copy)] == ["naive", "compiled"]


def test_one_variant_and_schedule_options(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "fused-only"
    rc = main(["profile", "rmsnorm", "--device", "cpu", "--no-tui", "--variant", "fused", "--steps", "5",
               "--active", "2", "--dtype", "fp32", "--shape", "2x3x64", "--out", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert [p.name for p in out.iterdir()] == ["fused"]
    manifest = json.loads((out / "fused" / "trntui.json").read_text())
    assert manifest["profiler"]["schedule"] == {"wait": 2, "warmup": 1, "active": 2, "repeat": 1, "steps": 5}
    assert manifest["dtype"] == "float32" and manifest["input_shapes"] == [[2, 3, 64], [64]]
    table = key_averages(load_run(find_runs(out)[0]))
    steps = [table.name[k] for k in range(len(table)) if table.name[k].startswith("ProfilerStep")]
    assert len(steps) == 1 and int(table.count[table.name.index(steps[0])]) == 2  # two active steps recorded
    # --force replaces an earlier capture; without it the directory is refused
    assert main(["profile", "rmsnorm", "--device", "cpu", "--no-tui", "--variant", "naive", "--out", str(out)]) == 2
    assert "pass --force" in capsys.readouterr().err
    assert main(["profile", "rmsnorm", "--device", "cpu", "--no-tui", "--variant", "naive", "--force",
                 "--out", str(out)]) == 0
    assert [p.name for p in out.iterdir()] == ["naive"]


def test_bundled_sample_profiles_are_real_cpu_captures() -> None:
    root = REPO / "sample_profiles" / "cpu"
    runs = find_runs(root)
    assert [r.name for r in runs] == list(VARIANTS)  # in capture order, from the manifests
    counts = {}
    for run in runs:
        manifest = run.manifest
        assert manifest["complete"] is True and manifest["device"] == "cpu" and manifest["workload"] == "rmsnorm"
        assert manifest["command"].startswith("trntui profile rmsnorm --device cpu")
        assert (run.root / "trace.json").stat().st_size < 100_000
        table = key_averages(load_run(run))
        counts[run.name] = {table.name[k]: int(table.count[k]) for k in range(len(table))}
    assert_rmsnorm_shape(counts)


def test_capture_modules_do_not_import_torch_until_used() -> None:
    code = (
        "import sys\n"
        "import trntui.capture, trntui.capture.runner, trntui.capture.devices, trntui.capture.builtins\n"
        "import trntui.commands.profile\n"
        "from trntui.cli import build_parser\n"
        "build_parser()\n"
        "assert 'torch' not in sys.modules\n"
        "assert not [m for m in sys.modules if m.startswith('textual')]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_terminal_opens_the_app_on_the_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture) -> None:
    import trntui.commands.profile as profile_cmd

    opened: list[Path] = []
    monkeypatch.setattr(profile_cmd, "_tui_launcher", lambda several=False: lambda path: opened.append(path) or 0)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)  # the app needs keys too (issue 19)
    out = tmp_path / "tty"
    assert main(["profile", "rmsnorm", "--device", "cpu", "--variant", "fused", "--out", str(out)]) == 0
    assert opened == [out]
    assert "== fused ==" not in capsys.readouterr().out  # the app, not the tables
    # without a TUI in the build: the tables instead
    monkeypatch.setattr(profile_cmd, "_tui_launcher", lambda several=False: None)
    assert main(["profile", "rmsnorm", "--device", "cpu", "--variant", "fused", "--force", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "aten::_fused_rms_norm" in captured.out or "aten::rms_norm" in captured.out
    assert "TUI is not available" in captured.err


def test_several_variants_end_in_the_compare_view() -> None:
    """`--variant all` on a terminal opens the compare view; one variant opens the explorer."""
    import trntui.commands.compare as compare_cmd
    import trntui.commands.open as open_cmd
    import trntui.commands.profile as profile_cmd

    assert profile_cmd._tui_launcher(several=True) is compare_cmd.launch_compare
    assert profile_cmd._tui_launcher(several=False) is open_cmd.launch
