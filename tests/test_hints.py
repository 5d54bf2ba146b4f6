"""Every hint the app and the CLI can show names something that works (issue 26, Must show 3).

The hints are collected from the source, not listed by hand: every string literal in trntui/ (f-string parts
included, docstrings left out) that names a `--option`, and every literal in trntui/tui/ that names a key the way
the screens write them (`r: pick another run`, `n/N: next/prev`, `(d: all)`, `Esc: back`).

- an option must parse with the CLI's own argparse for the command the hint is about: the command it names
  (`trntui X … --opt`), else the command of the module it is in (trntui/commands/X.py: X; the app: `open`);
  an option of another tool (a `neuron-explorer …` command line) is left to that tool;
- a key must be bound (BINDINGS) on a class of the module that shows the hint or on a widget that module imports
  (for a drawing helper without classes: on the modules that import it).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

from textual.binding import Binding

from trntui.cli import build_parser

PKG = Path(__file__).resolve().parents[1] / "trntui"
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
KEY = re.compile(r"(?:^|[\s(·\[])([A-Za-z!?]|[A-Za-z]/[A-Za-z]|Enter|Esc|Tab|space): (?=\S)")
KEY_NAMES = {"Enter": "enter", "Esc": "escape", "Tab": "tab", "!": "exclamation_mark", "?": "question_mark",
             "space": "space"}
OWN_PARSERS = {"docgen.py"}  # developer scripts with their own argparse (python -m trntui.tui.docgen --check)
OTHER_TOOLS = {"loaders/neuron/convert.py"}  # builds neuron-explorer's argv from its own option literals


def _subparsers() -> dict:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]  # noqa: SLF001
    return sub.choices


def _literals(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string literal of a module but its docstrings (f-strings: their literal parts)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def _module(path: Path):
    return importlib.import_module(".".join(path.relative_to(PKG.parent).with_suffix("").parts))


def test_every_option_a_hint_names_parses_for_its_command() -> None:
    subs = _subparsers()
    top = {o for a in build_parser()._actions for o in a.option_strings}  # noqa: SLF001 - trntui --version
    names = "|".join(sorted(subs, key=len, reverse=True))
    command = re.compile(rf"\btrntui ({names})\b")
    checked, bad = 0, []
    for path in sorted(PKG.rglob("*.py")):
        if path.name in OWN_PARSERS or path.relative_to(PKG).as_posix() in OTHER_TOOLS:
            continue
        default = "open" if "tui" in path.relative_to(PKG).parts else (
            path.stem if path.parent.name == "commands" and path.stem in subs else None)
        for line, text in _literals(path):
            if "neuron-explorer" in text or not OPTION.search(text):
                continue
            cmds = set(command.findall(text)) | ({default} if default else set())
            for opt in OPTION.findall(text):
                if opt in top or opt == "--neuron-":
                    continue  # the top-level parser's own flags; the `--neuron-*` family named as a pattern
                if not cmds:  # a helper module: the option must belong to some command
                    cmds_here = set(subs)
                else:
                    cmds_here = cmds
                ok = False
                for c in cmds_here:
                    parser = subs[c]
                    action = next((a for a in parser._actions if opt in a.option_strings), None)  # noqa: SLF001
                    ok = ok or action is not None
                checked += 1
                if not ok:
                    bad.append(f"{path.relative_to(PKG)}:{line}: {opt} is no option of {sorted(cmds_here)}: {text[:80]!r}")
    assert checked > 50  # the collection works (hints of summary, open, profile, device, ranks, sql, ...)
    assert not bad, "\n".join(bad)


def _bound_keys(module) -> set[str]:
    keys: set[str] = set()
    for _, cls in inspect.getmembers(module, inspect.isclass):
        for c in cls.__mro__:
            for b in getattr(c, "BINDINGS", None) or []:
                k = b.key if isinstance(b, Binding) else b[0]
                keys |= {x.strip() for x in k.split(",")}
    return keys


def _imported(path: Path) -> set[str]:
    """Modules of trntui.tui a module imports anywhere (screens import their widgets inside functions too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
            and n.module.startswith("trntui.tui")}


def test_every_key_a_hint_names_is_bound_where_it_is_shown() -> None:
    files = sorted((PKG / "tui").rglob("*.py"))
    modname = {p: ".".join(p.relative_to(PKG.parent).with_suffix("").parts) for p in files}
    own = {p: _bound_keys(_module(p)) for p in files}
    reach = {}
    for p in files:
        keys = set(own[p])
        for m in _imported(p):
            keys |= _bound_keys(importlib.import_module(m))
        reach[p] = keys
    checked, bad = 0, []
    for p in files:
        keys = reach[p]
        if not own[p]:  # a drawing helper: shown by the modules that import it
            for q in files:
                if modname[p] in _imported(q):
                    keys = keys | reach[q]
        for line, text in _literals(p):
            for hint in KEY.findall(text):
                for one in hint.split("/") if len(hint) == 3 else [hint]:
                    checked += 1
                    if KEY_NAMES.get(one, one) not in keys:
                        bad.append(f"{p.relative_to(PKG)}:{line}: {one!r} is not bound there: {text[:80]!r}")
    assert checked > 20
    assert not bad, "\n".join(bad)
