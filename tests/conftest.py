"""Shared fixtures: the real-trace corpus and small helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORPUS = (REPO / ".." / "shared" / "corpus" / "kineto").resolve()


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The real Kineto traces (HTA test data, MIT) that every build must load."""
    if not CORPUS.is_dir():
        pytest.fail(f"trace corpus not found at {CORPUS} (expected ../shared/corpus/kineto beside the repo)")
    return CORPUS


@pytest.fixture(scope="session")
def repo_dir() -> Path:
    return REPO
