"""The explorer's footer: Textual's `Footer`, redrawn only when the keys it shows change, showing only the keys
that fit on the line (`?` always, with how many it lists beside them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Footer
from textual.widgets._footer import FooterKey

if TYPE_CHECKING:
    from textual.screen import Screen

HELP_ACTIONS = ("help", "show_help_panel")
"""The key that lists every key: never left out of the footer."""

DROP_FIRST = ("toggle_maximize", "cycle_sort")
"""Keys that give way before the others when the line is full (one key each, listed by `?`); then the line's end."""

PALETTE_CELLS = 14
"""What the command palette's key takes at the right end (`▏^p Commands`)."""


def key_cells(key: FooterKey) -> int:
    """Cells a footer key takes: ` k description ` (Textual's FooterKey: one cell of padding either side)."""
    return len(key.key_display) + (len(key.description) + 1 if key.description else 0) + 2


def fitting(keys: list[FooterKey], width: int) -> tuple[list[FooterKey], int]:
    """The keys shown on a `width`-cell footer and how many were left out: disabled keys first (they do nothing
    now), then `DROP_FIRST`, then from the end of the line; the help key always stays."""
    shown = [k for k in keys if not k.has_class("-disabled") or k.action in HELP_ACTIONS]
    room = width - PALETTE_CELLS - len(" (+99 keys)")
    while shown and sum(key_cells(k) for k in shown) > room:
        drop = next((k for k in shown if k.action in DROP_FIRST), None)
        if drop is None:
            drop = next((k for k in reversed(shown) if k.action not in HELP_ACTIONS), None)
        if drop is None:
            break
        shown.remove(drop)
    return shown, len(keys) - len(shown)


class KeysFooter(Footer):
    """Textual's Footer rebuilds its key widgets (a recompose: ~15 widgets mounted and styled) on every
    bindings signal: each focus change and each `refresh_bindings`. A loaded run sends two or three of those at
    once (the focus returns to the ops table, the screens' keys become available), at the moment the app draws
    the loaded run: this one recomposes only when the keys shown (key, label, enabled, tooltip) differ from
    those it shows. It shows the keys that fit the width; the help key says how many more it lists."""

    _shown: tuple | None = None
    _fit_width = 0
    """The width the keys shown were fitted to."""

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
        widgets = list(super().compose())
        keys = [w for w in widgets if isinstance(w, FooterKey) and not w.has_class("-command-palette")]
        if len(keys) != len([w for w in widgets if not isinstance(w, FooterKey) or not w.has_class("-command-palette")]):
            yield from widgets  # grouped keys (a KeyGroup): shown as Textual lays them out
            return
        self._fit_width = self.size.width or self.app.size.width
        shown, left_out = fitting(keys, self._fit_width)
        self.styles.grid_size_columns = len(shown) + (len(widgets) - len(keys))
        for w in widgets:
            if w in shown:
                if left_out and w.action in HELP_ACTIONS:
                    w.description = f"{w.description} (+{left_out} key{'s' if left_out > 1 else ''})"
                yield w
            elif w not in keys:
                yield w

    def on_resize(self) -> None:
        if self._fit_width and self._fit_width != self.size.width:
            self._shown = None
            self.call_after_refresh(self.recompose)

    def bindings_changed(self, screen: "Screen") -> None:
        if self._shown is not None and screen is self.screen and self.is_attached:
            keys = self._keys()
            if keys == self._shown:
                return
            self._shown = keys  # what the recompose this schedules will show: a signal before it runs is the same
        super().bindings_changed(screen)
