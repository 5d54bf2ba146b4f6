"""The synthetic Neuron sample generator (scripts/make_neuron_samples.py), importable from tests."""

from __future__ import annotations

from types import ModuleType

from tests.scripts import REPO, script_module

__all__ = ["REPO", "generator"]


def generator() -> ModuleType:
    """The generator module, loaded once from scripts/."""
    return script_module("make_neuron_samples")
