"""`--out` that cannot hold a capture: one line naming the path, exit 2, no traceback — issue 28 class 6."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from tests.conftest import run_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _out(kind: str, tmp_path: Path) -> tuple[Path, str]:
    afile = tmp_path / "afile"
    afile.write_text("x")
    return {
        "a file": (afile, f"--out {afile}: exists and is not a directory"),
        "under a file": (afile / "sub", f"--out {afile / 'sub'}: {afile} is not a directory"),
        "/dev/null": (Path("/dev/null"), "--out /dev/null: exists and is not a directory"),
        "under /dev/null": (Path("/dev/null/x"), "--out /dev/null/x: /dev/null is not a directory"),
    }[kind]


@pytest.mark.parametrize("kind", ["a file", "under a file", "/dev/null", "under /dev/null"])
def test_out_that_is_not_a_directory(kind, tmp_path, capsys) -> None:
    out, expect = _out(kind, tmp_path)
    rc, stdout, err = run_cli(capsys, "profile", "rmsnorm", "--variant", "fused", "--device", "cpu", "--no-tui",
                              "--steps", "1", "--out", str(out))
    assert rc == 2 and stdout == "", err
    assert err.splitlines() == [f"trntui: error: {expect}"]
    assert (tmp_path / "afile").read_text() == "x"


def test_a_disk_that_fills_during_the_capture(tmp_path) -> None:
    """Room for the up-front probe, none for the trace: the line names the variant directory."""
    code = ("import resource, signal, sys\n"
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (4200, 4200))\n"
            "from trntui.cli import main\n"
            f"sys.exit(main(['profile', 'rmsnorm', '--variant', 'naive', '--device', 'cpu', '--no-tui', "
            f"'--steps', '1', '--out', {str(tmp_path / 'fs')!r}]))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("trntui: error: ")]
    assert len(errors) == 1 and errors[0] == proc.stderr.splitlines()[-1], proc.stderr
    assert str(tmp_path / "fs.partial") in errors[0]
    assert not (tmp_path / "fs").exists()
