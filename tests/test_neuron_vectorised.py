"""The array versions of the Neuron device-time walk and of the flow-group edges agree with the per-event
Python loops they replaced, on random graphs with cycles, self-loops, several predecessors, repeated edges,
ties in start and negative durations."""

from __future__ import annotations

import numpy as np
import pytest

from trntui.analysis import neuron
from trntui.analysis.links import Links, Rule, _add_flow_edges, build_links
from trntui.model.builder import ProfileBuilder
from trntui.model.profile import ProfileMeta, Tier


def _profile(rng: np.random.Generator, n: int, *, flows: int = 0, negative: bool = False):
    b = ProfileBuilder(ProfileMeta(device_kind="neuron", backend="NEURON"))
    host = [b.lane(Tier.DISPATCH, "framework", f"TID:{t}", 1, t) for t in (1, 2)]
    rt = b.lane(Tier.RUNTIME, "neuron_rt", "NRT", 1, 9)
    cores = [b.lane(Tier.HARDWARE, "neuron_hw", ident, pid, 0, instance=inst)
             for ident, pid, inst in (("NC0:0", 1, ""), ("NC0:1", 1, ""), ("NC1:2", 1, ""), ("NC0:0", 2, "i-1"))]
    op, ex, call = b.intern_name("aten::mm"), b.intern_name(neuron.EXECUTION), b.intern_name("nrt_execute")
    c_op, c_rt, c_hw = b.intern_cat("cpu_op"), b.intern_cat("neuron_rt"), b.intern_cat("neuron_hw")
    kind = rng.integers(0, 3, n)  # 0 op, 1 runtime, 2 execution
    start = rng.integers(0, 40, n) * 10  # coarse: many ties
    dur = rng.integers(1, 60, n)
    if negative:
        dur[rng.random(n) < 0.2] *= -1
    lane = np.where(kind == 0, rng.choice(host, n), np.where(kind == 1, rt, rng.choice(cores, n)))
    first = b.add_events(start=start, end=start + dur, lane=lane, name=np.choose(kind, [op, call, ex]),
                         cat=np.choose(kind, [c_op, c_rt, c_hw]))
    if flows:
        ev = rng.integers(0, n, flows) + first
        b.add_flows(rng.integers(0, max(2, flows // 4), flows), ev, rng.integers(0, 2, flows),
                    np.full(flows, 2))
    return b.finish()


def _random_edges(rng: np.random.Generator, p, m: int, *, acyclic: bool):
    n = len(p)
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    if acyclic:  # only edges from a lower to a higher index, plus self-loops (never followed)
        src, dst = np.minimum(src, dst), np.maximum(src, dst)
    # repeated edges with another rule
    k = rng.integers(0, m, m // 5)
    src, dst = np.concatenate([src, src[k]]), np.concatenate([dst, dst[k]])
    rules = rng.choice([int(Rule.FLOW), int(Rule.SEQUENCE), int(Rule.CONTAINMENT), 9], len(src)).astype(np.int8)
    return src, dst, rules


def _reference_device_time(p, links):
    """The per-row loop system_device_time used before it was vectorised."""
    rows = np.nonzero(p.name == p.name_id(neuron.EXECUTION))[0]
    tops, rules = neuron._roots_walk(p, links, rows)
    lnc = neuron._lnc_of(p)
    groups: dict[tuple, list[tuple[int, int]]] = {}
    rule_counts: dict[str, int] = {}
    info = {"executions": 0, "unlinked_rows": 0, "unlinked_ns": 0}
    for e, top, rule in zip(rows.tolist(), tops.tolist(), rules.tolist()):
        lane = p.lanes[int(p.lane[e])]
        if top == e or not links.frontend[top]:
            info["unlinked_rows"] += 1
            info["unlinked_ns"] += int(p.end[e] - p.start[e])
            continue
        label = neuron.RULE_NAMES.get(Rule(rule), Rule(rule).label) if rule in Rule._value2member_map_ else "link"
        rule_counts[label] = rule_counts.get(label, 0) + 1
        groups.setdefault((top, lane.instance, lane.pid, lnc[int(p.lane[e])]), []).append(
            (int(p.start[e]), int(p.end[e])))
    result: dict[int, int] = {}
    for (top, *_), ivs in groups.items():
        ivs.sort()
        total, (cs, ce), executions = 0, ivs[0], 1
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
    return result, info


@pytest.mark.parametrize("seed", range(40))
def test_device_time_matches_per_row_walk(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = _profile(rng, int(rng.integers(5, 120)), negative=seed % 5 == 4)
    links = build_links(p)
    src, dst, rules = _random_edges(rng, p, int(rng.integers(0, 3 * len(p))), acyclic=seed % 2 == 0)
    links.add_edges(src, dst, rules)
    rows = np.nonzero(p.name == p.name_id(neuron.EXECUTION))[0]
    tw, rw = neuron._roots_walk(p, links, rows)
    tv, rv = neuron._roots(p, links, rows)
    assert tv.tolist() == tw.tolist() and rv.tolist() == rw.tolist()
    want, want_info = _reference_device_time(p, links)
    got = neuron.system_device_time(p, links)
    info = neuron.device_time_info(p)
    assert list(got.items()) == list(want.items())
    assert info == want_info and list(info["rules"]) == list(want_info["rules"])


def test_roots_chain_through_an_earlier_row_and_ties() -> None:
    """Rows below rows: a row the walk of an earlier row went through keeps rule NONE; on a start tie the
    first edge wins; a self-loop is skipped."""
    rng = np.random.default_rng(0)
    p = _profile(rng, 30)
    links = Links(np.ones(len(p), bool), np.zeros(len(p), bool), np.zeros(len(p), bool),
                  *(np.full(len(p), -1, np.int64) for _ in range(3)))
    rows = np.nonzero(p.name == p.name_id(neuron.EXECUTION))[0]
    r0, r1 = rows[:2]
    a, b = [i for i in range(len(p)) if i not in (r0, r1) and p.start[i] == p.start[0]][:2] or (None, None)
    edges = [(r1, r0, Rule.FLOW), (r1, r1, Rule.SEQUENCE)]
    if a is not None:
        edges += [(a, r1, Rule.CONTAINMENT), (b, r1, Rule.FLOW)]
    links.add_edges(*(np.array(x) for x in zip(*edges)))
    tw, rw = neuron._roots_walk(p, links, rows)
    tv, rv = neuron._roots(p, links, rows)
    assert tv.tolist() == tw.tolist() and rv.tolist() == rw.tolist()
    if r1 > r0:
        assert rv[1] == Rule.NONE  # r0 (earlier) walked through r1


def _reference_flow_edges(p):
    flows = p.flows
    tiers = np.array([int(l.tier) for l in p.lanes], np.int64)
    idx = np.nonzero(flows.role == flows.MEMBER)[0]
    order = idx[np.lexsort((p.start[flows.event[idx]], tiers[p.lane[flows.event[idx]]], flows.key[idx],
                            flows.cat[idx]))]
    ev = flows.event[order].tolist()
    key = list(zip(flows.cat[order].tolist(), flows.key[order].tolist()))
    tier_of = tiers[p.lane[flows.event[order]]].tolist()
    src, dst = [], []
    k = 0
    while k < len(order):
        j = k
        while j < len(order) and key[j] == key[k]:
            j += 1
        groups: list[list[int]] = []
        last = None
        for q in range(k, j):
            if tier_of[q] != last:
                groups.append([])
                last = tier_of[q]
            groups[-1].append(ev[q])
        for upper, lower in zip(groups, groups[1:]):
            src += [x for x in upper for _ in lower]
            dst += [y for _ in upper for y in lower]
        k = j
    return src, dst


@pytest.mark.parametrize("seed", range(20))
def test_flow_edges_match_group_loop(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    p = _profile(rng, int(rng.integers(5, 80)), flows=int(rng.integers(1, 150)))
    links = Links(*(np.zeros(len(p), bool) for _ in range(3)), *(np.full(len(p), -1, np.int64) for _ in range(3)))
    _add_flow_edges(p, links)
    src, dst = _reference_flow_edges(p)
    assert links.edge_src.tolist() == src and links.edge_dst.tolist() == dst
    assert (links.edge_rule == Rule.FLOW).all()
