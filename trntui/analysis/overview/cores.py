"""Logical NeuronCores of a profile: which hardware lanes are one logical core (the copies of an execution on its
physical cores), for the overview's device metrics (device.py) and its execution tables (kernels.py)."""

from __future__ import annotations

import re

import numpy as np

from trntui.model.profile import Profile

_LNC = re.compile(r"NC(\d+):(\d+)\Z")


def core_groups(profile: Profile) -> tuple[list[tuple], np.ndarray]:
    """Logical NeuronCores: (instance, pid, logical core) keys, and per lane the index of its key (-1: not a
    hardware core lane). Lanes `NC<l>:<p>` of one process with the same <l> are one logical core."""
    cached = profile.cache.get("overview_core_groups")
    if cached is not None:
        return cached
    keys: dict[tuple, int] = {}
    of_lane = np.full(max(len(profile.lanes), 1), -1, np.int64)
    for lane in profile.lanes:
        m = _LNC.match(lane.ident)
        if lane.subsystem == "neuron_hw" or m:
            key = (lane.instance, lane.pid, int(m.group(1)) if m else -1, "" if m else lane.ident)
            of_lane[lane.id] = keys.setdefault(key, len(keys))
    out = (list(keys), of_lane)
    profile.cache["overview_core_groups"] = out
    return out


def logical_core_of_lanes(profile: Profile) -> np.ndarray:
    """Per lane: its logical NeuronCore's index (-1 for lanes that are not NeuronCore lanes)."""
    return core_groups(profile)[1]
