"""The chrome-trace event schema as Kineto writes it, and the msgspec decoders built from it.

`Ev` keeps `args` raw (parsed per event on demand); `LinkArgs` decodes just the keys linking needs. The decoders
are built once here and shared by every decode path (chunked, parallel, tolerant)."""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import msgspec


NO_ARGS = msgspec.Raw(b"")
"""`Ev.args` of an event without args: empty (so a piece's args have lengths without a test per event)."""


class Ev(msgspec.Struct, omit_defaults=True, gc=False):  # no cycles possible: untracked is faster
    """One chrome trace event, as written by Kineto; `args` stays raw until someone asks."""

    ph: str = ""
    name: str = ""
    cat: str = ""
    ts: float = 0.0
    dur: float = 0.0
    pid: int | str = 0
    tid: int | str = 0
    id: int | str | None = None
    args: msgspec.Raw = NO_ARGS  # empty when absent (`Raw | None` fails to decode objects in msgspec 0.23); None only
    # from the tolerant path's coercion. This shared object is what `omit_defaults` leaves out when re-encoding.


class Trace(msgspec.Struct):
    """The object form's top level. Unknown keys are ignored (they are user metadata)."""

    traceEvents: list[Ev] | None = None
    baseTimeNanoseconds: int | None = None
    schemaVersion: Any = None
    deviceProperties: Any = None
    distributedInfo: Any = None
    displayTimeUnit: Any = None
    traceName: Any = None
    trace_id: Any = None
    record_shapes: Any = None
    with_stack: Any = None
    profile_memory: Any = None
    host_name: Any = None
    cupti_version: Any = None
    cuda_runtime_version: Any = None
    cuda_driver_version: Any = None


MAX_NS = 2**62
"""Timestamps (absolute ns) beyond this are corrupted values, not clocks (year 2116); such events are skipped."""


def clock_base(top_meta: dict[str, Any]) -> tuple[int, str | None]:
    """The trace's `baseTimeNanoseconds` added to every timestamp (0 when there is none), and a note when the
    value is not a usable offset (then 0)."""
    base = top_meta.get("baseTimeNanoseconds") or 0
    if not isinstance(base, int) or not 0 <= base < MAX_NS:
        return 0, "baseTimeNanoseconds is not a usable clock offset; ignored"
    return base, None


ABSENT = -(2**63) + 7
"""Default of absent link keys (an int, so whole columns convert with one `np.fromiter`)."""


class LinkArgs(msgspec.Struct, gc=False):
    """The args keys needed to link ops, runtime calls and device rows."""

    ext: int | float | str | None = msgspec.field(name="External id", default=ABSENT)
    ext_legacy: int | float | str | None = msgspec.field(name="external id", default=ABSENT)
    corr: int | float | str | None = msgspec.field(name="correlation", default=ABSENT)


class TraceTop(Trace):
    """The object form's top level with the event array kept raw (decoded in chunks)."""

    traceEvents: msgspec.Raw = None  # type: ignore[assignment]


trace_decoder = msgspec.json.Decoder(Trace)


top_raw_decoder = msgspec.json.Decoder(TraceTop)


list_decoder = msgspec.json.Decoder(list[Ev])


ev_decoder = msgspec.json.Decoder(Ev)


raw_list_decoder = msgspec.json.Decoder(list[msgspec.Raw])


raw_dict_decoder = msgspec.json.Decoder(dict[str, msgspec.Raw])


link_one_decoder = msgspec.json.Decoder(LinkArgs)


any_decoder = msgspec.json.Decoder()


class _Codes(dict):
    def __missing__(self, key: Any) -> int:
        return 0


PH = _Codes({"X": 1, "i": 2, "I": 3, "B": 4, "E": 5, "M": 6, "s": 7, "f": 8, "t": 9})
"""Phase → small int code (0 for any other phase), so phase tests are numpy comparisons."""

ph_of, ts_of, dur_of, pid_of, tid_of = (attrgetter("ph"), attrgetter("ts"), attrgetter("dur"), attrgetter("pid"),
                                        attrgetter("tid"))
cat_of, name_of, args_of, id_of = attrgetter("cat"), attrgetter("name"), attrgetter("args"), attrgetter("id")
"""`Ev` field getters, shared by the column builders (columns.py)."""

_CODES = bytes(PH[chr(b)] for b in range(128)) + bytes(128)
"""One-letter ASCII phase → its code (`PH`; 0 for any other), a `bytes.translate` table."""


def phase_codes(events: list[Ev]) -> bytes:
    """The events' phase codes (`PH`), one byte each: the one-letter phases joined into one string and translated
    (a third of the cost of a dict lookup per event); any other phase (empty, longer, not ASCII) takes the dict per
    event."""
    phases = list(map(ph_of, events))
    letters = "".join(phases)
    if len(letters) == len(events) and letters.isascii() and "" not in phases:  # (an empty phase next to a
        # two-letter one would make the lengths agree)
        return letters.encode("ascii").translate(_CODES)
    return bytes(map(PH.__getitem__, map(ph_of, events)))


def top_level_meta(top: Trace) -> dict[str, Any]:
    out = {}
    for field in top.__struct_fields__:
        if field == "traceEvents":
            continue
        value = getattr(top, field)
        if value is not None:
            out[field] = value
    return out
