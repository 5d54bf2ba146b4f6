"""What a profile directory holds (`trntui info`; the document comes from `commands/info.describe`) as text."""

from __future__ import annotations

from typing import Any

from trntui.report.format import format_bytes
from trntui.textsafe import safe_text as st
from trntui.textsafe import truncate


def _export_note(e: dict[str, Any]) -> str:
    if e.get("error"):
        return f"unreadable: {e['error']}"
    parts = ["Neuron Explorer output"]
    if "events" in e:
        parts.append(f"{e['events']} system events")
    if e.get("schema_version"):
        parts.append(f"schema {truncate(st(e['schema_version']), 40)}")  # (a 5,000-digit version is junk)
    if e.get("warnings"):
        parts.append(f"{len(e['warnings'])} Explorer warning(s)")
    return ", ".join(parts)


def render_text(doc: dict[str, Any]) -> str:
    """The info document as text; directories that could not be read are listed last (they were not
    searched: what they hold is missing from the lines above)."""
    text = _render_text(doc)
    for p in doc.get("unreadable") or []:
        text += f"unreadable: {st(p)} (permission denied; not searched)\n"
    return text


def _render_text(doc: dict[str, Any]) -> str:
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
            rows = [(f["path"], _size(f["size"]), f["kind"], "readable" if f["readable"] else "not read directly", f["note"])
                    for f in s["files"]]
            rows += [(e["path"] + ("/" if e["format"] == "parquet" else ""), _size(e["size"]), f"{e['format']} export",
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
            from trntui.report.device import info_lines

            out.append("")
            out += info_lines(doc["device_profiles"])
        return "\n".join(out) + "\n"
    if doc["kind"] == "device":
        from trntui.report.device import info_lines

        n = len(doc["device_profiles"])
        out.append(f"{st(doc['path'])}: {n} Neuron device profile{'s' if n != 1 else ''} (Explorer Parquet)")
        out += info_lines(doc["device_profiles"])
        return "\n".join(out) + "\n"
    if doc["kind"] == "file":
        r = doc["runs"][0]
        return f"{st(doc['path'])}: trace file, {_size(r['files'][0]['size'])}\n"
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
        return ", ".join(f"{st(f['path'])} ({_size(f['size'])})" for f in r["files"])

    if g["kind"] == "single":
        r = g["runs"][0]
        return [f"  {st(r['name'])}: {files(r)} — {st(g['reason'])}"]
    what = {"job": f"job {st(g['name'])}: {len(g['ranks'])} ranks", "worker": f"worker {st(g['name'])}: {len(g['runs'])} spans",
            "merged": f"merged run {st(g['name'])}"}.get(g["kind"], st(g["name"]))
    out = [f"  {what} — {st(g['reason'])}"]
    for r in g["runs"]:
        out.append(f"    {st(r['name'])}: {files(r)}")
    return out


def _size(n: int) -> str:
    return format_bytes(n, decimals=1)
