"""A Neuron device profile as read: its tables (typed columns of the fields used), identity and metadata.

Built by `trntui.loaders.neuron_device` (Neuron Explorer's device-profile Parquet export), read by
`trntui.analysis.device` (engines, DMA, roofline) and the shells. Also the engine vocabulary and string columns as
integer codes, which both sides use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

NAME_RX = re.compile(
    r"(?P<inst>i-[0-9a-f]+|[A-Za-z0-9][A-Za-z0-9.-]*?)_pid_(?P<pid>\d+)_nc_(?P<nc>\d+)"
    r"(?:_session_(?P<session>\d+)|_model_(?P<model>\d+))?(?:@.*)?"
)
"""Device profile names as Explorer writes them (`i-0703a89c7c8d99cc1_pid_7508_nc_0_session_0`), optionally
with the data path's `@latest` suffix."""

ENGINES = ("Tensor", "Vector", "Scalar", "GpSimd", "Sync")
"""The NeuronCore compute engines in display order (the schema's own names; hardware names are PE, DVE, ACT,
POOL and SP, as `FrameworkInstruction`'s `*_engine_instruction_count` descriptions pair them)."""

_ENGINE_ALIASES = {
    "tensor": "Tensor", "pe": "Tensor", "tensorengine": "Tensor",
    "vector": "Vector", "dve": "Vector", "vectorengine": "Vector",
    "scalar": "Scalar", "act": "Scalar", "activation": "Scalar", "scalarengine": "Scalar",
    "gpsimd": "GpSimd", "pool": "GpSimd", "gpsimdengine": "GpSimd",
    "sync": "Sync", "sp": "Sync", "syncengine": "Sync",
}

ENGINE_HW = {"Tensor": "PE", "Vector": "DVE", "Scalar": "ACT", "GpSimd": "POOL", "Sync": "SP"}


def engine_name(raw: str) -> str:
    """Canonical engine name: `tensor`/`Tensor`/`PE` → `Tensor` (the docs show both `tensor` and `Tensor`);
    unknown names are kept (open vocabulary)."""
    key = str(raw).strip().replace("_", "").replace(" ", "").lower()
    return _ENGINE_ALIASES.get(key, str(raw).strip() or "(none)")


@dataclass
class Coded:
    """A string column as integer codes into `labels` (every row has a code; empty strings are a label too)."""

    codes: np.ndarray
    labels: list[str]


def coded(col: pd.Series, canon: Any = None) -> Coded:
    """`col` (categorical from the reader, or any strings) as codes; `canon` maps each distinct value once
    (e.g. `tensor`/`PE` → `Tensor`), merging the values it maps together."""
    import pandas as pd

    cat = col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype(str).astype("category")
    labels = [str(c) for c in cat.cat.categories]
    codes = cat.cat.codes.to_numpy().astype(np.int64)
    if (codes < 0).any():
        codes = np.where(codes < 0, len(labels), codes)
        labels.append("")
    if canon is not None and labels:
        mapped = [canon(x) for x in labels]
        uniq = list(dict.fromkeys(mapped))
        pos = {m: k for k, m in enumerate(uniq)}
        codes = np.array([pos[m] for m in mapped], np.int64)[codes]
        labels = uniq
    return Coded(codes, labels)


@dataclass
class TableRead:
    """One table as read: its columns (every used field, defaults where the file lacks one) and provenance."""

    name: str
    frame: pd.DataFrame
    files: list[Path]
    absent: list[str] = field(default_factory=list)
    """Used fields the files do not have (optional ones only; a missing required field stops the load)."""
    extra: list[str] = field(default_factory=list)
    """Columns of the files that trntui does not read (newer schema fields, or ones the device view ignores)."""
    skipped_rows: int = 0
    """Rows dropped because a value needed to place them (a timestamp, the physical core) was null, not an
    integer or out of range."""
    skip_reasons: dict[str, int] = field(default_factory=dict)
    """Why rows were dropped → how many."""
    bad_values: dict[str, int] = field(default_factory=dict)
    """Field → values that could not be used (not a number, out of range) and were read as the field's default."""
    missing_required: list[str] = field(default_factory=list)
    """Fields the schema requires that the files lack, tolerated because the export's schema MAJOR version is not
    the documented one (read by name: renamed or removed there)."""

    def has(self, column: str) -> bool:
        return column in self.frame.columns and column not in self.absent


@dataclass
class Identity:
    """Which process and NeuronCore a device profile belongs to (from DeviceProfileList or its name)."""

    name: str = ""
    instance: str = ""
    pid: int | None = None
    nc: int | None = None
    session: int | None = None
    model: int | None = None
    source: str = ""
    """`DeviceProfileList`, `name` or `Metadata` (where the identity was read)."""

    @classmethod
    def from_name(cls, name: str) -> "Identity":
        m = NAME_RX.fullmatch(name)
        if not m:
            return cls(name=name)
        g = m.groupdict()
        as_int = lambda v: int(v) if v is not None else None  # noqa: E731
        return cls(name, g["inst"], int(g["pid"]), int(g["nc"]), as_int(g["session"]), as_int(g["model"]), "name")


@dataclass
class DeviceExport:
    """A device profile as read: tables (only the used columns), metadata, summary and what was missing."""

    path: Path
    identity: Identity
    version: str
    tables: dict[str, TableRead]
    missing: list[str]
    """Optional tables the directory does not have (reported by `trntui info` and the device view)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    """The `Summary` row (one per profile); NaN/absent fields are left out."""
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """Rows of the export's own `Warning` table (`category: message`)."""

    @property
    def name(self) -> str:
        return self.identity.name or self.path.name

    def table(self, name: str) -> pd.DataFrame | None:
        t = self.tables.get(name)
        return t.frame if t is not None else None

    def has(self, table: str, column: str | None = None) -> bool:
        t = self.tables.get(table)
        return t is not None and (column is None or t.has(column))

    @property
    def instructions(self) -> pd.DataFrame:
        return self.tables["Instruction"].frame

    @property
    def num_physical_cores(self) -> int:
        """Physical NeuronCores of the logical core (`Metadata.num_physical_cores`; 1 when absent or not 1-64)."""
        v = self.metadata.get("num_physical_cores")
        return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and 1 <= v <= 64 else 1

    @property
    def instance_type(self) -> str:
        return str(self.metadata.get("instance_type") or "")

    def describe(self) -> dict[str, Any]:
        """Tables with rows, files and unread columns, for `trntui info` (no table is loaded twice)."""
        return {
            "path": str(self.path),
            "name": self.name,
            "instance": self.identity.instance or None,
            "pid": self.identity.pid,
            "nc": self.identity.nc,
            "profile_schema_version": self.version or None,
            "instance_type": self.instance_type or None,
            "tables": {
                t.name: {
                    "rows": len(t.frame),
                    "files": [p.name for p in t.files],
                    "absent_optional_columns": t.absent,
                    "unread_columns": len(t.extra),
                    "skipped_rows": t.skipped_rows,
                    "skipped_because": dict(t.skip_reasons),
                    "unusable_values": dict(t.bad_values),
                    "required_fields_not_found": list(t.missing_required),
                }
                for t in self.tables.values()
            },
            "missing_optional_tables": list(self.missing),
            "notes": list(self.notes),
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class Window:
    """The part of a device profile analysed: [start, end) on the export's clock."""

    start: int
    end: int
    label: str
    index: int | None = None
    """Execution index (`ExecutionInfo.execution_index`), None for the whole profile."""
    neff: str = ""
    whole: bool = False
    """True when this is the whole profile (the export's Summary applies)."""

    @property
    def ns(self) -> int:
        return max(self.end - self.start, 0)
