"""The Device view: inside one `nc_exec_running` — engine busy bars, engine lanes, roofline, top tables.

Opened from the explorer with `D` on a hardware-lane execution (trntui/tui/app.py). A thread worker finds the
device profile of that process and NeuronCore (in the opened path or beside it, matched through
`DeviceProfileList`), loads it, picks the execution (same clock: the selected interval; else the execution of the
same rank) and analyses it; it only posts `DeviceLoaded` / `DeviceFailed`, which the screen handles.

The engine lanes are the explorer's `Timeline` widget over a `Profile` built from the `Instruction` rows (one lane
per physical core × engine, one per DMA queue), so panning, zooming, `[`/`]` and labels work as on the system
timeline. `s`/`S` switch the table below (top instructions, framework ops, opcodes, HLO ops, DMA).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Static

from trntui.textsafe import safe_text
from trntui.tui.messages import PaneTitleChanged
from trntui.tui.widgets.timeline import Timeline

if TYPE_CHECKING:
    from trntui.analysis.device import DeviceReport, Target
    from trntui.report.device import Table
    from trntui.model.device import DeviceExport
    from trntui.model.profile import Profile

TABLE_ORDER = ("instructions", "framework_ops", "opcodes", "hlo", "dma_routes", "dma_queues", "engines", "summary_check")


@dataclass
class DeviceLoaded(Message):
    export: "DeviceExport"
    report: "DeviceReport"
    profile: "Profile"
    note: str = ""


@dataclass
class DeviceFailed(Message):
    reason: str


def find_device_export(roots: list[Path], target: "Target") -> tuple[Path, Any, str]:
    """(profile directory, identity, note) of the device profile for `target` (TrntuiError when none/ambiguous)."""
    from trntui.errors import TrntuiError
    from trntui.loaders.neuron_device import device_profiles_for

    refs = device_profiles_for(roots, instance=target.instance, pid=target.pid, nc=target.nc)
    where = " or ".join(str(r) for r in roots[:2])
    if not refs:
        raise TrntuiError(
            f"no device profile for PID {target.pid} NC{target.nc} in {where} (a directory with "
            "Instruction.parquet, from `neuron-explorer view --output-format parquet` of a capture with DEVICE mode)"
        )
    note = "" if refs[0].identity.pid is not None else "matched by location (the profile does not name its process)"
    if len(refs) > 1:
        names = ", ".join(r.name for r in refs[:4])
        note = f"{len(refs)} device profiles match ({names}); showing the first"
    return refs[0].path, refs[0].identity, note


class DeviceScreen(Screen[None]):
    """Engines, roofline, engine lanes and top tables of one device execution."""

    BINDINGS = [
        Binding("escape,q", "back", "Back", id="device-back"),
        Binding("s", "cycle_table(1)", "Switch table", id="device-next-table"),
        Binding("S", "cycle_table(-1)", "Switch table back", id="device-prev-table"),
        Binding("p", "roofline", "Roofline plot", id="device-roofline"),
        Binding("tab", "focus_next", "Next pane", show=False, id="device-focus-next"),
        Binding("question_mark,f1", "help", "Help", id="device-help"),
    ]

    DEFAULT_CSS = """
    DeviceScreen { layout: vertical; }
    DeviceScreen #device-title { height: auto; max-height: 2; background: $panel; padding: 0 1; }
    DeviceScreen #device-top { height: 12; }
    DeviceScreen.-short #device-top { height: 10; }
    DeviceScreen.-tall #device-top { height: 20; }
    DeviceScreen #device-engines { width: 60; height: 100%; padding: 0 1; border-right: solid $panel-lighten-2; }
    DeviceScreen.-narrow #device-engines { width: 1fr; }
    DeviceScreen #device-roofline { width: 1fr; height: 100%; padding: 0 1; }
    DeviceScreen #device-timeline { height: 1fr; min-height: 6; border-top: solid $panel-lighten-2; }
    DeviceScreen #device-timeline:focus { border-top: solid $accent; }
    DeviceScreen #device-table-title { height: 1; padding: 0 1; color: $text-muted; }
    DeviceScreen #device-table { height: 1fr; min-height: 4; border-top: solid $panel-lighten-2; }
    DeviceScreen #device-table:focus { border-top: solid $accent; }
    """

    def __init__(self, roots: list[Path], target: "Target", *, path: Path | None = None) -> None:
        super().__init__()
        self.roots = roots
        self.target = target
        self.path = path
        """A device profile directory to open directly (no search)."""
        self.export: DeviceExport | None = None
        self.report: DeviceReport | None = None
        self.tables: list[Table] = []
        self.table_index = 0
        self.error = ""

    def compose(self) -> ComposeResult:
        yield Static(Text(f"Device view · {safe_text(self.target.name)} · loading the device profile…"),
                     id="device-title", markup=False)
        with Horizontal(id="device-top"):
            yield Static(id="device-engines", markup=False)
            yield Static(id="device-roofline", markup=False)
        yield Timeline(id="device-timeline")
        yield Static(id="device-table-title", markup=False)
        yield DataTable(id="device-table", cursor_type="row", zebra_stripes=True)
        yield Footer()

    @property
    def timeline(self) -> Timeline:
        return self.query_one("#device-timeline", Timeline)

    def on_mount(self) -> None:
        self.timeline.border_title = Text("Engine lanes")
        self.timeline.loading = True
        self._load()

    def on_resize(self) -> None:
        self.set_class(self.size.height >= 40, "-tall")
        self.set_class(self.size.height < 30, "-short")
        self.set_class(self.size.width < 110, "-narrow")
        self._draw_engines()
        self._draw_roofline()

    # -- loading (thread worker: posts messages only) ---------------------------------------------------------
    @work(thread=True, exclusive=True, group="device", exit_on_error=False)
    def _load(self) -> None:
        from trntui.analysis.device import analyse, window_for
        from trntui.analysis.timeline import build_rows
        from trntui.errors import TrntuiError
        from trntui.loaders.neuron_device import device_profile, load_device
        from trntui.tui.widgets.timeline import MAX_SUBROWS

        t = self.target
        try:
            if self.path is not None:
                path, identity, note = self.path, None, ""
            else:
                path, identity, note = find_device_export(self.roots, t)
            export = load_device(path, identity, budget=self._budget())
            window, shift = window_for(export, system=(t.start, t.end), rank=t.rank)
            report = analyse(export, window=window, shift=shift)
            profile = device_profile(export, window, shift, nc=t.nc)
            build_rows(profile, MAX_SUBROWS)
            self.post_message(DeviceLoaded(export, report, profile, note))
        except TrntuiError as exc:
            self.post_message(DeviceFailed(str(exc)))
        except Exception as exc:  # noqa: BLE001 - a bad export shows a notice, never a traceback
            self.post_message(DeviceFailed(f"unexpected {type(exc).__name__}: {exc}"))

    def _budget(self) -> int | None:
        """The app's memory budget (`--memory-budget` / TRNTUI_MEMORY_BUDGET) in bytes, None: no limit."""
        from trntui.loaders.protocol import LoadOptions

        options = getattr(self.app, "load_options", None)
        return (options if options is not None else LoadOptions.from_env()).budget

    @on(DeviceFailed)
    def _failed(self, message: DeviceFailed) -> None:
        self.error = message.reason
        self.timeline.loading = False
        self.query_one("#device-title", Static).update(Text(f"Device view · error: {safe_text(message.reason)}"))
        self.query_one("#device-engines", Static).update(Text(safe_text(message.reason)))
        self.app.notify(safe_text(message.reason), severity="error", timeout=8)

    @on(DeviceLoaded)
    def _loaded(self, message: DeviceLoaded) -> None:
        from trntui.analysis.timeline import format_ns
        from trntui.report.device import tables

        self.export, self.report = message.export, message.report
        r, e = message.report, message.export
        title = (f"Device view · {safe_text(e.name)} · {safe_text(r.window.label)} · {format_ns(r.total_ns)} · "
                 f"{r.instruction_count:,} instructions")
        extra = [f"⚠ {safe_text(w.split(':')[0])}" for w in e.warnings[:1]] + ([safe_text(message.note)] if message.note else [])
        self.query_one("#device-title", Static).update(Text(" · ".join([title, *extra])))
        self.call_after_refresh(self._draw_engines)
        self.call_after_refresh(self._draw_roofline)
        self.timeline.loading = False
        self.timeline.set_profile(message.profile)
        self._lanes_title()
        by_key = {t.key: t for t in tables(r, limit=50)}
        self.tables = [by_key[k] for k in TABLE_ORDER if k in by_key]
        self.table_index = 0
        self._show_table()
        self.timeline.focus()

    def _lanes_title(self) -> None:
        """The lanes' border title: what the busy % in each lane label is (one core's own share of the span shown),
        beside the engines pane's union over cores."""
        from trntui.report.device import PER_CORE_NOTE

        note = f" · {PER_CORE_NOTE}" if self.report is not None and len(self.report.pcores) > 1 else ""
        title = self.timeline.title.removeprefix("Timeline · ")
        self.timeline.border_title = Text(f"Engine lanes{note} · {title}")

    @on(PaneTitleChanged)
    def _pane_title(self, message: PaneTitleChanged) -> None:
        message.stop()  # (the app would title the lanes "Timeline · …" and drop what their % is)
        if message.pane is self.timeline:
            self._lanes_title()

    def _draw_engines(self) -> None:
        if self.report is None:
            return
        from trntui.analysis.roofline import si
        from trntui.report.device import busy_heading, engine_lines, human_bytes, pct

        r = self.report
        pane = self.query_one("#device-engines", Static)
        width = pane.size.width or 60
        compact = width < 56
        bar = max(min(width - 2 - (31 if compact else 41), 16), 4)
        lines = [busy_heading(r, compact)] + engine_lines(r, bar, compact)
        if r.dma is not None and compact:
            lines.append(f"  DMA {human_bytes(r.dma.bytes)} · HBM {human_bytes(r.dma.hbm_read + r.dma.hbm_write)}")
        elif r.dma is not None:
            lines.append(f"  DMA {human_bytes(r.dma.bytes)} at {si(r.dma.bandwidth, 'B/s')} while active")
            lines.append(f"  HBM {human_bytes(r.dma.hbm_read)} read, {human_bytes(r.dma.hbm_write)} written")
        lines.append(f"  MFU {pct(r.mfu)} · MBU {pct(r.mbu)}" + ("" if compact else f" · FLOPs {si(r.flops, 'FLOP')}"))
        pane.update(Text("\n".join(lines)))

    def _draw_roofline(self) -> None:
        if self.report is None:
            return
        from trntui.analysis.roofline import ascii_plot, fmt_ai, short_verdict, si
        from trntui.report.device import plot_points

        r = self.report
        pane = self.query_one("#device-roofline", Static)
        if r.roof is None or r.execution is None:
            pane.update(Text(f"Roofline: {safe_text(r.roof_note)}"))
            return
        head = [f"Roofline · {safe_text(r.roof.label)}",
                f"peak {si(r.roof.flops, 'FLOP/s')} · HBM {si(r.roof.bandwidth, 'B/s')} · ridge {fmt_ai(r.roof.ridge)} FLOP/B",
                f"Verdict: {short_verdict(r.execution)}"]
        width = max(pane.size.width - 2, 10) if pane.size.width else 60
        points = plot_points(r)
        verdict_rows = -(-len(head[-1]) // width)
        height = (pane.size.height or 12) - len(head) - verdict_rows + 1 - 3 - len(points)
        if width < 40 or height < 5:  # too small for a readable plot: `p` shows it full size
            pane.update(Text("\n".join(head + ["p: roofline plot"])))
            return
        pane.update(Text("\n".join(head + ascii_plot(r.roof, points, width, height))))

    def action_roofline(self) -> None:
        """The roofline plot full size, with every point's verdict (a modal; Esc closes)."""
        if self.report is None or self.report.roof is None:
            self.app.notify(self.report.roof_note if self.report else "still loading", severity="warning")
            return
        self.app.push_screen(RooflineScreen(self.report))

    # -- tables -------------------------------------------------------------------------------------------------
    def _show_table(self) -> None:
        dt = self.query_one("#device-table", DataTable)
        dt.clear(columns=True)
        if not self.tables:
            self.query_one("#device-table-title", Static).update(Text("(no tables)"))
            return
        t = self.tables[self.table_index]
        names = " · ".join(("[" + x.title.split(" (")[0] + "]") if k == self.table_index else x.key
                           for k, x in enumerate(self.tables))
        self.query_one("#device-table-title", Static).update(Text(f"{t.title} · s/S: {names}"))
        for k, h in enumerate(t.headers):
            dt.add_column(Text(h, justify="right" if k in t.right else "left"), key=str(k))
        for row in t.rows:
            dt.add_row(*[Text(c[0], justify="right" if k in t.right else "left") for k, c in enumerate(row)])

    def action_cycle_table(self, step: int) -> None:
        if self.tables:
            self.table_index = (self.table_index + step) % len(self.tables)
            self._show_table()

    def table_title(self) -> str:
        """The table pane's title (tests)."""
        return str(self.query_one("#device-table-title", Static).render())

    # -- events and actions ---------------------------------------------------------------------------------------
    @on(Timeline.EventChosen, "#device-timeline")
    def _instruction_chosen(self, message: Timeline.EventChosen) -> None:
        message.stop()
        from trntui.analysis.timeline import format_ns

        p = self.timeline.profile
        if p is None:
            return
        i = message.event
        self.app.notify(f"{safe_text(p.name_of(i))} on {safe_text(p.lane_of(i).ident)} · "
                        f"{format_ns(int(p.end[i] - p.start[i]))}", timeout=4)

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_help(self) -> None:
        from trntui.tui.keys import key_reference
        from trntui.tui.screens.help import HelpScreen

        reference = key_reference([("Device view", DeviceScreen), ("Engine lanes (timeline keys)", Timeline)])
        self.app.push_screen(HelpScreen(reference, "trntui device view keys"))


class RooflineScreen(ModalScreen[None]):
    """The roofline plot at the size of the terminal, the verdict of each point and where the peaks come from."""

    BINDINGS = [Binding("escape,q,p", "dismiss", "Close", id="roofline-close")]

    DEFAULT_CSS = """
    RooflineScreen { align: center middle; }
    RooflineScreen > VerticalScroll { width: 96%; height: 94%; border: round $accent; background: $surface; padding: 0 1; }
    """

    def __init__(self, report: "DeviceReport") -> None:
        super().__init__()
        self.report = report

    def compose(self) -> ComposeResult:
        from textual.containers import VerticalScroll

        with VerticalScroll():
            yield Static(id="roofline-text", markup=False)

    def on_resize(self) -> None:
        from trntui.report.device import DEFINITIONS, roofline_lines

        width = max(int(self.size.width * 0.96) - 8, 40)
        ops = sum(1 for p in self.report.points if p.bound != "no data")
        height = max(int(self.size.height * 0.94) - 2 - 14 - 2 * ops, 8)
        lines = roofline_lines(self.report, width, height)
        lines += [""] + [f"  {safe_text(p.verdict())}" for p in self.report.points if p.bound != "no data"]
        lines += [""] + [f"Definition: {d}" for d in DEFINITIONS]  # the choices the schema leaves open, as the CLI
        self.query_one("#roofline-text", Static).update(Text("\n".join(lines)))


def open_device_view(app: Any, profile: "Profile", event: int, roots: list[Path]) -> bool:
    """Push the Device view for hardware event `event` of `profile`; False (with a notice) when it is not one."""
    from trntui.analysis.device import target_of

    target = target_of(profile, event) if event >= 0 else None
    if target is None:
        app.notify("Put the timeline cursor on a hardware execution (nc_exec_running) first, then press D",
                   severity="warning")
        return False
    app.push_screen(DeviceScreen(roots, target))
    return True


KEY_SECTIONS = [("Device view (D on a hardware execution)", DeviceScreen)]
"""The Device view's keys, for the help screen and docs/tui.md (trntui/tui/screens/__init__.py)."""


def available(app: Any) -> bool:
    """`D` in the explorer works on a Neuron profile (the spec's `ready`), and not from the Device view itself."""
    return not isinstance(app.screen, (DeviceScreen, RooflineScreen))


def open_screen(app: Any) -> None:
    """`D` in the explorer: the Device view (engines, DMA, roofline) of the hardware execution under the
    timeline cursor."""
    if app.profile is None:
        app.notify("No profile loaded", severity="warning")
        return
    open_device_view(app, app.profile, app.timeline.event_under_cursor(), device_roots(app))


def device_roots(app: Any) -> list[Path]:
    """Where device profiles of the loaded run may be: the run's directory, the opened path, beside it."""
    from trntui.loaders.neuron_device import search_roots

    run = next((r for r in app.runs if r.name == app.run_name), None)
    roots: list[Path] = []
    for p in ([run.root] if run is not None else []) + search_roots(app.path):
        if p.is_dir() and p not in roots:
            roots.append(p)
    return roots
