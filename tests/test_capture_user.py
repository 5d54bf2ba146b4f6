"""User workloads: `trntui profile file.py:function` and `module:function`, the documented contract — issue 4."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch  # captures or profiles with torch: `-m "not torch"` leaves them out

from trntui.analysis.key_averages import key_averages  # noqa: E402
from trntui.capture.workloads import Variant, Workload, WorkloadSource, normalize  # noqa: E402
from trntui.cli import main  # noqa: E402
from trntui.errors import TrntuiError  # noqa: E402
from trntui.session import find_runs, load_run  # noqa: E402


def counts_of(run) -> dict[str, int]:
    table = key_averages(load_run(run))
    return {table.name[k]: int(table.count[k]) for k in range(len(table))}


def test_file_with_variants_dict_and_context(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    f = tmp_path / "mlp.py"
    f.write_text(textwrap.dedent("""
        import torch

        def matmul(a, b):
            return a @ b

        def matmul_relu(a, b, *, slope):
            return torch.nn.functional.leaky_relu(a @ b, slope)

        def make_workload(ctx):
            a = torch.randn(8, 16, dtype=ctx.dtype, device=ctx.device)
            b = torch.randn(16, 4, dtype=ctx.dtype, device=ctx.device)
            return {"plain": (matmul, (a, b)), "relu": (matmul_relu, (a, b), {"slope": 0.1})}
    """))
    out = tmp_path / "out"
    rc = main(["profile", f"{f}:make_workload", "--device", "cpu", "--dtype", "fp32", "--no-tui", "--out", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "== plain ==" in captured.out and "== relu ==" in captured.out
    runs = {r.name: r for r in find_runs(out)}
    assert set(runs) == {"plain", "relu"}
    assert counts_of(runs["plain"])["aten::mm"] == 1
    assert counts_of(runs["relu"])["aten::leaky_relu"] == 1
    manifest = json.loads((out / "relu" / "trntui.json").read_text())
    assert manifest["workload"] == "mlp" and manifest["variant"] == "relu" and manifest["complete"] is True
    assert manifest["input_shapes"] == [[8, 16], [16, 4], None]
    assert manifest["input_dtypes"] == ["float32", "float32", None]  # what the inputs really were (--dtype fp32)
    assert manifest["dtype"] is None and manifest["shape"] is None  # --dtype/--shape describe built-ins only


def test_module_function_returning_fn_and_args(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "my_wl_mod.py").write_text(textwrap.dedent("""
        import torch

        def softmax_last(x):
            return torch.softmax(x, -1)

        def build():
            return softmax_last, torch.randn(4, 32)
    """))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "my_wl_mod", raising=False)
    try:
        rc = main(["profile", "my_wl_mod:build", "--device", "cpu", "--no-tui", "--out", "o"])
    finally:
        sys.modules.pop("my_wl_mod", None)
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    runs = find_runs(tmp_path / "o")
    assert [r.name for r in runs] == ["softmax_last"]
    assert counts_of(runs[0])["aten::softmax"] == 1
    assert runs[0].manifest["workload"] == "my_wl_mod-build"


def test_normalize_accepts_the_documented_shapes() -> None:
    src = WorkloadSource(spec="x.py:f", name="x", origin="x.py:f")

    def fn(a=1):
        return a

    assert list(normalize((fn, (1,)), src).variants) == ["fn"]
    assert normalize((fn, (1,), {"a": 2}), src).variants["fn"].kwargs == {"a": 2}
    assert normalize((fn, 5), src).variants["fn"].args == (5,)
    assert normalize(fn, src).variants["fn"].args == ()
    w = normalize(Workload(name="mine", variants={"v 1": Variant(fn, (1,))}), src)
    assert w.name == "mine" and list(w.variants) == ["v_1"]
    assert list(normalize({"a": fn, "b": (fn, [2])}, src).variants) == ["a", "b"]
    for bad in (None, 42, (1, 2), {}, {"a": 3}):
        with pytest.raises(TrntuiError, match="x.py:f"):
            normalize(bad, src)
