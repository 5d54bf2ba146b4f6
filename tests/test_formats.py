"""The format seam (trntui/loaders/protocol.py, trntui/formats.py): a format registered with one line in
`FORMATS` is found, loaded, cached and shown in the key_averages table like the built-in ones, its analysis hooks
are called, runs are plain data, and load settings travel in `LoadOptions`, never through `os.environ`."""

from __future__ import annotations

import os
import pickle
import re
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import run_cli
from trntui import formats
from trntui.analysis.key_averages import key_averages
from trntui.loaders.discover import Run
from trntui.loaders.protocol import LoadOptions
from trntui.model.profile import Tier
from trntui.session import find_runs, load_profile, load_run


class StandInFormat:
    """A test-only trace format: `*.ops.tsv`, one `name<TAB>start_us<TAB>dur_us<TAB>thread` per line; its
    device-time hook gives every `mm` op a quarter of its duration as device time."""

    name = "standin"

    def find_runs(self, path: Path) -> list[Run]:
        files = [path] if path.is_file() else sorted(path.glob("*.ops.tsv")) if path.is_dir() else []
        return [Run(name=f.name, root=f.parent, format=self.name, source=f) for f in files if f.name.endswith(".ops.tsv")]

    def load(self, run: Run, builder, options: LoadOptions) -> None:
        rows = [line.split("\t") for line in run.source.read_text().splitlines() if line.strip()]
        start = np.array([int(float(r[1]) * 1000) for r in rows], np.int64)
        builder.add_events(
            start=start,
            end=start + np.array([int(float(r[2]) * 1000) for r in rows], np.int64),
            lane=np.array([builder.lane(Tier.DISPATCH, "cpu", f"TID:{r[3]}", 1, int(r[3])) for r in rows]),
            name=np.array([builder.intern_name(r[0]) for r in rows]),
            cat=np.full(len(rows), builder.intern_cat("cpu_op")),
        )
        builder.meta.backend, builder.meta.device_kind = "STANDIN", "standin"
        builder.meta.sources.append(str(run.source))

    def inputs(self, run: Run) -> list[Path] | None:
        return [run.source]

    @staticmethod
    def device_time(profile, links) -> dict[int, int]:
        mm = np.nonzero(profile.name == profile.name_id("mm"))[0]
        return {int(i): int(profile.end[i] - profile.start[i]) // 4 for i in mm}


TRACE = "step\t0\t100\t1\nmm\t10\t30\t1\nrelu\t40\t5\t1\nmm\t50\t30\t1\n"


@pytest.fixture
def standin(tmp_path, monkeypatch) -> Path:
    """The stand-in format registered with one line (first, as a plug-in would be), and one trace of it."""
    monkeypatch.setattr(formats, "FORMATS", [StandInFormat(), *formats.FORMATS])
    path = tmp_path / "model.ops.tsv"
    path.write_text(TRACE)
    return path


def test_a_registered_format_loads_into_the_key_averages_table(standin) -> None:
    (run,) = find_runs(standin)
    assert run.format == "standin" and run.inputs == [standin]
    table = key_averages(load_run(run, cache=False))
    rows = {table.name[k]: k for k in range(len(table))}
    assert set(rows) == {"step", "mm", "relu"}
    mm, step = rows["mm"], rows["step"]
    assert int(table.count[mm]) == 2 and float(table.self_cpu_time_total[mm]) == 60.0
    assert float(table.self_cpu_time_total[step]) == 100.0 - 65.0 and float(table.cpu_time_total[step]) == 100.0
    # the format's device-time hook ran: a quarter of each mm, rolled up into the step as torch does
    assert table.has_device and float(table.self_device_time_total[mm]) == 15.0
    assert float(table.device_time_total[step]) == 15.0


def test_the_cli_table_shows_it_and_without_the_line_it_is_not_read(standin, capsys, monkeypatch) -> None:
    rc, out, err = run_cli(capsys, "summary", "--no-cache", str(standin))
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert "Self STANDIN" in lines[1]
    mm = next(line.split() for line in lines if line.split()[:1] == ["mm"])
    assert mm[-1] == "2" and mm[2] == "60.000us" and mm[6] == "15.000us"
    monkeypatch.setattr(formats, "FORMATS", formats.FORMATS[1:])  # the line removed: Kineto's walk refuses it
    rc, out, err = run_cli(capsys, "summary", "--no-cache", str(standin))
    assert rc == 2 and "not a chrome trace" in err and out == ""


async def test_the_app_shows_it_in_the_ops_table(standin) -> None:
    from tests.tui.conftest import opened

    async with opened(standin, size=(100, 12)) as (app, pilot):
        assert app.profile is not None and app.profile.meta.device_kind == "standin"
        names = [app.ops.render_line(y).text.split()[0] for y in range(1, 4)]
        assert sorted(names) == ["mm", "relu", "step"]
        assert "Self STANDIN" in app.ops.render_line(0).text


def test_a_registered_format_is_cached_with_its_table(standin, tmp_path) -> None:
    from trntui.session import cached

    options = LoadOptions(cache=True, cache_dir=tmp_path / "cache", cache_min_bytes=0)
    (run,) = find_runs(standin)
    fresh = load_run(run, options)
    hit = cached(run, options)
    assert hit is not None and hit is not fresh and np.array_equal(hit.start, fresh.start)
    assert hit.hooks.device_time, "a cached profile gets its format's hooks back"
    t1, t2 = key_averages(fresh), key_averages(hit)
    assert t2.name == t1.name and np.array_equal(t2.self_device_time_total, t1.self_device_time_total)


def test_a_run_made_by_hand_is_keyed_by_its_formats_inputs(corpus_dir, tmp_path) -> None:
    from trntui.session import cached

    options = LoadOptions(cache=True, cache_dir=tmp_path / "cache", cache_min_bytes=0)
    run = Run(name="by hand", root=corpus_dir, framework_traces=[corpus_dir / "cuda_simple_add.json.gz"])
    assert run.inputs is None and cached(run, options) is None
    fresh = load_run(run, options)
    hit = cached(run, options)
    assert hit is not None and np.array_equal(hit.start, fresh.start)


def test_runs_are_plain_data_that_load_the_same_after_pickling(repo_dir) -> None:
    """A worker process (ranks on Dask, issue 15) gets a pickled `Run` and loads it with `LoadOptions`."""
    for path in (repo_dir / "sample_profiles" / "neuron" / "naive", repo_dir / "sample_profiles" / "cpu" / "naive"):
        (run,) = find_runs(path)
        again = pickle.loads(pickle.dumps(run))
        a, b = load_run(run, cache=False), load_run(again, cache=False)
        assert np.array_equal(a.start, b.start) and a.names == b.names
        assert np.array_equal(key_averages(a).self_device_time_total, key_averages(b).self_device_time_total)


def test_progress_and_cancel_travel_in_the_options(corpus_dir) -> None:
    from trntui.progress import Cancelled

    (run,) = find_runs(corpus_dir / "cuda_ns_resolution_68k.json.gz")
    stages: list[str] = []
    load_run(run, LoadOptions(cache=False, progress=lambda stage, done, total: stages.append(stage)))
    assert "decoding" in stages and "merging" in stages and "sorting" in stages
    polls: list[int] = []
    with pytest.raises(Cancelled):
        load_run(run, LoadOptions(cache=False, cancelled=lambda: polls.append(1) or len(polls) > 2))
    assert len(polls) == 3  # stopped at the third report, not at the end of the load


def test_unknown_format_name_is_a_one_line_error(tmp_path) -> None:
    from trntui.errors import LoadError

    with pytest.raises(LoadError, match="no trace format named 'gone'"):
        load_run(Run(name="x", root=tmp_path, format="gone"), cache=False)


def test_memory_budget_reaches_the_load_without_the_environment(corpus_dir, capsys, monkeypatch) -> None:
    """`--memory-budget` travels in `LoadOptions` (the CLI used to write it into os.environ for the loader)."""
    import trntui.session as session

    monkeypatch.delenv("TRNTUI_MEMORY_BUDGET", raising=False)
    seen = []
    real = session.load_run

    def spy(run, options=None, **kw):
        seen.append((options, dict(os.environ)))
        return real(run, options, **kw)

    monkeypatch.setattr(session, "load_run", spy)
    rc, out, err = run_cli(capsys, "summary", "--no-cache", "--memory-budget", "20M", str(corpus_dir / "cuda_ns_resolution_68k.json.gz"))
    assert rc == 2 and "even streamed" in err and "over the memory budget of 20 MiB" in err  # the loader saw it
    ((options, env),) = seen
    assert options.memory_budget == 20 << 20 and not options.cache
    assert "TRNTUI_MEMORY_BUDGET" not in env and "TRNTUI_MEMORY_BUDGET" not in os.environ


def test_only_settings_reads_the_environment(repo_dir) -> None:
    """The documented user variables are read in one module (trntui/settings.py), at the edge; nothing writes
    the environment (capture/ sets up the profiled child process, which is its job; children.py and
    _forkserver.py set up and clean up the environment of the processes trntui starts, which is theirs)."""
    offenders = []
    for path in sorted((repo_dir / "trntui").rglob("*.py")):
        rel = path.relative_to(repo_dir / "trntui").as_posix()
        if rel in ("settings.py", "children.py", "_forkserver.py") or rel.startswith("capture/"):
            continue
        if re.search(r"os\.environ|os\.getenv|putenv", path.read_text(encoding="utf-8")):
            offenders.append(rel)
    assert not offenders, offenders
