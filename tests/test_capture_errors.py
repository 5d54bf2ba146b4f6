"""`trntui profile` failures: one line on stderr, exit 2, and never a directory that looks complete — issue 4."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch  # captures or profiles with torch: `-m "not torch"` leaves them out

from trntui.cli import main  # noqa: E402


def fail(capsys: pytest.CaptureFixture, *argv: str) -> str:
    """Run the CLI, expect exit 2 and exactly one stderr line; return that line."""
    rc = main(["profile", *argv])
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("trntui: error: ")
    return lines[0]


def write(path: Path, source: str) -> Path:
    path.write_text(textwrap.dedent(source))
    return path


def test_unknown_workload(capsys, tmp_path) -> None:
    line = fail(capsys, "nosuch", "--device", "cpu", "--no-tui", "--out", str(tmp_path / "o"))
    assert line == ("trntui: error: unknown workload 'nosuch' (built-ins: rmsnorm; "
                    "or give path/to/file.py:function or module:function)")
    assert not (tmp_path / "o").exists()


def test_unknown_variant(capsys, tmp_path) -> None:
    line = fail(capsys, "rmsnorm", "--variant", "turbo", "--device", "cpu", "--no-tui")
    assert line == "trntui: error: rmsnorm has no variant 'turbo' (variants: naive, fused, compiled, all)"


def test_missing_file(capsys, tmp_path) -> None:
    missing = tmp_path / "nope.py"
    line = fail(capsys, f"{missing}:make_workload", "--device", "cpu", "--no-tui")
    assert line == f"trntui: error: {missing}: no such file"


def test_missing_function(capsys, tmp_path) -> None:
    f = write(tmp_path / "wl.py", """
        def other():
            return None
    """)
    line = fail(capsys, f"{f}:make_workload", "--device", "cpu", "--no-tui")
    assert line == f"trntui: error: {f} has no function 'make_workload' (functions defined there: other)"


def test_missing_module(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    line = fail(capsys, "no_such_module_xyz:build", "--device", "cpu", "--no-tui")
    assert line.startswith("trntui: error: no module named 'no_such_module_xyz'")


def test_file_that_fails_to_import(capsys, tmp_path) -> None:
    f = write(tmp_path / "broken.py", "import no_such_package_xyz\n")
    line = fail(capsys, str(f), "--device", "cpu", "--no-tui")
    assert line == (f"trntui: error: {f}: error while importing it: "
                    "ModuleNotFoundError: No module named 'no_such_package_xyz'")


def test_function_that_raises(capsys, tmp_path) -> None:
    f = write(tmp_path / "raiser.py", """
        def make_workload(ctx):
            raise ValueError("no inputs for you")
    """)
    out = tmp_path / "o"
    line = fail(capsys, f"{f}:make_workload", "--device", "cpu", "--no-tui", "--out", str(out))
    assert line == f"trntui: error: {f}:make_workload raised ValueError: no inputs for you"
    assert not out.exists() and not out.with_name("o.partial").exists()


def test_function_returning_garbage(capsys, tmp_path) -> None:
    f = write(tmp_path / "garbage.py", """
        def make_workload():
            return 42
    """)
    line = fail(capsys, str(f), "--device", "cpu", "--no-tui")
    assert line.startswith(f"trntui: error: {f}:make_workload returned a int; expected (fn, args)")


def test_workload_that_raises_while_running_leaves_an_incomplete_directory(capsys, tmp_path) -> None:
    f = write(tmp_path / "crash.py", """
        import torch

        def ok(x):
            return x + 1

        def crash(x):
            raise RuntimeError("kaboom")

        def make_workload(ctx):
            x = torch.ones(4)
            return {"ok": (ok, (x,)), "crash": (crash, (x,))}
    """)
    out = tmp_path / "run"
    rc = main(["profile", str(f), "--device", "cpu", "--no-tui", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    errors = [l for l in err.splitlines() if "error" in l]
    assert len(errors) == 1 and errors[0] == err.splitlines()[-1]
    assert errors[0].startswith("trntui: error: crash: the workload raised RuntimeError: kaboom during warm-up")
    assert not out.exists()  # never renamed into place
    partial = tmp_path / "run.partial"
    ok = json.loads((partial / "ok" / "trntui.json").read_text())
    crash = json.loads((partial / "crash" / "trntui.json").read_text())
    assert ok["complete"] is True  # that variant did finish
    assert crash["complete"] is False and "kaboom" in crash["error"]
    from trntui.session import find_runs

    assert [r.name for r in find_runs(partial)] == ["ok"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present")
def test_cuda_not_available(capsys) -> None:
    line = fail(capsys, "rmsnorm", "--device", "cuda", "--no-tui")
    assert line.startswith("trntui: error: --device cuda: CUDA is not available (")
    assert line.endswith("); use --device cpu")


def test_neuron_without_torch_neuronx(capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torch_neuronx", None)  # import torch_neuronx → ImportError
    line = fail(capsys, "rmsnorm", "--device", "neuron", "--no-tui")
    assert line.startswith("trntui: error: --device neuron: torch_neuronx is not installed")


def test_torch_not_installed(capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch → ImportError
    line = fail(capsys, "rmsnorm", "--device", "cpu", "--no-tui")
    assert line == "trntui: error: torch is not installed: pip install 'trntui[profile]'"


def test_out_dir_that_is_not_a_capture_is_never_replaced(capsys, tmp_path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("do not delete")
    line = fail(capsys, "rmsnorm", "--device", "cpu", "--no-tui", "--force", "--out", str(precious))
    assert "not a trntui capture directory" in line
    assert (precious / "thesis.tex").read_text() == "do not delete"


def test_bad_schedule(capsys) -> None:
    line = fail(capsys, "rmsnorm", "--device", "cpu", "--no-tui", "--steps", "2", "--active", "3")
    assert line == "trntui: error: --steps (2) must be at least --active (3)"


def test_bad_shape_is_an_argparse_error(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["profile", "rmsnorm", "--shape", "4xfoo"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines() == ["trntui: error: argument --shape: '4xfoo' is not a shape like 4x512"]
