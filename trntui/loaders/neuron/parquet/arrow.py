"""A `SystemProfileEvents` table into `SystemRows`, column-wise (pyarrow compute; Python only for the few values
that need it): ids as int64 (strings and floats too, out-of-range cells counted), strings dictionary-encoded,
the row's source, `flow_id` lists exploded, the extra attributes as one `ArgsStore` of JSON bytes."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from trntui.loaders.neuron.system import (
    INT64_MAX,
    OUT_OF_RANGE,
    Strs,
    SystemRows,
    infer_source,
    parse_flow_ids,
    to_int,
)
from trntui.loaders.neuron.parquet.tables import _pyarrow
from trntui.model.args import ArgsStore
from trntui.model.profile import NO_ID

SEQ_KEYS = ("nrt_sequence_id", "nrta_seq_id")


def _column(table: Any, *names: str) -> Any:
    for name in names:
        if name in table.column_names:
            return table.column(name)
    return None


def _ints(col: Any, n: int, bad: list[int] | None = None) -> np.ndarray:
    """int64 values, -1 for nulls / unparsable; numeric strings are parsed exactly (no float detour). A value
    no int64 holds (±inf, NaN, 1e400, 2**70, a uint64 past 2**63) is -1 too, counted in `bad[0]`."""
    pa, _ = _pyarrow()
    import pyarrow.compute as pc

    if col is None:
        return np.full(n, NO_ID, np.int64)
    t = col.type
    try:
        if pa.types.is_integer(t) or pa.types.is_boolean(t):
            return np.array(pc.cast(col, pa.int64()).fill_null(NO_ID).to_numpy(), np.int64)
        if pa.types.is_floating(t):
            values = np.asarray(pc.floor(col).fill_null(np.nan).to_numpy(zero_copy_only=False), np.float64)
            null = np.asarray(pc.is_null(col).to_numpy(zero_copy_only=False), bool)
            ok = np.isfinite(values) & (values >= -(2.0**63)) & (values < 2.0**63)
            if bad is not None:
                bad[0] += int(np.count_nonzero(~ok & ~null))
            out = np.full(n, NO_ID, np.int64)
            out[ok] = values[ok].astype(np.int64)
            return out
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            trimmed = pc.utf8_trim_whitespace(col)
            blank = pc.equal(trimmed, "")
            cleaned = pc.if_else(blank, pa.scalar(None, trimmed.type), trimmed)
            return np.array(pc.cast(cleaned, pa.int64()).fill_null(NO_ID).to_numpy(), np.int64)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError):
        pass
    return np.fromiter((to_int(v, NO_ID, bad) for v in col.to_pylist()), np.int64, count=n)


def _strs(col: Any, n: int) -> Strs:
    """A string column as `Strs` (dictionary encoded in Arrow); other types go through `str()` per row."""
    pa, _ = _pyarrow()
    import pyarrow.compute as pc

    if col is None:
        return Strs(np.zeros(n, np.int64), [None])
    if hasattr(col, "combine_chunks"):
        col = col.combine_chunks()
    t = col.type
    if pa.types.is_dictionary(t) and (pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type)):
        col = col.cast(t.value_type)
        t = col.type
    if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
        return Strs.from_list([None if v is None else str(v) for v in col.to_pylist()])
    d = pc.dictionary_encode(col)
    values = d.dictionary.to_pylist()
    codes = np.asarray(d.indices.fill_null(len(values)).to_numpy(zero_copy_only=False), np.int64)
    return Strs(codes, values + [None])


PY_ONLY_SPACE = "\\x{1c}-\\x{1f}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}"
"""Characters Python's `str.strip()` removes besides ASCII whitespace (checked so Arrow's trim stays exact)."""
ASCII_SPACE = " \t\n\v\f\r"


def _sources(name: Strs, src: Strs, group: Strs) -> Strs:
    """`infer_source` per row, evaluated once per distinct (source) or (group, name) for rows without one."""
    out: dict[str, int] = {}
    table = np.array([out.setdefault(infer_source("", v), len(out)) if v else -1 for v in src.values], np.int64)
    codes = table[src.codes]
    falsy = np.nonzero(codes < 0)[0]
    if len(falsy):
        pairs = np.stack([group.codes[falsy], name.codes[falsy]], axis=1)
        u, inv = np.unique(pairs, axis=0, return_inverse=True)
        first = np.zeros(len(u), np.int64)
        first[inv.reshape(-1)[::-1]] = falsy[::-1]
        got = np.array(
            [out.setdefault(infer_source(name[k] or "", src[k], group[k]), len(out)) for k in first.tolist()], np.int64
        )
        codes[falsy] = got[inv.reshape(-1)]
    return Strs(codes, list(out))


def _id_part(ids: Any, n: int) -> Any:
    """`"id":"<id>"` per row (null where no id): ints as digits, other ids as JSON strings."""
    pa, _ = _pyarrow()
    import pyarrow.compute as pc

    if ids is None:
        return pa.nulls(n, pa.string())
    if hasattr(ids, "combine_chunks"):
        ids = ids.combine_chunks()
    t = ids.type
    text = None
    if pa.types.is_integer(t):
        text = pc.cast(ids, pa.string())
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        plain = pc.match_substring_regex(ids, r"^[ !#-\[\]-~]*$")  # printable ASCII without " and \: dumps as is
        if pc.all(pc.or_kleene(plain, pc.is_null(ids))).as_py() is not False:
            text = pc.cast(ids, pa.string())
    if text is None:
        vals = []
        for i in ids.to_pylist():
            if i is None:
                vals.append(None)
            else:
                vals.append(f'"id":"{i}"' if isinstance(i, int) else f'"id":{json.dumps(str(i))}')
        return pa.array(vals, pa.string())
    return pc.binary_join_element_wise('"id":"', text, '"', "")


def _may_have_odd_space(col: Any) -> bool:
    """Whether a string array's bytes contain anything non-ASCII or in \\x1c-\\x1f (the only characters that
    Python's strip() treats as whitespace besides ASCII's): one pass over the data buffer."""
    data = _data_bytes(col)
    return not data.isascii() or any(c in data for c in (b"\x1c", b"\x1d", b"\x1e", b"\x1f"))


def _data_bytes(col: Any) -> bytes:
    """The bytes of a (single-chunk) string array's data buffer (possibly more than its slice holds)."""
    if hasattr(col, "combine_chunks"):
        col = col.combine_chunks()
    data = col.buffers()[2]
    return data.to_pybytes() if data is not None else b""


def _extra_part(extra: Any, n: int) -> Any:
    """The body of each row's extra-attributes JSON object (`{...}` without the braces), null when empty."""
    pa, _ = _pyarrow()
    import pyarrow.compute as pc

    if extra is None:
        return pa.nulls(n, pa.string())
    t = extra.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        col = extra.combine_chunks() if hasattr(extra, "combine_chunks") else extra
        col = col.cast(pa.string()) if pa.types.is_large_string(t) else col
        tr = pc.utf8_trim(col, ASCII_SPACE)
        odd = _may_have_odd_space(col)
        if not (odd and pc.any(pc.match_substring_regex(tr, f"^[{PY_ONLY_SPACE}]|[{PY_ONLY_SPACE}]$")).as_py()):
            braced = pc.and_(pc.and_(pc.starts_with(tr, "{"), pc.ends_with(tr, "}")), pc.greater(pc.utf8_length(tr), 2))
            body = pc.utf8_trim(pc.utf8_slice_codeunits(tr, 1, -1), ASCII_SPACE)
            edge = pc.match_substring_regex(body, f"^[{PY_ONLY_SPACE}]|[{PY_ONLY_SPACE}]$") if odd else None
            if edge is None or not pc.any(pc.and_(braced, edge)).as_py():
                keep = pc.and_(braced, pc.greater(pc.binary_length(body), 0))
                return pc.if_else(keep.fill_null(False), body, pa.scalar(None, pa.string()))
        texts = col.to_pylist()
    else:
        texts = [json.dumps(v) if isinstance(v, dict) else None for v in extra.to_pylist()]
    out = []
    for x in texts:
        body = None
        if x:
            x = x.strip()
            if x.startswith("{") and x.endswith("}") and len(x) > 2:
                body = x[1:-1].strip() or None
        out.append(body)
    return pa.array(out, pa.string())


def _flow_part(frow: np.ndarray, fkey: np.ndarray, n: int) -> Any:
    """`"flow_id":["1","2"]` per row (null where none), the row's flow values in order."""
    pa, _ = _pyarrow()
    import pyarrow.compute as pc

    if not len(frow):
        return pa.nulls(n, pa.string())
    if len(frow) > 1 and not bool(np.all(frow[1:] >= frow[:-1])):
        o = np.argsort(frow, kind="stable")
        frow, fkey = frow[o], fkey[o]
    offsets = np.searchsorted(frow, np.arange(n + 1), "left")
    lists = pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), pc.cast(pa.array(fkey, pa.int64()), pa.string()))
    joined = pc.binary_join(lists, '","')
    has = pa.array(np.diff(offsets) > 0)
    return pc.if_else(has, pc.binary_join_element_wise('"flow_id":["', joined, '"]', ""), pa.scalar(None, pa.string()))


def _args_store(parts: list[Any], n: int) -> ArgsStore:
    """`{part,part,...}` per row from the non-null parts (no args where all are null), as one bytes blob."""
    pa, _ = _pyarrow()
    import pyarrow.compute as pc

    parts = [p for p in parts if p.null_count < n]
    if not parts:
        z = np.zeros(n, np.int64)
        return ArgsStore(b"", z, z.copy())
    # ",part" or "" per part, then "}" where any part is present, joined: ",a,b}"; the leading comma becomes
    # "{" in the bytes below. (Not binary_join_element_wise's null_handling="skip": pyarrow 26 drops the rows
    # where every input is null, misaligning the result.)
    anyp = pc.is_valid(parts[0])
    for part in parts[1:]:
        anyp = pc.or_(anyp, pc.is_valid(part))
    pieces = [pc.binary_join_element_wise(",", p, "").fill_null("") for p in parts]
    closing = pc.if_else(anyp, pa.scalar("}"), pa.scalar(""))
    text = pc.binary_join_element_wise(*pieces, closing, "")
    if len(text) != n:  # never silently misalign args and rows
        raise AssertionError(f"args column has {len(text)} rows, not {n}")
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    _validity, offs_buf, data_buf = text.buffers()
    width = np.int64 if pa.types.is_large_string(text.type) else np.int32
    offs = np.frombuffer(offs_buf, width)[text.offset : text.offset + n + 1].astype(np.int64)
    base = int(offs[0]) if n else 0
    offs = offs - base
    starts, ends = offs[:-1], offs[1:]
    blob = b""
    if data_buf is not None and n and int(offs[-1]):
        data = np.frombuffer(data_buf, np.uint8)[base : base + int(offs[-1])].copy()
        data[starts[ends > starts]] = ord("{")
        blob = data.tobytes()
    return ArgsStore(blob, offs[:-1].copy(), offs[1:].copy())


def rows_from_arrow(table: Any) -> SystemRows:
    """`SystemProfileEvents` (one Parquet part) → `SystemRows`, column by column (Arrow compute and numpy;
    Python only for unusual column types and ids)."""
    import pyarrow.compute as pc

    pa, _ = _pyarrow()
    n = table.num_rows
    notes: list[str] = []
    oor = [0]  # cells out of the int64 range: left empty, counted
    name_raw = _strs(_column(table, "name"), n)
    start = _ints(_column(table, "start_ts", "timestamp", "timestamp_ns"), n, oor)
    end = _ints(_column(table, "end_ts"), n, oor)
    dur = np.maximum(_ints(_column(table, "duration_ns", "duration"), n, oor), 0)
    past = (end == NO_ID) & (start > INT64_MAX - dur)  # start + duration beyond the int64 range
    oor[0] += int(np.count_nonzero(past & (start != NO_ID)))
    end = np.where(end == NO_ID, np.where(past, start, start + np.where(past, 0, dur)), end)
    pid = _ints(_column(table, "process_id"), n, oor)
    tid = _ints(_column(table, "thread_id"), n, oor)
    nc = _ints(_column(table, "nc_idx", "lnc_idx"), n, oor)
    pcore = _ints(_column(table, "pcore_idx", "device_core_idx"), n, oor)
    seq = _ints(_column(table, *SEQ_KEYS), n, oor)
    stream = _strs(_column(table, "framework_stream_id"), n).mapped(lambda x: None if x in (None, "") else x)
    instance = _strs(_column(table, "instance_id"), n).mapped(lambda x: x or "")
    source = _sources(name_raw, _strs(_column(table, "trace_event_source"), n), _strs(_column(table, "group"), n))

    # extra attributes: the few keys needed for lanes/links are pulled out with Arrow regexes; the rest stay
    # raw JSON text, parsed only when someone looks at the event
    extra_col = _column(table, "extra_attributes_json")
    if extra_col is not None and (pa.types.is_string(extra_col.type) or pa.types.is_large_string(extra_col.type)):

        data = _data_bytes(extra_col)
        for target, keys in ((seq, SEQ_KEYS), (pcore, ("device_core_idx",)), (nc, ("nc_idx", "lnc_idx"))):
            for key in keys:
                missing = np.nonzero(target == NO_ID)[0]
                if not len(missing):
                    break
                if f'"{key}"'.encode() not in data:  # no row names the key: skip the regex
                    continue
                sub = extra_col if len(missing) == n else extra_col.take(pa.array(missing))
                named = np.asarray(pc.match_substring(sub, f'"{key}"').fill_null(False).to_numpy(zero_copy_only=False))
                rows_ = missing[named]
                if not len(rows_):
                    continue
                sub = sub.filter(pa.array(named)) if len(rows_) < len(missing) else sub
                got = pc.extract_regex(sub, rf'"{key}"\s*:\s*"?(?P<v>-?\d+)')
                target[rows_] = _ints(pc.struct_field(got, [0]), len(rows_))

    # the Kineto category Explorer may keep for framework rows (trntui.loaders.neuron.framework)
    category = Strs(np.zeros(n, np.int64), [None])
    if extra_col is not None and (pa.types.is_string(extra_col.type) or pa.types.is_large_string(extra_col.type)):
        fw_code = [k for k, v in enumerate(source.values) if v == "framework"]
        fw_rows = np.nonzero(np.isin(source.codes, fw_code))[0] if fw_code else np.zeros(0, np.int64)
        if len(fw_rows) and (b'"category"' in data or b'"cat"' in data):  # only framework rows need it
            sub = extra_col if len(fw_rows) == n else extra_col.take(pa.array(fw_rows))
            got = pc.extract_regex(sub, r'"(?:category|cat)"\s*:\s*"(?P<v>[^"\\]{1,64})"')
            found = _strs(pc.struct_field(got, [0]), len(fw_rows))
            codes = np.full(n, len(found.values), np.int64)
            codes[fw_rows] = found.codes
            category = Strs(codes, found.values + [None])

    # flow ids: list<string|int> exploded in Arrow; strings (JSON or "1,2") parsed per row
    flow_col = _column(table, "flow_id")
    frow = np.empty(0, np.int64)
    fkey = np.empty(0, np.int64)
    if flow_col is not None:
        t = flow_col.type
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            flat = pc.list_flatten(flow_col)
            parents = pc.list_parent_indices(flow_col)
            keys = _ints(flat, len(flat))
            rows_ = np.asarray(parents.to_numpy(zero_copy_only=False), np.int64)
            ok = keys != NO_ID
            frow, fkey = rows_[ok], keys[ok]
        else:
            fr: list[int] = []
            fk: list[int] = []
            for k, v in enumerate(flow_col.to_pylist()):
                for f in parse_flow_ids(v):
                    fr.append(k)
                    fk.append(f)
            frow, fkey = np.asarray(fr, np.int64), np.asarray(fk, np.int64)

    # args: JSON text per row (parsed on demand by Profile.args): id, flow ids, the extra attributes
    args = _args_store([_id_part(_column(table, "id"), n), _flow_part(frow, fkey, n), _extra_part(extra_col, n)], n)

    bad_name = np.array([not v for v in name_raw.values], bool)
    missing = bad_name[name_raw.codes] | (start == NO_ID)
    rows = SystemRows(
        name=name_raw.mapped(lambda x: x or ""),
        start=start,
        end=np.maximum(end, start),
        source=source,
        instance=instance,
        pid=pid,
        tid=tid,
        nc=nc,
        pcore=pcore,
        stream=stream,
        seq=seq,
        flow_row=frow,
        flow_key=fkey,
        args=args,
        notes=notes,
        category=category,
    )
    if oor[0]:
        rows.skipped[OUT_OF_RANGE] = oor[0]
    if missing.any():
        rows.notes.append(f"{int(missing.sum())} system-trace row(s) without a name or timestamp skipped")
        rows = rows.take(~missing)
    return rows
