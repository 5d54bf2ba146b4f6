"""Command palette (`ctrl+p`): every action of the app and its panes, sort by each column, and every op and event
by name (`Op: aten::mm` selects the op, `Event: ncclKernel…` searches the timeline for it)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from rich.text import Text
from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from trntui.tui.app import TrntuiApp


class ActionsProvider(Provider):
    """Lists `TrntuiApp.palette_commands()`: (title, help, callback)."""

    def _commands(self):
        app: TrntuiApp = self.app  # type: ignore[assignment]
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
        app: TrntuiApp = self.app  # type: ignore[assignment]
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
