"""The two-process decode's wire format: a piece's columns (`Part`) as plain msgpack data.

Arrays travel as (dtype, bytes), kept M/B/E events as JSON; the forked child writes length-prefixed frames
`[piece index, columns]` to a temporary file that the parent reads back frame by frame."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from trntui.loaders.kineto.columns import NOT_PARSED, Combos, FCols, Part, XCols
from trntui.loaders.kineto.schema import list_decoder
from trntui.model.args import ArgsStore


# the child's columns travel as msgpack (plain data: arrays as dtype + bytes, kept events as JSON)
def _arr(a: np.ndarray) -> list[Any]:
    return [a.dtype.str, a.tobytes()]


def _unarr(t: list[Any]) -> np.ndarray:
    return np.frombuffer(t[1], np.dtype(t[0]))


def _ids_enc(v: Any) -> list[Any]:
    return [_arr(v)] if isinstance(v, np.ndarray) else [v[0], _arr(v[1])]


def _ids_dec(t: list[Any]) -> Any:
    return _unarr(t[0]) if len(t) == 1 else (t[0], _unarr(t[1]))


def _values_enc(v: Any) -> Any:
    return _arr(v) if isinstance(v, np.ndarray) else [list(v)]


def _values_dec(t: Any) -> Any:
    return t[0] if len(t) == 1 else _unarr(t)


def pack_part(p: Part) -> list[Any]:
    """One piece's columns as plain msgpack data (arrays as dtype + bytes, kept events as JSON)."""
    x, f = p.x, p.flows
    c = x.combos
    combos = [_arr(c.cat), _arr(c.code), _arr(c.pid), _arr(c.tid), _values_enc(c.pids), _values_enc(c.tids)]
    xs = [x.m, _arr(x.start), _arr(x.end), _arr(x.kinds), combos, None, _ids_enc(x.cat),
          _ids_enc(x.name), [x.args.blob if isinstance(x.args.blob, bytes) else None, _arr(x.args.starts), _arr(x.args.ends)],
          None if x.links is None else x.links if isinstance(x.links, str) else [_arr(x.links[0]), _arr(x.links[1])],
          None if x.bad is None else _arr(x.bad), x.base, x.n_neg]
    fs = None if f is None else [f.n, _arr(f.start), _ids_enc(f.pid), _ids_enc(f.tid), _arr(f.keys), _ids_enc(f.cat),
                                 _arr(f.ph), None if f.bad is None else _arr(f.bad), f.base]
    return [p.n, p.n_m, p.n_x, p.n_be, p.n_sft, msgspec.json.encode(p.m_events), msgspec.json.encode(p.be_events), xs, fs,
            p.linking]


def unpack_part(packed: list[Any], spill: Any = None) -> Part:
    """A piece's columns from `pack_part`; args without a blob are in the streamed load's shared `spill`."""
    n, n_m, n_x, n_be, n_sft, m_ev, be_ev, xs, fs, linking = packed
    p = Part()
    p.linking = linking
    p.n, p.n_m, p.n_x, p.n_be, p.n_sft = n, n_m, n_x, n_be, n_sft
    p.m_events, p.be_events = list_decoder.decode(m_ev), list_decoder.decode(be_ev)
    x = p.x = XCols()
    x.m, x.start, x.end, x.kinds = xs[0], _unarr(xs[1]), _unarr(xs[2]), _unarr(xs[3])
    x.bad, x.base, x.n_neg = None if xs[10] is None else _unarr(xs[10]), xs[11], xs[12]
    c = x.combos = Combos()
    c.cat, c.code, c.pid, c.tid = (_unarr(a) for a in xs[4][:4])
    c.pids, c.tids = _values_dec(xs[4][4]), _values_dec(xs[4][5])
    x.cat, x.name = _ids_dec(xs[6]), _ids_dec(xs[7])
    blob, starts, ends = xs[8]
    x.args = ArgsStore(spill if blob is None else blob, _unarr(starts), _unarr(ends))
    x.links = None if xs[9] is None else NOT_PARSED if isinstance(xs[9], str) else (_unarr(xs[9][0]), _unarr(xs[9][1]))
    if fs is None:
        p.flows = None
    else:
        f = p.flows = FCols()
        f.n, f.start, f.pid, f.tid, f.keys, f.cat, f.ph, f.bad, f.base = (
            fs[0], _unarr(fs[1]), _ids_dec(fs[2]), _ids_dec(fs[3]), _unarr(fs[4]), _ids_dec(fs[5]), _unarr(fs[6]),
            None if fs[7] is None else _unarr(fs[7]), fs[8])
    return p
