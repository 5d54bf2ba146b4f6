"""SQL over loaded runs: an in-memory DuckDB database whose tables are the runs' Arrow tables (trntui/query/tables.py).

`Database([(name, profile), ...])` registers nothing up front but the events' zero-copy base table per run; every
other table (lanes, flows, links, steps, ops, kernels, counters, the Neuron device tables) and view is made the
first time a query names it, so opening the database costs what wrapping the columns costs. Every table has a
`run` column (the run's name). The database cannot read or write files (`enable_external_access=false`) unless
it is opened with `allow_files=True`.

DuckDB is imported here only: `trntui summary` and every command that runs no query never load it.
"""

from __future__ import annotations

import re
import weakref  # noqa: F401 - (the type of _OPEN)
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from trntui.errors import TrntuiError
from trntui.query import tables as T
from trntui.query.views import VIEWS

if TYPE_CHECKING:  # pragma: no cover
    import duckdb
    import pyarrow as pa

    from trntui.model.profile import Profile


class QueryError(TrntuiError):
    """A query DuckDB refused (its message, one line)."""


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError:  # pragma: no cover - depends on the install
        raise TrntuiError("SQL needs DuckDB: pip install 'trntui[sql]'") from None
    return duckdb


def one_line(exc: BaseException) -> str:
    """DuckDB's message on one line (its binder errors span several, with a caret under the query)."""
    text = " ".join(str(exc).split())
    return text if len(text) <= 500 else text[:497] + "..."


EVENT_COLUMNS = (
    "id", "name", "cat", "ph", "ts_us", "dur_us", "start_ns", "end_ns", "dur_ns", "pid", "tid", "lane", "tier",
    "depth", "parent_id", "step", "args",
)

TABLES = ("events", "lanes", "flows", "links", "steps", "ops", "kernels", "counters")
"""The tables every run has, in the order `.tables` lists them (then the device tables and the views)."""


@dataclass
class Result:
    """A query's columns, Arrow schema and record batches (an iterator: read once)."""

    columns: list[str]
    schema: Any
    batches: Iterator[Any]

    def __iter__(self) -> Iterator[Any]:
        return self.batches


@dataclass
class RunData:
    """One run in the database: its profile, key_averages table (made on first use) and Neuron device export."""

    name: str
    profile: "Profile"
    table: Any = None
    device: Any = None
    """A `DeviceExport` (Neuron device profile) or a callable that reads it, or None."""
    columns: T.EventColumns | None = None
    origin: int = 0


@dataclass(eq=False)
class Database:
    """An in-memory DuckDB over one or more loaded runs (see the module doc)."""

    runs: list[RunData]
    allow_files: bool = False
    con: "duckdb.DuckDBPyConnection" = field(init=False, repr=False)
    _made: set[str] = field(default_factory=set, init=False, repr=False)
    _device_names: list[str] = field(default_factory=list, init=False, repr=False)

    @classmethod
    def of(cls, runs: Sequence[tuple[str, "Profile"]] | Sequence[RunData], *, allow_files: bool = False) -> "Database":
        data = [r if isinstance(r, RunData) else RunData(r[0], r[1]) for r in runs]
        return cls(data, allow_files)

    def __post_init__(self) -> None:
        duckdb = _duckdb()
        config: dict[str, Any] = {"enable_external_access": bool(self.allow_files)}
        if not self.allow_files:
            config["lock_configuration"] = True  # no SET can turn file access back on
        self.con = duckdb.connect(":memory:", config=config)
        _close_at_exit(self)
        for k, run in enumerate(self.runs):
            run.origin = T.origin_ns(run.profile)
            run.columns = T.EventColumns(run.profile, run.origin)
            self.con.register(f"_events_{k}", run.columns.base_table())
            self._functions(k, run.columns)
        names: list[str] = []
        for k, run in enumerate(self.runs):
            for n in self._device(run):
                if n not in names:
                    names.append(n)
        self._device_names = names

    # -- what the database holds ----------------------------------------------------------------------------
    def table_names(self) -> list[str]:
        """Tables then views, as `.tables` lists them (made or not yet)."""
        return [*TABLES, *self._device_names, *VIEWS]

    def columns(self, name: str) -> list[tuple[str, str]]:
        """(column, SQL type) of a table or view."""
        self._ensure(name)
        rows = self.con.execute(f"DESCRIBE {_ident(name)}").fetchall()
        return [(str(r[0]), str(r[1])) for r in rows]

    def all_columns(self) -> dict[str, list[str]]:
        """Column names of every table and view (completion in the app)."""
        return {n: [c for c, _ in self.columns(n)] for n in self.table_names()}

    # -- queries ---------------------------------------------------------------------------------------------
    def relation(self, query: str) -> "duckdb.DuckDBPyRelation":
        """The query's result as a DuckDB relation (not yet fetched); QueryError with DuckDB's message."""
        duckdb = _duckdb()
        for word in set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", query)):
            if word.lower() in self._lazy_names():
                self._ensure(word.lower())
        try:
            rel = self.con.sql(query)
        except duckdb.Error as exc:
            raise QueryError(one_line(exc)) from None
        if rel is None:  # a statement without a result (SET, CREATE, COPY ...)
            return None  # type: ignore[return-value]
        return rel

    def arrow(self, query: str) -> "pa.Table":
        duckdb = _duckdb()
        rel = self.relation(query)
        if rel is None:
            return _empty_arrow()
        try:
            return _to_arrow(rel)
        except duckdb.Error as exc:
            raise QueryError(one_line(exc)) from None

    def batches(self, query: str, rows: int = 100_000) -> "Result":
        """The result fetched a batch at a time (results of millions of rows never sit in memory whole)."""
        duckdb = _duckdb()
        rel = self.relation(query)
        if rel is None:
            return Result([], None, iter(()))
        try:
            reader = rel.to_arrow_reader(rows) if hasattr(rel, "to_arrow_reader") else rel.fetch_record_batch(rows)
        except duckdb.Error as exc:
            raise QueryError(one_line(exc)) from None

        def gen() -> Iterator["pa.RecordBatch"]:
            try:
                yield from reader
            except duckdb.Error as exc:
                raise QueryError(one_line(exc)) from None

        return Result(list(rel.columns), reader.schema, gen())

    def rows(self, query: str) -> list[tuple[Any, ...]]:
        """The result as Python tuples (small results: tests, scripts)."""
        duckdb = _duckdb()
        rel = self.relation(query)
        if rel is None:
            return []
        try:
            return rel.fetchall()
        except duckdb.Error as exc:
            raise QueryError(one_line(exc)) from None

    def pandas(self, query: str) -> Any:
        return self.arrow(query).to_pandas()

    def close(self) -> None:
        try:
            self.con.close()
        except Exception:  # noqa: BLE001 - closing twice
            pass

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- making tables on first use --------------------------------------------------------------------------
    def _lazy_names(self) -> set[str]:
        return set(self.table_names()) - self._made

    def _ensure(self, name: str) -> None:
        if name in self._made:
            return
        if name in VIEWS:
            for dep in VIEWS[name].needs:
                self._ensure(dep)
            self._create_view(name, VIEWS[name].sql)
        elif name == "events":
            self._create_view("events", _union(_events_select(k, r) for k, r in enumerate(self.runs)))
        elif name == "kernels":
            self._ensure("events")
            self._ensure("links")
            self._create_view("kernels", KERNELS_SQL)
        elif name in TABLES:
            self._per_run(name, lambda k, r: self._arrow_of(name, r))
        elif name in self._device_names:
            self._per_run(name, lambda k, r: self._device(r).get(name))
        else:
            raise QueryError(f"no table {name!r}")
        self._made.add(name)

    def _create_view(self, name: str, sql: str) -> None:
        duckdb = _duckdb()
        try:
            self.con.execute(f"CREATE OR REPLACE VIEW {_ident(name)} AS {sql}")
        except duckdb.Error as exc:  # pragma: no cover - the views are ours
            raise QueryError(f"view {name}: {one_line(exc)}") from None

    def _per_run(self, name: str, make: Callable[[int, RunData], "pa.Table | None"]) -> None:
        parts = []
        for k, run in enumerate(self.runs):
            t = make(k, run)
            if t is None:
                continue
            self.con.register(f"_{name}_{k}", t)
            parts.append(f"SELECT *, {_literal(run.name)} AS run FROM _{name}_{k}")
        if not parts:  # a device table no run has: still a table (empty), so that queries naming it work
            self.con.execute(f"CREATE OR REPLACE VIEW {_ident(name)} AS SELECT NULL::VARCHAR AS run WHERE false")
            return
        self.con.execute(f"CREATE OR REPLACE VIEW {_ident(name)} AS {' UNION ALL BY NAME '.join(parts)}")

    def _arrow_of(self, name: str, run: RunData) -> "pa.Table":
        p = run.profile
        if name == "lanes":
            return T.lanes_table(p)
        if name == "flows":
            return T.flows_table(p)
        if name == "links":
            return T.links_table(p)
        if name == "steps":
            return T.steps_table(p, run.origin)
        if name == "ops":
            if run.table is None:
                from trntui.analysis.key_averages import key_averages

                run.table = key_averages(p)
            return T.ops_table(run.table)
        if name == "counters":
            return T.counters_table(p, run.origin)
        raise QueryError(f"no table {name!r}")  # pragma: no cover

    def _device(self, run: RunData) -> dict[str, "pa.Table"]:
        if run.device is None:
            return {}
        if callable(run.device):
            run.device = run.device()
        if isinstance(run.device, dict):
            return run.device
        run.device = T.device_tables(run.device)
        return run.device

    def _functions(self, k: int, cols: T.EventColumns) -> None:
        """`_args_k(id)`, `_depth_k(id)`, `_parent_k(id)`, `_step_k(id)`: the events' columns that cost work per
        event, computed for the rows a query reads (DuckDB drops the call when the column is not read)."""
        import numpy as np
        import pyarrow as pa

        duckdb = _duckdb()
        big = duckdb.sqltype("BIGINT")

        def ids_of(arr: Any) -> np.ndarray:
            return np.asarray(arr.to_numpy(zero_copy_only=False), np.int64)

        def args(arr: Any) -> Any:
            return pa.array(cols.args_of(ids_of(arr)), pa.string())

        def depth(arr: Any) -> Any:
            return pa.array(cols.depth_of(ids_of(arr)).astype(np.int32))

        def parent(arr: Any) -> Any:
            v = cols.parent_of(ids_of(arr)).astype(np.int64)
            return pa.array(v, mask=v < 0)

        def step(arr: Any) -> Any:
            v = cols.step_of(ids_of(arr))
            return pa.array(v, mask=v < 0)

        self.con.create_function(f"_args_{k}", args, [big], duckdb.sqltype("VARCHAR"), type="arrow",
                                 null_handling="special")
        self.con.create_function(f"_depth_{k}", depth, [big], duckdb.sqltype("INTEGER"), type="arrow")
        self.con.create_function(f"_parent_{k}", parent, [big], big, type="arrow", null_handling="special")
        self.con.create_function(f"_step_{k}", step, [big], big, type="arrow", null_handling="special")


_OPEN: "weakref.WeakSet[Database] | None" = None


def _close_at_exit(db: Database) -> None:
    """Databases still open when the interpreter ends are closed first: a connection with Python functions
    alive at teardown makes DuckDB's bindings print a page of "nanobind: leaked ..." lines on stderr (after
    the app quits, or a notebook kernel stops)."""
    global _OPEN
    if _OPEN is None:
        import atexit
        import weakref

        _OPEN = weakref.WeakSet()

        def close_all() -> None:
            for d in list(_OPEN or ()):
                d.close()

        atexit.register(close_all)
    _OPEN.add(db)


def _events_select(k: int, run: RunData) -> str:
    base = int(run.profile.meta.base_ns)
    o = run.origin
    return (
        f"SELECT id, name, cat, CASE kind WHEN 1 THEN 'i' ELSE 'X' END AS ph, "
        f"((start_abs - {base}) // 1000)::DOUBLE + ((start_abs - {base}) % 1000) / 1000.0 AS ts_us, (end_abs - start_abs) / 1000.0 AS dur_us, "
        f"start_abs - {o} AS start_ns, end_abs - {o} AS end_ns, end_abs - start_abs AS dur_ns, "
        f"pid, tid, lane, tier, _depth_{k}(id) AS depth, _parent_{k}(id) AS parent_id, _step_{k}(id) AS step, "
        f"_args_{k}(id) AS args, {_literal(run.name)} AS run FROM _events_{k}"
    )


def _union(parts: Iterable[str]) -> str:
    return " UNION ALL ".join(parts)


KERNELS_SQL = """
SELECT e.*, l.op_id, o.name AS op, l.runtime_id, r.name AS runtime_call, e.start_ns - r.start_ns AS launch_latency_ns,
       l.rule AS link_rule
FROM events e
LEFT JOIN links l ON l.device_id = e.id AND l.run = e.run
LEFT JOIN events o ON o.id = l.op_id AND o.run = e.run
LEFT JOIN events r ON r.id = l.runtime_id AND r.run = e.run
WHERE e.tier = 'hardware'
"""
"""`kernels`: every hardware-tier event (kernels, memcpy/memset, nc_exec_running) with the op that launched it,
the runtime call and the launch latency (device start minus the runtime call's start)."""


def _literal(text: str) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _to_arrow(rel: Any) -> "pa.Table":
    for attr in ("to_arrow_table", "fetch_arrow_table", "arrow"):
        f = getattr(rel, attr, None)
        if f is not None:
            out = f()
            if hasattr(out, "read_all"):
                out = out.read_all()
            return out
    raise QueryError("this DuckDB cannot return Arrow tables")  # pragma: no cover


def _empty_arrow() -> "pa.Table":
    import pyarrow as pa

    return pa.table({})
