"""The chain pane: op → runtime call → kernel with durations and gaps, missing links stated, args on demand."""

from __future__ import annotations

import json

from .conftest import opened


async def test_cuda_op_chain(corpus_dir):
    """`aten::add` → `cudaLaunchKernel` → its kernel, each with duration, start, dispatch/queue latency."""
    async with opened(corpus_dir / "cuda_simple_add.json.gz") as (app, pilot):
        await pilot.press("down", "down", "enter")
        await pilot.pause()
        chain = app.chain
        assert chain.text_lines[:4] == [
            "aten::add                 199µs @ +19.641423s                   framework  PID:563677/framework/TID:563677",
            "└ cudaLaunchKernel         50µs @ +19.641535s  dispatch 112µs   runtime via time containment  "
            "PID:563677/runtime/TID:563677",
            "  └ void at::native...      3µs @ +19.644001s  queue 2.42ms     hardware via correlation  PID:0/device/Stream:7",
            "parent: [param|torch.add|0|0|0|warmup|forward]",
        ]
        assert chain.render_line(1).text.startswith("└ cudaLaunchKernel         50µs @ +19.641535s  dispatch 112µs")
        assert str(chain.border_title) == "Chain · aten::add"


async def test_args_toggle(corpus_dir):
    """`a` shows the op's args (input dims, ids) and hides them again."""
    async with opened(corpus_dir / "cuda_simple_add.json.gz") as (app, pilot):
        await pilot.press("down", "down", "enter", "tab", "tab")
        assert app.focused is app.chain
        assert "args:" not in app.chain.text_lines
        await pilot.press("a")
        await pilot.pause()
        assert "args:" in app.chain.text_lines
        assert "  External id: 22" in app.chain.text_lines
        assert str(app.chain.border_title).endswith("· args")
        await pilot.press("a")
        assert "args:" not in app.chain.text_lines


async def test_missing_device_link_is_reported(corpus_dir):
    """An op that launched nothing says so instead of failing."""
    async with opened(corpus_dir / "cuda_simple_add.json.gz") as (app, pilot):
        row = app.table.find("aten::mul")
        app.ops.move_to_row(row)
        await pilot.press("enter")
        await pilot.pause()
        text = "\n".join(app.chain.text_lines)
        assert "⚠ missing link: no runtime call or device execution is linked to aten::mul" in text


async def test_cpu_only_profile_chain(corpus_dir):
    """On a CPU-only trace the chain explains there is no runtime or hardware tier."""
    async with opened(corpus_dir / "cpu_only.json.gz") as (app, pilot):
        await pilot.press("enter")
        await pilot.pause()
        assert "⚠ missing link: CPU-only profile: no runtime or hardware tier to follow" in app.chain.text_lines


def write_trace(path) -> None:
    """A tiny CUDA trace: an op whose name holds markup and an escape sequence, its launch and kernel, and a
    kernel whose correlation matches nothing."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "[bold red]aten::evil\u001b[31m[/]", "pid": 1, "tid": 1, "ts": 1000,
         "dur": 10, "args": {"External id": 1, "Input Dims": [[4, 512]]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1002, "dur": 3,
         "args": {"External id": 1, "correlation": 5}},
        {"ph": "X", "cat": "kernel", "name": "good_kernel", "pid": 0, "tid": 7, "ts": 1008, "dur": 4,
         "args": {"External id": 1, "correlation": 5, "device": 0, "stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "orphan_kernel", "pid": 0, "tid": 7, "ts": 1020, "dur": 5,
         "args": {"correlation": 99, "device": 0, "stream": 7}},
    ]
    path.write_text(json.dumps({"traceEvents": events, "deviceProperties": [{"id": 0, "name": "GPU"}]}))


async def test_orphan_kernel_and_unsafe_names(tmp_path):
    """A kernel linked to nothing reports the missing link; names with markup/ESC are shown literally."""
    trace = tmp_path / "trace.json"
    write_trace(trace)
    async with opened(trace, size=(140, 30)) as (app, pilot):
        names = [app.ops.render_line(y).text for y in range(1, 5)]
        assert any(line.startswith("[bold red]aten::evil\\x1b[31m[/]") for line in names)
        await pilot.press("tab")
        profile = app.profile
        orphan = next(i for i in range(len(profile)) if profile.name_of(i) == "orphan_kernel")
        app.timeline.go_to_event(orphan)
        await pilot.press("enter")
        await pilot.pause()
        text = "\n".join(app.chain.text_lines)
        assert "orphan_kernel" in text
        assert "⚠ missing link: no framework op is linked to this hardware event" in text
        evil = next(i for i in range(len(profile)) if profile.name_of(i).startswith("[bold"))
        app.chain.show_event(evil)
        await pilot.pause()
        assert app.chain.text_lines[0].startswith("[bold red]aten::evil\\x1b[31m[/]")
        assert app.chain.text_lines[1].startswith("└ cudaLaunchKernel")
        assert app.chain.text_lines[2].startswith("  └ good_kernel")


async def test_follow_failure_is_shown_not_raised(corpus_dir, monkeypatch):
    """If following links raises, the pane shows the reason and the app keeps running."""
    import trntui.analysis.chains as chains

    def broken(profile, i):
        raise ValueError("corrupt link table")

    async with opened(corpus_dir / "cuda_simple_add.json.gz") as (app, pilot):
        monkeypatch.setattr(chains, "follow", broken)
        await pilot.press("enter")
        await pilot.pause()
        assert app.chain.text_lines == ["⚠ could not follow the links of this event: ValueError: corrupt link table"]
        await pilot.press("down", "s")
        assert app.is_running


async def test_enter_on_a_hop_moves_the_timeline(corpus_dir):
    """In the chain pane, j/k pick a hop and Enter puts the timeline cursor on it (op → launch → kernel)."""
    async with opened(corpus_dir / "cuda_simple_add.json.gz") as (app, pilot):
        await pilot.press("down", "down", "enter", "shift+tab")
        assert app.focused is app.chain
        profile, timeline = app.profile, app.timeline
        await pilot.press("j", "j", "enter")
        kernel = timeline.event_under_cursor()
        assert profile.name_of(kernel).startswith("void at::native::vectorized_elementwise_kernel")
        assert profile.lane_of(kernel).label == "PID:0/device/Stream:7"
        assert "vectorized_elementwise_kernel" in timeline.render_line(1).text
        await pilot.press("k", "enter")
        assert profile.name_of(timeline.event_under_cursor()) == "cudaLaunchKernel"
        await pilot.press("k", "enter")
        assert timeline.event_under_cursor() == 33
