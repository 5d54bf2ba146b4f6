"""The malformed-input corpus, generated at test time (nothing committed as blobs).

`build_corpus(root)` writes every case under `root` and returns `Case`s. Each case is a file or directory that
the loaders and the CLI must survive: the outcome is either a loaded profile that says what it skipped (the
"Skipped N input record(s)" footer or a "Note:" line of `trntui summary`) or a one-line error with exit 2.

`expect` narrows the allowed outcome where the right answer is clear:
  "error"  - nothing usable: must be the one-line error;
  "load"   - must load (with a skipped count or a note);
  "ok"     - a valid (if odd) input: must load; notes are optional;
  "either" - either outcome is acceptable (as long as it is one of the two).

Also used by the property tests and the fuzz entry point: `valid_trace()` is a small realistic Kineto trace.
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HOSTILE_NAMES = (
    "[bold red]x[/]",
    "[@click=quit]quit[/]",
    "[link=file:///etc/passwd]click[/link]",
    "osc52\x1b]52;c;SGVsbG8=\x07end",
    "clear\x1b[2Jscreen",
    "csi8bit\x9b31mred",
    "title\x1b]0;pwned\x1b\\t",
    "bell\x07back\x08space\rret",
    "nul\x00byte",
    "del\x7fchar",
)
"""Names that must render literally (markup) or visibly escaped (control characters), never act."""


@dataclass
class Case:
    name: str
    path: Path
    expect: str = "either"
    """"error", "load", "ok" or "either" (see the module docstring)."""


# ------------------------------------------------------------------------------------------------------
# a small valid trace
# ------------------------------------------------------------------------------------------------------
def fmt_ts(ns: int) -> str:
    """Kineto's fmtTs: µs with exactly 3 decimals."""
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"


def valid_events(n_steps: int = 3, names: tuple[str, ...] = ("aten::mm", "aten::add", "aten::relu")) -> list[dict]:
    """A realistic little CUDA trace: steps → ops → runtime calls → kernels, with ac2g flows and metadata."""
    ev: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 10, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        {"ph": "M", "name": "thread_name", "pid": 10, "tid": 10, "args": {"name": "main"}},
    ]
    t = 1_000_000
    ext = 1
    corr = 100
    for step in range(n_steps):
        s0 = t
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 10, "tid": 10,
                   "ts": s0, "dur": 0, "args": {"External id": ext}})
        ext += 1
        for k, name in enumerate(names):
            op_ts = t + 10_000
            ev.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 10, "tid": 10, "ts": op_ts, "dur": 50_000,
                       "args": {"External id": ext, "Input Dims": [[4, 4], [4, 4]], "Sequence number": k}})
            rt_ts = op_ts + 20_000
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10,
                       "ts": rt_ts, "dur": 5_000, "args": {"External id": ext, "correlation": corr}})
            k_ts = rt_ts + 30_000
            ev.append({"ph": "X", "cat": "kernel", "name": f"kernel_{name}", "pid": 0, "tid": 7, "ts": k_ts,
                       "dur": 7_000, "args": {"External id": ext, "correlation": corr, "stream": 7, "device": 0}})
            ev.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": 10, "tid": 10, "ts": rt_ts})
            ev.append({"ph": "f", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": 0, "tid": 7, "ts": k_ts,
                       "bp": "e"})
            ext += 1
            corr += 1
            t = op_ts + 60_000
        ev[3 + step * (1 + 5 * len(names))]["dur"] = t - s0
        t += 20_000
    # ns → µs text like Kineto writes it
    for e in ev:
        for key in ("ts", "dur"):
            if key in e:
                e[key] = _Num(fmt_ts(e[key]))
    return ev


class _Num(str):
    """A number kept as its exact JSON text (so `ts` keeps Kineto's 3 decimals)."""


def to_json(value: Any) -> bytes:
    def enc(v: Any) -> str:
        if isinstance(v, _Num):
            return str(v)
        if isinstance(v, dict):
            return "{" + ", ".join(f"{json.dumps(k)}: {enc(x)}" for k, x in v.items()) + "}"
        if isinstance(v, list):
            return "[" + ", ".join(enc(x) for x in v) + "]"
        return json.dumps(v)

    return enc(value).encode()


def valid_trace(**kw: Any) -> bytes:
    """A small valid trace in Kineto's object form (events first, metadata after, one event per line)."""
    events = valid_events(**kw)
    body = ",\n  ".join(to_json(e).decode() for e in events)
    return (
        '{\n  "schemaVersion": 1,\n  "deviceProperties": [{"id": 0, "name": "Fake GPU"}],\n'
        f'  "traceEvents": [\n  {body}\n  ],\n'
        '  "traceName": "/tmp/does-not-exist/trace.json",\n  "displayTimeUnit": "ms",\n'
        '  "baseTimeNanoseconds": 1735632360000000000\n}\n'
    ).encode()


def with_events(events: list[dict], **top: Any) -> bytes:
    doc = {"schemaVersion": 1, "traceEvents": events}
    doc.update(top)
    return to_json(doc)


def _x(name: str = "aten::mm", ts: Any = 1000.0, dur: Any = 10.0, **kw: Any) -> dict:
    e = {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}
    e.update(kw)
    return e


def hostile_trace() -> bytes:
    """Every hostile name as an op, a kernel, a thread/process name, an args value and a category."""
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "\x1b[2Jproc[b]x[/b]"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "\x1b]52;c;QQ==\x07thr"}},
    ]
    t = 1000.0
    for k, name in enumerate(HOSTILE_NAMES):
        events.append(_x(name, ts=t, dur=50.0, args={"External id": k + 1, "Input Dims": [[1]], "Hostile": name}))
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": t + 10, "dur": 5.0, "args": {"External id": k + 1, "correlation": 500 + k}})
        events.append({"ph": "X", "cat": "kernel", "name": "k_" + name, "pid": 0, "tid": 7, "ts": t + 20,
                       "dur": 8.0, "args": {"External id": k + 1, "correlation": 500 + k}})
        events.append(_x(name, ts=t + 30, dur=5.0, cat="user_annotation\x1b[31m"))
        t += 100.0
    events.append(_x("ProfilerStep#\x1b[2J1", ts=0.0, dur=t + 10))
    return with_events(events, traceName="/etc/passwd", baseTimeNanoseconds=0)


# ------------------------------------------------------------------------------------------------------
# the corpus
# ------------------------------------------------------------------------------------------------------
def _gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def truncation_offsets(size: int, count: int = 12) -> list[int]:
    """Cut points spread over the file, plus the edges (1 byte, just before the end)."""
    pts = {1, 2, size // 100, size - 2, size - 1}
    pts.update(int(size * k / count) for k in range(1, count))
    return sorted(p for p in pts if 0 < p < size)


def build_corpus(root: Path) -> list[Case]:
    """Write the whole corpus under `root` (a fresh temporary directory) and return its cases."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    cases: list[Case] = []

    def file(name: str, data: bytes | str, expect: str = "either") -> Path:
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data.encode() if isinstance(data, str) else data)
        cases.append(Case(name, p, expect))
        return p

    good = valid_trace()

    # --- empty and not-a-trace ----------------------------------------------------------------------
    file("empty.json", b"", "error")
    file("whitespace.json", b"  \n\t \n", "error")
    file("empty.json.gz", _gz(b""), "error")
    file("not_json.json", "hello world\n", "error")
    file("bom_object.json", b"\xef\xbb\xbf" + good, "ok")
    file("utf16.json", good.decode().encode("utf-16"), "either")
    file("top_number.json", "42", "error")
    file("top_string.json", '"traceEvents"', "error")
    file("top_null.json", "null", "error")
    file("top_true.json", "true", "error")
    file("top_empty_object.json", "{}", "error")
    file("top_empty_list.json", "[]", "error")
    file("events_empty.json", '{"traceEvents": []}', "error")
    file("events_number.json", '{"traceEvents": 5}', "error")
    file("events_string.json", '{"traceEvents": "x"}', "error")
    file("events_object.json", '{"traceEvents": {"ph": "X"}}', "error")
    file("events_null.json", '{"traceEvents": null}', "error")
    file("events_not_objects.json", '[1, "a", null, [], true, 2.5]', "either")
    file("deep_nesting.json", "[" * 100_000 + "]" * 100_000, "either")
    file("deep_nesting_args.json", '[{"ph":"X","ts":1,"dur":1,"args":' + "[" * 50_000 + "]" * 50_000 + "}]", "either")
    file("deep_nesting_truncated.json", '{"traceEvents": [' + "[" * 50_000, "either")
    file("trailing_garbage.json", good + b"\x00garbage{[", "load")
    file("two_documents.json", good + good, "load")

    # --- missing, renamed and mistyped fields --------------------------------------------------------
    base_ev = [_x("ok_op", ts=1000.0, dur=10.0)]
    file("missing_fields.json", with_events(base_ev + [
        {"cat": "cpu_op", "name": "no_ph", "ts": 1, "dur": 1},
        {"ph": "X", "name": "no_ts_no_dur"},
        {"ph": "X", "ts": 5, "dur": 1},
        {"ph": "X", "name": "no_pid", "ts": 5, "dur": 1},
        {},
    ]), "load")
    file("renamed_fields.json", with_events(base_ev + [
        {"phase": "X", "timestamp": 1, "duration": 2, "nme": "x"},
        {"Ph": "X", "TS": 1, "Dur": 2},
    ]), "load")
    file("strings_for_numbers.json", with_events(base_ev + [
        _x("ts_str", ts="1000.5", dur="3"),
        _x("ts_word", ts="soon", dur=1),
        _x("dur_list", dur=[1]),
        _x("dur_obj", dur={"v": 1}),
        _x("pid_float", pid=1.5, tid=2.0),
        _x("pid_bool", pid=True, tid=False),
        _x("pid_list", pid=[1], tid={"a": 1}),
        _x("pid_huge", pid=2**80, tid=-(2**70)),
        {"ph": "X", "cat": 5, "name": 123, "pid": 1, "tid": 1, "ts": 1, "dur": 1},
        {"ph": "X", "cat": None, "name": None, "pid": None, "tid": None, "ts": 1, "dur": 1},
        {"ph": "X", "cat": ["a"], "name": {"n": 1}, "pid": 1, "tid": 1, "ts": 1, "dur": 1},
        {"ph": 1, "ts": 1},
        _x("args_number", args=5),
        _x("args_list", args=[1, 2]),
        _x("args_string", args="x"),
        _x("ext_str", args={"External id": "abc", "correlation": "1e5"}),
        _x("ext_float", args={"External id": 1.5, "correlation": 1e300}),
        _x("ext_huge", args={"External id": 2**90, "correlation": -(2**90), "Comms Id": 2**100}),
        _x("ext_list", args={"External id": [1], "correlation": {"a": 1}}),
        _x("ext_bool", args={"External id": True, "correlation": None}),
        {"ph": "s", "id": [1], "pid": 1, "tid": 1, "ts": 1000.0, "cat": "ac2g"},
        {"ph": "f", "id": {"x": 1}, "pid": 1, "tid": 1, "ts": 1000.0, "cat": "ac2g"},
        {"ph": "s", "id": 2**90, "pid": 1, "tid": 1, "ts": 1000.0, "cat": ["x"]},
    ]), "load")
    nan = "NaN"
    file("nan_inf_literals.json", (
        '{"traceEvents": [' + to_json(base_ev[0]).decode() + ","
        f'{{"ph": "X", "name": "nan_dur", "pid": 1, "tid": 1, "ts": 1, "dur": {nan}}},'
        '{"ph": "X", "name": "inf_ts", "pid": 1, "tid": 1, "ts": Infinity, "dur": 1},'
        '{"ph": "X", "name": "ninf", "pid": 1, "tid": 1, "ts": -Infinity, "dur": -Infinity}]}'
    ), "load")
    file("bad_durations.json", with_events(base_ev + [
        _x("neg_dur", dur=-5.0),
        _x("huge_dur", dur=1e300),
        _x("huge_ts", ts=1e300),
        _x("overflow_number", ts=1e400, dur=1e400),
        _x("neg_ts", ts=-1e18),
        _x("big_int_ts", ts=10**30, dur=10**25),
        _x("record_window_end", ts=1e15, dur=0.0),
        _x("zero_dur", dur=0),
        _x("tiny", dur=1e-9),
    ]), "load")
    file("mixed_ts_regimes.json", with_events([
        _x("epoch_int", ts=1694039968955744, dur=10),
        _x("epoch_float", ts=1712195495519689.0, dur=10.5),
        _x("relative", ts=4203669604595.407, dur=1.5),
        _x("small", ts=12.5, dur=1),
    ], baseTimeNanoseconds=1735632360000000000), "load")
    file("base_time_weird.json", with_events([_x("a")], baseTimeNanoseconds="soon"), "either")
    file("base_time_huge.json", with_events([_x("a")], baseTimeNanoseconds=10**40), "either")
    file("base_time_negative.json", with_events([_x("a")], baseTimeNanoseconds=-(2**63)), "either")
    file("base_time_float.json", with_events([_x("a")], baseTimeNanoseconds=1.7e18), "either")
    file("base_time_int64_max.json", with_events([_x("a", ts=1e12)], baseTimeNanoseconds=2**63 - 1), "either")

    # --- links: duplicates, half flows, cycles ---------------------------------------------------------
    dup = [
        _x("op", ts=100.0, dur=50.0, args={"External id": 1}),
        _x("op_same_ext", ts=100.0, dur=50.0, args={"External id": 1}),
        _x("op_same_ext2", ts=160.0, dur=20.0, args={"External id": 1}),
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 110.0, "dur": 5.0,
         "args": {"External id": 1, "correlation": 7}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 120.0, "dur": 5.0,
         "args": {"External id": 1, "correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 130.0, "dur": 5.0,
         "args": {"External id": 1, "correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 130.0, "dur": 5.0,
         "args": {"External id": 1, "correlation": 7}},
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 7, "pid": 1, "tid": 1, "ts": 110.0},
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 7, "pid": 1, "tid": 1, "ts": 120.0},
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 7, "pid": 0, "tid": 7, "ts": 130.0, "bp": "e"},
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 7, "pid": 0, "tid": 7, "ts": 130.0, "bp": "e"},
    ]
    file("duplicate_ids.json", with_events(dup), "either")
    half = [_x("op", ts=100.0, dur=50.0, args={"External id": 1})] + [
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": k, "pid": 1, "tid": 1, "ts": 110.0} for k in range(5)
    ] + [
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 100 + k, "pid": 0, "tid": 7, "ts": 130.0, "bp": "e"}
        for k in range(5)
    ] + [
        {"ph": "f", "cat": "fwdbwd", "name": "fwdbwd", "id": "str-id", "pid": 1, "tid": 1, "ts": 110.0},
        {"ph": "s", "cat": "", "name": "", "pid": 1, "tid": 1, "ts": 99999.0},
        {"ph": "t", "cat": "ac2g", "id": 3, "pid": 1, "tid": 1, "ts": 120.0},
    ]
    file("flows_without_ends.json", with_events(half), "load")
    cyc = [
        _x("a", ts=100.0, dur=50.0, args={"External id": 1, "Python id": 1, "Python parent id": 2}),
        _x("b", ts=100.0, dur=50.0, args={"External id": 2, "Python id": 2, "Python parent id": 1}),
        {"ph": "X", "cat": "python_function", "name": "f1", "pid": 1, "tid": 1, "ts": 90.0, "dur": 80.0,
         "args": {"Python id": 3, "Python parent id": 4}},
        {"ph": "X", "cat": "python_function", "name": "f2", "pid": 1, "tid": 1, "ts": 91.0, "dur": 70.0,
         "args": {"Python id": 4, "Python parent id": 3}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 110.0, "dur": 5.0,
         "args": {"External id": 2, "correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 130.0, "dur": 5.0,
         "args": {"External id": 1, "correlation": 2}},
        {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 140.0, "dur": 5.0,
         "args": {"External id": 2, "correlation": 1}},
        # flows forming a cycle: a → b → a
        {"ph": "s", "cat": "fwdbwd", "name": "fwdbwd", "id": 9, "pid": 1, "tid": 1, "ts": 100.0},
        {"ph": "f", "cat": "fwdbwd", "name": "fwdbwd", "id": 9, "pid": 1, "tid": 1, "ts": 100.0, "bp": "e"},
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 1, "pid": 0, "tid": 7, "ts": 130.0},
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 1, "pid": 1, "tid": 1, "ts": 110.0, "bp": "e"},
    ]
    file("link_cycles.json", with_events(cyc), "either")
    be = [
        {"ph": "E", "name": "end_first", "pid": 1, "tid": 1, "ts": 5},
        {"ph": "B", "name": "never_ends", "pid": 1, "tid": 1, "ts": 10},
        {"ph": "B", "name": "ok", "pid": 1, "tid": 1, "ts": 20},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 30},
        {"ph": "E", "pid": 2, "tid": 2, "ts": 30},
        {"ph": "C", "name": "counter", "pid": 1, "ts": 1, "args": {"v": 1}},
        {"ph": "b", "name": "async", "pid": 1, "id": 1, "ts": 1},
        {"ph": "", "name": "empty_ph"},
        {"ph": "\x1b[2J", "name": "escape_ph"},
    ]
    file("begin_end_unmatched.json", with_events(be), "load")
    file("partial_overlaps.json", with_events([
        _x("outer", ts=0.0, dur=100.0),
        _x("a", ts=10.0, dur=50.0),
        _x("b", ts=20.0, dur=60.0),
        _x("c", ts=30.0, dur=75.0),
        _x("same", ts=40.0, dur=5.0),
        _x("same", ts=40.0, dur=5.0),
    ]), "either")

    # --- invalid JSON from old traces ---------------------------------------------------------------
    ctrl = good.replace(b'"aten::mm"', b'"aten::\x01mm\x1f"', 1).replace(b'"main"', b'"ma\tin\x0b"')
    file("control_chars.json", ctrl, "load")
    na = good.replace(b'"Sequence number": 0', b'"Sequence number": N/A', 2)
    file("bare_na.json", na, "load")
    file("bare_na_and_control.json", na.replace(b'"aten::mm"', b'"aten::\x02mm"', 1), "load")
    file("non_utf8.json", good.replace(b'"aten::add"', b'"aten::\xff\xfeadd\xc3"', 1), "load")
    file("non_utf8_gz.json.gz", _gz(good.replace(b'"aten::relu"', b'"aten::\x80relu"')), "load")
    file("unescaped_quote.json", good.replace(b'"aten::add"', b'"aten::"add"', 1), "load")
    file("single_quotes.json", good.replace(b'"aten::add"', b"'aten::add'", 1), "load")
    file("comments.json", good.replace(b'"traceEvents"', b'// c\n"traceEvents"', 1), "either")

    # --- gzip damage -----------------------------------------------------------------------------
    gz = _gz(good)
    file("gzip_magic_only.json.gz", b"\x1f\x8b", "error")
    file("gzip_header_only.json.gz", gz[:10], "error")
    file("gzip_garbage_body.json.gz", gz[:10] + os.urandom(0) + bytes(range(256)) * 4, "error")
    file("gzip_truncated_half.json.gz", gz[: len(gz) // 2], "load")
    file("gzip_truncated_tail.json.gz", gz[:-4], "load")
    flipped = bytearray(gz)
    flipped[len(flipped) // 2] ^= 0xFF
    file("gzip_flipped_byte.json.gz", bytes(flipped), "either")
    file("gzip_bad_crc.json.gz", gz[:-8] + b"\x00\x00\x00\x00" + gz[-4:], "load")
    file("gzip_twice.json.gz", _gz(gz), "error")
    file("gzip_plus_garbage.json.gz", gz + b"garbage", "load")
    file("gzip_name_plain.json.gz", good, "ok")

    # --- truncated at many offsets (a killed process leaves half a file) ----------------------------
    for cut in truncation_offsets(len(good)):
        file(f"truncated/plain_{cut:06d}.json", good[:cut], "either")
    bare = b"[\n" + b",\n".join(to_json(e) for e in valid_events()) + b"\n]\n"
    for cut in truncation_offsets(len(bare), 6):
        file(f"truncated/bare_{cut:06d}.json", bare[:cut], "either")
    for cut in truncation_offsets(len(gz), 6):
        file(f"truncated/gz_{cut:06d}.json.gz", gz[:cut], "either")

    # --- hostile names -------------------------------------------------------------------------------
    file("hostile_names.json", hostile_trace(), "ok")
    file("hostile_\x1b[2Jfile\x07name.json", hostile_trace(), "ok")

    # --- directories ----------------------------------------------------------------------------------
    d = root / "dir_empty"
    d.mkdir()
    cases.append(Case("dir_empty", d, "error"))
    d = root / "dir_unreadable"
    d.mkdir()
    (d / "README.txt").write_text("nothing here")
    (d / "data.bin").write_bytes(os.urandom(64))
    (d / "notes.json").write_text('{"hello": 1}')
    cases.append(Case("dir_unreadable", d, "error"))
    d = root / "dir_broken_traces"
    d.mkdir()
    (d / "trace.json").write_bytes(b"")
    (d / "rank1.pt.trace.json").write_bytes(b"garbage")
    cases.append(Case("dir_broken_traces", d, "error"))
    d = root / "dir_one_good_one_broken"
    d.mkdir()
    (d / "a.pt.trace.json").write_bytes(good)
    (d / "b.pt.trace.json").write_bytes(b"{garbage")
    cases.append(Case("dir_one_good_one_broken", d, "either"))
    d = root / "dir_symlink_loop"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "trace.json").write_bytes(good)
    try:
        (d / "sub" / "loop").symlink_to(d, target_is_directory=True)
        (d / "dangling.pt.trace.json").symlink_to(d / "missing-target")
    except OSError:
        pass
    cases.append(Case("dir_symlink_loop", d, "either"))
    d = root / "dir_fifo"
    d.mkdir()
    (d / "ok.pt.trace.json").write_bytes(good)
    if hasattr(os, "mkfifo"):
        os.mkfifo(d / "trace.json")
        os.mkfifo(root / "fifo.json")
        cases.append(Case("fifo.json", root / "fifo.json", "error"))
    cases.append(Case("dir_fifo", d, "either"))
    cases.append(Case("missing_file", root / "no" / "such" / "trace.json", "error"))

    # --- issue 19: bombs, lying trailers, whitespace, out-of-range Neuron values (small on disk) ------------
    from . import bombs

    cases.append(Case("bomb_gzip_nul_1.5GiB.json.gz", bombs.nul_bomb(root / "bomb_gzip_nul_1.5GiB.json.gz"), "error"))
    ws = bombs.whitespace_bomb(root / "bomb_whitespace_200MiB.json.gz", size=200 << 20, gz=True, where="inner")
    cases.append(Case("bomb_whitespace_200MiB.json.gz", ws, "error"))  # inflates 1000x: refused as a bomb
    liar = root / "gzip_trailer_says_100_bytes.json.gz"
    liar.write_bytes(_gz(good)[:-4] + (100).to_bytes(4, "little"))
    cases.append(Case(liar.name, liar, "ok"))  # the trailer is not the truth: the data is
    file("whitespace_around.json", b" \n" * 40_000 + good[:-3] + b" \t\r\n" * 40_000 + good[-3:] + b"\n" * 80_000, "ok")
    d = root / "dir_neuron_json_out_of_range"
    d.mkdir()
    bombs.neuron_json_out_of_range(d / "system_profile.json")
    cases.append(Case(d.name, d, "load"))
    d = bombs.parquet_out_of_range(root / "dir_neuron_parquet_out_of_range")
    cases.append(Case(d.name, d, "load"))
    return cases
