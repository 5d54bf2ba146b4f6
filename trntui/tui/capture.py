"""Plain-text captures of the running app (tests and docs/tui.md): what the terminal shows, without styles."""

from __future__ import annotations

from textual.app import App


def screen_text(app: App) -> str:
    """The active screen as text, one line per terminal row (trailing spaces removed)."""
    strips = app.screen._compositor.render_strips()  # noqa: SLF001 - same source export_screenshot uses
    return "\n".join(strip.text.rstrip() for strip in strips)
