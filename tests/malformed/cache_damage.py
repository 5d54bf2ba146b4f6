"""Hostile cache entries (issue 19, item 7): ways a parsed-profile cache entry can be damaged or forged.

Each case rewrites an existing, valid entry in place. "forged" cases also recompute the entry's checksums (an
attacker, or a bug, that keeps the files self-consistent): they must be caught by the type, depth, size and
consistency checks, not by the checksums. Every case must end as a miss (the table printed is the one from the
trace, never a forged number), and the odd entry must be removed.
"""

from __future__ import annotations

import io
import json
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class Damage:
    name: str
    apply: Callable[[Path], None]


def _meta(entry: Path) -> dict:
    return json.loads((entry / "meta.json").read_text())


def _write_meta(entry: Path, meta: dict | bytes, *, forged: bool = True) -> None:
    raw = meta if isinstance(meta, bytes) else json.dumps(meta).encode()
    (entry / "meta.json").write_bytes(raw)
    if forged:
        (entry / "meta.crc").write_bytes(str(zlib.crc32(raw)).encode())


def _resum(entry: Path, name: str) -> None:
    """Recompute the checksum of `name` (an .npy) in meta.json, and meta.json's own."""
    meta = _meta(entry)
    a = np.load(entry / name, allow_pickle=False)
    meta["checksums"][name] = zlib.crc32(memoryview(np.ascontiguousarray(a)).cast("B")) if len(a) else 0
    _write_meta(entry, meta)


def _npy_header_claiming(entry: Path, name: str, rows: int) -> None:
    """An .npy whose header claims `rows` elements but holds the original few (never allocate them)."""
    data = (entry / name).read_bytes()
    a = np.load(io.BytesIO(data), allow_pickle=False)
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": a.dtype.str, "fortran_order": False, "shape": (rows,)})
    (entry / name).write_bytes(buf.getvalue() + a.tobytes())


def _deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def _deep_meta(entry: Path) -> None:
    raw = (entry / "meta.json").read_bytes()
    # 100k levels inside the free-form trace metadata, checksums recomputed
    raw = raw.replace(b'"trace_meta": {', b'"trace_meta": {"deep": ' + _deep(100_000) + b", ", 1)
    _write_meta(entry, raw)


def _moderately_deep_meta(entry: Path) -> None:
    raw = (entry / "meta.json").read_bytes()
    raw = raw.replace(b'"trace_meta": {', b'"trace_meta": {"deep": ' + _deep(500) + b", ", 1)
    _write_meta(entry, raw)


def _string_for_number(entry: Path) -> None:
    meta = _meta(entry)
    meta["records"]["key_averages"]["fields"]["sum_self_cpu"] = "a lot"
    _write_meta(entry, meta)


def _string_in_names(entry: Path) -> None:
    meta = _meta(entry)
    meta["names"][0] = 12345
    _write_meta(entry, meta)


def _forged_total(entry: Path) -> None:
    """Self CPU total divided by ~500: every Self CPU % would print ~50,000% (the issue's `47394.07%`)."""
    meta = _meta(entry)
    meta["records"]["key_averages"]["fields"]["sum_self_cpu"] /= 473.9407
    _write_meta(entry, meta)


def _forged_column(entry: Path) -> None:
    """A self CPU time made NaN with its checksum recomputed."""
    name = "record_key_averages_self_cpu_time_total.npy"
    a = np.load(entry / name, allow_pickle=False)
    a[0] = np.nan
    np.save(entry / name, a, allow_pickle=False)
    _resum(entry, name)


def _huge_header(entry: Path) -> None:
    _npy_header_claiming(entry, "start.npy", 10**12)


def _object_array(entry: Path) -> None:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "|O", "fortran_order": False, "shape": (3,)})
    (entry / "start.npy").write_bytes(buf.getvalue() + b"\0" * 24)


def _flipped_byte(entry: Path) -> None:
    p = entry / "end.npy"
    data = bytearray(p.read_bytes())
    data[-1] ^= 0x55
    p.write_bytes(bytes(data))


def _truncated_meta(entry: Path) -> None:
    raw = (entry / "meta.json").read_bytes()
    (entry / "meta.json").write_bytes(raw[: len(raw) // 2])


def _scratch(entry: Path) -> Path:
    """A directory beside the cache directory (the test's temporary directory) for FIFOs and link targets."""
    cache_dir = entry.parent
    return cache_dir.parent


def _link(entry: Path, name: str, target: str | Path) -> None:
    (entry / name).unlink()
    (entry / name).symlink_to(target)


def _meta_to_fifo(entry: Path) -> None:
    fifo = _scratch(entry) / "a-fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    _link(entry, "meta.json", fifo)


def _blob_to_urandom(entry: Path) -> None:
    _link(entry, "args_blob.npy", "/dev/urandom")


def _meta_fifo_in_place(entry: Path) -> None:
    (entry / "meta.json").unlink()
    os.mkfifo(entry / "meta.json")


def _entry_is_a_link(entry: Path) -> None:
    """The entry directory replaced by a link to a directory whose meta.json is a FIFO."""
    elsewhere = _scratch(entry) / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    for p in entry.iterdir():
        if p.name != "meta.json":
            (elsewhere / p.name).write_bytes(p.read_bytes())
    if not (elsewhere / "meta.json").exists():
        os.mkfifo(elsewhere / "meta.json")
    for p in entry.iterdir():
        p.unlink()
    entry.rmdir()
    entry.symlink_to(elsewhere, target_is_directory=True)


def _args_offsets_outside(entry: Path) -> None:
    name = "args_ends.npy"
    a = np.load(entry / name, allow_pickle=False)
    a[-1] = 10**15
    np.save(entry / name, a, allow_pickle=False)
    _resum(entry, name)


DAMAGES = [
    Damage("meta_100k_deep", _deep_meta),
    Damage("meta_500_deep", _moderately_deep_meta),
    Damage("meta_string_for_number", _string_for_number),
    Damage("meta_number_for_string", _string_in_names),
    Damage("meta_truncated", _truncated_meta),
    Damage("forged_total_percent", _forged_total),
    Damage("forged_nan_column", _forged_column),
    Damage("npy_header_claims_1e12_rows", _huge_header),
    Damage("npy_object_dtype", _object_array),
    Damage("npy_flipped_byte", _flipped_byte),
    Damage("args_offsets_outside_the_blob", _args_offsets_outside),
    Damage("meta_symlink_to_fifo", _meta_to_fifo),
    Damage("meta_is_a_fifo", _meta_fifo_in_place),
    Damage("args_blob_symlink_to_urandom", _blob_to_urandom),
    Damage("entry_symlink_to_dir_with_fifo", _entry_is_a_link),
]
