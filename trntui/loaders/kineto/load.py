"""Load one Kineto trace file into a `ProfileBuilder`: in memory, from a memory map, or streamed under a
memory budget (trntui/memory.py), falling back to the tolerant whole-file decode for damaged input."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trntui.errors import LoadError
from trntui.loaders.files import InflateLimit, read_bytes
from trntui.loaders.kineto import early
from trntui.loaders.kineto.chunks import decode_chunked
from trntui.loaders.kineto.columns import part_of
from trntui.loaders.kineto.merge import add_parts
from trntui.loaders.kineto.schema import Ev, clock_base
from trntui.loaders.kineto.streaming import ArgsSpill, Stream, map_trace
from trntui.loaders.kineto.tolerant import decode_trace
from trntui.model.builder import ProfileBuilder
from trntui.model.profile import Profile, ProfileMeta
from trntui.progress import report


def load_kineto(path: str | Path, *, instance: str = "") -> Profile:
    """Load one chrome trace file into a new `Profile`."""
    builder = ProfileBuilder(ProfileMeta())
    load_kineto_into(path, builder, instance=instance)
    return builder.finish()


def load_kineto_into(
    path: str | Path, builder: ProfileBuilder, *, instance: str = "", budget: int | None = None,
    scratch_dir: Path | None = None, args_from_file: bool = True,
) -> None:
    """Add one chrome trace file's events, lanes and flows to `builder` (to merge it with other sources).

    `budget` (bytes; None: no limit): the file is loaded in memory when that fits, else streamed with its
    args on disk (in `scratch_dir`, else the system's temporary directory), else refused before most of it is
    read (trntui/memory.py). `args_from_file`: `LoadOptions.args_from_file` (a big plain trace's args are left
    in the file and read from it when asked for)."""
    path = Path(path)
    meta = builder.meta
    limit = None
    if budget is not None:
        from trntui.memory import FULL_LOAD_FACTOR, json_size

        try:
            size = json_size(path)  # a gzip trailer is only a hint: the inflation below is bounded
        except OSError:
            size = 0  # read_bytes says what is wrong with the file
        if size * FULL_LOAD_FACTOR > budget:
            _load_streamed(path, builder, instance=instance, budget=budget, size=size, scratch_dir=scratch_dir)
            return
        limit = int(budget / FULL_LOAD_FACTOR)
    if early.mappable(path) and _load_mapped(path, builder, instance=instance, args_from_file=args_from_file):
        return
    report("reading", 0, 0)
    try:
        data, notes = read_bytes(path, limit)
    except InflateLimit:  # the trailer lied (or wrapped): inflated, it does not fit in memory
        _load_streamed(path, builder, instance=instance, budget=budget, size=(limit or 0) + 1, scratch_dir=scratch_dir)
        return
    meta.notes.extend(f"{path.name}: {n}" for n in notes)
    meta.sources.append(str(path))
    with _decoding():
        chunked = decode_chunked(data)
        if chunked is not None:
            del data
            parts, top_meta = chunked
            del chunked
            add_parts(parts, top_meta, builder, path=path, instance=instance)
            return
        events, top_meta = decode_trace(data, path, meta)
        del data
        if not events:
            raise LoadError(path, "no events in the trace" + _skipped_detail(meta))
        add_events(events, top_meta, builder, path=path, instance=instance)


@contextmanager
def _decoding(mapped: Any = None) -> Iterator[None]:
    """Around a decode and merge: the cyclic GC off (millions of small objects, none cyclic: it would rescan
    them on every collection it triggers; measured: a 2M-event load took 2-3x longer), and the memory map of the
    file, if any, closed at the end."""
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc_was_enabled:
            gc.enable()
        if mapped is not None:
            try:
                mapped.close()
            except BufferError:  # a view is still alive (an exception's frame): the map closes when it goes
                pass


@contextmanager
def _truncated_meanwhile(path: Path) -> Iterator[None]:
    """A memory-mapped file truncated while the compiled scanner reads it (a SIGBUS its guard caught:
    `_scan.DataVanished`) is a one-line error naming it, not the process's end."""
    from trntui.loaders.kineto.parser import _scan

    vanished = getattr(_scan, "DataVanished", None)
    if vanished is None:
        yield
        return
    try:
        yield
    except vanished:
        raise LoadError(path, "was truncated while it was read (another program is rewriting it?): load it "
                              "again once it is written") from None


def _load_mapped(path: Path, builder: ProfileBuilder, *, instance: str, args_from_file: bool = True) -> bool:
    """Decode a big plain trace from a read-only memory map: the file is never copied into memory, and the
    pages of decoded pieces are given back as the decode goes (measured on the 2M trace: ~10% faster and
    ~100 MB less than reading it into memory first). `args_from_file` (and the compiled builder in use): the
    events' args stay in the file, as byte ranges read from it when asked for (model/args.py `FileBlob`:
    measured on the CPU trace, paired: 0.94x the wall time, peak 116 -> 76 MB). False when the file needs the
    whole-file path (damaged or unusual JSON), which the caller then takes."""
    from trntui.loaders.kineto.parser import enabled
    from trntui.model.args import FileBlob

    report("reading", 0, 0)
    begun = early.claim(path, args_from_file)  # mapped, its first pieces' scans started, by read_run's `begin`
    if begun is not None:
        data, opened, fd = begun.data, begun.opened, begun.take_fd()
    else:
        data, fd = early.map_plain(path, args_from_file and enabled())
        opened = None
    args = FileBlob(path, fd) if fd is not None else None  # (it closes the descriptor when it goes)
    with _decoding(data), _truncated_meanwhile(path):
        chunked = decode_chunked(data, Stream(path, data), opened, args)
        if chunked is None:
            return False
        builder.meta.sources.append(str(path))
        parts, top_meta = chunked
        del chunked
        add_parts(parts, top_meta, builder, path=path, instance=instance)
        return True


def _load_streamed(
    path: Path, builder: ProfileBuilder, *, instance: str, budget: int, size: int, scratch_dir: Path | None
) -> None:
    """Load `path` mapped and chunk by chunk, args spilled to disk (see trntui/memory.py)."""
    from trntui.memory import FULL_LOAD_FACTOR, fmt, over_budget

    meta = builder.meta
    report("reading", 0, 0)
    data, notes = map_trace(path, scratch_dir, budget)
    meta.notes.extend(f"{path.name}: {n}" for n in notes)
    meta.sources.append(str(path))
    meta.notes.append(f"{path.name}: streamed to stay within the memory budget of {fmt(budget)} (args read from disk)")
    spill = ArgsSpill(scratch_dir)
    with _decoding(data), _truncated_meanwhile(path):
        stream = Stream(path, data, spill, budget)
        chunked = decode_chunked(data, stream)
        if chunked is None:
            why = "repairing this damaged file (not plain valid JSON, so it cannot be streamed)"
            raise over_budget(path, int(size * FULL_LOAD_FACTOR), budget, why)
        stream.finish(sum(p.n for p in chunked[0]))
        parts, top_meta = chunked
        del chunked
        add_parts(parts, top_meta, builder, path=path, instance=instance, spill=spill)


def _skipped_detail(meta: ProfileMeta) -> str:
    if not meta.skipped:
        return ""
    return " (skipped: " + ", ".join(f"{v} {k}" for k, v in meta.skipped.items()) + ")"


def add_events(
    events: list[Ev], top_meta: dict[str, Any], builder: ProfileBuilder, *, path: Path, instance: str = ""
) -> None:
    """Convert decoded chrome events into builder batches (events, lanes, flows) and fill the metadata."""
    add_parts([part_of(events, base=clock_base(top_meta)[0])], top_meta, builder, path=path, instance=instance)
