"""The project's own error type: every expected failure (bad file, bad option) is one of these."""

from __future__ import annotations


class TrntuiError(Exception):
    """An error with a one-line message meant for the user (no traceback is shown)."""


class LoadError(TrntuiError):
    """A file or directory could not be read as a profile."""

    def __init__(self, path: object, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class OverBudget(LoadError):
    """Loading the file would exceed the memory budget (not a damaged file: a run of several files stops)."""
