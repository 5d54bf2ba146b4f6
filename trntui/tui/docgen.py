"""Generate docs/tui.md from the running app: text captures of the panes and the key list from BINDINGS.

    python -m trntui.tui.docgen [PROFILE] [--run NAME] [--out docs/tui.md]

The captures come from `App.run_test` (headless) on a sample profile; the key list comes from
`trntui.tui.keys.key_reference()`, so neither can drift from the code (tests/tui/test_docs.py checks the keys).
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from trntui.tui.keys import key_reference

REPO = Path(__file__).resolve().parents[2]
KEYS_BEGIN = "<!-- keys:begin (generated from BINDINGS by python -m trntui.tui.docgen) -->"
KEYS_END = "<!-- keys:end -->"


def keys_markdown() -> str:
    """The key list as Markdown tables, one per section: the explorer and its panes, then each feature screen."""
    out = [KEYS_BEGIN]
    for section, entries in key_reference():
        out += ["", f"**{section}**", "", "| keys | action |", "| --- | --- |"]
        for keys, description in entries:
            cell = keys.replace("|", "\\|")
            out.append(f"| `{cell}` | {description} |")
    out += ["", KEYS_END]
    return "\n".join(out)


async def capture(path: Path, run: str | None, size: tuple[int, int], keys: list[str]) -> str:
    """The screen as text after loading `path` and pressing `keys`."""
    from trntui.tui.app import TrntuiApp
    from trntui.tui.capture import screen_text

    app = TrntuiApp(path, run)
    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        await pilot.pause(0.2)
        return screen_text(app)


def default_profile() -> tuple[Path, str | None]:
    neuron = REPO / "sample_profiles" / "neuron"
    if neuron.is_dir():
        return neuron, "naive"
    cpu = REPO / "sample_profiles" / "cpu"
    if cpu.is_dir():
        return cpu, "naive"
    return REPO / "tests" / "data" / "kineto" / "cuda_simple_add.json.gz", None


def document(path: Path, run: str | None) -> str:
    wide = asyncio.run(capture(path, run, (120, 44), ["enter"]))
    small = asyncio.run(capture(path, run, (80, 24), ["enter"]))
    timeline = asyncio.run(capture(path, run, (100, 30), ["enter", "tab", "z", "n"]))
    shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    run_arg = f" --run {run}" if run else ""
    fence = "```"
    return f"""# The terminal explorer: `trntui open`

`trntui open PATH{' [--run NAME]'}` opens a trace (`trace.json`, `*.pt.trace.json.gz`) or a profile directory in a
keyboard-driven terminal UI that works over SSH, in 80×24 or wider. The method is the reference walkthrough's:
find the hotspot in the ops table, see it on the timeline, follow one op down to the hardware.

- **Ops** — torch's `key_averages()` table rebuilt from the trace (Name, # Calls, Self CPU, CPU total, Self
  <DEV>, <DEV> total, % <DEV>; device columns labelled with the backend: CUDA, NEURON, ...). Sort by any column,
  filter by regex, Enter selects an op everywhere.
- **Timeline** — one row per lane (and nesting level), grouped by tier (framework dispatch, framework device,
  runtime, hardware) with Neuron Explorer's `instance/PID/subsystem/identifier` labels. A cell's shade
  (` ░▒▓█`) says how much of its time span is busy; the selected op's instances are highlighted. `▼` in the
  ruler and `▸` in the labels mark the cursor; the line under the ruler names the event under it.
- **Chain** — the selected event's dependency chain: framework op → runtime call(s) → hardware execution(s),
  each with duration, start (from the start of the trace) and the latency from the hop above (`dispatch`: op
  start → runtime call; `queue`: end of the runtime call → execution), the link rule that matched, parent and
  child ops, and the op's args on demand (`a`). A link that cannot be followed is stated (`⚠ missing link`).
  `j`/`k` pick a hop, Enter shows it on the timeline.

A directory with several runs (the variants of `trntui profile`, or ranks) asks which one to open; `r` switches
later, `c` compares them. Loading runs in a background thread: the UI paints at once and stays responsive.
`?` lists every key, `ctrl+p` searches every action (including "Sort by <column>").

## What it looks like

`trntui open {shown}{run_arg}`, Enter on the top row (120×44). The naive RMSNorm of the walkthrough:
`aten::mul` takes half the device time, and its chain runs from the framework op through
`nrta_execute_schedule` to `nc_exec_running` on the hardware.

{fence}text
{wide}
{fence}

The same at 80×24:

{fence}text
{small}
{fence}

The timeline maximized (`Tab` to focus it, `z`), cursor on the next instance of the selected op (`n`):

{fence}text
{timeline}
{fence}

## Keys

{keys_markdown()}

Captures generated with `python -m trntui.tui.docgen`; render times are measured by `python bench/tui_frames.py`.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description="Regenerate docs/tui.md from the running app.")
    parser.add_argument("profile", nargs="?", type=Path)
    parser.add_argument("--run", default=None)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "tui.md")
    args = parser.parse_args()
    path, run = (args.profile, args.run) if args.profile else default_profile()
    text = document(path.resolve(), run)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
