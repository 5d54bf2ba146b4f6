"""trntui's table, read from the exported trace.json, agrees with torch's in-process key_averages().

Captures real CPU profiles with torch (RMSNorm naive, torch.rms_norm, a small transformer training step).
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from trntui.analysis.key_averages import key_averages  # noqa: E402
from trntui.loaders import load_profile  # noqa: E402

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


def _capture(step_fn, out: Path, *, record_shapes: bool = False, with_stack: bool = False):
    """Profile `step_fn` like the walkthrough: schedule(wait=2, warmup=1, active=1), four steps."""
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
