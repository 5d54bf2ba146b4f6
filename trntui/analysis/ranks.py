"""Ranks of a distributed job side by side: per-rank step summaries, stragglers, and who the collectives wait for.

Two halves, both pure (no loading, no output):

- `summarize_rank(profile, ...)` → `RankSummary`: what one rank's trace says, in a few kB: its steps (time,
  and the overview's computation / communication / overlap / idle split of each), its top ops by device time,
  and its collective calls (start, end; one row per call). This is the per-rank function a worker runs next to
  the data; the events themselves never leave the worker.
- `compare_ranks(summaries)` → `RanksReport`: one row per rank (mean and per-step step time, the breakdown, top
  ops, difference from the median rank), the stragglers by a robust rule (shown with the report), and for each
  collective call which rank arrived last and how long the others waited.

**Straggler rule.** For a metric x over ranks (mean step time, and mean *working time* = step time minus the
time the rank spent waiting in collectives for later ranks): a rank is an outlier when
`x > median + k · max(1.4826 · MAD, floor · median)` (MAD = median absolute deviation; 1.4826·MAD estimates
the standard deviation of normal noise; the floor keeps identical ranks, MAD 0, from flagging microsecond
noise). k = 3 and floor = 1% by default. Working time matters because collectives synchronise ranks: a rank
that computes slowly makes every other rank wait for it at the next collective, so all step times come out
equal while the slow rank's working time (and its lateness at collectives) stands out. Needs 3 ranks or more.

**Collectives.** Calls are matched across ranks by (name, n-th call of that name on the rank) — collectives
run in the same order on every rank of a process group — as the TensorBoard plugin's distributed view does.
Device-level calls (NCCL/RCCL kernels, Neuron `cc_running`) end together on every rank (no rank leaves before
the last one arrived), so the rank with the *shortest* call arrived last, and each rank waited
`its duration − the shortest duration` (the plugin's "synchronizing time"; independent of clock offsets
between hosts). Host-level calls (`nccl:*` / `gloo:*` scopes, when a trace has no collective kernels) are
compared by their start times on the ranks' clocks (absolute ns; the hosts must be clock-synchronised): the
last start arrived last, and each rank waited `last start − its start`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from trntui.model.profile import Profile, Tier

DEFAULT_K = 3.0
DEFAULT_FLOOR = 0.01
MAD_SCALE = 1.4826
MIN_RANKS_FOR_STRAGGLERS = 3
TIE_NS = 1_000
"""Arrival spreads up to this many ns are ties: no rank is "last" at such a call."""
TOP_OPS = 5

DEVICE_COLLECTIVE_RX = re.compile(r"(?:^|\s)(?:nccl|rccl|ncclDev)[A-Za-z]*Kernel|^nccl[A-Z_]|^cc_running$|^cc_exec", re.I)
"""Device rows that are collectives: NCCL/RCCL kernels (`ncclKernel_AllReduce_…`, `ncclDevKernel_…`), Neuron
`cc_running` / `cc_exec_barrier`."""
HOST_COLLECTIVE_RX = re.compile(r"^(?:nccl|gloo|ucc|mpi|xla|neuron):[A-Za-z_]")
"""Host scopes torch records around collectives (`nccl:all_reduce`, `gloo:broadcast`, `nccl:_all_gather_base`)."""


# -- one rank ---------------------------------------------------------------------------------------------


@dataclass
class Collectives:
    """A rank's collective calls: one row per call, in time order."""

    level: str = ""
    """`device` (collective kernels / cc_running) or `host` (nccl:* / gloo:* scopes); empty when none."""
    names: list[str] = field(default_factory=list)
    name: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    """Index into `names` per call."""
    start: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    end: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def __len__(self) -> int:
        return int(self.start.shape[0])

    def to_dict(self) -> dict:
        return {"level": self.level, "names": list(self.names), "name": self.name.tolist(),
                "start": self.start.tolist(), "end": self.end.tolist()}

    @classmethod
    def from_dict(cls, d: dict) -> "Collectives":
        return cls(level=d["level"], names=list(d["names"]), name=np.asarray(d["name"], np.int32),
                   start=np.asarray(d["start"], np.int64), end=np.asarray(d["end"], np.int64))

    def calls_of(self) -> dict[str, np.ndarray]:
        """Call rows per collective name, each in time order."""
        return {n: np.nonzero(self.name == k)[0] for k, n in enumerate(self.names)}


@dataclass
class RankSummary:
    """What one rank's trace says, small enough to ship back from a worker (a few kB)."""

    name: str
    rank: int | None
    files: list[str] = field(default_factory=list)
    backend: str = ""
    events: int = 0
    steps: list[str] = field(default_factory=list)
    """Step labels (`ProfilerStep#N` → `N`); one whole-trace step `all` when the trace has no steps."""
    step_start: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    step_time: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    computation: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    communication: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    overlap: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    idle: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    top_ops: list[tuple[str, float]] = field(default_factory=list)
    """(op name, µs) by self device time (self CPU time for a trace without device time), largest first."""
    top_ops_metric: str = "self device"
    collectives: Collectives = field(default_factory=Collectives)
    """Device-level collective calls (NCCL/RCCL kernels, Neuron cc_running)."""
    host_collectives: Collectives = field(default_factory=Collectives)
    """Host-level collective scopes (`nccl:*`, `gloo:*`)."""
    notes: list[str] = field(default_factory=list)
    ran_on: dict = field(default_factory=dict)
    """Where it was computed: `worker` (host:pid, or `cache`), `peak_rss_bytes` of that process afterwards,
    `seconds` (wall) and `cpu_seconds` (CPU time of that process and the helpers it waited for, on this rank).
    Not part of the analysis: two engines give the same summaries with different `ran_on`."""

    @property
    def label(self) -> str:
        return str(self.rank) if self.rank is not None else self.name

    _ARRAYS = ("step_start", "step_time", "computation", "communication", "overlap", "idle")

    def to_dict(self) -> dict:
        """Plain JSON-able data (the summary cache, `--format json`)."""
        d = {k: getattr(self, k) for k in ("name", "rank", "files", "backend", "events", "steps", "top_ops_metric", "notes",
                                           "ran_on")}
        d.update({k: getattr(self, k).tolist() for k in self._ARRAYS})
        d["top_ops"] = [[n, v] for n, v in self.top_ops]
        d["collectives"] = self.collectives.to_dict()
        d["host_collectives"] = self.host_collectives.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RankSummary":
        out = cls(name=d["name"], rank=d["rank"], files=list(d["files"]), backend=d["backend"], events=d["events"],
                  steps=list(d["steps"]), top_ops_metric=d["top_ops_metric"], notes=list(d["notes"]),
                  ran_on=dict(d.get("ran_on") or {}))
        for k in cls._ARRAYS:
            setattr(out, k, np.asarray(d[k], np.int64))
        out.top_ops = [(str(n), float(v)) for n, v in d["top_ops"]]
        out.collectives = Collectives.from_dict(d["collectives"])
        out.host_collectives = Collectives.from_dict(d["host_collectives"])
        return out


@dataclass
class RankFailure:
    """A rank that could not be read: its name and the one-line reason."""

    name: str
    rank: int | None
    error: str


def summarize_rank(
    profile: Profile,
    *,
    name: str,
    rank: int | None,
    files: Sequence[str] = (),
    steps: str | None = None,
    top: int = TOP_OPS,
) -> RankSummary:
    """The summary of one rank's profile (optionally only the `ProfilerStep#N` numbers in `steps`, e.g. `3-5`)."""
    from trntui.analysis.key_averages import key_averages
    from trntui.analysis.select import select_events

    subset = select_events(profile, steps_spec=steps) if steps else None
    rows = step_rows(profile, steps)
    out = RankSummary(name=name, rank=rank, files=list(files), backend=profile.meta.backend, events=len(profile))
    out.steps = [str(r["step"]) for r in rows]
    for attr, key in (("step_start", "start_ns"), ("step_time", "total_ns"), ("computation", "computation_ns"),
                      ("communication", "communication_ns"), ("overlap", "overlap_ns"), ("idle", "other_ns")):
        setattr(out, attr, np.array([int(r[key]) for r in rows], np.int64))
    table = key_averages(profile, events=subset)
    out.top_ops, out.top_ops_metric = _top_ops(table, top)
    out.collectives = collective_calls(profile, subset, "device")
    out.host_collectives = collective_calls(profile, subset, "host")
    if not len(out.collectives) and not len(out.host_collectives):
        out.notes.append("no collective calls (NCCL/RCCL kernels, nccl:*/gloo:* scopes, cc_running)")
    meta = profile.meta
    if meta.skipped_total:
        out.notes.append(f"{meta.skipped_total:,} records skipped while reading ("
                         + ", ".join(f"{k}: {v:,}" for k, v in list(meta.skipped.items())[:3]) + ")")
    out.notes += [n for n in meta.notes if "truncated" in n or "repaired" in n or "skipped" in n
                  or "negative duration" in n][:3]
    return out


def _top_ops(table, top: int) -> tuple[list[tuple[str, float]], str]:
    ops = np.array([dt == "CPU" for dt in table.device_type], bool) & ~np.asarray(table.is_user_annotation, bool)
    if not len(ops):
        return [], "self device"
    values, metric = table.self_device_time_total, "self device"
    if not float(values[ops].sum()) > 0:
        values, metric = table.self_cpu_time_total, "self CPU"
    idx = np.nonzero(ops & (values > 0))[0]
    idx = idx[np.argsort(-values[idx], kind="stable")][:top]
    return [(table.name[k], float(values[k])) for k in idx.tolist()], metric


def collective_calls(profile: Profile, events: np.ndarray | None = None, level: str = "device") -> Collectives:
    """The rank's collective calls at `level`: `device` (collective kernels, cc_running) or `host` (scopes)."""
    n = len(profile)
    if n == 0:
        return Collectives()
    dev_names = [k for k, nm in enumerate(profile.names) if DEVICE_COLLECTIVE_RX.search(nm)]
    host_names = [k for k, nm in enumerate(profile.names) if HOST_COLLECTIVE_RX.match(nm)]
    keep = np.ones(n, bool) if events is None else np.isin(np.arange(n), events)
    tiers = np.array([int(l.tier) for l in profile.lanes], np.int8)
    lane_tier = tiers[profile.lane] if len(tiers) else np.zeros(n, np.int8)
    for lvl, ids, tier_ok in (
        ("device", dev_names, lane_tier == int(Tier.HARDWARE)),
        ("host", host_names, lane_tier != int(Tier.HARDWARE)),
    ):
        if lvl != level or not ids:
            continue
        mask = np.isin(profile.name, ids) & tier_ok & keep
        if level == "host":
            # the GPU mirror of an annotation (gpu_user_annotation) repeats the host scope on a device lane
            mask &= lane_tier == int(Tier.DISPATCH)
        idx = np.nonzero(mask)[0]
        if not len(idx):
            continue
        idx = idx[np.lexsort((idx, profile.start[idx]))]
        labels = [_collective_label(profile.names[int(profile.name[i])]) for i in idx.tolist()]
        names = sorted(set(labels))
        lookup = {nm: k for k, nm in enumerate(names)}
        return Collectives(
            level=lvl,
            names=names,
            name=np.array([lookup[x] for x in labels], np.int32),
            start=profile.start[idx].astype(np.int64),
            end=profile.end[idx].astype(np.int64),
        )
    return Collectives()


def _collective_label(name: str) -> str:
    """`ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, …)` → `ncclKernel_AllReduce_RING_LL_Sum_float`."""
    name = name.strip()
    if name.startswith("void "):
        name = name[5:]
    return name.split("(", 1)[0].split("<", 1)[0]


# -- the breakdown of each step -----------------------------------------------------------------------------


def step_rows(profile: Profile, steps: str | None) -> list[dict]:
    """The overview's steps (TB plugin §3 boundaries) with their computation / communication / overlap / other."""
    from trntui.analysis.overview import step_rows as overview_step_rows

    return overview_step_rows(profile, steps_spec=steps)


# -- many ranks ---------------------------------------------------------------------------------------------


@dataclass
class StragglerRule:
    """`x > median + k · max(1.4826 · MAD, floor · median)` over the ranks, per metric."""

    k: float = DEFAULT_K
    floor: float = DEFAULT_FLOOR

    def limit(self, values: np.ndarray) -> tuple[float, float, float]:
        """(median, scaled MAD, limit) of `values` (NaN ignored)."""
        v = values[~np.isnan(values)]
        if not len(v):
            return math.nan, math.nan, math.nan
        med = float(np.median(v))
        mad = float(np.median(np.abs(v - med))) * MAD_SCALE
        return med, mad, med + self.k * max(mad, self.floor * abs(med))

    def text(self) -> str:
        return (f"straggler: mean step time or mean working time (step time − waiting in collectives) > "
                f"median + {self.k:g} × max(1.4826 × MAD, {self.floor * 100:g}% of the median), over ranks")


@dataclass
class RankRow:
    """One rank in the report (times in ns; means over the rank's steps)."""

    rank: int | None
    name: str
    steps: int
    step_mean: float
    step_times: list[float]
    """Per report step label (`RanksReport.step_labels`); NaN where this rank has no such step."""
    computation: float
    communication: float
    overlap: float
    idle: float
    wait: float
    """Mean per step of the time this rank waited in collectives for later ranks."""
    top_ops: list[tuple[str, float]]
    top_ops_metric: str
    vs_median: float
    """step_mean − the median of the ranks' step means (ns)."""
    vs_median_pct: float
    last_arrivals: int = 0
    """Collective calls at which this rank arrived last."""
    straggler: bool = False
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ran_on: dict = field(default_factory=dict)

    @property
    def working(self) -> float:
        return self.step_mean - self.wait

    @property
    def label(self) -> str:
        return str(self.rank) if self.rank is not None else self.name


@dataclass
class CollectiveRow:
    """One collective call matched across ranks."""

    name: str
    call: int
    """The n-th call of `name` (from 1)."""
    last_rank: str
    """Label of the rank that arrived last; empty for a tie (spread ≤ TIE_NS)."""
    spread: int
    """How much later the last rank arrived than the first (ns)."""
    max_wait: int
    total_wait: int
    """Σ over ranks of the time each waited for the last one (ns)."""
    median_wait: float


@dataclass
class RanksReport:
    rows: list[RankRow]
    step_labels: list[str]
    matrix: np.ndarray
    """ranks × step labels: step time ns (float, NaN where missing), rows in `rows` order."""
    rule: StragglerRule
    medians: dict[str, float]
    limits: dict[str, float]
    mads: dict[str, float]
    stragglers: list[str]
    median_rank: str
    collectives: list[CollectiveRow]
    collective_level: str
    collective_method: str
    collective_notes: list[str]
    failures: list[RankFailure] = field(default_factory=list)
    collective_waits: dict[str, np.ndarray] = field(default_factory=dict)
    """Per collective name: ranks × calls, the ns each rank waited at each call (rows in `rows` order)."""

    def row(self, label: str) -> RankRow | None:
        return next((r for r in self.rows if r.label == label), None)


def _mean(a: np.ndarray) -> float:
    return float(a.mean()) if len(a) else math.nan


def compare_ranks(
    summaries: Sequence[RankSummary],
    failures: Sequence[RankFailure] = (),
    *,
    k: float = DEFAULT_K,
    floor: float = DEFAULT_FLOOR,
) -> RanksReport:
    """The cross-rank report of `summaries` (any order; rows come out by rank)."""
    ranks = sorted(summaries, key=lambda s: (s.rank is None, s.rank if s.rank is not None else 0, s.name))
    rule = StragglerRule(k, floor)
    labels: list[str] = []
    for s in ranks:
        for lab in s.steps:
            if lab not in labels:
                labels.append(lab)
    if all(x.isdigit() for x in labels):
        labels.sort(key=int)
    col = {lab: j for j, lab in enumerate(labels)}
    matrix = np.full((len(ranks), len(labels)), np.nan)
    for i, s in enumerate(ranks):
        for lab, t in zip(s.steps, s.step_time.tolist()):
            matrix[i, col[lab]] = float(t)

    waits, last_counts, crow, level, method, cnotes, wait_matrix = _collectives(ranks)
    rows: list[RankRow] = []
    for i, s in enumerate(ranks):
        nsteps = max(len(s.steps), 1)
        rows.append(
            RankRow(
                rank=s.rank,
                name=s.name,
                steps=len(s.steps),
                step_mean=_mean(s.step_time),
                step_times=matrix[i].tolist(),
                computation=_mean(s.computation),
                communication=_mean(s.communication),
                overlap=_mean(s.overlap),
                idle=_mean(s.idle),
                wait=float(waits[i]) / nsteps,
                top_ops=list(s.top_ops),
                top_ops_metric=s.top_ops_metric,
                vs_median=math.nan,
                vs_median_pct=math.nan,
                last_arrivals=int(last_counts[i]),
                notes=list(s.notes),
                ran_on=dict(s.ran_on),
            )
        )
    medians: dict[str, float] = {}
    limits: dict[str, float] = {}
    mads: dict[str, float] = {}
    metrics = {
        "step": np.array([r.step_mean for r in rows]),
        "working": np.array([r.working for r in rows]),
        "computation": np.array([r.computation for r in rows]),
        "communication": np.array([r.communication for r in rows]),
    }
    for key, values in metrics.items():
        medians[key], mads[key], limits[key] = rule.limit(values) if len(values) else (math.nan,) * 3
    for r in rows:
        r.vs_median = r.step_mean - medians["step"]
        r.vs_median_pct = 100.0 * r.vs_median / medians["step"] if medians["step"] else math.nan
    stragglers: list[str] = []
    if len(rows) >= MIN_RANKS_FOR_STRAGGLERS:
        for r in rows:
            if r.step_mean > limits["step"]:
                r.reasons.append(f"step time {_ms(r.step_mean)} > limit {_ms(limits['step'])}")
            if level and r.working > limits["working"]:
                r.reasons.append(f"working time {_ms(r.working)} > limit {_ms(limits['working'])}")
            if r.reasons:
                r.straggler = True
                if r.last_arrivals:
                    r.reasons.append(f"arrived last at {r.last_arrivals} of {len(crow)} collective calls")
                stragglers.append(r.label)
    med_rank = ""
    if rows:
        order = sorted(range(len(rows)), key=lambda i: (rows[i].step_mean, i))
        med_rank = rows[order[(len(order) - 1) // 2]].label
    return RanksReport(
        rows=rows,
        step_labels=labels,
        matrix=matrix,
        rule=rule,
        medians=medians,
        limits=limits,
        mads=mads,
        stragglers=stragglers,
        median_rank=med_rank,
        collectives=crow,
        collective_level=level,
        collective_method=method,
        collective_notes=cnotes,
        failures=list(failures),
        collective_waits=wait_matrix,
    )


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"


def _collectives(
    ranks: Sequence[RankSummary],
) -> tuple[np.ndarray, np.ndarray, list[CollectiveRow], str, str, list[str], dict[str, np.ndarray]]:
    """Per-rank total wait (ns) and last-arrival counts, one row per matched call, the level, method, notes, and
    the per-call wait matrix of each collective name."""
    n = len(ranks)
    waits = np.zeros(n, np.float64)
    last = np.zeros(n, np.int64)
    notes: list[str] = []
    if n < 2:
        return waits, last, [], "", "", notes, {}
    if all(len(s.collectives) for s in ranks):
        level = "device"
        picked = [s.collectives for s in ranks]
    elif all(len(s.host_collectives) for s in ranks):
        level = "host"
        picked = [s.host_collectives for s in ranks]
        if any(len(s.collectives) for s in ranks):
            notes.append("some ranks have no collective kernels: compared at host level")
    else:
        missing = [s.label for s in ranks if not len(s.collectives) and not len(s.host_collectives)]
        if missing and len(missing) < n:
            notes.append(f"rank(s) {', '.join(missing[:8])} have no collective calls: collectives not compared")
        return waits, last, [], "", "", notes, {}
    calls = [c.calls_of() for c in picked]
    names = sorted(set.intersection(*(set(c) for c in calls)))
    dropped = sorted(set.union(*(set(c) for c in calls)) - set(names))
    if dropped:
        notes.append(f"not on every rank, not compared: {', '.join(dropped[:5])}{' …' if len(dropped) > 5 else ''}")
    rows: list[CollectiveRow] = []
    matrices: dict[str, np.ndarray] = {}
    labels = [s.label for s in ranks]
    for nm in names:
        counts = [len(c[nm]) for c in calls]
        m = min(counts)
        if max(counts) != m:
            notes.append(f"{nm}: {min(counts)}–{max(counts)} calls per rank; the first {m} compared")
        starts = np.stack([p.start[c[nm][:m]] for p, c in zip(picked, calls)])  # ranks × calls
        ends = np.stack([p.end[c[nm][:m]] for p, c in zip(picked, calls)])
        if level == "device":
            durs = ends - starts
            w = durs - durs.min(axis=0)
        else:
            w = starts.max(axis=0) - starts
        w = w.astype(np.int64)
        matrices[nm] = w
        spread = w.max(axis=0)
        lastr = np.argmin(w, axis=0)
        for j in range(m):
            tie = int(spread[j]) <= TIE_NS
            if not tie:
                last[lastr[j]] += 1
            rows.append(
                CollectiveRow(
                    name=nm,
                    call=j + 1,
                    last_rank="" if tie else labels[int(lastr[j])],
                    spread=int(spread[j]),
                    max_wait=int(w[:, j].max()),
                    total_wait=int(w[:, j].sum()),
                    median_wait=float(np.median(w[:, j])),
                )
            )
        waits += w.sum(axis=1)
    method = (
        "device collectives: all ranks leave together, so wait = call duration − the shortest rank's duration; "
        "the shortest arrived last (no clock sync needed)"
        if level == "device"
        else "host collective scopes: wait = the last rank's start − this rank's start (needs synchronised clocks)"
    )
    return waits, last, rows, level, method, notes, matrices
