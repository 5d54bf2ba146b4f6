"""The atheris entry point (fuzz/fuzz_kineto.py) keeps working without atheris: its check passes on its seeds
and on the whole malformed corpus, and it flags what it should (a non-TrntuiError exception)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

from malformed import build_corpus  # noqa: E402


def _entry():
    spec = importlib.util.spec_from_file_location("fuzz_kineto", ROOT / "fuzz" / "fuzz_kineto.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_fuzz_check_accepts_seeds_and_the_malformed_corpus(tmp_path: Path) -> None:
    mod = _entry()
    for data in mod.seeds():
        mod.check(data)
    for case in build_corpus(tmp_path):
        if case.path.is_file() and not case.path.is_fifo():
            mod.check(case.path.read_bytes())


def test_fuzz_check_reports_unexpected_exceptions(monkeypatch) -> None:
    mod = _entry()
    import trntui.loaders.kineto as kineto

    monkeypatch.setattr(kineto, "load_kineto", lambda p: (_ for _ in ()).throw(ValueError("bug")))
    with pytest.raises(ValueError):
        mod.check(b"[]")
