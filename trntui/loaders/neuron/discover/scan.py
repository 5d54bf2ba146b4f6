"""Walking a directory into a `Layout`: the classified files (depth-limited, regular files only), the exports,
the sessions and the framework traces, exports and mapping files they take, their ranks and names, and what is
missing or suspicious in each (reported by `trntui info`, never fatal)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

from trntui.loaders.neuron.discover.layout import (
    MAX_DEPTH,
    NEFF_CACHE_DIR,
    NEFF_RX,
    NTFF_RX,
    SESSION_RX,
    Export,
    FileInfo,
    Layout,
    Session,
    _framework_rank,
    _pick_framework,
    _trace_pid,
    _under,
    classify,
)


def _walk(root: Path) -> dict[Path, list[FileInfo]]:
    """Directory → classified files, depth-limited, hidden directories skipped."""
    out: dict[Path, list[FileInfo]] = {}
    base = len(root.parts)
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        if len(d.parts) - base >= MAX_DEPTH:
            dirnames[:] = []
        dirnames[:] = sorted(x for x in dirnames if not x.startswith("."))
        infos = []
        for fn in sorted(filenames):
            p = d / fn
            try:
                st = p.stat()
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):  # FIFOs, sockets, devices: never opened
                continue
            info = classify(p, st.st_size)
            if info is not None:
                infos.append(info)
        out[d] = infos
    return out


def _session_files(infos: list[FileInfo]) -> bool:
    return any(f.kind in ("system trace", "host samples", "ntff", "neff", "framework trace", "mapping") for f in infos)

def scan(path: Path) -> Layout:
    """Everything Neuron-related under `path` (a directory)."""
    root = path
    tree = _walk(root)
    layout = Layout(root=root)

    # exports: Parquet directories and JSON export files
    for d, infos in tree.items():
        if any(f.kind == "parquet table" and re.fullmatch(r"SystemProfileEvents(_\d+)?\.parquet", f.path.name) for f in infos):
            layout.exports.append(Export(d, "parquet", sum(f.size for f in infos if f.kind == "parquet table")))
        for f in infos:
            if f.kind == "json export":
                layout.exports.append(Export(f.path, "json", f.size))
    export_dirs = {e.path for e in layout.exports if e.format == "parquet"}

    # sessions
    sessions: list[Session] = []
    pid_dirs: list[Path] = []
    candidates = [root] + list(tree)
    seen_pid: set[Path] = set()
    for d in candidates:
        m = SESSION_RX.fullmatch(d.name)
        if not m or d in seen_pid or not d.is_dir():
            continue
        seen_pid.add(d)
        pid_dirs.append(d)
        inst, pid = m.group("inst"), int(m.group("pid"))
        leaves = []
        for sub in sorted(p for p in tree if p.parent == d and p not in export_dirs):
            if _session_files(tree.get(sub, [])):
                leaves.append((sub, sub.name))
        own = tree.get(d, [])
        # the _pid_ dir is a session itself unless all it holds is the framework trace of its <timestamp> session
        if _session_files(own) and (
            not leaves or any(f.kind not in ("framework trace", "mapping") for f in own if _session_files([f]))
        ):
            leaves.insert(0, (d, ""))
        if not leaves:
            s = Session(dir=d, instance=inst, pid=pid, pid_dir=d)
            s.problems.append("empty directory: no trace, system trace or device trace files")
            sessions.append(s)
            continue
        for leaf, ts in leaves:
            sessions.append(Session(dir=leaf, instance=inst, pid=pid, timestamp=ts, pid_dir=d))
    # the path itself is a <timestamp> dir of a _pid_ dir
    if not sessions and root.parent != root:
        m = SESSION_RX.fullmatch(root.parent.name)
        if m and _session_files(tree.get(root, [])):
            sessions.append(Session(dir=root, instance=m.group("inst"), pid=int(m.group("pid")), timestamp=root.name, pid_dir=root.parent))
    # raw Neuron files outside any _pid_ dir (renamed directories, `neuron-explorer capture` output)
    claimed = [s.pid_dir or s.dir for s in sessions]
    for d, infos in tree.items():
        if any(_under(d, c) for c in claimed):
            continue
        if any(f.kind in ("system trace", "ntff") for f in infos):
            sessions.append(Session(dir=d))
            claimed.append(d)
    # exports without any capture directory: their framework traces' directories, else the export itself
    if not sessions and layout.exports:
        trace_dirs = sorted({d for d, infos in tree.items() if any(f.kind == "framework trace" for f in infos)})
        for d in trace_dirs:
            sessions.append(Session(dir=d))
        if not sessions:
            for e in layout.exports:
                sessions.append(Session(dir=e.path if e.format == "parquet" else e.path.parent))
    if not sessions:
        return layout

    # files per session (the leaf, plus framework traces / mappings in the _pid_ parent when the leaf has none)
    for s in sessions:
        s.files = [f for f in tree.get(s.dir, []) if f.kind not in ("parquet table", "json export")]
        if s.pid_dir and s.dir != s.pid_dir:
            siblings = [x for x in sessions if x.pid_dir == s.pid_dir]
            if len(siblings) == 1:
                s.files += [f for f in tree.get(s.pid_dir, []) if f.kind in ("framework trace", "mapping")]
        fw = [f.path for f in s.files if f.kind == "framework trace"]
        s.framework = _pick_framework(fw)
        for f in s.files:
            if f.kind == "framework trace" and f.path not in s.framework:
                f.note = "not loaded: another framework trace of this session was preferred"
        # vLLM: neuron_profiles/neffs/ beside the _pid_ dirs; trntui profile: the NEFF cache it pointed
        # torch-neuronx at (<variant>/neff_cache/, nested compiler-cache directories)
        capture_root = (s.pid_dir or s.dir).parent
        for sibling in ("neffs", NEFF_CACHE_DIR):
            neffs = capture_root / sibling
            if neffs.is_dir() and not _under(s.dir, neffs):
                s.neff_dirs.append(neffs)
                s.files += [f for d, infos in tree.items() if _under(d, neffs) for f in infos if f.kind == "neff"]

    _attach_parent_traces(sessions, tree)

    _attach_exports(layout, sessions, tree)
    _ranks_and_names(root, sessions)
    for s in sessions:
        _check(s)

    # chrome traces that belong to no session
    session_dirs = [s.pid_dir or s.dir for s in sessions]
    for d, infos in tree.items():
        for f in infos:
            if f.kind != "framework trace":
                continue
            if any(_under(f.path, sd) for sd in session_dirs) or any(f.path in s.framework for s in sessions):
                continue
            layout.other_traces.append(f.path)
    layout.sessions = sorted(sessions, key=lambda s: s.name)
    return layout


def _attach_parent_traces(sessions: list[Session], tree: dict[Path, list[FileInfo]]) -> None:
    """torch-neuronx's unified NeuronProfiler writes `pytorch_trace.json` and `framework_mapping_*.json` into
    its output directory and NRT its `<instance>_pid_<pid>/` beside them: a session without a framework trace
    takes the one in its `_pid_` directory's parent (the only session there, else the one whose pid the trace
    names)."""
    by_parent: dict[Path, list[Session]] = {}
    for s in sessions:
        if s.pid_dir is not None and not s.framework:
            by_parent.setdefault(s.pid_dir.parent, []).append(s)
    for parent, members in by_parent.items():
        infos = tree.get(parent, [])
        traces = [f for f in infos if f.kind == "framework trace"]
        if not traces:
            continue
        if len(members) > 1:
            chosen = {}
            for f in traces:
                pid = _trace_pid(f.path)
                owner = [m for m in members if pid is not None and m.pid == pid]
                if owner:
                    chosen.setdefault(id(owner[0]), (owner[0], []))[1].append(f)
            pairs = list(chosen.values())
        else:
            pairs = [(members[0], traces)]
        for s, found in pairs:
            s.files += found + [f for f in infos if f.kind == "mapping"]
            s.framework = _pick_framework([f.path for f in found])
            for f in found:
                if f.path not in s.framework:
                    f.note = "not loaded: another framework trace of this session was preferred"

def _export_pids(e: Export) -> set[int]:
    """process ids in an export (Parquet: one column read; JSON: skipped when large)."""
    try:
        if e.format == "parquet":
            import pyarrow.parquet as pq

            from trntui.loaders.neuron.parquet import EVENTS, table_files

            out: set[int] = set()
            for f in table_files(e.path, EVENTS):
                t = pq.read_table(f, columns=["process_id"])
                out |= {int(v) for v in t.column(0).to_pylist() if v is not None and str(v).strip().lstrip("-").isdigit()}
            return out
        if e.size < 64 * 1024 * 1024:
            from trntui.loaders.neuron.json_export import read_json_rows

            rows, _ = read_json_rows(e.path)
            return {int(p) for p in set(rows.pid.tolist()) if p >= 0}
    except Exception:  # noqa: BLE001 - discovery never fails on an unreadable export (loading reports it)
        return set()
    return set()


def _attach_exports(layout: Layout, sessions: list[Session], tree: dict[Path, list[FileInfo]]) -> None:
    loose: list[Export] = []
    for e in layout.exports:
        owner = [s for s in sessions if _under(e.path, s.dir) and s.dir != e.path]
        if not owner:
            owner = [s for s in sessions if s.pid_dir and _under(e.path, s.pid_dir)]
        if not owner:
            # the export *is* the session (no capture directory)
            owner = [s for s in sessions if s.dir == e.path]
        if owner:
            for s in owner:
                s.exports.append(e)
        else:
            loose.append(e)
    if not loose:
        return
    if len(loose) == 1:
        for s in sessions:
            if not s.exports:
                s.exports.append(loose[0])
        return
    pids = {id(e): _export_pids(e) for e in loose}
    for s in sessions:
        if s.exports:
            continue
        match = [e for e in loose if s.pid is not None and s.pid in pids[id(e)]]
        if not match:
            # nearest by path: the longest shared prefix
            match = [max(loose, key=lambda e: len(os.path.commonpath([str(e.path), str(s.dir)])))]
        s.exports.append(match[0])


def _ranks_and_names(root: Path, sessions: list[Session]) -> None:
    for s in sessions:
        for p in s.framework:
            r = _framework_rank(p)
            if r is not None:
                s.rank, s.rank_source = r, p.name
                break
        if s.rank is None:
            for f in s.files:
                m = NTFF_RX.fullmatch(f.path.name) if f.kind == "ntff" else None
                if m and m.group("rank"):
                    s.rank, s.rank_source = int(m.group("rank")), f.path.name
                    break
    groups: dict[Path, list[Session]] = {}
    for s in sessions:
        groups.setdefault((s.pid_dir or s.dir).parent, []).append(s)
    many_roots = len(groups) > 1
    for capture_root, members in groups.items():
        members.sort(key=lambda s: (s.pid if s.pid is not None else 1 << 62, str(s.dir)))
        taken = {s.rank for s in members if s.rank is not None}
        nxt = 0
        for s in members:
            if s.rank is None and s.pid is not None:
                while nxt in taken:
                    nxt += 1
                s.rank, s.rank_source = nxt, "process-id order; no rank recorded"
                taken.add(nxt)
        pid_count: dict[Any, int] = {}
        for s in members:
            pid_count[s.pid_dir] = pid_count.get(s.pid_dir, 0) + 1
        for s in members:
            if s.rank is not None:
                name = f"rank{s.rank} ({s.label})"
            else:
                name = s.label
            if s.timestamp and pid_count.get(s.pid_dir, 0) > 1:
                name += f" {s.timestamp}"
            if many_roots:
                try:
                    rel = capture_root.relative_to(root)
                    prefix = str(rel) if str(rel) != "." else root.name
                except ValueError:
                    prefix = capture_root.name
                name = f"{prefix}: {name}"
            s.name = name
    names: dict[str, int] = {}
    for s in sessions:
        names[s.name] = names.get(s.name, 0) + 1
    for s in sessions:
        if names[s.name] > 1:
            s.name = f"{s.name} [{s.dir.name}]"


def _check(s: Session) -> None:
    """What is missing or suspicious (reported by `trntui info`, never fatal)."""
    kinds = {f.kind for f in s.files}
    names = {f.path.name for f in s.files}
    if "ntrace.pb" in names and "trace_info.pb" not in names:
        s.problems.append("ntrace.pb without trace_info.pb: Neuron Explorer needs both to process the system trace")
    if "system trace" in kinds and "ntff" not in kinds:
        s.problems.append("system trace only (no .ntff): no device profile was captured (may be intended)")
    if not s.framework:
        s.problems.append(
            "no framework trace (trace.json): only runtime/hardware rows, no framework → runtime links "
            "(with env-var capture Explorer cannot link them either)"
        )
    if not s.exports and not s.raw and s.framework:
        s.problems.append("no Neuron system trace (ntrace.pb) or Explorer export: framework rows only")
    if s.exports and "system trace" not in kinds:
        s.problems.append("raw system-trace files (ntrace.pb, trace_info.pb) are not here; the Explorer export is used")
    neffs: dict[str, str] = {}
    for f in s.files:
        if f.kind == "neff":
            m = NEFF_RX.fullmatch(f.path.name)
            if m:
                neffs[m.group("hash") or m.group("graph")] = f.path.name
    session_mode = False
    for f in s.files:
        if f.kind != "ntff":
            continue
        if f.size == 0:
            s.problems.append(f"{f.path.name} is empty (0 bytes): no execution captured or the core was unused")
        m = NTFF_RX.fullmatch(f.path.name)
        h = (m.group("hash") or m.group("hash2")) if m else None
        if h:
            if h in neffs:
                s.pairs.append((f.path.name, neffs[h]))
            else:
                s.problems.append(
                    f"{f.path.name}: NEFF neff_{h}.neff is missing (left in the compiler's neff_cache under the system "
                    "temp directory; set NeuronConfig(neff_cache_dir=...) or TORCH_NEURONX_NEFF_CACHE_DIR to copy it)"
                )
        elif m and m.group("session"):
            session_mode = True
    if session_mode and not neffs:
        s.problems.append(
            "session-mode NTFFs but no .neff: the NEFFs were left in the compiler's neff_cache under the system temp "
            "directory (set neff_cache_dir / TORCH_NEURONX_NEFF_CACHE_DIR so they are copied into the profile)"
        )
    if s.exports and len({e.path for e in s.exports}) > 1:
        s.problems.append("several Explorer exports match this session; loading the first")
