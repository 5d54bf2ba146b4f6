"""key_averages' CPU table against a plain transcription of torch's own loops (profiler_util.py
`_populate_cpu_children`, `_remove_dup_nodes`, `key_averages`) on generated hostile traces: partial overlaps,
equal starts, zero durations, same-name chains that merge, many threads. Counts and µs sums must agree exactly
(the same floats summed in the same order)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trntui.analysis.key_averages import key_averages
from trntui.loaders.kineto.load import load_kineto

NAMES = ("a", "a", "b", "c", "ProfilerStep#1", "ProfilerStep#2")


@st.composite
def cpu_events(draw) -> list[tuple[int, str, int, int]]:
    """(tid, name, start µs, end µs) in file order; some events get a same-name copy nested inside them (the
    chains `_remove_dup_nodes` merges), some overlap others partially, some have no duration."""
    out = []
    for _ in range(draw(st.integers(1, 40))):
        tid = draw(st.integers(1, draw(st.sampled_from((1, 3, 12)))))
        s = draw(st.integers(0, 60))
        e = s + draw(st.sampled_from((0, 0, 1, 2, 5, 9, 20, 40)))
        name = draw(st.sampled_from(NAMES))
        out.append((tid, name, s, e))
        for _ in range(draw(st.integers(0, 3))):  # same-name children inside it (or zero-length ones)
            s = min(e, s + draw(st.integers(0, 1)))
            e = max(s, e - draw(st.integers(0, 1)))
            out.append((tid, name, s, e))
    return out


class _Ev:
    def __init__(self, k: int, tid: int, name: str, s: float, e: float) -> None:
        self.k, self.tid, self.s, self.e = k, tid, s, e
        self.name = "ProfilerStep*" if name.startswith("ProfilerStep#") else name
        self.parent: _Ev | None = None
        self.children: list[_Ev] = []


def _torch_table(events: list[tuple[int, str, int, int]]) -> list[tuple[str, int, float, float]]:
    """(name, count, self CPU total, CPU total) per row, in torch's row order, computed as torch does."""
    origin = min(s for _, _, s, _ in events) * 1000
    evs = [_Ev(k, tid, name, (s * 1000 - origin) / 1000.0, (e * 1000 - origin) / 1000.0)
           for k, (tid, name, s, e) in enumerate(events)]
    for tid in sorted({ev.tid for ev in evs}):  # _populate_cpu_children
        stack: list[_Ev] = []
        for ev in sorted((ev for ev in evs if ev.tid == tid), key=lambda ev: (ev.s, -ev.e, ev.k)):
            while stack:
                top = stack[-1]
                if ev.s >= top.e or ev.e > top.e:
                    stack.pop()
                else:
                    top.children.append(ev)
                    ev.parent = top
                    break
            stack.append(ev)
    evs.sort(key=lambda ev: (ev.s, -ev.e, ev.k))
    while True:  # _remove_dup_nodes
        deleted = set()
        for idx, ev in enumerate(evs):
            p = ev.parent
            if p is not None and p.name == ev.name and len(p.children) == 1:
                p.children = ev.children
                for ch in ev.children:
                    ch.parent = p
                deleted.add(idx)
        if not deleted:
            break
        evs = [ev for idx, ev in enumerate(evs) if idx not in deleted]
    rows: dict[str, list] = {}
    for ev in evs:  # key_averages: every event added to its key's row, in list order
        total = ev.e - ev.s
        row = rows.setdefault(ev.name, [0, 0, 0])
        row[0] += 1
        row[1] += total - sum(ch.e - ch.s for ch in ev.children)
        row[2] += total
    return [(name, c, float(self_cpu), float(cpu)) for name, (c, self_cpu, cpu) in rows.items()]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(cpu_events())
def test_cpu_table_is_torchs(tmp_path, events):
    trace = {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": s, "dur": e - s}
                             for tid, name, s, e in events]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    table = key_averages(load_kineto(path))
    got = [(table.name[k], int(table.count[k]), float(table.self_cpu_time_total[k]), float(table.cpu_time_total[k]))
           for k in range(len(table))]
    assert got == _torch_table(events)
