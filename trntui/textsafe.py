"""Names from traces are data: make them safe for a terminal (no escape sequences, no control bytes)."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""C0/C1 controls, plus bidi overrides that would make a name display differently from what it is."""


def _visible(match: re.Match[str]) -> str:
    ch = match.group(0)
    if ch == "\t":
        return " "
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(value: object) -> str:
    """`value` as text with every control character (ESC, BEL, CR, ...) shown as a visible `\\xNN`."""
    text = value if isinstance(value, str) else str(value)
    return _CONTROL.sub(_visible, text)


def truncate(text: str, width: int) -> str:
    """Cut to `width` cells with an ellipsis, like torch's table does for long names."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    if width <= 3:
        return text[:width]
    return text[: width - 3] + "..."


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What makes a spreadsheet app read a CSV cell as a formula (OWASP CSV injection)."""


def csv_safe(value: object) -> str:
    """A text cell for CSV: a name starting with `=`, `+`, `-`, `@`, a tab or a CR gets a leading `'` so that
    spreadsheet apps show it as text instead of running it as a formula. For text cells only (names, shapes):
    numeric columns are written as numbers and never pass through here."""
    text = value if isinstance(value, str) else str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text
