"""trntui's table, read from the exported trace.json, agrees with torch's in-process key_averages().

Captures real CPU profiles with torch (RMSNorm naive, torch.rms_norm, a small transformer training step, ops
taking tensor lists, several threads, memory profiling with an out-of-memory error, a mangled scope name, an
empty profile) and compares rows, their order, every number and the printed table text with the in-process
torch objects.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
# captures or profiles with torch (`-m "not torch"` leaves them out); every test runs on both Kineto parsers
pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("each_kineto_parser")]

from trntui.analysis.key_averages import key_averages  # noqa: E402
from trntui.report import render_table  # noqa: E402
from trntui.session import load_profile  # noqa: E402

from .conftest import run_cli  # noqa: E402

TOL_US = 1.0
TOL_REL = 0.005


def _rmsnorm_naive(t: "torch.Tensor", weight: "torch.Tensor") -> "torch.Tensor":
    x_sq = t * t
    mean_sq = x_sq.mean(-1, keepdim=True)
    rms = torch.rsqrt(mean_sq + 1e-6)
    return t * rms * weight


def _rmsnorm_fused(t: "torch.Tensor", weight: "torch.Tensor") -> "torch.Tensor":
    return torch.rms_norm(t, [t.shape[-1]], weight)


def _rmsnorm_step(fn):
    """One walkthrough step: `fn` on x = randn(4, 512) bf16 and weight = ones(512) under no_grad."""
    x = torch.randn(4, 512, dtype=torch.bfloat16)
    w = torch.ones(512, dtype=torch.bfloat16)

    def step():
        with torch.no_grad():
            fn(x, w)

    return step


def _capture(
    step_fn,
    out: Path,
    *,
    record_shapes: bool = False,
    with_stack: bool = False,
    profile_memory: bool = False,
    all_threads: bool = False,
):
    """Profile `step_fn` like the walkthrough: schedule(wait=2, warmup=1, active=1), four steps. `all_threads`:
    also record threads other than the profiling one (`_ExperimentalConfig(profile_all_threads=True)`)."""
    from torch.profiler import ProfilerActivity, profile, schedule

    trace = out / "trace.json"

    def export(prof):
        prof.export_chrome_trace(str(trace))

    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=2, warmup=1, active=1),
        on_trace_ready=export,
        record_shapes=record_shapes,
        with_stack=with_stack,
        profile_memory=profile_memory,
        experimental_config=torch._C._profiler._ExperimentalConfig(profile_all_threads=True) if all_threads else None,
    ) as prof:
        for _ in range(4):
            step_fn()
            prof.step()
    return prof, trace


def _torch_rows(prof, group_by_input_shapes: bool = False):
    rows = {}
    for e in prof.key_averages(group_by_input_shape=group_by_input_shapes):
        key = (e.key, str(e.device_type).split(".")[-1], e.input_shapes.__str__() if group_by_input_shapes else "")
        rows[key] = e
    return rows


def _assert_close(ours: float, theirs: float, what: str) -> None:
    assert abs(ours - theirs) <= max(TOL_US, TOL_REL * abs(theirs)), f"{what}: trntui {ours} vs torch {theirs}"


def _compare(prof, trace: Path, group_by_input_shapes: bool = False) -> int:
    theirs = _torch_rows(prof, group_by_input_shapes)
    table = key_averages(load_profile(trace), group_by_input_shapes=group_by_input_shapes)
    ours = {}
    for k in range(len(table)):
        key = (table.name[k], table.device_type[k], table.input_shapes[k] if group_by_input_shapes else "")
        ours[key] = table.row(k)
    assert set(ours) == set(theirs), f"rows differ: only trntui {set(ours) - set(theirs)}, only torch {set(theirs) - set(ours)}"
    for key, e in theirs.items():
        row = ours[key]
        assert row["count"] == e.count, f"{key}: calls {row['count']} vs {e.count}"
        _assert_close(row["self_cpu_time_total"], e.self_cpu_time_total, f"{key} self cpu")
        _assert_close(row["cpu_time_total"], e.cpu_time_total, f"{key} cpu total")
    return len(theirs)


def test_rmsnorm_naive_matches_torch(tmp_path: Path) -> None:
    prof, trace = _capture(_rmsnorm_step(_rmsnorm_naive), tmp_path)
    n = _compare(prof, trace)
    names = {e.key: e.count for e in prof.key_averages()}
    assert names["aten::mul"] == 3 and names["aten::mean"] == 1 and names["aten::rsqrt"] == 1
    assert n >= 5


def test_rms_norm_fused_matches_torch(tmp_path: Path) -> None:
    prof, trace = _capture(_rmsnorm_step(_rmsnorm_fused), tmp_path)
    _compare(prof, trace)


def test_transformer_training_step_matches_torch(tmp_path: Path) -> None:
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True, dropout=0.0)
    model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(2, 8, 32)

    def step():
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()

    prof, trace = _capture(step, tmp_path, record_shapes=True)
    n = _compare(prof, trace)
    assert n > 40  # a real op table, not a toy
    # the same holds row by row when grouped by input shapes
    _compare(prof, trace, group_by_input_shapes=True)


def test_with_stack_python_rows_match_torch(tmp_path: Path) -> None:
    """With with_stack=True torch lists python_function rows too, and they parent the aten ops."""
    x = torch.randn(4, 512)

    def step():
        with torch.no_grad():
            _rmsnorm_naive(x, torch.ones(512))

    prof, trace = _capture(step, tmp_path, with_stack=True)
    n = _compare(prof, trace)
    assert any("_rmsnorm_naive" in e.key for e in prof.key_averages())
    assert n > 10


def test_summary_table_is_laid_out_like_torchs_table(tmp_path: Path, capsys) -> None:
    """`trntui summary` prints torch's `.table()` layout: same header, separators, column widths and rows."""
    from trntui.cli import main

    prof, trace = _capture(_rmsnorm_step(_rmsnorm_naive), tmp_path)
    theirs = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=8).splitlines()
    assert main(["summary", str(trace), "--sort", "self_cpu_time_total", "--limit", "8"]) == 0
    ours = capsys.readouterr().out.splitlines()[: len(theirs)]
    assert ours[:3] == theirs[:3]  # separator, header, separator: identical widths and alignment
    assert ours[-2:] == theirs[-2:] or ours[-2] == theirs[-2]  # closing separator (+ footer up to rounding)
    assert len(ours) == len(theirs)
    for a, b in zip(ours[3:-2], theirs[3:-2]):
        assert len(a) == len(b) and a.split()[0] == b.split()[0]  # same op in the same place, same widths


# ---------------------------------------------------------------------------------------------------------------
# Exact agreement (issue 17, issue 14's memory columns): rows, order, every number, the printed text
# ---------------------------------------------------------------------------------------------------------------
EXACT_FIELDS = (
    "count",
    "cpu_time_total",
    "self_cpu_time_total",
    "cpu_memory_usage",
    "self_cpu_memory_usage",
    "device_memory_usage",
    "self_device_memory_usage",
)


def _device(e) -> str:
    return str(e.device_type).split(".")[-1]


def _assert_same_rows(prof, trace: Path, *, shapes: bool = False):
    """trntui's rows are torch's rows, in torch's order, with torch's numbers to the last bit (times are float
    sums in torch's order; memory is bytes). Returns (torch's EventList, trntui's OpTable)."""
    theirs = prof.key_averages(group_by_input_shape=shapes)
    table = key_averages(load_profile(trace), group_by_input_shapes=shapes)
    want = [(e.key, _device(e), str(e.input_shapes) if shapes else "") for e in theirs]
    got = [(table.name[k], table.device_type[k], table.input_shapes[k]) for k in range(len(table))]
    assert got == want
    for k, e in enumerate(theirs):
        for f in EXACT_FIELDS:
            assert getattr(table, f)[k] == getattr(e, f), f"{want[k]} {f}: trntui {getattr(table, f)[k]!r} vs torch {getattr(e, f)!r}"
        assert table.cpu_time[k] == e.cpu_time, want[k]
    return theirs, table


def _assert_same_text(theirs, table, *, shapes: bool = False, sorts=(None, "self_cpu_time_total", "count"), limits=(100, 5)):
    """The table text is torch's `.table(sort_by, row_limit)`, character for character."""
    for sort_by in sorts:
        for limit in limits:
            assert render_table(table, sort_by, limit, with_shapes=shapes) == theirs.table(sort_by=sort_by, row_limit=limit), (sort_by, limit)


def _trace_args(trace: Path, name: str) -> list[dict]:
    return [e.get("args", {}) for e in json.loads(trace.read_text())["traceEvents"] if e.get("name") == name]


MANGLED = "_ZN2at6native3fooEv"
UNARY_OPS = (
    "abs", "neg", "exp", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "tanh", "sigmoid", "sqrt", "rsqrt",
    "floor", "ceil", "round", "trunc", "frac", "sign", "reciprocal", "erf", "erfc", "expm1", "square", "asin",
    "acos", "atan", "sinh", "cosh", "lgamma", "digamma",
)


def _mixed_step():
    """Ops on tensor lists (cat, stack, einsum, LSTM, GRU, LSTMCell) with varying list shapes, a record_function
    scope with a mangled C++ name, tensors freed outside any op, and a failed allocation."""
    torch.manual_seed(0)
    lstm, gru, cell = torch.nn.LSTM(8, 8, 1), torch.nn.GRU(8, 8, 1), torch.nn.LSTMCell(8, 8)

    def step():
        with torch.no_grad():
            for n in range(1, 4):
                xs = [torch.randn(i + 1, 4) for i in range(n)]
                torch.cat(xs)
                torch.stack([torch.randn(2, n)] * n)
                torch.einsum("ij,jk->ik", torch.randn(n, 3), torch.randn(3, 4))
                lstm(torch.randn(n, 1, 8))
                gru(torch.randn(n, 1, 8))
                cell(torch.randn(n, 8))
            with torch.profiler.record_function(MANGLED):
                big = torch.randn(256, 256)
                big.sum()
            del big  # freed outside any op: a top-level [memory] record
            try:
                torch.empty(1 << 62, dtype=torch.uint8)
            except RuntimeError:
                pass  # DefaultCPUAllocator: an [OutOfMemory] record
            v = torch.rand(64) + 0.5
            for name in UNARY_OPS:  # ops called once a step: rows of two calls, half of them with a .5 ns mean
                getattr(torch, name)(v)

    return step


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """One capture with record_shapes and profile_memory of `_mixed_step`, twice (shared by several tests).

    No schedule: with one, every record falls inside a ProfilerStep scope and none is left for a [memory] row."""
    from torch.profiler import ProfilerActivity, profile

    step = _mixed_step()
    step()  # warm-up outside the profile
    trace = tmp_path_factory.mktemp("mixed") / "trace.json"
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as prof:
        step()
        step()
    prof.export_chrome_trace(str(trace))
    return prof, trace


def test_tensor_list_ops_are_grouped_by_shapes_as_torch_groups_them(mixed) -> None:
    """torch's `input_shapes` holds [] for a TensorList argument although the trace's `Input Dims` lists each
    tensor's shape: aten::cat with lists of 1, 2 and 3 tensors is one row in torch's table, and so in ours."""
    prof, trace = mixed
    cat_dims = {json.dumps(a["Input Dims"]) for a in _trace_args(trace, "aten::cat")}
    assert len(cat_dims) >= 3 and all(a["Input type"][0] == "TensorList" for a in _trace_args(trace, "aten::cat"))
    theirs, table = _assert_same_rows(prof, trace, shapes=True)
    for op in ("aten::cat", "aten::stack", "aten::einsum", "aten::lstm", "aten::gru", "aten::lstm_cell"):
        rows = [k for k in range(len(table)) if table.name[k] == op]
        assert rows, op
    assert [table.input_shapes[k] for k in range(len(table)) if table.name[k] == "aten::cat"] == ["[[], []]"]
    _assert_same_text(theirs, table, shapes=True)


def test_input_shapes_cells_are_cut_to_the_column_as_torch_cuts_them(mixed) -> None:
    """Shapes longer than 80 characters (LSTM's mkldnn_rnn_layer) are cut to the column width, `str()[:80]`."""
    prof, trace = mixed
    theirs, table = _assert_same_rows(prof, trace, shapes=True)
    assert max(len(s) for s in table.input_shapes) > 80
    text = render_table(table, "count", 100, with_shapes=True)
    assert text == theirs.table(sort_by="count", row_limit=100)
    assert all(len(line) == len(text.splitlines()[0]) for line in text.splitlines()[:-1])


def test_mangled_names_are_demangled_as_in_torchs_table(mixed) -> None:
    prof, trace = mixed
    assert _trace_args(trace, MANGLED)  # the trace keeps the mangled name
    theirs, table = _assert_same_rows(prof, trace)
    assert table.find("at::native::foo()") >= 0 and table.find(MANGLED) < 0
    _assert_same_text(theirs, table)


def test_memory_columns_equal_torchs_byte_for_byte(mixed, capsys) -> None:
    """profile_memory=True: CPU Mem / Self CPU Mem per row, the [memory] rows (records no op contains) and the
    [OutOfMemory] row are torch's, in every output format."""
    prof, trace = mixed
    theirs, table = _assert_same_rows(prof, trace)
    mem = table.find("[memory]")
    oom = table.find("[OutOfMemory]")
    assert mem >= 0 and table.count[mem] >= 1 and table.cpu_memory_usage[mem] < 0
    assert oom >= 0 and table.count[oom] == 2 and table.cpu_memory_usage[oom] == 0  # one per step
    assert any(table.self_cpu_memory_usage[k] != table.cpu_memory_usage[k] for k in range(len(table)))
    _assert_same_text(theirs, table, sorts=(None, "cpu_memory_usage", "self_cpu_memory_usage"))
    assert "CPU Mem  Self CPU Mem" in render_table(table)

    rc, out, err = run_cli(capsys, "summary", str(trace), "--sort", "self_cpu_memory_usage", "--limit", "-1")
    assert rc == 0, err
    assert out.startswith(theirs.table(sort_by="self_cpu_memory_usage", row_limit=-1))
    want = {(e.key, _device(e)): e for e in theirs}
    rc, out, err = run_cli(capsys, "summary", str(trace), "--format", "json", "--limit", "-1")
    rows = json.loads(out)["rows"]
    assert len(rows) == len(want)
    for r in rows:
        e = want[(r["name"], r["device_type"])]
        assert (r["cpu_memory_usage"], r["self_cpu_memory_usage"]) == (e.cpu_memory_usage, e.self_cpu_memory_usage)
        assert (r["device_memory_usage"], r["self_device_memory_usage"]) == (0, 0)
    rc, out, err = run_cli(capsys, "summary", str(trace), "--format", "csv", "--limit", "-1")
    import csv
    import io

    csv_rows = {(r["name"], r["device_type"]): r for r in csv.DictReader(io.StringIO(out))}
    assert int(csv_rows[("[memory]", "CPU")]["self_cpu_memory_usage"]) == want[("[memory]", "CPU")].self_cpu_memory_usage
    rc, out, err = run_cli(capsys, "summary", str(trace), "--format", "markdown", "--sort", "cpu_time_total")
    header = out.splitlines()[0]
    assert "| CPU Mem | Self CPU Mem | # of Calls |" in header
    from trntui.report import format_memory

    md_mem = next(line for line in out.splitlines() if line.startswith("| [memory] |"))
    assert f"| {format_memory(want[('[memory]', 'CPU')].cpu_memory_usage)} |" in md_mem


def _threads_step():
    """Four threads running ops at once (torch orders ties across threads by first occurrence in time)."""
    torch.manual_seed(0)

    def work(n: int) -> None:
        for _ in range(n):
            a = torch.randn(16, 16)
            (a @ a).relu().sum()
            torch.cat([a, a]).mean()

    def step() -> None:
        threads = [threading.Thread(target=work, args=(k + 2,)) for k in range(3)]
        for t in threads:
            t.start()
        work(2)
        for t in threads:
            t.join()

    return step


def test_multithreaded_rows_come_in_torchs_order_sorted_by_count_with_a_limit(tmp_path: Path, capsys) -> None:
    prof, trace = _capture(_threads_step(), tmp_path, all_threads=True)
    threads = {e["tid"] for e in json.loads(trace.read_text())["traceEvents"] if e.get("cat") == "cpu_op"}
    assert len(threads) >= 2
    theirs, table = _assert_same_rows(prof, trace)
    _assert_same_text(theirs, table, sorts=(None, "count", "cpu_time_total"), limits=(100, 5, 3))
    rc, out, err = run_cli(capsys, "summary", str(trace), "--sort", "count", "--limit", "5")
    assert rc == 0, err
    assert out.startswith(theirs.table(sort_by="count", row_limit=5))


def _half_ns_ties(table) -> list[int]:
    """Rows whose exact mean (in ns) ends in .5: the printed CPU time avg then depends on the float sum's last bit."""
    out = []
    for k in range(len(table)):
        total_ns = round(float(table.cpu_time_total[k]) * 1000)
        n = int(table.count[k])
        if n > 1 and (2 * total_ns) % n == 0 and ((2 * total_ns) // n) % 2 == 1:
            out.append(k)
    return out


def test_cpu_time_avg_is_torchs_float_sum_to_the_last_digit(mixed, tmp_path: Path) -> None:
    """torch sums µs floats in event order (97.42499999999927 / 6 prints 16.237, not 16.238): every total and
    average is the same float as torch's, and the printed table agrees on rows whose exact mean is a half-ns tie."""
    captures = [mixed, _capture(_threads_step(), tmp_path, all_threads=True)]
    ties = 0
    for prof, trace in captures:
        theirs, table = _assert_same_rows(prof, trace)
        ties += len(_half_ns_ties(table))
        _assert_same_text(theirs, table, sorts=(None, "cpu_time"), limits=(100,))
    assert ties >= 1  # the workloads do exercise half-nanosecond means


def test_without_record_shapes_there_is_no_input_shapes_column(tmp_path: Path, capsys) -> None:
    """Grouped by input shapes, a trace recorded without record_shapes has only empty shapes: torch prints no
    Input Shapes column."""
    prof, trace = _capture(_rmsnorm_step(_rmsnorm_naive), tmp_path)
    theirs, table = _assert_same_rows(prof, trace, shapes=True)
    want = theirs.table(sort_by="self_cpu_time_total", row_limit=100)
    assert "Input Shapes" not in want
    _assert_same_text(theirs, table, shapes=True)
    rc, out, err = run_cli(capsys, "summary", str(trace), "--group-by-input-shapes", "--sort", "self_cpu_time_total")
    assert rc == 0, err
    assert out.startswith(want) and "Input Shapes" not in out


def test_an_empty_profile_prints_what_torch_prints(tmp_path: Path, capsys) -> None:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        pass
    trace = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace))
    assert prof.key_averages().table() == ""
    table = key_averages(load_profile(trace))
    assert len(table) == 0 and render_table(table) == ""
    rc, out, err = run_cli(capsys, "summary", str(trace))
    from trntui.report import EMPTY_TABLE_NOTE

    assert rc == 0 and out == f"Note: {EMPTY_TABLE_NOTE}\n"  # torch's "" and trntui's note under it


# ---------------------------------------------------------------------------------------------------------------
# Device memory: no GPU here, so torch's own post-processing is run on a real CUDA trace's events
# ---------------------------------------------------------------------------------------------------------------
_DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "cuda_sync"}


def _ns(us) -> int:
    """µs → ns as a loader must read them: exact for integral (epoch) µs, else rounded to the ns."""
    import math

    whole = math.floor(us)
    return whole * 1000 + round((us - whole) * 1000)


class _ReplayedEvent:
    """A trace event standing in for a `torch._C._autograd._KinetoEvent`, with the fields torch's
    `_parse_kineto_results` reads (device type per category as `deviceTypeFromActivity`, linked correlation =
    `External id` for runtime and device rows, memory records' device type and bytes)."""

    def __init__(self, ev: dict, base_ns: int, ext_of_correlation: dict) -> None:
        from torch.autograd import DeviceType

        args = ev.get("args") or {}
        self._name = ev["name"]
        self._start = base_ns + _ns(ev["ts"])
        self._end = self._start + _ns(ev.get("dur", 0))
        self._tid = ev["tid"]
        cat = ev.get("cat", "")
        memory = self._name in ("[memory]", "[OutOfMemory]")
        self._device_type = DeviceType(args.get("Device Type", 0)) if memory else (
            DeviceType.CUDA if cat in _DEVICE_CATS else DeviceType.CPU
        )
        self._nbytes = args.get("Bytes", 0) if self._name == "[memory]" else 0
        frontend = cat in ("cpu_op", "user_annotation")
        self._corr = args.get("External id", 0) if frontend else args.get("correlation", 0)
        self._linked = 0 if frontend or memory else args.get("External id", ext_of_correlation.get(self._corr, 0))
        self._ua = cat in ("user_annotation", "gpu_user_annotation")

    def name(self): return self._name  # noqa: E704
    def start_ns(self): return self._start  # noqa: E704
    def end_ns(self): return self._end  # noqa: E704
    def device_type(self): return self._device_type  # noqa: E704
    def nbytes(self): return self._nbytes  # noqa: E704
    def start_thread_id(self): return self._tid  # noqa: E704
    def end_thread_id(self): return self._tid  # noqa: E704
    def device_resource_id(self): return self._tid  # noqa: E704
    def fwd_thread_id(self): return self._tid  # noqa: E704
    def correlation_id(self): return self._corr  # noqa: E704
    def linked_correlation_id(self): return self._linked  # noqa: E704
    def is_user_annotation(self): return self._ua  # noqa: E704
    def is_async(self): return False  # noqa: E704
    def cuda_elapsed_us(self): return -1  # noqa: E704
    def privateuse1_elapsed_us(self): return -1  # noqa: E704

    def __getattr__(self, attr):  # the fields no table column reads
        empty = {"overload_name": "", "activity_type": "", "metadata_json": "", "extra_meta": None}
        if attr in empty:
            return lambda: empty[attr]
        if attr in ("shapes", "concrete_inputs", "stack", "structured_input_shapes", "structured_input_strides", "dtypes"):
            return lambda: []
        if attr == "kwinputs":
            return lambda: {}
        if attr in ("is_python_function", "flow_start", "is_hidden_event"):
            return lambda: False
        return lambda: -1 if attr in ("sequence_nr", "python_id", "python_parent_id", "python_module_id") else 0


class _ReplayedResult:
    def __init__(self, events, start_ns: int) -> None:
        self._events, self._start = events, start_ns

    def events(self): return self._events  # noqa: E704
    def trace_start_ns(self): return self._start  # noqa: E704


def _torch_tables_of(doc: dict, use_device: str):
    """torch's `_parse_kineto_results` → `EventList._build_tree` → `key_averages` on the trace's events."""
    from torch.autograd.profiler import profile as autograd_profile
    from torch.autograd.profiler_util import EventList

    base = int(doc.get("baseTimeNanoseconds") or 0)
    runtime_ext = {  # device rows without an External id: their launch's (kineto links them the same way)
        e["args"]["correlation"]: e["args"]["External id"]
        for e in doc["traceEvents"]
        if e.get("cat") == "cuda_runtime" and "External id" in e.get("args", {}) and "correlation" in e["args"]
    }
    evs = [
        _ReplayedEvent(e, base, runtime_ext)
        for e in doc["traceEvents"]
        if (e.get("ph") == "X" and e.get("cat") != "Trace") or e.get("name") in ("[memory]", "[OutOfMemory]")
    ]
    span = next(e for e in doc["traceEvents"] if e.get("cat") == "Trace")
    holder = autograd_profile.__new__(autograd_profile)
    holder.use_device = use_device
    parsed = autograd_profile._parse_kineto_results(holder, _ReplayedResult(evs, base + _ns(span["ts"])))
    events = EventList(parsed, use_device=use_device, profile_memory=True)
    events._build_tree()
    return events.key_averages()


def test_device_memory_columns_follow_torchs_rules_on_a_gpu_trace(corpus_dir: Path, tmp_path: Path, capsys) -> None:
    """A real GPU training trace (ROCm, which torch labels CUDA; External ids intact) with memory records added
    (device allocations inside ops and a free outside any, CPU ones, a device out-of-memory): `CUDA Mem` /
    `Self CUDA Mem`, the [memory]/[OutOfMemory] rows and the device time columns equal what torch's own
    post-processing (`_parse_kineto_results`, `EventList`, `_build_table`) makes of the same events: every
    number, and the table text."""
    import gzip

    doc = json.loads(gzip.decompress((corpus_dir / "rocm_mi250_train.json.gz").read_bytes()))
    doc["profile_memory"] = 1
    ops = [e for e in doc["traceEvents"] if e.get("cat") == "cpu_op" and float(e.get("dur", 0)) > 2]
    tid, pid = ops[0]["tid"], ops[0]["pid"]
    records = []
    for k, op in enumerate(ops):
        t = float(op["ts"]) + float(op["dur"]) / 2
        records.append((t, 1, 0, 512 * (k + 1)))  # CUDA allocation inside the op
        if k % 3 == 0:
            records.append((t, 0, -1, 64 * (k + 1)))  # a CPU one too
    end = max(float(e["ts"]) + float(e.get("dur", 0)) for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "Trace")
    records.append((end + 5, 1, 0, -4096))  # a free after every op: a [memory] row
    for t, dtype, dev, nbytes in records:
        doc["traceEvents"].append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": pid, "tid": tid, "ts": t, "args": {"Total Reserved": 1 << 20, "Total Allocated": 0, "Bytes": nbytes, "Device Id": dev, "Device Type": dtype, "Addr": 4096}})
    doc["traceEvents"].append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[OutOfMemory]", "pid": pid, "tid": tid, "ts": end + 6, "args": {"Total Reserved": 1 << 20, "Total Allocated": 0, "Bytes": 1 << 40, "Device Id": 0, "Device Type": 1}})
    trace = tmp_path / "cuda_memory.json"
    trace.write_text(json.dumps(doc))

    theirs = _torch_tables_of(doc, "cuda")
    table = key_averages(load_profile(trace))
    assert [(e.key, _device(e)) for e in theirs] == [(table.name[k], table.device_type[k]) for k in range(len(table))]
    for k, e in enumerate(theirs):
        for f in EXACT_FIELDS + ("device_time_total", "self_device_time_total"):
            assert getattr(table, f)[k] == getattr(e, f), (e.key, f)
    assert table.has_device_memory and table.find("[memory]") >= 0 and table.find("[OutOfMemory]") >= 0
    for sort_by in (None, "self_cuda_time_total", "cuda_memory_usage", "self_cuda_memory_usage"):
        text = theirs.table(sort_by=sort_by, row_limit=100)
        assert "CUDA Mem  Self CUDA Mem" in text
        assert render_table(table, sort_by, 100) == text, sort_by
    rc, out, err = run_cli(capsys, "summary", str(trace), "--sort", "self_cuda_memory_usage", "--limit", "-1")
    assert rc == 0 and out.startswith(theirs.table(sort_by="self_cuda_memory_usage", row_limit=-1)), err
