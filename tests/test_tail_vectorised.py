"""The vectorised steps of the load's tail (time order, id lookups, one-sided flow count) against plain reference
code: each fast path gives exactly what the obvious computation gives."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trntui.analysis.links import _Index
from trntui.loaders.kineto.flows import _count_one_sided
from trntui.model.arrays import time_order


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 5)), max_size=80))
def test_time_order_is_the_lexsort(events):
    start = np.array([s for s, _ in events], np.int64)
    end = start + np.array([d for _, d in events], np.int64)
    expected = np.lexsort((start - end, start)) if len(events) else np.zeros(0, np.int64)
    assert time_order(start, end).tolist() == expected.tolist()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(-5, 60), max_size=40),
    st.lists(st.integers(-20, 80), max_size=60),
    st.sampled_from([0, 1 << 40]),
)
def test_index_is_a_dict_of_first_keys(keys, queries, offset):
    """Dense keys take the table, sparse ones (`offset` spreads them) the binary search: both as a dict would."""
    k = np.array(keys, np.int64) * (1 + offset)
    order = np.argsort(k, kind="stable")
    values = np.arange(len(keys), dtype=np.int64)[order] * 3
    q = np.array(queries, np.int64) * (1 + offset)
    first: dict[int, int] = {}
    for key, v in zip(k[order].tolist(), values.tolist()):
        first.setdefault(key, v)
    for scratch in (None, np.full(200, 5, np.int32)):  # (a used table written over, when it is large enough)
        got = _Index(k[order], values, len(q), scratch=scratch)(q.copy())
        assert got.dtype == np.int64
        assert got.tolist() == [first.get(x, -1) for x in q.tolist()]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([3, 7, 12]), st.integers(0, 40), st.integers(0, 1)), max_size=60),
       st.sampled_from([0, 1 << 40]))
def test_one_sided_flows_counted_as_a_dict_of_roles(halves, offset):
    """Dense flow ids take the byte table, sparse ones (`offset`) the sort: both count the (category, id) flows
    whose halves all have one role."""
    cat = np.array([c for c, _, _ in halves], np.int16)
    key = np.array([k for _, k, _ in halves], np.int64) * (1 + offset)
    role = np.array([r for _, _, r in halves], np.int8)
    roles: dict[tuple[int, int], set[int]] = {}
    for c, k, r in zip(cat.tolist(), key.tolist(), role.tolist()):
        roles.setdefault((c, k), set()).add(r)
    assert _count_one_sided(cat, key, role) == sum(len(r) == 1 for r in roles.values())


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=16))
def test_profiler_step_names_are_not_demangled(suffix):
    """`rewrite_name` does not ask the C++ runtime about `ProfilerStep#...` names: it would not change them."""
    from trntui.analysis.demangle import available, demangle
    from trntui.analysis.key_averages import rewrite_name

    name = "ProfilerStep#" + suffix
    if available():
        assert demangle(name) == name
    assert rewrite_name(name) == "ProfilerStep*"


@pytest.mark.parametrize("name", ["cuda_ns_resolution_68k.json.gz", "mtia_inference.json.gz", "rocm_mi250_train.json.gz"])
def test_flow_binding_same_by_masks_or_by_sort(corpus_dir, monkeypatch, name):
    """Each thread's slices for the flow binding, by a mask per thread or by one sort of all slices: the same
    flows, the same notes."""
    from trntui.loaders.kineto import flows
    from trntui.loaders.kineto.load import load_kineto

    def bound(limit):
        monkeypatch.setattr(flows, "_MASKED_THREADS", limit)
        p = load_kineto(corpus_dir / name)
        return [p.flows.key.tolist(), p.flows.event.tolist(), p.flows.role.tolist(), p.meta.notes, p.meta.skipped]

    masked, sorted_ = bound(1 << 20), bound(0)
    assert masked == sorted_ and masked[0]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-(1 << 60), 1 << 60), st.integers(0, 1 << 40)), max_size=40),
       st.integers(-(1 << 50), 1 << 50))
def test_microseconds_written_in_place_are_the_plain_expression(events, origin):
    """key_averages' µs times, converted as each difference is written: the floats of the plain expression."""
    from trntui.analysis.key_averages import _us_span

    s = np.array([a for a, _ in events], np.int64)
    e = s + np.array([d for _, d in events], np.int64)
    plain = (e - origin).astype(np.float64) / 1000.0 - (s - origin).astype(np.float64) / 1000.0
    assert _us_span(s, e, origin).tobytes() == plain.tobytes()
