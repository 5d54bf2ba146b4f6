"""What a Neuron file and a capture session are: the name patterns of the layouts (neuron-formats.md §3),
`FileInfo`, `Export`, `Session`, `Layout`, classifying one file, and the cheap looks at a trace's head (its
rank, its process id) that pairing sessions with traces uses."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from trntui.errors import LoadError
from trntui.loaders.discover import MANIFEST
from trntui.loaders.kineto.discover import is_chrome_trace

SESSION_RX = re.compile(r"(?P<inst>i-[0-9a-f]+|[A-Za-z0-9][A-Za-z0-9.-]*?)_pid_(?P<pid>\d+)")
RANK_TRACE_RX = re.compile(r"neuron_framework_trace_rank_(\d+)\.json(\.gz)?")
NEFF_RX = re.compile(r"neff_(?P<hash>[0-9A-Za-z]+)(?:_vnc_(?P<vnc>\d+))?\.neff|graph_(?P<graph>[0-9A-Za-z]+)\.neff")
"""NEFF names; the hash is usually a number but need not be (a NEFF is any `*.neff`)."""
NTFF_RX = re.compile(
    r"(?P<hash>[0-9A-Za-z]+)_instid_(?P<inst>\d+)_vnc_(?P<vnc>\d+)\.ntff"
    r"|(?P<hash2>[0-9A-Za-z]+)_vnc_(?P<vnc2>\d+)\.ntff"
    r"|profile_nc_(?P<nc>\d+)_session_(?P<session>\d+)\.ntff"
    r"|profile(?:_rank_(?P<rank>\d+)|_exec_(?P<exec>\d+))?\.ntff"
)
NEFF_CACHE_DIR = "neff_cache"
"""Where `trntui profile` points torch-neuronx's NEFF cache inside a variant (trntui/capture/neuron.py)."""
MAPPING_RX = re.compile(r"framework_mapping_\d{8}_\d{6}_\d{3}\.json")
PB_FILES = {"ntrace.pb": "system trace", "trace_info.pb": "system trace metadata", "cpu_util.pb": "host CPU samples",
            "host_mem.pb": "host memory samples"}
FRAMEWORK_PRIORITY = ("trace.json", "trace.json.gz", "neuron_framework_trace_rank_", "pytorch_trace.json", "neuron_trace.json")
MAX_DEPTH = 8

CONVERT_HINT = "neuron-explorer view -d {dir} --output-format parquet --output-file {out}"


@dataclass
class FileInfo:
    path: Path
    kind: str
    """framework trace | system trace | ... | parquet export | json export | neff | ntff | mapping | other."""
    size: int
    readable: bool
    """Whether trntui reads it directly (protobuf / NTFF / NEFF need a conversion)."""
    note: str = ""


@dataclass
class Export:
    path: Path
    format: str  # "parquet" | "json"
    size: int = 0


@dataclass
class Session:
    """One capture session: a `<instance>_pid_<pid>[/<timestamp>]` directory (or a directory of Neuron files)."""

    dir: Path
    instance: str = ""
    pid: int | None = None
    timestamp: str = ""
    pid_dir: Path | None = None
    files: list[FileInfo] = field(default_factory=list)
    framework: list[Path] = field(default_factory=list)
    exports: list[Export] = field(default_factory=list)
    neff_dirs: list[Path] = field(default_factory=list)
    rank: int | None = None
    rank_source: str = ""
    name: str = ""
    problems: list[str] = field(default_factory=list)
    pairs: list[tuple[str, str]] = field(default_factory=list)
    """(NTFF name, NEFF name) pairs matched by the shared numeric hash."""

    def has(self, kind: str) -> bool:
        return any(f.kind == kind for f in self.files)

    @property
    def raw(self) -> bool:
        """Holds protobuf system-trace or NTFF files (needs a conversion to be read)."""
        return any(f.kind in ("system trace", "ntff") for f in self.files)

    @property
    def label(self) -> str:
        if self.instance and self.pid is not None:
            return f"{self.instance}_pid_{self.pid}"
        return self.dir.name


@dataclass
class Layout:
    root: Path
    sessions: list[Session] = field(default_factory=list)
    exports: list[Export] = field(default_factory=list)
    other_traces: list[Path] = field(default_factory=list)
    """Chrome traces outside every Neuron session (loaded as ordinary runs)."""
    problems: list[str] = field(default_factory=list)

    @property
    def is_neuron(self) -> bool:
        return bool(self.sessions)


def classify(path: Path, size: int) -> FileInfo | None:
    from trntui.loaders.neuron.json_export import looks_like_export

    name = path.name
    if name in PB_FILES:
        return FileInfo(path, "system trace" if name in ("ntrace.pb", "trace_info.pb") else "host samples", size, False,
                        PB_FILES[name] + " (protobuf, needs neuron-explorer)")
    if name.endswith(".ntff"):
        note = "empty: no execution captured or core unused" if size == 0 else "device trace (needs neuron-explorer)"
        return FileInfo(path, "ntff", size, False, note)
    if name.endswith(".neff"):
        return FileInfo(path, "neff", size, False, "compiled executable (needed to read an NTFF)")
    if name.endswith(".pftrace"):
        return FileInfo(path, "other", size, False, "Perfetto export (not read; use Parquet)")
    if name.endswith(".parquet"):
        return FileInfo(path, "parquet table", size, True)
    if MAPPING_RX.fullmatch(name):
        return FileInfo(path, "mapping", size, True, "torch-neuronx sequence-id mapping")
    if name == MANIFEST:
        return None
    if name.endswith((".json", ".json.gz")):
        if name.startswith("device_profile_model_") or name.endswith("_session_0.json"):
            return FileInfo(path, "other", size, False, "device-profile JSON (not read)")
        if not name.endswith(".gz") and looks_like_export(path):
            return FileInfo(path, "json export", size, True, "Explorer JSON system export")
        if is_chrome_trace(path):
            return FileInfo(path, "framework trace", size, True, "Kineto chrome trace")
    return None


def _plain_head(path: Path) -> bytes | None:
    """The first 64 KiB of a plain (not gzip) trace, for cheap looks at its header; None if gzip or unreadable."""
    if path.name.endswith(".gz"):
        return None
    from trntui import fsio

    try:
        with fsio.open_regular(path) as fh:
            return fh.read(65536)
    except (OSError, LoadError):
        return None


def _framework_rank(path: Path) -> int | None:
    m = RANK_TRACE_RX.fullmatch(path.name)
    if m:
        return int(m.group(1))
    head = _plain_head(path)
    if head is None:
        return None
    m = re.search(rb'"distributedInfo"\s*:\s*\{[^{}]*?"rank"\s*:\s*"?(\d+)', head)
    return int(m.group(1)) if m else None


def _pick_framework(paths: list[Path]) -> list[Path]:
    """The framework trace to load when a session has several (one capture writes one; the rest are copies)."""
    if len(paths) <= 1:
        return list(paths)
    for prefix in FRAMEWORK_PRIORITY:
        for p in sorted(paths):
            if p.name.startswith(prefix) if prefix.endswith("_") else p.name == prefix:
                return [p]
    steps = [p for p in paths if ".pt.trace.json" in p.name]
    return sorted(steps) if steps else [sorted(paths)[0]]


def _trace_pid(path: Path) -> int | None:
    """The process id most events in the head of a chrome trace name."""
    head = _plain_head(path)
    if head is None:
        return None
    pids = re.findall(rb'"pid"\s*:\s*"?(\d+)', head)
    if not pids:
        return None
    return int(max(set(pids), key=pids.count))


def _under(path: Path, parent: Path) -> bool:
    try:
        path.relative_to(parent)
        return True
    except ValueError:
        return False
