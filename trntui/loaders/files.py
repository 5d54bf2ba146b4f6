"""Reading a trace file's bytes: gzip by magic number, and as much as can be read of a damaged gzip stream.

Shared by the Kineto loader and the Neuron JSON export loader."""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from collections.abc import Iterator
from typing import Any, BinaryIO

from trntui.errors import LoadError

GZIP_MAGIC = b"\x1f\x8b"


def open_trace(path: Path) -> BinaryIO:
    """The file opened for reading, or a one-line `LoadError` saying why it cannot be: also when it is not a
    regular file (a FIFO is refused at once, never waited on: trntui/fsio.py)."""
    from trntui import fsio

    return fsio.open_regular(path, what="a trace file")


class InflateLimit(LoadError):
    """Inflating the file would go past the limit the caller gave (its memory budget): the caller streams
    the file instead, or refuses it. Raised as soon as the limit is passed, never after inflating it all."""

    def __init__(self, path: object, limit: int) -> None:
        self.limit = limit
        super().__init__(path, f"inflates to more than {limit:,} bytes")


BOMB_RATIO = 200
"""Inflated / compressed size past which a gzip file is refused as a decompression bomb (once it has inflated
`BOMB_MIN_BYTES`). Real traces compress 7-17x (the vendored corpus and the bench traces); deflate's ceiling is
~1032x, reached only by runs of one byte (a file of NULs or of spaces)."""
BOMB_MIN_BYTES = 64 << 20


def check_ratio(path: object, inflated: int, consumed: int) -> None:
    """Refuse, with one line, a gzip stream that inflates like a decompression bomb."""
    if inflated > BOMB_MIN_BYTES and inflated > BOMB_RATIO * max(consumed, 1):
        read = f"{consumed / (1 << 20):,.1f} MiB" if consumed >= 1 << 20 else f"{max(consumed, 1) / 1024:,.0f} KiB"
        raise LoadError(path, f"inflates more than {BOMB_RATIO}x its compressed size ({inflated >> 20:,} MiB from "
                              f"{read} so far): not a trace (a decompression bomb?)")


_IN_PIECE = 1 << 16
"""Compressed bytes fed to the inflater per call (a damaged piece is replayed byte by byte)."""
_OUT_PIECE = 8 << 20
"""Most bytes one inflater call may produce (`max_length`): no single call can blow up (a 64 KiB piece of a
bomb inflates to 64 MiB)."""


def bounded(d: Any, data: Any) -> Iterator[bytes]:
    """Feed `data` to the inflater `d` and yield its output in pieces of at most `_OUT_PIECE` bytes (each call
    has a `max_length`, so one call never makes more; input left over or output still pending in the inflater
    is taken by further calls)."""
    chunk = d.decompress(data, _OUT_PIECE)
    while True:
        if chunk:
            yield chunk
        if d.eof or (not d.unconsumed_tail and len(chunk) < _OUT_PIECE):
            return  # all input consumed and nothing pending (a full piece may leave output in the inflater)
        chunk = d.decompress(d.unconsumed_tail, _OUT_PIECE)


def read_bytes(path: Path, limit: int | None = None) -> tuple[bytes, list[str]]:
    """The file's content, gunzipped when it starts with the gzip magic; notes on anything recovered.

    A truncated or damaged gzip stream yields what could be decompressed (a killed process leaves half a file)
    and a note. `limit`: most bytes the content may have once inflated (`InflateLimit` as soon as it is passed:
    the gzip trailer's size is never trusted, the inflation itself is bounded). Progress is reported per
    piece, so a cancelled load stops inside a long inflation too.
    """
    with open_trace(path) as f:
        try:
            if limit is not None and os.fstat(f.fileno()).st_size > limit:
                raise InflateLimit(path, limit)  # checked before the read (gzip or not, it only grows)
            data = f.read()
        except OSError as exc:
            raise LoadError(path, f"cannot read: {exc.strerror or exc}") from None
    notes: list[str] = []
    if data[:2] == GZIP_MAGIC:
        data, clean = _gunzip_partial(data, path, limit)
        if not data:
            raise LoadError(path, "corrupted gzip stream (nothing could be decompressed)") from None
        if not clean:
            notes.append("gzip stream is truncated or corrupted; read what could be decompressed")
    elif limit is not None and len(data) > limit:
        raise InflateLimit(path, limit)
    return data, notes


def _gzip_header_end(data: bytes) -> int | None:
    """Offset of the deflate stream after a gzip member header (RFC 1952), or None if the header is bad."""
    if len(data) < 10 or data[:2] != GZIP_MAGIC or data[2] != 8:
        return None
    flags = data[3]
    pos = 10
    if flags & 4:  # FEXTRA
        if len(data) < pos + 2:
            return None
        pos += 2 + int.from_bytes(data[pos : pos + 2], "little")
    for bit in (8, 16):  # FNAME, FCOMMENT: zero-terminated
        if flags & bit:
            end = data.find(b"\0", pos)
            if end < 0:
                return None
            pos = end + 1
    if flags & 2:  # FHCRC
        pos += 2
    return pos if pos <= len(data) else None


def _gunzip_partial(data: bytes, path: Path | str = "<gzip data>", limit: int | None = None) -> tuple[bytes, bool]:
    """Decompress a gzip stream, as much of a damaged one as possible: (bytes, whether every member ended
    cleanly with a matching CRC). Bounded: every inflater call has a `max_length`, and the total is checked
    against `limit` as it grows (`InflateLimit`).

    Inflates the raw deflate data (no CRC check inside zlib, so a bad checksum loses nothing) in small pieces,
    so that corruption in the middle keeps everything decompressed before it; follows concatenated members.
    """
    from trntui.progress import report

    out: list[bytes] = []
    total = 0
    pos = 0
    clean = True
    view = memoryview(data)

    def emit(chunk: bytes) -> None:
        nonlocal total
        if chunk:
            out.append(chunk)
            total += len(chunk)
            if limit is not None and total > limit:
                raise InflateLimit(path, limit)
            check_ratio(path, total, p)

    while pos < len(data):
        start = _gzip_header_end(data[pos : pos + 65546])
        if start is None:
            clean = False
            break
        d = zlib.decompressobj(-zlib.MAX_WBITS)
        p = pos + start
        crc = 0
        damaged = False
        while p < len(data) and not d.eof:
            piece = view[p : p + _IN_PIECE]
            saved = d.copy()
            try:
                for chunk in bounded(d, piece):
                    crc = zlib.crc32(chunk, crc)
                    emit(chunk)
                p = min(p + len(piece), len(data))
            except zlib.error:  # replay the failing piece byte by byte to keep what precedes the damage
                d = saved
                for q in range(p, min(p + len(piece), len(data))):
                    try:
                        for chunk in bounded(d, view[q : q + 1]):
                            emit(chunk)
                    except zlib.error:
                        break
                damaged = True
                break
            report("inflating", p, len(data))
        if not damaged and not d.eof:
            emit(d.flush())  # (after the end of a member, flush() would count its trailer as unused twice)
        if damaged or not d.eof:
            clean = False
            break
        end = p - len(d.unused_data)
        trailer = data[end : end + 8]  # CRC32 and ISIZE
        if len(trailer) < 8 or int.from_bytes(trailer[:4], "little") != crc:
            clean = False  # the data is kept; the caller says it may be damaged
        nxt = end + 8
        if data[nxt : nxt + 2] != GZIP_MAGIC:
            clean = clean and not data[nxt:].strip(b"\0")
            break
        pos = nxt
    return b"".join(out), clean
