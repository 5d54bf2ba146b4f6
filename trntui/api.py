"""The Python API for notebooks and scripts (docs/api.md): `trntui.load(path) -> Run`, `trntui.runs(path)`.

A thin caller of the same load as the CLI (trntui/session.py: the parsed-profile cache, the memory budget, every
format) and of the same analyses; no terminal is needed (but for `Run.open`). Imports stay light: `import trntui`
loads nothing, pandas and DuckDB are imported by the methods that return their objects.

    import trntui
    run = trntui.load("trace.json.gz")
    run.key_averages()                      # a DataFrame: torch's FunctionEventAvg attributes, µs
    print(run.table(sort_by="self_cpu_time_total", row_limit=10))   # torch's .table() text
    run.sql("SELECT name, sum(dur_us) FROM kernels GROUP BY name ORDER BY 2 DESC LIMIT 5")
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa

    from trntui.analysis.chains import Chain
    from trntui.analysis.critical_path import CriticalPath
    from trntui.analysis.key_averages import OpTable
    from trntui.analysis.overview import Overview
    from trntui.loaders.discover import Run as FoundRun
    from trntui.loaders.protocol import LoadOptions
    from trntui.model.profile import Profile
    from trntui.query.database import Database

KEY_AVERAGES_COLUMNS = (
    "key", "count", "node_id", "self_cpu_time_total", "cpu_time_total", "cpu_time", "self_device_time_total",
    "device_time_total", "device_time", "self_cpu_memory_usage", "cpu_memory_usage", "self_device_memory_usage",
    "device_memory_usage", "input_shapes", "is_user_annotation", "device_type", "is_legacy", "flops",
)
"""`Run.key_averages()`'s columns: torch's `FunctionEventAvg` attributes (times in µs, memory in bytes), in
torch's order of rows. `node_id` is -1, `is_legacy` False and `flops` 0, as torch sets them for a profile
read back from a trace (they need the in-process profiler)."""


def _options(cache: bool = True, memory_budget: str | int | None = None, convert_timeout: float | None = 300.0,
             options: "LoadOptions | None" = None) -> "LoadOptions":
    if options is not None:
        return options
    from trntui.loaders.protocol import LoadOptions

    return LoadOptions.from_env(memory_budget=memory_budget, cache=cache, convert_timeout=convert_timeout)


@dataclass
class Run:
    """One run (a trace file, a Neuron session, a rank): loaded on first use of its data."""

    name: str
    path: Path
    found: "FoundRun"
    options: "LoadOptions"
    _profile: "Profile | None" = field(default=None, repr=False)
    _tables: dict[bool, "OpTable"] = field(default_factory=dict, repr=False)
    _db: "Database | None" = field(default=None, repr=False)

    # -- the loaded data -----------------------------------------------------------------------------------
    @property
    def profile(self) -> "Profile":
        """The loaded `Profile` (numpy columns; trntui/model/profile.py)."""
        if self._profile is None:
            from trntui.session import load_run

            self._profile = load_run(self.found, self.options)
        return self._profile

    @property
    def format(self) -> str:
        return self.found.format

    def op_table(self, group_by_input_shapes: bool = False) -> "OpTable":
        """trntui's key_averages table (columns as arrays), as the summary and the app show it."""
        if group_by_input_shapes not in self._tables:
            from trntui.analysis.key_averages import key_averages

            self._tables[group_by_input_shapes] = key_averages(self.profile, group_by_input_shapes=group_by_input_shapes)
        return self._tables[group_by_input_shapes]

    # -- torch's views -------------------------------------------------------------------------------------
    def key_averages(self, group_by_input_shapes: bool = False) -> "pd.DataFrame":
        """torch's `prof.key_averages()` as a DataFrame: one row per key (name, device type, and input shapes
        when grouped by them), in torch's order, with `FunctionEventAvg`'s attribute names and values (µs)."""
        import numpy as np
        import pandas as pd

        t = self.op_table(group_by_input_shapes)
        n = len(t)
        return pd.DataFrame({
            "key": list(t.name),
            "count": np.asarray(t.count, np.int64),
            "node_id": np.full(n, -1, np.int64),
            "self_cpu_time_total": np.asarray(t.self_cpu_time_total, np.float64),
            "cpu_time_total": np.asarray(t.cpu_time_total, np.float64),
            "cpu_time": np.asarray(t.cpu_time, np.float64),
            "self_device_time_total": np.asarray(t.self_device_time_total, np.float64),
            "device_time_total": np.asarray(t.device_time_total, np.float64),
            "device_time": np.asarray(t.device_time, np.float64),
            "self_cpu_memory_usage": np.asarray(t.self_cpu_memory_usage, np.int64),
            "cpu_memory_usage": np.asarray(t.cpu_memory_usage, np.int64),
            "self_device_memory_usage": np.asarray(t.self_device_memory_usage, np.int64),
            "device_memory_usage": np.asarray(t.device_memory_usage, np.int64),
            "input_shapes": list(t.input_shapes) if group_by_input_shapes else [""] * n,
            "is_user_annotation": np.asarray(t.is_user_annotation, bool),
            "device_type": list(t.device_type),
            "is_legacy": np.zeros(n, bool),
            "flops": np.zeros(n, np.int64),
        }, columns=list(KEY_AVERAGES_COLUMNS))

    def table(self, sort_by: str | None = None, row_limit: int = 100, *, group_by_input_shapes: bool = False) -> str:
        """The text of torch's `prof.key_averages(group_by_input_shape=...).table(sort_by=..., row_limit=...)`."""
        from trntui.report import render_table

        t = self.op_table(group_by_input_shapes)
        limit = None if row_limit is not None and row_limit < 0 else row_limit
        return render_table(t, sort_by, limit, with_shapes=group_by_input_shapes)

    # -- trntui's views ------------------------------------------------------------------------------------
    def events(self, as_: Literal["pandas", "arrow"] = "pandas") -> "pd.DataFrame | pa.Table":
        """Every event as the SQL `events` table (docs/sql.md): a DataFrame, or an Arrow table with `as_="arrow"`."""
        table = self.database().arrow("SELECT * EXCLUDE (run) FROM events")
        if as_ == "arrow":
            return table
        if as_ != "pandas":
            raise ValueError(f"as_ must be 'pandas' or 'arrow', not {as_!r}")
        return table.to_pandas()

    def overview(self) -> "Overview":
        """The overview (`trntui overview`): steps, time breakdown, top kernels, recommendations, as plain data."""
        from trntui.analysis.overview import overview

        return overview(self.profile)

    def critical_paths(self, steps: str | None = None, *, join: bool = False, annotation: str | None = None,
                       instance: str | int | None = None) -> "list[CriticalPath]":
        """The critical path of the longest step (`steps=None`), of each of `steps` ("3-5"), of them joined
        (`join=True`), or of HTA's window (`annotation`, `instance`): docs/overview.md "Critical path". Each has
        `.breakdown_pct()`, `.bound_by`, `.length_ns`, `.top_events()`, `.stretches()`, `.what_if(["aten::mul=0.5x"])`
        and `.to_dict()` (the JSON of `trntui overview`)."""
        from trntui.analysis.critical_path import critical_paths

        return critical_paths(self.profile, steps, join=join, annotation=annotation, instance=instance)

    def chain(self, event_id: int) -> "Chain":
        """The dependency chain through event `event_id` (the app's chain pane): op -> runtime -> hardware hops."""
        from trntui.analysis.chains import follow

        if not 0 <= int(event_id) < len(self.profile):
            raise IndexError(f"no event {event_id} (the run has {len(self.profile):,} events)")
        return follow(self.profile, int(event_id))

    def database(self, *, allow_files: bool = False) -> "Database":
        """This run's SQL database (trntui/query/database.py), made once. A Neuron device profile's tables are
        read under the memory budget as `trntui device` and `trntui sql` read them (`OverBudget`, a `LoadError`
        naming the directory, before a table is read when they cannot fit)."""
        if self._db is None or self._db.allow_files != allow_files:
            from trntui.query.database import Database, RunData
            from trntui.query.load import device_reader

            if self._db is not None:
                self._db.close()
            self._db = Database.of([RunData(self.name, self.profile, table=self._tables.get(False),
                                            device=device_reader(self.found, self.options.budget))],
                                  allow_files=allow_files)
        return self._db

    def sql(self, query: str, *, allow_files: bool = False) -> "pd.DataFrame":
        """A query's result as a DataFrame (tables and views of docs/sql.md; files only with `allow_files`)."""
        return self.database(allow_files=allow_files).pandas(query)

    def open(self) -> None:
        """The explorer on this run (needs a terminal; returns when the app is quit)."""
        import sys

        from trntui.errors import TrntuiError

        if not (sys.stdin and sys.stdout and sys.stdin.isatty() and sys.stdout.isatty()):
            raise TrntuiError("open needs a terminal on stdin and stdout (in a notebook use .table(), .sql(), .events())")
        from trntui.tui.app import TrntuiApp

        TrntuiApp(self.path, self.found.name, load_options=self.options).run()

    def __repr__(self) -> str:
        loaded = f", {len(self._profile):,} events" if self._profile is not None else ""
        return f"Run({self.name!r}, format={self.format!r}{loaded})"


def runs(path: str | Path, *, cache: bool = True, memory_budget: str | int | None = None, merge: bool = False,
         convert_timeout: float | None = 300.0, options: "LoadOptions | None" = None) -> list[Run]:
    """Every run under `path` (a trace file, a profile directory, a directory of ranks or variants), each loaded
    on first use. Options as the CLI's flags: `cache` (the parsed-profile cache), `memory_budget` (bytes or
    `4G`; None: 80% of the available memory), `merge` (every trace file under `path` is one run)."""
    from trntui.query.load import run_names
    from trntui.session import find_runs

    path = Path(path)
    opts = _options(cache, memory_budget, convert_timeout, options)
    found = find_runs(path, merge=merge)
    return [Run(name, path, r, opts) for name, r in zip(run_names(found), found)]


def load(path: str | Path, *, run: str | None = None, cache: bool = True, memory_budget: str | int | None = None,
         merge: bool = False, convert_timeout: float | None = 300.0, options: "LoadOptions | None" = None) -> Run:
    """The run at `path`, loaded (the same load as `trntui summary PATH`). A directory of several runs needs
    `run=` (a name `trntui.runs(path)` lists)."""
    from trntui.errors import LoadError

    found = runs(path, cache=cache, memory_budget=memory_budget, merge=merge, convert_timeout=convert_timeout,
                 options=options)
    if run is not None:
        chosen = [r for r in found if r.name == run or r.found.name == run]
        if not chosen:
            names = ", ".join(r.name for r in found[:8])
            raise LoadError(path, f"has no run {run!r} (runs: {names})")
        found = chosen[:1]
    if len(found) > 1:
        names = ", ".join(r.name for r in found[:6])
        raise LoadError(path, f"holds {len(found)} runs ({names}{', ...' if len(found) > 6 else ''}); "
                              "pick one with run=NAME or use trntui.runs(path)")
    result = found[0]
    result.profile  # noqa: B018 - load now: errors belong to load()
    return result
