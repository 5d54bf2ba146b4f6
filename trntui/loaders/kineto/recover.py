"""Recover the events of a damaged chrome trace: truncated (a killed process leaves half a file), with a
damaged event in the middle (unescaped quote, stray bytes), or with garbage after the end.

Linear time: the event array is cut at candidate boundaries between objects (`}` followed by `,{` or `]`,
found with one regex pass) and decoded in chunks with msgspec; a chunk that fails is retried smaller, down to
a single event, which is then re-tried with the lenient stdlib parser (control characters, bare `N/A`) and
otherwise counted as damaged. Every chunk is decoded a bounded number of times, so the cost stays
proportional to the file size (no re-parse of the whole prefix per attempt).
"""

from __future__ import annotations

import json
import re
from array import array
from dataclasses import dataclass, field
from typing import Any

import msgspec

from trntui.loaders.scan import first_non_space

_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_BASE = re.compile(rb'"baseTimeNanoseconds"\s*:\s*(\d{1,19})\b')
# end of an object followed by the next element of the same array, or by the array's end
_BOUNDARY = re.compile(rb"\}\s*(?:,\s*(?=\{)|(\]))")
_NA_RE = re.compile(rb'(?<![\w"])N/A(?![\w"])')

_raw_list = msgspec.json.Decoder(list[msgspec.Raw])

FIRST_CHUNK = 256
"""Boundaries per chunk at first; doubled after every success, up to MAX_CHUNK."""
MAX_CHUNK = 1 << 16
MAX_EXTEND = 64
"""How many following boundaries an incomplete-looking element may be extended over (`},{` nested in its
args or inside its strings); only elements that are a valid JSON prefix are extended, damaged ones are not."""


@dataclass
class Recovered:
    """What could be read from a damaged trace."""

    raws: list[msgspec.Raw] = field(default_factory=list)
    """The complete events, each its raw JSON (in file order)."""
    top: dict[str, Any] = field(default_factory=dict)
    """Top-level keys that could be read (`baseTimeNanoseconds`)."""
    damaged: int = 0
    """Elements in the middle that were not JSON (skipped)."""
    cut: int = 0
    """Incomplete elements at the end (0 or 1 when the file was cut inside an event)."""
    closed: bool = False
    """The event array's closing `]` was found (damage, if any, is after the events)."""
    repaired: int = 0
    """Elements read only by the lenient parser (control characters, bare N/A)."""
    notes: list[str] = field(default_factory=list)


def _decode_list(chunk: bytes) -> list[msgspec.Raw] | None:
    try:
        return _raw_list.decode(b"[" + chunk + b"]")
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


def _unbalanced(chunk: bytes) -> bool:
    """True when `chunk` is a valid start of JSON that ends too early (its end is inside a nested value),
    False when it is malformed (then extending it to later boundaries cannot help)."""
    try:
        _raw_list.decode(b"[" + chunk)
    except msgspec.DecodeError as exc:
        return "truncated" in str(exc)
    except (msgspec.ValidationError, RecursionError):
        return False
    return False


def _lenient_one(chunk: bytes) -> msgspec.Raw | None:
    """One element that msgspec rejects, read by the stdlib parser (control characters, bare N/A)."""
    text = chunk.decode("utf-8", "replace")
    for attempt in (text, _NA_RE.sub(b'"N/A"', text.encode("utf-8")).decode("utf-8")):
        try:
            value = json.loads(attempt, strict=False)
        except (ValueError, RecursionError):
            continue
        if not isinstance(value, dict):
            return None
        try:
            return msgspec.Raw(msgspec.json.encode(value))
        except (TypeError, ValueError, OverflowError, RecursionError):
            return None
    return None


def find_events_array(data: bytes) -> int | None:
    """Offset just after the `[` that opens the event array, or None when there is none."""
    match = _EVENTS_KEY.search(data)
    if match is not None:
        return match.end()
    at = first_non_space(data)
    if data[at : at + 1] == b"[":
        return at + 1
    return None


def recover_events(data: bytes) -> Recovered | None:
    """The complete events of a damaged trace, or None when there is no event array to read."""
    body_start = find_events_array(data)
    if body_start is None:
        return None
    rec = Recovered()
    head = data[:body_start]
    base = _BASE.search(head)
    if base is not None:
        rec.top["baseTimeNanoseconds"] = int(base.group(1))

    # candidate boundaries: (end of object, start of the next element or -1 when the array closes there)
    ends = array("q")  # 8 bytes per boundary (a 400 MB trace has millions)
    nexts = array("q")
    for m in _BOUNDARY.finditer(data, body_start):
        ends.append(m.start() + 1)
        nexts.append(-1 if m.group(1) else m.end())

    pos = body_start
    # skip whitespace; an immediately closed array holds no events
    while pos < len(data) and data[pos : pos + 1].isspace():
        pos += 1
    if data[pos : pos + 1] == b"]":
        rec.closed = True
        _tail_meta(data, pos + 1, rec)
        return rec
    i = 0
    n = len(ends)
    step = FIRST_CHUNK
    while i < n:
        if ends[i] <= pos:  # a boundary inside an element we already consumed
            i += 1
            continue
        j = min(i + step, n) - 1
        got = _decode_list(data[pos : ends[j]])
        if got is not None:
            rec.raws.extend(got)
            step = min(step * 2, MAX_CHUNK)
            if nexts[j] < 0:
                rec.closed = True
                _tail_meta(data, ends[j], rec)
                return rec
            pos, i = nexts[j], j + 1
            continue
        if step > 1:
            step = max(1, step // 4)
            continue
        # a single element fails: damaged, or its end is not at this boundary (a `},{` nested in args)
        chunk = data[pos : ends[i]]
        one = _lenient_one(chunk)
        if one is not None:
            rec.raws.append(one)
            rec.repaired += 1
            k = i
        elif _unbalanced(chunk):  # its end is further on: extend over the following boundaries
            k = -1
            span = 1
            while span <= MAX_EXTEND and i + span < n:
                got = _decode_list(data[pos : ends[i + span]])
                if got is not None:
                    rec.raws.extend(got)
                    k = i + span
                    break
                span += 1
            if k < 0:
                if i + span >= n:  # ran out of boundaries: this is the element cut at the end
                    break
                rec.damaged += 1
                k = i
        else:
            rec.damaged += 1
            k = i
        if nexts[k] < 0:
            rec.closed = True
            _tail_meta(data, ends[k], rec)
            return rec
        pos, i = nexts[k], k + 1
    # after the last boundary: a complete last element (cut right after it) or the cut one
    tail = data[pos:]
    if tail.strip():
        got = _decode_list(tail.rstrip().rstrip(b",]"))
        if got is not None and tail.strip()[:1] == b"{":
            rec.raws.extend(got)
        else:
            one = _lenient_one(tail) if tail.strip()[:1] == b"{" else None
            if one is not None:
                rec.raws.append(one)
                rec.repaired += 1
            else:
                rec.cut = 1 if b"{" in tail else 0
    return rec


def _tail_meta(data: bytes, after: int, rec: Recovered) -> None:
    """Top-level keys written after the events (Kineto writes `baseTimeNanoseconds` last)."""
    base = _BASE.search(data, after)
    if base is not None and "baseTimeNanoseconds" not in rec.top:
        rec.top["baseTimeNanoseconds"] = int(base.group(1))

