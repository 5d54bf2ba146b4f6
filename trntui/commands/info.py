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
    from trntui.cli import add_merge_option

    add_merge_option(p)
    p.set_defaults(func=run)


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


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

    def rel(p: Path) -> str:
        try:
            r = str(p.relative_to(path))
            return r if r != "." else "."
        except ValueError:
            return str(p)

    doc["groups"] = _groups(path, merge, rel)

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


def _export_note(e: dict[str, Any]) -> str:
    if e.get("error"):
        return f"unreadable: {e['error']}"
    parts = ["Neuron Explorer output"]
    if "events" in e:
        parts.append(f"{e['events']} system events")
    if e.get("schema_version"):
        parts.append(f"schema {e['schema_version']}")
    if e.get("warnings"):
        parts.append(f"{len(e['warnings'])} Explorer warning(s)")
    return ", ".join(parts)


def render_text(doc: dict[str, Any]) -> str:
    from trntui.textsafe import safe_text as st

    out: list[str] = []
    if doc["kind"] == "neuron":
        n = len(doc["sessions"])
        out.append(f"{st(doc['path'])}: Neuron profile, {n} session{'s' if n != 1 else ''} (one per rank/process)")
        for g in doc.get("groups") or []:
            if g["kind"] in ("job", "merged"):
                what = f"job {st(g['name'])}: {len(g['ranks'])} ranks" if g["kind"] == "job" else "merged"
                out.append(f"  grouping: {what} — {st(g['reason'])}")
        m = doc.get("manifest")
        if m and m.get("synthetic"):
            out.append(f"  SYNTHETIC: {st(m.get('note') or 'generated sample, not a hardware capture')}")
        for s in doc["sessions"]:
            out.append("")
            out.append(f"{st(s['name'])}  [{st(s['dir'])}]")
            facts = []
            if s["instance"]:
                facts.append(f"instance {st(s['instance'])}")
            if s["pid"] is not None:
                facts.append(f"pid {s['pid']}")
            if s["rank"] is not None:
                facts.append(f"rank {s['rank']} ({st(s['rank_source'])})")
            if s["timestamp"]:
                facts.append(f"session {st(s['timestamp'])}")
            if facts:
                out.append("  " + ", ".join(facts))
            rows = [(f["path"], human_size(f["size"]), f["kind"], "readable" if f["readable"] else "not read directly", f["note"])
                    for f in s["files"]]
            rows += [(e["path"] + ("/" if e["format"] == "parquet" else ""), human_size(e["size"]), f"{e['format']} export",
                      "not readable" if e.get("error") else "readable", _export_note(e)) for e in s["exports"]]
            if rows:
                out.append("  files:")
                w = max(len(r[0]) for r in rows)
                for r in rows:
                    note = f"  ({st(r[4])})" if r[4] else ""
                    out.append(f"    {st(r[0]).ljust(w)}  {r[1]:>9}  {r[2]:<16} {r[3]}{note}")
            for ntff, neff in s["ntff_neff_pairs"]:
                out.append(f"  pair: {st(ntff)} <-> {st(neff)}")
            if s["reads"]:
                out.append("  trntui reads: " + "; ".join(st(x) for x in s["reads"]))
            else:
                out.append("  trntui reads: nothing yet")
            if s.get("counters"):
                lanes = ", ".join(f"{st(k)} ({v} samples)" for k, v in s["counters"].items())
                out.append(f"  counter lanes (timeline sparklines): {lanes}")
            for e in s["exports"]:
                for w in e.get("warnings") or []:
                    out.append(f"  Explorer warning: {st(w)}")
            for p in s["problems"]:
                out.append(f"  missing/warning: {st(p)}")
        if doc.get("other_traces"):
            out.append("")
            out.append("other traces (not part of a Neuron session): " + ", ".join(st(p) for p in doc["other_traces"]))
        if doc.get("device_profiles"):
            from trntui.device_report import info_lines

            out.append("")
            out += info_lines(doc["device_profiles"])
        return "\n".join(out) + "\n"
    if doc["kind"] == "device":
        from trntui.device_report import info_lines

        n = len(doc["device_profiles"])
        out.append(f"{st(doc['path'])}: {n} Neuron device profile{'s' if n != 1 else ''} (Explorer Parquet)")
        out += info_lines(doc["device_profiles"])
        return "\n".join(out) + "\n"
    if doc["kind"] == "file":
        r = doc["runs"][0]
        return f"{st(doc['path'])}: trace file, {human_size(r['files'][0]['size'])}\n"
    groups = doc.get("groups") or []
    n = len(doc["runs"])
    out.append(f"{st(doc['path'])}: {_count_text(groups, n)} (framework traces only; no Neuron system trace)")
    for g in groups:
        out += _group_lines(g, st)
    return "\n".join(out) + "\n"


def _count_text(groups: list[dict[str, Any]], runs: int) -> str:
    jobs = [g for g in groups if g["kind"] == "job"]
    workers = [g for g in groups if g["kind"] == "worker"]
    singles = [g for g in groups if g["kind"] == "single"]
    parts = []
    if jobs:
        parts.append(f"{len(jobs)} job{'s' if len(jobs) != 1 else ''} ("
                     + ", ".join(f"{len(g['ranks'])} ranks" for g in jobs) + ")")
    if workers:
        parts.append(f"{len(workers)} worker{'s' if len(workers) != 1 else ''} with spans")
    if singles and (jobs or workers):
        parts.append(f"{len(singles)} other run{'s' if len(singles) != 1 else ''}")
    elif len(singles) > 1:
        parts.append("one per trace file")
    if any(g["kind"] == "merged" for g in groups):
        parts.append("1 merged run")
    return f"{runs} run{'s' if runs != 1 else ''}" + (": " + ", ".join(parts) if parts else "")


def _group_lines(g: dict[str, Any], st: Any) -> list[str]:
    def files(r: dict[str, Any]) -> str:
        return ", ".join(f"{st(f['path'])} ({human_size(f['size'])})" for f in r["files"])

    if g["kind"] == "single":
        r = g["runs"][0]
        return [f"  {st(r['name'])}: {files(r)} — {st(g['reason'])}"]
    what = {"job": f"job {st(g['name'])}: {len(g['ranks'])} ranks", "worker": f"worker {st(g['name'])}: {len(g['runs'])} spans",
            "merged": f"merged run {st(g['name'])}"}.get(g["kind"], st(g["name"]))
    out = [f"  {what} — {st(g['reason'])}"]
    for r in g["runs"]:
        out.append(f"    {st(r['name'])}: {files(r)}")
    return out


def run(args: argparse.Namespace) -> int:
    import json

    doc = describe(args.path, merge=args.merge)
    if args.format == "json":
        sys.stdout.write(json.dumps(doc, indent=1, default=str) + "\n")
    else:
        sys.stdout.write(render_text(doc))
    return 0
