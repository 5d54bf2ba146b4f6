"""Decompression and size bombs (issue 19, items 2 and 4), small on disk and quick to write.

Big inflated sizes come from concatenated gzip members (a gzip file may hold any number of members, and every
reader must inflate them all): one member is compressed once and written N times, so a 1.5 GiB stream costs a
few MB of disk and a fraction of a second to generate. Nothing here ever holds the inflated data in memory.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

MiB = 1 << 20
GiB = 1 << 30


def _member(data: bytes, level: int = 6) -> bytes:
    return gzip.compress(data, compresslevel=level, mtime=0)


def _set_isize(path: Path, isize: int) -> None:
    """Make the gzip trailer's ISIZE (the last 4 bytes: inflated size mod 4 GiB) say `isize`."""
    with open(path, "r+b") as f:
        f.seek(-4, 2)
        f.write((isize % (1 << 32)).to_bytes(4, "little"))


def nul_bomb(path: Path, size: int = 3 * GiB // 2) -> Path:
    """`size` NUL bytes, gzipped (the issue's 1.5 MB .gz of 1.5 GiB of NULs)."""
    block = 64 * MiB
    member = _member(b"\0" * block, 9)
    with open(path, "wb") as f:
        for _ in range(size // block):
            f.write(member)
    return path


def _events_block(n: int, start: int = 0) -> bytes:
    """`n` complete CPU events, one per line, each followed by a comma; distinct timestamps and names so that
    the text compresses like a real trace rather than like a run of one byte."""
    rng = np.random.default_rng(start)
    names = ("aten::mm", "aten::add", "aten::relu", "aten::linear", "aten::addmm", "aten::empty")
    lines = []
    ts = 1_000_000 + start
    for k in range(n):
        dur = int(rng.integers(1, 5000))
        lines.append(
            '{"ph": "X", "cat": "cpu_op", "name": "%s", "pid": 1, "tid": %d, "ts": %d.%03d, "dur": %d.%03d, '
            '"args": {"External id": %d, "Sequence number": %d}},\n'
            % (names[k % len(names)], 1 + k % 3, ts // 1000, ts % 1000, dur // 1000, dur % 1000, start + k, k)
        )
        ts += dur + int(rng.integers(0, 300))
    return "".join(lines).encode()


def trace_bomb(path: Path, size: int = 600 * MiB, claimed: int | None = 100 * MiB) -> Path:
    """A valid Kineto trace of about `size` bytes of real-looking events, whose gzip trailer claims `claimed`
    bytes (None: left as written). A block of ~30 KB of distinct events repeats (inside deflate's 32 KB window),
    so it compresses ~90x: small on disk, yet below the decompression-bomb ratio, so only the memory budget can
    stop it."""
    head = b'{"schemaVersion": 1, "traceEvents": [\n'
    block = _events_block(180)  # ~28 KB
    body = block * max(1, (16 * MiB) // len(block))
    member = _member(body, 6)
    last = _events_block(1, 10**9)[:-2] + b'\n], "traceName": "bomb"}\n'
    with open(path, "wb") as f:
        f.write(_member(head))
        for _ in range(max(1, size // len(body))):
            f.write(member)
        f.write(_member(last))
    if claimed is not None:
        _set_isize(path, claimed)
    return path


def whitespace_bomb(path: Path, size: int = 200 * MiB, gz: bool = False, where: str = "tail") -> Path:
    """A small valid trace with `size` bytes of whitespace before it (`where="head"`), after its event array
    (`"inner"`), or after the document (`"tail"`): the scans for the document's edges walk all of it."""
    from . import valid_trace

    good = valid_trace()
    if where == "head":
        before, after = b"", good
    elif where == "inner":
        cut = good.rindex(b"]")
        before, after = good[:cut], good[cut:]
    else:
        before, after = good, b""
    pad = b" \n\t\r" * (16 * MiB // 4)
    full, rest = divmod(size, len(pad))
    with open(path, "wb") as f:
        if gz:
            f.write(_member(before))
            member = _member(pad, 9)
            for _ in range(full):
                f.write(member)
            f.write(_member(pad[:rest] + after))
        else:
            f.write(before)
            for _ in range(full):
                f.write(pad)
            f.write(pad[:rest] + after)
    return path


def parquet_dictionary_bomb(directory: Path, rows: int = 2000, value_bytes: int = MiB) -> Path:
    """A Neuron Explorer export whose `name` column is one `value_bytes` string shared by `rows` rows through
    a dictionary page: a few KB on disk, rows x value_bytes (2 GiB) once decoded."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    idx = pa.array(np.zeros(rows, np.int32))
    names = pa.DictionaryArray.from_arrays(idx, pa.array(["A" * value_bytes]))
    ts = np.arange(rows, dtype=np.int64) * 1000 + 1_700_000_000_000_000_000
    table = pa.table({
        "name": names,
        "start_ts": pa.array(ts),
        "end_ts": pa.array(ts + 500),
        "trace_event_source": pa.array(["hardware"] * rows),
        "process_id": pa.array(np.full(rows, 51001, np.int64)),
        "nc_idx": pa.array(np.zeros(rows, np.int64)),
    })
    pq.write_table(table, directory / "SystemProfileEvents.parquet", compression="zstd", use_dictionary=True,
                   dictionary_pagesize_limit=2 * value_bytes)
    return directory


def neuron_json_out_of_range(path: Path) -> Path:
    """A Neuron Explorer JSON export whose cells hold values no int64 holds (1e400, "inf", 2**70, -2**64, NaN),
    beside good rows."""
    good = [
        {"name": "nc_exec_running", "start_ts": 1_700_000_000_000_000_000 + k * 1000,
         "end_ts": 1_700_000_000_000_000_500 + k * 1000, "trace_event_source": "hardware", "process_id": 51001,
         "thread_id": 7, "nc_idx": 0}
        for k in range(5)
    ]
    bad = [
        dict(good[0], start_ts="1e400"),
        dict(good[0], end_ts=2**70),
        dict(good[0], process_id="inf"),
        dict(good[0], thread_id=-(2**64)),
        dict(good[0], nc_idx="nan"),
        dict(good[0], start_ts=2**63),
        dict(good[0], duration_ns="-inf", end_ts=None),
    ]
    text = json.dumps({"trace_event": good + bad})
    text = text.replace('"1e400"', "1e400", 1)  # a JSON number out of float range, not a string
    path.write_text(text)
    return path


def parquet_out_of_range(directory: Path) -> Path:
    """The same out-of-range cells in a Parquet export: float and string columns (an int64 column cannot hold
    them), and a uint64 column beyond int64."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    n = 8
    base = 1_700_000_000_000_000_000
    start = [str(base + k * 1000) for k in range(n)]
    start[1] = "1e400"
    start[2] = "inf"
    start[3] = str(2**70)
    pid = [51001.0] * n
    pid[4] = float("inf")
    pid[5] = 2.0**70
    pid[6] = float("nan")
    tid = pa.array([7] * (n - 1) + [2**64 - 1], pa.uint64())
    table = pa.table({
        "name": pa.array(["nc_exec_running"] * n),
        "start_ts": pa.array(start),
        "duration_ns": pa.array([500.0] * (n - 1) + [1e300]),
        "trace_event_source": pa.array(["hardware"] * n),
        "process_id": pa.array(pid),
        "thread_id": tid,
        "nc_idx": pa.array([0] * n, pa.int64()),
    })
    pq.write_table(table, directory / "SystemProfileEvents.parquet")
    return directory
