"""Tolerant decode of the whole file, for input the chunked decoder refuses: mistyped fields are coerced,
invalid JSON is repaired (control characters, NaN/Infinity, bare N/A, invalid UTF-8), and a truncated or damaged
file gives what recover.py can salvage; every loss is counted in the profile's notes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from trntui.errors import LoadError
from trntui.loaders.scan import first_non_space
from trntui.loaders.kineto.schema import (
    Ev,
    any_decoder,
    ev_decoder,
    list_decoder,
    raw_dict_decoder,
    raw_list_decoder,
    top_level_meta,
    trace_decoder,
)
from trntui.model.profile import ProfileMeta


def decode_trace(data: bytes, path: Path, meta: ProfileMeta) -> tuple[list[Ev], dict[str, Any]]:
    """Events and top-level metadata from trace bytes, with a fallback chain for damaged files."""
    if data[:3] == b"\xef\xbb\xbf":  # UTF-8 byte order mark (editors on Windows)
        data = data[3:]
    at = first_non_space(data)  # (no stripped copy of the whole file; vectorised and cancellable)
    if at >= len(data):
        raise LoadError(path, "empty file")
    first = data[at : at + 1]
    if first not in (b"{", b"["):
        raise LoadError(path, "not a chrome trace (expected a JSON object or array)")
    problem = ""
    try:
        if first == b"[":
            return list_decoder.decode(data), {}
        top = trace_decoder.decode(data)
        if top.traceEvents is None:
            raise LoadError(path, "no 'traceEvents' key: not a chrome trace")
        return top.traceEvents, top_level_meta(top)
    except msgspec.ValidationError:
        try:
            return _decode_tolerant(data, path, meta)
        except (msgspec.DecodeError, RecursionError) as exc:
            problem = str(exc)
    except (msgspec.DecodeError, RecursionError) as exc:
        problem = str(exc)
    # invalid JSON: control characters, bare N/A, invalid UTF-8 (repairable), or truncated / damaged events
    if "truncated" not in problem:
        try:
            value, notes = repair_json(data)
            fixed = msgspec.json.encode(value)
        except (ValueError, TypeError, OverflowError, RecursionError):
            pass
        else:
            meta.notes.extend(f"repaired: {n}" for n in notes)
            return _decode_tolerant(fixed, path, meta)
    return _recover(data, path, meta)


def _recover(data: bytes, path: Path, meta: ProfileMeta) -> tuple[list[Ev], dict[str, Any]]:
    """Read what can be read from a truncated or damaged file, and say what was lost (recover.py)."""
    from trntui.loaders.kineto.recover import recover_events

    try:
        rec = recover_events(data)
    except RecursionError:
        rec = None
    if rec is None or not rec.raws:
        lost = f" ({rec.damaged + rec.cut} damaged or incomplete)" if rec is not None and rec.damaged + rec.cut else ""
        raise LoadError(path, f"not valid JSON and no complete events could be recovered{lost}") from None
    blob = b"[" + b",".join(rec.raws) + b"]"
    try:
        events = list_decoder.decode(blob)
    except (msgspec.ValidationError, msgspec.DecodeError):
        events, _ = _decode_tolerant(blob, path, meta)
    if rec.closed:
        meta.notes.append(f"file is damaged: read {len(events)} events; ignored what follows the event array")
    else:
        meta.notes.append(f"file is truncated: recovered {len(events)} complete events before the cut")
        if "baseTimeNanoseconds" not in rec.top:
            meta.notes.append("no baseTimeNanoseconds before the cut: timestamps kept as written")
    if rec.repaired:
        meta.notes.append(f"repaired: {rec.repaired} event(s) read by the lenient parser (control characters, N/A)")
    meta.skip("incomplete event at the cut (file truncated)", rec.cut)
    meta.skip("damaged events (invalid JSON)", rec.damaged)
    return events, rec.top


_JSON_KINDS = {"int": "a number", "float": "a number", "str": "a string", "object": "an object", "null": "null",
               "bool": "true/false", "array": "a list"}


def _got(exc: msgspec.ValidationError) -> str:
    """What msgspec found instead (`Expected `array`, got `int``): in JSON's words (`a number`)."""
    m = re.search(r"got `(\w+)`", str(exc))
    return _JSON_KINDS.get(m.group(1), m.group(1)) if m else "something else"


def _decode_tolerant(data: bytes, path: Path, meta: ProfileMeta) -> tuple[list[Ev], dict[str, Any]]:
    """Decode event by event, coercing what can be coerced and counting what must be skipped."""
    try:
        at = first_non_space(data)
        if data[at : at + 1] == b"[":
            raw_events = raw_list_decoder.decode(data)
            top_meta: dict[str, Any] = {}
        else:
            top = raw_dict_decoder.decode(data)
            raw = top.get("traceEvents")
            if raw is None:
                raise LoadError(path, "no 'traceEvents' key: not a chrome trace")
            try:
                raw_events = raw_list_decoder.decode(raw)
            except msgspec.ValidationError as exc:
                raise LoadError(path, f"traceEvents: expected a list of events, got {_got(exc)}") from None
            top_meta = {}
            for key in ("baseTimeNanoseconds", "deviceProperties", "distributedInfo", "schemaVersion"):
                if key in top:
                    try:
                        top_meta[key] = any_decoder.decode(top[key])
                    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                        pass
            base = top_meta.get("baseTimeNanoseconds")
            if base is not None and not isinstance(base, int):
                try:
                    top_meta["baseTimeNanoseconds"] = int(base)
                except (TypeError, ValueError, OverflowError):
                    meta.notes.append("baseTimeNanoseconds is not an integer; ignored")
                    del top_meta["baseTimeNanoseconds"]
    except msgspec.ValidationError as exc:
        raise LoadError(path, f"the top level: expected an object with traceEvents or a list of events, got "
                              f"{_got(exc)}") from None
    events: list[Ev] = []
    bad = 0
    for raw in raw_events:
        try:
            events.append(ev_decoder.decode(raw))
            continue
        except (msgspec.ValidationError, msgspec.DecodeError):
            pass
        ev = coerce_event(raw)
        if ev is None:
            bad += 1
        else:
            events.append(ev)
    if bad:
        meta.skip("events with unusable fields", bad)
    return events, top_meta


def coerce_event(raw: Any) -> Ev | None:
    """Best effort for an event with mistyped fields (numbers as strings, names as numbers)."""
    try:
        obj = any_decoder.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):  # e.g. 1e400: number out of range
        return None
    if not isinstance(obj, dict):
        return None
    try:
        ts = float(obj.get("ts", 0.0))
        dur = float(obj.get("dur", 0.0) or 0.0)
    except (TypeError, ValueError, OverflowError):
        return None
    if not (np.isfinite(ts) and np.isfinite(dur)):
        return None
    pid = obj.get("pid", 0)
    tid = obj.get("tid", 0)
    pid = pid if isinstance(pid, (int, str)) and not isinstance(pid, bool) else str(pid)
    tid = tid if isinstance(tid, (int, str)) and not isinstance(tid, bool) else str(tid)
    fid = obj.get("id")
    fid = fid if isinstance(fid, (int, str)) or fid is None else str(fid)
    args = obj.get("args")
    return Ev(
        ph=str(obj.get("ph", "")),
        name=str(obj.get("name", "")),
        cat=str(obj.get("cat", "")),
        ts=ts,
        dur=dur,
        pid=pid,
        tid=tid,
        id=fid,
        args=msgspec.Raw(msgspec.json.encode(args)) if isinstance(args, dict) else None,
    )


_NA_RE = re.compile(rb'(?<![\w"])N/A(?![\w"])')
_CONTROL_RE = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_NONFINITE_RE = re.compile(rb"[:,\[]\s*-?(?:NaN|Infinity)\b")


def repair_json(data: bytes) -> tuple[Any, list[str]]:
    """Parse JSON that strict decoders reject (old Kineto bugs), returning Python objects and repair notes.

    Fallback chain as in the TensorBoard plugin: lenient stdlib parse (control characters inside strings,
    NaN/Infinity), then quoting bare `N/A`, with invalid UTF-8 replaced. Raises ValueError if the text is
    still not JSON (truncated, unescaped quotes, garbage: see recover.py).
    """
    notes: list[str] = []
    text = data.decode("utf-8", "replace")
    if "\ufffd" in text and b"\xef\xbf\xbd" not in data:
        notes.append("invalid UTF-8 bytes replaced")
    if _CONTROL_RE.search(data):
        notes.append("control characters inside strings accepted")
    if _NONFINITE_RE.search(data):
        notes.append("NaN/Infinity literals accepted")
    try:
        value = json.loads(text, strict=False)
        return value, notes or ["non-standard JSON accepted by the lenient parser"]
    except (ValueError, RecursionError):
        pass
    fixed, count = _NA_RE.subn(b'"N/A"', text.encode("utf-8"))
    if count:
        try:
            value = json.loads(fixed.decode("utf-8"), strict=False)
            notes.append(f"{count} bare N/A value(s) quoted")
            return value, notes
        except (ValueError, RecursionError):
            pass
    raise ValueError("not valid JSON")
