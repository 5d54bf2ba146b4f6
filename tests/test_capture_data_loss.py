"""`trntui profile --out X` never removes what trntui did not create — issue 28 class 1.

Reproductions from the issue: a user's `proj.partial/important.txt` was deleted by `--out proj` (no --force);
`--force` deleted a whole directory holding a `trntui.json` of `{}` beside `thesis.tex` and `data/raw.bin`;
a symlinked `X.partial` gave "Cannot call rmtree on a symbolic link".
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from tests.conftest import run_cli  # noqa: E402


def _one_error(rc: int, out: str, err: str) -> str:
    assert rc == 2, (rc, out, err)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("trntui: error: "), err
    assert "Traceback" not in err and "rmtree" not in err
    return lines[0]


def _profile(capsys, out: Path, *extra: str):
    return run_cli(capsys, "profile", "rmsnorm", "--variant", "fused", "--device", "cpu", "--no-tui", "--steps", "1",
                   "--out", str(out), *extra)


def test_an_existing_partial_is_never_removed_without_force(tmp_path, capsys) -> None:
    partial = tmp_path / "proj.partial"
    partial.mkdir()
    (partial / "important.txt").write_text("mine")
    line = _one_error(*_profile(capsys, tmp_path / "proj"))
    assert str(partial) in line and "--force" in line
    assert (partial / "important.txt").read_text() == "mine"
    # with --force too: it is not trntui's
    line = _one_error(*_profile(capsys, tmp_path / "proj", "--force"))
    assert "important.txt" in line and "not made by trntui" in line
    assert (partial / "important.txt").read_text() == "mine"
    assert not (tmp_path / "proj").exists()


def test_force_never_removes_a_directory_with_a_forged_manifest(tmp_path, capsys) -> None:
    thesis = tmp_path / "thesis"
    (thesis / "data").mkdir(parents=True)
    (thesis / "trntui.json").write_text("{}")
    (thesis / "thesis.tex").write_text("chapter 1")
    (thesis / "data" / "raw.bin").write_bytes(b"\0" * 16)
    line = _one_error(*_profile(capsys, thesis, "--force"))
    assert "not a trntui capture directory" in line and "in the way" in line
    assert (thesis / "thesis.tex").read_text() == "chapter 1"
    assert (thesis / "data" / "raw.bin").stat().st_size == 16 and (thesis / "trntui.json").is_file()


def test_force_spares_a_user_file_inside_an_earlier_capture(tmp_path, capsys) -> None:
    out = tmp_path / "cap"
    rc, _, err = _profile(capsys, out)
    assert rc == 0, err
    (out / "fused" / "notes.txt").write_text("my notes")
    line = _one_error(*_profile(capsys, out, "--force"))
    assert "notes.txt" in line
    assert (out / "fused" / "notes.txt").read_text() == "my notes"
    assert json.loads((out / "fused" / "trntui.json").read_text())["complete"] is True  # nothing was removed
    (out / "fused" / "notes.txt").unlink()
    rc, _, err = _profile(capsys, out, "--force")  # an earlier capture alone is replaced
    assert rc == 0, err
    assert [p.name for p in out.iterdir()] == ["fused"]


def test_an_earlier_unfinished_capture_is_replaced_only_with_force(tmp_path, capsys) -> None:
    out = tmp_path / "cap"
    rc, _, err = _profile(capsys, out)
    assert rc == 0, err
    os.rename(out, tmp_path / "cap.partial")  # as a capture that did not finish leaves it
    line = _one_error(*_profile(capsys, out))
    assert "cap.partial exists" in line
    rc, _, err = _profile(capsys, out, "--force")
    assert rc == 0, err
    assert not (tmp_path / "cap.partial").exists() and (out / "fused" / "trntui.json").is_file()


@pytest.mark.parametrize("target", ["dir", "dangling"])
def test_a_symlinked_partial_is_an_error_line(target, tmp_path, capsys) -> None:
    elsewhere = tmp_path / "elsewhere"
    if target == "dir":
        elsewhere.mkdir()
        (elsewhere / "keep.txt").write_text("keep")
    (tmp_path / "proj.partial").symlink_to(elsewhere)
    for extra in ((), ("--force",)):
        line = _one_error(*_profile(capsys, tmp_path / "proj", *extra))
        assert "proj.partial is a symbolic link" in line
    assert (tmp_path / "proj.partial").is_symlink()
    if target == "dir":
        assert (elsewhere / "keep.txt").read_text() == "keep"
    else:
        assert not elsewhere.exists()


def test_a_symlinked_out_is_an_error_line(tmp_path, capsys) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "keep.txt").write_text("keep")
    (tmp_path / "link").symlink_to(real)
    line = _one_error(*_profile(capsys, tmp_path / "link", "--force"))
    assert "is a symbolic link" in line
    assert (real / "keep.txt").read_text() == "keep"
