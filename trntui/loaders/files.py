"""Reading a trace file's bytes: gzip by magic number, and as much as can be read of a damaged gzip stream.

Shared by the Kineto loader and the Neuron JSON export loader."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import BinaryIO

from trntui.errors import LoadError

GZIP_MAGIC = b"\x1f\x8b"


def open_trace(path: Path) -> BinaryIO:
    """The file opened for reading, or a one-line `LoadError` saying why it cannot be."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise LoadError(path, "no such file") from None
    except IsADirectoryError:
        raise LoadError(path, "is a directory, expected a trace file") from None
    except OSError as exc:
        raise LoadError(path, f"cannot read: {exc.strerror or exc}") from None


def read_bytes(path: Path) -> tuple[bytes, list[str]]:
    """The file's content, gunzipped when it starts with the gzip magic; notes on anything recovered.

    A truncated gzip stream yields what could be decompressed (a killed process leaves half a file) and a note.
    """
    with open_trace(path) as f:
        try:
            data = f.read()
        except OSError as exc:
            raise LoadError(path, f"cannot read: {exc.strerror or exc}") from None
    notes: list[str] = []
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            data, complete = _gunzip_partial(data)
            if not data:
                raise LoadError(path, "corrupted gzip stream (nothing could be decompressed)") from None
            notes.append("gzip stream is truncated or corrupted; read what could be decompressed")
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


def _gunzip_partial(data: bytes, piece: int = 1 << 16) -> tuple[bytes, bool]:
    """Decompress as much of a damaged gzip stream as possible: (bytes, whether every member ended cleanly).

    Inflates the raw deflate data (no CRC check, so a bad checksum loses nothing) in small pieces, so that
    corruption in the middle keeps everything decompressed before it; follows concatenated members.
    """
    out: list[bytes] = []
    pos = 0
    clean = True
    while pos < len(data):
        start = _gzip_header_end(data[pos : pos + 65546])
        if start is None:
            clean = False
            break
        d = zlib.decompressobj(-zlib.MAX_WBITS)
        p = pos + start
        damaged = False
        member: list[bytes] = []
        while p < len(data) and not d.eof:
            saved = d.copy()
            try:
                member.append(d.decompress(data[p : p + piece]))
                p = min(p + piece, len(data))
            except zlib.error:  # replay the failing piece byte by byte to keep what precedes the damage
                d = saved
                for q in range(p, min(p + piece, len(data))):
                    try:
                        member.append(d.decompress(data[q : q + 1]))
                    except zlib.error:
                        break
                damaged = True
                break
        if not damaged:
            member.append(d.flush())
        out.extend(member)
        if damaged or not d.eof:
            clean = False
            break
        end = p - len(d.unused_data)
        trailer = data[end : end + 8]  # CRC32 and ISIZE
        got = b"".join(member)
        if len(trailer) < 8 or int.from_bytes(trailer[:4], "little") != zlib.crc32(got):
            clean = False  # the data is kept; the caller says it may be damaged
        nxt = end + 8
        if data[nxt : nxt + 2] != GZIP_MAGIC:
            clean = clean and not data[nxt:].strip(b"\0")
            break
        pos = nxt
    return b"".join(out), clean
