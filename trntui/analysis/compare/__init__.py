"""Compare runs: a side-by-side summary (one row per run) and an op-level diff, plus CI regression rules.

The package by job (every name is importable from `trntui.analysis.compare`, as before the split):

- `metrics`: the per-run metrics of the summary (their definitions are its docstring), `ComparedRun`, `make_run`;
- `ops`: the op-level diff (`OpDiff`, `OpDiffRow`, `diff_ops`, `filter_rows`);
- `rules`: the `--fail-if` rule language and the gate (`parse_rule`, `check_rules`, `gate_verdict`).
"""

from __future__ import annotations

from trntui.analysis.compare.metrics import (
    COMPILED_REGION_PREFIX,
    METRIC_TITLES,
    METRICS,
    NOT_OPERATOR_CALLS,
    OP_CATS,
    TIME_METRICS,
    ComparedRun,
    RunMetrics,
    headline_metric,
    host_op_calls,
    make_run,
    ratio,
    run_metrics,
    step_windows,
)
from trntui.analysis.compare.ops import OpDiff, OpDiffRow, diff_ops, filter_rows
from trntui.analysis.compare.rules import (
    MAX_RULE_DEPTH,
    MAX_RULE_TOKENS,
    Rule,
    RuleResult,
    check_rules,
    gate_verdict,
    parse_rule,
)

__all__ = [
    "COMPILED_REGION_PREFIX", "METRIC_TITLES", "METRICS", "NOT_OPERATOR_CALLS", "OP_CATS", "TIME_METRICS",
    "ComparedRun", "RunMetrics", "headline_metric", "host_op_calls", "make_run", "ratio", "run_metrics",
    "step_windows", "OpDiff", "OpDiffRow", "diff_ops", "filter_rows", "MAX_RULE_DEPTH", "MAX_RULE_TOKENS", "Rule",
    "RuleResult", "check_rules", "gate_verdict", "parse_rule",
]
