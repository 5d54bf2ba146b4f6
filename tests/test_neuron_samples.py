"""The synthetic Neuron samples reproduce the reference walkthrough's tables (summary CLI and key_averages).

The samples are synthetic (documented schema, no hardware): these tests check trntui's reading of that schema
and its device-time attribution (nc_exec_running → op through flow_id, LNC=2 copies merged).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from trntui.analysis.key_averages import key_averages
from trntui.cli import main
from trntui.session import find_runs, load_profile

from tests.neuron_samples import generator

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_profiles" / "neuron"


_generator = generator


WALKTHROUGH_NAIVE = {
    # name: (calls, Self CPU us, Self NEURON us, % NEURON as printed by the walkthrough)
    "aten::mul": (3, 60.9, 1164.5, 49.5),
    "aten::add": (1, 26.6, 434.6, 18.5),
    "aten::rsqrt": (1, 15.6, 415.0, 17.6),
    "aten::mean": (1, 21.1, 340.8, 14.5),
}


def _parse_table(text: str) -> tuple[list[str], list[list[str]]]:
    lines = text.splitlines()
    dash = [k for k, line in enumerate(lines) if line.startswith("---")]
    header = re.split(r"\s{2,}", lines[dash[0] + 1].strip())
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[dash[1] + 1 : dash[2]]]
    return header, rows


def _us(cell: str) -> float:
    for unit, f in (("ms", 1e3), ("us", 1.0), ("s", 1e6)):
        if cell.endswith(unit):
            return float(cell[: -len(unit)]) * f
    raise ValueError(cell)


def test_summary_cli_reproduces_naive_table(capsys: pytest.CaptureFixture) -> None:
    assert main(["summary", str(SAMPLES / "naive"), "--limit", "4"]) == 0
    out = capsys.readouterr().out
    header, rows = _parse_table(out)
    assert "Self NEURON" in header and "Self NEURON %" in header
    col = {h: k for k, h in enumerate(header)}
    got = {r[0]: r for r in rows}
    assert [r[0] for r in rows] == ["aten::mul", "aten::add", "aten::rsqrt", "aten::mean"]
    for name, (calls, self_cpu, self_dev, pct) in WALKTHROUGH_NAIVE.items():
        r = got[name]
        assert int(r[col["# of Calls"]]) == calls
        assert _us(r[col["Self CPU"]]) == pytest.approx(self_cpu, abs=0.05)
        assert _us(r[col["Self NEURON"]]) == pytest.approx(self_dev, abs=1.0)  # printed with 3 decimals in ms
        assert round(float(r[col["Self NEURON %"]].rstrip("%")), 1) == pytest.approx(pct, abs=0.051)
    assert "Self NEURON time total: 2.355ms" in out
    assert "Device time from: Neuron system trace (nc_exec_running via flow_id" in out
    assert "aten::mul                                    " not in out  # one row per name
    assert re.search(r"aten::mul\s.*\s1\.165ms\s+49\.45%", out)


@pytest.mark.parametrize(
    "variant,name,self_cpu,self_dev",
    [("fused", "aten::_fused_rms_norm", 47.6, 403.3), ("compiled", "Torch-Compiled Region: 0/0", 98.4, 375.5)],
)
def test_summary_cli_fused_and_compiled(capsys: pytest.CaptureFixture, variant: str, name: str, self_cpu: float, self_dev: float) -> None:
    assert main(["summary", str(SAMPLES / variant), "--limit", "1"]) == 0
    out = capsys.readouterr().out
    header, rows = _parse_table(out)
    col = {h: k for k, h in enumerate(header)}
    assert rows[0][0] == name
    assert int(rows[0][col["# of Calls"]]) == 1
    assert _us(rows[0][col["Self CPU"]]) == pytest.approx(self_cpu, abs=0.05)
    assert _us(rows[0][col["Self NEURON"]]) == pytest.approx(self_dev, abs=0.05)
    assert rows[0][col["Self NEURON %"]] == "100.00%"


def test_key_averages_directly() -> None:
    profile = load_profile(SAMPLES / "naive")
    assert profile.meta.backend == "NEURON" and profile.meta.device_kind == "neuron"
    table = key_averages(profile)
    assert table.has_device and table.backend == "NEURON"
    for name, (calls, self_cpu, self_dev, pct) in WALKTHROUGH_NAIVE.items():
        k = table.find(name)
        assert int(table.count[k]) == calls
        assert table.self_cpu_time_total[k] == pytest.approx(self_cpu, abs=1e-6)
        assert table.self_device_time_total[k] == pytest.approx(self_dev, abs=1e-6)
        assert round(float(table.self_device_percent[k]), 1) == pct
    assert table.sum_self_device == pytest.approx(2354.9)
    assert table.device_time_source.startswith("Neuron system trace (nc_exec_running via flow_id")
    # the op's parent gets device_time_total (torch semantics), not Self NEURON
    step = table.find("ProfilerStep*")
    assert table.self_device_time_total[step] == 0
    assert table.device_time_total[step] == pytest.approx(2354.9)
    # CPU-side rows of the scalar copy have no device time (dmem_buf_copyin is not an execution)
    assert table.self_device_time_total[table.find("aten::copy_")] == 0
    # system-trace rows never become table rows
    assert table.find("nc_exec_running") == -1 and table.find("nrta_execute_schedule") == -1
    # trace.json's PrivateUse1 rows follow torch's rules: the dispatch row named like its op is merged into it
    # (one call each), the driver rows (device interaction) are CPU rows of their own, without device time
    assert table.self_device_time_total[table.find("aten::mul.Tensor")] == 0
    assert int(table.count[table.find("aten::mul.Tensor")]) == 3


def test_samples_are_labelled_synthetic() -> None:
    for variant in ("naive", "fused", "compiled"):
        manifest = json.loads((SAMPLES / variant / "trntui.json").read_text())
        assert manifest["synthetic"] is True
        assert "not real hardware" in manifest["note"]
        runs = find_runs(SAMPLES / variant)
        assert len(runs) == 1 and runs[0].manifest["synthetic"] is True
        assert runs[0].name == f"rank0 (i-0a1b2c3d4e5f60718_pid_{_generator().PIDS[variant]})"


def test_committed_samples_match_the_generator(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    gen = _generator()
    gen.main(["--out", str(tmp_path)])
    for variant in gen.VARIANTS:
        for new in sorted((tmp_path / variant).rglob("*")):
            if new.is_dir():
                continue
            old = SAMPLES / variant / new.relative_to(tmp_path / variant)
            assert old.is_file(), f"{old} missing: run python scripts/make_neuron_samples.py"
            if new.suffix == ".parquet":
                assert pq.read_table(old).equals(pq.read_table(new)), old
            else:
                assert old.read_bytes() == new.read_bytes(), old
