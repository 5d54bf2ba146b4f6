"""torch's key_averages sort keys, apart from the analysis itself: `trntui summary --sort X` is checked while
the arguments are parsed, before the load, and importing trntui/analysis/key_averages/ there (numpy, the
links and the table's dataclasses) put that import on the path to the decode instead of beside it."""

from __future__ import annotations

import re

SORT_KEYS = {
    "self_cpu_time_total": "self_cpu_time_total",
    "cpu_time_total": "cpu_time_total",
    "self_device_time_total": "self_device_time_total",
    "device_time_total": "device_time_total",
    "cpu_time": "cpu_time",
    "device_time": "device_time",
    "cpu_memory_usage": "cpu_memory_usage",
    "self_cpu_memory_usage": "self_cpu_memory_usage",
    "device_memory_usage": "device_memory_usage",
    "self_device_memory_usage": "self_device_memory_usage",
    "count": "count",
    "calls": "count",
    "name": "name",
}
"""Sort keys as torch names them; `cuda`/`xpu`/`privateuse1`/`mtia` spellings are rewritten to `device`."""


def normalize_sort_key(key: str) -> str:
    """Map torch's aliases (`self_cuda_time_total`, `self_privateuse1_time_total`, ...) to our column names."""
    k = key.strip().lower()
    k = re.sub(r"(cuda|xpu|privateuse1|mtia|neuron|hpu)", "device", k)
    if k not in SORT_KEYS:
        raise ValueError(f"unknown sort key {key!r}; use one of: {', '.join(sorted(SORT_KEYS))}")
    return SORT_KEYS[k]

