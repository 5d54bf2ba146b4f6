"""The query screen (`:`): SQL over the loaded run (trntui/query/database.py, docs/sql.md) inside the explorer.

A query box with history (Up/Down) and completion of table and column names (Right accepts), the results in a
sortable table, Enter on a row that carries an event id (`id`, `event_id`, `device_id`, ...) shows that event
on the timeline, a row with `start_ns`/`end_ns` zooms the timeline to that span. Queries run in a thread
worker (which only posts messages). Saved queries (Ctrl+S saves, Ctrl+O brings the next one back) and the
history live in the user's config directory (`queries.json`, trntui/settings.py `config_dir`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.suggester import Suggester
from textual.widgets import DataTable, Footer, Input, Static

from trntui.textsafe import safe_text, truncate

if TYPE_CHECKING:
    from trntui.model.profile import Profile

MAX_ROWS = 5_000
"""Rows the results table holds (a query of millions of rows shows its first rows and the count)."""
MAX_HISTORY = 200
CELL_WIDTH = 60
"""Text cells are cut to this many characters (templated kernel names run to hundreds)."""
EVENT_COLUMNS = ("id", "event_id", "device_id", "runtime_id", "op_id", "parent_id")
"""Columns whose value is an event of the run, in the order Enter looks for them."""
FIRST_QUERY = "SELECT name, count(*) AS calls, sum(dur_us) AS total_us, max(id) AS id FROM events GROUP BY name ORDER BY total_us DESC LIMIT 50"


STORE_LIMIT = 16 << 20
"""Largest queries.json read (saved queries and history: KBs)."""


def store_path() -> Path:
    from trntui.settings import config_dir

    return config_dir() / "queries.json"


def read_store() -> dict[str, list[str]]:
    """{"saved": [...], "history": [...]} from the config directory ({} parts when absent or unreadable)."""
    from trntui import fsio

    try:
        doc = json.loads(fsio.read_bounded(store_path(), STORE_LIMIT))
    except (OSError, ValueError, RecursionError, fsio.FileRefused):
        return {"saved": [], "history": []}
    out = {}
    for key in ("saved", "history"):
        v = doc.get(key) if isinstance(doc, dict) else None
        out[key] = [q for q in v if isinstance(q, str)] if isinstance(v, list) else []
    return out


def write_store(store: dict[str, list[str]]) -> str | None:
    """Write the store (a temporary file renamed over it); the error's text when it cannot be written."""
    from trntui import fsio

    path = store_path()
    try:  # whole or not at all; never through a link or over a FIFO (trntui/fsio.py)
        fsio.ensure_dir(path.parent)
        fsio.atomic_write(path, json.dumps(store, indent=1), force=True)
    except fsio.FileRefused as exc:
        return exc.problem
    return None


class NameSuggester(Suggester):
    """Completes the word under the end of the box with a table, view or column name of the database."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.names = sorted(set(names), key=lambda n: (len(n), n))

    async def get_suggestion(self, value: str) -> str | None:
        m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)$", value)
        if not m:
            return None
        word = m.group(1)
        low = word.lower()
        for name in self.names:
            if name.lower().startswith(low) and len(name) > len(word):
                return value + name[len(word):]
        return None


class QueryScreen(Screen[tuple[str, Any] | None]):
    """Dismissed with ("event", id), ("span", (start_ns, end_ns)) on the timeline's clock, or None."""

    HELP = "SQL query: tables events, lanes, flows, links, steps, ops, kernels, counters; docs/sql.md."

    BINDINGS = [
        Binding("escape", "close", "Back", id="query-close"),
        Binding("ctrl+s", "save", "Save query", id="query-save"),
        Binding("ctrl+o", "saved", "Saved queries", id="query-saved"),
        Binding("f6", "focus_box", "Query box", id="query-box", show=False),
    ]

    DEFAULT_CSS = """
    QueryScreen { layout: vertical; }
    QueryScreen #q-header { height: 1; background: $panel; padding: 0 1; }
    QueryScreen #q-box { height: 3; }
    QueryScreen #q-status { height: 1; padding: 0 1; color: $text-muted; }
    QueryScreen #q-status.-error { color: $text-error; }
    QueryScreen #q-results { height: 1fr; }
    """

    class Done(Message):
        def __init__(self, query: str, columns: list[str], rows: list[tuple], total: int, names: list[str]) -> None:
            super().__init__()
            self.query, self.columns, self.rows, self.total, self.names = query, columns, rows, total, names

    class Failed(Message):
        def __init__(self, query: str, reason: str) -> None:
            super().__init__()
            self.query, self.reason = query, reason

    def __init__(self, profile: "Profile", run_name: str = "") -> None:
        super().__init__()
        self.profile = profile
        self.run_name = run_name or "run"
        store = read_store()
        self.history: list[str] = store["history"]
        self.saved: list[str] = store["saved"]
        self._pos = len(self.history)
        self._saved_pos = -1
        self.columns: list[str] = []
        self._sort: tuple[str, bool] | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text(f"SQL · {safe_text(self.run_name)} · tables events, lanes, flows, links, steps, ops, "
                          "kernels, counters · Enter runs"), id="q-header", markup=False)
        yield Input(value=self.history[-1] if self.history else FIRST_QUERY, id="q-box",
                    placeholder="SELECT ... FROM events ...", select_on_focus=False)
        yield Static("", id="q-status", markup=False)
        table: DataTable = DataTable(id="q-results", cursor_type="row", zebra_stripes=True)
        yield table
        yield Footer()

    @property
    def box(self) -> Input:
        return self.query_one("#q-box", Input)

    @property
    def results(self) -> DataTable:
        return self.query_one("#q-results", DataTable)

    def on_mount(self) -> None:
        self.box.focus()
        self.box.cursor_position = len(self.box.value)
        self.names_for_completion()

    # -- the database (made once per profile, in a worker) -------------------------------------------------
    def database(self) -> Any:
        db = self.profile.cache.get("query_database")
        if db is None:
            from trntui.query.database import Database

            db = Database.of([(self.run_name, self.profile)])
            self.profile.cache["query_database"] = db
        return db

    @work(thread=True, exclusive=True, group="query-names", exit_on_error=False)
    def names_for_completion(self) -> None:
        try:
            db = self.database()
            names = list(db.table_names())
            for t in ("events", "lanes", "flows", "links", "steps", "counters"):
                names += [c for c, _ in db.columns(t)]
        except Exception:  # noqa: BLE001 - completion is a help, never an error
            return
        self.app.call_from_thread(self._set_names, names)

    def _set_names(self, names: list[str]) -> None:
        self.box.suggester = NameSuggester(names)

    @work(thread=True, exclusive=True, group="query", exit_on_error=False)
    def run_query(self, query: str) -> None:
        """Run `query` off the UI thread; posts `Done` or `Failed` only."""
        from trntui.errors import TrntuiError

        try:
            db = self.database()
            result = db.batches(query, rows=MAX_ROWS)
            rows: list[tuple] = []
            total = 0
            for batch in result:
                total += batch.num_rows
                if len(rows) < MAX_ROWS:
                    cols = [c.to_pylist() for c in batch.columns]
                    rows.extend(list(zip(*cols))[: MAX_ROWS - len(rows)])
            self.post_message(self.Done(query, result.columns, rows, total, result.columns))
        except TrntuiError as exc:
            self.post_message(self.Failed(query, str(exc)))
        except Exception as exc:  # noqa: BLE001 - a notice, never a traceback
            self.post_message(self.Failed(query, f"unexpected {type(exc).__name__}: {exc}"))

    # -- the box ---------------------------------------------------------------------------------------------
    @on(Input.Submitted, "#q-box")
    def _submitted(self, event: Input.Submitted) -> None:
        query = event.value.strip()
        if not query:
            return
        if not self.history or self.history[-1] != query:
            self.history.append(query)
            del self.history[:-MAX_HISTORY]
            write_store({"saved": self.saved, "history": self.history})
        self._pos = len(self.history)
        self._status("running…")
        self.run_query(query)

    def on_key(self, event: Any) -> None:
        if self.focused is not self.box or event.key not in ("up", "down") or not self.history:
            return
        event.stop()
        event.prevent_default()
        self._pos = max(0, self._pos - 1) if event.key == "up" else min(len(self.history), self._pos + 1)
        self.box.value = self.history[self._pos] if self._pos < len(self.history) else ""
        self.box.cursor_position = len(self.box.value)

    def _status(self, text: str, error: bool = False) -> None:
        status = self.query_one("#q-status", Static)
        status.set_class(error, "-error")
        status.update(Text(safe_text(text)))

    # -- results ---------------------------------------------------------------------------------------------
    @on(Done)
    def _done(self, message: Done) -> None:
        table = self.results
        table.clear(columns=True)
        self.columns = list(message.columns)
        self._sort = None
        for c in self.columns:
            table.add_column(Text(safe_text(c)), key=c)
        table.add_rows([[_cell(v) for v in row] for row in message.rows])
        self._raw = {k: row for k, row in zip(table.rows, message.rows)}
        shown = f"first {len(message.rows):,} of " if message.total > len(message.rows) else ""
        hint = " · Enter: show on the timeline" if self._target_columns() else ""
        self._status(f"{shown}{message.total:,} row{'s' if message.total != 1 else ''}{hint}")
        if message.rows:
            table.focus()

    @on(Failed)
    def _failed(self, message: Failed) -> None:
        self._status(f"error: {message.reason}", error=True)
        self.box.focus()

    @on(DataTable.HeaderSelected, "#q-results")
    def _header(self, event: DataTable.HeaderSelected) -> None:
        self.sort_by(str(event.column_key.value))

    def sort_by(self, column: str) -> None:
        """Sort the results by `column` (again: the other way); NULLs last."""
        desc = bool(self._sort and self._sort[0] == column and not self._sort[1])
        self._sort = (column, desc)
        raw = self._raw
        k = self.columns.index(column)

        def key(row_key: Any) -> tuple:
            v = raw[row_key][k]
            return (v is None, _sortable(v))

        keys = sorted(raw, key=key, reverse=desc)
        if desc:  # NULLs last both ways
            keys = [r for r in keys if raw[r][k] is not None] + [r for r in keys if raw[r][k] is None]
        table = self.results
        rows = [raw[r] for r in keys]
        table.clear()
        new = table.add_rows([[_cell(v) for v in row] for row in rows])
        self._raw = dict(zip(new, rows))
        self._status(f"sorted by {column} {'↓' if desc else '↑'}")

    def _target_columns(self) -> list[str]:
        cols = [c for c in EVENT_COLUMNS if c in self.columns]
        if not cols and "start_ns" in self.columns:
            cols = ["start_ns"]
        return cols

    @on(DataTable.RowSelected, "#q-results")
    def _row(self, event: DataTable.RowSelected) -> None:
        row = self._raw.get(event.row_key)
        if row is None:
            return
        n = len(self.profile)
        for c in EVENT_COLUMNS:
            if c in self.columns:
                v = row[self.columns.index(c)]
                if isinstance(v, int) and 0 <= v < n:
                    self.dismiss(("event", v))
                    return
        if "start_ns" in self.columns:
            a = row[self.columns.index("start_ns")]
            b = row[self.columns.index("end_ns")] if "end_ns" in self.columns else a
            if isinstance(a, int) and isinstance(b, int):
                self.dismiss(("span", (a, max(b, a + 1))))
                return
        self.notify("This row has no event id or start_ns/end_ns to show", severity="warning")

    # -- actions ---------------------------------------------------------------------------------------------
    def action_close(self) -> None:
        self.dismiss(None)

    def action_focus_box(self) -> None:
        self.box.focus()

    def action_save(self) -> None:
        query = self.box.value.strip()
        if not query:
            return
        if query not in self.saved:
            self.saved.append(query)
        error = write_store({"saved": self.saved, "history": self.history})
        if error:
            self.notify(f"could not save the query: {error}", severity="error", markup=False)
        else:
            self.notify(f"saved ({len(self.saved)} saved queries; Ctrl+O brings them back)", markup=False)

    def action_saved(self) -> None:
        if not self.saved:
            self.notify("No saved queries yet (Ctrl+S saves the one in the box)", severity="warning")
            return
        self._saved_pos = (self._saved_pos + 1) % len(self.saved)
        self.box.value = self.saved[self._saved_pos]
        self.box.cursor_position = len(self.box.value)
        self.box.focus()
        self._status(f"saved query {self._saved_pos + 1} of {len(self.saved)} · Enter runs it")


def _cell(v: Any) -> Text:
    if v is None:
        return Text("NULL", style="dim")
    if isinstance(v, float):
        return Text(f"{v:,.3f}", justify="right")
    if isinstance(v, int) and not isinstance(v, bool):
        return Text(str(v), justify="right")
    return Text(truncate(safe_text(v), CELL_WIDTH))


def _sortable(v: Any) -> Any:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (0, v, "")
    return (1, 0, str(v))


KEY_SECTIONS = [("SQL query (:)", QueryScreen)]
"""The query screen's keys, for the help screen and docs/tui.md (trntui/tui/screens/__init__.py)."""


def open_screen(app: Any) -> None:
    """`:` in the explorer: SQL over the loaded run; a row chosen there is shown on the timeline."""
    if app.profile is None:
        app.notify("No profile loaded yet", severity="warning")
        return
    profile = app.profile

    def chosen(result: tuple[str, Any] | None) -> None:
        if result is None:
            return
        kind, value = result
        if kind == "event":
            app.show_event(int(value))
        else:
            from trntui.query.tables import origin_ns

            o = origin_ns(profile)  # the database's clock: start_ns 0 is the display span's start
            app.timeline.zoom_to_span(o + int(value[0]), o + int(value[1]))

    app.push_screen(QueryScreen(profile, app.run_name or ""), chosen)
