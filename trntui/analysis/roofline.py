"""The roofline: documented NeuronCore peaks per instance type, attainable FLOP/s, verdicts and an ASCII plot.

`PEAKS` is the one table of hardware figures trntui uses, each row with the AWS Neuron documentation page it
comes from (repository aws-neuron/aws-neuron-sdk). The docs give Tensor Engine BF16 TFLOPS per NeuronCore (or per
chip: divided by the NeuronCores per chip) and HBM bandwidth per chip (divided by the NeuronCores sharing it).
A logical NeuronCore of `k` physical cores (LNC=2 on Trn2/Trn3) gets `k` times both.

A point of the roofline is (FLOPs, HBM bytes, seconds). Arithmetic intensity AI = FLOPs / HBM bytes; the roof at
AI is min(peak FLOP/s, AI × peak bandwidth); the ridge is peak FLOP/s ÷ peak bandwidth. AI below the ridge is
memory-bound, above it compute-bound. Headroom = attainable ÷ achieved FLOP/s (how many times faster the point
could run on this roof); with no FLOPs recorded it is the bandwidth headroom, peak ÷ achieved bandwidth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

TB = 1e12
GB = 1e9
GIB = float(1 << 30)


@dataclass(frozen=True)
class Peak:
    """Documented peak figures of one NeuronCore generation, as used for one family of instance types."""

    family: str
    prefixes: tuple[str, ...]
    """Instance-type prefixes (`trn2` matches `trn2.48xlarge`, `trn2u.48xlarge`)."""
    neuroncore: str
    cores_per_chip: int
    tensor_flops_per_core: float
    """Tensor Engine BF16/FP16 dense FLOP/s of one physical NeuronCore."""
    hbm_bytes_per_s_per_chip: float
    vector_flops_per_core: float | None
    """Vector Engine FP32 FLOP/s of one NeuronCore, where documented."""
    scalar_flops_per_core: float | None
    source: str

    @property
    def hbm_bytes_per_s_per_core(self) -> float:
        return self.hbm_bytes_per_s_per_chip / self.cores_per_chip


PEAKS: tuple[Peak, ...] = (
    Peak(
        "Trn1", ("trn1n", "trn1"), "NeuronCore-v2", 2, 190 * TB / 2, 820 * GB, 2.3 * TB, 2.9 * TB,
        "aws-neuron-sdk general/arch/neuron-hardware/trainium.rst (Trainium: 2 NeuronCore-v2, 190 FP16/BF16 TFLOPS, "
        "820 GB/s HBM per chip); about-neuron/arch/neuron-hardware/neuron-core-v2.rst (Vector 2.3, Scalar 2.9 FP32 "
        "TFLOPS per core)",
    ),
    Peak(
        "Inf2", ("inf2",), "NeuronCore-v2", 2, 190 * TB / 2, 820 * GIB, 2.3 * TB, 2.9 * TB,
        "aws-neuron-sdk about-neuron/arch/neuron-hardware/inferentia2.rst (Inferentia2: 2 NeuronCore-v2, 190 "
        "FP16/BF16 TFLOPS, 820 GiB/s HBM per chip); neuron-core-v2.rst (Vector 2.3, Scalar 2.9 FP32 TFLOPS per core)",
    ),
    Peak(
        "Trn2", ("trn2u", "trn2"), "NeuronCore-v3", 8, 79 * TB, 2.9 * TB, None, None,
        "aws-neuron-sdk about-neuron/arch/neuron-hardware/neuron-core-v3.rst (Tensor Engine 79 BF16/FP16/TF32 TFLOPS "
        "per core); trainium2.rst (8 NeuronCore-v3, 2.9 TB/s HBM per chip)",
    ),
    Peak(
        "Trn3", ("trn3",), "NeuronCore-v4", 8, 79 * TB, 4.9 * TB, 1.2 * TB, 1.2 * TB,
        "aws-neuron-sdk about-neuron/arch/neuron-hardware/neuron-core-v4.rst (Tensor Engine 79 BF16/FP16/TF32 TFLOPS, "
        "Vector 1.2, Scalar 1.2 FP32 TFLOPS per core); trainium3.rst (8 NeuronCore-v4, 4.9 TB/s HBM per chip)",
    ),
)
"""Documented peaks, one row per NeuronCore generation (the only place hardware figures are written down)."""


def peak_for(instance_type: str) -> Peak | None:
    """The `PEAKS` row for an instance type (`trn2.48xlarge`, `Trn2`, `trn1n.32xlarge`), or None."""
    it = instance_type.strip().lower()
    if not it:
        return None
    for p in PEAKS:
        if any(it == pre or it.startswith(pre + ".") or it == p.family.lower() for pre in p.prefixes):
            return p
    return None


@dataclass(frozen=True)
class Roof:
    """The roof a point is judged against: peak FLOP/s and bandwidth of one (logical) NeuronCore."""

    flops: float
    bandwidth: float
    source: str
    label: str
    """What the roof is, e.g. `trn2 · NeuronCore-v3 ×2 (LNC=2)`."""
    ceilings: tuple[tuple[str, float], ...] = ()
    """Lower compute ceilings drawn on the plot (Vector / Scalar engine FP32 peaks, where documented)."""

    @property
    def ridge(self) -> float:
        """Arithmetic intensity (FLOP/byte) where the bandwidth slope meets the compute roof."""
        return self.flops / self.bandwidth

    def attainable(self, intensity: float) -> float:
        return min(self.flops, intensity * self.bandwidth)


def roof_for(peak: Peak, physical_cores: int = 1) -> Roof:
    k = max(int(physical_cores), 1)
    lnc = f" ×{k} (LNC={k})" if k > 1 else ""
    ceilings = tuple(
        (name, v * k) for name, v in (("Vector FP32", peak.vector_flops_per_core), ("Scalar FP32", peak.scalar_flops_per_core)) if v
    )
    return Roof(peak.tensor_flops_per_core * k, peak.hbm_bytes_per_s_per_core * k, peak.source,
                f"{peak.family} · {peak.neuroncore}{lnc}", ceilings)


@dataclass
class Point:
    """One thing on the roofline: the whole execution or one framework op."""

    name: str
    flops: float
    hbm_bytes: float
    seconds: float
    roof: Roof
    intensity: float = field(init=False)
    achieved_flops: float = field(init=False)
    achieved_bandwidth: float = field(init=False)
    attainable: float = field(init=False)
    bound: str = field(init=False)
    """`memory-bound`, `compute-bound`, or `no data` (no FLOPs and no HBM bytes)."""
    headroom: float = field(init=False)
    """Attainable ÷ achieved (×): how much faster this point could run on this roof (inf when it took no time)."""

    def __post_init__(self) -> None:
        r = self.roof
        self.intensity = self.flops / self.hbm_bytes if self.hbm_bytes > 0 else (math.inf if self.flops > 0 else 0.0)
        s = self.seconds
        self.achieved_flops = self.flops / s if s > 0 else 0.0
        self.achieved_bandwidth = self.hbm_bytes / s if s > 0 else 0.0
        self.attainable = r.attainable(self.intensity) if self.flops > 0 else 0.0
        if self.flops <= 0 and self.hbm_bytes <= 0:
            self.bound, self.headroom = "no data", math.nan
            return
        self.bound = "memory-bound" if self.intensity < r.ridge else "compute-bound"
        if self.flops > 0:
            self.headroom = self.attainable / self.achieved_flops if self.achieved_flops > 0 else math.inf
        else:  # data movement only: the roof is the bandwidth
            self.headroom = r.bandwidth / self.achieved_bandwidth if self.achieved_bandwidth > 0 else math.inf

    @property
    def roof_percent(self) -> float:
        """Achieved as % of the roof at this intensity (bandwidth % when no FLOPs)."""
        if self.flops > 0:
            return 100.0 * self.achieved_flops / self.attainable if self.attainable > 0 else 0.0
        return 100.0 * self.achieved_bandwidth / self.roof.bandwidth if self.roof.bandwidth > 0 else 0.0

    def verdict(self) -> str:
        """One sentence: bound, why, and the headroom."""
        r = self.roof
        if self.bound == "no data":
            return f"{self.name}: no FLOPs and no HBM traffic recorded"
        if self.flops <= 0:
            return (f"{self.name}: memory-bound (data movement only, no FLOPs recorded): "
                    f"{si(self.achieved_bandwidth, 'B/s')} of {si(r.bandwidth, 'B/s')} HBM bandwidth, "
                    f"{self.headroom:.0f}× headroom")
        if not math.isfinite(self.intensity):
            return (f"{self.name}: compute-bound (no HBM traffic: its data stays on chip); achieved "
                    f"{si(self.achieved_flops, 'FLOP/s')} of {si(r.flops, 'FLOP/s')}, {fmt_x(self.headroom)} headroom")
        side = "below" if self.bound == "memory-bound" else "above"
        return (f"{self.name}: {self.bound}: arithmetic intensity {fmt_ai(self.intensity)} FLOP/B is {side} the ridge "
                f"{fmt_ai(r.ridge)} FLOP/B; roof {si(self.attainable, 'FLOP/s')}, achieved "
                f"{si(self.achieved_flops, 'FLOP/s')} ({self.roof_percent:.2g}% of the roof, {fmt_x(self.headroom)} headroom)")


def short_verdict(p: Point) -> str:
    """`memory-bound · AI 0.276 < ridge 218 FLOP/B · 58,858× headroom` (for narrow panes)."""
    if p.bound == "no data":
        return "no FLOPs and no HBM traffic recorded"
    if p.flops <= 0:
        return f"{p.bound} · data movement only · {fmt_x(p.headroom)} bandwidth headroom"
    if not math.isfinite(p.intensity):
        return f"{p.bound} · no HBM traffic · {fmt_x(p.headroom)} headroom"
    rel = "<" if p.bound == "memory-bound" else "≥"
    return f"{p.bound} · AI {fmt_ai(p.intensity)} {rel} ridge {fmt_ai(p.roof.ridge)} FLOP/B · {fmt_x(p.headroom)} headroom"


def fmt_ai(x: float) -> str:
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else "inf"
    return f"{x:.3g}"


def fmt_x(x: float) -> str:
    if not math.isfinite(x):
        return "∞×" if x > 0 else "-"
    return f"{x:,.0f}×" if x >= 10 else f"{x:.2g}×"


def si(x: float, unit: str) -> str:
    """3 significant digits with an SI prefix: `302 GFLOP/s`, `1.45 TB/s`."""
    if not math.isfinite(x):
        return f"- {unit}"
    for p, f in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= f:
            return f"{x / f:.3g} {p}{unit}"
    return f"{x:.3g} {unit}"


MARKERS = "123456789abcdefghijklmnopqrstuvwxyz"


def ascii_plot(roof: Roof, points: list[tuple[str, Point]], width: int = 64, height: int = 16) -> list[str]:
    """A log–log roofline as text: x = arithmetic intensity (FLOP/B), y = achieved FLOP/s.

    The roof is `/` on the bandwidth slope and `─` on the compute roof (`+` at the ridge), lower engine ceilings
    `·`; each point is drawn with its marker (the first character of its label). A point with FLOPs but no HBM
    traffic (intensity ∞) sits at the right edge; one with no FLOPs cannot be placed on a log axis and is only
    listed. The legend (one line per point) follows the plot.
    """
    width, height = max(width, 24), max(height, 6)
    plot_w = width - 9  # y-axis labels
    placed = [p for _, p in points if p.flops > 0 and p.achieved_flops > 0]
    finite = [p.intensity for p in placed if math.isfinite(p.intensity)]
    lo_x = math.floor(math.log10(min(finite + [roof.ridge / 1000])))
    hi_x = math.ceil(math.log10(max(finite + [roof.ridge * 10])))
    hi_y = math.ceil(math.log10(roof.flops * 2))
    lo_y = math.floor(math.log10(min([p.achieved_flops for p in placed] + [roof.attainable(10**lo_x)])))
    lo_y = min(lo_y, hi_y - 2)
    grid = [[" "] * plot_w for _ in range(height)]

    def col(x: float) -> int:
        return int(round((math.log10(x) - lo_x) / (hi_x - lo_x) * (plot_w - 1)))

    def row(y: float) -> int:
        return (height - 1) - int(round((math.log10(y) - lo_y) / (hi_y - lo_y) * (height - 1)))

    ridge_col = col(roof.ridge)
    for c in range(plot_w):
        x = 10 ** (lo_x + c / (plot_w - 1) * (hi_x - lo_x))
        for _, ceil in roof.ceilings:
            if x * roof.bandwidth >= ceil and 0 <= row(ceil) < height:
                grid[row(ceil)][c] = "·"
        r = row(roof.attainable(x))
        if 0 <= r < height:
            grid[r][c] = "+" if c == ridge_col else ("─" if c > ridge_col else "/")
    legend = []
    for label, p in points:
        mark = label[:1]
        if p.flops > 0 and p.achieved_flops > 0:
            c = col(p.intensity) if math.isfinite(p.intensity) else plot_w - 1
            r = row(p.achieved_flops)
            grid[min(max(r, 0), height - 1)][min(max(c, 0), plot_w - 1)] = mark
            where = f"AI {fmt_ai(p.intensity)} FLOP/B" if math.isfinite(p.intensity) else "AI ∞ (no HBM traffic)"
            legend.append(f"  {mark} {p.name}: {where}, {si(p.achieved_flops, 'FLOP/s')}, {p.bound}")
        elif p.bound != "no data":
            legend.append(f"  {mark} {p.name}: no FLOPs, {si(p.achieved_bandwidth, 'B/s')} HBM (not on the log axes), {p.bound}")
    ticks = {row(10.0**k): f"1e{k}" for k in range(lo_y, hi_y + 1) if 0 <= row(10.0**k) < height}
    lines = [f"{ticks.get(r, ''):>7} │" + "".join(grid[r]) for r in range(height)]
    lines.append(" " * 8 + "└" + "─" * plot_w)
    axis = [" "] * plot_w
    for k in range(lo_x, hi_x + 1):
        lab = f"1e{k}"
        c = col(10.0**k)
        if 0 <= c and c + len(lab) <= plot_w and all(ch == " " for ch in axis[max(c - 1, 0) : c + len(lab) + 1]):
            axis[c : c + len(lab)] = list(lab)
    lines.append(" " * 9 + "".join(axis))
    lines.append(f"{'FLOP/s':>7}   x: arithmetic intensity, FLOP/byte (log); ridge {fmt_ai(roof.ridge)} FLOP/B")
    lines.extend(legend)
    return [x if len(x) <= width else x[: width - 1] + "…" for x in lines]
