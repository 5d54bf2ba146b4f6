"""`trntui open`: the Textual app. Ops table, timeline and chain panes over one loaded `Profile`.

Loading runs in a thread worker that only posts messages (`trntui.tui.messages`); the App handlers own every
state change and pass models down to the panes (attributes down, messages up).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Container
from textual.widgets import LoadingIndicator, Static
from textual.worker import get_current_worker

from trntui.textsafe import safe_text
from trntui.tui.app_actions import AppActions
from trntui.tui.palette import ActionsProvider, NamesProvider, PaletteCommands
from trntui.tui.messages import (
    DepthsReady, LoadCancelled, LoadFailed, LoadProgress, PaneTitleChanged, ProfileLoaded, ProfileShown, RunsFound,
)
from trntui.tui.panes import PANES, LoadedRun, Pane, same_view
from trntui.tui.screens import SCREENS, screen_spec
from trntui.tui.screens.timeline_requests import TimelineRequests
from trntui.tui.widgets.calltree import CallTreeView
from trntui.tui.widgets.chain import ChainView
from trntui.tui.widgets.keys_footer import KeysFooter
from trntui.tui.widgets.op_table import OpTableView
from trntui.tui.widgets.timeline import Timeline

if TYPE_CHECKING:
    from trntui.analysis.key_averages import OpTable
    from trntui.loaders.discover import Run
    from trntui.model.profile import Profile
    from trntui.request import LoadRequest

LOAD_STAGES = 5

BACKGROUND_NESTING_EVENTS = 250_000
"""Profiles this big get the timeline's nesting (its sub-rows) after the first frame, in a worker."""


class InfoBar(Static):
    """The header line: what was loaded (source, backend, steps, events, span) or what is happening."""

    DEFAULT_CSS = """
    InfoBar { height: 1; background: $panel; color: $text; padding: 0 1; }
    """


class NoticeBar(Static):
    """A banner under the header when the load lost something (a truncated file, skipped records): the first
    such note, as the CLI says it; `!` lists every note."""

    DEFAULT_CSS = """
    NoticeBar { height: 1; background: $warning-muted; color: $text; padding: 0 1; display: none; }
    NoticeBar.-shown { display: block; }
    """


def damage_notes(profile: "Profile") -> list[str]:
    """The notes that say the load did not read everything (what the banner shows), as the CLI words them."""
    out = []
    meta = profile.meta
    for note in meta.notes:
        if any(w in note for w in ("truncated", "corrupt", "could not be read", "unreadable")):
            out.append(note)
    if meta.skipped:
        parts = ", ".join(f"{v} {k}" for k, v in meta.skipped.items())
        out.append(f"Skipped {meta.skipped_total} input record(s): {parts}")
    return out


class StillLoadingIndicator(LoadingIndicator):
    """The panes' "loading" overlay, drawn once instead of 16 times a second: the header line shows the load's
    stage and progress. Textual's animated indicator redraws every pane at 16 fps for the whole load, ~0.25 of
    a core here (3 of the app's 7 s of CPU while a 2M-event trace decodes), taken from the decode's two
    processes on a small machine."""

    @property
    def auto_refresh(self) -> float | None:  # type: ignore[override]
        return None

    @auto_refresh.setter
    def auto_refresh(self, interval: float | None) -> None:
        pass

    def render(self) -> Text:
        return Text("loading…", style="dim")


def describe(profile: "Profile", run_name: str, source: str) -> str:
    """One header line for a loaded profile."""
    from trntui.analysis.timeline import display_span, format_ns

    meta = profile.meta
    device = meta.backend or meta.device_kind.upper() or "CPU"
    steps = profile.step_names()
    a, b = display_span(profile)
    parts = [
        source,
        f"run {run_name}" if run_name and run_name != Path(source).name else "",
        device if meta.backend else "CPU only",
        f"{len(steps)} step{'s' if len(steps) != 1 else ''}" if steps else "no steps",
        f"{len(profile):,} events",
        f"span {format_ns(b - a)}",
    ]
    if meta.skipped_total:
        parts.append(f"{meta.skipped_total:,} skipped")
    return " · ".join(p for p in parts if p)


class TrntuiApp(AppActions, PaletteCommands, TimelineRequests, App[None]):
    """Find the hotspot, see it on the timeline, follow it down to the hardware — with the keyboard."""

    CSS_PATH = Path(__file__).with_name("trntui.tcss")
    TITLE = "trntui"
    COMMANDS = App.COMMANDS | {ActionsProvider, NamesProvider}
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (150, "-wide")]

    BINDINGS = [
        Binding("q", "quit", "Quit", id="quit"),
        Binding("question_mark,f1", "help", "Help", id="help"),
        Binding("ctrl+p", "command_palette", "Commands", show=False, id="palette"),
        Binding("z", "toggle_maximize", "Maximize", id="maximize"),
        Binding("r", "pick_run", "Runs", id="runs"),
        Binding("exclamation_mark", "notes", "Notes", id="notes"),
        *[Binding(s.key, f"open_screen('{s.id}')", s.description, id=s.id) for s in SCREENS],
        Binding("escape", "escape", "Restore / close / cancel the load", show=False, id="escape"),
        Binding("ctrl+c", "interrupt", "While loading: cancel the load and quit", show=False, id="interrupt"),
    ]

    def __init__(
        self, path: str | Path, run: str | None = None, *, steps: str | None = None, window: str | None = None,
        load_options: Any = None, merge: bool = False, prestarted: Any = None, request: Any = None,
        runs: "list[Run] | None" = None,
    ) -> None:
        super().__init__()
        self.request = request
        """The `LoadRequest` `trntui open` resolved for the first load (None: resolved here, from `path` and `run`)."""
        self.prestarted = prestarted
        """`trntui.tui.loader.Prestarted`: the loader process `trntui open` started for the first run, or None."""
        self.path = Path(path)
        self.merge = merge
        """`--merge`: every trace file under the path is one run."""
        self.requested_run = run
        self.steps_spec = steps
        """`--steps 3-5`: the ops table counts only these ProfilerStep#N windows; the timeline opens on them."""
        self.window_spec = window
        """`--window 10ms:20ms`: likewise for a time window (relative to the timeline's +0)."""
        self.load_options = load_options
        """`LoadOptions` of the command (memory budget, cache); None: the defaults (trntui/settings.py)."""
        self.runs: list[Run] = list(runs or [])
        """The runs under the path, found once (by `trntui open`, else by the first load)."""
        self.run_name: str | None = None
        self.profile: Profile | None = None
        self.table: OpTable | None = None
        self.load_seconds = 0.0
        self.load_cpu_seconds = 0.0
        """CPU time of the load worker's thread (what the load costs on a machine with nothing else to do)."""
        self.load_error = ""
        self.shown: LoadedRun | None = None
        """The run every pane shows (profile and table), None before the first load."""
        self.shown_early: LoadedRun | None = None
        """The run being loaded, shown in the `before_table` panes while its table is computed (`ProfileShown`)."""
        self.focus_when_shown: Any = None
        """The focused widget when `shown_early` was shown (the loading ops table cannot take the focus)."""
        self.ranks_every_next = False
        """`R` said there is no job under the path: the next `R` takes every run as a rank (its hint says so)."""
        self.ranks_report: tuple[str, object] | None = None
        """(job name, RanksReport) of the last Ranks screen, so reopening it does not summarise again."""

    # -- layout ----------------------------------------------------------------------------------
    def get_loading_widget(self) -> LoadingIndicator:
        return StillLoadingIndicator()

    def compose(self) -> ComposeResult:
        yield InfoBar(Text(safe_text(f"{self.path.name} · loading…")), id="info", markup=False)
        yield NoticeBar(id="notice", markup=False)
        with Container(id="panes"):
            for spec in PANES:
                yield spec.make()
        yield KeysFooter()

    def panes(self) -> list[Pane]:
        """The pane widgets, in `PANES` order."""
        return [self.query_one(f"#{spec.id}") for spec in PANES]  # type: ignore[misc]

    @property
    def ops(self) -> OpTableView:
        return self.query_one("#ops", OpTableView)

    @property
    def timeline(self) -> Timeline:
        return self.query_one("#timeline", Timeline)

    @property
    def chain(self) -> ChainView:
        return self.query_one("#chain", ChainView)

    @property
    def calltree(self) -> CallTreeView:
        """The call-tree pane (shown on wide terminals only)."""
        return self.query_one("#calltree", CallTreeView)

    def chain_event(self, event: int) -> None:
        """Chain `event` and let the call-tree pane follow it (it builds its tree only while shown)."""
        self.chain.show_event(event)
        for tree in self.query("#calltree").results(CallTreeView):
            tree.follow(event)

    def on_mount(self) -> None:
        for pane in self.panes():
            pane.add_class("pane")  # type: ignore[attr-defined]
        self.ops.focus()
        self._titles()
        self.start_load(self.requested_run)

    def _titles(self) -> None:
        for pane in self.panes():
            self._title(pane)

    def _title(self, pane: Any) -> None:
        """Show the pane's `title` in its border. Set only when it changed: setting a border title repaints the
        whole pane (Textual refreshes it unconditionally), and the app sets them all after each change."""
        title = pane.title
        if getattr(pane, "_trntui_title", None) != title:
            pane._trntui_title = title
            pane.border_title = Text(title)

    def _info(self, text: str) -> None:
        """Show `text` (it may hold file and run names: made terminal-safe, never markup) in the header."""
        self.query_one("#info", InfoBar).update(Text(safe_text(text)))

    # -- loading ---------------------------------------------------------------------------------
    def start_load(self, run_name: str | None, run: "Run | None" = None) -> None:
        """Load `run_name` (or the only run) under `path` in a thread worker; `run`: that run itself (a rank
        opened from the Ranks screen), found without looking at the path again."""
        for pane in self.panes():
            pane.loading = True
        self.load(self.path, run_name, run)

    def open_run(self, run: "Run") -> None:
        """Show `run` in the explorer with the timeline focused (Enter on the Ranks screen)."""
        self.focus_after_load = "timeline"
        self.start_load(run.name, run)

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def load(self, path: Path, run_name: str | None, given: "Run | None" = None) -> None:
        """Find, read and analyse one run; posts messages only (never touches widgets)."""
        from trntui.errors import TrntuiError
        from trntui.progress import Cancelled

        worker = get_current_worker()
        began = time.perf_counter()
        began_cpu = time.thread_time()
        last_post = [0.0]
        current = [0]
        """The stage the load is in (1 … LOAD_STAGES): each new stage counts up, progress within it keeps it."""

        def stage(text: str) -> None:
            """A new stage of the load: the header counts it (`(3/5)`), the loader's progress stays in it."""
            current[0] = min(current[0] + 1, LOAD_STAGES)
            self.post_message(LoadProgress(text, current[0], LOAD_STAGES))

        def progress(stage: str, done: int, total: int) -> None:
            """Called by the loader between chunks: stop when cancelled, else post (at most 4 per second: each
            post redraws the header, CPU taken from the decode)."""
            if worker.is_cancelled:
                raise Cancelled()
            if not stage:  # `progress.finished()`: nothing to show
                return
            now = time.perf_counter()
            if now - last_post[0] >= 0.25:
                last_post[0] = now
                self.post_message(LoadProgress(stage, current[0], LOAD_STAGES, done / total if total else None))

        def check() -> None:
            if worker.is_cancelled:
                raise Cancelled()

        try:
            stage("finding runs")
            request = self._request(path, run_name, given)
            if request is None:
                return  # several runs and none named: the picker asks (RunsFound)
            runs = self.runs
            run = request.run
            from trntui.tui.loader import open_for_app
            from trntui.tui.widgets.timeline import MAX_SUBROWS

            prestarted, self.prestarted = self.prestarted, None
            started = prestarted.take(request) if prestarted is not None else None
            done = open_for_app(
                request, progress=progress, check=check, part=self._subset, max_depth=MAX_SUBROWS,
                background_events=BACKGROUND_NESTING_EVENTS, started=started,
                stage=stage,
                describe=lambda profile: describe(profile, run.name, path.name),
                shown=lambda profile, view: self.post_message(ProfileShown(run, profile, view)),
            )
            stage("drawing")
            self.post_message(
                ProfileLoaded(run, runs, done.profile, done.table, time.perf_counter() - began, view=done.view,
                              subset=done.subset_text, cpu_seconds=time.thread_time() - began_cpu,
                              header=done.header)
            )
        except Cancelled:
            self.post_message(LoadCancelled())
        except TrntuiError as exc:
            self.post_message(LoadFailed(str(exc)))
        except Exception as exc:  # noqa: BLE001 - a bad file shows a notice, never a traceback
            self.post_message(LoadFailed(f"unexpected {type(exc).__name__}: {exc}"))

    def _request(self, path: Path, run_name: str | None, given: "Run | None") -> "LoadRequest | None":
        """The request to load (from the worker thread): the one `trntui open` resolved for the first load, else
        `given` (a rank from the Ranks screen) or the run named among the runs found once under the path (found
        now on the first load only); None when there are several and none is named (the picker is asked)."""
        from trntui.request import Ambiguous, choose, request_for

        ready, self.request = self.request, None
        options = self.load_options
        if ready is not None and (run_name is None or run_name == ready.run.name) and given is None:
            return ready
        if given is not None:
            return request_for(path, given, options=options, merge=self.merge)
        if not self.runs:
            from trntui.formats import find_runs

            self.runs = find_runs(path, merge=self.merge)
        try:
            return choose(path, self.runs, run_name, options=options, merge=self.merge)
        except Ambiguous:
            self.post_message(RunsFound(self.runs))
            return None

    def _subset(self, profile: "Profile") -> tuple[np.ndarray | None, tuple[int, int] | None, str]:
        """Events, timeline view and header text for `--steps` / `--window` (None, None, "" without them)."""
        if not (self.steps_spec or self.window_spec):
            return None, None, ""
        from trntui.analysis.select import parse_window, select_events, windows_for_steps

        subset = select_events(profile, steps_spec=self.steps_spec, window_spec=self.window_spec)
        spans = windows_for_steps(profile, self.steps_spec) if self.steps_spec else []
        t0, t1 = (min(a for a, _ in spans), max(b for _, b in spans)) if spans else (None, None)
        if self.window_spec:
            w0, w1 = parse_window(self.window_spec, profile)
            t0, t1 = (w0, w1) if t0 is None else (max(t0, w0), min(t1, w1))
        view = (t0, t1) if t0 is not None and t1 > t0 else None
        what = " ".join(x for x in (f"steps {self.steps_spec}" if self.steps_spec else "",
                                     f"window {self.window_spec}" if self.window_spec else "") if x)
        return subset, view, f"{what}: {len(subset):,} events"

    @on(LoadProgress)
    def _load_progress(self, message: LoadProgress) -> None:
        done = f" {int(message.fraction * 100)}%" if message.fraction is not None else ""
        self._info(
            f"{self.path.name} · loading: {message.stage}{done} ({message.step}/{message.total})… Esc cancels"
        )

    def _loaded_run(self, name: str, profile: "Profile", table: "OpTable | None", view: tuple[int, int] | None) -> LoadedRun:
        """What the panes are shown of a loaded run."""
        from trntui.analysis.timeline import display_span

        # --steps: the clock starts at the first selected step (--window times are from the trace start)
        origin = view[0] if view is not None and self.steps_spec else display_span(profile)[0]
        return LoadedRun(name, profile, table, view, origin)

    @on(ProfileShown)
    def _profile_shown(self, message: ProfileShown) -> None:
        if not self.loading_now():
            return  # the load was cancelled or replaced meanwhile
        run = self._loaded_run(message.run.name, message.profile, None, message.view)
        self.shown_early = run
        self.focus_when_shown = self.focused
        for spec, pane in zip(PANES, self.panes()):
            if spec.before_table:
                pane.show_run(run)
                pane.loading = False
        self._titles()

    def _drop_early(self) -> bool:
        """A load that showed its profile early ended without its table: those panes go back to the run the ops
        table shows; on a first load they keep the profile that was read (True then)."""
        early, self.shown_early = self.shown_early, None
        if early is None:
            return False
        if self.shown is None:
            return True
        for spec, pane in zip(PANES, self.panes()):
            if spec.before_table:
                pane.show_run(self.shown)
        self._titles()
        return False

    @on(LoadCancelled)
    def _load_cancelled(self, message: LoadCancelled) -> None:
        kept = self._drop_early()
        for pane in self.panes():
            pane.loading = False
        if self.profile is not None and self.run_name is not None:
            self._info(f"load cancelled · still showing {describe(self.profile, self.run_name, self.path.name)}")
        else:
            more = " · r: pick a run" if len(self.runs) > 1 else ""
            what = " before the ops table (the timeline shows what was read)" if kept else ""
            self._info(f"{self.path.name} · load cancelled{what}{more} · q: quit")
        self.refresh_bindings()

    @on(RunsFound)
    def _runs_found(self, message: RunsFound) -> None:
        self.runs = message.runs
        self.refresh_bindings()
        for pane in self.panes():
            pane.loading = False
        self._info(f"{self.path.name} · {len(self.runs)} runs: pick one (r)")
        self.action_pick_run()

    @on(ProfileLoaded)
    def _profile_loaded(self, message: ProfileLoaded) -> None:
        self.runs = message.runs
        self.run_name = message.run.name
        self.profile = message.profile
        self.table = message.table
        self.load_seconds = message.seconds
        self.load_cpu_seconds = message.cpu_seconds
        self.load_error = ""
        run = self._loaded_run(message.run.name, message.profile, message.table, message.view)
        early, self.shown_early = self.shown_early, None
        self.shown = run
        shown = [(spec, pane) for spec, pane in zip(PANES, self.panes())
                 if not (spec.before_table and same_view(early, run))]  # those already show this profile
        for spec, pane in shown:
            pane.show_run(run)
        for spec, pane in shown:
            pane.loading = False
        header = message.header or describe(message.profile, message.run.name, self.path.name)
        self._info(f"{header} · {message.subset}" if message.subset else header)
        self._notice(message.profile)
        self._titles()
        if early is not None and self.focused is not None and self.focused is not self.focus_when_shown:
            pass  # the user went to a pane shown before the table (Tab, a click): the focus stays there
        elif getattr(self, "focus_after_load", "") == "timeline":
            self.timeline.focus()
        else:
            self.ops.focus()
        self.focus_after_load = ""
        self.refresh_bindings()
        from trntui.analysis.timeline import depths_ready

        if not depths_ready(message.profile):
            # after this frame: the nesting (~1 s of a 2M-event profile, in a thread) would share the GIL with it
            self.call_after_refresh(self._start_depths, message.profile)

    def _start_depths(self, profile: "Profile") -> None:
        from trntui.analysis.timeline import depths_ready

        if profile is self.profile and not depths_ready(profile):
            self.prepare_depths(profile)

    @work(thread=True, exclusive=True, group="depths", exit_on_error=False)
    def prepare_depths(self, profile: "Profile") -> None:
        """The timeline's nesting and sub-rows of a big profile, after its first frame; kept beside its cache
        entry for the next open."""
        from trntui.analysis.timeline import lane_groups
        from trntui.tui.loader import save_timeline
        from trntui.tui.widgets.timeline import MAX_SUBROWS

        profile.nesting()
        lane_groups(profile, MAX_SUBROWS)
        self.post_message(DepthsReady(profile))
        save_timeline(profile, MAX_SUBROWS)

    @on(DepthsReady)
    def _depths_ready(self, message: DepthsReady) -> None:
        if message.profile is self.profile:
            self.timeline.depths_arrived()

    @on(LoadFailed)
    def _load_failed(self, message: LoadFailed) -> None:
        from trntui.tui.screens.error import ErrorScreen

        self.load_error = message.reason
        self._drop_early()
        for pane in self.panes():
            pane.loading = False
        self._info(f"error: {message.reason}")
        self.push_screen(ErrorScreen(message.reason))

    def _notice(self, profile: "Profile | None") -> None:
        """Show the banner when `profile`'s load lost something, hide it otherwise."""
        bar = self.query_one("#notice", NoticeBar)
        damage = damage_notes(profile) if profile is not None else []
        if damage:
            more = f" (+{len(damage) - 1} more)" if len(damage) > 1 else ""
            bar.update(Text(safe_text(f"⚠ {damage[0]}{more} · !: every note")))
        bar.set_class(bool(damage), "-shown")

    def exit_code(self) -> int:
        """What `trntui open` exits with: the code the app was quit with (2 from a load error's screen), and 2
        when quit with nothing loaded after a load failed (like the CLI on bad input)."""
        from trntui.tui.screens.error import ERROR_EXIT_CODE

        code = self.return_code or 0
        if not code and self.load_error and self.profile is None:
            code = ERROR_EXIT_CODE
        return code

    def action_notes(self) -> None:
        """`!`: the loaded run's notes (the CLI's lines under its table), the cursor row's marked cells first."""
        from trntui.tui.screens.notes import NotesScreen

        row = -1
        ops = self.ops
        if self.focused is ops and len(ops.view):
            row = int(ops.view[ops.cursor])
        self.push_screen(NotesScreen(self.profile, self.table, row))

    # -- pane coordination -----------------------------------------------------------------------
    @on(PaneTitleChanged)
    def _title_changed(self, message: PaneTitleChanged) -> None:
        self._title(message.pane)

    @on(OpTableView.OpSelected)
    def _op_selected(self, message: OpTableView.OpSelected) -> None:
        if message.control is self.ops:
            self.select_op(message.row)
            if message.then == "longest":
                self.timeline.action_longest()
                if self.timeline.cursor_event >= 0:
                    self.chain_event(self.timeline.cursor_event)
                    self._titles()
            elif message.then == "instances":
                self.timeline.show_instance_list()
            elif message.then == "tree" and self.timeline.cursor_event >= 0:
                self.timeline.show_call_tree(self.timeline.cursor_event)

    def select_op(self, row: int) -> None:
        """Make OpTable row `row` the selection: highlight its instances (and what they launched), chain the
        first instance, move the timeline cursor to it."""
        if self.table is None or self.profile is None:
            return
        from trntui.analysis.links import launching_ops

        events = np.asarray(self.table.rows_events[row], np.int64)
        if len(events) == 0:
            self.notify("This row has no events to show", severity="warning")
            return
        launched = np.nonzero(np.isin(launching_ops(self.profile), events))[0]
        self.timeline.select(np.concatenate([events, launched]), events, safe_text(self.table.name[row]))
        first = int(events[np.argmin(self.profile.start[events])])
        self.timeline.zoom_to_event(first)  # the first instance (and what it launched) fills the pane
        self.chain_event(first)
        self._titles()

    @on(Timeline.EventChosen)
    def _event_chosen(self, message: Timeline.EventChosen) -> None:
        if message.control is not self.timeline:
            return  # a timeline on another screen (compare view) handles its own chain
        self.chain_event(message.event)
        self._titles()

    @on(CallTreeView.NodeChosen)
    def _node_chosen(self, message: CallTreeView.NodeChosen) -> None:
        if message.control is self.calltree:
            self.timeline.show_events(message.events)

    @on(ChainView.HopChosen)
    def _hop_chosen(self, message: ChainView.HopChosen) -> None:
        if message.control is self.chain:
            self.timeline.go_to_event(message.event)

    def show_event(self, event: int) -> None:
        """Put event `event` under the timeline cursor, highlighted, and chain it (screens call this when the
        user picks an event there, e.g. a kernel in the overview)."""
        ev = np.array([event], np.int64)
        self.timeline.select(ev, ev)
        self.timeline.go_to_event(event)
        self.chain_event(event)
        self._titles()

    def action_open_screen(self, screen_id: str) -> None:
        """Open one of the feature screens (`SCREENS`, trntui/tui/screens/__init__.py), e.g. compare."""
        screen_spec(screen_id).open(self)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "open_screen" and parameters:
            return screen_spec(str(parameters[0])).available(self)
        if action == "pick_run":
            return len(self.runs) > 1
        return True
