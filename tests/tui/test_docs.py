"""docs/tui.md and the README carry the key list generated from the BINDINGS and screen captures between markers;
`python -m trntui.tui.docgen` refreshes those and keeps the hand-written prose around them."""

from __future__ import annotations

import re

from trntui.tui.docgen import CAPTURE, REPO, captures, keys_markdown, update

DOCS = REPO / "docs" / "tui.md"
README = REPO / "README.md"


def test_docs_key_list_matches_bindings():
    """The key tables in docs/tui.md are exactly what the current BINDINGS generate."""
    text = DOCS.read_text(encoding="utf-8")
    assert keys_markdown() in text, "docs/tui.md is stale: run `python -m trntui.tui.docgen`"


def test_readme_key_list_matches_bindings():
    """The README's key tables are the generated ones too, so the README cannot drift from the app."""
    text = README.read_text(encoding="utf-8")
    assert keys_markdown() in text, "README.md key list is stale: run `python -m trntui.tui.docgen`"


def test_refresh_keeps_the_prose():
    """A refresh rewrites only what is between the markers: every other line of both files stays as written
    (the --steps / --memory-budget paragraphs once vanished when the generator had its own template)."""
    for path in (DOCS, README):
        text = path.read_text(encoding="utf-8")
        refreshed = update(text, lambda spec: f"CAPTURE {spec.path} {spec.size[0]}x{spec.size[1]}")
        outside = lambda t: CAPTURE.sub("", re.sub(r"<!-- keys:begin.*?<!-- keys:end -->", "", t, flags=re.S))
        assert outside(refreshed) == outside(text)
        assert refreshed.count("CAPTURE ") == len(captures(text))
    prose = DOCS.read_text(encoding="utf-8")
    assert "--memory-budget SIZE" in prose and "--steps 3-5" in prose


def test_captures_show_the_new_screens_at_80x24_and_wide():
    """docs/tui.md and the README each carry an 80×24 capture and a wide one (four panes) of existing inputs,
    and what is in them is a capture of the current layout (four quadrants when wide)."""
    for path in (DOCS, README):
        text = path.read_text(encoding="utf-8")
        specs = captures(text)
        assert (80, 24) in [s.size for s in specs]
        assert any(s.size[0] >= 150 for s in specs)
        for spec in specs:
            assert (REPO / spec.path).exists(), spec.path
        wide = next(m for m in CAPTURE.finditer(text) if "--size 80x" not in m.group("spec")
                    and int(re.search(r"--size (\d+)x", m.group("spec")).group(1)) >= 150)
        assert "Call tree · " in wide.group("body") and "│" in wide.group("body")
