"""Neuron-specific links and device time, on top of the generic `Links` (neuron-formats.md §10-11).

- `add_neuron_edges`: links that `flow_id` does not already give: a framework device event (`framework/Stream`)
  → the runtime execution with the same `nrt_sequence_id` (the loader keeps it in the correlation column) →
  hardware rows with that id; and a framework device event still without an op → the innermost framework op
  of the same process whose interval contains its start (time containment, labelled as such).
- `system_device_time`: when `trace.json` has no device rows, the time of each `nc_exec_running` is given to
  the framework op at the top of its chain. Per-physical-core duplicates of one execution (LNC=2) are merged:
  per (op, logical core) the union of the intervals is counted, so an execution on two cores counts once.

All of this follows the documented link keys; no Trainium capture was available to confirm them.
"""

from __future__ import annotations

import re

import numpy as np

from trntui.analysis.links import Links, Rule
from trntui.model.args import decoded_many
from trntui.model.profile import NO_ID, Profile, Tier

EXECUTION = "nc_exec_running"
_NC_RX = re.compile(r"NC(\d+):(\d+)")
RULE_NAMES = {Rule.FLOW: "flow_id", Rule.SEQUENCE: "nrt_sequence_id", Rule.EXTERNAL_ID: "External id",
              Rule.CONTAINMENT: "time containment", Rule.CORRELATION: "correlation"}


def link_edges(profile: Profile, links: Links) -> None:
    """The Neuron format's link hook (trntui/formats.py): `add_neuron_edges` when the profile has system-trace
    rows."""
    if profile.cat_id("neuron_rt") >= 0 or profile.cat_id("neuron_hw") >= 0:
        add_neuron_edges(profile, links)


def device_time(profile: Profile, links: Links) -> dict[int, int]:
    """The Neuron format's device-time hook (trntui/formats.py): `system_device_time` when the profile has
    hardware rows, else {}."""
    if profile.cat_id("neuron_hw") < 0:
        return {}
    return system_device_time(profile, links)


def _cats(profile: Profile, names: tuple[str, ...]) -> np.ndarray:
    return profile.cat_mask(names)


def add_neuron_edges(profile: Profile, links: Links) -> None:
    n = len(profile)
    if n == 0:
        return
    tiers = np.array([int(l.tier) for l in profile.lanes] or [0], np.int64)[profile.lane]
    system = _cats(profile, ("neuron_framework", "neuron_rt", "neuron_hw"))
    has_pred = np.zeros(n, bool)
    has_pred[links.edge_dst] = True
    src: list[int] = []
    dst: list[int] = []
    rules: list[int] = []

    # nrt_sequence_id groups (kept in `corr` for system rows), vectorised per group
    seq_rows = np.nonzero(system & (profile.corr >= 0))[0]
    if len(seq_rows):
        sched = profile.name_id("nrta_execute_schedule")
        corr = profile.corr
        t = tiers[seq_rows]
        rt = seq_rows[t == int(Tier.RUNTIME)]
        fw = seq_rows[t <= int(Tier.DEVICE)]
        hw = seq_rows[t == int(Tier.HARDWARE)]
        if len(rt):
            # representative runtime row per id: nrta_execute_schedule first, else the earliest
            o = np.lexsort((profile.start[rt], profile.name[rt] != sched, corr[rt]))
            rts = rt[o]
            keys, first = np.unique(corr[rts], return_index=True)
            reps = rts[first]
            if len(fw):
                o = np.lexsort((profile.start[fw], corr[fw]))
                fws = fw[o]
                fkeys, last_idx = np.unique(corr[fws][::-1], return_index=True)
                fw_last = fws[::-1][last_idx]
                pos = np.searchsorted(keys, fkeys)
                pos = np.minimum(pos, len(keys) - 1)
                hit = keys[pos] == fkeys
                r = reps[pos[hit]]
                f = fw_last[hit]
                ok = ~has_pred[r]
                src.extend(f[ok].tolist())
                dst.extend(r[ok].tolist())
                rules.extend([int(Rule.SEQUENCE)] * int(ok.sum()))
                has_pred[r[ok]] = True
            if len(hw):
                h = hw[~has_pred[hw]]
                pos = np.minimum(np.searchsorted(keys, corr[h]), len(keys) - 1)
                hit = keys[pos] == corr[h]
                src.extend(reps[pos[hit]].tolist())
                dst.extend(h[hit].tolist())
                rules.extend([int(Rule.SEQUENCE)] * int(hit.sum()))
                has_pred[h[hit]] = True

    # torch-neuronx's framework_mapping_*.json: op ("Sequence number") → runtime execution (nrt_sequence_id)
    mapping = profile.meta.trace_meta.get("neuron_mapping") or []
    if mapping:
        _mapping_edges(profile, links, mapping, tiers, system, has_pred, src, dst, rules)

    # framework device events without an op above them: innermost op of the process containing their start;
    # likewise runtime executions that nothing links (their framework rows were dropped from the export), on
    # trace.json's clock (the offset estimated when Explorer's framework rows were matched to trace.json's)
    pid_of_lane = np.array([l.pid for l in profile.lanes] or [0], np.int64)
    pids = pid_of_lane[profile.lane]
    ops = np.nonzero(links.frontend)[0]
    framework_rows = _cats(profile, ("neuron_framework", "privateuse1_driver"))
    fw_dev = np.nonzero(framework_rows & (tiers == int(Tier.DEVICE)) & ~has_pred)[0]
    _contain(profile, ops, pids, fw_dev, 0, src, dst, rules)
    sched = profile.name_id("nrta_execute_schedule")
    if sched >= 0:
        orphans = np.nonzero(system & (profile.name == sched) & (tiers == int(Tier.RUNTIME)) & ~has_pred)[0]
        orphans = orphans[~np.isin(orphans, np.asarray(dst, np.int64))] if dst else orphans
        if len(orphans):
            linked = np.nonzero(system & (profile.name == sched) & has_pred)[0]
            offset = _runtime_clock_offset(profile, links, linked)
            _contain(profile, ops, pids, orphans, offset, src, dst, rules)
    if src:
        links.add_edges(np.asarray(src), np.asarray(dst), np.asarray(rules, np.int8))


def _runtime_clock_offset(profile: Profile, links: Links, linked: np.ndarray) -> int:
    """The runtime rows' clock minus trace.json's: 0 (both host Unix ns), or the offset of Explorer's framework
    copies when the linked executions sit inside their ops only with that offset applied."""
    offset = int(profile.meta.trace_meta.get("neuron_clock_offset_ns") or 0)
    if not offset or not len(linked):
        return 0
    hits = {0: 0, offset: 0}
    for e in linked[:200].tolist():
        cur, seen = e, {e}
        for _ in range(16):
            preds = [p for p, _r in links.predecessors(cur) if p not in seen]
            if not preds:
                break
            cur = min(preds, key=lambda x: int(profile.start[x]))
            seen.add(cur)
            if links.frontend[cur]:
                break
        if cur == e or not links.frontend[cur]:
            continue
        for off in hits:
            s = int(profile.start[e]) - off
            hits[off] += int(profile.start[cur] <= s < profile.end[cur])
    return offset if hits[offset] > hits[0] else 0


def _contain(profile: Profile, ops: np.ndarray, pids: np.ndarray, rows: np.ndarray, offset: int, src: list[int],
             dst: list[int], rules: list[int]) -> None:
    """Edge from the innermost op of the same process whose interval contains each row's start (minus
    `offset`: the row's clock minus the ops' clock), labelled time containment."""
    if not len(rows) or not len(ops):
        return
    for p in np.unique(pids[rows]).tolist():
        cand = ops[pids[ops] == p]
        if not len(cand):
            continue
        cand = cand[np.lexsort((-(profile.end[cand] - profile.start[cand]), profile.start[cand]))]
        cs = profile.start[cand]
        for e in rows[pids[rows] == p].tolist():
            s = int(profile.start[e]) - offset
            k = int(np.searchsorted(cs, s, "right")) - 1
            steps = 0
            while k >= 0 and steps < 512:
                c = int(cand[k])
                if profile.end[c] > s and profile.start[c] <= s:
                    src.append(c)  # latest-starting op that contains s = innermost
                    dst.append(e)
                    rules.append(int(Rule.CONTAINMENT))
                    break
                k -= 1
                steps += 1


def _lnc_of(profile: Profile) -> list[int]:
    out = []
    for lane in profile.lanes:
        m = _NC_RX.fullmatch(lane.ident)
        out.append(int(m.group(1)) if m else -1)
    return out


def _roots_walk(profile: Profile, links: Links, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: (topmost event, rule of the row's own incoming edge), walking up one predecessor at a time
    (the earliest-starting one not yet on the path), rows in index order, memoised. The exact reference for
    `_roots`; used when a chain does not end within `_MAX_DEPTH` steps (a cycle)."""
    memo: dict[int, tuple[int, int]] = {}

    def root_of(e: int) -> tuple[int, int]:
        if e in memo:
            return memo[e]
        path = [e]
        seen = {e}
        first_rule = int(Rule.NONE)
        cur = e
        while True:
            if cur in memo and cur != e:
                top = memo[cur][0]
                break
            preds = [(p, r) for p, r in links.predecessors(cur) if p not in seen]
            if not preds:
                top = cur
                break
            p, r = min(preds, key=lambda x: int(profile.start[x[0]]))
            if cur == e:
                first_rule = r
            cur = p
            seen.add(cur)
            path.append(cur)
        for x in path[1:]:
            if x not in memo:
                memo[x] = (top, int(Rule.NONE))
        memo[e] = (top, first_rule)
        return memo[e]

    out = [root_of(e) for e in rows.tolist()]
    tops = np.fromiter((t for t, _ in out), np.int64, count=len(out))
    rules = np.fromiter((r for _, r in out), np.int64, count=len(out))
    return tops, rules


_MAX_DEPTH = 64


def _parent_of(profile: Profile, links: Links, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per node: its earliest-starting predecessor other than itself (the first such edge on ties, in edge
    order, as `min` over `links.predecessors` picks) and that edge's rule; -1 / NONE when it has none."""
    keys, other, erules = links._adjacency("up")
    a = np.searchsorted(keys, nodes, "left")
    b = np.searchsorted(keys, nodes, "right")
    cnt = b - a
    parent = np.full(len(nodes), NO_ID, np.int64)
    prule = np.zeros(len(nodes), np.int64)
    total = int(cnt.sum())
    if not total:
        return parent, prule
    seg = np.repeat(np.arange(len(nodes)), cnt)
    pos = np.repeat(a - (np.cumsum(cnt) - cnt), cnt) + np.arange(total)
    cand = other[pos]
    ok = cand != nodes[seg]  # a self-loop is never followed (the node is already on the path)
    seg, pos, cand = seg[ok], pos[ok], cand[ok]
    if not len(seg):
        return parent, prule
    # per node the first edge (in adjacency order, which keeps edge order) with the smallest start
    o = np.lexsort((pos, profile.start[cand], seg))
    seg_o = seg[o]
    first = np.ones(len(o), bool)
    first[1:] = seg_o[1:] != seg_o[:-1]
    pick = o[first]
    parent[seg[pick]] = cand[pick]
    prule[seg[pick]] = erules[pos[pick]]
    return parent, prule


def _roots(profile: Profile, links: Links, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`_roots_walk`, level by level over all rows at once.

    Where every row's chain of earliest predecessors ends (no cycle), the walk only ever follows those
    parents, so each row's top is the end of its chain whatever was memoised before; and a row's own rule
    reads NONE when the walk of an earlier row (lower index) passed through it, as the memo then holds it."""
    n = len(rows)
    tops = rows.copy()
    if not n or not len(links.edge_dst):
        return tops, np.zeros(n, np.int64)
    parent, rules = _parent_of(profile, links, rows)
    is_row = np.zeros(len(profile), bool)
    is_row[rows] = True
    first_desc = np.full(len(profile), np.iinfo(np.int64).max, np.int64)
    act = np.nonzero(parent >= 0)[0]
    cur = parent[act]
    depth = 0
    while len(act):
        depth += 1
        if depth > _MAX_DEPTH:
            return _roots_walk(profile, links, rows)
        tops[act] = cur
        hit = is_row[cur]
        if hit.any():
            np.minimum.at(first_desc, cur[hit], rows[act[hit]])
        # shared ancestors are looked up once
        uniq, inv = np.unique(cur, return_inverse=True)
        up, _ = _parent_of(profile, links, uniq)
        nxt = up[inv]
        go = nxt >= 0
        act, cur = act[go], nxt[go]
    rules = np.where(first_desc[rows] < rows, int(Rule.NONE), rules)
    return tops, rules


def system_device_time(profile: Profile, links: Links) -> dict[int, int]:
    """Frontend op → device ns from `nc_exec_running` rows linked below it (LNC duplicates merged)."""
    cached = profile.cache.get("neuron_device_time")
    if cached is not None:
        return dict(cached[0])
    hw_name = profile.name_id(EXECUTION)
    hw_cat = profile.cat_id("neuron_hw")
    result: dict[int, int] = {}
    info = {"executions": 0, "unlinked_rows": 0, "unlinked_ns": 0, "rules": {}}
    if hw_name < 0 or hw_cat < 0:
        profile.cache["neuron_device_time"] = (result, info)
        return result
    rows = np.nonzero((profile.name == hw_name) & (profile.cat == hw_cat))[0]
    tops, rules = _roots(profile, links, rows)
    linked = (tops != rows) & links.frontend[tops]
    un = rows[~linked]
    info["unlinked_rows"] = int(len(un))
    info["unlinked_ns"] = int((profile.end[un] - profile.start[un]).sum())
    rows, tops, rules = rows[linked], tops[linked], rules[linked]

    # rule labels, counted in order of first use
    rule_counts: dict[str, int] = {}
    if len(rows):
        uniq, first, counts = np.unique(rules, return_index=True, return_counts=True)
        for k in np.argsort(first, kind="stable").tolist():
            r = int(uniq[k])
            label = RULE_NAMES.get(Rule(r), Rule(r).label) if r in Rule._value2member_map_ else "link"
            rule_counts[label] = rule_counts.get(label, 0) + int(counts[k])

    # per (top, instance, pid, logical core): the union of the execution intervals
    lnc = _lnc_of(profile)
    lane_keys: dict[tuple, int] = {}
    lane_gid = np.array([lane_keys.setdefault((l.instance, l.pid, lnc[k]), len(lane_keys))
                         for k, l in enumerate(profile.lanes)] or [0], np.int64)
    if len(rows):
        g = lane_gid[profile.lane[rows]]
        s = profile.start[rows]
        e = profile.end[rows]
        o = np.lexsort((e, s, g, tops))
        t_o, g_o, s_o, e_o = tops[o], g[o], s[o], e[o]
        m = len(o)
        gnew = np.ones(m, bool)
        gnew[1:] = (t_o[1:] != t_o[:-1]) | (g_o[1:] != g_o[:-1])
        if (e_o >= s_o).all():
            # end of the current merged interval = running max of the group's ends so far (ends >= starts)
            gidx = np.cumsum(gnew) - 1
            ends_sorted, rank = np.unique(e_o, return_inverse=True)
            run = np.maximum.accumulate(gidx * len(ends_sorted) + rank.reshape(-1)) - gidx * len(ends_sorted)
            prev_end = np.empty(m, np.int64)
            prev_end[1:] = ends_sorted[run[:-1]]
            prev_end[0] = 0
            bound = gnew | (s_o >= prev_end)
            bpos = np.nonzero(bound)[0]
            span = np.maximum.reduceat(e_o, bpos) - s_o[bpos]
        else:  # negative durations: merge one by one, as intervals were always merged
            bpos_l: list[int] = []
            span_l: list[int] = []
            cs = ce = 0
            for i, (new, si, ei) in enumerate(zip(gnew.tolist(), s_o.tolist(), e_o.tolist())):
                if not new and si < ce:
                    ce = max(ce, ei)
                    span_l[-1] = ce - cs
                else:
                    bpos_l.append(i)
                    span_l.append(ei - si)
                    cs, ce = si, ei
            bpos = np.asarray(bpos_l, np.int64)
            span = np.asarray(span_l, np.int64)
        info["executions"] = int(len(bpos))
        ct = t_o[bpos]
        tstart = np.nonzero(np.r_[True, ct[1:] != ct[:-1]])[0]
        top_ids = ct[tstart]
        totals = np.add.reduceat(span, tstart)
        # ops in order of their first row, as the dict was filled row by row
        first_row = np.full(len(profile), np.iinfo(np.int64).max, np.int64)
        np.minimum.at(first_row, tops, rows)
        k = np.argsort(first_row[top_ids], kind="stable")
        result = dict(zip(top_ids[k].tolist(), totals[k].tolist()))
    info["rules"] = rule_counts
    profile.cache["neuron_device_time"] = (result, info)
    meta = profile.meta
    if result and (not meta.device_time_source or meta.device_time_source.startswith("Neuron system trace")):
        via = ", ".join(sorted(rule_counts)) or "links"
        meta.device_time_source = f"Neuron system trace ({EXECUTION} via {via}; per-core copies merged)"
    if info["unlinked_rows"]:
        note = (
            f"{info['unlinked_rows']} {EXECUTION} row(s) ({info['unlinked_ns'] / 1000:.1f} us) are linked to no "
            "framework op and are not in the device-time columns"
        )
        if note not in meta.notes:
            meta.notes.append(note)
    return dict(result)


def device_time_info(profile: Profile) -> dict:
    """Counts behind `system_device_time` (executions, unlinked rows, rules), after it ran."""
    cached = profile.cache.get("neuron_device_time")
    return dict(cached[1]) if cached else {}


def _mapping_edges(profile: Profile, links: Links, mapping: list, tiers: np.ndarray, system: np.ndarray,
                   has_pred: np.ndarray, src: list[int], dst: list[int], rules: list[int]) -> None:
    """Link framework ops to runtime executions through the old mapping file: seq_nr = the op's
    `Sequence number` arg, nrta_seq_id = the runtime row's nrt_sequence_id."""
    by_seq_nr: dict[int, list[int]] = {}
    for nrta, seq_nr, _th, _stream in mapping:
        if seq_nr >= 0:
            by_seq_nr.setdefault(seq_nr, []).append(nrta)
    rt = np.nonzero(system & (tiers == int(Tier.RUNTIME)) & (profile.corr >= 0))[0]
    if not len(rt) or not by_seq_nr:
        return
    sched = profile.name_id("nrta_execute_schedule")
    o = np.lexsort((profile.start[rt], profile.name[rt] != sched, profile.corr[rt]))
    rts = rt[o]
    keys, first = np.unique(profile.corr[rts], return_index=True)
    rep_of = dict(zip(keys.tolist(), rts[first].tolist()))
    ops = np.nonzero(links.frontend)[0]
    for op, a in zip(ops.tolist(), decoded_many(profile.args_raw, ops)):  # (read a batch at a time)
        sn = a.get("Sequence number")
        if sn is None:
            continue
        try:
            sn = int(sn)
        except (TypeError, ValueError):
            continue
        for nrta in by_seq_nr.get(sn, ()):
            r = rep_of.get(nrta)
            if r is not None and not has_pred[r]:
                src.append(op)
                dst.append(r)
                rules.append(int(Rule.SEQUENCE))
                has_pred[r] = True
