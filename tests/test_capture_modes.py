"""`trntui profile` of a user's own code as the user wrote it — issue 26 items 2 and 7.

A training step (forward, backward, optimizer step) runs in the grad mode its code chose (no torch.no_grad()
around it); `--profile-memory`, `--with-flops`, `--with-modules` reach torch.profiler.profile; with
`--with-stack` no frame of trntui's own capture harness is in the table or the call tree; the manifest
records what was really captured (dtype/shape of the command only for built-ins).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from tests.conftest import run_cli  # noqa: E402
from trntui.analysis.calltree import call_tree  # noqa: E402
from trntui.analysis.key_averages import key_averages  # noqa: E402
from trntui.session import find_runs, load_run  # noqa: E402

TRAIN = """
    import torch

    def make_workload(ctx):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x = torch.randn(16, 32)
        y = torch.randn(16, 1)

        def train_step(x, y):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return train_step, (x, y)
"""


@pytest.fixture
def train_py(tmp_path: Path) -> Path:
    f = tmp_path / "train.py"
    f.write_text(textwrap.dedent(TRAIN))
    return f


import re  # noqa: E402

TRNTUI_FILE = re.compile(r"(^|/)trntui(/[\w/]+\.py)?\(\d+\)")
"""A frame in a trntui file (`trntui/cli.py(188): entry`) or the console script (`trntui(8): <module>`)."""


def _names(profile) -> set[str]:
    return {profile.name_of(i) for i in range(len(profile))}


@pytest.mark.torch  # a real capture with torch
def test_training_step_captures_unchanged_with_memory_columns(train_py, tmp_path, capsys) -> None:
    out = tmp_path / "train-out"
    rc, stdout, err = run_cli(capsys, "profile", str(train_py), "--device", "cpu", "--no-tui", "--steps", "2",
                              "--profile-memory", "--with-flops", "--with-modules", "--out", str(out))
    assert rc == 0, err
    run = find_runs(out)[0]
    names = _names(load_run(run))
    assert any(n.startswith("Optimizer.step#SGD.step") for n in names), sorted(names)[:40]
    assert any("backward" in n.lower() or "Backward" in n for n in names)  # autograd ran: a real training step
    assert "aten::mse_loss" in names
    profiler = run.manifest["profiler"]
    assert profiler["profile_memory"] is True and profiler["with_flops"] is True and profiler["with_modules"] is True
    assert "--profile-memory" in run.manifest["command"]
    # the manifest says what the user's code used, not the built-ins' --dtype/--shape defaults
    assert run.manifest["dtype"] is None and run.manifest["shape"] is None
    assert run.manifest["input_dtypes"] == ["float32", "float32"]
    assert run.manifest["input_shapes"] == [[16, 32], [16, 1]]
    assert "--dtype" not in run.manifest["command"] and "--shape" not in run.manifest["command"]
    # --profile-memory: the summary of the result has the memory columns, with figures
    rc, table, err = run_cli(capsys, "summary", str(out))
    assert rc == 0, err
    header = next(line for line in table.splitlines() if "Name" in line)
    assert "CPU Mem" in header and "Self CPU Mem" in header
    step = next(line for line in table.splitlines() if line.strip().startswith("ProfilerStep*"))
    assert " KB" in step or " MB" in step or " B " in step, step


@pytest.mark.torch  # a real capture with torch
def test_with_stack_has_no_harness_frame(train_py, tmp_path, capsys) -> None:
    out = tmp_path / "stack-out"
    rc, stdout, err = run_cli(capsys, "profile", str(train_py), "--device", "cpu", "--no-tui", "--steps", "2",
                              "--with-stack", "--record-shapes", "--out", str(out))
    assert rc == 0, err
    run = find_runs(out)[0]
    profile = load_run(run)
    names = _names(profile)
    assert any(n.startswith(str(train_py)) or "train.py" in n for n in names), "the user's frames are kept"
    trntui_frames = sorted(n for n in names if TRNTUI_FILE.search(n))
    assert not trntui_frames, trntui_frames
    table = key_averages(profile)
    assert not [n for n in table.name if TRNTUI_FILE.search(n)]
    # the call tree of the recorded step names no trntui file either
    step = next(i for i in range(len(profile)) if profile.name_of(i).startswith("ProfilerStep#"))
    tree = call_tree(profile, step)
    assert not [node.name for node in tree.nodes if TRNTUI_FILE.search(node.name)]
    assert any("train.py" in node.name for node in tree.nodes)
    assert run.manifest["profiler"]["harness_frames_cut"] > 0
    # and the table says what was cut (torch's own table would show it)
    rc, text, err = run_cli(capsys, "summary", str(out))
    assert rc == 0 and "capture harness were cut" in text and "torch's own table" in text


@pytest.mark.torch  # a real capture with torch
def test_builtin_manifest_keeps_dtype_and_shape(tmp_path, capsys) -> None:
    out = tmp_path / "b"
    rc, _, err = run_cli(capsys, "profile", "rmsnorm", "--variant", "naive", "--device", "cpu", "--no-tui",
                         "--steps", "1", "--out", str(out))
    assert rc == 0, err
    manifest = json.loads((out / "naive" / "trntui.json").read_text())
    assert manifest["dtype"] == "bfloat16" and manifest["shape"] == [4, 512]
    assert manifest["input_dtypes"] == ["bfloat16", "bfloat16"]
