"""The key list, generated from the BINDINGS of the app and its panes (help screen, docs/tui.md).

This module names no app and no screen: the app hands its class in (`sections(app_class)`), and the screens
with a key list of their own (compare, ranks, device) build it from their classes with `key_reference`."""

from __future__ import annotations

from textual.binding import Binding

KEY_NAMES = {
    "question_mark": "?",
    "exclamation_mark": "!",
    "slash": "/",
    "plus": "+",
    "equals_sign": "=",
    "minus": "-",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "left_curly_bracket": "{",
    "right_curly_bracket": "}",
    "greater_than_sign": ">",
    "comma": ",",
    "full_stop": ".",
    "colon": ":",
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


def class_bindings(cls: type) -> list[Binding]:
    """`cls.BINDINGS` as Binding objects (tuples made Bindings), in order: what the help list and the palette show."""
    out = []
    for b in getattr(cls, "BINDINGS", []):
        if isinstance(b, Binding):
            out.append(b)
        elif isinstance(b, tuple):
            out.append(Binding(*b))
    return out


def sections(app_class: type) -> list[tuple[str, type]]:
    """(title, class) of everything in the explorer that has keys, in the order the help lists them: the app
    (`app_class`, the explorer's `TrntuiApp`), each pane of `PANES` (trntui/tui/panes.py), then the screens of
    `SCREENS` (trntui/tui/screens/__init__.py)."""
    from trntui.tui.panes import PANES

    return [("Everywhere", app_class), *[(spec.section, spec.widget) for spec in PANES], *screen_sections()]


def screen_sections() -> list[tuple[str, type]]:
    """(title, class) of the keys of every feature screen of `SCREENS` (trntui/tui/screens/__init__.py)."""
    from trntui.tui.screens import SCREENS

    return [section for spec in SCREENS for section in spec.key_sections()]


MERGED = {
    "sort_column(": "Sort by column n (Name, # Calls, Self CPU, CPU total, Self/total/% device)",
    "target_run(": "Enter opens run #n (#1 is the baseline)",
    "sort_by_column(": "Sort by column n (Kernel, [Op,] Calls, Total, Mean, Max, Min, Blk/SM, Occ %, TC)",
}
"""Digit bindings shown as one `1…9` line: action prefix → description."""


def _entries(cls: type, skip_keys: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """(keys, description) of `cls`'s BINDINGS; digit bindings of one action are merged; bindings whose every
    key is in `skip_keys` are left out."""
    entries: list[tuple[str, str]] = []
    digits: dict[str, list[str]] = {}
    for b in class_bindings(cls):
        if all(k.strip() in skip_keys for k in b.key.split(",")):
            continue
        prefix = next((p for p in MERGED if b.action.startswith(p)), None)
        if prefix is not None:
            digits.setdefault(prefix, []).append(b.key)
            continue
        entries.append((key_display(b.key), b.description))
    for prefix, keys in digits.items():
        entries.append((f"{keys[0]}…{keys[-1]}", MERGED[prefix]))
    return entries


def _bound_keys(cls: type) -> frozenset[str]:
    return frozenset(k.strip() for b in class_bindings(cls) for k in b.key.split(","))


def key_reference(
    section_list: list[tuple[str, type]], shadowing: type | None = None
) -> list[tuple[str, list[tuple[str, str]]]]:
    """[(section, [(keys, description), ...]), ...] from the BINDINGS of `section_list` (the explorer's:
    `sections(TrntuiApp)`); sort-by-column keys are merged. With `shadowing` (a screen class), the "Everywhere"
    section leaves out keys that screen binds itself (its binding wins)."""
    out = []
    shadowed = _bound_keys(shadowing) if shadowing is not None else frozenset()
    for title, cls in section_list:
        entries = _entries(cls, shadowed if title == "Everywhere" else frozenset())
        if title == "Everywhere":
            entries.append(("Tab / shift+Tab", "Next / previous pane"))
        out.append((title, entries))
    return out
