"""`--window` past the end of a trace is a clear error, exit 2, like `--steps` out of range (issue 26 item 8).

Every command that takes `--window` (summary; open, whose app shows the same line on its error screen) goes
through `select.parse_window`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli
from trntui.analysis.select import parse_window, select_events
from trntui.errors import TrntuiError
from trntui.session import find_runs, load_run

NAIVE = Path(__file__).resolve().parents[1] / "sample_profiles" / "cpu" / "naive"


@pytest.mark.parametrize("window", ["900ms:950ms", "900ms:", "1s:2s"])
def test_summary_window_past_the_end_is_one_line_exit_2(window, capsys) -> None:
    rc, out, err = run_cli(capsys, "summary", str(NAIVE), "--window", window)
    assert rc == 2, (out, err)
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"trntui: error: --window {window}: starts after the end of this trace"), lines[0]
    assert "its timeline spans 0 to " in lines[0]


def test_steps_out_of_range_is_the_same_kind_of_error(capsys) -> None:
    rc, out, err = run_cli(capsys, "summary", str(NAIVE), "--steps", "99")
    assert rc == 2 and "no such step" in err


def test_window_inside_the_trace_still_selects(capsys) -> None:
    rc, out, err = run_cli(capsys, "summary", str(NAIVE), "--window", "0:1s")
    assert rc == 0, err
    assert "aten::rsqrt" in out


def test_parse_window_is_what_the_app_uses() -> None:
    profile = load_run(find_runs(NAIVE)[0])
    with pytest.raises(TrntuiError, match="starts after the end of this trace"):
        parse_window("900ms:950ms", profile)
    with pytest.raises(TrntuiError, match="starts after the end"):
        select_events(profile, window_spec="900ms:950ms")
    t0, t1 = parse_window("0:1s", profile)
    assert t1 > t0
