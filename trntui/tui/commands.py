"""Command palette (`ctrl+p`): every action of the app and its panes, plus sort by each column."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

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
