"""The Python API (trntui/api.py, docs/api.md): `trntui.load(...).key_averages()` is torch's in-process
`prof.key_averages()` on fresh captures (rows, order, counts and times to the last bit), `.table()` torch's text;
and the rest of a Run (events, sql, chain, overview) on a corpus trace, without a terminal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import trntui

from .conftest import CORPUS, REPO

torch = pytest.importorskip("torch")

from .test_torch_agreement import _capture, _mixed_step, _rmsnorm_naive, _rmsnorm_step  # noqa: E402

FIELDS = (
    "count", "self_cpu_time_total", "cpu_time_total", "cpu_time", "self_device_time_total", "device_time_total",
    "self_cpu_memory_usage", "cpu_memory_usage", "self_device_memory_usage", "device_memory_usage",
    "is_user_annotation", "node_id", "is_legacy", "flops",
)


def _assert_frame_is_torchs(frame, theirs, shapes: bool = False) -> None:
    assert len(frame) == len(theirs)
    for k, e in enumerate(theirs):
        row = frame.iloc[k]
        assert row["key"] == e.key, k
        assert row["device_type"] == str(e.device_type).split(".")[-1], e.key
        if shapes:
            assert row["input_shapes"] == str(e.input_shapes), e.key
        for f in FIELDS:
            ours, want = row[f], getattr(e, f)
            assert ours == want, (e.key, f, ours, want)  # floats compared exactly: torch's sums to the last bit


@pytest.fixture(scope="module")
def training(tmp_path_factory):
    """A transformer training step, recorded with shapes (the walkthrough's schedule)."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True, dropout=0.0)
    model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(2, 8, 32)

    def step():
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()

    return _capture(step, tmp_path_factory.mktemp("train"), record_shapes=True)


@pytest.mark.usefixtures("each_kineto_parser")  # on both Kineto parsers
def test_key_averages_is_torchs_on_a_training_step(training) -> None:
    prof, trace = training
    run = trntui.load(trace)
    _assert_frame_is_torchs(run.key_averages(), prof.key_averages())
    _assert_frame_is_torchs(run.key_averages(group_by_input_shapes=True), prof.key_averages(group_by_input_shape=True),
                            shapes=True)


@pytest.mark.usefixtures("each_kineto_parser")  # on both Kineto parsers
def test_table_is_torchs_text(training) -> None:
    prof, trace = training
    run = trntui.load(trace)
    for sort_by in (None, "self_cpu_time_total", "cpu_time_total", "count"):
        for limit in (100, 7):
            assert run.table(sort_by=sort_by, row_limit=limit) == prof.key_averages().table(sort_by=sort_by, row_limit=limit)
    assert run.table(sort_by="count", row_limit=10, group_by_input_shapes=True) == \
        prof.key_averages(group_by_input_shape=True).table(sort_by="count", row_limit=10)


@pytest.mark.usefixtures("each_kineto_parser")  # on both Kineto parsers
def test_key_averages_is_torchs_with_memory_and_tensor_lists(tmp_path: Path) -> None:
    from torch.profiler import ProfilerActivity, profile

    step = _mixed_step()
    step()
    trace = tmp_path / "trace.json"
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as prof:
        step()
    prof.export_chrome_trace(str(trace))
    run = trntui.load(trace, cache=False)
    frame = run.key_averages()
    _assert_frame_is_torchs(frame, prof.key_averages())
    assert frame["self_cpu_memory_usage"].abs().sum() > 0
    assert run.table(sort_by="self_cpu_memory_usage", row_limit=-1) == \
        prof.key_averages().table(sort_by="self_cpu_memory_usage", row_limit=-1)


@pytest.mark.usefixtures("each_kineto_parser")  # on both Kineto parsers
def test_key_averages_is_torchs_on_rmsnorm(tmp_path: Path) -> None:
    prof, trace = _capture(_rmsnorm_step(_rmsnorm_naive), tmp_path)
    run = trntui.load(trace)
    _assert_frame_is_torchs(run.key_averages(), prof.key_averages())
    assert run.table() == prof.key_averages().table()


def test_a_run_in_a_script_without_a_terminal() -> None:
    """events (pandas and Arrow), sql, chain and overview on a corpus trace, in a process with no terminal."""
    code = (
        "import json, trntui\n"
        f"run = trntui.load({str(CORPUS / 'cuda_alexnet.json.gz')!r})\n"
        "ev = run.events(); arrow = run.events(as_='arrow')\n"
        "k = run.sql(\"SELECT id, name FROM kernels ORDER BY dur_ns DESC LIMIT 1\")\n"
        "chain = run.chain(int(k['id'][0]))\n"
        "ov = run.overview()\n"
        "cp = run.critical_paths(annotation='[param|pytorch.model.alex_net|0|0|0|measure|forward]', instance=1)[0]\n"
        "w = cp.what_if(['kernels=0.5x'])\n"
        "print(json.dumps({'events': len(ev), 'arrow': arrow.num_rows, 'cols': list(ev.columns),\n"
        "  'kernel': k['name'][0], 'root': run.profile.name_of(chain.root),\n"
        "  'hops': [h.name for b in chain.branches for h in b], 'ov': type(ov).__name__,\n"
        "  'cp': cp.length_ns, 'bound': cp.bound_by, 'saved': w.saved_ns}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                         cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    assert doc["events"] == doc["arrow"] == 870
    assert doc["cols"] == ["id", "name", "cat", "ph", "ts_us", "dur_us", "start_ns", "end_ns", "dur_ns", "pid", "tid",
                           "lane", "tier", "depth", "parent_id", "step", "args"]
    assert doc["root"].startswith("aten::") and doc["kernel"] in doc["hops"]
    assert doc["ov"] == "Overview"
    assert doc["cp"] == 35_834_000 and doc["bound"] == "cpu_bound" and doc["saved"] > 0  # HTA's alexnet window


def test_runs_lists_a_directorys_runs_and_load_picks_one() -> None:
    from trntui.errors import LoadError

    runs = trntui.runs(REPO / "sample_profiles" / "neuron")
    assert len(runs) == 3 and all(r._profile is None for r in runs)  # loaded on first use
    with pytest.raises(LoadError, match="holds 3 runs"):
        trntui.load(REPO / "sample_profiles" / "neuron")
    run = trntui.load(REPO / "sample_profiles" / "neuron", run=runs[1].name)
    assert run.name == runs[1].name and len(run.profile) > 0
    assert "nc_exec_running" in set(run.sql("SELECT DISTINCT name FROM kernels")["name"])
    with pytest.raises(LoadError, match="no run"):
        trntui.load(REPO / "sample_profiles" / "neuron", run="nope")


def test_import_trntui_is_light() -> None:
    code = "import sys, trntui; trntui.load; print(sorted(m for m in ('numpy', 'pandas', 'duckdb', 'pyarrow') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_api_names_survive_every_submodule_import() -> None:
    """`trntui.runs` and `trntui.load` stay the API functions after every trntui module has been imported (a
    submodule named `trntui.runs` used to replace the function on the package as soon as compare imported it)."""
    code = (
        "import importlib, pkgutil, trntui\n"
        "for m in pkgutil.walk_packages(trntui.__path__, 'trntui.'):\n"
        "    if '.tui' in m.name or m.name.endswith('__main__'): continue\n"
        "    importlib.import_module(m.name)\n"
        "assert callable(trntui.runs) and callable(trntui.load), (trntui.runs, trntui.load)\n"
        "import trntui.tui.screens.compare\n"
        "assert callable(trntui.runs), trntui.runs\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
