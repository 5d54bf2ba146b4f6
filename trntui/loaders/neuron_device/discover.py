"""Find device profiles: directories holding an `Instruction` table, and which process/NeuronCore each is for.

The identity of a device profile comes, in order, from a `DeviceProfileList` table found in the searched tree
(the system export's map: `device_profile_name`, `instance_id`, `process_id`, `nc_id`, `session_id`/`model_id`),
from its directory name (`<instance>_pid_<pid>_nc_<n>_session_<s>`, Explorer's device profile names), or from its
`Metadata.neuroncore_idx`. `device_profiles_for(...)` picks the ones of one process and NeuronCore: what the app
opens for a selected `nc_exec_running`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from trntui.model.device import NAME_RX, Identity

MAX_DEPTH = 4
"""How deep below a search root device profiles are looked for (Explorer's data path is
`profiles/global/<name>@latest/`: three levels)."""


@dataclass
class DeviceRef:
    """A device profile found on disk (not loaded)."""

    path: Path
    identity: Identity

    @property
    def name(self) -> str:
        return self.identity.name or self.path.name


def is_device_profile(directory: Path) -> bool:
    from trntui.loaders.neuron.parquet import table_files

    return directory.is_dir() and bool(table_files(directory, "Instruction"))


def _walk(root: Path, depth: int) -> list[tuple[Path, list[str]]]:
    out = []
    base = len(root.parts)
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        if len(d.parts) - base >= depth:
            dirnames[:] = []
        dirnames[:] = sorted(x for x in dirnames if not x.startswith("."))
        out.append((d, filenames))
    return out


def _profile_list(directory: Path) -> list[Identity]:
    """Rows of a DeviceProfileList table in `directory` ([] when unreadable: discovery never fails)."""
    from trntui.errors import LoadError
    from trntui.loaders.neuron_device.reader import read_table

    try:
        t = read_table(directory, "DeviceProfileList")
    except LoadError:
        return []
    if t is None:
        return []
    f = t.frame
    out = []
    for k in range(len(f)):
        name = str(f["device_profile_name"].iloc[k])
        session = int(f["session_id"].iloc[k]) if t.has("session_id") else None
        model = int(f["model_id"].iloc[k]) if t.has("model_id") else None
        out.append(
            Identity(name, str(f["instance_id"].iloc[k]), int(f["process_id"].iloc[k]), int(f["nc_id"].iloc[k]),
                     session, model, "DeviceProfileList")
        )
    return out


def find_device_profiles(path: str | Path, depth: int = MAX_DEPTH) -> list[DeviceRef]:
    """Every device profile at or under `path` (a device profile directory itself, or a tree holding some)."""
    root = Path(path)
    if not root.is_dir():
        return []
    import re

    rx = re.compile(r"Instruction(?:_\d+)?\.parquet")
    listed: dict[str, Identity] = {}
    found: list[Path] = []
    for d, files in _walk(root, depth):
        if any(rx.fullmatch(f) for f in files):
            found.append(d)
        if any(f.startswith("DeviceProfileList") and f.endswith(".parquet") for f in files):
            for ident in _profile_list(d):
                listed.setdefault(ident.name, ident)
    refs = []
    for d in found:
        name = d.name.split("@")[0]
        ident = listed.get(name) or listed.get(d.name)
        if ident is None:
            ident = Identity.from_name(d.name)
        refs.append(DeviceRef(d, ident))
    return sorted(refs, key=lambda r: (r.identity.pid or 0, r.identity.nc or 0, str(r.path)))


def device_profiles_for(roots: list[Path], *, instance: str = "", pid: int | None = None, nc: int | None = None) -> list[DeviceRef]:
    """The device profiles of process `pid` (on `instance`) and NeuronCore `nc` found under `roots`.

    A profile whose identity is unknown (no DeviceProfileList row, no Explorer-style name) matches only when
    no profile under the roots has an identity: then all are returned (the caller says it matched by location).
    """
    seen: set[Path] = set()
    refs: list[DeviceRef] = []
    for root in roots:
        for ref in find_device_profiles(root):
            key = ref.path.resolve()
            if key not in seen:
                seen.add(key)
                refs.append(ref)
    known = [r for r in refs if r.identity.pid is not None]
    if not known:
        return refs

    def ok(r: DeviceRef) -> bool:
        i = r.identity
        if pid is not None and i.pid != pid:
            return False
        if instance and i.instance and i.instance != instance:
            return False
        return nc is None or i.nc is None or i.nc == nc

    return [r for r in known if ok(r)]


def search_roots(path: Path) -> list[Path]:
    """Where the device profiles of a system profile at `path` may be: in it, or beside it (its parent's tree;
    Explorer writes each processed profile, system or device, as its own directory)."""
    base = path if path.is_dir() else path.parent
    return [base] if base.parent == base else [base, base.parent]


def device_profiles_of(path: Path, nc: int | None = None) -> list[DeviceRef]:
    """The device profiles for `path`: the ones under it, else those of the Neuron processes of the system
    profile at `path`, found in it or beside it and matched by instance and process id."""
    refs = find_device_profiles(path)
    if refs:
        return [r for r in refs if nc is None or r.identity.nc is None or r.identity.nc == nc]
    if not path.is_dir():
        return []
    from trntui.loaders.neuron.discover import scan

    out: list[DeviceRef] = []
    for s in scan(path).sessions:
        if s.pid is None:
            continue
        for r in device_profiles_for(search_roots(path), instance=s.instance, pid=s.pid, nc=nc):
            if all(r.path != o.path for o in out):
                out.append(r)
    return out


__all__ = ["DeviceRef", "NAME_RX", "device_profiles_for", "device_profiles_of", "find_device_profiles",
           "is_device_profile", "search_roots"]
