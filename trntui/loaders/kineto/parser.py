"""Which Kineto parser this process uses.

`TRNTUI_KINETO_PARSER=python|compiled` forces a path (compiled without the extension built: an error naming the
fix); the default is the compiled column builder (compiled.py) where `pip install` built it, else the Python path."""

from __future__ import annotations

from trntui.errors import TrntuiError
from trntui.settings import kineto_parser

try:
    from trntui.loaders.kineto import _scan
except ImportError:  # not built (no compiler at install time, or TRNTUI_NO_EXT=1)
    _scan = None

ENV = "TRNTUI_KINETO_PARSER"


class ParserUnavailable(TrntuiError):
    """TRNTUI_KINETO_PARSER=compiled, but the extension is not built."""


def parser_name() -> str:
    """'compiled' or 'python': the path Kineto pieces take in this process."""
    want = kineto_parser()
    if want == "python":
        return "python"
    if want == "compiled" and _scan is None:
        raise ParserUnavailable(
            f"{ENV}=compiled, but the compiled Kineto parser is not built in this install "
            "(reinstall with a C compiler available, without TRNTUI_NO_EXT)"
        )
    return "compiled" if _scan is not None else "python"


def describe() -> str:
    """One line for `trntui info --version`."""
    try:
        name = parser_name()
    except ParserUnavailable as e:
        return f"kineto parser: unavailable ({e})"
    if name == "compiled":
        return "kineto parser: compiled (C column builder, trntui/loaders/kineto/_scan.c)"
    why = f"{ENV}=python" if _scan is not None else "the compiled parser is not built in this install"
    return f"kineto parser: python (msgspec typed decode; {why})"


def enabled() -> bool:
    """The compiled builder is in use (an unavailable forced one raises `ParserUnavailable`)."""
    return parser_name() == "compiled"
