"""The rank-job generator (scripts/make_rank_job.py), importable from tests: a real corpus rank replicated into
an N-rank job with one slowed rank (SYNTHETIC timings: see the script's docstring)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from tests.scripts import REPO, script_module

__all__ = ["REPO", "SOURCE", "generator", "make_job"]

SOURCE = "cuda_sampled_rank0.json.gz"
"""The corpus rank the test jobs are made of: a real 2-step NCCL training rank (4,855 events, 10 collective
kernels), small enough that 16 ranks load in a few seconds."""


def generator() -> ModuleType:
    return script_module("make_rank_job")


def make_job(corpus_dir: Path, out: Path, **kw) -> list[Path]:
    """An N-rank job under `out` from the corpus rank (keywords: ranks, slow_rank, slow, jitter, seed, sync)."""
    return generator().make_job(corpus_dir / SOURCE, out, **kw)
