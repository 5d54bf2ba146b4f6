"""Read Neuron Explorer's legacy JSON system export (and other documented JSON shapes) into a `ProfileBuilder`.

Accepted shapes (neuron-formats.md §7), all normalised to `SystemProfileEvents` columns:

(a) `view --output-format json`: `{"system_profile_metadata": [...], "device_profile_list": [...],
    "trace_event": [{"name", "timestamp", "duration", "nc_idx", "process_id": "2", ...}], "warnings": [...]}`;
(b) Profiler 2.0: one object per kind, e.g. `{"Neuron_Runtime_API_Event": {...}, "Framework_Event": {...}}`
    (a dict of kinds, or a list of such dicts), `group` prefixes `nrt-` / `framework-`;
(c) runtime live-fetch: `{"events": [{"event_type", "phase": "start"|"stop", "tracking_id", "timestamp_ns",
    "nc_idx", "data": {...}}]}`, start/stop paired by `tracking_id`;
and a bare list of event objects. ns integers beyond 2^53 are parsed as ints (never floats).

No Trainium hardware was used: these shapes come from the docs and third-party scripts, so the reader is
deliberately tolerant (unknown keys kept as attributes, unknown kinds skipped and counted).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trntui.errors import LoadError
from trntui.loaders.files import InflateLimit, read_bytes
from trntui.loaders.neuron.system import SystemRows, add_system_rows, rows_from_records, to_int
from trntui.model.builder import ProfileBuilder

EXPORT_KEYS = (b'"trace_event"', b'"system_profile_metadata"', b'"Neuron_Runtime_API_Event"', b'"Framework_Event"',
               b'"device_profile_list"')
LIVE_KEYS = (b'"event_type"', b'"tracking_id"', b'"phase"')
"""The runtime live-fetch shape is recognised only when all of these appear (they are generic words)."""
NOT_EVENTS = frozenset({"mem_usage", "cpu_util", "warnings", "system_profile_metadata", "device_profile_list",
                        "metadata", "summary"})


def looks_like_export(path: Path, head: bytes | None = None) -> bool:
    """A JSON file that is an Explorer/runtime system export (not a chrome trace)."""
    if head is None:
        from trntui import fsio

        try:
            with fsio.open_regular(path) as fh:  # a FIFO named *.json is refused, never waited on
                head = fh.read(8192)
        except (OSError, LoadError):
            return False
    if b'"traceEvents"' in head:
        return False
    return path.name == "system_profile.json" or any(k in head for k in EXPORT_KEYS) or all(k in head for k in LIVE_KEYS)


def _events_and_meta(doc: Any) -> tuple[list[dict[str, Any]], dict[str, Any], int]:
    """(event dicts, metadata, skipped count) from any accepted shape."""
    meta: dict[str, Any] = {}
    skipped = 0
    if isinstance(doc, dict) and isinstance(doc.get("trace_event"), list):
        for k in ("system_profile_metadata", "device_profile_list", "warnings"):
            if k in doc:
                meta[k] = doc[k]
        evs = [e for e in doc["trace_event"] if isinstance(e, dict)]
        return evs, meta, len(doc["trace_event"]) - len(evs)
    if isinstance(doc, dict) and isinstance(doc.get("events"), list):
        return _pair_live(doc["events"])
    items: list[Any]
    if isinstance(doc, list):
        items = doc
    elif isinstance(doc, dict):
        items = [doc]
    else:
        return [], meta, 0
    out: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, dict):
            skipped += 1
            continue
        if "name" in item and ("timestamp" in item or "start_ts" in item or "timestamp_ns" in item):
            out.append(item)
            continue
        for kind, value in item.items():
            if kind in NOT_EVENTS:
                meta.setdefault(kind, value)
                continue
            values = value if isinstance(value, list) else [value]
            for v in values:
                if isinstance(v, dict) and "name" in v:
                    ev = dict(v)
                    ev.setdefault("kind", kind)
                    if "trace_event_source" not in ev and kind.lower().startswith("framework"):
                        ev["trace_event_source"] = "framework"
                    out.append(ev)
                else:
                    skipped += 1
    return out, meta, skipped


def _pair_live(records: list[Any]) -> tuple[list[dict[str, Any]], dict[str, Any], int]:
    """Runtime live-fetch records: start/stop pairs (by tracking_id) become intervals; lone halves are counted."""
    open_: dict[Any, dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    skipped = 0
    for r in records:
        if not isinstance(r, dict):
            skipped += 1
            continue
        phase = str(r.get("phase", "")).lower()
        key = (r.get("tracking_id"), r.get("event_type"), r.get("nc_idx"))
        if phase == "start":
            open_[key] = r
        elif phase == "stop" and key in open_:
            s = open_.pop(key)
            ev = {k: v for k, v in s.items() if k not in ("phase", "data", "event_type", "timestamp_ns")}
            ev.update(s.get("data") or {})
            ev.update(r.get("data") or {})
            ev["name"] = s.get("event_type")
            ev["start_ts"] = to_int(s.get("timestamp_ns"))
            ev["end_ts"] = to_int(r.get("timestamp_ns"))
            out.append(ev)
        else:
            skipped += 1
    skipped += len(open_)
    return out, {}, skipped


MAX_INT_DIGITS = 400
"""An integer literal longer than this is no id, time or count (int64 has 19 digits): it is read as a float
(±inf beyond 1e308), so the field is out of range and counted where it is read, never Python's "Exceeds the
limit (4300 digits) for integer string conversion"."""


def _bounded_int(text: str) -> int | float:
    return int(text) if len(text) <= MAX_INT_DIGITS else float(text)


def _parse(path: Path, data: bytes) -> Any:
    """The export's JSON document; one line naming the file when it is not one this reader can take."""
    try:
        return json.loads(data, parse_int=_bounded_int)
    except RecursionError:
        raise LoadError(path, "JSON nested too deep to read (an Explorer export nests a few levels: "
                              "expected an object of event lists)") from None
    except ValueError as exc:  # (UnicodeDecodeError included)
        raise LoadError(path, f"not valid JSON ({str(exc)[:200]})") from None


def read_json_rows(path: Path, budget: int | None = None) -> tuple[SystemRows, dict[str, Any]]:
    """`budget`: bytes the load may still use; the file is refused while it is read (its inflation is bounded)
    when parsing it could not fit (`memory.NEURON_JSON_FACTOR`)."""
    from trntui import memory

    limit = None if budget is None else max(int((budget - memory.STREAMED_FIXED_BYTES) / memory.NEURON_JSON_FACTOR), 0)
    try:
        data, notes = read_bytes(path, limit)
    except InflateLimit:
        raise memory.over_budget(path, int((limit or 0) * memory.NEURON_JSON_FACTOR) + memory.STREAMED_FIXED_BYTES,
                                 budget or 0, "this Neuron JSON export (more than "
                                 f"{memory.fmt(limit or 0)} of JSON)") from None
    doc = _parse(path, data)
    events, meta, skipped = _events_and_meta(doc)
    if not events:
        raise LoadError(path, "no system-trace events found (expected `trace_event`, kind objects or `events`)")
    if skipped:
        notes.append(f"{path.name}: {skipped} record(s) that are not events skipped")
    return rows_from_records(events, notes), meta


def load_json_export(
    path: str | Path,
    builder: ProfileBuilder,
    *,
    pid_filter: int | None = None,
    label: str | None = None,
    instance_hint: str = "",
    budget: int | None = None,
) -> dict[str, int]:
    """Add the JSON export's system-trace events to `builder`; `budget`: bytes the whole load may use
    (`LoadOptions.budget`; None: no limit), what the builder holds already included."""
    path = Path(path)
    label = label or path.name
    rows, meta = read_json_rows(path, None if budget is None else budget - builder.nbytes)
    builder.meta.sources.append(str(path))
    info: dict[str, Any] = {"export": str(path), "format": "json"}
    spm = meta.get("system_profile_metadata")
    if isinstance(spm, list) and spm:
        info["system_profile_metadata"] = spm[0]
    elif isinstance(spm, dict):
        info["system_profile_metadata"] = spm
    if "device_profile_list" in meta:
        info["device_profile_list"] = meta["device_profile_list"]
    for w in (meta.get("warnings") or [])[:20]:
        builder.meta.notes.append(f"{label}: Explorer warning: {w}")
    stats = add_system_rows(rows, builder, label=label, pid_filter=pid_filter, instance_hint=instance_hint)
    info["stats"] = stats
    builder.meta.trace_meta.setdefault("neuron", []).append(info)
    return stats
