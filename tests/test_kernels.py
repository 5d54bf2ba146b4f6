"""The compiled array kernels (trntui/model/_kernels.c) against their numpy fallbacks: identical results on random
input (many threads, nested and overlapping events, zero-length ones, equal ends) and on the edges (int64 limits,
one event, one thread), and a profile's key_averages table equal on both paths."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from trntui.analysis.key_averages import cpu_tree
from trntui.model import kernels

pytestmark = pytest.mark.skipif(kernels._kernels is None, reason="the compiled kernels are not built in this install")


def _sorted_events(rng: np.random.Generator, n: int, threads: int, span: int) -> tuple[np.ndarray, ...]:
    keys = rng.integers(0, threads, n)
    s = rng.integers(0, span, n)
    d = rng.choice([0, 1, 2, 5, 50, span // 3 + 1], n)
    e = s + d
    order = np.lexsort((-e, s, keys))  # (thread, start, longest first): the order the CPU tree sorts by
    return keys[order], s[order], e[order]


def _compiled(keys: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    return cpu_tree._stack_parents(keys, s, e)


def _reference(keys: np.ndarray, s: np.ndarray, e: np.ndarray) -> list[int]:
    """torch's stack walk written out (pop while the top ended too early for us), one thread at a time."""
    out, stack = [], []
    for i in range(len(s)):
        if i == 0 or keys[i] != keys[i - 1]:
            stack = []
        while stack and not (e[stack[-1]] >= e[i] and e[stack[-1]] > s[i] if e[i] == s[i] else e[stack[-1]] >= e[i]):
            stack.pop()
        out.append(stack[-1] if stack else -1)
        stack.append(i)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_stack_parents_equal_to_numpy_on_random_events(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 3000))
    keys, s, e = _sorted_events(rng, n, int(rng.choice([1, 2, 7, 300, 5000])), int(rng.choice([10, 1000, 10**9])))
    got = _compiled(keys, s, e)
    assert got.tolist() == cpu_tree.stack_parents_numpy(keys, s, e).tolist()
    if n <= 600:
        assert got.tolist() == _reference(keys, s, e)


def test_stack_parents_at_the_int64_limits():
    big = np.iinfo(np.int64).max
    keys = np.zeros(4, np.int64)
    s = np.array([0, big - 1, big, big], np.int64)
    e = np.array([big, big, big, big], np.int64)  # (the last two are zero-length at the largest time)
    assert _compiled(keys, s, e).tolist() == cpu_tree.stack_parents_numpy(keys, s, e).tolist()
    one = np.zeros(1, np.int64)
    assert _compiled(one, one, one).tolist() == cpu_tree.stack_parents_numpy(one, one, one).tolist() == [-1]


def test_python_path_setting_turns_the_kernels_off(monkeypatch):
    monkeypatch.setenv("TRNTUI_KINETO_PARSER", "python")
    assert kernels.kernel() is None
    monkeypatch.setenv("TRNTUI_KINETO_PARSER", "compiled")
    assert kernels.kernel() is kernels._kernels


CORPUS = sorted((Path(__file__).parent / "data" / "kineto").glob("*.json*"))


@pytest.mark.parametrize("trace", CORPUS, ids=lambda p: p.name)
def test_key_averages_equal_with_and_without_the_kernels(monkeypatch, trace):
    from trntui.analysis.key_averages import key_averages
    from trntui.loaders.kineto.load import load_kineto

    tables = []
    for setting in ("compiled", "python"):
        monkeypatch.setenv("TRNTUI_KINETO_PARSER", setting)
        tables.append(key_averages(load_kineto(trace)).rows())
    assert tables[0] == tables[1] and tables[0]
