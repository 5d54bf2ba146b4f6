"""Interval algebra on numpy arrays, as the TensorBoard plugin's `range_utils.py` defines it.

A *range list* is a pair `(starts, ends)` of int64 arrays, sorted, disjoint and non-empty pieces (`merge` makes
one from any intervals). `intersect` and `subtract` work on two range lists and never produce zero-length
pieces; `covered` measures how much of a list lies inside many query windows at once (prefix sums + binary
search), which is how per-step costs are read off one global list.
"""

from __future__ import annotations

import numpy as np

Ranges = tuple[np.ndarray, np.ndarray]

_EMPTY = np.zeros(0, np.int64)


def empty() -> Ranges:
    return _EMPTY, _EMPTY


def merge(starts: np.ndarray, ends: np.ndarray, *, presorted: bool = False) -> Ranges:
    """Union of `[s, e)` intervals as a range list. Touching intervals join (start ≤ current end extends it);
    zero-length intervals add nothing."""
    s = np.asarray(starts, np.int64)
    e = np.asarray(ends, np.int64)
    keep = e > s
    if not keep.all():
        s, e = s[keep], e[keep]
    if not len(s):
        return empty()
    if not presorted:
        o = np.argsort(s, kind="stable")
        s, e = s[o], e[o]
    run = np.maximum.accumulate(e)
    new = np.ones(len(s), bool)
    new[1:] = s[1:] > run[:-1]
    first = np.nonzero(new)[0]
    last = np.append(first[1:], len(s)) - 1
    return s[first], run[last]


def total(r: Ranges) -> int:
    return int((r[1] - r[0]).sum())


def intersect(a: Ranges, b: Ranges) -> Ranges:
    """Pieces covered by both range lists (a range list)."""
    (as_, ae), (bs, be) = a, b
    if not len(as_) or not len(bs):
        return empty()
    lo = np.searchsorted(be, as_, side="right")  # first b ending after a starts
    hi = np.searchsorted(bs, ae, side="left")  # b starting before a ends
    cnt = np.maximum(hi - lo, 0)
    n = int(cnt.sum())
    if not n:
        return empty()
    ai = np.repeat(np.arange(len(as_)), cnt)
    bi = np.repeat(lo - (np.cumsum(cnt) - cnt), cnt) + np.arange(n)
    s = np.maximum(as_[ai], bs[bi])
    e = np.minimum(ae[ai], be[bi])
    keep = e > s
    return s[keep], e[keep]


def complement(r: Ranges) -> Ranges:
    """Everything not in `r` (within the int64 line)."""
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    s = np.concatenate([[lo], r[1]])
    e = np.concatenate([r[0], [hi]])
    keep = e > s
    return s[keep], e[keep]


def subtract(a: Ranges, b: Ranges) -> Ranges:
    """Pieces of `a` not covered by `b`."""
    if not len(b[0]) or not len(a[0]):
        return a
    return intersect(a, complement(b))


def union(a: Ranges, b: Ranges) -> Ranges:
    """Both lists are sorted: the stable sort of their concatenation only merges two runs."""
    return merge(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))


def covered(r: Ranges, t0: np.ndarray, t1: np.ndarray) -> np.ndarray:
    """Per window `[t0[k], t1[k])`: how many ns of the range list lie inside it (vectorised)."""
    t0 = np.asarray(t0, np.int64)
    t1 = np.asarray(t1, np.int64)
    s, e = r
    if not len(s):
        return np.zeros(len(t0), np.int64)
    lens = e - s
    cum = np.concatenate([[0], np.cumsum(lens)])

    def upto(t: np.ndarray) -> np.ndarray:  # covered length in (-inf, t)
        k = np.searchsorted(s, t, side="right") - 1
        kk = np.maximum(k, 0)
        inside = np.clip(t - s[kk], 0, lens[kk])
        return np.where(k >= 0, cum[kk] + inside, 0)

    return np.maximum(upto(t1) - upto(t0), 0)
