"""Cells and event dicts into `SystemRows`: ids that may be ints, floats or strings (bounded to int64, a bad cell
counted, never fatal), `flow_id` lists, the extra-attributes JSON, a row's source (framework, runtime, hardware),
and `rows_from_records` for the JSON export and Parquet rows read as Python."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from trntui.loaders.neuron.system.columns import Strs, SystemRows
from trntui.model.profile import NO_ID

HARDWARE_NAMES = frozenset(
    {
        "nc_exec_running",
        "cc_running",
        "cc_exec_barrier",
        "numerical_err",
        "nrt_model_switch",
        "nc_model_switch",
        "timestamp_sync_point",
        "hw_notify",
    }
)
"""Documented hardware events (neuron-formats.md §9); used only when a row has no `trace_event_source`."""


INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
OUT_OF_RANGE = "Neuron values out of the int64 range (ts 1e400, 'inf', 2**70, ...), left empty"
"""The `skipped` reason for cells no int64 holds: the cell is treated as missing (a row without a timestamp is
then skipped as such), the rest of the row and of the file is read."""


def to_int(value: Any, default: int = NO_ID, bad: list[int] | None = None) -> int:
    """An id that may be int, float, numeric string (beyond 2^53: parsed exactly), or missing. A value that
    is not a finite number inside the int64 range (1e400, "inf", NaN, 2**70) is `default`, counted in
    `bad[0]` when given: one bad cell never sinks a run."""
    if value is None:
        return default
    if isinstance(value, bool):
        return int(value)
    try:
        if isinstance(value, int):
            out = value
        elif isinstance(value, float):
            out = int(value)  # OverflowError for ±inf, ValueError for NaN
        else:
            text = str(value).strip()
            if not text:
                return default
            try:
                out = int(text)
            except ValueError:
                number = float(text)  # ValueError: not a number at all (a missing value, not an overflow)
                if number != number or number in (float("inf"), float("-inf")):
                    raise OverflowError(text) from None
                out = int(number)
    except OverflowError:
        out = None
    except ValueError:
        if isinstance(value, float):  # NaN
            out = None
        else:
            return default
    if out is None or not INT64_MIN <= out <= INT64_MAX:
        if bad is not None:
            bad[0] += 1
        return default
    return out


_to_int = to_int


def parse_flow_ids(value: Any) -> list[int]:
    """`flow_id` as list of string ints (documented), list of ints, a JSON list in a string, or `"1,2"`."""
    if value is None:
        return []
    if isinstance(value, (list, tuple, np.ndarray)):
        out = [to_int(v) for v in value]
        return [v for v in out if v != NO_ID]
    if isinstance(value, (int, np.integer)):
        return [int(value)]
    text = str(value).strip()
    if not text:
        return []
    if text.startswith("["):
        try:
            return parse_flow_ids(json.loads(text))
        except ValueError:
            pass
    out = [to_int(p.strip().strip('"')) for p in text.strip("[]").split(",")]
    return [v for v in out if v != NO_ID]


def parse_extra(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    try:
        parsed = json.loads(value)
    except (TypeError, ValueError):
        return {"extra_attributes_json": value}
    return parsed if isinstance(parsed, dict) else {"extra_attributes_json": parsed}


def infer_source(name: str, source: Any, group: Any = None) -> str:
    """`framework` / `neuron_rt` / `neuron_hw` from the column, a Profiler-2.0 `group`, or the name."""
    if isinstance(source, str) and source:
        s = source.lower()
        if s.startswith("framework") or s in ("pytorch", "jax"):
            return "framework"
        if "hw" in s or "hardware" in s or "device" in s:
            return "neuron_hw"
        if "rt" in s or "runtime" in s or s.startswith("nrt"):
            return "neuron_rt"
        return s
    if isinstance(group, str) and group.startswith("framework"):
        return "framework"
    if name in HARDWARE_NAMES:
        return "neuron_hw"
    return "neuron_rt"


def rows_from_records(records: list[dict[str, Any]], notes: list[str] | None = None) -> SystemRows:
    """Normalise event dicts (JSON exports, or Parquet rows read as Python) into `SystemRows`."""
    n = len(records)
    name: list[str] = []
    source: list[str] = []
    instance: list[str] = []
    stream: list[str | None] = []
    args: list[dict[str, Any]] = []
    start = np.zeros(n, np.int64)
    end = np.zeros(n, np.int64)
    pid = np.full(n, NO_ID, np.int64)
    tid = np.full(n, NO_ID, np.int64)
    nc = np.full(n, NO_ID, np.int64)
    pcore = np.full(n, NO_ID, np.int64)
    seq = np.full(n, NO_ID, np.int64)
    frow: list[int] = []
    fkey: list[int] = []
    bad = 0
    keep = np.ones(n, bool)
    oor = [0]  # cells out of the int64 range

    def to_int(value: Any, default: int = NO_ID) -> int:  # (this function's cells are counted)
        return _to_int(value, default, oor)

    core = {
        "name", "start_ts", "end_ts", "duration_ns", "timestamp", "duration", "timestamp_ns", "trace_event_source",
        "instance_id", "process_id", "thread_id", "nc_idx", "lnc_idx", "pcore_idx", "device_core_idx", "flow_id",
        "framework_stream_id", "extra_attributes_json", "group", "timestamp_unit",
    }
    for k, r in enumerate(records):
        extra = parse_extra(r.get("extra_attributes_json"))
        get = lambda key, r=r, extra=extra: r.get(key, extra.get(key))  # noqa: E731
        nm = str(r.get("name") or extra.get("name") or "")
        s = to_int(get("start_ts"))
        if s == NO_ID:
            s = to_int(get("timestamp"))
        if s == NO_ID:
            s = to_int(get("timestamp_ns"))
        e = to_int(get("end_ts"))
        if e == NO_ID:
            d = to_int(get("duration_ns"))
            if d == NO_ID:
                d = to_int(get("duration"), 0)
            e = s + max(d, 0) if s != NO_ID else NO_ID
            if e > INT64_MAX:  # a valid start plus a valid duration past the int64 range
                oor[0] += 1
                e = s
        if s == NO_ID or not nm:
            bad += 1
            keep[k] = False
            name.append(nm)
            source.append("")
            instance.append("")
            stream.append(None)
            args.append({})
            continue
        name.append(nm)
        start[k] = s
        end[k] = max(e, s)
        src = infer_source(nm, r.get("trace_event_source"), r.get("group"))
        source.append(src)
        instance.append(str(get("instance_id") or ""))
        pid[k] = to_int(get("process_id"))
        tid[k] = to_int(get("thread_id"))
        ncv = to_int(get("nc_idx"))
        if ncv == NO_ID:
            ncv = to_int(get("lnc_idx"))
        nc[k] = ncv
        pc = to_int(get("pcore_idx"))
        if pc == NO_ID:
            pc = to_int(get("device_core_idx"))
        pcore[k] = pc
        st = get("framework_stream_id")
        stream.append(None if st is None or st == "" else str(st))
        seq[k] = to_int(get("nrt_sequence_id"), to_int(get("nrta_seq_id")))
        for f in parse_flow_ids(get("flow_id")):
            frow.append(k)
            fkey.append(f)
        a = {key: v for key, v in r.items() if key not in core and v is not None}
        a.update({key: v for key, v in extra.items() if key not in a})
        for key in ("nc_idx", "pcore_idx", "framework_stream_id", "trace_event_source"):
            v = r.get(key)
            if v is not None:
                a[key] = v
        fl = r.get("flow_id", extra.get("flow_id"))
        if fl is not None:
            a["flow_id"] = [str(x) for x in parse_flow_ids(fl)]
        args.append(a)
    rows = SystemRows(
        name=Strs.from_list(name),
        start=start,
        end=end,
        source=Strs.from_list(source),
        instance=Strs.from_list(instance),
        pid=pid,
        tid=tid,
        nc=nc,
        pcore=pcore,
        stream=Strs.from_list(stream),
        seq=seq,
        flow_row=np.asarray(frow, np.int64),
        flow_key=np.asarray(fkey, np.int64),
        args=args,
        notes=list(notes or []),
    )
    if oor[0]:
        rows.skipped[OUT_OF_RANGE] = oor[0]
    if bad:
        rows.notes.append(f"{bad} system-trace row(s) without a name or timestamp skipped")
        rows = rows.take(keep)
    return rows

