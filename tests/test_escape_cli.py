"""Names are data: op names, thread names, categories, args, file and run names from a trace render literally
in every CLI output (table, CSV, JSON, Markdown, notes, errors): no control character reaches the terminal
(ESC, BEL, 8-bit CSI are shown as visible `\\xNN`), and Rich-style markup stays text."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from malformed import HOSTILE_NAMES, hostile_trace, valid_trace  # noqa: E402

from trntui.cli import build_parser  # noqa: E402
from trntui.textsafe import safe_text  # noqa: E402

from .conftest import run_cli

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Anything a terminal could act on (newline and tab aside)."""
MARKUP = ("[bold red]x[/]", "[@click=quit]quit[/]", "[link=file:///etc/passwd]click[/link]")
HOSTILE_DIR = "run\x1b[2J\x07[bold]x[red]"


def _commands() -> set[str]:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return set(sub.choices)


def _assert_clean(out: str, err: str) -> None:
    for stream, text in (("stdout", out), ("stderr", err)):
        bad = CONTROL.search(text)
        assert bad is None, f"control character {bad.group(0)!r} in {stream}: {text[max(0, bad.start() - 60):bad.end() + 20]!r}"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """A trace full of hostile names, inside a directory whose name is hostile too."""
    root = tmp_path_factory.mktemp("hostile")
    d = root / HOSTILE_DIR
    d.mkdir()
    p = d / "trace\x1b]0;t\x07.json"
    p.write_bytes(hostile_trace())
    return p


def test_safe_text_escapes_every_control_character() -> None:
    for cp in list(range(0x00, 0x20)) + list(range(0x7F, 0xA0)):
        out = safe_text(f"a{chr(cp)}b")
        assert CONTROL.search(out) is None, hex(cp)
        if cp != 0x09:
            assert out == f"a\\x{cp:02x}b"
    for name in HOSTILE_NAMES:
        assert CONTROL.search(safe_text(name)) is None
    assert safe_text("[bold red]x[/]") == "[bold red]x[/]"


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "markdown"])
@pytest.mark.parametrize("extra", [[], ["--group-by-input-shapes"], ["--gaps"], ["--sort", "name", "--limit", "-1"]])
def test_summary_output_is_literal(fmt: str, extra: list[str], hostile: Path, capsys) -> None:
    rc, out, err = run_cli(capsys, *["summary", "--format", fmt, *extra, str(hostile)])
    assert rc == 0, err
    _assert_clean(out, err)
    if fmt == "json":
        doc = json.loads(out)
        names = {r["name"] for r in doc["rows"]}
        assert CONTROL.search(json.dumps(doc, ensure_ascii=False)) is None
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        names = {r["name"] for r in rows}
    else:
        names = set()
        for line in out.splitlines():
            names.update(m for m in MARKUP if m in line)
    for m in MARKUP:
        assert m in names or any(m in n for n in names), (m, sorted(names)[:20])
    if fmt in ("json", "csv"):
        assert safe_text(HOSTILE_NAMES[3]) in names  # OSC 52 clipboard write, shown as text
        assert "clear\\x1b[2Jscreen" in names
        assert "csi8bit\\x9b31mred" in names


def test_multi_run_titles_errors_and_notes_are_escaped(tmp_path: Path, capsys) -> None:
    """Run names (directory names), per-run errors and skip notes naming hostile files."""
    root = tmp_path / "profiles"
    good = root / HOSTILE_DIR
    good.mkdir(parents=True)
    (good / "a.pt.trace.json").write_bytes(hostile_trace())
    (good / "b\x1b[2J.pt.trace.json").write_bytes(b"{garbage")  # a run of its own; with --merge, skipped in the run
    bad = root / "bad\x1b]52;c;QQ==\x07run"
    bad.mkdir()
    (bad / "trace.json").write_bytes(b"")
    for fmt in ("table", "markdown", "csv", "json"):
        rc, out, err = run_cli(capsys, *["summary", "--format", fmt, str(root)])
        assert rc == 0
        _assert_clean(out, err)
        assert err.count("trntui: error: ") == 2 and "bad\\x1b]52;c;QQ==\\x07run" in err
        assert "b\\x1b[2J.pt.trace.json" in err
        if fmt == "table":
            assert "== run\\x1b[2J\\x07[bold]x[red]/a.pt.trace.json ==" in out
    for fmt in ("table", "markdown", "csv", "json"):
        rc, out, err = run_cli(capsys, *["summary", "--merge", "--format", fmt, str(good)])
        assert rc == 0
        _assert_clean(out, err)
        if fmt == "table":
            assert "Note: skipped " in out and "b\\x1b[2J.pt.trace.json" in out


def test_error_messages_are_escaped(tmp_path: Path, capsys) -> None:
    for name, data in (("missing\x1b[2J.json", None), ("empty\x07\x1b]0;x\x07.json", b""),
                       ("garbage\x9b1m.json", b"\x1b[2J\x1b]52;c;QQ==\x07")):
        p = tmp_path / name
        if data is not None:
            p.write_bytes(data)
        for cmd in ("summary",) + (("info",) if "info" in _commands() else ()):
            rc, out, err = run_cli(capsys, *[cmd, str(p)])
            _assert_clean(out, err)
            if cmd == "summary":
                assert rc == 2 and len(err.splitlines()) == 1 and safe_text(str(p)) in err


def test_bad_sort_key_is_escaped(hostile: Path, capsys) -> None:
    rc, out, err = run_cli(capsys, *["summary", "--sort", "\x1b[2Jnope", str(hostile)])
    assert rc == 2
    _assert_clean(out, err)


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "markdown"])
def test_compare_output_is_literal(fmt: str, hostile: Path, tmp_path: Path, capsys) -> None:
    if "compare" not in _commands():
        pytest.skip("no compare command in this build")
    other = tmp_path / "other\x1b[31m"
    other.mkdir()
    (other / "trace.json").write_bytes(valid_trace())
    shutil.copy(hostile, other / "hostile.pt.trace.json")
    rc, out, err = run_cli(capsys, *["compare", "--no-tui", "--format", fmt, str(hostile), str(other), "--limit", "-1"])
    assert rc == 0, err
    _assert_clean(out, err)
    assert "[bold red]x[/]" in out
    rc, out, err = run_cli(capsys, *["compare", "--no-tui", "--fail-if", "span > 0", str(hostile), str(other)])
    _assert_clean(out, err)
    rc, out, err = run_cli(capsys, *["compare", "--no-tui", "--filter", "\x1b[2J(", str(hostile), str(other)])
    _assert_clean(out, err)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_info_output_is_literal(fmt: str, hostile: Path, capsys) -> None:
    if "info" not in _commands():
        pytest.skip("no info command in this build")
    for target in (hostile, hostile.parent, hostile.parent.parent):
        rc, out, err = run_cli(capsys, *["info", "--format", fmt, str(target)])
        _assert_clean(out, err)
        assert rc in (0, 2)


def test_bidi_overrides_are_shown_not_obeyed() -> None:
    """A right-to-left override in a name would make the terminal show a different name: it is made visible."""
    from trntui.textsafe import safe_text

    assert safe_text("aten::\u202eevil\u2066x") == "aten::\\u202eevil\\u2066x"
