"""Built-in workloads for `trntui profile NAME` and their registry (`BUILTINS`, filled by the `builtin`
decorator). Add one by writing a decorated factory here.

A factory takes a `CaptureContext` (device, dtype, shape, compile helper) and returns a `Workload`.
torch is imported inside factories only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from trntui.capture.contract import CaptureContext, Factory, Variant, Workload


@dataclass
class BuiltinInfo:
    name: str
    factory: Factory
    help: str
    variants: tuple[str, ...]


BUILTINS: dict[str, BuiltinInfo] = {}


def builtin(name: str, *, help: str, variants: tuple[str, ...]) -> Callable[[Factory], Factory]:  # noqa: A002
    """Register a built-in workload factory under `name` (the decorator of each factory below)."""

    def deco(factory: Factory) -> Factory:
        BUILTINS[name] = BuiltinInfo(name, factory, help, variants)
        return factory

    return deco


EPS = 1e-6


def rmsnorm_naive(t: Any, weight: Any) -> Any:
    """The reference walkthrough's naive RMSNorm: one or more ATen ops per line."""
    import torch

    x_sq = t * t
    mean_sq = x_sq.mean(-1, keepdim=True)
    rms = torch.rsqrt(mean_sq + EPS)
    return t * rms * weight


def rmsnorm_fused(t: Any, weight: Any) -> Any:
    """`torch.rms_norm`: one fused op (`aten::_fused_rms_norm` on recent torch)."""
    import torch

    return torch.rms_norm(t, [t.shape[-1]], weight)


@builtin(
    "rmsnorm",
    help="RMSNorm from the reference walkthrough: naive ATen ops, torch.rms_norm, and the naive code compiled",
    variants=("naive", "fused", "compiled"),
)
def rmsnorm(ctx: CaptureContext) -> Workload:
    import torch

    shape = ctx.shape or (4, 512)
    n = shape[-1]
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(*shape, generator=gen, dtype=torch.float32).to(dtype=ctx.dtype, device=ctx.device)
    weight = torch.ones(n, dtype=ctx.dtype, device=ctx.device)
    args = (x, weight)
    compiled = ctx.compile(rmsnorm_naive, fullgraph=True)
    return Workload(
        name="rmsnorm",
        description="RMSNorm: naive (mul, mean, add, rsqrt, mul, mul), torch.rms_norm, naive under torch.compile",
        variants={
            "naive": Variant(rmsnorm_naive, args, inference=True),
            "fused": Variant(rmsnorm_fused, args, inference=True),
            "compiled": Variant(compiled, args, inference=True),
        },
        meta={"eps": EPS},
    )
