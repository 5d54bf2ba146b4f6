"""Names from traces are data: make them safe for a terminal (no escape sequences, no control bytes).

ONE pass decides what may reach a terminal (`safe_text`); every string the CLI prints goes through it twice
over: where a name is formatted, and again at the output streams (`install_safe_streams`, the CLI's stdout and
stderr), so a string that a formatter forgot cannot slip through either. The pass is idempotent (what it writes
contains nothing it would change), so the second application costs nothing but a regex scan.

Made visible (as `\\xNN` / `\\uNNNN` text):
- C0 and C1 controls (ESC, BEL, CR, backspace, U+0085 NEL, the 8-bit CSI U+009B ...), DEL;
- the same bytes when they come from a file or directory name decoded with `surrogateescape` (a byte 0x9B in a
  directory name is the lone surrogate U+DC9B in Python, and would be written back as the raw byte 0x9B);
  any other lone surrogate (it cannot be encoded at all);
- bidirectional controls that make a name display as another one (U+061C, U+200E/F, U+202A-E, U+2066-9);
- the Unicode line and paragraph separators U+2028/U+2029 (some terminals and editors break lines on them).
"""

from __future__ import annotations

import io
import re
import sys
from typing import Any, TextIO

_OTHER = (
    "\x7f-\x9f"  # DEL, C1
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidi marks, embeddings, overrides, isolates
    "\u2028\u2029"  # line / paragraph separators
    "\ud800-\udfff"  # lone surrogates (surrogate-escaped bytes of file names among them)
)
_CONTROL = re.compile(f"[\x00-\x1f{_OTHER}]")
"""Everything `safe_text` makes visible."""
_CONTROL_KEEP_LINES = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHER}]")
"""The same without newline and tab: what the output streams let through (a report's own line breaks)."""


def _visible(match: re.Match[str]) -> str:
    ch = match.group(0)
    if ch == "\t":
        return " "
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, kept by surrogateescape: show the byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _visible_keep_tab(match: re.Match[str]) -> str:
    return "\t" if match.group(0) == "\t" else _visible(match)


def safe_text(value: object) -> str:
    """`value` as text with every control character (ESC, BEL, CR, ...) shown as a visible `\\xNN` (see the
    module docstring for the full list); a tab becomes a space."""
    text = value if isinstance(value, str) else str(value)
    return _CONTROL.sub(_visible, text)


def terminal_text(text: str) -> str:
    """`safe_text` for whole output (what a stream writes): newlines and tabs are the output's own layout."""
    return _CONTROL_KEEP_LINES.sub(_visible_keep_tab, text)


class SafeStream(io.TextIOBase):
    """A text stream that passes everything written through `terminal_text` into `raw`, whose encoding errors
    are replaced by `\\xNN` escapes (an ASCII or strict UTF-8 stdout never raises UnicodeEncodeError).
    `raw` stays reachable as `.raw` for writers that own the terminal on purpose (the progress line)."""

    def __init__(self, raw: TextIO) -> None:
        super().__init__()
        self.raw = raw
        reconfigure = getattr(raw, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError, io.UnsupportedOperation):
                pass

    def write(self, s: str) -> int:
        text = terminal_text(s)
        try:
            self.raw.write(text)
        except UnicodeEncodeError:  # a stream that could not be reconfigured: escape what it cannot encode
            enc = getattr(self.raw, "encoding", None) or "ascii"
            self.raw.write(text.encode(enc, "backslashreplace").decode(enc, "replace"))
        return len(s)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return bool(getattr(self.raw, "isatty", lambda: False)())

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.raw.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.raw, "encoding", "utf-8")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def install_safe_streams() -> tuple[TextIO, TextIO]:
    """Put `SafeStream`s over `sys.stdout` and `sys.stderr` (the CLI does it for the length of a command);
    returns the previous streams, for `restore_streams`."""
    old = (sys.stdout, sys.stderr)
    if not isinstance(sys.stdout, SafeStream) and sys.stdout is not None:
        sys.stdout = SafeStream(sys.stdout)
    if not isinstance(sys.stderr, SafeStream) and sys.stderr is not None:
        sys.stderr = SafeStream(sys.stderr)
    return old


def restore_streams(old: tuple[TextIO, TextIO]) -> None:
    """Put the previous streams back (a stream replaced meanwhile, e.g. by /dev/null after a broken pipe, stays)."""
    if isinstance(sys.stdout, SafeStream):
        sys.stdout = old[0]
    if isinstance(sys.stderr, SafeStream):
        sys.stderr = old[1]


def unfiltered(stream: TextIO) -> TextIO:
    """The stream under a `SafeStream` (for a writer that draws on the terminal on purpose)."""
    return stream.raw if isinstance(stream, SafeStream) else stream


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
