"""Export a loaded run: its SQL tables as Parquet files (`parquet_tables`), or the whole run as one Kineto-style
chrome trace (`write_chrome_trace`): a Neuron system trace merged with its framework trace, flows kept, so that
Perfetto UI (or chrome://tracing, or trntui) opens it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any, Iterator

import numpy as np

from trntui.model.profile import EventKind, Flows, Profile

CHUNK = 50_000


def parquet_tables(db: Any, directory: Path, force: bool = False) -> dict[str, int]:
    """Every table of `db` (trntui/query/database.py: events, lanes, ..., the device tables; not the views) as
    `DIRECTORY/<table>.parquet`, streamed a batch at a time. Returns table -> rows written.

    Each file is written whole and put in place by trntui/fsio.py: every target is checked first (a symbolic
    link, a FIFO or a directory is refused; an existing file is replaced only with `force`)."""
    from trntui import fsio
    from trntui.query.views import VIEWS
    from trntui.report.results import write_parquet

    fsio.ensure_dir(directory)
    names = [name for name in db.table_names() if name not in VIEWS]
    for name in names:
        fsio.check_target(directory / f"{name}.parquet", force=force)
    out: dict[str, int] = {}
    for name in names:
        result = db.batches(f'SELECT * FROM "{name}"')
        out[name] = fsio.atomic_write(directory / f"{name}.parquet",
                                      lambda tmp, r=result: write_parquet(r.schema, r, tmp), force=force)
    return out


def _tracks(profile: Profile) -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]:
    """Per lane: the (pid, tid) it is written under and the metadata events naming it. Lanes that share a thread
    in the source (a thread's framework and runtime rows) share it again; other lanes that would land on one
    track (Neuron's subsystems of one process) get a track of their own."""
    pids = np.zeros(len(profile.lanes), np.int64)
    tids = np.zeros(len(profile.lanes), np.int64)
    meta: list[dict[str, Any]] = []
    owner: dict[tuple[int, int], int] = {}
    named_pids: set[int] = set()
    for lane in profile.lanes:
        key = (lane.pid, lane.tid)
        first = owner.get(key)
        shared = first is not None and {profile.lanes[first].subsystem, lane.subsystem} <= {"framework", "runtime"}
        if first is None or shared:
            owner.setdefault(key, lane.id)
            pid, tid = key
        else:
            pid, tid = lane.pid, 1_000_000_000 + lane.id
        pids[lane.id], tids[lane.id] = pid, tid
        if pid not in named_pids:
            named_pids.add(pid)
            pname = lane.process_name or (lane.instance and f"{lane.instance} PID:{lane.pid}") or f"PID:{lane.pid}"
            meta.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": pname}})
        if first is None or not shared:
            meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                         "args": {"name": lane.thread_name or lane.label}})
            meta.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                         "args": {"sort_index": int(lane.tier) * 1_000_000 + lane.sort_index}})
    return pids, tids, meta


def _us(ns: np.ndarray, base: int) -> list[float]:
    """int64 ns -> µs floats as the file had them (whole µs exact, then the ns fraction)."""
    rel = ns - base
    return ((rel // 1000).astype(np.float64) + (rel % 1000) / 1000.0).tolist()


def _flow_events(profile: Profile, pids: np.ndarray, tids: np.ndarray) -> Iterator[dict[str, Any]]:
    """Flows as chrome `s`/`f` pairs: Kineto halves as they were; a Neuron flow's members (role 2) chained by
    time, first `s`, last `f` (`t` between)."""
    f = profile.flows
    if not len(f):
        return
    base = int(profile.meta.base_ns)
    start = profile.start[f.event]
    order = np.lexsort((start, f.role == Flows.FINISH, f.key, f.cat))
    key, ev, cat, role = f.key[order], f.event[order], f.cat[order], f.role[order]
    ts = _us(profile.start[ev], base)
    group_start = np.ones(len(key), bool)
    group_start[1:] = (key[1:] != key[:-1]) | (cat[1:] != cat[:-1])
    group_end = np.ones(len(key), bool)
    group_end[:-1] = group_start[1:]
    for k in range(len(key)):
        e = int(ev[k])
        lane = int(profile.lane[e])
        r = int(role[k])
        if r == Flows.START:
            ph = "s"
        elif r == Flows.FINISH:
            ph = "f"
        else:
            ph = "s" if group_start[k] else "f" if group_end[k] else "t"
        item = {"ph": ph, "id": int(key[k]), "pid": int(pids[lane]), "tid": int(tids[lane]), "ts": ts[k],
                "cat": profile.cats[int(cat[k])], "name": profile.cats[int(cat[k])]}
        if ph == "f":
            item["bp"] = "e"
        yield item


def write_chrome_trace(profile: Profile, out: IO[str]) -> int:
    """The run as one chrome trace (`{"traceEvents": [...]}`), written a chunk at a time; returns the events
    written (not counting metadata and flows). Times are the file's µs (`baseTimeNanoseconds` kept)."""
    from trntui.model.args import decode_args, raw_many

    base = int(profile.meta.base_ns)
    pids, tids, meta = _tracks(profile)
    out.write('{\n"traceEvents": [\n')
    first = True

    def emit(items: list[str]) -> None:
        nonlocal first
        if not items:
            return
        out.write(("" if first else ",\n") + ",\n".join(items))
        first = False

    emit([json.dumps(m) for m in meta])
    n = len(profile)
    for a in range(0, n, CHUNK):
        idx = np.arange(a, min(n, a + CHUNK))
        ts = _us(profile.start[idx], base)
        dur = ((profile.end[idx] - profile.start[idx]) / 1000.0).tolist()
        lanes = profile.lane[idx]
        raws = raw_many(profile.args_raw, idx)
        items = []
        for k, i in enumerate(idx.tolist()):
            lane = int(lanes[k])
            ev: dict[str, Any] = {"ph": "i" if int(profile.kind[i]) == EventKind.INSTANT else "X",
                                  "cat": profile.cats[int(profile.cat[i])], "name": profile.names[int(profile.name[i])],
                                  "pid": int(pids[lane]), "tid": int(tids[lane]), "ts": ts[k]}
            if ev["ph"] == "X":
                ev["dur"] = dur[k]
            else:
                ev["s"] = "t"
            raw = raws[k]
            args = raw if isinstance(raw, dict) else decode_args(raw) if len(raw) else {}
            if args:
                ev["args"] = args
            items.append(json.dumps(ev, default=str))
        emit(items)
    emit([json.dumps(f) for f in _flow_events(profile, pids, tids)])
    out.write("\n]")
    if base:
        out.write(f',\n"baseTimeNanoseconds": {base}')
    extra = {k: v for k, v in (profile.meta.trace_meta or {}).items()
             if k in ("deviceProperties", "distributedInfo", "schemaVersion", "displayTimeUnit")}
    for k, v in extra.items():
        out.write(f",\n{json.dumps(k)}: {json.dumps(v, default=str)}")
    out.write("\n}\n")
    return n
