"""`trntui info PATH`: what a profile directory holds — ranks, files, sizes, what trntui can read, what is missing.

Reads only directory listings and file heads (no trace is loaded), so it is instant on large captures.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "info",
        help="list what a profile directory holds (ranks, files, readable or not, what is missing)",
        description="Describe a trace file or profile directory without loading it: Neuron sessions (one per "
        "rank), framework traces, system traces, Explorer exports, NEFF/NTFF pairs, and what is missing.",
    )
    p.add_argument("path", help="trace file or profile directory")
    p.add_argument("--format", choices=("text", "json"), default="text")
    from trntui.commands.options import add_merge_option

    add_merge_option(p)
    p.set_defaults(func=run)


def _groups(path: Any, merge: bool, rel: Any) -> list[dict[str, Any]]:
    """The grouping `find_runs` uses (what a run is, and why): jobs of ranks, workers' spans, runs of their own."""
    from trntui.errors import LoadError
    from trntui.loaders.grouping import groups_of
    from trntui.session import find_runs

    try:
        groups = groups_of(find_runs(path, merge=merge))
    except LoadError:
        return []
    out = []
    for g in groups:
        out.append({
            "kind": g.kind,
            "name": g.name,
            "reason": g.reason,
            "ranks": g.ranks,
            "runs": [{"name": r.name, "rank": r.rank, "span": r.span,
                      "files": [{"path": rel(f), "size": f.stat().st_size if f.exists() else 0} for f in r.framework_traces]}
                     for r in g.runs],
        })
    return out


def describe(path_str: str, merge: bool = False) -> dict[str, Any]:
    from pathlib import Path

    from trntui.errors import LoadError
    from trntui.session import find_runs
    from trntui.loaders.neuron.convert import cached_export, find_tool, manual_command
    from trntui.loaders.neuron.discover import scan

    path = Path(path_str)
    if not path.exists():
        raise LoadError(path, "no such file or directory")
    doc: dict[str, Any] = {"path": str(path), "kind": "generic", "sessions": [], "runs": []}
    if path.is_file():
        doc["kind"] = "file"
        doc["runs"] = [{"name": path.name, "files": [{"path": path.name, "size": path.stat().st_size}]}]
        return doc

    from trntui.loaders.discover import unreadable_dirs

    blocked = unreadable_dirs(path)
    if blocked and blocked[0] == path:
        raise LoadError(path, "cannot read this directory (permission denied)")

    def rel(p: Path) -> str:
        try:
            r = str(p.relative_to(path))
            return r if r != "." else "."
        except ValueError:
            return str(p)

    doc["groups"] = _groups(path, merge, rel)
    if blocked:
        doc["unreadable"] = [rel(p) for p in blocked]

    from trntui.loaders.neuron_device import describe_device, device_profiles_of

    devices = [describe_device(r.path, r.identity) for r in device_profiles_of(path)]
    layout = scan(path)
    if devices and not layout.is_neuron:
        return {"path": str(path), "kind": "device", "device_profiles": devices}
    if devices:
        doc["device_profiles"] = devices
    tool = find_tool()
    doc["converter"] = tool[1] if tool else None
    if layout.is_neuron:
        doc["kind"] = "neuron"
        from trntui.loaders.neuron.doctor import examine

        doc["capture_problems"] = [{"where": f.where, "problem": f.problem, "blocking": f.blocking}
                                   for f in examine(layout, rel)]
        for s in layout.sessions:
            entry: dict[str, Any] = {
                "name": s.name,
                "dir": rel(s.dir),
                "instance": s.instance or None,
                "pid": s.pid,
                "rank": s.rank,
                "rank_source": s.rank_source or None,
                "timestamp": s.timestamp or None,
                "files": [
                    {"path": rel(f.path), "kind": f.kind, "size": f.size, "readable": f.readable, "note": f.note}
                    for f in s.files
                ],
                "exports": [_export_entry(e, rel) for e in s.exports],
                "ntff_neff_pairs": [list(p) for p in s.pairs],
                "problems": list(s.problems),
            }
            reads = [f"{rel(p)} (framework trace)" for p in s.framework]
            if s.exports:
                e = s.exports[0]
                reads.append(f"{rel(e.path)} (Explorer {e.format} export: {_export_reads(entry['exports'][0], bool(s.framework))})")
                fw_rows = (entry["exports"][0].get("sources") or {}).get("framework", 0)
                if fw_rows and not s.framework:
                    entry["problems"] = [
                        f"no trace.json: the ops are the export's {fw_rows} framework rows (Explorer's copies of the "
                        "framework events: no input shapes, stacks or args)"
                        if p.startswith("no framework trace (trace.json)") else p
                        for p in entry["problems"]
                    ]
                counters = entry["exports"][0].get("counters") or {}
                if counters:
                    entry["counters"] = counters
            elif s.raw:
                hit = cached_export(s.dir)
                if hit:
                    reads.append(f"{hit[0]} (cached conversion of the raw files)")
                elif tool:
                    reads.append(f"raw files, converted on open with {tool[0]} into the trntui cache")
                else:
                    entry["convert_command"] = manual_command(s.dir)
                    entry["problems"].append(
                        "only raw .pb/.ntff system/device files and neuron-explorer is not installed here; run on the "
                        f"Trn host: {manual_command(s.dir)}"
                    )
            entry["reads"] = reads
            doc["sessions"].append(entry)
        doc["other_traces"] = [rel(p) for p in layout.other_traces]
        manifest = None
        runs = []
        try:
            runs = find_runs(path)
        except LoadError:
            pass
        for r in runs:
            if r.manifest:
                manifest = r.manifest
                break
        if manifest:
            doc["manifest"] = {k: manifest.get(k) for k in ("variant", "label", "synthetic", "note") if k in manifest}
        return doc
    runs = find_runs(path, merge=merge)
    for r in runs:
        doc["runs"].append(
            {
                "name": r.name,
                "dir": rel(r.root),
                "files": [{"path": rel(p), "size": p.stat().st_size} for p in r.framework_traces],
                "synthetic": bool(r.manifest.get("synthetic")) if r.manifest else False,
            }
        )
    return doc


def _export_entry(e: Any, rel: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"path": rel(e.path), "format": e.format, "size": e.size}
    if e.format == "parquet":
        from trntui.loaders.neuron.parquet import describe_export

        entry.update(describe_export(e.path))
    return entry


def _export_reads(e: dict[str, Any], with_trace: bool) -> str:
    """What trntui takes from an export, from the row counts per source."""
    src = e.get("sources") or {}
    if not src:
        return "runtime + hardware rows"
    parts = []
    fw = src.get("framework", 0)
    if fw:
        parts.append(f"{fw} framework rows ("
                     + ("Explorer's copies, merged into trace.json's rows" if with_trace else "the ops: no trace.json") + ")")
    if src.get("neuron_rt"):
        parts.append(f"{src['neuron_rt']} runtime rows")
    if src.get("neuron_hw"):
        parts.append(f"{src['neuron_hw']} hardware rows")
    other = sum(v for k, v in src.items() if k not in ("framework", "neuron_rt", "neuron_hw"))
    if other:
        parts.append(f"{other} other rows")
    return ", ".join(parts)


def nothing_to_read(doc: dict[str, Any]) -> str | None:
    """Why a directory holds nothing trntui could read (from the listing and sizes alone), or None. Readable: a
    framework trace that is not empty, an Explorer export that opens, raw system/device files (neuron-explorer
    converts them, here or on the Trn host), a device profile. Listed but not counted: empty files, empty session
    directories, exports that do not open."""
    kind = doc["kind"]
    if kind in ("file", "device") or doc.get("device_profiles") or doc.get("other_traces"):
        return None
    if kind == "neuron":
        sessions = doc["sessions"]
        for s in sessions:
            if any(f["size"] > 0 and f["kind"] in ("framework trace", "system trace", "ntff") for f in s["files"]):
                return None
            if any(not e.get("error") for e in s["exports"]):
                return None
        first = sessions[0] if sessions else None
        if first is None:
            return "a Neuron profile without sessions"
        broken = [e for e in first["exports"] if e.get("error")]
        why = (f"{broken[0]['path']}: unreadable: {broken[0]['error']}" if broken
               else f"{first['dir']}: {(first['problems'] or ['no files'])[0]}")
        n = len(sessions)
        return (f"nothing trntui can read: {n} Neuron session{'s' if n != 1 else ''} without a readable trace, "
                f"export or raw system/device file ({why})")
    files = [f for r in doc["runs"] for f in r["files"]]
    if files and all(f["size"] == 0 for f in files):
        return f"nothing trntui can read: only empty trace files ({', '.join(f['path'] for f in files[:3])}{', …' if len(files) > 3 else ''})"
    return None


def run(args: argparse.Namespace) -> int:
    import json

    from trntui.errors import LoadError
    from trntui.report.info import render_text
    from trntui.textsafe import safe_text

    doc = describe(args.path, merge=args.merge)
    blocking = [p for p in doc.get("capture_problems") or [] if p["blocking"]]
    why = nothing_to_read(doc) if not blocking else None
    if why is not None:
        raise LoadError(args.path, why)
    if args.format == "json":
        sys.stdout.write(json.dumps(doc, indent=1, default=str) + "\n")
    else:
        sys.stdout.write(render_text(doc))
        problems = doc.get("capture_problems") or []
        if problems:
            sys.stdout.write("\nCapture problems (Neuron Explorer's documented requirements):\n")
            sys.stdout.write("".join(f"  problem: {safe_text(p['where'])}: {safe_text(p['problem'])}\n" for p in problems))
    return 1 if blocking else 0
