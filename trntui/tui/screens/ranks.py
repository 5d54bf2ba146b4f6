"""The Ranks screen: a distributed job's ranks × steps heatmap, its stragglers, and who the collectives wait for.

The job's ranks are summarised in a thread worker on the local engine (a process pool: only the small per-rank
summaries come back; `trntui.per_rank`), then shown as a heatmap (`RankHeatmap`) with the cursor rank's numbers
below it. Enter opens the rank in the explorer (ops, timeline, chains); space marks up to two ranks and `c`
compares them in the compare view (marked pair, or one marked rank against the cursor's, or the cursor's rank
against the median rank). Esc goes back.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any, Sequence

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import get_current_worker

from trntui.textsafe import safe_text
from trntui.units import format_ms
from trntui.tui.widgets.rank_heatmap import RankHeatmap

if TYPE_CHECKING:
    from trntui.analysis.ranks import RanksReport


class RanksScreen(Screen[None]):
    """Heatmap of the job's ranks over its steps, the cursor rank's details, the straggler rule."""

    BINDINGS = [
        Binding("c", "compare", "Compare ranks", id="ranks-compare"),
        Binding("escape", "back", "Back", id="ranks-back"),
        Binding("question_mark,f1", "help", "Help", id="ranks-help"),
    ]

    DEFAULT_CSS = """
    RanksScreen { layout: vertical; }
    RanksScreen #ranks-title { height: 1; background: $panel; padding: 0 1; }
    RanksScreen RankHeatmap { height: 1fr; border-top: solid $panel-lighten-2; }
    RanksScreen RankHeatmap:focus { border-top: solid $accent; }
    RanksScreen #ranks-detail { height: auto; max-height: 8; padding: 0 1; border-top: solid $panel-lighten-2; }
    RanksScreen #ranks-rule { height: auto; max-height: 4; padding: 0 1; color: $text-muted; }
    """

    def __init__(self, job: str, runs: Sequence[Any], *, reason: str = "", report: "RanksReport | None" = None,
                 engine: Any = None, load_options: Any = None) -> None:
        super().__init__()
        self.load_options = load_options
        """The app's `LoadOptions` (None: the defaults)."""
        self.job = job
        self.runs = list(runs)
        self.reason = reason
        self.report: RanksReport | None = report
        self.engine = engine
        self.status = ""

    def compose(self) -> ComposeResult:
        yield Static(id="ranks-title", markup=False)
        yield RankHeatmap(id="ranks-heatmap")
        yield Static(id="ranks-detail", markup=False)
        yield Static(id="ranks-rule", markup=False)
        yield Footer()

    @property
    def heatmap(self) -> RankHeatmap:
        return self.query_one(RankHeatmap)

    def on_mount(self) -> None:
        self.heatmap.focus()
        if self.report is not None:
            self._show(self.report)
        else:
            self._title(f"summarising {len(self.runs)} ranks…")
            self.summarise()

    # -- work --------------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="ranks", exit_on_error=False)
    def summarise(self) -> None:
        from trntui.engine import EngineOptions
        from trntui.errors import TrntuiError
        from trntui.per_rank import summarize_ranks

        worker = get_current_worker()
        began = time.perf_counter()

        def progress(done: int, total: int) -> None:
            self.app.call_from_thread(self._title, f"summarising ranks: {done}/{total}… Esc cancels")

        try:
            report = summarize_ranks(self.runs, engine=self.engine or EngineOptions(), options=self.load_options,
                                     progress=progress, cancelled=lambda: worker.is_cancelled)
        except TrntuiError as exc:
            self.app.call_from_thread(self._failed, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - a bad rank is a notice, never a traceback
            self.app.call_from_thread(self._failed, f"unexpected {type(exc).__name__}: {exc}")
            return
        if worker.is_cancelled:
            return
        self.status = f"{time.perf_counter() - began:.1f} s"
        self.app.call_from_thread(self._show, report)

    def _failed(self, reason: str) -> None:
        self._title(f"ranks: {reason}")
        self.notify(safe_text(reason), severity="error", markup=False)

    def _show(self, report: "RanksReport") -> None:
        self.report = report
        setattr(self.app, "ranks_report", (self.job, report))  # the app reopens the screen without recomputing
        self.heatmap.set_report(report)
        self._title()
        self._rule()
        self._detail()

    # -- text --------------------------------------------------------------------------------------
    def _title(self, what: str = "") -> None:
        parts = [f"Ranks · {safe_text(self.job)} · {len(self.runs)} ranks"]
        rep = self.report
        if what:
            parts.append(what)
        elif rep is not None:
            parts.append(f"{len(rep.step_labels)} steps")
            parts.append("stragglers: " + (", ".join(safe_text(s) for s in rep.stragglers) if rep.stragglers else "none"))
            if rep.median_rank:
                parts.append(f"median rank {safe_text(rep.median_rank)}")
            parts.append(f"sort: {self.heatmap.sort}")
            if self.heatmap.marked:
                parts.append("marked: " + ", ".join(safe_text(rep.rows[i].label) for i in self.heatmap.marked))
            if self.status:
                parts.append(self.status)
        self.query_one("#ranks-title", Static).update(Text(" · ".join(parts)))

    def _rule(self) -> None:
        rep = self.report
        if rep is None:
            return
        lines = [self.heatmap.legend(), rep.rule.text()]
        if rep.collective_level:
            lines.append(f"collectives ({rep.collective_level}): {len(rep.collectives)} calls matched; "
                         + rep.collective_method)
        for f in rep.failures:
            lines.append(f"not read: {safe_text(f.name)}: {safe_text(f.error)}")
        self.query_one("#ranks-rule", Static).update(Text("\n".join(lines)))

    def detail_text(self) -> str:
        rep = self.report
        hm = self.heatmap
        if rep is None or hm.row < 0:
            return ""
        r = rep.rows[hm.row]
        step = rep.step_labels[hm.col] if rep.step_labels else ""
        t = r.step_times[hm.col] if r.step_times else math.nan
        head = f"rank {safe_text(r.label)} ({safe_text(r.name)})"
        if r.straggler:
            head += " · STRAGGLER: " + "; ".join(safe_text(x) for x in r.reasons)
        lines = [
            head,
            f"step {safe_text(step)}: {format_ms(t)} ms · mean {format_ms(r.step_mean)} ms ({_pct(r.vs_median_pct)} vs median) · "
            f"compute {format_ms(r.computation)} · comm {format_ms(r.communication)} · overlap {format_ms(r.overlap)} · "
            f"idle {format_ms(r.idle)} · waited {format_ms(r.wait)} ms/step in collectives"
            + (f" · arrived last at {r.last_arrivals} calls" if rep.collective_level else ""),
            f"top ops ({r.top_ops_metric}): " + "; ".join(f"{safe_text(n)} {v / 1e3:.3f} ms" for n, v in r.top_ops[:5]),
            "Enter: open this rank · space: mark · c: compare · s: sort · Esc: back",
        ]
        return "\n".join(lines)

    def _detail(self) -> None:
        self.query_one("#ranks-detail", Static).update(Text(self.detail_text()))

    @on(RankHeatmap.CursorMoved)
    def _moved(self) -> None:
        self._detail()
        if self.report is not None:
            self._title()

    # -- actions -----------------------------------------------------------------------------------
    @on(RankHeatmap.Opened)
    def _opened(self, message: RankHeatmap.Opened) -> None:
        run = self._run_of(message.row)
        if run is None:
            return
        opener = getattr(self.app, "open_run", None)
        if opener is None:
            self.notify("this app cannot open a rank", severity="warning")
            return
        self.app.pop_screen()
        opener(run)

    def _run_of(self, row: int) -> Any:
        rep = self.report
        if rep is None or not (0 <= row < len(rep.rows)):
            return None
        name = rep.rows[row].name
        return next((r for r in self.runs if r.name == name), None)

    def compare_pair(self) -> tuple[int, int] | None:
        """The two report rows `c` compares: the marked pair, a marked rank and the cursor's, else the cursor's
        rank and the median rank."""
        rep = self.report
        hm = self.heatmap
        if rep is None or hm.row < 0:
            return None
        marked = list(hm.marked)
        if len(marked) == 2:
            return marked[0], marked[1]
        if len(marked) == 1 and marked[0] != hm.row:
            return marked[0], hm.row
        median = next((i for i, r in enumerate(rep.rows) if r.label == rep.median_rank), 0)
        other = hm.row
        if other == median:
            return None
        return median, other

    def action_compare(self) -> None:
        pair = self.compare_pair()
        if pair is None:
            self.notify("mark two ranks with space (or put the cursor on a rank other than the median)",
                        severity="warning")
            return
        runs = [self._run_of(i) for i in pair]
        if None in runs:
            return
        self.notify(f"loading ranks {', '.join(safe_text(r.name) for r in runs)} to compare…", markup=False)
        self._compare(runs)

    @work(thread=True, exclusive=True, group="ranks-compare", exit_on_error=False)
    def _compare(self, runs: list) -> None:
        from trntui.analysis.compare import make_run
        from trntui.errors import TrntuiError
        from trntui.session import load_run
        from trntui.tui.loader import in_app

        try:
            loaded = [make_run(r.name, load_run(r, in_app(self.load_options))) for r in runs]
        except TrntuiError as exc:
            self.app.call_from_thread(self.notify, f"compare: {safe_text(exc)}", severity="error", markup=False)
            return
        self.app.call_from_thread(self._push_compare, loaded)

    def _push_compare(self, loaded: list) -> None:
        from trntui.tui.screens.compare import CompareScreen

        title = f"trntui compare · {self.job}: {loaded[0].name} vs {loaded[1].name}"
        self.app.push_screen(CompareScreen(loaded, title=title, closable=True))

    def action_back(self) -> None:
        if any(w.group == "ranks" and w.is_running for w in self.workers):
            self.workers.cancel_group(self, "ranks")
        self.app.pop_screen()

    def action_help(self) -> None:
        from trntui.tui.keys import key_reference
        from trntui.tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen(key_reference(KEY_SECTIONS), "trntui ranks keys"))




def _pct(p: float) -> str:
    return "-" if p is None or math.isnan(p) else f"{p:+.1f}%"


KEY_SECTIONS = [("Ranks screen", RanksScreen), ("Ranks heatmap", RankHeatmap)]
"""The Ranks screen's keys, for the help screen and docs/tui.md (trntui/tui/screens/__init__.py)."""


EVERY_RUN_KEY_HINT = "R again compares every run as a rank"
"""The app's way to what `trntui ranks --all` does (the CLI's hint names an option `open` does not have)."""


def open_screen(app: Any) -> None:
    """`R` in the explorer: the Ranks screen of the job under the path."""
    from trntui.errors import TrntuiError
    from trntui.loaders.grouping import groups_of, pick_job

    groups = groups_of(app.runs)
    jobs = [g for g in groups if g.kind == "job"]
    every, app.ranks_every_next = getattr(app, "ranks_every_next", False), False
    if len(jobs) > 1:  # several jobs under the path: the one of the run on screen, else the first
        job = next((g for g in jobs if any(r.name == app.run_name for r in g.runs)), jobs[0])
    else:
        try:
            job = pick_job(groups, app.path, every=every, every_hint=EVERY_RUN_KEY_HINT)
        except TrntuiError as exc:
            app.ranks_every_next = True  # the hint's key: R again takes every run as a rank
            app.notify(safe_text(exc), severity="warning", markup=False)
            return
    spans = sorted({r.span for r in job.runs if r.span is not None})
    runs = [r for r in job.runs if r.span == spans[0]] if spans else job.runs
    report = app.ranks_report[1] if app.ranks_report and app.ranks_report[0] == job.name else None
    app.push_screen(RanksScreen(job.name, runs, reason=job.reason, report=report, load_options=app.load_options))
