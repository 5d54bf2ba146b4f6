"""Counter lanes: Neuron Explorer's CpuUsage, HostMemUsage and SystemProfileHbmUsage drawn as one-row sparklines
under the lanes of the timeline (rendered lines), listed by `trntui info`, kept by the cache."""

from __future__ import annotations

import numpy as np

from trntui.analysis.counters import SPARKS, Counter, cell_values, counters, sparkline
from trntui.cli import main
from trntui.session import load_profile
from trntui.tui.widgets.timeline import Timeline

from tests.tui.conftest import REPO, opened

NAIVE = REPO / "sample_profiles" / "neuron" / "naive"
INST = "i-0a1b2c3d4e5f60718"


def test_sparkline_is_a_step_function_scaled_to_the_series() -> None:
    c = Counter("x", "x", "%", np.array([10, 20, 25, 40]), np.array([1.0, 5.0, 3.0, 8.0]))
    bounds = np.array([0, 10, 15, 22, 30, 35, 45, 50])
    # before the first sample: blank; a cell shows the highest value the series takes in it
    assert cell_values(c, bounds)[1:].tolist() == [1.0, 5.0, 5.0, 3.0, 8.0, 8.0]
    assert sparkline(c, bounds) == " " + SPARKS[0] + SPARKS[4] + SPARKS[4] + SPARKS[2] + SPARKS[-1] * 2


def test_the_sample_export_has_three_counter_series() -> None:
    profile = load_profile(NAIVE)
    got = {(c.name, c.label, c.unit, len(c.ts)) for c in counters(profile)}
    assert got == {("host CPU", f"{INST}/host_cpu_util", "%", 3), ("host memory", f"{INST}/host_mem_used", "bytes", 3),
                   ("HBM used", f"{INST}/ND:0/HBM:0", "bytes", 7)}
    hbm = next(c for c in counters(profile) if c.name == "HBM used")
    assert hbm.values[-1] > hbm.values[0]  # one output tensor allocated per execution


async def test_counter_lanes_drawn_under_the_lanes() -> None:
    async with opened(NAIVE, size=(120, 40)) as (app, pilot):
        timeline = app.query_one(Timeline)
        lines = [timeline.render_line(y).text for y in range(timeline.size.height)]
        head = next(k for k, line in enumerate(lines) if line.startswith("── counters "))
        cpu, mem, hbm = lines[head + 1: head + 4]
        assert cpu.split()[0].endswith("/host_cpu_util") and " 7.5% " in cpu
        assert mem.split()[0].endswith("/host_mem_used") and " 9.0 GiB " in mem
        assert hbm.split()[0].endswith("/ND:0/HBM:0") and "MiB" in hbm
        spark = hbm[timeline.label_width + 1:].rstrip()
        assert set(spark) <= set(SPARKS) and spark[0] != spark[-1]  # HBM use climbs over the step
        assert set(cpu[timeline.label_width + 1:].rstrip()) == {SPARKS[-1]}  # the step's second holds the peak
        # the cursor never lands on a counter lane: lanes below the last real lane are skipped
        for _ in range(20):
            await pilot.press("down")
        assert timeline.display_rows[timeline.cursor_row].counter < 0


def test_info_lists_the_counter_lanes(capsys) -> None:
    assert main(["info", str(NAIVE)]) == 0
    out = capsys.readouterr().out
    assert "counter lanes (timeline sparklines): CpuUsage (6 samples), HostMemUsage (3 samples), " \
           "SystemProfileHbmUsage (7 samples)" in out


def test_counters_survive_the_cache(tmp_path) -> None:
    from trntui.session import LoadOptions, cached, find_runs, load_run

    (run,) = find_runs(NAIVE)
    options = LoadOptions(cache=True, cache_dir=tmp_path, cache_min_bytes=0)
    fresh = load_run(run, options)
    again = cached(run, options)
    assert again is not None and again is not fresh
    assert [(c.label, c.ts.tolist(), c.values.tolist()) for c in counters(again)] == [
        (c.label, c.ts.tolist(), c.values.tolist()) for c in counters(fresh)]
