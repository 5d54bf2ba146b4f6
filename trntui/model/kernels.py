"""Compiled array kernels (trntui/model/_kernels.c, built with the Kineto column builder by `pip install` where a
compiler is available), each the exact equal of a numpy function that stays the fallback: where the extension is
not built, or with `TRNTUI_KINETO_PARSER=python` (the Python path as a whole, for tests and comparisons), callers
get None from `kernel()` and run their numpy code. tests/test_kernels.py compares both on random and edge input."""

from __future__ import annotations

from typing import Any

from trntui.settings import kineto_parser

try:
    from trntui.model import _kernels
except ImportError:  # not built (no compiler at install time, or TRNTUI_NO_EXT=1)
    _kernels = None


def kernel() -> Any:
    """The compiled kernels module, or None where the numpy fallback is to be used."""
    if _kernels is None or kineto_parser() == "python":
        return None
    return _kernels
