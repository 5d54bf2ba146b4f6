"""Recovery of truncated and damaged traces (trntui/loaders/kineto/recover.py) and of damaged gzip streams.

The real-trace test cuts `cuda_ns_resolution_68k.json.gz` (HTA test data, MIT) at 10/50/90% of its
decompressed bytes, counts with a reference parse (stdlib `raw_decode`, event by event) the events that lie
completely before the cut, and requires the loader to recover at least 95% of them.
"""

from __future__ import annotations

import bisect
import gzip
import json
import re
import zlib
from pathlib import Path

import pytest

from trntui.loaders.kineto import recover as R
from trntui.loaders.files import _gunzip_partial, read_bytes
from trntui.loaders.kineto import load_kineto

from tests.malformed.cli import CASE_TIMEOUT_S, time_limit

BIG = "cuda_ns_resolution_68k.json.gz"


# ------------------------------------------------------------------------------------------------------
# the real trace, truncated
# ------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def big_trace(corpus_dir: Path) -> tuple[bytes, list[int], list[str]]:
    """(decompressed bytes, end offset of each event, phase of each event) from a reference parse."""
    data = gzip.decompress((corpus_dir / BIG).read_bytes())
    text = data.decode("latin-1")  # 1 char per byte: offsets are byte offsets
    m = re.search(r'"traceEvents"\s*:\s*\[', text)
    assert m is not None
    dec = json.JSONDecoder()
    sep = re.compile(r"[\s,]*")
    ends: list[int] = []
    phases: list[str] = []
    i = m.end()
    while True:
        i = sep.match(text, i).end()
        if text[i] == "]":
            break
        obj, i = dec.raw_decode(text, i)
        ends.append(i)
        phases.append(obj.get("ph", ""))
    return data, ends, phases


@pytest.mark.parametrize("frac", [0.1, 0.5, 0.9])
def test_truncated_real_trace_recovers_95_percent(frac: float, big_trace, tmp_path: Path, capsys) -> None:
    data, ends, phases = big_trace
    cut = int(len(data) * frac)
    complete = bisect.bisect_right(ends, cut)  # events that lie completely before the cut
    timeline = sum(1 for p in phases[:complete] if p in ("X", "i", "I"))
    path = tmp_path / f"cut_{int(frac * 100)}.json"
    path.write_bytes(data[:cut])

    with time_limit(CASE_TIMEOUT_S):  # a hang bound (a recovery that rescans per event never ends), not a speed claim
        rec = R.recover_events(data[:cut])
        assert rec is not None and not rec.closed
        assert len(rec.raws) >= 0.95 * complete, (len(rec.raws), complete)
        assert rec.cut == 1 and rec.damaged == 0

        prof = load_kineto(path)
    assert len(prof) >= 0.95 * timeline, (len(prof), timeline)
    assert prof.meta.skipped.get("incomplete event at the cut (file truncated)") == 1
    assert any(n.startswith("file is truncated: recovered") for n in prof.meta.notes)

    from trntui.cli import main

    assert main(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Skipped 1 input record(s): 1 incomplete event at the cut (file truncated)" in out


def test_truncated_real_trace_gzip(big_trace, corpus_dir: Path, tmp_path: Path) -> None:
    raw = (corpus_dir / BIG).read_bytes()
    path = tmp_path / "half.json.gz"
    path.write_bytes(raw[: len(raw) // 2])
    data, ends, _ = big_trace
    got, notes = read_bytes(path)
    assert notes and data.startswith(got) and len(got) > 0.4 * len(data)
    prof = load_kineto(path)
    complete = bisect.bisect_right(ends, len(got))
    assert prof.meta.skipped.get("incomplete event at the cut (file truncated)") == 1
    assert len(prof) > 0.5 * sum(1 for e in ends[:complete])  # most complete events are timeline events


def test_recovery_is_linear_not_quadratic(big_trace, monkeypatch) -> None:
    """Bytes handed to the decoder stay a small multiple of the input, even with damage every few events."""
    data, ends, _ = big_trace
    seen = [0]
    real = R._decode_list

    def counting(chunk: bytes):
        seen[0] += len(chunk)
        return real(chunk)

    monkeypatch.setattr(R, "_decode_list", counting)
    cut = data[: int(len(data) * 0.7)]
    rec = R.recover_events(cut)
    assert rec is not None and rec.cut == 1
    assert seen[0] < 3 * len(cut), seen[0] / len(cut)

    damaged = cut.replace(b'"name": "aten::', b'"name": "aten"::')  # an unescaped quote in ~25% of events
    n_damaged = cut.count(b'"name": "aten::')
    seen[0] = 0
    rec = R.recover_events(damaged)
    assert rec.damaged == n_damaged
    assert seen[0] < 40 * len(damaged), seen[0] / len(damaged)


# ------------------------------------------------------------------------------------------------------
# recover_events on small inputs
# ------------------------------------------------------------------------------------------------------
def _events(n: int, **extra) -> list[dict]:
    return [{"ph": "X", "name": f"op{k}", "pid": 1, "tid": 1, "ts": k, "dur": 1, **extra} for k in range(n)]


def _obj(events: list[dict], base: int | None = 5, base_first: bool = False) -> bytes:
    body = ",\n".join(json.dumps(e) for e in events)
    head = f'"baseTimeNanoseconds": {base}, ' if base is not None and base_first else ""
    tail = f', "baseTimeNanoseconds": {base}' if base is not None and not base_first else ""
    return f'{{{head}"traceEvents": [\n{body}\n]{tail}}}'.encode()


def test_recover_every_cut_offset_of_a_small_trace() -> None:
    """Cut at every byte: never raises, never invents events, and keeps every event completed before the cut."""
    events = _events(6, args={"Input Dims": [[1, 2]], "nested": [{"a": 1}, {"b": "},{"}]})
    data = _obj(events)
    for cut in range(len(data) + 1):
        rec = R.recover_events(data[:cut])
        if rec is None:
            assert b"[" not in data[:cut]
            continue
        got = [json.loads(bytes(r)) for r in rec.raws]
        assert got == events[: len(got)]
        ends = [m.end() for m in re.finditer(rb'"\}\]\}\}', data[:cut])]
        assert len(got) >= len(ends)
        assert rec.damaged == 0


def test_recover_skips_a_damaged_event_and_reads_on() -> None:
    events = _events(50)
    data = _obj(events).replace(b'"op10"', b'"op"10"').replace(b'"op30"', b'"op30\x00\\q"')
    rec = R.recover_events(data[:-20])
    names = [json.loads(bytes(r))["name"] for r in rec.raws]
    assert rec.damaged == 2
    assert "op9" in names and "op11" in names and "op29" in names and "op31" in names
    assert len(names) == 48


def test_recover_repairs_control_characters_and_na() -> None:
    data = _obj(_events(20)).replace(b'"op3"', b'"o\x01p3"').replace(b'"dur": 1}', b'"dur": 1, "x": N/A}', 1)
    rec = R.recover_events(data[: len(data) - 30])
    assert rec.damaged == 0 and rec.repaired == 2
    assert json.loads(bytes(rec.raws[0]))["x"] == "N/A"


def test_recover_closed_array_with_garbage_after() -> None:
    data = _obj(_events(10), base=123) + b"\x00\xffgarbage"
    rec = R.recover_events(data)
    assert rec.closed and len(rec.raws) == 10 and rec.cut == 0
    assert rec.top["baseTimeNanoseconds"] == 123


def test_recover_base_time_before_the_events_survives_the_cut() -> None:
    data = _obj(_events(10), base=1735632360000000000, base_first=True)
    rec = R.recover_events(data[: len(data) // 2])
    assert rec.top == {"baseTimeNanoseconds": 1735632360000000000}


def test_recover_bare_list_and_edge_cases() -> None:
    data = json.dumps(_events(10)).encode()
    rec = R.recover_events(data[:-30])
    assert 0 < len(rec.raws) < 10 and rec.cut == 1
    assert R.recover_events(b"no array here") is None
    assert R.recover_events(b'{"traceEvents": [').raws == []
    assert R.recover_events(b'{"traceEvents": []').closed
    assert R.recover_events(b'[1, 2, 3').raws == []
    # a complete last event right at the cut
    rec = R.recover_events(data[:-1])
    assert len(rec.raws) == 10 and rec.cut == 0
    rec = R.recover_events(b"[" * 100_000)
    assert rec is not None and rec.raws == []


def test_recover_huge_single_event() -> None:
    events = _events(3, args={"big": "x" * 3_000_000})
    data = _obj(events)
    rec = R.recover_events(data[: len(data) - 50])
    assert len(rec.raws) == 3 or (len(rec.raws) == 2 and rec.cut == 1)


# ------------------------------------------------------------------------------------------------------
# damaged gzip
# ------------------------------------------------------------------------------------------------------
def test_gunzip_partial_keeps_the_prefix() -> None:
    payload = b"".join(b"line %d\n" % k for k in range(200_000))
    gz = gzip.compress(payload, mtime=0)
    got, clean = _gunzip_partial(gz[: len(gz) // 2])
    assert not clean and payload.startswith(got) and len(got) > len(payload) // 3
    bad = bytearray(gz)
    bad[len(bad) * 3 // 4] ^= 0x55
    got, clean = _gunzip_partial(bytes(bad))
    assert not clean and len(got) > len(payload) // 2
    common = next((k for k, (a, b) in enumerate(zip(got, payload)) if a != b), min(len(got), len(payload)))
    assert common > len(payload) // 2
    crc = gz[:-8] + b"\0\0\0\0" + gz[-4:]
    assert _gunzip_partial(crc)[0] == payload


def test_gunzip_partial_members_and_header_flags() -> None:
    a, b = b"first member\n" * 1000, b"second member\n" * 1000
    two = gzip.compress(a) + gzip.compress(b)
    assert _gunzip_partial(two) == (a + b, True)
    # FNAME + FCOMMENT + FEXTRA header fields
    body = zlib.compress(a)[2:-4]
    header = b"\x1f\x8b\x08" + bytes([4 | 8 | 16]) + b"\0\0\0\0\0\xff" + b"\x03\x00abc" + b"name.json\0" + b"comment\0"
    trailer = zlib.crc32(a).to_bytes(4, "little") + len(a).to_bytes(4, "little")
    assert _gunzip_partial(header + body + trailer) == (a, True)
    assert _gunzip_partial(b"\x1f\x8b") == (b"", False)
    assert _gunzip_partial(b"\x1f\x8b\x08\x00" + b"\0" * 6 + b"\xff" * 100)[1] is False
