"""The app loads a run the cache takes through a loader process (two-process decode, like the CLI) and maps the
entry it wrote; the timeline's rows are kept beside the entry, so a re-open draws without sorting again."""

from __future__ import annotations

import gzip
import shutil

import numpy as np
import pytest

from trntui.analysis.key_averages import key_averages
from trntui.analysis.timeline import build_rows
from trntui.errors import TrntuiError
from trntui.loaders.protocol import LoadOptions
from trntui.progress import Cancelled
from trntui.report.format import simplified_name
from trntui.request import resolve
from trntui.session import find_runs, load_run as session_load
from trntui.tui import loader

from .conftest import opened


@pytest.fixture
def cache_options(tmp_path, monkeypatch):
    """Cache on, in a private directory, for every run (no minimum size)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("TRNTUI_CACHE_DIR", str(cache))
    monkeypatch.setenv("TRNTUI_CACHE_MIN_BYTES", "0")
    return LoadOptions(cache=True, cache_dir=cache, cache_min_bytes=0)


def test_loader_process_writes_the_entry_the_app_maps(corpus_dir, tmp_path, cache_options):
    """A .json.gz run goes through the loader process: the mapped profile and table equal an in-process load;
    the second load comes from the cache with the timeline rows restored (no new process)."""
    trace = tmp_path / "t.json.gz"
    shutil.copy(corpus_dir / "cuda_ns_resolution_68k.json.gz", trace)
    request = resolve(trace, options=cache_options)
    run = request.run
    stages: list[str] = []
    profile = loader.load_run(request, lambda stage, done, total: stages.append(stage))
    assert any(s.startswith("decoding") or s.startswith("reading") for s in stages)  # reported by the loader process
    assert profile.cache.get("cache_entry") is not None
    direct = session_load(run, LoadOptions(cache=False))
    assert np.array_equal(profile.start, direct.start) and np.array_equal(profile.name, direct.name)
    assert key_averages(profile).name == key_averages(direct).name
    assert np.allclose(key_averages(profile).self_device_time_total, key_averages(direct).self_device_time_total)
    loader.save_timeline(profile, 4)
    again = loader.load_run(request, lambda *a: pytest.fail("the second load started a process"))
    assert again.cache.get(loader.RESTORED)
    rows, fresh = build_rows(again, 4), build_rows(direct, 4)
    assert [(r.lane, r.depth) for r in rows] == [(r.lane, r.depth) for r in fresh]
    assert all(np.array_equal(a.events, b.events) and np.array_equal(a.busy.cum, b.busy.cum) for a, b in zip(rows, fresh))


def test_loader_process_error_and_cancel(tmp_path, cache_options):
    """A damaged trace is the loader's one-line error; a cancel from the progress callback stops the process."""
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(gzip.compress(b"\x00\x01 this is not a trace" * 1000))
    with pytest.raises(TrntuiError) as caught:
        loader.load_run(resolve(bad, options=cache_options))
    assert "bad.json.gz" in str(caught.value) and "\n" not in str(caught.value)

    def cancel(stage, done, total):
        raise Cancelled()

    big = tmp_path / "big.json"
    events = ",".join(f'{{"ph": "X", "ts": {k}, "dur": 1, "name": "op{k % 7}", "pid": 1, "tid": 1, "cat": "cpu_op"}}'
                      for k in range(20000))
    big.write_text(f'{{"traceEvents": [{events}]}}')
    with pytest.raises(Cancelled):
        loader.load_run(resolve(big, options=cache_options), cancel)


@pytest.mark.parametrize("size", [(80, 24), (200, 55)])
async def test_app_opens_a_cached_run(corpus_dir, tmp_path, cache_options, size):
    """The app opens a run through the loader process and, the second time, from the cache: the same table
    and the same timeline on the terminal."""
    trace = tmp_path / "t.json.gz"
    shutil.copy(corpus_dir / "cuda_sampled_rank0.json.gz", trace)
    async with opened(trace, size=size) as (app, pilot):
        first = [app.ops.row_text(k) for k in range(5)]
        lanes = [app.timeline.render_line(y).text for y in range(app.timeline.size.height)]
        assert app.profile.cache.get("cache_entry") is not None
    async with opened(trace, size=size) as (app, pilot):
        assert [app.ops.row_text(k) for k in range(5)] == first
        assert [app.timeline.render_line(y).text for y in range(app.timeline.size.height)] == lanes
        assert app.profile.cache.get(loader.RESTORED)


async def test_open_starts_the_loader_before_the_app(corpus_dir, tmp_path, cache_options, monkeypatch):
    """`trntui open` starts the loader process for the run before the app (its decode overlaps the app's
    start-up); the app follows that process instead of starting another, and shows the same table as a load in
    this process. With an entry in the cache nothing is started ahead."""
    trace = tmp_path / "t.json.gz"
    shutil.copy(corpus_dir / "cuda_sampled_rank0.json.gz", trace)
    request = resolve(trace, options=cache_options)
    pre = loader.prestart(request)
    assert pre is not None and pre.run_name == find_runs(trace)[0].name and pre.request == request
    monkeypatch.setattr(loader, "_start_loader", lambda *a, **k: pytest.fail("a second loader process"))
    from trntui.tui.app import TrntuiApp

    app = TrntuiApp(trace, prestarted=pre, load_options=cache_options, request=request)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.profile is not None and app.profile.cache.get("cache_entry") is not None
        assert pre.proc is None  # taken by the load
        direct = key_averages(session_load(find_runs(trace)[0], LoadOptions(cache=False)))
        assert list(app.table.name) == list(direct.name)
        assert app.ops.row_text(0).startswith(simplified_name(direct.name[int(app.ops.view[0])])[:16])
    assert loader.prestart(resolve(trace, options=cache_options)) is None  # the entry is there now


_WAITING_LOADER = """
import os, sys, time
sys.path.insert(0, {root!r})
import trntui.analysis.key_averages as K
real = K.key_averages
def waiting(*a, **k):  # the table waits until the app has taken the profile (or 60 s)
    t = time.monotonic()
    while not os.path.exists({flag!r}) and time.monotonic() - t < 60:
        time.sleep(0.01)
    return real(*a, **k)
K.key_averages = waiting
from trntui.tui.loader import child
sys.exit(child())
"""


def test_app_takes_the_profile_while_the_loader_computes_the_table(corpus_dir, tmp_path, cache_options, monkeypatch):
    """Pipelined load: the loader process says when the profile's arrays are written and the app reads them and
    builds its rows (`prepare`) while the loader computes the key_averages table; the app then takes the table
    from the finished entry. Here the loader's table waits until `prepare` has run, so the overlap is certain:
    the profile returned is the one prepared, equal to an in-process load, table and args included."""
    import sys
    from pathlib import Path

    from trntui import cache as profile_cache

    trace = tmp_path / "t.json.gz"
    shutil.copy(corpus_dir / "cuda_ns_resolution_68k.json.gz", trace)
    request = resolve(trace, options=cache_options)
    run = request.run
    flag = tmp_path / "prepared"
    root = str(Path(loader.__file__).resolve().parents[2])

    def start_waiting(request):
        return loader._spawn([sys.executable, "-c", _WAITING_LOADER.format(root=root, flag=str(flag))], request)

    monkeypatch.setattr(loader, "_start_loader", start_waiting)
    final = profile_cache.entry_dir(run.inputs, cache_options.cache_dir)
    prepared = []

    def prepare(profile):
        assert not final.exists(), "the entry is in place: the profile was not taken while the table was computed"
        prepared.append(profile)
        flag.touch()

    profile = loader.load_run(request, None, 4, prepare=prepare)
    assert len(prepared) == 1 and prepared[0] is profile
    assert profile.cache.get("cache_entry") == final
    direct = session_load(run, LoadOptions(cache=False))
    assert np.array_equal(profile.start, direct.start) and np.array_equal(profile.lane, direct.lane)
    ours, theirs = key_averages(profile), key_averages(direct)
    assert ours.name == theirs.name and np.allclose(ours.self_cpu_time_total, theirs.self_cpu_time_total)
    assert np.allclose(ours.self_device_time_total, theirs.self_device_time_total)
    with_args = [i for i in range(len(direct)) if direct.args(i)][:50]
    assert with_args and all(profile.args(i) == direct.args(i) for i in with_args)


def test_profile_not_taken_in_time_is_read_from_the_entry(corpus_dir, tmp_path, cache_options, monkeypatch):
    """When the loader's temporary directory cannot be read (it was renamed into place first, or the loader
    gave up), the app reads the finished entry instead: same profile, nothing prepared early."""
    from trntui import cache as profile_cache

    trace = tmp_path / "t.json.gz"
    shutil.copy(corpus_dir / "cuda_ns_resolution_68k.json.gz", trace)
    request = resolve(trace, options=cache_options)
    run = request.run
    monkeypatch.setattr(profile_cache, "read_written", lambda d: None)
    profile = loader.load_run(request, None, 4, prepare=lambda p: pytest.fail("prepared"))
    direct = session_load(run, LoadOptions(cache=False))
    assert profile.cache.get("cache_entry") is not None
    assert np.array_equal(profile.end, direct.end) and key_averages(profile).name == key_averages(direct).name


def test_written_profile_and_its_records(corpus_dir, tmp_path):
    """cache.store(on_profile=...) hands over the temporary directory once the profile is written: it reads
    back as the stored profile (records not yet there); the finished entry's records are served for that
    profile only when the entry's arrays are the ones read (their checksums)."""
    from trntui import cache as profile_cache

    trace = tmp_path / "t.json.gz"
    shutil.copy(corpus_dir / "cuda_ns_resolution_68k.json.gz", trace)
    (run,) = find_runs(trace)
    direct = session_load(run, LoadOptions(cache=False))
    got = []
    record = {"t": {"arrays": {"x": np.arange(5)}, "fields": {"k": 1}}}
    entry = profile_cache.store(run.inputs, tmp_path / "c", direct, records=record,
                                on_profile=lambda d: got.append(profile_cache.read_written(d)))
    assert entry is not None and len(got) == 1 and got[0] is not None
    early, sums = got[0]
    assert np.array_equal(early.start, direct.start) and np.array_equal(early.name, direct.name)
    assert early.cache.get("cache_entry") is None
    wrong = dict(sums, **{"start.npy": sums["start.npy"] ^ 1})
    assert profile_cache.load_records(run.inputs, tmp_path / "c", early, wrong) is None
    assert early.cache.get("cache_entry") is None
    records = profile_cache.load_records(run.inputs, tmp_path / "c", early, sums)
    assert records is not None and list(records["t"]["arrays"]["x"]) == [0, 1, 2, 3, 4]
    assert early.cache.get("cache_entry") == entry
    assert profile_cache.read_written(tmp_path / "c" / ".tmp-gone") is None


_FORKED_OPEN = """
import sys
from pathlib import Path
from trntui.settings import numpy_with_one_blas_thread
numpy_with_one_blas_thread()  # as the CLI does before any command but `profile`
from trntui.loaders.protocol import LoadOptions
from trntui.tui import loader
from trntui.request import resolve
options = LoadOptions(cache=True, cache_dir=Path(sys.argv[2]), cache_min_bytes=0)
request = resolve(Path(sys.argv[1]), options=options)
pre = loader.prestart(request)
print(type(pre.proc).__name__)
profile = loader.load_run(request, None, 4, started=pre.take(request))
print(len(profile), profile.cache.get("cache_entry") is not None)
from trntui.analysis.key_averages import key_averages
print(sum(key_averages(profile).count))
"""


def test_trntui_open_forks_its_loader_before_textual(corpus_dir, tmp_path):
    """`trntui open` (one thread, Textual not imported yet) forks the loader instead of starting a fresh
    interpreter (trntui and numpy are already imported): the forked loader writes the entry the app takes."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    trace = tmp_path / "t.json.gz"
    shutil.copy(corpus_dir / "cuda_ns_resolution_68k.json.gz", trace)
    env = dict(os.environ, PYTHONPATH=str(Path(loader.__file__).resolve().parents[2]))
    out = subprocess.run([sys.executable, "-c", _FORKED_OPEN, str(trace), str(tmp_path / "cache")], env=env,
                         capture_output=True, text=True, timeout=120, check=True).stdout.split()
    direct = session_load(find_runs(trace)[0], LoadOptions(cache=False))
    assert out == ["Forked", str(len(direct)), "True", str(sum(key_averages(direct).count))]


def _waiting_loader(monkeypatch, tmp_path):
    """The app's loader process is one whose key_averages table waits for the returned flag file (or 60 s)."""
    import sys
    from pathlib import Path

    flag = tmp_path / "table-may-go"
    root = str(Path(loader.__file__).resolve().parents[2])
    started = []

    def start_waiting(request):
        proc = loader._spawn([sys.executable, "-c", _WAITING_LOADER.format(root=root, flag=str(flag))], request)
        started.append(proc)
        return proc

    monkeypatch.setattr(loader, "_start_loader", start_waiting)
    return flag, started


@pytest.mark.parametrize("size", [(80, 24), (200, 55)])
async def test_panes_show_the_profile_before_its_table(corpus_dir, tmp_path, cache_options, monkeypatch, size):
    """While the loader process computes the key_averages table, the timeline, chain and call-tree panes already
    show the profile (lanes drawn, keys work) and the ops pane says loading; when the table comes only the ops
    pane fills in: the timeline keeps the profile it shows (not drawn again from another one)."""
    from trntui.tui.app import TrntuiApp
    from trntui.tui.capture import screen_text

    from .conftest import settle

    trace = tmp_path / "t.json.gz"
    shutil.copy(corpus_dir / "cuda_sampled_rank0.json.gz", trace)
    flag, started = _waiting_loader(monkeypatch, tmp_path)
    app = TrntuiApp(trace)
    async with app.run_test(size=size) as pilot:
        assert await settle(pilot, lambda: app.timeline.profile is not None and not app.timeline.loading, 60)
        assert started and started[0].poll() is None  # the loader is still at its table
        assert app.ops.loading and app.ops.table is None and app.table is None and app.profile is None
        assert not app.chain.loading and not app.calltree.loading
        screen = screen_text(app)
        assert "key_averages" in screen.splitlines()[0]  # the header says what is left
        def lanes_now() -> list[str]:
            return [app.timeline.render_line(y).text for y in range(app.timeline.size.height)]

        def drawn(lines: list[str]) -> int:
            return sum(1 for line in lines if "█" in line or "▌" in line or "▐" in line)

        # (the pane draws once its first resize is handled: on a loaded machine that can come a frame after the
        # profile; the loader still holds the table back meanwhile, so this is still "before its table")
        await settle(pilot, lambda: drawn(lanes_now()) >= 2, 20)
        lanes = lanes_now()
        early = app.timeline.profile
        assert drawn(lanes) >= 2, lanes
        assert started[0].poll() is None and app.table is None  # (and the table has not come)
        await pilot.press("tab")  # the timeline takes keys meanwhile
        assert app.focused is app.timeline
        window = app.timeline.title
        await pilot.press("plus")
        assert app.timeline.title != window  # zoomed in
        flag.touch()
        await app.workers.wait_for_complete()
        assert await settle(pilot, lambda: not app.ops.loading and app.table is not None)
        assert app.profile is early and app.timeline.profile is early
        assert app.focused is app.timeline  # the table's arrival does not take the focus from the user's pane
        await pilot.press("minus")
        lanes_after = [app.timeline.render_line(y).text for y in range(app.timeline.size.height)]
        assert lanes_after[1:] == lanes[1:]  # the same lanes, zoomed back out
        direct = key_averages(session_load(find_runs(trace)[0], LoadOptions(cache=False)))
        assert list(app.table.name) == list(direct.name)
        assert app.ops.row_text(0).startswith(simplified_name(direct.name[int(app.ops.view[0])])[:16])
        assert "key_averages" not in screen_text(app).splitlines()[0]


async def test_esc_while_the_table_is_computed_stops_the_loader(corpus_dir, tmp_path, cache_options, monkeypatch):
    """Esc while the loader process computes the table (it prints nothing then) stops it at once, its process
    group killed; the header says so and the timeline keeps what was read."""
    import time

    from trntui.tui.app import TrntuiApp
    from trntui.tui.capture import screen_text

    from .conftest import settle

    trace = tmp_path / "t.json.gz"
    shutil.copy(corpus_dir / "cuda_sampled_rank0.json.gz", trace)
    flag, started = _waiting_loader(monkeypatch, tmp_path)
    app = TrntuiApp(trace)
    async with app.run_test(size=(100, 30)) as pilot:
        assert await settle(pilot, lambda: app.timeline.profile is not None and not app.timeline.loading, 60)
        t0 = time.monotonic()
        await pilot.press("escape")
        await app.workers.wait_for_complete()
        assert await settle(pilot, lambda: "load cancelled" in screen_text(app).splitlines()[0])
        assert time.monotonic() - t0 < 10  # not the waiting loader's 60 s
        assert started[0].poll() is not None  # killed
        head = screen_text(app).splitlines()[0]
        assert "before the ops table" in head and "q: quit" in head
        assert app.profile is None and app.table is None and not any(p.loading for p in app.panes())
        assert app.timeline.profile is not None


_OPEN_AND_LIST_MODULES = """
import asyncio, sys
from trntui.tui.app import TrntuiApp
async def go():
    app = TrntuiApp(sys.argv[1])
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        for _ in range(100):
            await pilot.pause(0.02)
            if app.profile is not None and not app.ops.loading:
                break
        await pilot.pause(0.2)
        footer = " ".join(str(k.description) for k in app.query("FooterKey"))
        print(app.profile is not None, "Overview" in footer, "Compare" in footer)
        print(" ".join(sorted(m for m in sys.modules if m.startswith("trntui.tui.screens."))))
asyncio.run(go())
"""


def test_the_footer_does_not_import_the_screens(corpus_dir, tmp_path):
    """Opening a trace (the footer asks every screen's key whether it works, from the first frame on) imports
    none of the feature screens' modules (compare, overview, device, ranks: ~0.1-0.2 s of a core, taken from a
    big trace's decode); their keys are listed as before (the overview's, not compare's for a single run)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ, PYTHONPATH=str(Path(loader.__file__).resolve().parents[2]), TRNTUI_CACHE_DIR=str(tmp_path / "c"))
    out = subprocess.run([sys.executable, "-c", _OPEN_AND_LIST_MODULES, str(corpus_dir / "cuda_simple_add.json.gz")],
                         env=env, capture_output=True, text=True, timeout=120, check=True).stdout.splitlines()
    assert out[0] == "True True False", out
    imported = out[1].split() if len(out) > 1 else []
    assert not [m for m in imported if m.rsplit(".", 1)[1] in ("compare", "overview", "device", "ranks")], imported
