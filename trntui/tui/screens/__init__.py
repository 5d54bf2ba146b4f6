"""Screens of the explorer: the feature screens one key opens (`SCREENS`), and the modal helpers (help, run
picker, load error, search, instances) the app and panes push themselves.

A feature screen is one module here (e.g. `screens/compare.py`) that provides

- `open_screen(app)`: push the screen (or start a worker that pushes it when its data is ready); a load or an
  analysis never runs on the UI thread;
- `available(app) -> bool` (optional): whether its key works now (e.g. compare needs two runs); the footer and
  the palette leave it out when not;
- `KEY_SECTIONS` (optional): `[(section title, class with BINDINGS), ...]` of the screen's own keys, listed
  in docs/tui.md (trntui/tui/keys.py);

and ONE `ScreenSpec` line in `SCREENS` below: the app binds its key (footer, help, palette and docs follow).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class ScreenSpec:
    """A screen the explorer opens with one key."""

    id: str
    """Binding id and the `open_screen` action's argument (`open_screen('compare')`)."""
    key: str
    """Its key (Textual key names, comma-separated alternatives)."""
    description: str
    """What the footer, help screen and palette call it."""
    module: str
    """The module that opens it (imported on first use, so the explorer starts without it)."""

    def load(self) -> ModuleType:
        return importlib.import_module(self.module)

    def open(self, app: Any) -> None:
        self.load().open_screen(app)

    def available(self, app: Any) -> bool:
        check = getattr(self.load(), "available", None)
        return True if check is None else bool(check(app))

    def key_sections(self) -> list[tuple[str, type]]:
        return list(getattr(self.load(), "KEY_SECTIONS", []))


SCREENS: list[ScreenSpec] = [
    ScreenSpec("compare", "c", "Compare runs", "trntui.tui.screens.compare"),
    ScreenSpec("overview", "o", "Overview", "trntui.tui.screens.overview"),
    ScreenSpec("device", "D", "Device view", "trntui.tui.screens.device"),
    ScreenSpec("ranks", "R", "Ranks", "trntui.tui.screens.ranks"),
]
"""Every feature screen of the explorer, in the order the footer and help list their keys."""


def screen_spec(screen_id: str) -> ScreenSpec:
    return next(s for s in SCREENS if s.id == screen_id)
