"""The runs under a path, loaded for SQL and export: the same load as every command (trntui/session.py: the
parsed-profile cache, the memory budget, every format), each run named once."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from trntui.query.database import RunData


def run_names(runs: list[Any]) -> list[str]:
    """The runs' names, made unique (`name`, `name#2`, ...)."""
    seen: dict[str, int] = {}
    out = []
    for r in runs:
        name = str(r.name) or "run"
        if name in seen:
            seen[name] += 1
            name = f"{name}#{seen[name]}"
        else:
            seen[name] = 1
        out.append(name)
    return out


def device_reader(run: Any, budget: int | None = None) -> Callable[[], Any] | None:
    """For a Neuron device-profile run: a function that reads its tables (`DeviceExport`; refused before it is
    read when they cannot fit `budget` bytes, None: no limit); else None."""
    if getattr(run, "format", "") != "neuron-device":
        return None
    src = run.source

    def read() -> Any:
        from trntui.loaders.neuron_device import load_device

        return load_device(src.path, src.identity, budget=budget)

    return read


def load_runs(path: str | Path, options: Any = None, *, merge: bool = False) -> list[RunData]:
    """Every run under `path`, loaded (`LoadOptions` as the commands build them; None: from the environment)."""
    from trntui.session import find_runs, load_run

    from trntui.loaders.protocol import LoadOptions

    runs = find_runs(Path(path), merge=merge)
    budget = (options if options is not None else LoadOptions.from_env()).budget
    return [RunData(name, load_run(run, options), device=device_reader(run, budget))
            for name, run in zip(run_names(runs), runs)]
