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
from trntui.model.profile import NO_ID, Profile, Tier

EXECUTION = "nc_exec_running"
_NC_RX = re.compile(r"NC(\d+):(\d+)")
RULE_NAMES = {Rule.FLOW: "flow_id", Rule.SEQUENCE: "nrt_sequence_id", Rule.EXTERNAL_ID: "External id",
              Rule.CONTAINMENT: "time containment", Rule.CORRELATION: "correlation"}


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

    # framework device events without an op above them: innermost op of the process containing their start
    fw_dev = np.nonzero(_cats(profile, ("neuron_framework",)) & (tiers == int(Tier.DEVICE)) & ~has_pred)[0]
    if len(fw_dev):
        pid_of_lane = np.array([l.pid for l in profile.lanes] or [0], np.int64)
        pids = pid_of_lane[profile.lane]
        ops = np.nonzero(links.frontend)[0]
        for p in np.unique(pids[fw_dev]).tolist():
            cand = ops[pids[ops] == p]
            if not len(cand):
                continue
            cand = cand[np.lexsort((-(profile.end[cand] - profile.start[cand]), profile.start[cand]))]
            cs = profile.start[cand]
            for e in fw_dev[pids[fw_dev] == p].tolist():
                s = int(profile.start[e])
                k = int(np.searchsorted(cs, s, "right")) - 1
                best = NO_ID
                steps = 0
                while k >= 0 and steps < 512:
                    c = int(cand[k])
                    if profile.end[c] > s and profile.start[c] <= s:
                        best = c  # latest-starting op that contains s = innermost
                        break
                    k -= 1
                    steps += 1
                if best != NO_ID:
                    src.append(best)
                    dst.append(e)
                    rules.append(Rule.CONTAINMENT)
    if src:
        links.add_edges(np.asarray(src), np.asarray(dst), np.asarray(rules, np.int8))


def _lnc_of(profile: Profile) -> list[int]:
    out = []
    for lane in profile.lanes:
        m = _NC_RX.fullmatch(lane.ident)
        out.append(int(m.group(1)) if m else -1)
    return out


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
    memo: dict[int, tuple[int, int]] = {}

    def root_of(e: int) -> tuple[int, int]:
        """(topmost event, rule of e's own incoming edge)."""
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

    lnc = _lnc_of(profile)
    groups: dict[tuple, list[tuple[int, int]]] = {}
    rule_counts: dict[str, int] = {}
    for e in rows.tolist():
        top, rule = root_of(e)
        lane = profile.lanes[int(profile.lane[e])]
        if top == e or not links.frontend[top]:
            info["unlinked_rows"] += 1
            info["unlinked_ns"] += int(profile.end[e] - profile.start[e])
            continue
        label = RULE_NAMES.get(Rule(rule), Rule(rule).label) if rule in Rule._value2member_map_ else "link"
        rule_counts[label] = rule_counts.get(label, 0) + 1
        groups.setdefault((top, lane.instance, lane.pid, lnc[int(profile.lane[e])]), []).append(
            (int(profile.start[e]), int(profile.end[e]))
        )
    for (top, *_), ivs in groups.items():
        ivs.sort()
        total = 0
        cs, ce = ivs[0]
        executions = 1
        for s, e in ivs[1:]:
            if s < ce:
                ce = max(ce, e)
            else:
                total += ce - cs
                cs, ce = s, e
                executions += 1
        total += ce - cs
        info["executions"] += executions
        result[top] = result.get(top, 0) + total
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
    for op in np.nonzero(links.frontend)[0].tolist():
        a = profile.args(op)
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
