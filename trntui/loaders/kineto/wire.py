"""The two-process decode's wire format: a piece's columns (`Part`) as frames the parent maps without copying.

The forked child writes one frame per piece to a temporary (RAM-backed) file:

    [header length: u64][frame length: u64][header: msgpack][padding][array bytes, each 64-byte aligned]...

The header is plain msgpack data (counts, the piece index, kept M/B/E events as JSON) in which every array is
`[dtype, offset, nbytes]`, the offset counted from the frame's payload; the parent maps the file and reads each
array as a numpy view of the map (`np.frombuffer`), so the child's columns and args bytes are never copied
(measured on the 2M-event trace: reading the frames back cost the parent ~0.15-0.2 s serially when the arrays
travelled inside the msgpack data).

The early decoder child (early.py) never imports numpy: it writes a piece's plain per-event arrays instead (a
raw frame: `pack_raw`, header `[k, fields, arrays]`), which the parent turns into the same `Part` (`frames`,
`columns.part_of_raw`). So numpy and the columns are imported by the functions that need them, not here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    import numpy as np

    from trntui.loaders.kineto.columns import Part

ALIGN = 64
"""Frames and their arrays start at multiples of this many bytes (aligned numpy views of the map)."""

_PREFIX = 16


def _pad(n: int) -> int:
    return -n % ALIGN


class _Payload:
    """The buffers of one frame, each at an aligned offset."""

    def __init__(self) -> None:
        self.buffers: list[Any] = []
        self.size = 0

    def add(self, buf: Any) -> list[Any]:
        mv = memoryview(buf).cast("B")
        at = self.size
        self.buffers.append(mv)
        self.size += len(mv)
        pad = _pad(self.size)
        if pad:
            self.buffers.append(bytes(pad))
            self.size += pad
        return [at, len(mv)]

    def arr(self, a: np.ndarray) -> list[Any]:
        import numpy as np

        a = np.ascontiguousarray(a)
        return [a.dtype.str, *self.add(a.view(np.uint8).reshape(-1) if a.size else b"")]


def _ids_enc(pl: _Payload, v: Any) -> list[Any]:
    return [pl.arr(v)] if not isinstance(v, tuple) else [v[0], pl.arr(v[1])]


def _values_enc(pl: _Payload, v: Any) -> Any:
    return [list(v)] if isinstance(v, list) else pl.arr(v)


def pack_part(k: int, p: Part) -> list[Any]:
    """Frame `k` of piece columns `p`: the buffers to write, in order (prefix, header, padding, arrays)."""
    pl = _Payload()
    x, f = p.x, p.flows
    c = x.combos
    combos = [pl.arr(c.cat), pl.arr(c.code), pl.arr(c.pid), pl.arr(c.tid), _values_enc(pl, c.pids), _values_enc(pl, c.tids)]
    blob = x.args.blob
    xs = [x.m, pl.arr(x.start), pl.arr(x.end), pl.arr(x.kinds), combos, None, _ids_enc(pl, x.cat),
          _ids_enc(pl, x.name), [pl.add(blob) if isinstance(blob, bytes) else None, pl.arr(x.args.starts), pl.arr(x.args.ends)],
          None if x.links is None else x.links if isinstance(x.links, str) else [pl.arr(x.links[0]), pl.arr(x.links[1])],
          None if x.bad is None else pl.arr(x.bad), x.base, x.n_neg]
    fs = None if f is None else [f.n, pl.arr(f.start), _ids_enc(pl, f.pid), _ids_enc(pl, f.tid), pl.arr(f.keys),
                                 _ids_enc(pl, f.cat), pl.arr(f.ph), None if f.bad is None else pl.arr(f.bad), f.base]
    return _frame(msgspec.msgpack.encode([k, [p.n, p.n_m, p.n_x, p.n_be, p.n_sft, msgspec.json.encode(p.m_events),
                                              msgspec.json.encode(p.be_events), xs, fs, p.linking]]), pl)


def pack_raw(k: int, fields: list[Any], arrays: list[tuple[str, Any]]) -> list[Any]:
    """Raw frame `k` (the early child's, without numpy): `fields`, plain msgpack data, and `arrays`, (numpy dtype
    string, buffer) pairs, for `columns.part_of_raw`."""
    pl = _Payload()
    return _frame(msgspec.msgpack.encode([k, fields, [[dtype, *pl.add(buf)] for dtype, buf in arrays]]), pl)


def _frame(header: bytes, pl: _Payload) -> list[Any]:
    head = _PREFIX + len(header)
    total = head + _pad(head) + pl.size
    prefix = len(header).to_bytes(8, "little") + total.to_bytes(8, "little")
    return [prefix, header, bytes(_pad(head)), *pl.buffers]


def frames(mapped: Any, size: int, out: dict[int, Part], spill: Any = None, linking: bool = False, pos: int = 0,
           written: bool = True) -> int:
    """Read the pieces (`pack_part`'s and `pack_raw`'s frames) from byte `pos` to `size` of the mapped frame file
    into `out` (keyed by piece), their arrays views of `mapped`, and return where the next frame starts; args
    without a blob are in the streamed load's shared `spill`. `linking`: a row that links was seen (raw pieces
    then parse their link ids, as `part_of` would have). `written=False`: the writer may still be writing the
    last frame, which is then left for the next call (else it is a damaged frame)."""
    from trntui.loaders.kineto.columns import part_of_raw

    while pos < size:
        if pos + _PREFIX > size:
            if written:
                raise ValueError("damaged frame")
            break
        header_len = int.from_bytes(mapped[pos : pos + 8], "little")
        total = int.from_bytes(mapped[pos + 8 : pos + 16], "little")
        if total <= _PREFIX + header_len or total % ALIGN:
            raise ValueError("damaged frame")
        if pos + total > size:
            if written:
                raise ValueError("damaged frame")
            break
        k, packed, *raw = msgspec.msgpack.decode(mapped[pos + _PREFIX : pos + _PREFIX + header_len])
        head = _PREFIX + header_len
        at = pos + head + _pad(head)
        if raw:
            out[k] = part_of_raw(packed, [_view(t, mapped, at, pos + total) for t in raw[0]], linking)
        else:
            out[k] = _unpack(packed, mapped, at, pos + total, spill)
        pos += total
    return pos


def _view(t: list[Any], mapped: Any, base: int, limit: int) -> np.ndarray:
    """The array `[dtype, offset, nbytes]` of the frame whose payload starts at `base`, a view of `mapped`."""
    import numpy as np

    dtype = np.dtype(t[0])
    at, nbytes = base + t[1], t[2]
    if at + nbytes > limit or nbytes % dtype.itemsize:
        raise ValueError("damaged frame")
    return np.frombuffer(mapped, dtype, nbytes // dtype.itemsize, at)


def _unpack(packed: list[Any], mapped: Any, base: int, limit: int, spill: Any) -> Part:
    from trntui.loaders.kineto.columns import NOT_PARSED, Combos, FCols, Part, XCols
    from trntui.loaders.kineto.schema import list_decoder
    from trntui.model.args import ArgsStore

    def arr(t: list[Any]) -> np.ndarray:
        return _view(t, mapped, base, limit)

    def ids(t: list[Any]) -> Any:
        return arr(t[0]) if len(t) == 1 else (t[0], arr(t[1]))

    def values(t: Any) -> Any:
        return t[0] if len(t) == 1 else arr(t)

    n, n_m, n_x, n_be, n_sft, m_ev, be_ev, xs, fs, linking = packed
    p = Part()
    p.linking = linking
    p.n, p.n_m, p.n_x, p.n_be, p.n_sft = n, n_m, n_x, n_be, n_sft
    p.m_events, p.be_events = list_decoder.decode(m_ev), list_decoder.decode(be_ev)
    x = p.x = XCols()
    x.m, x.start, x.end, x.kinds = xs[0], arr(xs[1]), arr(xs[2]), arr(xs[3])
    x.bad, x.base, x.n_neg = None if xs[10] is None else arr(xs[10]), xs[11], xs[12]
    c = x.combos = Combos()
    c.cat, c.code, c.pid, c.tid = (arr(a) for a in xs[4][:4])
    c.pids, c.tids = values(xs[4][4]), values(xs[4][5])
    x.cat, x.name = ids(xs[6]), ids(xs[7])
    blob, starts, ends = xs[8]
    x.args = ArgsStore(spill if blob is None else arr(["|u1", *blob]), arr(starts), arr(ends))
    x.links = None if xs[9] is None else NOT_PARSED if isinstance(xs[9], str) else (arr(xs[9][0]), arr(xs[9][1]))
    if fs is None:
        p.flows = None
    else:
        f = p.flows = FCols()
        f.n, f.start, f.pid, f.tid, f.keys, f.cat, f.ph, f.bad, f.base = (
            fs[0], arr(fs[1]), ids(fs[2]), ids(fs[3]), arr(fs[4]), ids(fs[5]), arr(fs[6]),
            None if fs[7] is None else arr(fs[7]), fs[8])
    return p
