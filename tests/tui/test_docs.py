"""docs/tui.md carries the key list generated from the BINDINGS (regenerate: python -m trntui.tui.docgen)."""

from __future__ import annotations

from trntui.tui.docgen import REPO, keys_markdown


def test_docs_key_list_matches_bindings():
    """The key tables in docs/tui.md are exactly what the current BINDINGS generate."""
    text = (REPO / "docs" / "tui.md").read_text(encoding="utf-8")
    assert keys_markdown() in text, "docs/tui.md is stale: run `python -m trntui.tui.docgen`"


def test_readme_key_list_matches_bindings():
    """The README's key tables are the generated ones too, so the README cannot drift from the app."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert keys_markdown() in text, "README.md key list is stale: copy it from `python -m trntui.tui.docgen` output"
