"""`trntui info` as a capture doctor (issue 27): each capture problem of Neuron Explorer's troubleshooting and
profile-artifacts pages is one line saying what is wrong and what to do, exit 1; a device export of a newer
schema MAJOR with a required field renamed loads by field name and says which field it could not find.

Captures are laid out with empty or tiny stand-in files (the formats are not parsed); the 5 GB NTFF is a sparse
file (nothing is written).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.neuron_device_samples import generator

PID = "i-0b1ea78ca2865fd32_pid_210229"


def _capture(root: Path, files: dict[str, bytes | int]) -> Path:
    """`root/<instance>_pid_<pid>/` with the given files (bytes: contents; int: a sparse file of that size)."""
    d = root / PID
    d.mkdir(parents=True)
    for name, content in files.items():
        p = d / name
        if isinstance(content, int):
            with open(p, "wb") as fh:
                fh.truncate(content)
        else:
            p.write_bytes(content)
    return d


def _problems(out: str) -> list[str]:
    return [line.strip() for line in out.splitlines() if line.strip().startswith("problem: ") and "Capture" not in line]


def _one(capsys, root: Path, needle: str) -> str:
    rc, out, err = run_cli(capsys, "info", str(root))
    assert rc == 1, (out, err)
    assert "Capture problems" in out
    hits = [p for p in out.split("Capture problems")[1].splitlines() if needle in p]
    assert len(hits) == 1, out
    rc, js, _ = run_cli(capsys, "info", str(root), "--format", "json")
    doc = json.loads(js)
    assert rc == 1 and any(needle in p["problem"] and p["blocking"] for p in doc["capture_problems"])
    return hits[0]


def test_ntff_version_unsupported(tmp_path: Path, capsys) -> None:
    _capture(tmp_path, {"ntrace.pb": b"x", "trace_info.pb": b"x", "395760075800974_instid_0_vnc_0.ntff": b"x" * 64,
                        "neff_395760075800974.neff": b"x",
                        "view.log": b'ERRO[0000] Failed to load profile session error="NTFF version 4 is not supported '
                                    b'in this version of the tool (supported: 1 - 3). Please upgrade aws-neuronx-tools."\n'})
    line = _one(capsys, tmp_path, "NTFF version 4 is not supported")
    assert "view.log" in line and "(supported: 1 - 3)" in line and "upgrade aws-neuronx-tools" in line


def test_neff_ntff_hash_mismatch(tmp_path: Path, capsys) -> None:
    _capture(tmp_path, {"ntrace.pb": b"x", "trace_info.pb": b"x", "395760075800974_instid_0_vnc_0.ntff": b"x" * 64,
                        "neff_111111111111111.neff": b"x"})
    line = _one(capsys, tmp_path, "NEFF/NTFF hash mismatch")
    assert "395760075800974" in line and "ERROR_PROCESS_INCOMPLETE" in line and "recapture" in line


def test_error_process_incomplete_in_a_log(tmp_path: Path, capsys) -> None:
    _capture(tmp_path, {"ntrace.pb": b"x", "trace_info.pb": b"x", "1_vnc_0.ntff": b"x", "neff_1.neff": b"x",
                        "explorer.txt": b"status: ERROR_PROCESS_INCOMPLETE\n"})
    line = _one(capsys, tmp_path, "ERROR_PROCESS_INCOMPLETE: Explorer stopped")
    assert "explorer.txt" in line and "hashes" in line


def test_zero_byte_ntffs(tmp_path: Path, capsys) -> None:
    _capture(tmp_path, {"ntrace.pb": b"x", "trace_info.pb": b"x", "profile_nc_0_session_0.ntff": b"",
                        "profile_nc_1_session_0.ntff": b""})
    line = _one(capsys, tmp_path, "every .ntff is empty (0 bytes")
    assert "warm the model up" in line and "NEURON_RT_NUM_CORES" in line


def test_device_only_profile_as_a_directory(tmp_path: Path, capsys) -> None:
    _capture(tmp_path, {"395760075800974_instid_0_vnc_0.ntff": b"x" * 64, "neff_395760075800974.neff": b"x"})
    line = _one(capsys, tmp_path, "device-only profile (NEFF + NTFF")
    assert "neuron-explorer view -n neff_395760075800974.neff -s 395760075800974_instid_0_vnc_0.ntff" in line


@pytest.mark.parametrize("present, missing", [("ntrace.pb", "trace_info.pb"), ("trace_info.pb", "ntrace.pb")])
def test_missing_trace_info_or_ntrace(tmp_path: Path, capsys, present: str, missing: str) -> None:
    _capture(tmp_path, {present: b"x" * 16, "trace.json": b'{"traceEvents": []}'})
    line = _one(capsys, tmp_path, f"{present} without {missing}")
    assert f"copy {missing}" in line


def test_ntff_over_5_gb(tmp_path: Path, capsys) -> None:
    d = _capture(tmp_path, {"ntrace.pb": b"x", "trace_info.pb": b"x", "neff_7.neff": b"x", "7_vnc_0.ntff": 5 * 10**9 + 1})
    assert (d / "7_vnc_0.ntff").stat().st_size == 5 * 10**9 + 1
    assert os.stat(d / "7_vnc_0.ntff").st_blocks * 512 < 10**6  # sparse: nothing was written
    line = _one(capsys, tmp_path, "over the 5 GB Neuron Explorer can process")
    assert "7_vnc_0.ntff" in line and "5.0 GB" in line and "fewer NeuronCores" in line


def test_a_good_capture_has_no_capture_problems(tmp_path: Path, capsys) -> None:
    _capture(tmp_path, {"ntrace.pb": b"x", "trace_info.pb": b"x", "neff_7.neff": b"x", "7_vnc_0.ntff": b"x" * 64,
                        "trace.json": b'{"traceEvents": []}'})
    rc, out, err = run_cli(capsys, "info", str(tmp_path))
    assert rc == 0, err
    assert "Capture problems" not in out


def test_newer_major_schema_with_a_renamed_required_field(tmp_path: Path, capsys) -> None:
    pdir = generator().write_variant(tmp_path, "fused", rename={"Instruction": {"engine": "engine_name"}},
                                     version="12.0.1")
    rc, out, err = run_cli(capsys, "info", str(tmp_path / "fused"))
    assert rc == 0 and err == ""
    line = next(x for x in out.splitlines() if "required field" in x)
    assert line.strip().startswith("schema: Instruction: required field 'engine' (the file has 'engine_name': renamed?)")
    assert "not found in profile_schema_version 12.0.1" in line
    assert "problem:" not in out
    # the device view loads what it can by field name and says which field it could not find
    rc, out, err = run_cli(capsys, "device", str(pdir))
    assert rc == 0 and err == "" and "Traceback" not in out
    assert "Note: Instruction: required field 'engine' (the file has 'engine_name': renamed?) not found" in out
    assert "a newer MAJOR version than the 7.4.0" in out
    assert "DMA" in out and "Verdict:" in out  # the rest of the export is shown
