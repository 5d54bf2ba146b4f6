"""README and docs say only what the commands print (issue 26, "Must show" 4): every figure a commented command
line claims (`trntui overview sample_profiles/neuron/naive  # NeuronCore 95.22% ...`) is in that command's output,
and every output pasted under "`trntui CMD PATH` (...):" is what the command prints now. The app's screens are
checked the same way by the generated captures (tests/tui/test_docs.py)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from trntui.cli import main

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
COMMANDS = ("overview", "summary", "info", "compare")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
COMMENTED = re.compile(r"^trntui (?P<cmd>\w+) (?P<args>[^#]+?)\s+# (?P<claim>.+)$")
PASTED = re.compile(r"`trntui (?P<cmd>\w+) (?P<args>[^`]+)`[^\n`]*:\n\n```text\n(?P<body>.*?)^```", re.M | re.S)
FIGURE = re.compile(r"\d[\d,]*(?:\.\d+)?%|\b\d+ [a-z]+s\b")
"""What a comment claims: a percentage (`95.22%`), or a count of things (`6 executions`)."""


def _runnable(cmd: str, args: str) -> list[str] | None:
    """The argv of a documented command that runs on the repository's own files, else None."""
    if cmd not in COMMANDS:
        return None
    argv = shlex.split(args)
    paths = [a for a in argv if not a.startswith("-")]
    if not paths or not all((REPO / p).exists() for p in paths):
        return None
    return [cmd, *[str(REPO / a) if not a.startswith("-") else a for a in argv]]


def _claims() -> list[tuple[str, list[str], list[str]]]:
    out = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            if m.group(1) not in ("bash", "sh", "console", ""):
                continue
            for line in m.group(2).splitlines():
                c = COMMENTED.match(line.strip())
                if c is None:
                    continue
                argv = _runnable(c.group("cmd"), c.group("args"))
                figures = FIGURE.findall(c.group("claim"))
                if argv is not None and figures:
                    out.append((f"{doc.name}: {line.strip()}", argv, figures))
    return out


def _pasted() -> list[tuple[str, list[str], list[str]]]:
    out = []
    for doc in DOCS:
        for m in PASTED.finditer(doc.read_text(encoding="utf-8")):
            argv = _runnable(m.group("cmd"), m.group("args"))
            if argv is not None:
                lines = [x.rstrip() for x in m.group("body").splitlines() if x.strip()]
                out.append((f"{doc.name}: trntui {m.group('cmd')} {m.group('args')}", argv, lines))
    return out


def _output(argv: list[str], capsys: pytest.CaptureFixture) -> str:
    capsys.readouterr()
    main(argv)
    return capsys.readouterr().out


def test_there_are_claims_to_check():
    """The checks below find the README's overview line and docs/overview.md's pasted output."""
    assert any("overview" in where and "README" in where for where, _, _ in _claims())
    assert any("overview.md" in where for where, _, _ in _pasted())


@pytest.mark.parametrize("where,argv,figures", _claims(), ids=lambda v: v if isinstance(v, str) else "")
def test_commented_figures_are_printed(where, argv, figures, capsys):
    """Each figure a documented command's comment names is in what that command prints."""
    out = _output(argv, capsys)
    missing = [f for f in figures if f not in out]
    assert not missing, f"{where}: {missing} not in the output"


@pytest.mark.parametrize("where,argv,lines", _pasted(), ids=lambda v: v if isinstance(v, str) else "")
def test_pasted_outputs_are_current(where, argv, lines, capsys):
    """Each output pasted in the docs under its command is what the command prints now, line for line."""
    printed = [x.rstrip() for x in _output(argv, capsys).splitlines() if x.strip()]
    missing = [x for x in lines if x not in printed]
    assert not missing, f"{where}: not printed now: {missing[:5]}"
