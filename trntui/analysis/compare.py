"""Compare runs: a side-by-side summary (one row per run) and an op-level diff, plus CI regression rules.

Metrics per run (µs for times), as shown by `trntui compare` and usable in `--fail-if` rules:

- `device_time`: torch's "Self <DEV> time total" (Σ self device time over device rows, key_averages footer);
  when the trace has hardware executions but no device rows in the table, the summed LNC-merged execution
  time. None for a CPU-only run.
- `self_cpu`: torch's "Self CPU time total" (Σ self CPU over all rows, key_averages footer).
- `dispatches`: operator executions that reached the device (kernels, `nc_exec_running`; Neuron LNC
  per-physical-core duplicates merged). None for a CPU-only run.
- `host_ops`: top-level operator calls: `cpu_op` events (plus compiled-graph calls, `Torch-Compiled Region*`)
  that have no other such operator call around them on their thread, inside the profiled step(s).
  Dynamo's guard check (`TorchDynamo Cache Lookup`) is bookkeeping, not an operator call.
  `ProfilerStep#N` and other `record_function` scopes are transparent wrappers: ops inside them still count as
  top level; ops nested in another op (aten::mean → aten::sum) do not. Naive RMSNorm = 6 (mul, mean, add,
  rsqrt, mul, mul); `torch.rms_norm` = 1; the compiled function = 1 (its region).
- `span`: wall time of the profiled step(s): first `ProfilerStep#N` start to last step end (the whole trace's
  span when it has no steps).
- `busy` / `idle`: time the hardware was executing / waiting inside its active window (first execution start
  to last execution end, union over all hardware lanes). None without hardware lanes.

Ops are matched across runs by (name, CPU-or-device row[, input shapes]); the op diff carries, per run,
# Calls, Self CPU and Self device, and per non-baseline run the deltas against the baseline (the first run).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from trntui.analysis.gaps import GapReport, device_dispatches, dispatch_events, gap_report, merge_intervals
from trntui.analysis.key_averages import FILTERED_NAMES, OpTable, key_averages
from trntui.errors import TrntuiError
from trntui.model.profile import NO_ID, Profile

METRICS = ("device_time", "self_cpu", "dispatches", "host_ops", "span", "busy", "idle")
"""Names usable in `--fail-if` rules and the keys of `RunMetrics.values()`."""
TIME_METRICS = frozenset({"device_time", "self_cpu", "span", "busy", "idle"})
METRIC_TITLES = {
    "device_time": "Device time",
    "self_cpu": "Self CPU",
    "dispatches": "Dispatches",
    "host_ops": "Host ops",
    "span": "Step span",
    "busy": "Busy",
    "idle": "Idle",
}

COMPILED_REGION_PREFIX = "Torch-Compiled Region"
"""torch records each call of a `torch.compile`d graph as a `record_function` with this name."""
OP_CATS = ("cpu_op", "Operator")
NOT_OPERATOR_CALLS = ("TorchDynamo Cache Lookup",)
"""torch.compile bookkeeping recorded as `cpu_op` (guard evaluation before each compiled call): not an operator
call of the workload (transparent, like a record_function scope)."""


# -- host-side operator calls -------------------------------------------------------------------------------


def step_windows(profile: Profile) -> list[tuple[int, int]]:
    """(start, end) of every `ProfilerStep#N` scope, in time order."""
    ids = [k for k, n in enumerate(profile.names) if n.startswith("ProfilerStep#")]
    if not ids or len(profile) == 0:
        return []
    idx = np.nonzero(np.isin(profile.name, ids))[0]
    return sorted((int(profile.start[i]), int(profile.end[i])) for i in idx.tolist())


def host_op_calls(profile: Profile) -> np.ndarray:
    """Event indexes of the top-level operator calls (see the module docstring for the definition)."""
    cached = profile.cache.get("host_op_calls")
    if cached is not None:
        return cached
    n = len(profile)
    if n == 0:
        return np.empty(0, np.int64)
    cand = profile.cat_mask(OP_CATS)
    region_ids = [k for k, nm in enumerate(profile.names) if nm.startswith(COMPILED_REGION_PREFIX)]
    if region_ids:
        cand |= profile.cat_mask(("user_annotation",)) & np.isin(profile.name, region_ids)
    filtered = [profile.name_id(x) for x in FILTERED_NAMES]
    filtered += [k for k, nm in enumerate(profile.names) if nm.startswith(NOT_OPERATOR_CALLS)]
    filtered = [x for x in filtered if x >= 0]
    if filtered:
        cand &= ~np.isin(profile.name, filtered)
    cand &= profile.end >= profile.start
    steps = step_windows(profile)
    if steps:
        inside = np.zeros(n, bool)
        for s, e in steps:
            inside |= (profile.start >= s) & (profile.end <= e)
        cand &= inside
    idx = np.nonzero(cand)[0]
    if len(idx) == 0:
        profile.cache["host_op_calls"] = idx
        return idx
    parent, _ = profile.nesting()
    parent = parent.astype(np.int64)
    # climb every candidate's ancestors together until each reaches another candidate or the root
    anc = parent[idx]
    for _ in range(100_000):
        climbing = (anc != NO_ID) & ~cand[np.maximum(anc, 0)]
        if not climbing.any():
            break
        anc[climbing] = parent[anc[climbing]]
    out = idx[anc == NO_ID].astype(np.int64)
    profile.cache["host_op_calls"] = out
    return out


# -- per-run metrics ----------------------------------------------------------------------------------------


@dataclass
class RunMetrics:
    """One row of the side-by-side summary."""

    name: str
    backend: str
    device_time: float | None
    self_cpu: float
    dispatches: int | None
    host_ops: int
    span: float
    busy: float | None
    idle: float | None
    steps: int
    device_time_source: str = ""

    def values(self) -> dict[str, float | None]:
        return {m: (None if getattr(self, m) is None else float(getattr(self, m))) for m in METRICS}

    @property
    def has_device(self) -> bool:
        return self.device_time is not None


@dataclass
class ComparedRun:
    """A loaded run ready to compare: its name, profile, op table and metrics (a run on disk, before loading, is
    `trntui.loaders.discover.Run`)."""

    name: str
    profile: Profile
    table: OpTable
    metrics: RunMetrics
    gaps: GapReport
    source: str = ""


def run_metrics(name: str, profile: Profile, table: OpTable | None = None) -> RunMetrics:
    """The summary metrics of one run (see the module docstring for definitions)."""
    table = table if table is not None else key_averages(profile)
    gaps = gap_report(profile)
    dispatch_ev = dispatch_events(profile)
    device_time: float | None = None
    source = ""
    if table.has_device:
        device_time = float(table.sum_self_device)
        source = table.device_time_source or "trace.json device rows"
    elif len(dispatch_ev):
        ms, me, _, _ = merge_intervals(profile.start[dispatch_ev], profile.end[dispatch_ev])
        device_time = float((me - ms).sum()) / 1000.0
        source = "hardware executions (merged)"
    has_hw = gaps.device is not None
    steps = step_windows(profile)
    if steps:
        span_ns = max(e for _, e in steps) - min(s for s, _ in steps)
    else:
        t0, t1 = profile.span
        span_ns = t1 - t0
    return RunMetrics(
        name=name,
        backend=table.backend if table.has_device else ("" if not has_hw else (profile.meta.backend or "device")),
        device_time=device_time,
        self_cpu=float(table.sum_self_cpu),
        dispatches=device_dispatches(profile) if (has_hw or table.has_device) else None,
        host_ops=int(len(host_op_calls(profile))),
        span=span_ns / 1000.0,
        busy=gaps.device.busy_ns / 1000.0 if gaps.device else None,
        idle=gaps.device.idle_ns / 1000.0 if gaps.device else None,
        steps=len(steps),
        device_time_source=source,
    )


def make_run(name: str, profile: Profile, *, group_by_input_shapes: bool = False, source: str = "") -> ComparedRun:
    table = key_averages(profile, group_by_input_shapes=group_by_input_shapes)
    base_table = table if not group_by_input_shapes else key_averages(profile)
    return ComparedRun(name, profile, table, run_metrics(name, profile, base_table), gap_report(profile), source)


def ratio(value: float | None, base: float | None) -> float | None:
    """value / base, None when either is missing or the base is 0."""
    if value is None or base is None or base == 0:
        return None
    return value / base


def headline_metric(runs: Sequence[ComparedRun]) -> str:
    """The metric the "vs baseline" column uses: device time when every run has it, else Self CPU."""
    return "device_time" if runs and all(r.metrics.device_time is not None for r in runs) else "self_cpu"


# -- op diff --------------------------------------------------------------------------------------------------


@dataclass
class OpDiffRow:
    """One op matched across runs. Per-run lists hold None where the op is absent from that run."""

    name: str
    is_device: bool
    input_shapes: str
    device_type: list[str | None]
    calls: list[int | None]
    self_cpu: list[float | None]
    self_device: list[float | None]
    table_rows: list[int]
    """Row index in each run's OpTable (-1 when absent)."""
    ambiguous: bool = False
    """Another row has the same name (a CPU row and a device row, e.g. a record_function and its GPU mirror)."""

    @property
    def label(self) -> str:
        """The name, with ` [device]` on a device row whose name is also a CPU row's."""
        return self.name + (" [device]" if self.ambiguous and self.is_device else "")

    @property
    def present(self) -> list[bool]:
        return [c is not None for c in self.calls]

    @property
    def status(self) -> str:
        """`new` (absent from the baseline), `removed` (in the baseline, absent from some other run),
        `changed` (calls or times differ) or `same`."""
        p = self.present
        if not p[0]:
            return "new"
        if not all(p[1:]):
            return "removed"
        if any(self.calls[k] != self.calls[0] for k in range(1, len(p))):
            return "changed"
        for col in (self.self_cpu, self.self_device):
            if any(abs((col[k] or 0.0) - (col[0] or 0.0)) > 1e-9 for k in range(1, len(p))):
                return "changed"
        return "same"

    def marker(self, k: int) -> str:
        """Per-run marker: `+` new in run k (absent from baseline), `-` removed in run k, else ``."""
        if k == 0:
            return ""
        if self.calls[k] is not None and self.calls[0] is None:
            return "+"
        if self.calls[k] is None and self.calls[0] is not None:
            return "-"
        return ""

    def delta(self, column: str, k: int) -> float:
        """Run k minus the baseline for `calls`, `self_cpu` or `self_device` (absent counts as 0)."""
        col = getattr(self, column)
        return float(col[k] or 0) - float(col[0] or 0)

    def max_abs_delta(self, column: str) -> float:
        if len(self.calls) < 2:
            return 0.0
        return max(abs(self.delta(column, k)) for k in range(1, len(self.calls)))

    def to_dict(self, run_names: Sequence[str]) -> dict[str, Any]:
        from trntui.textsafe import safe_text

        out: dict[str, Any] = {
            "name": safe_text(self.name),
            "row": "device" if self.is_device else "CPU",
            "input_shapes": safe_text(self.input_shapes),
            "status": self.status,
            "runs": {},
        }
        for k, run in enumerate(run_names):
            entry: dict[str, Any] = {
                "present": self.calls[k] is not None,
                "calls": self.calls[k] or 0,
                "self_cpu_us": self.self_cpu[k] or 0.0,
                "self_device_us": self.self_device[k] or 0.0,
            }
            if k:
                entry["delta_calls"] = int(self.delta("calls", k))
                entry["delta_self_cpu_us"] = self.delta("self_cpu", k)
                entry["delta_self_device_us"] = self.delta("self_device", k)
                entry["marker"] = {"+": "new", "-": "removed", "": None}[self.marker(k)]
            out["runs"][safe_text(run)] = entry
        return out


@dataclass
class OpDiff:
    run_names: list[str]
    rows: list[OpDiffRow]
    by_shapes: bool = False
    has_device: bool = False
    """Some run has device time (then the default sort is by |Δ Self device|)."""
    backend: str = ""

    @property
    def default_sort(self) -> str:
        return "self_device" if self.has_device else "self_cpu"

    def sorted_rows(self, sort: str | None = None, pattern: str | None = None) -> list[OpDiffRow]:
        """Rows filtered by a case-insensitive substring-or-regex `pattern` and sorted (largest first).

        `sort`: `self_device` / `self_cpu` / `calls` (by the largest absolute delta against the baseline; ties
        by the other deltas, then name), or `name`.
        """
        rows = filter_rows(self.rows, pattern)
        sort = sort or self.default_sort
        if sort == "name":
            return sorted(rows, key=lambda r: (r.name.lower(), r.is_device, r.input_shapes))
        if sort not in ("self_device", "self_cpu", "calls"):
            raise TrntuiError(f"unknown diff sort {sort!r}; use self_device, self_cpu, calls or name")
        others = [c for c in ("self_device", "self_cpu", "calls") if c != sort]
        return sorted(
            rows,
            key=lambda r: (
                -r.max_abs_delta(sort),
                -r.max_abs_delta(others[0]),
                -r.max_abs_delta(others[1]),
                r.name,
                r.is_device,
                r.input_shapes,
            ),
        )


def filter_rows(rows: list[OpDiffRow], pattern: str | None) -> list[OpDiffRow]:
    if not pattern:
        return list(rows)
    try:
        rx = re.compile(pattern, re.IGNORECASE)
        return [r for r in rows if rx.search(r.name)]
    except re.error:
        p = pattern.lower()
        return [r for r in rows if p in r.name.lower()]


def diff_ops(tables: Sequence[OpTable], run_names: Sequence[str], *, by_shapes: bool = False) -> OpDiff:
    """Match the op tables' rows across runs by (name, CPU/device row[, input shapes])."""
    index: dict[tuple[str, bool, str], OpDiffRow] = {}
    n = len(tables)
    order: list[tuple[str, bool, str]] = []
    for k, table in enumerate(tables):
        for r in range(len(table)):
            is_dev = table.device_type[r] != "CPU"
            shapes = table.input_shapes[r] if by_shapes else ""
            key = (table.name[r], is_dev, shapes)
            row = index.get(key)
            if row is None:
                row = OpDiffRow(
                    name=table.name[r],
                    is_device=is_dev,
                    input_shapes=shapes,
                    device_type=[None] * n,
                    calls=[None] * n,
                    self_cpu=[None] * n,
                    self_device=[None] * n,
                    table_rows=[-1] * n,
                )
                index[key] = row
                order.append(key)
            # a name can appear twice within one table (e.g. user annotation vs op); merge them
            row.device_type[k] = table.device_type[r]
            row.calls[k] = (row.calls[k] or 0) + int(table.count[r])
            row.self_cpu[k] = (row.self_cpu[k] or 0.0) + float(table.self_cpu_time_total[r])
            row.self_device[k] = (row.self_device[k] or 0.0) + float(table.self_device_time_total[r])
            if row.table_rows[k] < 0:
                row.table_rows[k] = r
    kinds: dict[str, set[bool]] = {}
    for name, is_dev, _ in order:
        kinds.setdefault(name, set()).add(is_dev)
    for key in order:
        index[key].ambiguous = len(kinds[key[0]]) > 1
    has_device = any(t.has_device for t in tables)
    backend = next((t.backend for t in tables if t.has_device), "")
    return OpDiff(list(run_names), [index[k] for k in order], by_shapes, has_device, backend)


# -- regression rules (--fail-if) ------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?P<unit>us|µs|ms|s|%)?(?![A-Za-z_])"
    r"|(?P<ident>[A-Za-z_][A-Za-z_0-9]*(?:\.[A-Za-z_][A-Za-z_0-9]*)?)"
    r"|(?P<op><=|>=|==|!=|<|>|\+|-|\*|/|\(|\)))"
)
_UNITS = {None: 1.0, "us": 1.0, "µs": 1.0, "ms": 1e3, "s": 1e6, "%": 0.01}
_CMP = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9),
    "!=": lambda a, b: not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9),
}


class _Missing(Exception):
    """A metric the rule needs is not available for this run (e.g. device_time of a CPU-only run)."""

    def __init__(self, what: str) -> None:
        self.what = what


@dataclass
class Rule:
    """A parsed `--fail-if` rule: `<sum> <cmp> <sum>`, no eval.

    Grammar: `rule := sum CMP sum`; `sum := term (('+'|'-') term)*`; `term := unary (('*'|'/') unary)*`;
    `unary := '-' unary | atom`; `atom := NUMBER [us|ms|s|%] | METRIC | baseline | baseline.METRIC | '(' sum ')'`.
    Metrics (µs for times): device_time, self_cpu, dispatches, host_ops, span, busy, idle. Bare `baseline`
    is the baseline run's value of the one metric the rule names (`device_time > 1.10*baseline`); write
    `baseline.<metric>` to be explicit. Rules that mention the baseline are checked on every other run;
    rules without it are checked on every run.
    """

    text: str
    left: Any
    op: str
    right: Any
    metrics: frozenset[str] = field(default_factory=frozenset)
    uses_baseline: bool = False

    def evaluate(self, run: dict[str, float | None], base: dict[str, float | None]) -> tuple[bool, float, float]:
        """(failed, left value, right value); raises `_Missing` when a metric is unavailable."""
        a = _eval(self.left, run, base, self)
        b = _eval(self.right, run, base, self)
        return _CMP[self.op](a, b), a, b


def _eval(node: Any, run: dict, base: dict, rule: Rule) -> float:
    kind = node[0]
    if kind == "num":
        return node[1]
    if kind in ("metric", "base"):
        name = node[1]
        if kind == "base" and name is None:
            name = next(iter(rule.metrics))
        src = run if kind == "metric" else base
        v = src.get(name)
        if v is None:
            raise _Missing(("baseline " if kind == "base" else "") + name)
        return float(v)
    if kind == "neg":
        return -_eval(node[1], run, base, rule)
    a = _eval(node[1], run, base, rule)
    b = _eval(node[2], run, base, rule)
    if kind == "+":
        return a + b
    if kind == "-":
        return a - b
    if kind == "*":
        return a * b
    if b == 0:
        return math.inf if a > 0 else (-math.inf if a < 0 else math.nan)
    return a / b


MAX_RULE_TOKENS = 200
"""Terms, operators and parentheses a `--fail-if` rule may have (a gate is a short expression; 1,000 terms
used to overflow the recursive evaluation after every run was loaded)."""
MAX_RULE_DEPTH = 32
"""Parentheses nested at most this deep (300 levels overflowed the recursive parser)."""


def parse_rule(text: str) -> Rule:
    """Parse one `--fail-if` expression; raises `TrntuiError` with a pointer to the problem."""
    tokens: list[tuple[str, Any, int]] = []
    pos = 0
    src = text.strip()
    if not src:
        raise TrntuiError("--fail-if: empty rule")
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if not m or m.end() == pos:
            if src[pos:].strip() == "":
                break
            raise TrntuiError(f"--fail-if {text!r}: cannot read {src[pos:pos + 12]!r} (position {pos + 1})")
        if m.group("num") is not None:
            value = float(m.group("num")) * _UNITS[m.group("unit")]
            if not math.isfinite(value) or len(m.group("num")) > 40:
                raise TrntuiError(f"--fail-if {text[:40]!r}: the number at position {m.start('num') + 1} is too large")
            tokens.append(("num", value, m.start("num")))
        elif m.group("ident") is not None:
            tokens.append(("ident", m.group("ident"), m.start("ident")))
        elif m.group("op") is not None:
            tokens.append(("op", m.group("op"), m.start("op")))
        pos = m.end()
        while pos < len(src) and src[pos].isspace():
            pos += 1
    shown_text = text if len(text) <= 40 else text[:37] + "..."
    if len(tokens) > MAX_RULE_TOKENS:
        raise TrntuiError(f"--fail-if {shown_text!r}: {len(tokens):,} terms; a rule has at most {MAX_RULE_TOKENS}")
    depth = 0
    for kind, value, at in tokens:
        depth += (value == "(") - (value == ")") if kind == "op" else 0
        if depth > MAX_RULE_DEPTH:
            raise TrntuiError(f"--fail-if {shown_text!r}: parentheses nested more than {MAX_RULE_DEPTH} deep "
                              f"(position {at + 1})")
    runs = 0
    for kind, value, _ in tokens:  # a run of unary signs nests as deep as parentheses do
        runs = runs + 1 if kind == "op" and value in ("-", "+") else 0
        if runs > MAX_RULE_DEPTH:
            raise TrntuiError(f"--fail-if {shown_text!r}: more than {MAX_RULE_DEPTH} signs in a row")
    metrics: set[str] = set()
    state = {"i": 0, "bare_base": False, "base_named": False}

    def peek() -> tuple[str, Any, int] | None:
        return tokens[state["i"]] if state["i"] < len(tokens) else None

    def take() -> tuple[str, Any, int]:
        t = peek()
        if t is None:
            raise TrntuiError(f"--fail-if {text!r}: unexpected end of rule")
        state["i"] += 1
        return t

    def bad(t: tuple[str, Any, int] | None, what: str) -> TrntuiError:
        where = f"at position {t[2] + 1}" if t else "at the end"
        return TrntuiError(f"--fail-if {text!r}: {what} {where}")

    def atom() -> Any:
        t = take()
        if t[0] == "num":
            return ("num", t[1])
        if t[0] == "ident":
            word = t[1]
            if word == "baseline":
                state["bare_base"] = True
                return ("base", None)
            if word.startswith("baseline."):
                m = word.split(".", 1)[1]
                if m not in METRICS:
                    raise bad(t, f"unknown metric {m!r} (metrics: {', '.join(METRICS)})")
                state["base_named"] = True
                return ("base", m)
            if word not in METRICS:
                raise bad(t, f"unknown name {word!r} (metrics: {', '.join(METRICS)}, baseline)")
            metrics.add(word)
            return ("metric", word)
        if t[1] == "(":
            node = expr()
            close = take() if peek() else None
            if close is None or close[1] != ")":
                raise bad(close, "expected ')'")
            return node
        raise bad(t, f"unexpected {t[1]!r}")

    def unary() -> Any:
        t = peek()
        if t and t[0] == "op" and t[1] == "-":
            take()
            return ("neg", unary())
        if t and t[0] == "op" and t[1] == "+":
            take()
            return unary()
        return atom()

    def term() -> Any:
        node = unary()
        while (t := peek()) and t[0] == "op" and t[1] in ("*", "/"):
            take()
            node = (t[1], node, unary())
        return node

    def expr() -> Any:
        node = term()
        while (t := peek()) and t[0] == "op" and t[1] in ("+", "-"):
            take()
            node = (t[1], node, term())
        return node

    left = expr()
    t = peek()
    if not t or t[0] != "op" or t[1] not in _CMP:
        raise bad(t, "expected a comparison (<, <=, >, >=, ==, !=)")
    take()
    right = expr()
    if peek() is not None:
        t = peek()
        raise bad(t, f"unexpected {src[t[2]:].split()[0]!r}")
    if state["bare_base"] and len(metrics) != 1:
        raise TrntuiError(
            f"--fail-if {text!r}: bare 'baseline' needs exactly one metric in the rule; "
            "write baseline.<metric> (e.g. device_time > 1.1*baseline.device_time)"
        )
    if not metrics and not state["base_named"]:
        raise TrntuiError(f"--fail-if {text!r}: the rule names no metric ({', '.join(METRICS)})")
    return Rule(text.strip(), left, t[1], right, frozenset(metrics), state["bare_base"] or state["base_named"])


@dataclass
class RuleResult:
    rule: Rule
    run: str
    failed: bool
    left: float | None = None
    right: float | None = None
    missing: str = ""

    undefined: bool = False
    """The rule's sides evaluated to NaN (e.g. 0/0): it decides nothing, and is never taken for a pass."""

    def message(self) -> str:
        from trntui.textsafe import safe_text

        if self.missing:
            return f"{safe_text(self.run)}: rule '{safe_text(self.rule.text)}' not checked ({self.missing} unavailable)"
        if self.undefined:
            return (f"{safe_text(self.run)}: rule '{safe_text(self.rule.text)}' is undefined "
                    f"({_num(self.left)} {self.rule.op} {_num(self.right)}: not a number, e.g. 0/0)")
        verdict = "REGRESSION" if self.failed else "ok"
        return (
            f"{verdict}: run '{safe_text(self.run)}': {safe_text(self.rule.text)} "
            f"({_num(self.left)} {self.rule.op} {_num(self.right)})"
        )


def _num(v: float | None) -> str:
    if v is None:
        return "-"
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.3f}"


def check_rules(rules: Sequence[Rule], metrics: Sequence[RunMetrics]) -> list[RuleResult]:
    """Evaluate every rule on every run (baseline-relative rules skip the baseline run itself)."""
    if not metrics:
        return []
    base = metrics[0].values()
    out: list[RuleResult] = []
    for rule in rules:
        for k, m in enumerate(metrics):
            if rule.uses_baseline and k == 0:
                continue
            try:
                failed, a, b = rule.evaluate(m.values(), base)
            except _Missing as exc:
                out.append(RuleResult(rule, m.name, False, missing=exc.what))
                continue
            if math.isnan(a) or math.isnan(b):
                out.append(RuleResult(rule, m.name, False, a, b, undefined=True))
                continue
            out.append(RuleResult(rule, m.name, failed, a, b))
    return out


def gate_verdict(rules: Sequence[Rule], results: Sequence[RuleResult]) -> tuple[int, str]:
    """(exit code, one line) of a `--fail-if` gate: 1 when a rule found a regression; 2 when a rule was
    undefined (NaN) or nothing at all could be checked (a gate that checked nothing is not a pass); else 0."""
    failed = [r for r in results if r.failed]
    undefined = [r for r in results if r.undefined]
    checked = [r for r in results if not r.missing and not r.undefined]
    head = f"{len(rules)} rule(s), {len(checked)} check(s)"
    if failed:
        return 1, f"{head}: {len(failed)} regression(s)"
    if undefined:
        return 2, f"{head}: {len(undefined)} check(s) undefined (not a number): not a pass"
    if not checked:
        missing = sorted({r.missing for r in results if r.missing})
        why = f" ({', '.join(missing)} unavailable)" if missing else ""
        return 2, f"{head}: the gate checked nothing{why}: not a pass"
    return 0, f"{head}: no regression"
