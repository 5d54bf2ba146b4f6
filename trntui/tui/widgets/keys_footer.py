"""The explorer's footer: Textual's `Footer`, redrawn only when the keys it shows change."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Footer

if TYPE_CHECKING:
    from textual.screen import Screen


class KeysFooter(Footer):
    """Textual's Footer rebuilds its key widgets (a recompose: ~15 widgets mounted and styled) on every
    bindings signal: each focus change and each `refresh_bindings`. A loaded run sends two or three of those at
    once (the focus returns to the ops table, the screens' keys become available), at the moment the app draws
    the loaded run: this one recomposes only when the keys shown (key, label, enabled, tooltip) differ from
    those it shows."""

    _shown: tuple | None = None

    def _keys(self) -> tuple:
        """What `Footer.compose` would show now."""
        app = self.app
        rows = tuple(
            (binding.key, app.get_key_display(binding), binding.description, binding.action, binding.group,
             enabled, tooltip)
            for (_, binding, enabled, tooltip) in self.screen.active_bindings.values() if binding.show
        )
        return rows, self.show_command_palette, app.ENABLE_COMMAND_PALETTE

    def compose(self):  # type: ignore[override]
        self._shown = self._keys() if getattr(self, "_bindings_ready", False) else None
        yield from super().compose()

    def bindings_changed(self, screen: "Screen") -> None:
        if self._shown is not None and screen is self.screen and self.is_attached:
            keys = self._keys()
            if keys == self._shown:
                return
            self._shown = keys  # what the recompose this schedules will show: a signal before it runs is the same
        super().bindings_changed(screen)
