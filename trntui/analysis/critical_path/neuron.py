"""The critical-path graph of a Neuron step: framework op -> `nrta_execute_schedule` -> `nc_exec_running`,
with dispatch edges, runtime queue delays on idle NeuronCores, and device waits (`kbl_exec_wait`,
`nrt_tensor_read`, `dmem_buf_copyout`) as sync edges."""

from __future__ import annotations

import numpy as np

from trntui.analysis.critical_path.graph import (
    DISPATCH,
    NEURON_BOUNDS,
    NEURON_DEVICE_NAMES,
    NEURON_WAITS,
    SYNC,
    Graph,
    _Builder,
    _blocking_names,
    _cat_table,
    _data_loading,
    _device_chains,
    _idle_core_rule,
    _window_host,
)
from trntui.analysis.links import build_links, thread_codes
from trntui.model.profile import NO_ID, EventKind, Profile, Tier


def _build_neuron(profile: Profile, t0: int, t1: int, t_end: int) -> Graph:
    from trntui.analysis.overview.roles import assign_roles

    bld = _Builder(profile, NEURON_BOUNDS)
    links = build_links(profile)
    roles = assign_roles(profile)
    _, tkeys = thread_codes(profile)
    keys = tkeys.astype(np.int64)
    tiers = np.array([int(l.tier) for l in profile.lanes] or [0], np.int64)
    host_tier = tiers == int(Tier.DISPATCH)
    host = _window_host(profile, t0, t1, _cat_table(profile, {"cpu_op", "Operator", "privateuse1_runtime"}), host_tier)
    blocking = _blocking_names(profile, NEURON_WAITS)
    bld.host_chains(host, keys, bld.b["framework_cpu"], blocking)
    # device executions and their schedules
    names = _blocking_names(profile, frozenset(NEURON_DEVICE_NAMES))
    hw_cat = profile.cat_id("neuron_hw")
    dev_all, launcher_all = roles.device, roles.launcher
    in_win = (profile.start[dev_all] >= t0) & (profile.start[dev_all] <= t_end) if len(dev_all) else np.zeros(0, bool)
    sel = in_win & (launcher_all >= 0)
    if len(dev_all):
        sel &= (profile.cat[dev_all] == hw_cat) & names[profile.name[dev_all]]
    dev, launcher = dev_all[sel], launcher_all[sel]
    # the launchers must be scheduled from this step's host work
    sched = np.unique(launcher)
    rt_cat = _cat_table(profile, {"neuron_rt"})
    rt_rows = np.nonzero(rt_cat[profile.cat] & (profile.kind == EventKind.COMPLETE) & (profile.start >= t0)
                         & (profile.start <= t_end) & (profile.end > profile.start)
                         & (tiers[profile.lane] == int(Tier.RUNTIME)))[0]
    rt_rows = np.union1d(rt_rows, sched)
    bld.host_chains(rt_rows, keys, bld.b["runtime_overhead"], blocking)
    # dispatch: host call containing the schedule's start (else the op above it) -> nrta_execute_schedule
    in_host = np.zeros(len(profile), bool)
    in_host[host] = True
    src_l: list[int] = []
    dst_l: list[int] = []
    h_sorted = host[np.lexsort((-(profile.end[host] - profile.start[host]), profile.start[host]))]
    hs = profile.start[h_sorted]
    undispatched = 0
    for r in sched.tolist():
        top = _frontend_above(links, r)
        t = int(profile.start[r])
        c = -1
        if top >= 0 and in_host[top]:
            k = int(np.searchsorted(hs, t, "right")) - 1
            steps = 0
            while k >= 0 and steps < 256:
                h = int(h_sorted[k])
                if keys[h] == keys[top] and profile.start[h] <= t < profile.end[h]:
                    c = h
                    break
                k -= 1
                steps += 1
            if c < 0:
                c = top
        if c < 0:
            undispatched += 1
            continue
        src_l.append(c)
        dst_l.append(r)
    if src_l:
        s_arr = np.array(src_l, np.int64)
        d_arr = np.array(dst_l, np.int64)
        w = np.maximum(profile.start[d_arr] - profile.start[s_arr], 0)
        bld.add_cross(s_arr, True, d_arr, True, w, DISPATCH, s_arr, bld.b["dispatch_overhead"])
    if undispatched:
        bld.notes.append(f"{undispatched} nrta_execute_schedule row(s) link to no framework op of the step: their "
                         "executions start the path on their own (no dispatch edge)")
    # waits on the device: the last execution on the same process that ended before the wait's end
    waits = rt_rows[blocking[profile.name[rt_rows]]]
    if len(waits) and len(dev):
        de = profile.end[dev]
        o = np.argsort(de, kind="stable")
        de_s, dv_s = de[o], dev[o]
        wsrc, wdst = [], []
        for wv in waits.tolist():
            j = int(np.searchsorted(de_s, profile.end[wv], "right")) - 1
            if j >= 0 and de_s[j] >= profile.start[wv]:
                wsrc.append(int(dv_s[j]))
                wdst.append(wv)
        if wsrc:
            bld.add_cross(np.array(wsrc), False, np.array(wdst), False, 0, SYNC, NO_ID, -1)
    comm = _blocking_names(profile, frozenset({"cc_running", "cc_exec_barrier"}))
    op_bound = np.where(comm[profile.name[dev]], bld.b["neuroncore_communication"], bld.b["neuroncore_compute"]).astype(np.int16)
    _device_chains(bld, dev, launcher, keys, op_bound, bld.b["neuroncore_idle"], bld.b["runtime_queue_delay"],
                   _idle_core_rule, {})
    if not len(dev):
        bld.notes.append("no nc_exec_running rows linked to a runtime schedule in the step: the path is on the host "
                         "and runtime rows only")
    g = bld.build()
    g.host_events, g.device_events = np.union1d(host, rt_rows), dev
    g.launcher_of = dict(zip(dev.tolist(), launcher.tolist()))
    _data_loading(profile, g, t0, t1, keys)
    return g


def _frontend_above(links, e: int) -> int:
    cur, seen = e, {e}
    for _ in range(16):
        preds = [q for q, _r in links.predecessors(cur) if q not in seen]
        if not preds:
            return -1
        cur = preds[0]
        seen.add(cur)
        if links.frontend[cur]:
            return cur
    return -1
