"""Issue 19, item 6: nothing raw reaches a terminal, whatever the output encoding.

A directory whose name holds the byte 0x9B (the 8-bit CSI; Python sees it as the surrogate U+DC9B and would
write the raw byte back), names with U+061C, U+2028, U+2029 and C1 characters, beside other runs: `summary`,
`compare` and `info` print them visibly escaped, and a strict UTF-8 or ASCII stdout ends in complete output,
not "unexpected UnicodeEncodeError" after part of it. Real child processes, so the bytes checked are the bytes
a terminal would get.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from malformed import valid_trace  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]")
"""What must never reach a terminal (newline and tab are the output's own layout)."""

DIR_NAMES = {
    "csi_byte": os.fsdecode(b"run_\x9b31m_csi"),  # a raw 0x9B byte in the directory name
    "bidi": "run_\u061c_alm",
    "line_sep": "run_\u2028_ls",
    "para_sep": "run_\u2029_ps",
    "plain": "run_plain",
}
OP_NAMES = ("aten::mm\u2028x", "c1\x9b31m\u0085op", "bidi\u061c\u202eop")


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("names")
    for i, name in enumerate(DIR_NAMES.values()):
        d = root / name
        d.mkdir()
        (d / "trace.json").write_bytes(valid_trace(n_steps=2 + i % 2, names=OP_NAMES))
    return root


def _run(encoding: str, *argv: str) -> tuple[int, bytes, bytes]:
    env = dict(os.environ, PYTHONPATH=str(REPO), TRNTUI_NO_PROGRESS="1", TRNTUI_NO_CACHE="1",
               PYTHONIOENCODING=encoding, LC_ALL="C.UTF-8" if encoding.startswith("utf") else "C")
    proc = subprocess.run([sys.executable, "-m", "trntui.cli", *argv], env=env, capture_output=True, timeout=180)
    return proc.returncode, proc.stdout, proc.stderr


COMMANDS = {
    "summary": lambda d: ["summary", str(d)],
    "summary_markdown": lambda d: ["summary", "--format", "markdown", str(d)],
    "compare": lambda d: ["compare", "--no-tui", str(d)],
    "compare_csv": lambda d: ["compare", "--format", "csv", str(d)],
    "info": lambda d: ["info", str(d)],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_names_reach_stdout_escaped_in_any_encoding(command, runs_dir) -> None:
    argv = COMMANDS[command](runs_dir)
    results = {}
    for encoding in ("utf-8:strict", "ascii:strict", "latin-1:strict"):
        rc, out, err = _run(encoding, *argv)
        assert rc == 0, (encoding, rc, err.decode(errors="backslashreplace")[-2000:])
        assert b"Traceback" not in err and b"UnicodeEncodeError" not in err + out, err[-2000:]
        assert err == b"", err[-2000:]
        if encoding.startswith("ascii"):
            assert max(out) < 0x80, "an ASCII stdout got bytes it cannot hold"
        text = out.decode(encoding.split(":")[0])  # strict: a raw 0x9B (not UTF-8) would fail here
        raw = RAW.findall(text)
        assert not raw, f"raw characters reached stdout ({encoding}): {sorted(set(map(ascii, raw)))}"
        results[encoding] = text
    # complete output in every encoding (not cut at the first name it could not encode)
    counts = {enc: len(t.splitlines()) for enc, t in results.items()}
    assert len(set(counts.values())) == 1, counts
    utf8 = results["utf-8:strict"]
    if command != "compare_csv":  # every run is named, the 0x9B byte shown as text
        assert "run_\\x9b31m_csi" in utf8 and "run_\\u061c_alm" in utf8 and "run_\\u2028_ls" in utf8, utf8[:3000]
    if command.startswith(("summary", "compare")):
        assert "aten::mm\\u2028x" in utf8 and "c1\\x9b31m\\x85op" in utf8, utf8[:3000]


def test_an_error_naming_a_raw_directory_is_escaped_too(tmp_path) -> None:
    bad = tmp_path / os.fsdecode(b"empty_\x9b\xff_dir\xe2\x80\xa8")
    bad.mkdir()
    for encoding in ("utf-8:strict", "ascii:strict"):
        rc, out, err = _run(encoding, "summary", str(bad))
        assert rc == 2 and out == b""
        text = err.decode(encoding.split(":")[0])
        lines = text.splitlines()
        assert len(lines) == 1 and lines[0].startswith("trntui: error: "), text
        assert "empty_\\x9b\\xff_dir" in lines[0] and not RAW.findall(text), ascii(text)
