"""The longest path through a critical-path graph, vectorised: prefix sums along each chain plus a running
maximum of the cross edges coming in, repeated until no cross edge improves a node; then the path read back
from its end, and its time per bound type."""

from __future__ import annotations

import numpy as np

from trntui.analysis.critical_path.graph import Graph, Path

# -------------------------------------------------------------------------------------------------------------
# the longest path


def _segcummax(val: np.ndarray, seg_id: np.ndarray) -> np.ndarray:
    """Running maximum of `val` within contiguous segments."""
    if not len(val):
        return val.copy()
    lo, hi = int(val.min()), int(val.max())
    big = hi - lo + 1
    nseg = int(seg_id[-1]) + 1
    if big * nseg < (1 << 62):
        shifted = (val - lo) + seg_id * big
        return np.maximum.accumulate(shifted) - seg_id * big + lo
    out = np.empty_like(val)  # (values too spread for one pass: per segment)
    starts = np.flatnonzero(np.r_[True, seg_id[1:] != seg_id[:-1]])
    ends = np.r_[starts[1:], len(val)]
    for a, b in zip(starts.tolist(), ends.tolist()):
        out[a:b] = np.maximum.accumulate(val[a:b])
    return out


def _seed_cross(g: Graph, xw: np.ndarray, P: np.ndarray, seg_id: np.ndarray) -> np.ndarray:
    """Best cross edge into each node, from the cross edges taken in the time order of their destinations: the
    longest distance to an edge's source is then known from the edges already taken (a running maximum of
    `best in − P` per chain, looked up by position). Equal timestamps can order two edges wrongly; the result is
    then a lower bound that the caller's relaxation finishes (usually in one pass)."""
    from bisect import bisect_right, insort

    order = np.lexsort((g.x_dst, g.node_ts[g.x_dst]))
    src, dst, w = g.x_src[order].tolist(), g.x_dst[order].tolist(), xw[order].tolist()
    Pl, segl = P.tolist(), seg_id.tolist()
    positions: dict[int, list[int]] = {}
    vals: dict[int, list[int]] = {}
    prefix: dict[int, list[int]] = {}
    best: dict[int, int] = {}
    for s, d, ww in zip(src, dst, w):
        sg = segl[s]
        ps = positions.get(sg)
        base = 0
        if ps:
            k = bisect_right(ps, s)
            if k:
                base = max(0, prefix[sg][k - 1])
        cand = Pl[s] + base + ww
        if cand <= best.get(d, 0):
            continue
        best[d] = cand
        v = cand - Pl[d]
        sd = segl[d]
        pl = positions.setdefault(sd, [])
        vl = vals.setdefault(sd, [])
        pm = prefix.setdefault(sd, [])
        if pl and pl[-1] == d:
            vl[-1] = max(vl[-1], v)
            pm[-1] = max(pm[-2], vl[-1]) if len(pm) > 1 else vl[-1]
        elif not pl or pl[-1] < d:
            pl.append(d)
            vl.append(v)
            pm.append(max(pm[-1], v) if pm else v)
        else:  # out of time order within the chain (equal timestamps): insert, redo the running maximum after it
            k = bisect_right(pl, d)
            if k and pl[k - 1] == d:
                vl[k - 1] = max(vl[k - 1], v)
                k -= 1
            else:
                insort(pl, d)
                vl.insert(k, v)
                pm.insert(k, 0)
            for j in range(k, len(pl)):
                pm[j] = max(pm[j - 1], vl[j]) if j else vl[j]
    B = np.zeros(len(P), np.int64)
    if best:
        B[np.fromiter(best.keys(), np.int64, len(best))] = np.fromiter(best.values(), np.int64, len(best))
    return B


def _longest(g: Graph, cw: np.ndarray, xw: np.ndarray):
    """Longest path to every node: dist = P + running max over the chain of (best cross edge in - P), repeated
    until no cross edge improves a node. Returns (dist, B, P, val, M)."""
    n = g.nodes
    seg_id = np.cumsum(g.seg_first) - 1 if n else np.zeros(0, np.int64)
    w = np.where(g.seg_first, 0, cw)
    P = np.cumsum(w)
    if n:
        first = np.flatnonzero(g.seg_first)
        P = P - P[first][seg_id]
    dist = P.copy()
    B = np.zeros(n, np.int64)
    val = -P
    M = _segcummax(val, seg_id)
    if len(g.x_src) and n:
        # seed with one pass over the cross edges in time order: the relaxation below needs one pass per
        # chain switch otherwise (a step that syncs after every op switches thousands of times)
        B0 = _seed_cross(g, xw, P, seg_id)
        dist = P + _segcummax(B0 - P, seg_id)
    for _ in range(len(g.x_src) + 2):
        B = np.zeros(n, np.int64)
        if len(g.x_src):
            np.maximum.at(B, g.x_dst, dist[g.x_src] + xw)
        val = B - P
        M = _segcummax(val, seg_id)
        new = P + M
        if np.array_equal(new, dist):
            break
        dist = new
    else:
        g.notes.append("the graph has a cycle (bad timestamps?): the path may be incomplete")
    return dist, B, P, val, M


def _reconstruct(g: Graph, cw: np.ndarray, xw: np.ndarray, dist, B, P, val, M) -> Path:
    n = g.nodes
    empty = np.zeros(0, np.int64)
    if not n:
        return Path(empty.astype(np.int8), empty, empty, empty.astype(np.int16), empty, empty, 0)
    entry = np.maximum.accumulate(np.where(val == M, np.arange(n), -1))
    xo = np.argsort(g.x_dst, kind="stable")
    xd = g.x_dst[xo]
    best = int(dist.max())
    v = int(np.flatnonzero(dist == best)[-1])
    kinds, weights, events, bounds, srcs, dsts = [], [], [], [], [], []
    seen = set()
    while True:
        if v in seen:
            break
        seen.add(v)
        e = int(entry[v])
        if v > e:
            r = np.arange(v, e, -1)
            kinds.append(g.chain_kind[r])
            weights.append(cw[r])
            events.append(g.chain_event[r])
            bounds.append(g.chain_bound[r])
            srcs.append(r - 1)
            dsts.append(r)
        if B[e] <= 0:
            break
        a, b = np.searchsorted(xd, e, "left"), np.searchsorted(xd, e, "right")
        cand = xo[a:b]
        hit = cand[dist[g.x_src[cand]] + xw[cand] == B[e]]
        if not len(hit):
            break
        x = int(hit[0])
        kinds.append(g.x_kind[x:x + 1])
        weights.append(xw[x:x + 1])
        events.append(g.x_event[x:x + 1])
        bounds.append(g.x_bound[x:x + 1])
        srcs.append(g.x_src[x:x + 1])
        dsts.append(g.x_dst[x:x + 1])
        v = int(g.x_src[x])
    if not kinds:
        return Path(empty.astype(np.int8), empty, empty, empty.astype(np.int16), empty, empty, 0)
    cat = lambda xs: np.concatenate(xs)[::-1]  # noqa: E731
    return Path(cat(kinds), cat(weights).astype(np.int64), cat(events), cat(bounds), cat(srcs), cat(dsts), best)


def _breakdown(g: Graph, path: Path) -> dict[str, int]:
    nb = len(g.bounds)
    sel = path.bound >= 0
    sums = np.bincount(path.bound[sel].astype(np.int64), weights=path.weight[sel], minlength=nb)
    return {b: int(round(sums[k])) for k, b in enumerate(g.bounds)}
