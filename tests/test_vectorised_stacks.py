"""The vectorised stack walks (key_averages parents, timeline nesting) against plain reference loops."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from trntui.analysis.key_averages.cpu_tree import _stack_parents
from trntui.model.profile import stack_nesting


def _events(draw_list):
    ev = sorted(draw_list, key=lambda t: (t[0], t[1], -(t[2]), t[3]))  # lane/thread, start, longest first
    keys = np.array([t[0] for t in ev], np.int64)
    s = np.array([t[1] for t in ev], np.int64)
    e = np.array([t[1] + t[2] for t in ev], np.int64)
    return keys, s, e


intervals = st.lists(
    st.tuples(st.integers(0, 2), st.integers(0, 30), st.integers(0, 12), st.integers(0, 5)), max_size=60
)


def _ref_parents(keys, s, e):
    out = []
    stack: list[int] = []
    cur = None
    for pos in range(len(s)):
        if keys[pos] != cur:
            stack, cur = [], keys[pos]
        par = -1
        while stack:
            top = stack[-1]
            if s[pos] >= e[top] or e[pos] > e[top]:
                stack.pop()
            else:
                par = top
                break
        out.append(par)
        stack.append(pos)
    return out


def _ref_nesting(lane, s, e):
    par_out, dep_out = [], []
    stack: list[int] = []
    cur = None
    for pos in range(len(s)):
        if lane[pos] != cur:
            stack, cur = [], lane[pos]
        while stack and e[stack[-1]] <= s[pos] and not (e[stack[-1]] == s[pos] == s[stack[-1]]):
            stack.pop()
        p = -1
        for q in reversed(stack):
            if e[q] >= e[pos]:
                p = q
                break
        par_out.append(p)
        dep_out.append(len(stack))
        stack.append(pos)
    return par_out, dep_out


@settings(max_examples=150, deadline=None)
@given(intervals)
def test_stack_parents_matches_reference(evs):
    keys, s, e = _events(evs)
    assert _stack_parents(keys, s, e).tolist() == _ref_parents(keys, s, e)


@settings(max_examples=150, deadline=None)
@given(intervals)
def test_stack_nesting_matches_reference(evs):
    lane, s, e = _events(evs)
    parent, depth = stack_nesting(s, e, lane)
    ref_p, ref_d = _ref_nesting(lane, s, e)
    assert parent.tolist() == ref_p
    assert depth.tolist() == ref_d
