"""The key list, generated from the BINDINGS of the app and its panes (help screen, docs/tui.md)."""

from __future__ import annotations

from textual.binding import Binding

KEY_NAMES = {
    "question_mark": "?",
    "slash": "/",
    "plus": "+",
    "equals_sign": "=",
    "minus": "-",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "comma": ",",
    "full_stop": ".",
    "left": "←",
    "right": "→",
    "up": "↑",
    "down": "↓",
    "shift+tab": "shift+Tab",
    "tab": "Tab",
    "enter": "Enter",
    "escape": "Esc",
    "pagedown": "PgDn",
    "pageup": "PgUp",
    "home": "Home",
    "end": "End",
}


def key_display(keys: str) -> str:
    """`"left,h"` → `"← / h"`."""
    return " / ".join(KEY_NAMES.get(k.strip(), k.strip()) for k in keys.split(","))


def _bindings(cls: type) -> list[Binding]:
    out = []
    for b in getattr(cls, "BINDINGS", []):
        if isinstance(b, Binding):
            out.append(b)
        elif isinstance(b, tuple):
            out.append(Binding(*b))
    return out


def sections() -> list[tuple[str, type]]:
    """(title, class) of everything that has keys, in the order the help lists them."""
    from trntui.tui.app import TrntuiApp
    from trntui.tui.widgets.chain import ChainView
    from trntui.tui.widgets.op_table import OpTableView
    from trntui.tui.widgets.timeline import Timeline

    return [
        ("Everywhere", TrntuiApp),
        ("Ops table", OpTableView),
        ("Timeline", Timeline),
        ("Chain", ChainView),
    ]


def key_reference() -> list[tuple[str, list[tuple[str, str]]]]:
    """[(section, [(keys, description), ...]), ...] from the BINDINGS; sort-by-column keys are merged."""
    out = []
    for title, cls in sections():
        entries: list[tuple[str, str]] = []
        digits: list[str] = []
        for b in _bindings(cls):
            if b.action.startswith("sort_column("):
                digits.append(b.key)
                continue
            entries.append((key_display(b.key), b.description))
        if digits:
            entries.append((f"{digits[0]}…{digits[-1]}", "Sort by column n (Name, # Calls, Self CPU, CPU total, "
                            "Self/total/% device)"))
        if title == "Everywhere":
            entries.append(("Tab / shift+Tab", "Next / previous pane"))
        out.append((title, entries))
    return out
