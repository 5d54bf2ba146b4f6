"""A Neuron session as a `Run`: `NeuronSource` (what the run reads besides its framework trace, plain data),
torch-neuronx's mapping files, the capture manifest, `find_neuron_runs` and the grouping of one capture's
sessions into the ranks of a job."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trntui.errors import LoadError
from trntui.loaders.discover import Run, capture_order, read_manifest
from trntui.loaders.neuron.discover.layout import Layout, Session, _under
from trntui.loaders.neuron.discover.scan import scan


def _manifest_for(s: Session, root: Path) -> dict[str, Any]:
    d = s.dir
    while True:
        m = read_manifest(d)
        if m:
            return m
        if d == root or d.parent == d or not _under(d, root):
            return {}
        d = d.parent


@dataclass
class NeuronSource:
    """What a Neuron run reads besides its framework trace (plain data, so a `Run` pickles)."""

    session_dir: Path
    pid: int | None = None
    instance: str = ""
    export: Path | None = None
    """The session's Explorer export (a Parquet directory or a JSON file), when there is one."""
    export_format: str = ""
    """"parquet" | "json" ("" without an export)."""
    raw: bool = False
    """No export but raw `.pb` / `.ntff` files: converted with neuron-explorer when the run is loaded."""
    mappings: list[Path] = field(default_factory=list)
    """torch-neuronx `framework_mapping_*.json` files."""
    notes: list[str] = field(default_factory=list)
    """Problems of the session shown with the profile (missing NEFFs, empty NTFFs)."""

    @property
    def extra(self) -> bool:
        """Reads anything besides the framework trace (else the run loads like a plain Kineto run)."""
        return bool(self.export or self.raw or self.mappings or self.notes)


def read_mapping(path: Path) -> list[tuple[int, int, int, int]]:
    """torch-neuronx's `framework_mapping_<ts>.json`: (nrta_seq_id, seq_nr, th_id, stream_id) rows."""
    import json

    from trntui.loaders.neuron.system import to_int

    from trntui import fsio

    try:
        doc = json.loads(fsio.read_bounded(path, 1 << 30).decode("utf-8", "replace"))
    except (OSError, ValueError, LoadError, RecursionError):
        return []
    out = []
    for item in (doc.get("data") or []) if isinstance(doc, dict) else []:
        if not isinstance(item, dict):
            continue
        seq = to_int(item.get("nrta_seq_id"))
        for op in item.get("framework_op_exec_ids") or []:
            if isinstance(op, dict) and seq >= 0:
                out.append((seq, to_int(op.get("seq_nr")), to_int(op.get("th_id")), to_int(op.get("stream_id"))))
    return out


def run_for(s: Session, root: Path) -> Run:
    source = NeuronSource(session_dir=s.dir, pid=s.pid, instance=s.instance)
    if s.exports:
        source.export, source.export_format = s.exports[0].path, s.exports[0].format
    elif s.raw:
        source.raw = True
    source.mappings = [f.path for f in s.files if f.kind == "mapping"]
    notes = [p for p in s.problems if "NEFF" in p or "empty" in p]
    source.notes = list(notes)
    return Run(name=s.name or s.label, root=s.dir, framework_traces=list(s.framework), manifest=_manifest_for(s, root),
               notes=notes, format="neuron", source=source)


def find_neuron_runs(path: Path) -> list[Run]:
    """One Run per Neuron session under `path` (plus ordinary runs for unrelated traces); [] if not Neuron."""
    path = Path(path)
    if not path.is_dir():
        return []
    layout = scan(path)
    if not layout.is_neuron:
        return []
    runs = []
    for s in layout.sessions:
        run = run_for(s, path)
        run.rank = s.rank
        if run.manifest.get("complete") is False:
            continue
        runs.append(run)
    _group_sessions(runs, layout, path)
    runs = sorted(runs, key=capture_order)  # the order the capture ran them (manifest), then by name
    # unrelated chrome traces keep working (e.g. sample_profiles/ with CUDA and Neuron samples side by side)
    if layout.other_traces:
        from trntui.loaders.kineto.discover import kineto_runs

        runs += kineto_runs(sorted(layout.other_traces), path)
    return runs


def _group_sessions(runs: list[Run], layout: Layout, root: Path) -> None:
    """Sessions of one capture root with distinct ranks are the ranks of one job; any other is a run of its own."""
    from trntui.loaders.discover import Group

    by_root: dict[Path, list[tuple[Session, Run]]] = {}
    sessions = {str(s.dir): s for s in layout.sessions}
    for r in runs:
        s = sessions[str(r.root)]
        by_root.setdefault((s.pid_dir or s.dir).parent, []).append((s, r))
    for capture_root, members in by_root.items():
        ranks = [r.rank for _, r in members]
        if len(members) >= 2 and None not in ranks and len(set(ranks)) == len(ranks):
            try:
                rel = str(capture_root.relative_to(root))
            except ValueError:
                rel = str(capture_root)
            name = rel if rel != "." else (root.name or str(root))
            sources = sorted({s.rank_source for s, _ in members if s.rank_source})
            group = Group("job", name, "Neuron capture: one <instance>_pid_<pid> session directory per process; ranks "
                          "from " + "; ".join(sources[:3]))
            for _, r in members:
                r.group = group
        else:
            for s, r in members:
                r.rank = None
                r.group = Group("single", r.name, "one Neuron capture session")
