"""The synthetic device-profile generator (scripts/make_neuron_device_samples.py), importable from tests."""

from __future__ import annotations

from types import ModuleType

from tests.scripts import REPO, script_module

SAMPLES = REPO / "sample_profiles" / "neuron" / "device"


def generator() -> ModuleType:
    """The generator module, loaded once from scripts/."""
    return script_module("make_neuron_device_samples")
