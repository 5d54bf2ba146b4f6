"""The roofline: documented NeuronCore peaks per instance type, attainable FLOP/s, verdicts and an ASCII plot.

`PEAKS` is the one table of hardware figures trntui uses, each row with the AWS Neuron documentation page it
comes from (repository aws-neuron/aws-neuron-sdk). The docs give Tensor Engine BF16 TFLOPS per NeuronCore (or per
chip: divided by the NeuronCores per chip) and HBM bandwidth per chip (divided by the NeuronCores sharing it), each
in its own unit (TFLOPS, TB/sec, GiB/sec: `UNITS`).
A logical NeuronCore of `k` physical cores (LNC=2 on Trn2/Trn3) gets `k` times both.

A point of the roofline is (FLOPs, HBM bytes, seconds). Arithmetic intensity AI = FLOPs / HBM bytes; the roof at
AI is min(peak FLOP/s, AI × peak bandwidth); the ridge is peak FLOP/s ÷ peak bandwidth. AI below the ridge is
memory-bound, above it compute-bound. Headroom = attainable ÷ achieved FLOP/s (how many times faster the point
could run on this roof); with no FLOPs recorded it is the bandwidth headroom, peak ÷ achieved bandwidth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

UNITS: dict[str, float] = {
    "TFLOPS": 1e12,
    "TB/sec": 1e12,
    "GB/sec": 1e9,
    "GiB/sec": float(1 << 30),
}
"""Each unit as the AWS docs write it → its SI factor (FLOP/s or bytes/s). `GiB/sec` is 2^30 bytes a second:
820 GiB/sec = 880.5 GB/s, not 820 GB/s."""

REPO = "aws-neuron/aws-neuron-sdk"
ARCH = "about-neuron/arch/neuron-hardware/"


@dataclass(frozen=True)
class Figure:
    """One documented hardware figure, exactly as its source writes it."""

    value: float
    """The number as printed in the source (`820`, `2.9`, `79`)."""
    unit: str
    """The unit as printed in the source (a key of `UNITS`)."""
    per: str
    """`chip` or `NeuronCore`: what the source's figure is for."""
    source: str
    """Path of the page in aws-neuron/aws-neuron-sdk."""
    quote: str
    """The source's words the figure is read from."""

    @property
    def si(self) -> float:
        """The figure in FLOP/s or bytes/s."""
        return self.value * UNITS[self.unit]

    def cite(self) -> str:
        return f"{self.source} ({self.quote})"


@dataclass(frozen=True)
class Peak:
    """Documented peak figures of one NeuronCore generation, as used for one family of instance types."""

    family: str
    prefixes: tuple[str, ...]
    """Instance-type prefixes (`trn2` matches `trn2.48xlarge`, `trn2u.48xlarge`)."""
    neuroncore: str
    cores_per_chip: int
    tensor: Figure
    """Tensor Engine BF16/FP16 dense TFLOPS (per chip or per NeuronCore, as the source states it)."""
    hbm: Figure
    """HBM (device memory) bandwidth of one chip."""
    vector: Figure | None = None
    """Vector Engine FP32 TFLOPS of one NeuronCore, where documented."""
    scalar: Figure | None = None
    """Scalar Engine FP32 TFLOPS of one NeuronCore, where documented."""

    def per_core(self, f: Figure | None) -> float | None:
        if f is None:
            return None
        return f.si / self.cores_per_chip if f.per == "chip" else f.si

    @property
    def tensor_flops_per_core(self) -> float:
        """Tensor Engine BF16/FP16 dense FLOP/s of one physical NeuronCore."""
        return float(self.per_core(self.tensor))

    @property
    def hbm_bytes_per_s_per_chip(self) -> float:
        return self.hbm.si * (self.cores_per_chip if self.hbm.per == "NeuronCore" else 1)

    @property
    def hbm_bytes_per_s_per_core(self) -> float:
        """HBM bandwidth per physical NeuronCore: the chip's bandwidth shared by its NeuronCores."""
        return self.hbm_bytes_per_s_per_chip / self.cores_per_chip

    @property
    def vector_flops_per_core(self) -> float | None:
        return self.per_core(self.vector)

    @property
    def scalar_flops_per_core(self) -> float | None:
        return self.per_core(self.scalar)

    @property
    def figures(self) -> tuple[Figure, ...]:
        return tuple(f for f in (self.tensor, self.hbm, self.vector, self.scalar) if f is not None)

    @property
    def source(self) -> str:
        """Where every figure of this row comes from (repository, page and the words read)."""
        pages: dict[str, list[str]] = {}
        for f in self.figures:
            pages.setdefault(f.source, []).append(f.quote)
        return f"{REPO} " + "; ".join(f"{path} ({'; '.join(q)})" for path, q in pages.items())


_NC2 = ARCH + "neuron-core-v2.rst"
_NC3 = ARCH + "neuron-core-v3.rst"
_NC4 = ARCH + "neuron-core-v4.rst"

PEAKS: tuple[Peak, ...] = (
    Peak(
        "Trn1", ("trn1n", "trn1"), "NeuronCore-v2", 2,
        Figure(190, "TFLOPS", "chip", ARCH + "trainium.rst", "Two NeuronCore-v2 delivering ... 190 FP16/BF16/cFP8/TF32 TFLOPS"),
        Figure(820, "GiB/sec", "chip", ARCH + "trainium.rst", "32 GiB of device memory ... with 820 GiB/sec of bandwidth"),
        Figure(2.3, "TFLOPS", "NeuronCore", _NC2, "The VectorEngine ... delivers 2.3 TFLOPS of FP32 computations"),
        Figure(2.9, "TFLOPS", "NeuronCore", _NC2, "The ScalarEngine ... delivers 2.9 TFLOPS of FP32 computations"),
    ),
    Peak(
        "Inf2", ("inf2",), "NeuronCore-v2", 2,
        Figure(190, "TFLOPS", "chip", ARCH + "inferentia2.rst", "Two NeuronCore-v2 cores, delivering ... 190 FP16/BF16/cFP8/TF32 TFLOPS"),
        Figure(820, "GiB/sec", "chip", ARCH + "inferentia2.rst", "32GiB of high-bandwidth device memor (HBM) ... with 820 GiB/sec of bandwidth"),
        Figure(2.3, "TFLOPS", "NeuronCore", _NC2, "The VectorEngine ... delivers 2.3 TFLOPS of FP32 computations"),
        Figure(2.9, "TFLOPS", "NeuronCore", _NC2, "The ScalarEngine ... delivers 2.9 TFLOPS of FP32 computations"),
    ),
    Peak(
        "Trn2", ("trn2u", "trn2"), "NeuronCore-v3", 8,
        Figure(79, "TFLOPS", "NeuronCore", _NC3, "A NeuronCore-v3 Tensor Engine delivers 158 cFP8 TFLOPS, and 79 BF16/FP16/TF32 TFLOPS"),
        Figure(2.9, "TB/sec", "chip", ARCH + "trainium2.rst", "Eight NeuronCore-v3 ... 96 GiB of device memory with 2.9 TB/sec of bandwidth"),
        Figure(1, "TFLOPS", "NeuronCore", _NC3, "Vector Engines ... deliver a total of 1 TFLOPS of FP32 computations"),
        Figure(1.2, "TFLOPS", "NeuronCore", _NC3, "Scalar Engines ... deliver a total of 1.2 TFLOPS of FP32 computations"),
    ),
    Peak(
        "Trn3", ("trn3",), "NeuronCore-v4", 8,
        Figure(79, "TFLOPS", "NeuronCore", _NC4, "a NeuronCore-v4 Tensor Engine also delivers 79 BF16/FP16/TF32 and 20 FP32 TFLOPS"),
        Figure(4.9, "TB/sec", "chip", ARCH + "trainium3.rst", "Eight NeuronCore-v4 ... 144 GiB of device memory, with 4.9 TB/sec of bandwidth"),
        Figure(1.2, "TFLOPS", "NeuronCore", _NC4, "Vector Engines ... deliver a total of 1.2 TFLOPS of FP32 computations"),
        Figure(1.2, "TFLOPS", "NeuronCore", _NC4, "Scalar Engines ... deliver a total of 1.2 TFLOPS of FP32 computations"),
    ),
)
"""Documented peaks, one row per NeuronCore generation (the only place hardware figures are written down).

Each figure keeps the number and unit its page prints (`Figure.value`, `Figure.unit`) and is converted once, by
`UNITS`. The chips' TFLOPS are per chip (÷ NeuronCores per chip); Trn2/Trn3 Tensor Engine figures are the
NeuronCore pages' own per-core numbers (79 TFLOPS; the chip pages' 667 and 671 ÷ 8 are a little higher)."""


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


NO_TRAFFIC = "no memory traffic recorded"
FLOPS_UNKNOWN = "FLOPs unknown"


@dataclass
class Point:
    """One thing on the roofline: the whole execution or one framework op.

    FLOPs NaN = not recorded (no `raw_flops`): the point has no intensity and no bound, only its bandwidth. FLOPs
    but no HBM bytes attributed: `no memory traffic recorded` (its intensity is unknown, not infinite: the bytes of
    an op may simply not be attributed to it), with its compute figures but no headroom."""

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
    """`memory-bound`, `compute-bound`, `no memory traffic recorded`, `FLOPs unknown`, or `no data`."""
    headroom: float = field(init=False)
    """Attainable ÷ achieved (×): how much faster this point could run on this roof (NaN when it cannot be said)."""

    def __post_init__(self) -> None:
        r = self.roof
        s = self.seconds if math.isfinite(self.seconds) else 0.0
        b = self.hbm_bytes if math.isfinite(self.hbm_bytes) else 0.0
        self.achieved_bandwidth = b / s if s > 0 else 0.0
        if not math.isfinite(self.flops):
            self.intensity = self.achieved_flops = self.attainable = math.nan
            self.bound = FLOPS_UNKNOWN if b > 0 else "no data"
            self.headroom = r.bandwidth / self.achieved_bandwidth if self.achieved_bandwidth > 0 else math.nan
            return
        self.achieved_flops = self.flops / s if s > 0 else 0.0
        if self.flops <= 0 and b <= 0:
            self.intensity, self.attainable = 0.0, 0.0
            self.bound, self.headroom = "no data", math.nan
            return
        if b <= 0:
            self.intensity, self.attainable = math.nan, r.flops
            self.bound, self.headroom = NO_TRAFFIC, math.nan
            return
        self.intensity = self.flops / b
        self.attainable = r.attainable(self.intensity) if self.flops > 0 else 0.0
        self.bound = "memory-bound" if self.intensity < r.ridge else "compute-bound"
        if self.flops > 0:
            self.headroom = self.attainable / self.achieved_flops if self.achieved_flops > 0 else math.nan
        else:  # data movement only: the roof is the bandwidth
            self.headroom = r.bandwidth / self.achieved_bandwidth if self.achieved_bandwidth > 0 else math.nan

    @property
    def placed(self) -> bool:
        """Whether the point can be drawn on the log-log plot (FLOPs and HBM bytes both known and positive)."""
        return math.isfinite(self.intensity) and self.intensity > 0 and self.achieved_flops > 0

    @property
    def roof_percent(self) -> float:
        """Achieved as % of the roof at this intensity (bandwidth % when no FLOPs; NaN when unknown)."""
        if self.bound in (NO_TRAFFIC, "no data"):
            return math.nan
        if math.isfinite(self.flops) and self.flops > 0:
            return 100.0 * self.achieved_flops / self.attainable if self.attainable > 0 else math.nan
        return 100.0 * self.achieved_bandwidth / self.roof.bandwidth if self.roof.bandwidth > 0 else math.nan

    def verdict(self) -> str:
        """One sentence: bound, why, and the headroom."""
        r = self.roof
        if self.bound == "no data":
            return f"{self.name}: no FLOPs and no HBM traffic recorded"
        if self.bound == FLOPS_UNKNOWN:
            return (f"{self.name}: FLOPs not recorded (no raw_flops), so no bound: "
                    f"{si(self.achieved_bandwidth, 'B/s')} of {si(r.bandwidth, 'B/s')} HBM bandwidth "
                    f"({pct_text(100.0 * self.achieved_bandwidth / r.bandwidth if r.bandwidth else math.nan)})")
        if self.bound == NO_TRAFFIC:
            return (f"{self.name}: {NO_TRAFFIC} (no HBM bytes attributed to it, so no arithmetic intensity): achieved "
                    f"{si(self.achieved_flops, 'FLOP/s')} of the {si(r.flops, 'FLOP/s')} compute peak")
        if self.flops <= 0:
            return (f"{self.name}: memory-bound (data movement only, no FLOPs recorded): "
                    f"{si(self.achieved_bandwidth, 'B/s')} of {si(r.bandwidth, 'B/s')} HBM bandwidth, "
                    f"{fmt_x(self.headroom)} headroom")
        side = "below" if self.bound == "memory-bound" else "above"
        return (f"{self.name}: {self.bound}: arithmetic intensity {fmt_ai(self.intensity)} FLOP/B is {side} the ridge "
                f"{fmt_ai(r.ridge)} FLOP/B; roof {si(self.attainable, 'FLOP/s')}, achieved "
                f"{si(self.achieved_flops, 'FLOP/s')} ({pct_text(self.roof_percent)} of the roof, {fmt_x(self.headroom)} headroom)")


def pct_text(p: float) -> str:
    return f"{p:.2g}%" if math.isfinite(p) else "-"


def short_verdict(p: Point) -> str:
    """`memory-bound · AI 0.276 < ridge 218 FLOP/B · 58,858× headroom` (for narrow panes)."""
    if p.bound == "no data":
        return "no FLOPs and no HBM traffic recorded"
    if p.bound == FLOPS_UNKNOWN:
        return f"{FLOPS_UNKNOWN} (no raw_flops) · {si(p.achieved_bandwidth, 'B/s')} HBM"
    if p.bound == NO_TRAFFIC:
        return f"{NO_TRAFFIC} · {si(p.achieved_flops, 'FLOP/s')}"
    if p.flops <= 0:
        return f"{p.bound} · data movement only · {fmt_x(p.headroom)} bandwidth headroom"
    rel = "<" if p.bound == "memory-bound" else "≥"
    return f"{p.bound} · AI {fmt_ai(p.intensity)} {rel} ridge {fmt_ai(p.roof.ridge)} FLOP/B · {fmt_x(p.headroom)} headroom"


def fmt_ai(x: float) -> str:
    if not math.isfinite(x):
        return "-"
    return "0" if x == 0 else f"{x:.3g}"


def fmt_x(x: float) -> str:
    if not math.isfinite(x) or x < 0:
        return "-"
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
    `·`; each point is drawn with its marker (the first character of its label). A point without FLOPs or without
    HBM bytes has no place on the log axes and is only listed. The legend (one line per point) follows the plot.
    """
    width, height = max(width, 24), max(height, 6)
    plot_w = width - 9  # y-axis labels
    placed = [p for _, p in points if p.placed]
    finite = [p.intensity for p in placed]
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
        if p.placed:
            c = col(p.intensity)
            r = row(p.achieved_flops)
            grid[min(max(r, 0), height - 1)][min(max(c, 0), plot_w - 1)] = mark
            legend.append(f"  {mark} {p.name}: AI {fmt_ai(p.intensity)} FLOP/B, {si(p.achieved_flops, 'FLOP/s')}, {p.bound}")
        elif p.bound == NO_TRAFFIC:
            legend.append(f"  {mark} {p.name}: {si(p.achieved_flops, 'FLOP/s')}, {NO_TRAFFIC} (not on the plot)")
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
