"""Vectorised search among intervals sorted by start: used to bind events to their enclosing slice."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def walk_back(k: np.ndarray, hit: Callable[[np.ndarray, np.ndarray], np.ndarray], limit: int) -> np.ndarray:
    """For each query i, the first candidate position at or before `k[i]` (stepping back one at a time, at most
    `limit` steps) where `hit(queries, positions)` holds; -1 where none does. All queries move together, so
    the cost is numpy work per step, not Python work per query.

    With candidates sorted by (start, longest first) and `k` the last candidate starting at or before each
    query, a containment test as `hit` finds the innermost enclosing candidate."""
    out = np.full(len(k), -1, np.int64)
    act = np.arange(len(k))
    for _ in range(limit):
        live = k >= 0
        if not live.all():
            act, k = act[live], k[live]
        if not len(act):
            break
        h = hit(act, k)
        out[act[h]] = k[h]
        miss = ~h
        act, k = act[miss], k[miss] - 1
    return out
