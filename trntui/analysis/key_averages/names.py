"""Row keys as torch's table writes them: names rewritten (demangled, `ProfilerStep#N` -> `ProfilerStep*`,
cached per profile), `input_shapes` as torch prints them, and the device type label of a device row."""

from __future__ import annotations

from typing import Any

import numpy as np

from trntui.analysis.demangle import demangle
from trntui.model.profile import Profile


def rewrite_name(name: str) -> str:
    """torch's `_rewrite_name(name, with_wildcard=True)`: demangled, `ProfilerStep#N` → `ProfilerStep*`.
    (`ProfilerStep#N` itself never demangles: `__cxa_demangle` reads `Pro` as a type and fails on the rest, so
    it is not asked, once per step.)"""
    if name.startswith("ProfilerStep#"):
        return "ProfilerStep*"
    name = demangle(name)
    return "ProfilerStep*" if name.startswith("ProfilerStep#") else name


def parse_input_shapes(dims: Any, types: Any = None) -> Any:
    """torch's in-process `input_shapes` from the trace's `Input Dims` (and `Input type`).

    The exporter writes a TensorList argument's shapes as a nested list (`[[1, 4], [2, 4]]`, type `TensorList`);
    torch's `input_shapes` (`shapesAndDtypes` in profiler_kineto.cpp) holds `[]` for it, like for any argument
    that is not a tensor. Older traces without `Input type` are recognised by the nesting.
    """
    if not isinstance(dims, list):
        return dims
    out = []
    for k, d in enumerate(dims):
        t = types[k] if isinstance(types, list) and k < len(types) else None
        if t == "TensorList" or (isinstance(d, list) and any(isinstance(x, list) for x in d)):
            out.append([])
        else:
            out.append(d)
    return out


def _rewritten_name_ids(profile: Profile, events: np.ndarray | None = None, *, names: np.ndarray | None = None) -> np.ndarray:
    """Name id → id of its torch table name (`rewrite_name`: demangled, ProfilerStep#N → ProfilerStep*): names
    that print the same share the id of the first of them. Only the names of `events` (default: all) are
    rewritten; other ids map to themselves. `names`: the name ids of the events instead (`profile.name[events]`,
    when the caller has them)."""
    ids = np.arange(len(profile.names), dtype=np.int64)
    if names is None and events is not None:
        names = profile.name[events]
    if names is None:
        used = ids
    else:
        used = np.flatnonzero(np.bincount(names, minlength=len(ids))) if len(names) else ids[:0]
    names = table_names(profile, used)
    first: dict[str, int] = {}
    for k in used.tolist():
        ids[k] = first.setdefault(names[k], k)
    return ids


def table_names(profile: Profile, ids: np.ndarray) -> dict[int, str]:
    """Torch table names of the name ids `ids` (cached per profile: demangling is a C++ call per name)."""
    cache: dict[int, str] = profile.cache.setdefault("table_names", {})
    for k in ids.tolist():
        if k not in cache:
            cache[k] = rewrite_name(profile.names[k])
    return cache


def _device_type_label(profile: Profile, cat: str) -> str:
    backend = profile.meta.backend or "CUDA"
    if cat in ("mtia_ccp_events", "mtia_insight", "mtia_counters"):
        return "MTIA" if profile.meta.backend in ("", "MTIA", "CUDA") else backend
    return backend


def input_shapes_of(profile: Profile, i: int) -> str:
    """torch prints `str(input_shapes)`: a list of lists, e.g. `[[4, 512], []]` (a TensorList argument is `[]`)."""
    return _shapes_text(profile.args(i))


def _shapes_text(args: dict[str, Any]) -> str:
    dims = args.get("Input Dims", args.get("Input dims"))
    if dims is None:
        return "[]"
    return str(parse_input_shapes(dims, args.get("Input type")))


def input_shapes_many(profile: Profile, idx: np.ndarray) -> list[str]:
    """`input_shapes_of` of every event of `idx`: the args of a batch of events read at once (`raw_many`: a
    window of the file at a time where they were left in it) and decoded in one call; a batch that does not
    decode as a whole (an event's args damaged) is decoded event by event, as `Profile.args` does."""
    from trntui.model.args import ArgsStore, decode_args, decoded_batches

    store = profile.args_raw
    idx = np.asarray(idx, np.int64)
    if not isinstance(store, ArgsStore):
        return [input_shapes_of(profile, int(i)) for i in idx.tolist()]
    import msgspec

    unset = msgspec.UNSET
    out: list[str] = []
    # only the three keys are built (msgspec skips the others): as `args.get` reads them
    for raws, got in decoded_batches(store, idx, _shape_args_decoder()):
        if got is None:
            out.extend(_shapes_text(decode_args(r)) for r in raws)
            continue
        for a in got:
            dims = a.dims if a.dims is not unset else a.dims_lower if a.dims_lower is not unset else None
            out.append("[]" if dims is None else str(parse_input_shapes(dims, None if a.types is unset else a.types)))
    return out


_decoders: list[Any] = []


def _shape_args_decoder() -> Any:
    """msgspec's decoder of a list of args objects, keeping `Input Dims`, `Input dims` and `Input type` (UNSET
    where absent, so a present null is told from no key, as `dict.get` does); made on first use."""
    if not _decoders:
        import msgspec

        class ShapeArgs(msgspec.Struct):
            dims: Any = msgspec.field(name="Input Dims", default=msgspec.UNSET)
            dims_lower: Any = msgspec.field(name="Input dims", default=msgspec.UNSET)
            types: Any = msgspec.field(name="Input type", default=msgspec.UNSET)

        _decoders.append(msgspec.json.Decoder(list[ShapeArgs]))
    return _decoders[0]
