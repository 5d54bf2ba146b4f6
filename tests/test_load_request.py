"""The load request (trntui/request.py): made once by the command from what the user typed, it reaches the loader
process and the rank workers as it was made (equal after the round trip), and the memory budget reaches every
reader only through it (a Neuron export loaded alone, with no Kineto trace read before it, stays inside
`--memory-budget`)."""

from __future__ import annotations

import pickle
import shutil
import sys
import time
from pathlib import Path

import pytest

from tests.rank_job import make_job
from trntui import memory
from trntui.cli import main
from trntui.loaders.protocol import LoadOptions
from trntui.request import LoadRequest, match_run, resolve

REPO = Path(__file__).resolve().parents[1]


def test_a_request_pickles_equal_and_holds_no_callbacks(corpus_dir, tmp_path) -> None:
    options = LoadOptions(memory_budget=123 << 20, cache_dir=tmp_path, progress=print, cancelled=lambda: False)
    request = resolve(corpus_dir / "cuda_simple_add.json.gz", options=options)
    assert request.options.progress is None and request.options.cancelled is None  # the process's own, not data
    again = pickle.loads(pickle.dumps(request))
    assert again == request and again.run.inputs == request.run.inputs
    with pytest.raises(AttributeError):
        request.run = again.run  # type: ignore[misc] - frozen: nothing changes a request once resolved
    assert request.with_options(memory_budget=1 << 20).options.memory_budget == 1 << 20
    assert request.options.memory_budget == 123 << 20


def test_one_rule_names_a_run(tmp_path) -> None:
    from trntui.errors import TrntuiError
    from trntui.loaders.discover import Run

    runs = [Run(name=n, root=tmp_path, framework_traces=[]) for n in ("job", "job:rank0", "job:rank1", "other")]
    assert match_run(runs, "job").name == "job"  # the exact name first
    assert match_run(runs, "other").name == "other"
    with pytest.raises(TrntuiError, match="no run named 'nope'"):
        match_run(runs, "nope", tmp_path)
    assert match_run(runs[1:3] + runs[3:], "other").name == "other"
    assert match_run([runs[1], runs[3]], "job").name == "job:rank0"  # the only one under that name
    with pytest.raises(TrntuiError, match="several runs match 'job'"):
        match_run(runs[1:], "job", tmp_path)


_ECHOING_LOADER = """
import pickle, sys
sys.path.insert(0, {root!r})
from trntui.tui import loader
real = loader.main
def echo(request):
    with open({out!r} + ".tmp", "wb") as f:
        pickle.dump(request, f)
    import os
    os.replace({out!r} + ".tmp", {out!r})
    return real(request)
loader.main = echo
sys.exit(loader.child())
"""


def test_the_request_trntui_open_makes_reaches_the_loader_process_unchanged(corpus_dir, tmp_path, monkeypatch):
    """`trntui open PATH --memory-budget 300M --run NAME`: the request the command resolves is the one the app is
    handed, and the one its loader process receives (sent over the pipe, not found again: equal after the
    round trip); the loader then writes the cache entry for it."""
    from trntui import cache as profile_cache
    from trntui.commands import open as open_command
    from trntui.tui import app as app_module
    from trntui.tui import loader

    trace = tmp_path / "t.json.gz"
    shutil.copy(corpus_dir / "cuda_ns_resolution_68k.json.gz", trace)
    echoed = tmp_path / "echoed.pickle"
    handed: list[LoadRequest] = []

    def spawn_echoing(request):
        boot = _ECHOING_LOADER.format(root=str(REPO), out=str(echoed))
        return loader._spawn([sys.executable, "-c", boot], request)

    class FakeApp:
        def __init__(self, path, run=None, *, request=None, prestarted=None, **kwargs):
            handed.append(request)
            self.prestarted = prestarted

        def run(self) -> None:  # the loader runs meanwhile; wait for it to say what it was sent, and finish
            deadline = time.monotonic() + 120
            while not echoed.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            self.prestarted.proc.wait(120)

        def exit_code(self) -> int:
            return 0

    monkeypatch.setenv("TRNTUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRNTUI_CACHE_MIN_BYTES", "0")
    monkeypatch.setattr(open_command, "require_terminal", lambda: None)
    monkeypatch.setattr(loader, "_fork_loader", lambda request: None)  # the loader as a fresh interpreter
    monkeypatch.setattr(loader, "_start_loader", spawn_echoing)
    monkeypatch.setattr(app_module, "TrntuiApp", FakeApp)
    from trntui.session import find_runs

    (found,) = find_runs(trace)
    assert main(["open", "--memory-budget", "300M", "--run", found.name, str(trace)]) == 0
    (request,) = handed
    assert isinstance(request, LoadRequest) and request.run == found
    assert request.options.memory_budget == 300 << 20 and request.options.cache_dir == tmp_path / "cache"
    received = pickle.loads(echoed.read_bytes())
    assert received == request  # the run (its files, format, inputs) and every option, as the command made them
    assert profile_cache.entry_dir(request.run.inputs, request.options.cache_dir).is_dir()


def echo_task(task):
    """A rank worker's view of its task (run in the pool's or Dask's worker processes)."""
    import os

    return os.getpid(), task.request


def _ranks_with_echo(monkeypatch, argv: list[str]) -> tuple[list[LoadRequest], list]:
    """Run `trntui ranks ARGV` with the engine also sending each task to `echo_task` on the same engine: (the
    requests the command made, what the workers received)."""
    from trntui import per_rank

    made: list[LoadRequest] = []
    received: list = []
    real_requests, real_map = per_rank.rank_requests, per_rank.map_tasks

    def rank_requests(*args, **kwargs):
        out = real_requests(*args, **kwargs)
        made.extend(out)
        return out

    def map_tasks(fn, tasks, engine, **kwargs):
        received.extend(real_map(echo_task, tasks, engine))
        return real_map(fn, tasks, engine, **kwargs)

    monkeypatch.setattr(per_rank, "rank_requests", rank_requests)
    monkeypatch.setattr(per_rank, "map_tasks", map_tasks)
    assert main(["ranks", "--format", "json", "--memory-budget", "256M", *argv]) == 0
    return made, received


@pytest.fixture(scope="module")
def job4(corpus_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("job4")
    make_job(corpus_dir, out, ranks=4, slow_rank=1, slow=1.3)
    return out


@pytest.mark.cluster
def test_the_requests_trntui_ranks_makes_reach_the_pool_workers_unchanged(job4, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRNTUI_CACHE_DIR", str(tmp_path / "cache"))
    made, received = _ranks_with_echo(monkeypatch, ["--jobs", "2", str(job4)])
    capsys.readouterr()
    import os

    assert len(made) == 4 and {pid for pid, _ in received} - {os.getpid()}  # other processes
    assert [r for _, r in received] == made  # each rank's run and options, as the command made them
    assert all(r.options.memory_budget == 256 << 20 for r in made)  # the command's budget, per worker
    assert all(r.options.cache_dir == tmp_path / "cache" for r in made)


@pytest.mark.cluster
def test_the_requests_trntui_ranks_makes_reach_the_dask_workers_unchanged(job4, tmp_path, monkeypatch, capsys):
    pytest.importorskip("distributed")
    monkeypatch.setenv("TRNTUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(REPO))  # the workers import this module to run echo_task
    made, received = _ranks_with_echo(monkeypatch, ["--engine", "dask", "--jobs", "2", str(job4)])
    capsys.readouterr()
    import os

    assert len(made) == 4 and {pid for pid, _ in received} - {os.getpid()}
    assert [r for _, r in received] == made


def _export_alone(tmp_path: Path, kind: str) -> Path:
    """A Neuron Explorer export with nothing beside it (no trace.json: no Kineto trace is read first)."""
    if kind == "parquet":
        out = tmp_path / "explorer_parquet"
        shutil.copytree(REPO / "sample_profiles" / "neuron" / "naive" / "explorer_parquet", out)
        return out
    from tests.neuron_samples import generator

    gen = generator()
    out = tmp_path / "explorer_json" / "system_profile.json"
    gen.write_json_export(gen.build_capture("naive"), out)
    return out.parent  # (the file named alone reads as a Kineto trace: see the closing note)


@pytest.mark.parametrize("kind", ["parquet", "json"])
def test_a_neuron_export_loaded_alone_stays_inside_the_memory_budget(tmp_path, monkeypatch, capsys, kind) -> None:
    """The budget reaches the Neuron export readers through the request's options alone: an export read with no
    Kineto trace before it is refused (one line, exit 2) when it cannot fit `--memory-budget`, and loads when
    it can."""
    export = _export_alone(tmp_path, kind)
    from trntui.session import find_runs

    (run,) = find_runs(export)
    assert run.framework_traces == []  # the export alone
    assert main(["summary", "--no-cache", "--memory-budget", "2G", str(export)]) == 0
    capsys.readouterr()
    if kind == "parquet":
        monkeypatch.setattr(memory, "NEURON_BYTES_PER_ROW", 1 << 30)  # every row "needs" 1 GiB
        what = "this Neuron export ("
    else:
        monkeypatch.setattr(memory, "NEURON_JSON_FACTOR", 1 << 30)  # every byte of JSON "needs" 1 GiB
        what = "this Neuron JSON export ("
    rc = main(["summary", "--no-cache", "--memory-budget", "2G", str(export)])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert what in err and "over the memory budget of 2.00 GiB" in err
    assert main(["summary", "--no-cache", "--memory-budget", "none", str(export)]) == 0  # no limit asked
    # the format's own step, on a builder no Kineto load touched first (it once read the budget from there)
    from trntui.errors import OverBudget
    from trntui.loaders.neuron.format import load_source
    from trntui.model.builder import ProfileBuilder

    with pytest.raises(OverBudget, match="over the memory budget of 2.00 GiB"):
        load_source(run.source, ProfileBuilder(), LoadOptions(memory_budget=2 << 30), has_framework=False)


def test_no_reader_takes_a_budget_from_the_builder() -> None:
    """The side channel is gone: the budget is an argument of the readers, from `LoadOptions.budget`."""
    import importlib
    import inspect
    import pkgutil

    from trntui.loaders.neuron import json_export, parquet
    from trntui.model.builder import ProfileBuilder

    assert not hasattr(ProfileBuilder(), "memory_budget")
    parts = [importlib.import_module(f"{parquet.__name__}.{m.name}") for m in pkgutil.iter_modules(parquet.__path__)]
    assert len(parts) >= 5  # the package's modules, each read (the budget check is in parquet/budget.py)
    for module in (json_export, parquet, *parts):
        assert "memory_budget" not in inspect.getsource(module)
