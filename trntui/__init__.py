"""trntui: a terminal profiler explorer for PyTorch traces (Kineto, Neuron system traces).

Kept import-free so that `trntui summary` starts fast. The Python API (docs/api.md) is here by name, imported on
first use: `trntui.load(path) -> Run`, `trntui.runs(path) -> list[Run]`.
"""

from typing import Any

__version__ = "0.1.0"

__all__ = ["Run", "load", "runs", "__version__"]


def __getattr__(name: str) -> Any:
    if name in ("load", "runs", "Run"):
        # by name: the package's own modules import `trntui` (for __version__) and must not depend on the API
        # shell (trntui/api.py may start the app) in the import-linter graph
        import importlib

        return getattr(importlib.import_module("trntui.api"), name)
    raise AttributeError(f"module 'trntui' has no attribute {name!r}")
