"""The synthetic device-profile generator (scripts/make_neuron_device_samples.py), importable from tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
_NAME = "make_neuron_device_samples"
SAMPLES = REPO / "sample_profiles" / "neuron" / "device"


def generator() -> ModuleType:
    """The generator module, loaded once from scripts/ (it is a script, not part of the package)."""
    if _NAME not in sys.modules:
        spec = importlib.util.spec_from_file_location(_NAME, REPO / "scripts" / "make_neuron_device_samples.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[_NAME] = mod
        spec.loader.exec_module(mod)
    return sys.modules[_NAME]
