"""The framework rows of a Neuron system trace: what they are, and which trace.json rows they copy.

Neuron Explorer copies the framework (PyTorch profiler) events into `SystemProfileEvents`
(`trace_event_source = framework`): operator dispatch on `framework/TID` lanes, device interaction
(`privateuse1_driver`, `framework_stream_id` = the driver event's thread id) on `framework/Stream` lanes, with the
`flow_id` values that link them to `nrta_execute_schedule` and `nc_exec_running` (neuron-formats.md §6, §8, §12).

- `categories`: the Kineto category of each framework row: the one Explorer kept in its attributes (`category`
  or `cat`) when it is a known one; otherwise a Stream row is a `privateuse1_driver` row, a `ProfilerStep#N` an
  annotation, a row nested directly in a row of the same name on its thread that op's `privateuse1_runtime`
  dispatch, and anything else a `cpu_op`. With no trace.json these rows are the ops of the profile.
- `match`: with a trace.json, which of its rows each framework row copies. Nothing documents how Explorer
  converts Kineto timestamps, so the two clocks may differ by a constant: the offset is estimated from
  same-named rows (the densest cluster of start differences, pinned by rare names such as `ProfilerStep#N`),
  then each row takes the nearest unused trace.json row of its name, tier and (when both say) category; an
  `External id` kept by Explorer matches directly. Missing, extra and reordered rows are tolerated: an
  unmatched row is moved onto trace.json's clock and either lies inside the trace.json row it dispatches (same
  name: its flows are given to that row too) or is an op trace.json lacks, and then becomes an op itself so its
  device time stays in the table (said in a note, with counts).

Written against the documentation and our synthetic samples; no real export with framework rows was available.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trntui.model.profile import NO_ID, Tier

OP = "cpu_op"
ANNOTATION = "user_annotation"
DISPATCH = "privateuse1_runtime"
DRIVER = "privateuse1_driver"
KNOWN = frozenset({OP, ANNOTATION, DISPATCH, DRIVER, "python_function", "gpu_user_annotation", "Operator"})
"""Kineto categories a framework row may declare (anything else is inferred)."""

_CAT_RX = re.compile(rb'"(?:category|cat)"\s*:\s*"([^"\\]{1,64})"')

START_TOL_NS = 20_000
"""A framework row copies a trace.json row whose start (after the clock offset) is within this."""
DUR_TOL_NS = 20_000
"""... and whose duration is within this plus `DUR_TOL_FRACTION` of it."""
DUR_TOL_FRACTION = 0.1
CLUSTER_NS = 5_000
"""Start differences within this of each other count as one clock offset."""
MAX_OFFSET_ROWS = 20_000
"""Framework rows used to estimate the offset (evenly spread over the trace)."""
ORDINAL_WINDOW = 12
"""Same-named rows compared around the proportional position in each sequence (frequent names)."""
ALL_PAIRS = 64
"""Names with at most this many rows on either side compare every pair (rare names pin the offset)."""


def declared_categories(rows: Any, idx: np.ndarray) -> list[str | None]:
    """`declared_category` of rows `idx`: from the category column the Parquet reader extracted, else per row."""
    cat = getattr(rows, "category", None)
    if cat is not None:
        known = [v if isinstance(v, str) and v in KNOWN else None for v in cat.values]
        return [known[c] for c in cat.codes[idx].tolist()]
    return [declared_category(rows.args, k) for k in idx.tolist()]


def declared_category(args: Any, k: int) -> str | None:
    """The Kineto category Explorer kept for row `k` (`category` / `cat` attribute), if a known one."""
    a = args[k]
    if a is None:
        return None
    if isinstance(a, (bytes, bytearray, memoryview, str)):
        raw = bytes(a) if not isinstance(a, str) else a.encode("utf-8", "surrogateescape")
        m = _CAT_RX.search(raw)
        value = m.group(1).decode("utf-8", "replace") if m else None
    elif isinstance(a, dict):
        value = a.get("category", a.get("cat"))
    else:
        value = None
    return value if isinstance(value, str) and value in KNOWN else None


def categories(rows: Any, fw: np.ndarray, stream_row: np.ndarray,
               declared: list[str | None] | None = None) -> list[str]:
    """Kineto category of each framework row `fw` (positions into `rows`); `stream_row`: per row of `rows`,
    whether it is on a framework Stream lane; `declared`: `declared_categories` of `fw`, when known."""
    cats = declared if declared is not None else declared_categories(rows, fw)
    out = [c if c is not None else (DRIVER if s else "") for c, s in zip(cats, stream_row[fw].tolist())]
    step = np.array([str(v or "").startswith("ProfilerStep#") for v in rows.name.values], bool)
    is_step = step[rows.name.codes[fw]] if len(step) else np.zeros(len(fw), bool)
    undecided = [j for j, c in enumerate(out) if not c]
    if not undecided:
        return out
    und = np.asarray(undecided, np.int64)
    for j in und[is_step[und]].tolist():
        out[j] = ANNOTATION
    und = und[~is_step[und]]
    if len(und):
        names = rows.name.codes[fw]
        tid_rows = np.nonzero(~stream_row[fw])[0]
        parent = innermost_parent(
            rows.pid[fw][tid_rows], rows.tid[fw][tid_rows], rows.start[fw][tid_rows], rows.end[fw][tid_rows]
        )
        parent_of = np.full(len(fw), NO_ID, np.int64)
        parent_of[tid_rows] = np.where(parent >= 0, tid_rows[np.maximum(parent, 0)], NO_ID)
        p = parent_of[und]
        same = (p >= 0) & (names[np.maximum(p, 0)] == names[und])
        for j, sm in zip(und.tolist(), same.tolist()):
            out[j] = DISPATCH if sm else OP
    return out


def innermost_parent(pid: np.ndarray, tid: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """For each interval, the index of the innermost other interval of the same (pid, tid) that contains it
    (torch's stack rule: sorted by start, longest first), or -1."""
    n = len(start)
    out = np.full(n, NO_ID, np.int64)
    if not n:
        return out
    order = np.lexsort((-(end - start), start, tid, pid))
    stack: list[int] = []
    key = None
    for i in order.tolist():
        k = (int(pid[i]), int(tid[i]))
        if k != key:
            stack = []
            key = k
        s, e = int(start[i]), int(end[i])
        while stack and (s >= int(end[stack[-1]]) or e > int(end[stack[-1]])):
            stack.pop()
        if stack:
            out[i] = stack[-1]
        stack.append(i)
    return out


@dataclass
class Match:
    """How the framework rows of a system trace relate to the trace.json rows already in the builder."""

    dup_of: np.ndarray
    """Per system row: the builder index of the trace.json row it copies (dropped; its flows move there), -1."""
    also_of: np.ndarray
    """Per system row: the trace.json row it dispatches (an unmatched row inside a trace.json row of its name:
    kept, and its flows are given to that row too), -1."""
    promote: np.ndarray
    """Per system row: an unmatched framework row that is an op trace.json lacks (it becomes an op)."""
    offset_ns: int
    """Explorer's framework clock minus trace.json's (0 when it could not be estimated)."""
    estimated: bool = False
    notes: list[str] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)


def _trace_rows(builder: Any, cpu_cats: set[int]) -> dict[str, np.ndarray]:
    ex = builder.existing()
    tiers = np.array([int(l.tier) for l in builder.lanes] or [0], np.int64)
    pids = np.array([l.pid for l in builder.lanes] or [0], np.int64)
    tids = np.array([l.tid for l in builder.lanes] or [0], np.int64)
    sel = np.nonzero(np.isin(ex["cat"], list(cpu_cats)))[0] if len(ex["cat"]) else np.zeros(0, np.int64)
    lane = ex["lane"][sel].astype(np.int64)
    return {
        "index": sel,
        "name": ex["name"][sel].astype(np.int64),
        "start": ex["start"][sel].astype(np.int64),
        "end": ex["end"][sel].astype(np.int64),
        "cat": ex["cat"][sel].astype(np.int64),
        "ext": ex["ext"][sel].astype(np.int64) if "ext" in ex else np.full(len(sel), NO_ID, np.int64),
        "tier": tiers[lane],
        "pid": pids[lane],
        "tid": tids[lane],
    }


def estimate_offset(e_name: np.ndarray, e_start: np.ndarray, t_name: np.ndarray, t_start: np.ndarray) -> tuple[int, int]:
    """(offset ns, supporting rows): the start difference (Explorer − trace.json) shared by the most
    same-named row pairs. Frequent names compare each row with the rows around its proportional position in the
    other sequence (at most `MAX_OFFSET_ROWS` rows in all, spread evenly within each name); rare names (at most
    `ALL_PAIRS` rows) pair every row, so a missing block does not hide the offset."""
    if not len(e_name) or not len(t_name):
        return 0, 0
    eo = np.lexsort((e_start, e_name))
    to = np.lexsort((t_start, t_name))
    en, es = e_name[eo], e_start[eo]
    tn, ts = t_name[to], t_start[to]
    names = np.intersect1d(np.unique(en), np.unique(tn))
    per_name = max(256, MAX_OFFSET_ROWS // max(len(names), 1))
    diffs: list[np.ndarray] = []
    owners: list[np.ndarray] = []
    for nm in names.tolist():
        a0, a1 = np.searchsorted(en, nm, "left"), np.searchsorted(en, nm, "right")
        b0, b1 = np.searchsorted(tn, nm, "left"), np.searchsorted(tn, nm, "right")
        ne, nt = a1 - a0, b1 - b0
        ea, tb = es[a0:a1], ts[b0:b1]
        if ne <= ALL_PAIRS or nt <= ALL_PAIRS:
            d = (ea[:, None] - tb[None, :]).reshape(-1)
            own = np.repeat(np.arange(a0, a1), nt)
        else:
            rows_ = np.unique(np.linspace(0, ne - 1, min(ne, per_name)).astype(np.int64))
            centre = np.round(rows_ * (nt - 1) / max(ne - 1, 1)).astype(np.int64)
            js = centre[:, None] + np.arange(-ORDINAL_WINDOW, ORDINAL_WINDOW + 1)[None, :]
            ok = (js >= 0) & (js < nt)
            r = np.broadcast_to(rows_[:, None], js.shape)[ok]
            d = ea[r] - tb[js[ok]]
            own = a0 + r
        diffs.append(d)
        owners.append(own)
    if not diffs:
        return 0, 0
    d = np.concatenate(diffs)
    own = np.concatenate(owners)
    o = np.argsort(d, kind="stable")
    d, own = d[o], own[o]
    hi = np.searchsorted(d, d + 2 * CLUSTER_NS, "right")
    counts = hi - np.arange(len(d))
    # a periodic trace (identical steps) supports the offset plus or minus whole periods almost as well: of the
    # clusters within 2% of the best, the one closest to zero (clock conversions differ by little)
    near = np.nonzero(counts >= 0.98 * counts.max())[0]
    centre = d[near] + CLUSTER_NS
    best = int(near[np.argmin(np.abs(centre))])
    window = slice(best, int(hi[best]))
    support = len(np.unique(own[window]))
    return int(np.median(d[window])), support


def canonical(name: str) -> str:
    """Names as torch's table merges them (`ProfilerStep#N` -> `ProfilerStep*`): a copy may carry another step
    number than its row."""
    return "ProfilerStep*" if name.startswith("ProfilerStep#") else name


def match(rows: Any, builder: Any, fw: np.ndarray, fw_cats: list[str], stream_row: np.ndarray, label: str,
          declared: list[str | None] | None, external_ids: np.ndarray) -> Match:
    """Match framework rows `fw` (positions into `rows`, with categories `fw_cats` and their `External id`s,
    -1 when absent: `system.external_ids`) to trace.json rows."""
    n = len(rows)
    dup_of = np.full(n, NO_ID, np.int64)
    also_of = np.full(n, NO_ID, np.int64)
    promote = np.zeros(n, bool)
    cpu_cats = {builder.intern_cat(c) for c in KNOWN}
    t = _trace_rows(builder, cpu_cats)
    result = Match(dup_of, also_of, promote, 0)
    if not len(fw):
        return result
    cat_name = {builder.intern_cat(c): c for c in KNOWN}
    t_cat = np.array([cat_name.get(int(c), "") for c in t["cat"].tolist()], dtype=object)
    ids: dict[str, int] = {}
    t_canon = np.array([ids.setdefault(canonical(v), len(ids)) for v in builder.names] or [0], np.int64)
    t["raw"] = t["name"]
    t["name"] = t_canon[t["name"]] if len(t["name"]) else t["name"]
    raw_map = np.array([builder.name_id(str(v or "")) for v in rows.name.values], np.int64)
    e_raw = raw_map[rows.name.codes[fw]]
    name_map = np.array([ids.get(canonical(str(v or "")), NO_ID) for v in rows.name.values], np.int64)
    e_name = name_map[rows.name.codes[fw]]
    e_start = rows.start[fw].astype(np.int64)
    e_end = rows.end[fw].astype(np.int64)
    e_tier = np.where(stream_row[fw], int(Tier.DEVICE), int(Tier.DISPATCH))
    e_cat = np.array(fw_cats, dtype=object)
    if declared is None:
        declared = declared_categories(rows, fw)
    declared = np.array([c is not None for c in declared], bool)
    e_ext = external_ids
    # trace.json rows of the same process when the export names one that trace.json has
    e_pid = rows.pid[fw]
    t_ok = np.ones(len(t["index"]), bool)
    if len(t["pid"]) and np.isin(e_pid, t["pid"]).any():
        t_ok = np.isin(t["pid"], e_pid[e_pid != NO_ID]) | (t["pid"] == NO_ID)
    ti = np.nonzero(t_ok)[0]
    taken = np.zeros(len(t["index"]), bool)
    matched = np.full(len(fw), NO_ID, np.int64)  # position into t

    # 1. External id kept by Explorer: exact
    if (e_ext > 0).any() and (t["ext"][ti] > 0).any():
        tk = ti[t["ext"][ti] > 0]
        key_t: dict[tuple[int, int], list[int]] = {}
        for j in tk.tolist():
            key_t.setdefault((int(t["name"][j]), int(t["ext"][j])), []).append(int(j))
        for j in np.nonzero(e_ext > 0)[0].tolist():
            # an op and its dispatch row share name and External id: the same tier, category and closest duration
            cands = [c for c in key_t.get((int(e_name[j]), int(e_ext[j])), ())
                     if not taken[c] and int(t["tier"][c]) == int(e_tier[j])
                     and not (declared[j] and t_cat[c] and t_cat[c] != e_cat[j])]
            if cands:
                dur = e_end[j] - e_start[j]
                hit = min(cands, key=lambda c: abs(int(t["end"][c] - t["start"][c]) - dur))
                matched[j] = hit
                taken[hit] = True
    by_key = int((matched >= 0).sum())

    # 2. the clock offset (from the rows matched by key, else from same-named rows), then the nearest unused row
    todo = np.nonzero((matched < 0) & (e_name >= 0))[0]
    if by_key >= 2:
        d = e_start[matched >= 0] - t["start"][matched[matched >= 0]]
        offset, support = int(np.median(d)), by_key
    elif len(todo):
        # raw names here: each ProfilerStep#N is a rare name that pins the offset in a periodic trace
        offset, support = estimate_offset(e_raw[todo], e_start[todo], t["raw"][ti], t["start"][ti])
    else:
        offset, support = 0, 0
    result.offset_ns = offset
    result.estimated = support >= 2
    if len(todo):
        ok_t = ti[~taken[ti]]
        pairs = _candidates(e_name[todo], e_start[todo] - offset, t["name"][ok_t], t["start"][ok_t])
        q, c = pairs
        if len(q):
            jq = todo[q]
            tc = ok_t[c]
            ds = np.abs(t["start"][tc] - (e_start[jq] - offset))
            t_dur = t["end"][tc] - t["start"][tc]
            dd = np.abs(t_dur - (e_end[jq] - e_start[jq]))
            fine = (ds <= START_TOL_NS) & (dd <= DUR_TOL_NS + DUR_TOL_FRACTION * t_dur)
            fine &= t["tier"][tc] == e_tier[jq]
            both_declared = declared[jq] & (t_cat[tc] != "")
            fine &= ~both_declared | (t_cat[tc] == e_cat[jq])
            tid_penalty = np.where(t["tid"][tc] == rows.tid[fw[jq]], 0, 1000)
            err = ds + dd + tid_penalty
            jq, tc, err = jq[fine], tc[fine], err[fine]
            qa, ca = _assign(jq, tc, err)
            matched[qa] = ca
            taken[ca] = True
    by_time = int((matched >= 0).sum()) - by_key
    hit = matched >= 0
    dup_of[fw[hit]] = t["index"][matched[hit]]

    # 3. unmatched rows: on trace.json's clock, inside the row they dispatch, or ops trace.json lacks
    un = np.nonzero(~hit)[0]
    shift = -offset if result.estimated else 0
    inside = 0
    if len(un):
        rows.start[fw[un]] += shift
        rows.end[fw[un]] += shift
        tid_un = un[e_tier[un] == int(Tier.DISPATCH)]
        if len(tid_un):
            disp = ti[t["tier"][ti] == int(Tier.DISPATCH)]
            cont = _innermost_trace_row(
                rows.pid[fw[tid_un]], rows.tid[fw[tid_un]], rows.start[fw[tid_un]], rows.end[fw[tid_un]],
                t["pid"][disp], t["tid"][disp], t["start"][disp], t["end"][disp],
            )
            has = cont >= 0
            same = np.zeros(len(tid_un), bool)
            same[has] = t["name"][disp[cont[has]]] == e_name[tid_un[has]]
            also_of[fw[tid_un[same]]] = t["index"][disp[cont[same]]]
            inside = int(same.sum())
            lacking = fw[tid_un[~same]]
            if hit.sum() * 2 < len(fw):
                # matching mostly failed (other names, another run): only rows that hold device time (in a
                # flow) become ops, so the table does not list every op twice
                in_flow = np.zeros(n, bool)
                in_flow[rows.flow_row] = True
                lacking = lacking[in_flow[lacking]]
            promote[lacking] = True
    promoted = int(promote.sum())
    result.stats = {"framework": int(len(fw)), "matched": int(hit.sum()), "by_key": by_key, "by_time": by_time,
                    "unmatched": int(len(un)), "dispatch_inside": inside, "promoted": promoted, "support": support}
    if len(fw):
        how = []
        if by_key:
            how.append(f"{by_key} by External id")
        if by_time:
            off = f"{offset / 1000:+.1f} us" if result.estimated else "none found"
            how.append(f"{by_time} by name and start (clock offset {off})")
        text = (f"{label}: {int(hit.sum())} of {len(fw)} framework row(s) of the system trace copy trace.json rows"
                + (f" ({'; '.join(how)})" if how else "") + " and were merged into them")
        if len(un):
            text += f"; {len(un)} unmatched"
            if shift:
                text += f" (moved {shift / 1000:+.1f} us onto trace.json's clock)"
            parts = []
            if inside:
                parts.append(f"{inside} inside the trace.json row they dispatch (its flows too)")
            if promoted:
                parts.append(f"{promoted} match no trace.json row and are listed as ops, keeping their device time")
            rest = len(un) - inside - promoted
            if rest:
                parts.append(f"{rest} kept on the timeline")
            text += ": " + ", ".join(parts)
        result.notes.append(text)
    return result


def _candidates(qn: np.ndarray, qs: np.ndarray, tn: np.ndarray, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(query, trace row) pairs of the same name whose starts are within `START_TOL_NS` (positions)."""
    if not len(qn) or not len(tn):
        z = np.zeros(0, np.int64)
        return z, z
    o = np.lexsort((ts, tn))
    tn_s, ts_s = tn[o], ts[o]
    # (name, start) as one sortable key per side: name-major via a stable lexsort search
    lo = _pair_search(tn_s, ts_s, qn, qs - START_TOL_NS, "left")
    hi = _pair_search(tn_s, ts_s, qn, qs + START_TOL_NS, "right")
    cnt = np.maximum(hi - lo, 0)
    total = int(cnt.sum())
    if not total:
        z = np.zeros(0, np.int64)
        return z, z
    q = np.repeat(np.arange(len(qn)), cnt)
    offs = np.cumsum(cnt) - cnt
    j = lo[q] + (np.arange(total) - offs[q])
    return q, o[j]


def _pair_search(names: np.ndarray, starts: np.ndarray, qn: np.ndarray, qs: np.ndarray, side: str) -> np.ndarray:
    """For (names, starts) sorted lexicographically: how many are < (side "left") or <= ("right") each query
    (qn, qs): `searchsorted` on the pair, for all queries in one sort."""
    n = len(names)
    flag_q = 0 if side == "left" else 1
    flags = np.concatenate([np.full(n, 1 - flag_q, np.int8), np.full(len(qn), flag_q, np.int8)])
    order = np.lexsort((flags, np.concatenate([starts, qs]), np.concatenate([names, qn])))
    existing_upto = np.cumsum(order < n)
    out = np.empty(len(qn), np.int64)
    isq = order >= n
    out[order[isq] - n] = existing_upto[isq]
    return out


def _assign(q: np.ndarray, c: np.ndarray, err: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One-to-one pairs (queries, candidates), smallest error first (ties: earlier query, then candidate)."""
    if not len(q):
        z = np.zeros(0, np.int64)
        return z, z
    # pairs whose query and candidate appear in no other pair are settled at once; the rest greedily
    _, qi, qn = np.unique(q, return_inverse=True, return_counts=True)
    _, ci, cn = np.unique(c, return_inverse=True, return_counts=True)
    sole = (qn[qi.reshape(-1)] == 1) & (cn[ci.reshape(-1)] == 1)
    qa, ca = [q[sole]], [c[sole]]
    q, c, err = q[~sole], c[~sole], err[~sole]
    if len(q):
        o = np.lexsort((c, q, err))
        used_q: set[int] = set()
        used_c: set[int] = set()
        pq: list[int] = []
        pc: list[int] = []
        for a, b in zip(q[o].tolist(), c[o].tolist()):
            if a in used_q or b in used_c:
                continue
            used_q.add(a)
            used_c.add(b)
            pq.append(a)
            pc.append(b)
        qa.append(np.asarray(pq, np.int64))
        ca.append(np.asarray(pc, np.int64))
    return np.concatenate(qa), np.concatenate(ca)


def _innermost_trace_row(qp, qt, qs, qe, tp, tt, ts, te) -> np.ndarray:
    """For each query interval, the innermost trace row of the same (pid, tid) containing it (its position),
    else of the same pid; -1 when none (vectorised walk back over rows sorted by start, longest first)."""
    from trntui.model.intervals import walk_back

    out = np.full(len(qs), NO_ID, np.int64)
    if not len(ts) or not len(qs):
        return out
    o = np.lexsort((-(te - ts), ts))
    ts_o, te_o, tp_o, tt_o = ts[o], te[o], tp[o], tt[o]
    k = np.searchsorted(ts_o, qs, "right") - 1
    for same_thread in (True, False):
        todo = np.nonzero(out < 0)[0]
        if not len(todo):
            break

        def hit(a: np.ndarray, c: np.ndarray, todo: np.ndarray = todo, same_thread: bool = same_thread) -> np.ndarray:
            q = todo[a]
            ok = (te_o[c] >= qe[q]) & (ts_o[c] <= qs[q]) & (tp_o[c] == qp[q])
            return ok & (tt_o[c] == qt[q]) if same_thread else ok

        pos = walk_back(k[todo], hit, 4096)
        found = pos >= 0
        out[todo[found]] = o[pos[found]]
    return out
