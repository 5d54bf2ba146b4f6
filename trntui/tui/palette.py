"""Command palette (`ctrl+p`): every action of the app and its panes, sort by each column, and every op and event
by name (`Op: aten::mm` selects the op, `Event: ncclKernel…` searches the timeline for it)."""

from __future__ import annotations

import re
from functools import partial
from typing import Any, Callable

import numpy as np
from rich.text import Text
from textual.command import DiscoveryHit, Hit, Hits, Provider

from trntui.textsafe import safe_text
from trntui.tui.keys import class_bindings, key_display
from trntui.tui import panes


class ActionsProvider(Provider):
    """Lists the app's `palette_commands()` (`PaletteCommands`): (title, help, callback)."""

    def _commands(self):
        app: PaletteCommands = self.app  # type: ignore[assignment]
        return app.palette_commands()

    async def discover(self) -> Hits:
        for title, help_text, callback in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), partial(callback), help=help_text)


MAX_EVENT_NAMES = 5000
"""Distinct event names offered (the most frequent first): the palette matches every entry on each keystroke."""


class NamesProvider(Provider):
    """`Op: <name>` for each row of the ops table and `Event: <name>` for each distinct event name."""

    def _entries(self):
        app: PaletteCommands = self.app  # type: ignore[assignment]
        return app.palette_names()

    async def search(self, query: str) -> Hits:
        # Plain case-insensitive word matching: Textual's fuzzy matcher takes seconds per keystroke on long
        # C++ kernel names, and names are found by what they contain anyway.
        words = query.lower().split()
        if not words:
            return
        for title, help_text, callback in self._entries():
            low = title.lower()
            spans = []
            for word in words:
                at = low.find(word)
                if at < 0:
                    break
                spans.append((at, at + len(word)))
            else:
                text = Text(title)
                for a, b in spans:
                    text.stylize("bold underline", a, b)
                exact = low == query.lower().strip()
                yield Hit(1.0 if exact else 0.9 - min(spans)[0] / max(len(low), 1) * 0.5, text, partial(callback), help=help_text)


class PaletteCommands:
    """What the palette lists, as a mixin of the app (`TrntuiApp`, which holds the panes, the table and the
    profile these entries act on)."""

    # provided by TrntuiApp
    ops: Any
    table: Any
    profile: Any
    timeline: Any
    run_action: Any
    action_pane: Any
    action_sort: Any
    select_op: Any

    def palette_commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        """(title, help, callback) for every action; the palette lists them."""
        out: list[tuple[str, str, Callable[[], object]]] = []
        for b in class_bindings(type(self)):
            if b.action in ("command_palette", "escape"):
                continue
            out.append((b.description, f"key: {key_display(b.key)}", lambda a=b.action: self.run_action(a)))
        for spec in panes.PANES:  # read at each call: the registry (trntui/tui/panes.py) as it is now
            for b in class_bindings(spec.widget):
                if b.action.startswith("sort_column("):
                    continue
                title = f"{spec.id.capitalize()}: {b.description}"
                out.append((title, f"key: {key_display(b.key)}", lambda p=spec.id, a=b.action: self.action_pane(p, a)))
        for k, col in enumerate(self.ops.columns):
            out.append((f"Sort by {col.title}", f"key: {k + 1}", lambda key=col.key: self.action_sort(key)))
        return out

    def palette_names(self) -> list[tuple[str, str, Callable[[], object]]]:
        """(title, help, callback) for every op of the table and the most frequent event names."""
        if self.table is None or self.profile is None:
            return []
        cached = self.profile.cache.get(("palette_names", id(self.table)))
        if cached is not None:
            return cached
        out: list[tuple[str, str, Callable[[], object]]] = []
        for row, name in enumerate(self.table.name):
            device = self.table.device_type[row]
            title = f"Op: {safe_text(name)}" + (f" [{device}]" if device != "CPU" else "")
            calls = int(self.table.count[row])
            out.append((title, f"{calls:,} call{'s' if calls != 1 else ''}: select it", lambda r=row: self.select_op(r)))
        counts = np.bincount(self.profile.name, minlength=len(self.profile.names))
        for name_id in np.argsort(-counts, kind="stable")[:MAX_EVENT_NAMES].tolist():
            if counts[name_id] == 0:
                break
            name = self.profile.names[name_id]
            out.append((f"Event: {safe_text(name)}", f"{int(counts[name_id]):,} events: find them on the timeline",
                        lambda n=name: self.find_events(n)))
        self.profile.cache[("palette_names", id(self.table))] = out
        return out

    def find_events(self, name: str) -> None:
        """Search the timeline for events named exactly `name` and focus it."""
        self.timeline.focus()
        self.timeline.search(f"^{re.escape(name)}$")
