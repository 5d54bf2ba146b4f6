"""Reading trace bytes: gzip by magic number, typed msgspec decoding, lazy args, repair of invalid JSON."""

from __future__ import annotations

import gzip
import json
import re
import zlib
from pathlib import Path
from typing import Any

import msgspec

from trntui.errors import LoadError

GZIP_MAGIC = b"\x1f\x8b"

_args_decoder = msgspec.json.Decoder()


def decode_args(raw: Any) -> dict[str, Any]:
    """Parse one event's raw `args` (kept as `msgspec.Raw` at load time) into a dict; {} if unreadable."""
    try:
        value = _args_decoder.decode(raw)
    except (msgspec.DecodeError, ValueError, TypeError):
        try:
            value = json.loads(bytes(raw).decode("utf-8", "replace"), strict=False)
        except (ValueError, TypeError):
            return {}
    return value if isinstance(value, dict) else {"value": value}


def read_bytes(path: Path) -> tuple[bytes, list[str]]:
    """The file's content, gunzipped when it starts with the gzip magic; notes on anything recovered.

    A truncated gzip stream yields what could be decompressed (a killed process leaves half a file) and a note.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise LoadError(path, "no such file") from None
    except IsADirectoryError:
        raise LoadError(path, "is a directory, expected a trace file") from None
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


def _gunzip_partial(data: bytes) -> tuple[bytes, bool]:
    """Decompress as much of a damaged gzip stream as possible."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = []
    pos, step = 0, 1 << 20
    try:
        while pos < len(data):
            out.append(d.decompress(data[pos : pos + step]))
            pos += step
            if d.eof:
                break
    except zlib.error:
        pass
    return b"".join(out), False


_NA_RE = re.compile(rb'(?<![\w"])N/A(?![\w"])')
_CONTROL_RE = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def repair_json(data: bytes) -> tuple[Any, list[str]]:
    """Parse JSON that strict decoders reject (old Kineto bugs), returning Python objects and repair notes.

    Fallback chain as in the TensorBoard plugin: lenient stdlib parse, then quoting bare `N/A`, with invalid
    UTF-8 replaced. Raises ValueError if the text is still not JSON.
    """
    notes: list[str] = []
    text = data.decode("utf-8", "replace")
    if "\ufffd" in text:
        notes.append("invalid UTF-8 bytes replaced")
    try:
        value = json.loads(text, strict=False)
        notes.append("control characters inside strings accepted")
        return value, notes
    except ValueError:
        pass
    fixed, count = _NA_RE.subn(b'"N/A"', text.encode("utf-8"))
    if count:
        try:
            value = json.loads(fixed.decode("utf-8"), strict=False)
            notes.append(f"{count} bare N/A value(s) quoted")
            return value, notes
        except ValueError:
            pass
    raise ValueError("not valid JSON")
