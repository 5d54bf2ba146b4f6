"""SHA-256 digests of everything a Kineto load produces (columns, names, lanes, flows, args bytes, link ids,
metadata and both key_averages tables): two loads are the same exactly when their digests are equal (the compiled
parser against the Python one: tests/test_compiled_parser.py)."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import numpy as np

from trntui.analysis.key_averages import key_averages
from trntui.model.profile import Profile


def _h(*chunks: Any) -> str:
    h = hashlib.sha256()
    for c in chunks:
        if isinstance(c, np.ndarray):
            h.update(str(c.dtype).encode() + str(c.shape).encode())
            h.update(np.ascontiguousarray(c).tobytes())
        elif isinstance(c, (bytes, bytearray, memoryview)):
            h.update(b"B%d:" % len(c) + bytes(c))
        else:
            h.update(repr(c).encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def _table(table: Any) -> str:
    parts = []
    for f in dataclasses.fields(table):
        v = getattr(table, f.name)
        parts.append(f.name)
        if isinstance(v, list) and v and isinstance(v[0], np.ndarray):
            parts.extend(v)
        else:
            parts.append(v)
    return _h(*parts)


def digest(profile: Profile) -> dict[str, str]:
    """Per aspect of the profile, a SHA-256 (equal digests: equal loads)."""
    args = [profile.args_raw[i] for i in range(len(profile.args_raw))]
    out = {
        "names": _h(profile.names),
        "cats": _h(profile.cats),
        "lanes": _h([dataclasses.astuple(lane) for lane in profile.lanes]),
        "flows": _h(*(getattr(profile.flows, f.name) for f in dataclasses.fields(profile.flows))),
        "args": _h(*[b"" if a is None else a for a in args]),
        "ext": _h(profile.ext),
        "corr": _h(profile.corr),
        "meta": _h(dataclasses.asdict(profile.meta) if dataclasses.is_dataclass(profile.meta) else vars(profile.meta)),
    }
    for col in ("start", "end", "lane", "name", "cat", "kind"):
        out[col] = _h(getattr(profile, col))
    out["key_averages"] = _table(key_averages(profile))
    out["key_averages_by_shapes"] = _table(key_averages(profile, group_by_input_shapes=True))
    return out
