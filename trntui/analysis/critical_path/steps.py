"""Critical paths per step: the window of a step, of several joined steps or of HTA's annotation window, the
graph built for it (Kineto or Neuron), and the longest step's path computed once per profile."""

from __future__ import annotations

import numpy as np

from trntui.analysis.critical_path.graph import Graph
from trntui.analysis.critical_path.kineto import _build_kineto
from trntui.analysis.critical_path.longest import _breakdown, _longest, _reconstruct
from trntui.analysis.critical_path.neuron import _build_neuron
from trntui.analysis.critical_path.result import CriticalPath
from trntui.errors import TrntuiError
from trntui.model.profile import EventKind, Profile


def build_graph(profile: Profile, t0: int, t1: int, t_end: int) -> Graph:
    """The critical-path graph of the window: host events starting in [t0, t1] (a step's host span), the device
    work they launched (which may run until `t_end`)."""
    from trntui.analysis.overview.roles import is_neuron

    if is_neuron(profile):
        return _build_neuron(profile, t0, t1, t_end)
    return _build_kineto(profile, t0, t1)


# -------------------------------------------------------------------------------------------------------------
# per step


def _steps(profile: Profile):
    from trntui.analysis.overview.roles import assign_roles
    from trntui.analysis.overview.steps import find_steps

    return find_steps(profile, assign_roles(profile))


def annotation_window(profile: Profile, annotation: str, instance: str | int | None = None) -> tuple[int, int, str]:
    """HTA's window: the rows whose name contains `annotation`, in time order; `instance` N (0-based) or
    "A:B" (inclusive) picks some, none means all of them. Returns (start, end, label)."""
    ids = [k for k, nm in enumerate(profile.names) if annotation in nm]
    if not ids:
        raise TrntuiError(f"annotation {annotation!r}: no event name contains it")
    rows = np.nonzero(np.isin(profile.name, ids) & (profile.kind == EventKind.COMPLETE))[0]
    if not len(rows):
        raise TrntuiError(f"annotation {annotation!r}: no complete event has that name")
    rows = rows[np.argsort(profile.start[rows], kind="stable")]
    if instance is None or instance == "":
        a, b = 0, len(rows) - 1
    else:
        txt = str(instance)
        try:
            a, b = (int(x) for x in txt.split(":", 1)) if ":" in txt else (int(txt), int(txt))
        except ValueError:
            raise TrntuiError(f"instance {txt!r}: expected N or A:B") from None
        if not (0 <= a <= b < len(rows)):
            raise TrntuiError(f"instance {txt!r}: {annotation!r} has {len(rows)} instance(s) (0..{len(rows) - 1})")
    sel = rows[a: b + 1]
    label = f"{annotation!r} instance {a}" + (f"..{b}" if b != a else "")
    return int(profile.start[sel].min()), int(profile.end[sel].max()), label


def critical_paths(profile: Profile, steps_spec: str | None = None, *, join: bool = False,
                   annotation: str | None = None, instance: str | int | None = None,
                   limit: int | None = None) -> list[CriticalPath]:
    """The critical path of the longest step (no `steps_spec`), of each selected step, or of the selected steps
    as one window (`join`: HTA's advice for pipelined training, two iterations at once). `annotation` (with
    `instance`) takes HTA's window instead: the span of the named rows."""
    from trntui.analysis.overview import select_steps

    if annotation:
        t0, t1, label = annotation_window(profile, annotation, instance)
        cp = critical_path(profile, t0, t1, step=0, steps=[0])
        cp.notes.insert(0, f"window: {label}")
        return [cp]
    table = _steps(profile)
    if not table.steps:
        raise TrntuiError("the profile has no events to find a critical path in")
    if steps_spec:
        chosen = select_steps(table, steps_spec)
    else:
        chosen = [max(table.steps, key=lambda s: (s.duration, -s.start))]
    notes = []
    if table.synthetic:
        notes.append("no ProfilerStep#N in the trace: the path is over the whole trace")
    elif not steps_spec and len(table.steps) > 1:
        notes.append(f"the longest of {len(table.steps)} steps (--steps N picks another)")
    if limit is not None and not join and len(chosen) > limit:
        keep = sorted(sorted(chosen, key=lambda s: (-s.duration, s.start))[:limit], key=lambda s: s.start)
        notes.append(f"the {limit} longest of the {len(chosen)} selected steps (--join-steps: one path over all)")
        chosen = keep
    groups = [chosen] if join else [[s] for s in chosen]
    out = []
    for grp in groups:
        cp = critical_path(profile, grp[0].host_start, max(s.host_end for s in grp), grp[0].start,
                           max(s.end for s in grp), step=grp[0].number, steps=[s.number for s in grp])
        cp.notes[:0] = notes
        out.append(cp)
    return out


def critical_path(profile: Profile, host_start: int, host_end: int, start: int | None = None, end: int | None = None,
                  *, step: int = 0, steps: list[int] | None = None) -> CriticalPath:
    """The critical path of one window: host events starting in [host_start, host_end] and the device work
    they launched; the step's span is [start, end] (default: the host window)."""
    from trntui.analysis.overview.roles import is_neuron

    start = host_start if start is None else start
    end = host_end if end is None else end
    g = build_graph(profile, host_start, host_end, end)
    dist, B, P, val, M = _longest(g, g.chain_w, g.x_w)
    path = _reconstruct(g, g.chain_w, g.x_w, dist, B, P, val, M)
    bd = _breakdown(g, path)
    nodes = np.union1d(path.src, path.dst) if len(path.src) else np.zeros(0, np.int64)
    on_path = np.unique(g.node_event[nodes]) if len(nodes) else np.zeros(0, np.int64)
    # the path may start before the step's extended start (device rows of the previous step's launches)
    lo = min(start, int(g.node_ts[path.src[0]])) if len(path.src) else start
    hi = max(end, int(g.node_ts[path.dst[-1]])) if len(path.dst) else end
    return CriticalPath(step, steps or [step], lo, hi, host_start, host_end, is_neuron(profile), g, path, bd,
                        on_path, profile, list(g.notes))


def step_path(profile: Profile) -> CriticalPath:
    """The critical path of the longest step, computed once per profile (the app's screen, the timeline's marks
    and the chain pane share it). Raises TrntuiError when there is no step."""
    cached = profile.cache.get("critical_path")
    if cached is None:
        cached = critical_paths(profile)[0]
        profile.cache["critical_path"] = cached
    return cached


def cached_step_path(profile: Profile) -> CriticalPath | None:
    """`step_path` if it was computed already, else None (never computes)."""
    return profile.cache.get("critical_path")


def path_events(profile: Profile) -> np.ndarray:
    """Events on the critical path of the longest step (empty when the profile has no step)."""
    try:
        return step_path(profile).on_path
    except TrntuiError:
        return np.zeros(0, np.int64)
