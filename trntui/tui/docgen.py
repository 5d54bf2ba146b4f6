"""Refresh the generated parts of docs/tui.md and README.md from the running app: the key list from BINDINGS and
the text captures of the screens. Everything else in those files is hand-written prose and is kept as it is.

    python -m trntui.tui.docgen [FILE ...] [--check]

Generated parts sit between markers:

- `<!-- keys:begin ... -->` … `<!-- keys:end -->`: the key tables (`trntui.tui.keys.key_reference(sections(TrntuiApp))`);
- `<!-- capture: PATH [--run NAME] --size WxH [--keys K1,K2,...] -->` … `<!-- capture:end -->`: a fenced text
  capture of `trntui open PATH` run headless (`App.run_test`) at that size after pressing those keys (Textual key
  names; PATH relative to the repository).

tests/tui/test_docs.py checks the key lists and that a refresh keeps the prose.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from trntui.tui.app import TrntuiApp
from trntui.tui.keys import key_reference, sections

REPO = Path(__file__).resolve().parents[2]
KEYS_BEGIN = "<!-- keys:begin (generated from BINDINGS by python -m trntui.tui.docgen) -->"
KEYS_END = "<!-- keys:end -->"
CAPTURE = re.compile(r"^<!-- capture: (?P<spec>.+?) -->\n(?P<body>.*?)^<!-- capture:end -->$", re.M | re.S)
KEYS = re.compile(r"^<!-- keys:begin[^\n]*-->\n.*?^<!-- keys:end -->$", re.M | re.S)
DEFAULT_FILES = [REPO / "docs" / "tui.md", REPO / "README.md"]


def keys_markdown() -> str:
    """The key list as Markdown tables, one per section: the explorer and its panes, then each feature screen."""
    out = [KEYS_BEGIN]
    for section, entries in key_reference(sections(TrntuiApp)):
        out += ["", f"**{section}**", "", "| keys | action |", "| --- | --- |"]
        for keys, description in entries:
            cell = keys.replace("|", "\\|")
            out.append(f"| `{cell}` | {description} |")
    out += ["", KEYS_END]
    return "\n".join(out)


@dataclass(frozen=True)
class CaptureSpec:
    """What a capture marker asks for."""

    path: str
    run: str | None
    size: tuple[int, int]
    keys: tuple[str, ...]

    @classmethod
    def parse(cls, spec: str) -> "CaptureSpec":
        parser = argparse.ArgumentParser(prog="capture", add_help=False, exit_on_error=False)
        parser.add_argument("path")
        parser.add_argument("--run", default=None)
        parser.add_argument("--size", default="80x24")
        parser.add_argument("--keys", default="")
        args = parser.parse_args(shlex.split(spec))
        width, height = (int(x) for x in args.size.split("x"))
        return cls(args.path, args.run, (width, height), tuple(k for k in args.keys.split(",") if k))


def captures(text: str) -> list[CaptureSpec]:
    """The capture markers of a document, in order."""
    return [CaptureSpec.parse(m.group("spec")) for m in CAPTURE.finditer(text)]


async def capture(path: Path, run: str | None, size: tuple[int, int], keys: tuple[str, ...] | list[str]) -> str:
    """The screen as text after loading `path` and pressing `keys` (waiting for the app's workers after each)."""
    from trntui.tui.capture import screen_text

    app = TrntuiApp(path, run)
    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
            await app.workers.wait_for_complete()
            await pilot.pause()
        await pilot.pause(0.2)
        return screen_text(app)


def run_capture(spec: CaptureSpec) -> str:
    return asyncio.run(capture(REPO / spec.path, spec.run, spec.size, spec.keys))


def update(text: str, take: Callable[[CaptureSpec], str] = run_capture) -> str:
    """`text` with its key list and captures regenerated (`take(spec)` makes a capture); the rest untouched."""
    fence = "```"

    def one_capture(m: re.Match) -> str:
        body = take(CaptureSpec.parse(m.group("spec")))
        return f"<!-- capture: {m.group('spec')} -->\n{fence}text\n{body}\n{fence}\n<!-- capture:end -->"

    text = CAPTURE.sub(one_capture, text)
    return KEYS.sub(lambda m: keys_markdown(), text)


def main() -> None:
    parser = argparse.ArgumentParser(description="Refresh the key lists and screen captures of the docs.")
    parser.add_argument("files", nargs="*", type=Path, help="default: docs/tui.md and README.md")
    parser.add_argument("--check", action="store_true", help="only say whether a file is stale (exit 1 if so)")
    args = parser.parse_args()
    stale = []
    for path in args.files or DEFAULT_FILES:
        old = path.read_text(encoding="utf-8")
        new = update(old)
        if new == old:
            print(f"{path}: up to date")
            continue
        stale.append(path)
        if not args.check:
            path.write_text(new, encoding="utf-8")
            print(f"wrote {path}")
        else:
            print(f"{path}: stale")
    if args.check and stale:
        sys.exit(1)


if __name__ == "__main__":
    main()
