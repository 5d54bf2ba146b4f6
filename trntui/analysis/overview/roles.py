"""Which breakdown category each event counts for, in the plugin's priority order (tb-plugin-analyses.md §1-2).

Kineto traces (CUDA, ROCm, MTIA, XPU, CPU) use the plugin's roles: Kernel, Memcpy, Memset, Communication,
Runtime, DataLoader, CPU Exec, Other (a lower index wins where events overlap). Neuron profiles (a system
trace with `nc_exec_running`) use the same idea with their own tiers: NeuronCore (hardware executions, the
per-physical-core copies of one execution count once because the roles are unions), Communication
(`cc_running`, `cc_exec_barrier`, host `nccl:`/`gloo:` ops), Runtime (`neuron_rt` rows: `nrta_*`, `nrt_*`,
`kbl_*`, ...), DataLoader, Framework (host framework ops), Other.

Where trntui differs from the plugin on purpose (docs/overview.md):
- `gpu_user_annotation` rows (GPU mirrors of `record_function` scopes) are not CPU Exec and a mirror named
  `ProfilerStep#N` is not a step: only host rows are.
- A kernel whose name starts with `nccl`/`rccl` is Communication even when its External id does not name an
  `nccl:*` op (the plugin would call it computation).
- MTIA device rows (`mtia_ccp_events`) are device work (the plugin shows no device time for MTIA): DMA rows
  count as Memcpy, event record/wait rows as nothing, the rest as Kernel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from trntui.analysis.links import build_links
from trntui.model.profile import NO_ID, EventKind, Profile, Tier

KINETO_CATEGORIES = ("Kernel", "Memcpy", "Memset", "Communication", "Runtime", "DataLoader", "CPU Exec", "Other")
NEURON_CATEGORIES = ("NeuronCore", "Communication", "Runtime", "DataLoader", "Framework", "Other")

NONE = -1
"""Role of an event that counts for no category (it may still lie inside a step: that time is Other)."""

COMM_OP_NAMES = frozenset(
    f"{lib}:{op}" for lib in ("nccl", "gloo") for op in ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter")
)
"""Host ops the plugin treats as collectives (exact names)."""

RUNTIME_CATS = frozenset({"runtime", "cuda_runtime", "mtia_runtime", "glow_runtime", "xpu_runtime", "privateuse1_runtime"})
HOST_OP_CATS = frozenset({"cpu_op", "operator", "user_annotation", "python"})
"""Host rows the plugin types Operator / UserAnnotation / Python (gpu_user_annotation excluded: see above)."""
CPU_EXTENT_CATS = frozenset({"cpu_op", "operator", "python"})
NEURON_FRAMEWORK_CATS = HOST_OP_CATS | {"neuron_framework", "privateuse1_runtime", "privateuse1_driver"}
NEURON_EXECUTION = "nc_exec_running"
NEURON_COLLECTIVES = frozenset({"cc_running", "cc_exec_barrier"})

_STEP_RX = re.compile(r"ProfilerStep#(\d{1,18})(?!\d)")
"""A step's number fits an int64: `ProfilerStep#<40 digits>` is not a step (select.py reads steps alike)."""


def is_dataloader(name: str) -> bool:
    return (name.startswith("enumerate(DataLoader)#") and name.endswith(".__next__")) or name.startswith(
        "enumerate(DataPipe)#"
    )


def is_comm_kernel_name(name: str) -> bool:
    return name.startswith(("nccl", "rccl"))


@dataclass
class HostStep:
    number: int
    start: int
    end: int
    event: int


@dataclass
class Roles:
    """Per-event category index (into `categories`, or NONE), plus what the step and device analyses need."""

    categories: tuple[str, ...]
    role: np.ndarray
    neuron: bool
    device: np.ndarray
    """Event indexes of device work whose launch ties it to a step: kernels (collectives too), memcpy, memset;
    on Neuron, hardware executions and collectives."""
    launcher: np.ndarray
    """Per entry of `device`: the host runtime call that launched it (-1 when unknown)."""
    kernels: np.ndarray
    """Event indexes of kernels (the kernel table and GPU metrics); on Neuron, `nc_exec_running` rows."""
    host_steps: list[HostStep]
    cpu_extent: tuple[int, int]
    comm_libs: set[str] = field(default_factory=set)
    names_seen: frozenset[str] = frozenset()
    """Special op names present (`DataParallel.forward`, `DistributedDataParallel.forward`)."""

    def index(self, category: str) -> int:
        return self.categories.index(category) if category in self.categories else NONE

    def events_of(self, category: str) -> np.ndarray:
        k = self.index(category)
        return np.nonzero(self.role == k)[0] if k >= 0 else np.zeros(0, np.int64)


def is_neuron(profile: Profile) -> bool:
    return profile.cat_id("neuron_hw") >= 0 and profile.name_id(NEURON_EXECUTION) >= 0


# event classes: a category class (per cat id) × a name class (per name id) → role, via small lookup tables
_C_OTHER, _C_HOST, _C_KERNEL, _C_MEMCPY, _C_MEMSET, _C_RUNTIME, _C_MTIA, _C_HW, _C_FRAMEWORK = range(9)
"""Category classes. _C_FRAMEWORK: Neuron framework rows that are not trace.json host ops (Explorer's copies,
PrivateUse1 rows): Framework time, never steps."""
_N_PLAIN, _N_DATALOADER, _N_COMM, _N_STEP, _N_COMM_KERNEL, _N_DMA, _N_SYNC, _N_EXEC, _N_CC = range(9)
_NN = 9


def _cat_classes(profile: Profile, neuron: bool) -> np.ndarray:
    out = np.zeros(max(len(profile.cats), 1), np.int16)
    for k, c in enumerate(profile.cats):
        c = c.lower()
        if c in HOST_OP_CATS:
            out[k] = _C_HOST
        elif neuron and c in NEURON_FRAMEWORK_CATS:
            out[k] = _C_FRAMEWORK
        elif neuron and c == "neuron_rt":
            out[k] = _C_RUNTIME
        elif neuron and c == "neuron_hw":
            out[k] = _C_HW
        elif neuron:
            out[k] = _C_OTHER  # trace.json device rows duplicate the system trace's executions
        elif c == "kernel":
            out[k] = _C_KERNEL
        elif c in ("memcpy", "gpu_memcpy"):
            out[k] = _C_MEMCPY
        elif c in ("memset", "gpu_memset"):
            out[k] = _C_MEMSET
        elif c in RUNTIME_CATS:
            out[k] = _C_RUNTIME
        elif c == "mtia_ccp_events":
            out[k] = _C_MTIA
    return out


def _name_classes(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """(class per name id, ProfilerStep number per name id or -1)."""
    names = profile.names
    n = max(len(names), 1)
    cls = np.zeros(n, np.int16)
    step = np.full(n, -1, np.int64)
    for k, nm in enumerate(names):
        if nm.startswith("ProfilerStep#"):
            m = _STEP_RX.match(nm)
            if m:
                cls[k] = _N_STEP
                step[k] = int(m.group(1))
        elif nm.startswith("enumerate(Data") and is_dataloader(nm):
            cls[k] = _N_DATALOADER
        elif nm in COMM_OP_NAMES:
            cls[k] = _N_COMM
        elif is_comm_kernel_name(nm):
            cls[k] = _N_COMM_KERNEL
        elif nm == NEURON_EXECUTION:
            cls[k] = _N_EXEC
        elif nm in NEURON_COLLECTIVES:
            cls[k] = _N_CC
        else:
            low = nm.lower()
            if "dma" in low:
                cls[k] = _N_DMA
            elif low.startswith("event_"):
                cls[k] = _N_SYNC
    return cls, step


def _tables(neuron: bool, C: dict[str, int]) -> dict[str, np.ndarray]:
    """Lookup tables over (category class, name class): role, device row, kernel, host step."""
    size = 9 * _NN
    role = np.full(size, NONE, np.int8)
    device = np.zeros(size, bool)
    kernel = np.zeros(size, bool)
    step = np.zeros(size, bool)

    def at(c: int, n: int | None = None) -> slice | int:
        return slice(c * _NN, (c + 1) * _NN) if n is None else c * _NN + n

    host = "Framework" if neuron else "CPU Exec"
    for c in (_C_HOST, _C_FRAMEWORK):
        role[at(c)] = C[host]
        role[at(c, _N_DATALOADER)] = C["DataLoader"]
        role[at(c, _N_COMM)] = C["Communication"]
        role[at(c, _N_STEP)] = NONE
    step[at(_C_HOST, _N_STEP)] = True
    role[at(_C_RUNTIME)] = C["Runtime"]
    if neuron:
        role[at(_C_HW, _N_EXEC)] = C["NeuronCore"]
        role[at(_C_HW, _N_CC)] = C["Communication"]
        device[at(_C_HW, _N_EXEC)] = device[at(_C_HW, _N_CC)] = True
        kernel[at(_C_HW, _N_EXEC)] = True
    else:
        role[at(_C_KERNEL)] = C["Kernel"]
        role[at(_C_KERNEL, _N_COMM)] = role[at(_C_KERNEL, _N_COMM_KERNEL)] = C["Communication"]
        device[at(_C_KERNEL)] = kernel[at(_C_KERNEL)] = True
        role[at(_C_MEMCPY)] = C["Memcpy"]
        role[at(_C_MEMSET)] = C["Memset"]
        device[at(_C_MEMCPY)] = device[at(_C_MEMSET)] = True
        role[at(_C_MTIA)] = C["Kernel"]
        device[at(_C_MTIA)] = kernel[at(_C_MTIA)] = True
        role[at(_C_MTIA, _N_DMA)] = C["Memcpy"]
        kernel[at(_C_MTIA, _N_DMA)] = False
        role[at(_C_MTIA, _N_SYNC)] = NONE
        device[at(_C_MTIA, _N_SYNC)] = kernel[at(_C_MTIA, _N_SYNC)] = False
    return {"role": role, "device": device, "kernel": kernel, "step": step}


def assign_roles(profile: Profile) -> Roles:
    """Roles of every event (cached on the profile)."""
    cached = profile.cache.get("overview_roles")
    if cached is not None:
        return cached
    stored = _stored_roles(profile)
    if stored is not None:
        profile.cache["overview_roles"] = stored
        return stored
    neuron = is_neuron(profile)
    cats = NEURON_CATEGORIES if neuron else KINETO_CATEGORIES
    C = {c: k for k, c in enumerate(cats)}
    n = len(profile)
    name_cls, step_of_name = _name_classes(profile)
    cat_cls = _cat_classes(profile, neuron)
    T = _tables(neuron, C)
    ccls = cat_cls[profile.cat] if n else np.zeros(0, np.int16)
    code = ccls * _NN + name_cls[profile.name] if n else np.zeros(0, np.int16)
    point = np.nonzero(profile.kind != EventKind.COMPLETE)[0]
    code[point] = 0  # (class 0 × plain: no role, no device row, no step)
    role = T["role"][code]

    comm = np.nonzero(role == C["Communication"])[0]
    comm_host = comm[(ccls[comm] != _C_KERNEL) & (ccls[comm] != _C_HW)]
    comm_libs = {profile.names[nid].split(":", 1)[0].upper() for nid in np.unique(profile.name[comm_host]).tolist()}
    device = np.nonzero(T["device"][code])[0]
    kernels = device[T["kernel"][code[device]]]
    if neuron:
        launcher = _neuron_launchers(profile, build_links(profile), device)
    else:
        if len(comm_host) and len(kernels):  # collective kernels: External id of an nccl:*/gloo:* op
            ids = np.unique(profile.ext[comm_host][profile.ext[comm_host] > 0])
            k = kernels[ccls[kernels] == _C_KERNEL]
            role[k[np.isin(profile.ext[k], ids)]] = C["Communication"]
        runtimes = np.nonzero(role == C["Runtime"])[0]
        runtimes = runtimes[profile.corr[runtimes] > 0]
        launcher = _by_key(profile.corr, runtimes, device, last=True)

    steps_idx = np.nonzero(T["step"][code])[0]
    host_steps = [
        HostStep(int(step_of_name[profile.name[i]]), int(profile.start[i]), int(profile.end[i]), int(i))
        for i in steps_idx.tolist()
    ]
    host_steps.sort(key=lambda s: (s.start, s.end))
    extent_cat = np.array([c.lower() in CPU_EXTENT_CATS or (neuron and c.lower() in NEURON_FRAMEWORK_CATS)
                           for c in profile.cats] or [False])
    in_extent = extent_cat[profile.cat] & (profile.kind == EventKind.COMPLETE) if n else np.zeros(0, bool)
    in_extent[steps_idx] = True
    if n and not in_extent.any():  # no host ops at all (a device-only trace): the extent of every interval
        lane_is_marker = np.array([l.subsystem == "markers" for l in profile.lanes] or [False])
        in_extent = (profile.kind == EventKind.COMPLETE) & ~lane_is_marker[profile.lane]
    cpu_extent = (int(profile.start[in_extent].min()), int(profile.end[in_extent].max())) if in_extent.any() else (0, 0)
    seen = frozenset(
        x for x in ("DataParallel.forward", "DistributedDataParallel.forward") if profile.name_id(x) >= 0
    )
    out = Roles(cats, role, neuron, device, launcher, kernels, host_steps, cpu_extent, comm_libs, seen)
    profile.cache["overview_roles"] = out
    _store_roles(profile, out)
    return out


_DERIVED = "overview_roles_v1"


def _store_roles(profile: Profile, r: Roles) -> None:
    """Keep the roles with a cached profile (re-opening it then skips the classification)."""
    from trntui import cache

    steps = np.array([[s.number, s.start, s.end, s.event] for s in r.host_steps], np.int64).reshape(-1, 4)
    cache.save_derived(profile, _DERIVED, {
        "role": r.role, "device": r.device, "launcher": r.launcher, "kernels": r.kernels, "steps": steps,
        "extent": np.array(r.cpu_extent, np.int64), "neuron": np.array([r.neuron]),
        "comm_libs": np.array(sorted(r.comm_libs), dtype="U16"),
    })


def _stored_roles(profile: Profile) -> Roles | None:
    from trntui import cache

    d = cache.load_derived(profile, _DERIVED)
    if d is None or len(d.get("role", ())) != len(profile):
        return None
    neuron = bool(d["neuron"][0])
    steps = [HostStep(int(a), int(b), int(c), int(e)) for a, b, c, e in d["steps"].tolist()]
    seen = frozenset(x for x in ("DataParallel.forward", "DistributedDataParallel.forward") if profile.name_id(x) >= 0)
    return Roles(NEURON_CATEGORIES if neuron else KINETO_CATEGORIES, d["role"], neuron, d["device"], d["launcher"],
                 d["kernels"], steps, (int(d["extent"][0]), int(d["extent"][1])), set(d["comm_libs"].tolist()), seen)


def _by_key(key: np.ndarray, candidates: np.ndarray, queries: np.ndarray, *, last: bool = False) -> np.ndarray:
    """Per query event: the candidate event with the same key (`corr`, `ext`), the first (or last) one in time
    order when several share it; -1 where none does or the key is missing (<= 0)."""
    out = np.full(len(queries), NO_ID, np.int64)
    if not len(candidates) or not len(queries):
        return out
    ck = key[candidates]
    o = np.argsort(ck, kind="stable")
    ck, cand = ck[o], candidates[o]
    q = key[queries]
    if last:
        pos = np.maximum(np.searchsorted(ck, q, side="right") - 1, 0)
    else:
        pos = np.minimum(np.searchsorted(ck, q, side="left"), len(ck) - 1)
    hit = (ck[pos] == q) & (q > 0)
    out[hit] = cand[pos[hit]]
    return out


def kernel_ops(profile: Profile, roles: Roles, kernels: np.ndarray) -> np.ndarray:
    """Per kernel: the host op that launched it, joined as the plugin joined them: kernel → runtime call with
    the same correlation → the first op with the runtime's External id (-1 where a link is missing). Where the
    External id is the broken old form, the op comes from `trntui.analysis.links` (time containment)."""
    cached = profile.cache.get("overview_kernel_ops")
    if cached is not None and len(cached[0]) == len(kernels) and np.array_equal(cached[0], kernels):
        return cached[1]
    from trntui import cache

    d = cache.load_derived(profile, "overview_kernel_ops_v1")
    if d is not None and len(d["kernels"]) == len(kernels) and np.array_equal(d["kernels"], kernels):
        profile.cache["overview_kernel_ops"] = (kernels, d["ops"])
        return d["ops"]
    pos = np.searchsorted(roles.device, kernels)
    pos = np.minimum(pos, max(len(roles.device) - 1, 0))
    ok = (roles.device[pos] == kernels) if len(roles.device) else np.zeros(len(kernels), bool)
    rt = np.where(ok, roles.launcher[pos] if len(roles.launcher) else NO_ID, NO_ID)
    host = np.array([c.lower() in HOST_OP_CATS for c in profile.cats] or [False])
    ops = np.nonzero(host[profile.cat] & (profile.ext > 0) & (profile.kind == EventKind.COMPLETE))[0]
    has = rt >= 0
    out = np.full(len(kernels), NO_ID, np.int64)
    out[has] = _by_key(profile.ext, ops, rt[has])
    broken = has.copy()
    broken[has] = profile.ext[rt[has]] == profile.corr[rt[has]]
    if broken.any():
        # old Kineto wrote External id = the call's own correlation (kineto-traces.md §8.2): such ids name no op
        # (or the wrong one); the links' time-containment fallback finds the op that really launched it
        from trntui.analysis.links import build_links

        out[broken] = build_links(profile).op_of[kernels[broken]]
    profile.cache["overview_kernel_ops"] = (kernels, out)
    cache.save_derived(profile, "overview_kernel_ops_v1", {"kernels": kernels, "ops": out})
    return out


def _neuron_launchers(profile: Profile, links, device: np.ndarray) -> np.ndarray:
    """Per hardware row: the earliest runtime-tier event linked directly above it (flow_id / nrt_sequence_id),
    the Neuron counterpart of the `cudaLaunchKernel` that the plugin ties kernels to steps with."""
    out = np.full(len(device), NO_ID, np.int64)
    if not len(device) or not len(links.edge_dst):
        return out
    tiers = np.array([int(l.tier) for l in profile.lanes] or [0], np.int64)
    pos = np.full(len(profile), -1, np.int64)
    pos[device] = np.arange(len(device))
    src, dst = links.edge_src, links.edge_dst
    sel = (pos[dst] >= 0) & (tiers[profile.lane[src]] == int(Tier.RUNTIME))
    if not sel.any():
        return out
    d, s = pos[dst[sel]], src[sel]
    o = np.lexsort((profile.start[s], d))
    d, s = d[o], s[o]
    first = np.ones(len(d), bool)
    first[1:] = d[1:] != d[:-1]
    out[d[first]] = s[first]
    return out
