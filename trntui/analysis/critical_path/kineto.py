"""The critical-path graph of a Kineto step (HTA's lightweight critical path): host op and runtime chains,
device streams with launch and kernel-kernel delays, and sync edges from the `cuda_sync` rows (or inferred
from the device rows for device/stream synchronizations that have none)."""

from __future__ import annotations

import numpy as np

from trntui.analysis.critical_path.graph import (
    BLOCKING_CALLS,
    CUDA_BOUNDS,
    DEVICE_CATS,
    DEVICE_WAITS,
    HOST_CATS,
    SYNC,
    _COMM_RX,
    Graph,
    _Builder,
    _args,
    _blocking_names,
    _cat_table,
    _data_loading,
    _device_chains,
    _queue_rule,
    _window_host,
)
from trntui.analysis.links import build_links, thread_codes
from trntui.model.profile import NO_ID, EventKind, Profile


def _device_role(profile: Profile, dev: np.ndarray, bld: _Builder, compute: str, comm: str) -> np.ndarray:
    names = profile.names
    comm_name = np.array([bool(_COMM_RX.match(nm)) for nm in names] or [False])
    ext_comm = np.zeros(len(dev), bool)
    return np.where(comm_name[profile.name[dev]] | ext_comm, bld.b[comm], bld.b[compute]).astype(np.int16)


def _build_kineto(profile: Profile, t0: int, t1: int) -> Graph:
    bld = _Builder(profile, CUDA_BOUNDS)
    links = build_links(profile)
    _, tkeys = thread_codes(profile)
    keys = tkeys.astype(np.int64)
    host = _window_host(profile, t0, t1, _cat_table(profile, HOST_CATS))
    blocking = _blocking_names(profile, BLOCKING_CALLS)
    bld.host_chains(host, keys, bld.b["cpu_bound"], blocking)
    in_host = np.zeros(len(profile), bool)
    in_host[host] = True
    devcat = _cat_table(profile, DEVICE_CATS)
    all_dev = np.nonzero(devcat[profile.cat] & (profile.kind == EventKind.COMPLETE))[0]
    all_launcher = links.runtime_of[all_dev] if len(all_dev) else np.zeros(0, np.int64)
    sel = (all_launcher >= 0) & in_host[np.maximum(all_launcher, 0)]
    dev, launcher = all_dev[sel], all_launcher[sel]
    no_launcher = int(((all_launcher < 0) & (profile.start[all_dev] >= t0) & (profile.start[all_dev] <= t1)).sum())
    if no_launcher:
        bld.notes.append(f"{no_launcher} device row(s) in the step have no runtime call with their correlation id: "
                         "they are not in the graph (no launch edge can be built for them)")
    # sync rows
    sync_cat = profile.cat_id("cuda_sync")
    sync_src: dict[int, int] = {}
    cpu_sync: list[tuple[int, int]] = []  # (device row, runtime call whose end waits for it)
    synced_calls: set[int] = set()
    stats = {"Stream Sync": 0, "Context Sync": 0, "Event Sync": 0, "Stream Wait Event": 0}
    unlinked: dict[str, int] = {}
    in_dev = np.zeros(len(profile), bool)
    in_dev[dev] = True
    if sync_cat >= 0 and len(dev):
        rows = np.nonzero((profile.cat == sync_cat))[0]
        rt = links.runtime_of[rows]
        rows = rows[(rt >= 0) & in_host[np.maximum(rt, 0)]]
        dkeys = keys[dev]
        order = np.lexsort((profile.start[dev], dkeys))
        d_sorted, k_sorted, s_sorted = dev[order], dkeys[order], profile.start[dev][order]
        lane_key_of: dict[tuple[int, int], int] = {}
        for j in range(len(d_sorted)):
            ln = profile.lanes[int(profile.lane[d_sorted[j]])]
            lane_key_of.setdefault((ln.pid, ln.tid), int(k_sorted[j]))
        # launches per stream key (whole trace), for the event-record look-ups
        ok_all = all_launcher >= 0
        l_ev, l_dev = all_launcher[ok_all], all_dev[ok_all]
        l_key = keys[l_dev]

        def last_on(key: int, before: int) -> int:
            sel = np.nonzero(k_sorted == key)[0]
            if not len(sel):
                return -1
            j = int(np.searchsorted(s_sorted[sel], before, "left")) - 1
            return int(d_sorted[sel[j]]) if j >= 0 else -1

        def launch_before(key: int, t: int) -> int:
            sel = np.nonzero(l_key == key)[0]
            if not len(sel):
                return -1
            st = profile.start[l_ev[sel]]
            o = np.argsort(st, kind="stable")
            j = int(np.searchsorted(st[o], t, "right")) - 1
            return int(l_dev[sel[o[j]]]) if j >= 0 else -1

        corr_rt: dict[int, int] = {}
        for r in np.nonzero(links.runtime & (profile.corr > 0))[0].tolist():
            corr_rt.setdefault(int(profile.corr[r]), r)
        for row in rows.tolist():
            a = _args(profile, row)
            kind = str(a.get("cuda_sync_kind") or profile.name_of(row))
            call = int(links.runtime_of[row])
            ln = profile.lanes[int(profile.lane[row])]
            end = int(profile.end[row])
            if kind in ("Stream Sync", "Context Sync"):
                stats[kind] += 1
                keys_here = [lane_key_of.get((ln.pid, ln.tid))] if kind == "Stream Sync" else list(set(lane_key_of.values()))
                for key in keys_here:
                    if key is None:
                        continue
                    src = last_on(key, end)
                    if src >= 0:
                        cpu_sync.append((src, call))
                synced_calls.add(call)
                continue
            if kind not in ("Event Sync", "Stream Wait Event"):
                continue
            stats[kind] += 1
            try:
                rec_corr = int(a.get("wait_on_cuda_event_record_corr_id", -1))
                wait_stream = int(a.get("wait_on_stream", -1))
            except (TypeError, ValueError):
                rec_corr, wait_stream = -1, -1
            rec = corr_rt.get(rec_corr, -1)
            key = lane_key_of.get((ln.pid, wait_stream))
            if rec < 0 or key is None:
                unlinked[kind] = unlinked.get(kind, 0) + 1
                continue
            src = launch_before(key, int(profile.start[rec]))
            if src < 0 or not in_dev[src]:
                unlinked[kind] = unlinked.get(kind, 0) + 1
                continue
            if kind == "Event Sync":
                cpu_sync.append((src, call))
                synced_calls.add(call)
                continue
            # Stream Wait Event: the next kernel launched from the waiting call's thread onto this stream
            wkey = lane_key_of.get((ln.pid, ln.tid))
            if wkey is None:
                unlinked[kind] = unlinked.get(kind, 0) + 1
                continue
            sel = np.nonzero((l_key == wkey) & (keys[l_ev] == keys[call]) & (profile.start[l_ev] >= profile.start[call]))[0]
            if not len(sel):
                unlinked[kind] = unlinked.get(kind, 0) + 1
                continue
            dest = int(l_dev[sel[np.argmin(profile.start[l_ev[sel]])]])
            if in_dev[dest]:
                sync_src[dest] = src
    elif len(dev):
        bld.notes.append("the trace has no CUDA synchronization events (cuda_sync): waits of the host on the device "
                         "are inferred from the device rows for cudaDeviceSynchronize / cudaStreamSynchronize only; "
                         "event waits (cudaEventSynchronize, cudaStreamWaitEvent) could not be linked. Record them "
                         "with torch.profiler's experimental_config=_ExperimentalConfig(enable_cuda_sync_events=True)")
    for kind, cnt in unlinked.items():
        bld.notes.append(f"{cnt} '{kind}' row(s) name no cudaEventRecord / kernel in the trace: no sync edge for them")
    # waits inferred where a blocking device-wide/stream call has no sync row (beyond HTA: it has no edge then)
    waits = _blocking_names(profile, DEVICE_WAITS)
    calls = host[waits[profile.name[host]]]
    inferred = 0
    if len(dev):
        de = profile.end[dev]
        o = np.argsort(de, kind="stable")
        de_sorted, dev_by_end = de[o], dev[o]
        for c in calls.tolist():
            if c in synced_calls:
                continue
            j = int(np.searchsorted(de_sorted, profile.end[c], "right")) - 1
            if j >= 0 and de_sorted[j] >= profile.start[c]:
                cpu_sync.append((int(dev_by_end[j]), c))
                inferred += 1
    if inferred:
        bld.notes.append(f"{inferred} host wait(s) (cudaDeviceSynchronize / cudaStreamSynchronize) had no cuda_sync "
                         "row: linked to the last device row that ended during the call")
    if cpu_sync:
        src = np.array([x for x, _ in cpu_sync], np.int64)
        dst = np.array([y for _, y in cpu_sync], np.int64)
        bld.add_cross(src, False, dst, False, 0, SYNC, NO_ID, -1)
    op_bound = _device_role(profile, dev, bld, "gpu_compute_bound", "gpu_communication_bound")
    rule = _queue_rule(profile, all_dev, all_launcher, keys)
    _device_chains(bld, dev, launcher, keys, op_bound, bld.b["gpu_kernel_kernel_overhead"],
                   bld.b["gpu_kernel_launch_overhead"], rule, sync_src)
    if not len(host):
        bld.notes.append("no host ops or runtime calls start in the step: the path has nothing to start from")
    if not len(all_dev):
        bld.notes.append("no device rows: the path is on the host threads only")
    g = bld.build()
    g.notes.extend(n for n in bld.notes if n not in g.notes)
    if sum(stats.values()):
        g.notes.append("sync rows used: " + ", ".join(f"{k} {v}" for k, v in stats.items() if v))
    g.host_events, g.device_events = host, dev
    g.launcher_of = dict(zip(dev.tolist(), launcher.tolist()))
    _data_loading(profile, g, t0, t1, keys)
    return g
