"""What a run is: which trace files belong together, decided in one place for every command and the app.

One file is one run, unless the files say they belong together:

1. **Ranks of one job.** Kineto's `distributedInfo` (`{"backend", "rank", "world_size"}`, world size ≥ 2): files
   with the same backend and world size, distinct ranks, and first events within `JOB_WINDOW_NS` of each other
   are the ranks of one job. Without it, a `rank-N` / `rank_N` / `rankN` in the file name (or in the name of the
   file's directory) does the same for files named alike in one place (Neuron's `<instance>_pid_<pid>` session
   directories are grouped by the Neuron discovery, which numbers their ranks).
2. **Spans of one worker.** Files named by torch's `tensorboard_trace_handler`, `<worker>.<span>.pt.trace.json[.gz]`,
   with the same worker in one directory are successive spans (profiler schedule cycles) of that worker; so are
   files of one process (same host, pid and rank) that start at different times. A rank of a job can have spans.
3. Everything else stays a run of its own (its own table and time span), even when it has a
   `distributedInfo` that names a rank: a lone `rank 0` is not a job, and two files claiming the same rank of the
   same job are two runs.

Merging across files happens only when asked (`--merge`: everything found becomes one run).

Decisions are made from a few facts read off each file's first 64 kB (and its last 64 kB for an uncompressed
file; `distributedInfo` is written before `traceEvents` by current torch, after it by some 2024 builds): never by
loading a trace. `explain()` gives the grouping and the reason for each group (`trntui info`).
"""

from __future__ import annotations

import gzip
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from trntui import fsio
from trntui.errors import LoadError

TB_NAME_RX = re.compile(r"^(?P<worker>.*?)(?:\.(?P<span>\d+))?\.pt\.trace\.json(?:\.gz)?$")
"""torch's tensorboard_trace_handler names (the TensorBoard plugin's own matcher)."""
RANK_NAME_RX = re.compile(r"(?<![A-Za-z0-9])(?:rank|rk)[-_]?(?P<n>\d+)(?!\d)", re.I)
"""`rank-3`, `rank_3`, `rank3`, `neuron_framework_trace_rank_3` (not `frank3`, `rank3x` is allowed: `rank3.json`)."""
JOB_WINDOW_NS = 3600 * 10**9
"""Ranks of one job start profiling within this long of each other (hosts' clocks included)."""
SPAN_WINDOW_NS = 24 * 3600 * 10**9
"""Spans of one process lie within this long of each other."""
HEAD_BYTES = 1 << 16

_DIST_RX = re.compile(rb'"distributedInfo"\s*:\s*\{(?P<body>[^{}]*(?:\{[^{}]*\}[^{}]*)*)\}')
_INT_FIELD = r'"{key}"\s*:\s*"?(-?\d+)'
_STR_FIELD = r'"{key}"\s*:\s*"([^"]*)"'
_BASE_RX = re.compile(rb'"baseTimeNanoseconds"\s*:\s*(\d+)')
_HOST_RX = re.compile(rb'"host_?name"\s*:\s*"([^"]{1,200})"')
_TS_RX = re.compile(rb'"ph"\s*:\s*"X"[^{}]*?"ts"\s*:\s*(-?[0-9.eE+]+)|"ts"\s*:\s*(-?[0-9.eE+]+)[^{}]*?"ph"\s*:\s*"X"')
_PID_RX = re.compile(rb'"cat"\s*:\s*"(?:cpu_op|user_annotation|python_function|cuda_runtime|Operator|Runtime)"[^{}]*?"pid"\s*:\s*(\d+)')


@dataclass(frozen=True)
class TraceFacts:
    """What grouping needs to know about one trace file (read from its head and tail)."""

    path: Path
    rank: int | None = None
    """`distributedInfo.rank`."""
    world_size: int | None = None
    backend: str = ""
    name_rank: int | None = None
    """A rank number in the file's name (or its directory's name)."""
    name_pattern: str = ""
    """The name with that number replaced by `*` (files named alike share it)."""
    worker: str = ""
    """tensorboard_trace_handler's worker part of the name."""
    span: str = ""
    """tensorboard_trace_handler's span part of the name (`time.time_ns()` when the file was written)."""
    first_ns: int | None = None
    """Absolute ns of the first complete event seen."""
    pid: int | None = None
    host: str = ""


def _tail(path: Path, size: int) -> bytes:
    try:
        with fsio.open_regular(path) as f:
            f.seek(max(0, size - HEAD_BYTES))
            return f.read(HEAD_BYTES)
    except (OSError, LoadError):
        return b""


def _head(path: Path) -> tuple[bytes, bool]:
    """(first 64 kB of the content, whether the file is gzip)."""
    try:
        with fsio.open_regular(path) as f:
            raw = f.read(HEAD_BYTES)
            if raw[:2] != b"\x1f\x8b":
                return raw, False
            f.seek(0)
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out = b""
            while len(out) < HEAD_BYTES:
                piece = f.read(1 << 14)
                if not piece:
                    break
                out += d.decompress(piece, HEAD_BYTES - len(out))
                if d.unconsumed_tail:
                    break
            return out[:HEAD_BYTES], True
    except (OSError, LoadError, zlib.error, EOFError, gzip.BadGzipFile):  # unreadable: its load says why
        return b"", False


def peek(path: Path) -> TraceFacts:
    """The grouping facts of one trace file (never raises: unknown facts stay None/empty)."""
    path = Path(path)
    head, gz = _head(path)
    text = head
    if not gz:
        try:
            size = path.stat().st_size
        except OSError:
            size = 0
        if size > HEAD_BYTES:
            text = head + b"\n" + _tail(path, size)
    rank = world = None
    backend = ""
    m = _DIST_RX.search(text)
    if m:
        body = m.group("body")
        rank = _int(body, "rank")
        world = _int(body, "world_size")
        b = re.search(_STR_FIELD.format(key="backend").encode(), body)
        backend = b.group(1).decode("utf-8", "replace") if b else ""
    base = _BASE_RX.search(text)
    first_ns = None
    t = _TS_RX.search(head)
    if t:
        try:
            ts = float((t.group(1) or t.group(2)).decode())
            first_ns = int(round(ts * 1000)) + (int(base.group(1)) if base else 0)
        except ValueError:
            first_ns = None
    pid_m = _PID_RX.search(head)
    host_m = _HOST_RX.search(text)
    name_rank, pattern = _name_rank(path)
    tb = TB_NAME_RX.match(path.name)
    return TraceFacts(
        path=path,
        rank=rank,
        world_size=world,
        backend=backend,
        name_rank=name_rank,
        name_pattern=pattern,
        worker=tb.group("worker") if tb and tb.group("span") else "",
        span=tb.group("span") or "" if tb else "",
        first_ns=first_ns,
        pid=int(pid_m.group(1)) if pid_m else None,
        host=host_m.group(1).decode("utf-8", "replace") if host_m else "",
    )


def _int(body: bytes, key: str) -> int | None:
    m = re.search(_INT_FIELD.format(key=key).encode(), body)
    return int(m.group(1)) if m else None


def _name_rank(path: Path) -> tuple[int | None, str]:
    """A rank number in the file name, else in its directory's name; with the name pattern around it."""
    for part, where in ((path.name, "file"), (path.parent.name, "dir")):
        found = list(RANK_NAME_RX.finditer(part))
        if len(found) == 1:
            m = found[0]
            pattern = part[: m.start("n")] + "*" + part[m.end("n"):]
            if where == "dir":
                pattern = f"{pattern}/{path.name}"
            return int(m.group("n")), pattern
    return None, ""


# -- the grouping --------------------------------------------------------------------------------------------


@dataclass
class Member:
    """One run of a group: the files loaded together (one file, or all of them with --merge)."""

    files: list[Path]
    rank: int | None = None
    span: int | None = None
    """1-based span number within its worker (or rank); None when it has no siblings."""
    worker: str = ""


@dataclass
class FileGroup:
    """Runs that belong together, and why."""

    kind: str
    """`single` (one unrelated file), `job` (ranks of one distributed job), `worker` (spans of one worker),
    `merged` (everything, on request: trntui/formats.py)."""
    name: str
    reason: str
    members: list[Member] = field(default_factory=list)
    world_size: int | None = None

    @property
    def ranks(self) -> list[int]:
        return sorted({m.rank for m in self.members if m.rank is not None})


def group_files(files: Sequence[Path], *, root: Path | None = None,
                facts: Sequence[TraceFacts] | None = None) -> list[FileGroup]:
    """Group trace files into runs (see the module docstring). `facts`: precomputed `peek` results."""
    files = [Path(f) for f in files]
    if not files:
        return []
    root = Path(root) if root is not None else Path(_common_dir(files))
    info = {f.path: f for f in (facts if facts is not None else [peek(p) for p in files])}
    left = sorted(files)
    groups: list[FileGroup] = []

    # 1. jobs: distributedInfo, then rank numbers in names
    by_key: dict[tuple, list[TraceFacts]] = {}
    for p in left:
        f = info[p]
        if f.world_size is not None and f.world_size >= 2 and f.rank is not None:
            by_key.setdefault(("dist", f.backend, f.world_size), []).append(f)
    jobs: list[tuple[list[TraceFacts], str, str, int | None]] = []
    for (_, backend, world), fs in sorted(by_key.items(), key=lambda kv: str(kv[0])):
        for cluster in (part for c in _time_clusters(fs, JOB_WINDOW_NS) for part in _split_by_directory(c)):
            jobs.append((cluster, "dist",
                         f"distributedInfo: backend {backend or '?'}, world size {world}, ranks "
                         f"{_ranges(sorted({x.rank for x in cluster}))}, first events within "
                         f"{_span_text(cluster)}", world))
    claimed = {f.path for cluster, *_ in jobs for f in cluster}
    # files named like a job's ranks but without a readable distributedInfo (a rank killed mid-write): that rank
    for k, (cluster, how, reason, world) in enumerate(jobs):
        patterns = {(f.name_pattern, f.path.parent) for f in cluster}
        if len(patterns) != 1 or any(f.name_rank != f.rank for f in cluster):
            continue
        pattern, parent = patterns.pop()
        taken = {f.rank for f in cluster}
        adopted = [info[p] for p in left if p not in claimed and info[p].name_pattern == pattern and p.parent == parent
                   and info[p].name_rank is not None and info[p].name_rank not in taken and info[p].world_size is None]
        if adopted:
            cluster += [TraceFacts(path=f.path, rank=f.name_rank, world_size=world, name_rank=f.name_rank,
                                   name_pattern=f.name_pattern) for f in adopted]
            reason += f"; rank(s) {_ranges(sorted(f.name_rank for f in adopted))} by file name only (no distributedInfo read)"
            claimed |= {f.path for f in adopted}
        missing = sorted(set(range(world)) - {f.rank for f in cluster}) if world and world <= 100_000 else []
        if missing:
            reason += f"; missing rank(s) {_ranges(missing)} of {world}"
        jobs[k] = (cluster, how, reason, world)
    by_pattern: dict[tuple, list[TraceFacts]] = {}
    for p in left:
        f = info[p]
        if p in claimed or f.name_rank is None or (f.world_size or 0) >= 2:
            continue
        where = p.parent if "/" not in f.name_pattern else p.parent.parent
        by_pattern.setdefault(("name", str(where), f.name_pattern), []).append(f)
    for (_, where, pattern), fs in sorted(by_pattern.items()):
        for cluster in _time_clusters(fs, JOB_WINDOW_NS):
            jobs.append((cluster, "name", f"rank numbers in the names ({pattern}), ranks "
                                          f"{_ranges(sorted({x.name_rank for x in cluster}))}", None))
    claimed = set()
    for cluster, how, reason, world in jobs:
        rank_of = {f.path: (f.rank if how == "dist" else f.name_rank) for f in cluster}
        per_rank: dict[int, list[TraceFacts]] = {}
        for f in cluster:
            per_rank.setdefault(rank_of[f.path], []).append(f)
        if len(per_rank) < 2:
            continue  # one rank is not a job
        members: list[Member] = []
        ok = True
        for r, fs in sorted(per_rank.items()):
            spans = _spans(fs)
            if spans is None:  # the same rank twice, not spans of one process: not one job
                ok = False
                break
            members += [Member([f.path], rank=r, span=k if len(spans) > 1 else None, worker=f.worker) for k, f in spans]
        if not ok:
            continue
        name = _job_name(cluster, root)
        nspans = max((m.span or 1) for m in members)
        if nspans > 1:
            reason += f"; {nspans} spans per rank (successive profiler cycles of each process)"
        groups.append(FileGroup("job", name, reason, members, world))
        claimed |= {f.path for f in cluster}
    left = [p for p in left if p not in claimed]

    # 2. spans of one worker: tensorboard_trace_handler names, then one process's files
    by_worker: dict[tuple, list[TraceFacts]] = {}
    for p in left:
        f = info[p]
        if f.worker:
            by_worker.setdefault(("tb", str(p.parent), f.worker), []).append(f)
        elif f.pid is not None and f.first_ns is not None:
            by_worker.setdefault(("pid", str(p.parent), f.host, f.pid, f.rank), []).append(f)
    claimed = set()
    for key, fs in sorted(by_worker.items(), key=lambda kv: str(kv[0])):
        if len(fs) < 2:
            continue
        spans = _spans(fs)
        if spans is None:
            continue
        if key[0] == "tb":
            worker = key[2]
            reason = (f"tensorboard_trace_handler names {worker}.<span>.pt.trace.json: {len(spans)} successive spans "
                      "of one worker")
        else:
            worker = f"pid {key[3]}" + (f" on {key[2]}" if key[2] else "")
            reason = (f"one process ({worker}{'' if key[4] is None else f', rank {key[4]}'}) wrote {len(spans)} "
                      "traces that start at different times: successive spans (profiler schedule cycles)")
        name = worker if key[0] == "tb" else relative_name(fs[0].path.parent, root) + f" {worker}"
        members = [Member([f.path], rank=f.rank, span=k, worker=worker) for k, f in spans]
        groups.append(FileGroup("worker", name, reason, members))
        claimed |= {f.path for f in fs}
    left = [p for p in left if p not in claimed]

    # 3. everything else: one file, one run
    for p in left:
        f = info[p]
        why = "a file of its own"
        if f.rank is not None and (f.world_size or 0) >= 2:
            why = f"rank {f.rank} of a {f.world_size}-rank job, but no other rank of that job is here"
        groups.append(FileGroup("single", relative_name(p, root), why, [Member([p], rank=None)]))
    return sorted(groups, key=lambda g: (g.kind != "job", g.kind != "worker", g.name))


def _spans(fs: list[TraceFacts]) -> list[tuple[int, TraceFacts]] | None:
    """Files of one rank/worker as numbered spans, in time order; None when they cannot be spans of one process
    (two files starting at the same time, or from different processes without span names)."""
    if len(fs) == 1:
        return [(1, fs[0])]
    if all(f.span for f in fs) and len({f.worker for f in fs}) == 1:
        order = sorted(fs, key=lambda f: (f.span, str(f.path)))  # the plugin sorts span strings
        return list(enumerate(order, 1))
    procs = {(f.host, f.pid) for f in fs}
    starts = [f.first_ns for f in fs]
    if len(procs) != 1 or None in starts or len(set(starts)) != len(starts):
        return None
    if max(starts) - min(starts) > SPAN_WINDOW_NS:
        return None
    order = sorted(fs, key=lambda f: f.first_ns)
    return list(enumerate(order, 1))


def _job_dir(f: TraceFacts) -> Path:
    """The directory that holds a job's ranks: the file's own, or its parent's when the file sits in a per-rank
    directory (`rank3/trace.json`)."""
    parent = f.path.parent
    return parent.parent if RANK_NAME_RX.search(parent.name) else parent


def _split_by_directory(cluster: list[TraceFacts]) -> list[list[TraceFacts]]:
    """A cluster of files with one backend and world size, split by the directory holding them when it claims a
    rank twice in a way spans cannot explain: two copies of a job (`exp1/`, `exp2/`, recorded within the hour)
    are two jobs, not a pile of single runs. Ranks of one job spread over several directories stay together
    when no rank repeats."""
    per_rank: dict[int | None, list[TraceFacts]] = {}
    for f in cluster:
        per_rank.setdefault(f.rank, []).append(f)
    if all(_spans(fs) is not None for fs in per_rank.values()):
        return [cluster]
    by_dir: dict[Path, list[TraceFacts]] = {}
    for f in cluster:
        by_dir.setdefault(_job_dir(f), []).append(f)
    return [by_dir[d] for d in sorted(by_dir)] if len(by_dir) > 1 else [cluster]


def _time_clusters(fs: list[TraceFacts], window: int) -> list[list[TraceFacts]]:
    """Split files whose first events are more than `window` apart (unknown times join the first cluster)."""
    known = sorted((f for f in fs if f.first_ns is not None), key=lambda f: f.first_ns)
    unknown = [f for f in fs if f.first_ns is None]
    clusters: list[list[TraceFacts]] = []
    for f in known:
        if clusters and f.first_ns - clusters[-1][0].first_ns <= window:
            clusters[-1].append(f)
        else:
            clusters.append([f])
    if unknown:
        if clusters:
            clusters[0].extend(unknown)
        else:
            clusters.append(unknown)
    return clusters


def _span_text(fs: list[TraceFacts]) -> str:
    t = [f.first_ns for f in fs if f.first_ns is not None]
    if len(t) < 2:
        return "an unknown time"
    d = (max(t) - min(t)) / 1e9
    return f"{d:.3g} s" if d >= 1 else f"{d * 1e3:.3g} ms"


def _ranges(values: list[int]) -> str:
    """[0,1,2,3,5] → `0-3,5`."""
    out: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        out.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ",".join(out)


def _common_dir(files: Sequence[Path]) -> str:
    import os

    return os.path.commonpath([str(Path(f).parent) for f in files])


def relative_name(p: Path, root: Path) -> str:
    """`p` named relative to `root` (`root`'s own name for `root` itself), else in full."""
    try:
        r = str(p.relative_to(root))
        return r if r != "." else (root.name or str(root))
    except ValueError:
        return str(p)


def _job_name(cluster: list[TraceFacts], root: Path) -> str:
    parents = {f.path.parent for f in cluster}
    d = Path(_common_dir([f.path for f in cluster])) if len(parents) > 1 else next(iter(parents))
    if len(parents) > 1 and all(RANK_NAME_RX.search(p.name) for p in parents):
        d = d if d not in parents else d.parent
    return relative_name(d, root) if d != root else (root.name or str(root))


@dataclass
class RunGroup:
    """Runs that belong together (a job's ranks, a worker's spans) or a run of its own, and why."""

    kind: str
    name: str
    reason: str
    runs: list[Any] = field(default_factory=list)
    world_size: int | None = None

    @property
    def ranks(self) -> list[int]:
        return sorted({r.rank for r in self.runs if r.rank is not None})

    @property
    def spans(self) -> int:
        return max((r.span or 1) for r in self.runs) if self.runs else 0


def groups_of(runs: Sequence[Any]) -> list[RunGroup]:
    """The runs `find_runs` returned, gathered by the group each belongs to (in the order they come)."""
    out: list[RunGroup] = []
    index: dict[Any, RunGroup] = {}
    for r in runs:
        g = getattr(r, "group", None)
        key = g if g is not None and g.kind != "single" else id(r)
        rg = index.get(key)
        if rg is None:
            if g is None:
                rg = RunGroup("single", r.name, "a run of its own")
            else:
                rg = RunGroup(g.kind, g.name if g.kind != "single" else r.name, g.reason, world_size=g.world_size)
            index[key] = rg
            out.append(rg)
        rg.runs.append(r)
    return out


EVERY_RUN_HINT = "--all compares every run as a rank"
"""How the CLI asks for every run as a rank (`trntui ranks --all`); the app names its own key instead."""


def _job_where(group: RunGroup, path: Path) -> str:
    """`mixed-world: 4 ranks in a/run1` — a job and the directory its runs share, relative to `path`."""
    import os

    roots = [str(Path(r.root)) for r in group.runs if getattr(r, "root", None) is not None]
    try:
        where = Path(os.path.commonpath(roots)) if roots else None
    except ValueError:
        where = None
    if where is not None:
        try:
            where = where.relative_to(path) if path.is_dir() else where
        except ValueError:
            pass
    n = len(group.runs)
    world = f", world size {group.world_size}" if group.world_size else ""
    return f"{group.name}: {n} rank{'s' if n != 1 else ''}{world}" + (f" in {where}" if where is not None else "")


def pick_job(groups: Sequence[RunGroup], path: Path, name: str | None = None, every: bool = False,
             every_hint: str = EVERY_RUN_HINT) -> RunGroup:
    """The job to compare rank by rank: the one named `name`, else the only job under `path`; with `every`,
    every run found as one rank each. A one-line `TrntuiError` when that is ambiguous or there is none, ending
    with `every_hint` (how the shell asking asks for every run as a rank)."""
    from trntui.errors import TrntuiError

    if every:
        runs = [r for g in groups for r in g.runs]
        return RunGroup("job", path.name or str(path), "--all: every run under the path as one rank", runs)
    jobs = [g for g in groups if g.kind == "job"]
    if name is not None:
        chosen = [g for g in jobs if g.name == name]
        if not chosen:
            raise TrntuiError(f"{path}: no job named {name!r} (jobs: {', '.join(g.name for g in jobs) or 'none'})")
        if len(chosen) > 1:  # two jobs of one name (two runs of the same script): never one of them silently
            raise TrntuiError(f"{path}: {len(chosen)} jobs are named {name!r} ({'; '.join(_job_where(g, path) for g in chosen)}); "
                              "give a directory holding only the one you mean as PATH")
        return chosen[0]
    if len(jobs) == 1:
        return jobs[0]
    if len({g.name for g in jobs}) < len(jobs):
        raise TrntuiError(f"{path}: holds {len(jobs)} jobs ({'; '.join(_job_where(g, path) for g in jobs)}); pick one "
                          "with --job NAME, or give a directory holding only the one you mean as PATH")
    if not jobs:
        found = ", ".join(g.name for g in groups[:5]) + (" ..." if len(groups) > 5 else "")
        raise TrntuiError(
            f"{path}: no job with several ranks here ({len(groups)} run{'s' if len(groups) != 1 else ''}: {found}); "
            f"trntui info PATH says why; {every_hint}"
        )
    raise TrntuiError(f"{path}: holds {len(jobs)} jobs ({', '.join(x.name for x in jobs)}); pick one with --job")
