"""The CI regression gate of `trntui compare --fail-if`: the rule language (parsed, never eval'd), its
evaluation on every run's metrics, and the gate's exit code."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from trntui.analysis.compare.metrics import METRICS, RunMetrics
from trntui.errors import TrntuiError

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
