"""Render-time measurements for the TUI (not a test): first paint, ms per timeline frame at several zooms.

    python bench/tui_frames.py [--trace PATH] [--size 160x48] [--events 1000000]

1. Opens the trace (default: the 68k-event ns-resolution CUDA trace) headless at `--size` and reports when the
   UI first painted and when the loaded profile was painted.
2. Times `render_line` for every visible line of the timeline per frame (ms per frame), uncached (cache
   cleared first: what a pan/zoom key costs) and cached (a repaint with nothing changed), at several zooms.
3. Times each pan/zoom key action plus the full repaint that follows it.
4. Repeats 2–3 on a synthetic profile of `--events` events (the trace tiled in time) to check that a frame
   stays under 10 ms of render work at 1M events.
5. Times sorting and drawing a 20k-row op table.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from trntui.model.profile import Flows, Profile  # noqa: E402
from trntui.tui.app import TrntuiApp  # noqa: E402
from trntui.tui.messages import ProfileLoaded  # noqa: E402

DEFAULT_TRACE = REPO / "tests" / "data" / "kineto" / "cuda_ns_resolution_68k.json.gz"
ZOOMS = (1, 4, 16, 256, 4096)
"""Zoom factors relative to fit-all."""


def frame_ms(timeline, repeats: int = 5, cached: bool = False) -> float:
    """Median ms to render every visible line of the timeline once."""
    samples = []
    for _ in range(repeats):
        if not cached:
            timeline._cache.clear()
        t = time.perf_counter()
        for y in range(timeline.size.height):
            timeline.render_line(y)
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def zoom_table(timeline, label: str) -> None:
    print(f"\n{label}: {timeline.size.width}x{timeline.size.height} timeline, {len(timeline.display_rows)} rows")
    print(f"{'zoom':>8} {'ns/cell':>12} {'uncached ms/frame':>18} {'cached ms/frame':>16}")
    timeline.fit()
    base_t0, base_npc = timeline.t0, timeline.ns_per_cell
    centre = base_t0 + timeline.cells * base_npc / 2
    for zoom in ZOOMS:
        npc = max(base_npc / zoom, 1.0)
        timeline.set_window(timeline.origin + int(centre - timeline.cells * npc / 2), npc)
        print(f"{'x' + str(zoom):>8} {npc:>12.0f} {frame_ms(timeline):>18.2f} {frame_ms(timeline, cached=True):>16.3f}")


def key_table(timeline) -> None:
    print(f"{'key action':>14} {'ms (action + full repaint)':>28}")
    timeline.fit()
    timeline.action_zoom(1 / 16)
    for name, action in (
        ("l pan right", lambda: timeline.action_pan(1)),
        ("h pan left", lambda: timeline.action_pan(-1)),
        ("+ zoom in", lambda: timeline.action_zoom(0.5)),
        ("- zoom out", lambda: timeline.action_zoom(2)),
        ("] next event", lambda: timeline.action_step(1)),
        ("j lane down", lambda: timeline.action_lane(1)),
        ("0 fit", timeline.action_fit),
    ):
        samples = []
        for _ in range(5):
            t = time.perf_counter()
            action()
            for y in range(timeline.size.height):
                timeline.render_line(y)
            samples.append((time.perf_counter() - t) * 1000)
        print(f"{name:>14} {statistics.median(samples):>28.2f}")


def tiled(profile: Profile, events: int) -> Profile:
    """`profile` repeated back to back in time until it has at least `events` events (flows dropped)."""
    copies = max(1, -(-events // len(profile)))
    a, b = int(profile.start.min()), int(profile.end.max())
    shift = np.repeat(np.arange(copies, dtype=np.int64) * (b - a + 1000), len(profile))
    return Profile(
        names=profile.names,
        cats=profile.cats,
        start=np.tile(profile.start, copies) + shift,
        end=np.tile(profile.end, copies) + shift,
        lane=np.tile(profile.lane, copies),
        name=np.tile(profile.name, copies),
        cat=np.tile(profile.cat, copies),
        kind=np.tile(profile.kind, copies),
        ext=np.full(len(shift), -1, np.int64),
        corr=np.full(len(shift), -1, np.int64),
        lanes=profile.lanes,
        flows=Flows(),
        args_raw=[None] * len(shift),
        meta=profile.meta,
    )


class TimedApp(TrntuiApp):
    """Records when the first frame (before the load) and the first frame with the profile were painted."""

    began = 0.0
    first_paint = 0.0
    loaded_paint = 0.0

    def on_mount(self) -> None:
        super().on_mount()
        self.call_after_refresh(lambda: setattr(self, "first_paint", time.perf_counter() - self.began))

    def on_profile_loaded(self, message: ProfileLoaded) -> None:
        self.call_after_refresh(lambda: setattr(self, "loaded_paint", time.perf_counter() - self.began))


async def main(args: argparse.Namespace) -> None:
    width, height = (int(x) for x in args.size.split("x"))
    app = TimedApp(args.trace)
    app.began = time.perf_counter()
    async with app.run_test(size=(width, height)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        profile = app.profile
        assert profile is not None, app.load_error
        print(f"trace: {args.trace} ({len(profile):,} events, loaded in {app.load_seconds:.2f} s by the worker)")
        print(
            f"first paint (UI, before the load finishes): {app.first_paint * 1000:.0f} ms after start; "
            f"profile painted: {app.loaded_paint * 1000:.0f} ms"
        )

        timeline = app.timeline
        timeline.focus()
        await pilot.pause()
        app.screen.maximize(timeline)
        await pilot.pause()
        zoom_table(timeline, "loaded trace")
        key_table(timeline)

        if args.events:
            t = time.perf_counter()
            big = tiled(profile, args.events)
            from trntui.analysis.timeline import build_rows

            build_rows(big)
            print(f"\nsynthetic profile: {len(big):,} events (index built in {time.perf_counter() - t:.1f} s)")
            timeline.set_profile(big)
            await pilot.pause()
            zoom_table(timeline, f"{len(big):,} events")
            key_table(timeline)

        app.screen.minimize()
        await pilot.pause()
        ops = app.ops
        from tests.tui.test_ops import _big_table  # the same synthetic table the tests scroll

        table = _big_table(20_000)
        t = time.perf_counter()
        ops.set_table(table)
        for key in ("count", "name", "self_cpu_time_total"):
            ops.sort_by(key)
        for y in range(ops.size.height):
            ops.render_line(y)
        print(f"\nop table: 20,000 rows, set + 3 sorts + one frame: {(time.perf_counter() - t) * 1000:.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--size", default="160x48", help="terminal size WxH (default 160x48)")
    parser.add_argument("--events", type=int, default=1_000_000, help="synthetic profile size (0: skip)")
    asyncio.run(main(parser.parse_args()))
