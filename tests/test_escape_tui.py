"""Names are data in the TUI too: every rendered line of every pane (ops table, timeline lanes, chain with
args, header, titles, error screen, run picker) shows hostile names literally — markup stays text (no style,
no `@click` action, no link), control characters are visible `\\xNN`, never raw bytes for the terminal.

Rendered lines are read with the Line API (`widget.render_lines(region)` → `Strip`s; textual-by-example §4.2).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("trntui.tui.app")

sys.path.insert(0, str(Path(__file__).parent))

from malformed import hostile_trace  # noqa: E402

from textual.geometry import Region  # noqa: E402

from trntui.tui.app import TrntuiApp  # noqa: E402

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
SIZE = (200, 60)


def _screen_lines(app) -> list[tuple[str, str, object]]:
    """(widget id, text, strip) for every line of every visible widget on the active screen, plus titles."""
    out = []
    for w in app.screen.walk_children(with_self=True):
        if not w.display or w.size.width <= 0 or w.size.height <= 0:
            continue
        name = w.id or type(w).__name__
        for title in (w.border_title, w.border_subtitle):
            if title:
                out.append((name + ".title", str(title), None))
        try:
            strips = w.render_lines(Region(0, 0, w.size.width, w.size.height))
        except Exception:  # noqa: BLE001 - containers without content of their own
            continue
        for strip in strips:
            out.append((name, strip.text, strip))
    return out


def _assert_literal(lines) -> None:
    for name, text, strip in lines:
        bad = CONTROL.search(text)
        assert bad is None, f"{name}: control character {bad.group(0)!r} in {text!r}"
        if strip is None:
            continue
        for seg in strip:
            style = seg.style
            if style is None:
                continue
            meta = style.meta or {}
            assert "@click" not in meta or "quit" not in str(meta.get("@click")), (name, seg)
            assert not style.link or "passwd" not in style.link, (name, seg)
            assert CONTROL.search(seg.text) is None, (name, seg)


@pytest.fixture(scope="module")
def hostile_path(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("tui") / "run\x1b[2J[bold]x"
    d.mkdir()
    p = d / "trace\x1b]0;t\x07.json"
    p.write_bytes(hostile_trace())
    return p


async def _open(path: Path):
    app = TrntuiApp(path)
    ctx = app.run_test(size=SIZE)
    pilot = await ctx.__aenter__()
    await app.workers.wait_for_complete()
    await pilot.pause()
    return app, pilot, ctx


async def test_hostile_names_render_literally_in_every_pane(hostile_path: Path) -> None:
    app, pilot, ctx = await _open(hostile_path)
    try:
        assert app.profile is not None, app.load_error
        lines = _screen_lines(app)
        _assert_literal(lines)
        ops_text = "\n".join(t for n, t, _ in lines if n == "ops")
        assert "[bold red]x[/]" in ops_text
        assert "[@click=quit]" in ops_text
        assert "\\x1b" in ops_text  # ESC shown visibly
        # walk every op row: its chain (with args) and timeline selection render literally too
        for _ in range(len(app.table) if app.table is not None else 0):
            await pilot.press("down", "enter")
            await pilot.pause()
            _assert_literal(_screen_lines(app))
        app.chain.focus()
        await pilot.press("a")
        await pilot.pause()
        lines = _screen_lines(app)
        _assert_literal(lines)
        chain_text = "\n".join(app.chain.text_lines)
        assert CONTROL.search(chain_text) is None
        # the filter box echoes a hostile pattern literally
        await pilot.press("slash", *"[bold]", "enter")
        await pilot.pause()
        _assert_literal(_screen_lines(app))
        # help and the command palette
        await pilot.press("escape", "question_mark")
        await pilot.pause()
        _assert_literal(_screen_lines(app))
    finally:
        await ctx.__aexit__(None, None, None)


async def test_load_error_screen_is_literal(tmp_path: Path) -> None:
    p = tmp_path / "bad\x1b[2J[@click=quit]x.json"
    p.write_bytes(b"\x1b]52;c;QQ==\x07 not json")
    app, pilot, ctx = await _open(p)
    try:
        assert app.profile is None
        lines = _screen_lines(app)
        _assert_literal(lines)
        text = "\n".join(t for _, t, _ in lines)
        assert "\\x1b[2J[@click=quit]x.json" in text.replace("\n", "")
    finally:
        await ctx.__aexit__(None, None, None)


async def test_run_picker_lists_hostile_run_names(tmp_path: Path) -> None:
    for name in ("a\x1b[2J[bold]run", "b\x07[@click=quit]run"):
        d = tmp_path / name
        d.mkdir()
        (d / "trace.json").write_bytes(hostile_trace())
    app, pilot, ctx = await _open(tmp_path)
    try:
        _assert_literal(_screen_lines(app))
        await pilot.press("r")
        await pilot.pause()
        lines = _screen_lines(app)
        _assert_literal(lines)
    finally:
        await ctx.__aexit__(None, None, None)
