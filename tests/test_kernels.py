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


def _times_cases(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """µs times and durations as traces hold them (epoch µs with fractions, small ints) mixed with the values the
    rules exist for: non-finite, huge, negative, -0.0, exactly on the ns rounding halves, near the clock's end."""
    pool_ts = np.array([0.0, -0.0, 1.0, 0.0005, 0.0015, 2.5e-4, -1.0, -0.0005, 1.7e12 + 0.123, 1.7e15 + 0.5,
                        4.611686018427388e15, 4.611686018427387e15, -4.611686018427388e15, 9.3e15, -9.3e15, 1e300,
                        -1e300, np.inf, -np.inf, np.nan, 1e-320, 123456.0005, 123456.0015])
    pool_dur = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 0.0005, 0.0025, 1e9, 4.6e15, -1e300, np.inf, -np.inf, np.nan,
                         1e-320, 3.0005])
    ts = rng.uniform(-1e6, 2e15, n)
    whole = rng.random(n) < 0.5
    ts[whole] = np.round(ts[whole], 3)  # (µs with ns digits, as Kineto writes them)
    dur = rng.choice([rng.uniform(0, 1e4), 0.0, 1.0], n) * rng.random(n)
    pick = rng.random(n) < 0.3
    ts[pick] = rng.choice(pool_ts, int(pick.sum()))
    pick = rng.random(n) < 0.3
    dur[pick] = rng.choice(pool_dur, int(pick.sum()))
    return ts, dur


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.dtype == b.dtype and a.tolist() == b.tolist()


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("base", [0, 1, 1_700_000_000_123_456_789, 2**62 - 1, 2**53 + 1])
def test_times_ns_equal_to_numpy(seed, base):
    from trntui.loaders.kineto import columns

    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 2000))
    ts, dur = _times_cases(rng, n)
    got = columns._times_ns(ts, dur, base)
    assert got is not None
    want = columns.interval_ns_numpy(ts, dur, base)
    assert _same(got[0], want[0]) and _same(got[1], want[1]) and _same(got[2], want[2]) and got[3] == want[3]
    got_f = columns._times_ns(ts, None, base)
    want_f = columns.flow_ns_numpy(ts, base)
    assert _same(got_f[0], want_f[0]) and _same(got_f[2], want_f[1])


def test_times_ns_public_functions_take_the_kernel_and_agree():
    from trntui.loaders.kineto import columns

    ts = np.array([1.0005, np.nan, 1e300, 5.0, -2.0])
    dur = np.array([2.0015, 1.0, 1.0, -3.0, np.inf])
    start, end, bad, n_neg = columns.interval_ns(ts, dur, 7)
    assert start.tolist() == [1007, 7, 7, 5007, 7] and end.tolist() == [3009, 7, 7, 5007, 7]
    assert bad.tolist() == [False, True, True, False, True] and n_neg == 1
    fs, fbad = columns.flow_ns(ts, 7)
    assert fs.tolist() == [1007, 7, 7, 5007, -1993] and fbad.tolist() == [False, True, True, False, False]
    start, end, bad, n_neg = columns.interval_ns(np.array([1.0]), np.array([2.0]), 0)
    assert bad is None and n_neg == 0


def test_times_ns_falls_back_where_it_declines():
    """Other dtypes and a base outside the clock go to numpy; the result is the numpy function's."""
    from trntui.loaders.kineto import columns

    ts32 = np.array([1.5, 2.25], np.float32)
    assert columns._times_ns(ts32, ts32, 0) is None
    assert columns._times_ns(np.array([1.0]), np.array([1.0]), -1) is None
