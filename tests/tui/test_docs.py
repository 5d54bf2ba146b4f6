"""docs/tui.md and the README carry the key list generated from the BINDINGS and screen captures between markers;
`python -m trntui.tui.docgen` refreshes those and keeps the hand-written prose around them."""

from __future__ import annotations

import difflib
import re

import pytest

from trntui.tui.docgen import CAPTURE, REPO, CaptureSpec, capture, captures, keys_markdown, update

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


FENCED = re.compile(r"\A```text\n(?P<screen>.*)\n```\n\Z", re.S)


def _committed_captures() -> list[tuple[str, str, str]]:
    """(file, marker spec, the screen text committed under it) for every capture marker of README.md and docs/tui.md."""
    out = []
    for path in (README, DOCS):
        for m in CAPTURE.finditer(path.read_text(encoding="utf-8")):
            fenced = FENCED.match(m.group("body"))
            assert fenced, f"{path.name}: the capture {m.group('spec')!r} is not one ```text block"
            out.append((path.name, m.group("spec"), fenced.group("screen")))
    return out


COMMITTED = _committed_captures()


def test_both_documents_carry_captures():
    """The parametrised test below runs over every marker; this says there are markers to run over (the README's two
    and docs/tui.md's six screens), so an emptied document cannot make it pass by running nothing."""
    files = [f for f, _, _ in COMMITTED]
    assert files.count("README.md") >= 2 and files.count("tui.md") >= 6


@pytest.mark.parametrize(("doc", "spec", "committed"), COMMITTED, ids=[f"{f}:{s}" for f, s, _ in COMMITTED])
async def test_every_screen_capture_is_what_the_app_shows_now(doc, spec, committed):
    """Issue 26, Must show 4: each screen capture in the README and docs/tui.md is rendered again from the app (the
    sample or corpus file it names, the size, the keys pressed) and must equal the committed text line for line, so
    a capture that no longer matches what a user sees fails here; `python -m trntui.tui.docgen` refreshes them."""
    parsed = CaptureSpec.parse(spec)
    now = await capture(REPO / parsed.path, parsed.run, parsed.size, parsed.keys)
    if now != committed:
        diff = "\n".join(difflib.unified_diff(committed.splitlines(), now.splitlines(), "committed", "app now",
                                              lineterm="", n=1))
        pytest.fail(f"{doc}: the capture `{spec}` is stale (run `python -m trntui.tui.docgen`):\n{diff}")
