"""Recover the complete events of a truncated chrome trace (a killed process leaves half a file)."""

from __future__ import annotations

import re
from typing import Any

import msgspec

_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_BASE = re.compile(rb'"baseTimeNanoseconds"\s*:\s*(\d+)')
_MAX_TRIES = 400


def recover_truncated(data: bytes) -> tuple[list[Any] | None, dict[str, Any], int]:
    """(events, top-level metadata, number of damaged events at the cut), or (None, {}, 0).

    Cuts the event array after the last complete event (trying the last few `}` positions) and decodes the
    prefix; `baseTimeNanoseconds` is kept when it was written before the events.
    """
    from trntui.loaders.kineto import Ev

    decoder = msgspec.json.Decoder(list[Ev])
    raw_decoder = msgspec.json.Decoder(list[msgspec.Raw])
    match = _EVENTS_KEY.search(data)
    if match is not None:
        body_start = match.end() - 1
    elif data.lstrip()[:1] == b"[":
        body_start = data.index(b"[")
    else:
        return None, {}, 0
    top: dict[str, Any] = {}
    base = _BASE.search(data, 0, body_start) or _BASE.search(data[-4096:])
    if base is not None:
        top["baseTimeNanoseconds"] = int(base.group(1))
    body = data[body_start:]
    pos = len(body)
    for _ in range(_MAX_TRIES):
        pos = body.rfind(b"}", 0, pos)
        if pos < 0:
            break
        candidate = body[: pos + 1] + b"]"
        try:
            raws = raw_decoder.decode(candidate)
        except msgspec.DecodeError:
            continue
        except msgspec.ValidationError:
            continue
        events = []
        bad = 0
        ev_decoder = msgspec.json.Decoder(Ev)
        try:
            events = decoder.decode(candidate)
        except (msgspec.ValidationError, msgspec.DecodeError):
            for raw in raws:
                try:
                    events.append(ev_decoder.decode(raw))
                except (msgspec.ValidationError, msgspec.DecodeError):
                    bad += 1
        return events, top, bad + 1
    if body.strip() in (b"[", b""):
        return [], top, 0
    return None, {}, 0
