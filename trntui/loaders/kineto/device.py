"""Device detection: which accelerator a Kineto trace comes from (CUDA, ROCm, MTIA, XPU, Neuron, CPU), and the
label torch uses for its device columns."""

from __future__ import annotations

from typing import Any

from trntui.model import categories as C
from trntui.model.builder import ProfileBuilder
from trntui.model.profile import ProfileMeta


def detect_device(builder: ProfileBuilder, top_meta: dict[str, Any], meta: ProfileMeta) -> None:
    cats = set(builder.cats)
    props = top_meta.get("deviceProperties") or []
    names = set(builder.names)
    rocm = any(isinstance(p, dict) and ("maxSharedMemoryPerMultiProcessor" in p or p.get("warpSize") == 64) for p in props)
    rocm = rocm or any(n.startswith("hip") for n in names if len(n) < 40)
    if cats & {C.PRIVATEUSE1_DISPATCH, C.PRIVATEUSE1_DRIVER}:
        kind, backend = "neuron", "NEURON"
    elif cats & {"mtia_runtime", "mtia_ccp_events", "mtia_insight"}:
        kind, backend = "mtia", "MTIA"
    elif cats & {"xpu_runtime", "xpu_driver", "xpu_scope_profiler"}:
        kind, backend = "xpu", "XPU"
    elif cats & (C.DEVICE_TYPED | {"cuda_runtime", "cuda_driver", "Runtime"}):
        kind, backend = ("rocm" if rocm else "cuda"), "CUDA"
    else:
        kind, backend = "cpu", ""
    if meta.device_kind in ("cpu", "") or kind != "cpu":
        meta.device_kind = kind
        meta.backend = meta.backend or backend
