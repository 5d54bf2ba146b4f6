"""The chain pane: the selected event's dependency chain, framework op → runtime call(s) → hardware execution(s).

Each hop shows its start, duration and the latency from the hop above: `dispatch` (from the op's start to the
runtime call) or `queue` (from the end of the runtime call to the execution). Missing links are stated.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.message import Message
from textual.strip import Strip

from trntui.analysis.timeline import format_ns, format_offset
from trntui.model.profile import Tier
from trntui.tui.messages import PaneTitleChanged
from trntui.textsafe import safe_text, truncate
from trntui.tui.widgets.rows import RowList, cursor_bindings

if TYPE_CHECKING:
    from trntui.analysis.chains import Chain, Hop
    from trntui.model.profile import Profile
    from trntui.tui.messages import LoadedRun

MAX_BRANCHES_SHOWN = 64
"""Branches drawn before "… N more" (a ProfilerStep can launch thousands)."""

_TIER_SHORT = {Tier.DISPATCH: "framework", Tier.DEVICE: "fw device", Tier.RUNTIME: "runtime", Tier.HARDWARE: "hardware"}

Line = list[tuple[str, str]]
"""A line as (text, role) pieces; roles map to component styles."""


class ChainView(RowList):
    """Line-API view of one `Chain`, with the op's args on demand."""

    ALLOW_MAXIMIZE = True

    HELP = "Chain: the selected event from framework op to hardware, with gaps between hops."

    HEADER_LINES = 0

    BINDINGS = [
        Binding("a", "toggle_args", "Args", id="chain-args"),
        Binding("enter", "show_hop", "Show on timeline", id="chain-show-hop"),
        *cursor_bindings("chain", down="Next line", up="Previous line", paging=False),
        Binding("y", "copy_name", "Copy the hop's name", show=False, id="chain-copy"),
    ]

    COMPONENT_CLASSES = {"chain--title", "chain--muted", "chain--missing", "chain--name", "chain--hw", "chain--cursor"}

    DEFAULT_CSS = """
    ChainView { scrollbar-size-vertical: 1; overflow-x: hidden; }
    ChainView > .chain--title { text-style: bold; color: $text-accent; }
    ChainView > .chain--muted { color: $text-muted; }
    ChainView > .chain--missing { color: $text-warning; }
    ChainView > .chain--name { text-style: bold; }
    ChainView > .chain--hw { color: $text-success; }
    ChainView > .chain--cursor { background: $block-cursor-background; color: $block-cursor-foreground; }
    """

    class HopChosen(Message):
        """Enter on a hop: show event `event` on the timeline."""

        def __init__(self, view: "ChainView", event: int) -> None:
            self.view = view
            self.event = event
            super().__init__()

        @property
        def control(self) -> "ChainView":
            return self.view

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.line_events: list[int] = []
        """Per line: the event of the hop drawn on it, or -1."""
        self.cursor = 0
        self.profile: Profile | None = None
        self.chain: Chain | None = None
        self.event = -1
        self.origin = 0
        self.show_args = False
        self.error = ""
        self.lines: list[Line] = [[("Select an op (Enter in the ops table) or an event (Enter on the timeline).", "muted")]]

    # -- model -----------------------------------------------------------------------------------
    def show_run(self, run: "LoadedRun") -> None:
        """The `Pane` interface (trntui/tui/panes.py): chains of the loaded run, times from its origin."""
        self.set_profile(run.profile, run.origin)

    def set_profile(self, profile: "Profile", origin: int) -> None:
        self.profile = profile
        self.origin = origin
        self.chain = None
        self.event = -1
        self._build()

    def redraw(self) -> None:
        """Draw the current chain again (e.g. once the critical path is known, for its line)."""
        if self.chain is not None:
            self._build()

    def show_event(self, event: int) -> None:
        """Follow the links of `event` and draw its chain (a failure is shown, never raised)."""
        if self.profile is None:
            return
        from trntui.analysis.chains import follow

        self.event = event
        self.cursor = -1
        try:
            self.chain = follow(self.profile, event)
            self.error = ""
        except Exception as exc:  # noqa: BLE001 - a broken trace must not take the app down
            self.chain = None
            self.error = f"could not follow the links of this event: {type(exc).__name__}: {exc}"
        self._build()
        self.scroll_to(y=0, animate=False)

    @property
    def title(self) -> str:
        if self.profile is None or self.event < 0:
            return "Chain"
        return f"Chain · {truncate(safe_text(self.profile.name_of(self.event)), 40)}" + (" · args" if self.show_args else "")

    @property
    def text_lines(self) -> list[str]:
        """The lines as plain text (tests, docs)."""
        return ["".join(t for t, _ in line) for line in self.lines]

    # -- content ---------------------------------------------------------------------------------
    def _t(self, ns: int) -> str:
        return format_offset(ns - self.origin)

    def _hop_line(self, hop: "Hop", indent: str, name_width: int) -> Line:
        name = truncate(safe_text(hop.name), max(name_width - len(indent), 8))
        tier = _TIER_SHORT.get(hop.tier, hop.tier.title)
        timing = f"{format_ns(hop.duration):>8} @{self._t(hop.start):>12}"
        latency = ""
        if hop.prev_start is not None:
            if hop.tier == Tier.HARDWARE and hop.gap is not None:
                latency = f"queue {format_ns(hop.gap)}"
            elif hop.offset is not None:
                latency = f"dispatch {format_ns(hop.offset)}"
        role = "hw" if hop.tier == Tier.HARDWARE else "name"
        line: Line = [(indent, "muted"), (name.ljust(max(name_width - len(indent), 8)), role), (f" {timing}", "")]
        line.append((f"  {latency:<17}", ""))
        extra = f"{tier}"
        if hop.rule not in ("selected", "launched it"):
            extra += f" via {hop.rule}"
        if hop.cores > 1:
            extra += f" ×{hop.cores} cores"
        line.append((extra, "muted"))
        line.append((f"  {safe_text(hop.lane_label)}", "muted"))
        return line

    def _build(self) -> None:
        profile, chain = self.profile, self.chain
        lines: list[Line] = []
        events: list[int] = []

        def hop_line(hop: "Hop", indent: str, name_width: int) -> None:
            events.extend([-1] * (len(lines) - len(events)))
            lines.append(self._hop_line(hop, indent, name_width))
            events.append(hop.events[0])

        if self.error:
            lines.append([("⚠ " + safe_text(self.error), "missing")])
        elif profile is None or chain is None:
            lines.append([("Select an op (Enter in the ops table) or an event (Enter on the timeline).", "muted")])
        else:
            width = max((self.size.width or 80) - 1, 40)
            name_width = max(min(40, width - 60), 22)
            root = chain.root_hop
            if chain.root != chain.selected:
                lines.append([(f"selected {safe_text(profile.name_of(chain.selected))}; its chain starts at the op that launched it", "muted")])
            hop_line(root, "", name_width)
            shown = chain.branches[:MAX_BRANCHES_SHOWN]
            last_via = -1
            for b, branch in enumerate(shown):
                via = chain.via[b] if b < len(chain.via) else chain.root
                for d, hop in enumerate(branch):
                    if d == 0 and via != chain.root and hop.events == [via] and via == last_via:
                        continue  # the child op heading this branch was drawn for the previous one
                    indent = "  " * d + "└ "
                    hop_line(hop, indent, name_width)
                last_via = via
            more = len(chain.branches) - len(shown) + chain.truncated
            if more > 0:
                lines.append([(f"… {more} more branch{'es' if more > 1 else ''}", "muted")])
            for note in chain.missing:
                lines.append([("⚠ missing link: " + safe_text(note), "missing")])
            path_line = self._path_line(chain)
            if path_line:
                lines.append(path_line)
            if chain.parent >= 0:
                lines.append([("parent: ", "muted"), (safe_text(profile.name_of(chain.parent)), "")])
            if chain.children:
                names = ", ".join(safe_text(profile.name_of(c)) for c in chain.children[:6])
                more_kids = len(chain.children) - 6
                lines.append([
                    (f"children ({len(chain.children)}): ", "muted"),
                    (names + (f", … {more_kids} more" if more_kids > 0 else ""), ""),
                ])
            if self.show_args:
                lines.append([("args:", "title")])
                args = profile.args(chain.root)
                if not args:
                    lines.append([("  (none)", "muted")])
                for key, value in args.items():
                    text = value if isinstance(value, str) else json.dumps(value, default=str)
                    lines.append([(f"  {safe_text(key)}: ", "muted"), (safe_text(text), "")])
            else:
                lines.append([("a: show args (input dims, types)", "muted")])
        self.lines = lines
        self.line_events = events + [-1] * (len(lines) - len(events))
        if not 0 <= self.cursor < len(lines) or self.line_events[self.cursor] < 0:
            hops = [k for k, e in enumerate(self.line_events) if e >= 0]
            selected = [k for k in hops if self.line_events[k] == self.event]
            self.cursor = (selected or hops or [0])[0]
        self.update_extent()
        self.post_message(PaneTitleChanged(self))
        self.refresh()

    def _path_line(self, chain: "Chain") -> Line | None:
        """Whether the chain's op (and the selected event) is on the critical path, once the path of this profile
        has been computed (the Critical path screen `P` or the timeline's `m`); nothing before that."""
        from trntui.analysis.critical_path import cached_step_path

        profile = self.profile
        cp = cached_step_path(profile) if profile is not None else None
        if cp is None:
            return None
        ns = cp.event_ns()
        hops = sorted({e for e in [chain.root, chain.selected] + [h.events[0] for b in chain.branches for h in b
                                                                  if h.events] if e >= 0})
        on = [e for e in hops if cp.is_on_path(e)]
        where = f"critical path of step {cp.step}: "
        if not on:
            return [(where, "muted"), ("not on it (shortening this op does not shorten the step)", "")]
        t = sum(ns.get(e, 0) for e in on)
        root = "the op is on it" if cp.is_on_path(chain.root) else "the op is not on it"
        share = f", {t / 1000:,.1f} us of the path's {cp.length_ns / 1000:,.1f} us" if cp.length_ns else ""
        return [(where, "muted"), (f"{root}; {len(on)} of {len(hops)} hops on it{share}", "")]

    # -- actions ---------------------------------------------------------------------------------
    def action_toggle_args(self) -> None:
        self.show_args = not self.show_args
        self._build()

    def row_count(self) -> int:
        return len(self.lines)

    @property
    def cursor_line(self) -> int:
        """The line of the cursor (`cursor`)."""
        return self.cursor

    @cursor_line.setter
    def cursor_line(self, line: int) -> None:
        self.cursor = line

    def action_copy_name(self) -> None:
        """Copy the name of the hop under the cursor (else the chained event) to the clipboard (OSC 52)."""
        if self.profile is None:
            return
        event = self.line_events[self.cursor] if 0 <= self.cursor < len(self.line_events) else -1
        event = event if event >= 0 else self.event
        if event < 0:
            return
        name = self.profile.name_of(event)
        self.app.copy_to_clipboard(name)
        self.notify(f"copied {truncate(safe_text(name), 60)}", markup=False)

    def on_click(self, event) -> None:  # events.Click
        """Click: cursor to that line; double click on a hop: show it on the timeline."""
        offset = event.get_content_offset(self)
        if offset is None:
            return
        line = self.row_at(offset.y)
        if 0 <= line < len(self.lines):
            self.cursor = line
            self.focus()
            self.refresh()
            if event.chain >= 2:
                self.action_show_hop()

    def action_show_hop(self) -> None:
        event = self.line_events[self.cursor] if 0 <= self.cursor < len(self.line_events) else -1
        if event < 0:
            self.notify("Put the cursor on a hop (j/k) to show it on the timeline", severity="warning")
            return
        self.post_message(self.HopChosen(self, event))

    # -- rendering -------------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width or self.size.width
        base = self.rich_style
        k = self.row_at(y)
        if k >= len(self.lines):
            return Strip.blank(width, base)
        styles = {
            "": base,
            "title": base + self.get_component_rich_style("chain--title"),
            "muted": base + self.get_component_rich_style("chain--muted"),
            "missing": base + self.get_component_rich_style("chain--missing"),
            "name": base + self.get_component_rich_style("chain--name"),
            "hw": base + self.get_component_rich_style("chain--hw") + Style(bold=True),
        }
        if k == self.cursor and self.has_focus:
            cursor = self.get_component_rich_style("chain--cursor")
            segments = [Segment(text, styles.get(role, base) + cursor) for text, role in self.lines[k]]
            return Strip(segments).crop_extend(0, width, base + cursor)
        segments = [Segment(text, styles.get(role, base)) for text, role in self.lines[k]]
        return Strip(segments).crop_extend(0, width, base)

    def resized(self) -> None:
        if self.chain is not None:
            self._build()
