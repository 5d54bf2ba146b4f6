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


def _flow_case(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Events on a few threads (nested, equal starts, zero-length, instants among them) in (start, longest first)
    order, and flow halves at slice starts, inside slices, between them, on threads without slices and on threads
    with more than 256 slices open at once (the walk's limit)."""
    from trntui.model.arrays import small_codes
    from trntui.model.profile import EventKind

    n = int(rng.integers(0, 1500))
    n_thr = int(rng.choice([1, 3, 9, 300]))
    pids = rng.choice([1, 7, -3, 2**40], n_thr)
    tids = rng.choice([1, 2, 3, 2**33 + 5, -1], n_thr)
    thr_keys = pids.astype(np.int64) * (1 << 32) + (tids.astype(np.int64) & 0xFFFFFFFF)
    t_of = rng.integers(0, n_thr, n)
    span = int(rng.choice([50, 10_000]))
    start = rng.integers(0, span, n)
    dur = rng.choice([0, 1, 3, 40, span], n)
    if rng.random() < 0.3:  # a deep stack: many slices open at once on one thread
        start[: n // 2] = np.arange(n // 2)
        dur[: n // 2] = span * 4
        t_of[: n // 2] = 0
    end = start + dur
    kinds = np.where(rng.random(n) < 0.9, EventKind.COMPLETE, EventKind.INSTANT).astype(np.int8)
    time_order = np.lexsort((-end, start)).astype(np.int64)
    threads, ev_thread = small_codes(thr_keys[t_of])
    nf = int(rng.integers(0, 800))
    on = rng.integers(0, n_thr + 2, nf)  # (n_thr and n_thr + 1: threads without events)
    fpid = np.where(on < n_thr, pids[np.minimum(on, n_thr - 1)], 99).astype(np.int64)
    ftid = np.where(on < n_thr, tids[np.minimum(on, n_thr - 1)], on).astype(np.int64)
    fts = rng.integers(-5, span * 5, nf)
    if n:
        at_start = rng.random(nf) < 0.4
        fts[at_start] = start[rng.integers(0, n, int(at_start.sum()))]
    if rng.random() < 0.4:  # in time order, as Kineto writes them (the kernel's search gallops from the last)
        fts.sort()
    return fts.astype(np.int64), fpid, ftid, start, end, threads, ev_thread, kinds, time_order


@pytest.mark.parametrize("seed", range(60))
def test_bind_flows_equal_to_numpy(seed):
    from trntui.loaders.kineto import flows

    case = _flow_case(np.random.default_rng(seed))
    got = np.full(len(case[0]), -1, np.int64)
    want = got.copy()
    flows._bind_compiled(got, *case)
    flows._bind_numpy(want, *case)
    assert got.tolist() == want.tolist()


def test_bind_flows_walks_back_at_most_the_limit():
    """A half under 300 open slices: bound to the innermost one containing it when that is within the limit's
    reach back, else to none (both paths)."""
    from trntui.loaders.kineto import flows
    from trntui.model.profile import EventKind

    m = 300
    start = 2 * np.arange(m, dtype=np.int64)  # slice k: [2k, 2k + 1) but the first, which spans everything
    end = start + 1
    end[0] = 10**6
    kinds = np.full(m, EventKind.COMPLETE, np.int8)
    threads = np.array([(5 << 32) + 6], np.int64)
    ev_thread = np.zeros(m, np.uint8)
    order = np.arange(m, dtype=np.int64)
    # 513: after slice 256, inside slice 0 only, 256 slices back (one beyond the limit's 256 looks); 511: inside
    # slice 0, 255 back (the 256th look); 20: slice 10 starts there
    fts = np.array([513, 511, 20], np.int64)
    one = np.array([5, 5, 5], np.int64), np.array([6, 6, 6], np.int64)
    for bind in (flows._bind_compiled, flows._bind_numpy):
        out = np.full(3, -1, np.int64)
        bind(out, fts, *one, start, end, threads, ev_thread, kinds, order)
        assert out.tolist() == [-1, 0, 10]


def test_bind_flows_with_nothing_to_bind():
    """No events, no halves, halves on a thread without slices (only instants): every half unbound, on both paths."""
    from trntui.loaders.kineto import flows
    from trntui.model.profile import EventKind

    e64 = np.zeros(0, np.int64)
    one_thread = np.array([(1 << 32) + 1], np.int64)
    cases = [
        (e64, e64, e64, e64, e64, e64, np.zeros(0, np.uint8), np.zeros(0, np.int8), e64),  # nothing at all
        (np.array([5, 6], np.int64), np.array([1, 1], np.int64), np.array([1, 1], np.int64), e64, e64, e64,
         np.zeros(0, np.uint8), np.zeros(0, np.int8), e64),  # halves, no events
        (np.array([5], np.int64), np.array([1], np.int64), np.array([1], np.int64), np.array([5], np.int64),
         np.array([5], np.int64), one_thread, np.zeros(1, np.uint8), np.array([EventKind.INSTANT], np.int8),
         np.zeros(1, np.int64)),  # its thread has an instant at the half's time, no slice
    ]
    for fts, fpid, ftid, start, end, threads, ev_thread, kinds, order in cases:
        for bind in (flows._bind_compiled, flows._bind_numpy):
            out = np.full(len(fts), -1, np.int64)
            bind(out, fts, fpid, ftid, start, end, threads, ev_thread, kinds, order)
            assert out.tolist() == [-1] * len(fts)


@pytest.mark.parametrize("seed", range(40))
def test_one_sided_flows_counted_as_numpy_counts_them(seed, monkeypatch):
    """`_count_one_sided`'s dense case: the compiled pass (touching only the slots the halves use) against the numpy
    table (zeroed, filled, counted whole): flows with a start only, a finish only, both, repeated halves, several
    categories, keys from 0 or from large offsets."""
    from trntui.loaders.kineto import flows
    from trntui.model.profile import Flows

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 5000))
    n_cat = int(rng.choice([1, 2, 5]))
    fcat = rng.integers(0, n_cat, n).astype(rng.choice([np.int16, np.int64]))
    lo = int(rng.choice([0, 1, 10**9]))
    keys = lo + rng.integers(0, max(1, n // int(rng.choice([1, 2, 8]))), n).astype(np.int64)
    role = np.where(rng.random(n) < rng.random(), Flows.START, Flows.FINISH).astype(np.int8)
    got = flows._count_one_sided(fcat, keys, role)
    monkeypatch.setattr(flows, "kernel", lambda: None)
    want = flows._count_one_sided(fcat, keys, role)
    assert got == want
    # and an independent count: (cat, key) pairs whose roles are all one
    roles: dict[tuple[int, int], set[int]] = {}
    for c, k, r in zip(fcat.tolist(), keys.tolist(), role.tolist()):
        roles.setdefault((c, k), set()).add(r)
    assert got == sum(1 for r in roles.values() if len(r) == 1)
