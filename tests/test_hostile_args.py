"""Issue 19, item 9: messages. Every bad argument is one line naming it, exit 2, before any work; gates never
call a check they could not make a pass; discovery survives deep trees and says what it could not read.

All through the real CLI (`trntui.cli.main` in-process, or a child process where permissions matter).
"""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from malformed import valid_trace  # noqa: E402
from malformed.cli import CAPTURE_TIMEOUT_S, run_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _one_line(rc: int, out: str, err: str, *, rc_expected: int = 2) -> str:
    """The outcome every bad argument must have: exit 2, nothing on stdout, ONE error line, no traceback."""
    assert "Traceback" not in out + err, err
    assert rc == rc_expected, (rc, out[-500:], err[-2000:])
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("trntui: error: "), err[-2000:]
    assert len(lines[0]) < 400, "a long argument is quoted cut, not in full"
    return lines[0]


@pytest.fixture
def two_runs(tmp_path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_bytes(valid_trace(n_steps=2))
    b.write_bytes(valid_trace(n_steps=3))
    return a, b


@pytest.fixture
def loads(monkeypatch) -> list[str]:
    """Every run the CLI loads (so a test can say: refused before anything was loaded)."""
    import trntui.session as session

    seen: list[str] = []
    real = session.load_run

    def spy(run, *a, **k):
        seen.append(run.name)
        return real(run, *a, **k)

    monkeypatch.setattr(session, "load_run", spy)
    import trntui.compare_runs as runs

    if hasattr(runs, "load_run"):
        monkeypatch.setattr(runs, "load_run", spy)
    return seen


# ------------------------------------------------------------------------------------------------------
# numbers and sizes no command can use
# ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv,names", [
    (["summary", "--memory-budget", "9" * 400], "--memory-budget"),
    (["summary", "--window", "1e400ms:"], "--window"),
    (["summary", "--window", ":1e400"], "--window"),
    (["summary", "--window", "nan:inf"], "--window"),
    (["summary", "--steps", "9" * 400], "--steps"),
    (["summary", "--limit", "9" * 5000], "--limit"),
    (["summary", "--sort", "bogus"], "--sort"),
    (["compare", "--baseline", "9" * 5000], "--baseline"),
    (["compare", "--limit", "nan"], "--limit"),
    (["compare", "--filter", "("], "--filter"),
    (["compare", "--filter", "x" * 5000], "--filter"),
    (["compare", "--fail-if", "(" * 300 + "self_cpu" + ")" * 300 + " > 1"], "--fail-if"),
    (["compare", "--fail-if", " + ".join(["self_cpu"] * 1000) + " > 1"], "--fail-if"),
    (["compare", "--fail-if", "1+" * 1000 + "self_cpu > 1"], "--fail-if"),
    (["compare", "--fail-if", "(" * 40 + "self_cpu" + ")" * 40 + " > 1"], "--fail-if"),
    (["compare", "--fail-if", "self_cpu > " + "9" * 400], "--fail-if"),
    (["compare", "--fail-if", "-" * 300 + "self_cpu > 1"], "--fail-if"),
    (["ranks", "--steps", "1-" + "9" * 5000], "--steps"),
    (["overview", "--steps", "x"], "--steps"),
])
def test_bad_arguments_are_one_line_naming_them_before_any_load(argv, names, two_runs, loads, capsys) -> None:
    """400-digit budgets, `--window 1e400ms:`, 5,000-digit numbers, 300 nested parentheses or 1,000 terms in a
    rule, `--filter "("`: each was "unexpected OverflowError/RecursionError/ValueError", some only after every
    run was loaded. Now argparse refuses them (one line naming the argument, exit 2) and nothing is loaded."""
    paths = [str(p) for p in two_runs] if argv[0] == "compare" else [str(two_runs[0])]
    rc, out, err, caught, _ = run_cli([*argv[:1], *paths, *argv[1:]], capsys)
    line = _one_line(rc, out, err)
    assert names in line, line
    assert not loads, f"refused only after loading {loads}"
    assert not caught, caught


@pytest.mark.parametrize("argv,says", [
    (["summary", "--memory-budget", "9" * 400],
     "argument --memory-budget: bad memory budget '" + "9" * 37 + "...': more than any machine "
     "has (at most 1 EiB)"),
    (["summary", "--window", "1e400ms:"], "argument --window: bad time '1e400ms': too large"),
    (["summary", "--window", "nan:inf"], "argument --window: bad time 'nan': use a number with ns, us, ms or s"),
    (["summary", "--sort", "bogus"], "argument --sort: unknown sort key 'bogus'; use one of: "),
    (["compare", "--baseline", "9" * 5000],
     "argument --baseline: '9999999999999999999999999999999999999...' is too long (5,000 characters)"),
    (["compare", "--baseline", "9" * 50],
     "argument --baseline: '9999999999999999999999999999999999999...': not a run position (1, 2, ...) nor a run name"),
    (["compare", "--fail-if", "(" * 300 + "self_cpu" + ")" * 300 + " > 1"],
     "--fail-if '" + "(" * 37 + "...': 603 terms; a rule has at most 200"),
    (["compare", "--fail-if", "(" * 40 + "self_cpu" + ")" * 40 + " > 1"],
     "--fail-if '" + "(" * 37 + "...': parentheses nested more than 32 deep (position 33)"),
    (["compare", "--fail-if", "1+" * 1000 + "self_cpu > 1"],
     "--fail-if '1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1...': 2,003 terms; a rule has at most 200"),
    (["compare", "--filter", "("], "argument --filter: missing ), unterminated subpattern at position 0"),
    (["summary", "--limit", "nan"], "argument --limit: 'nan' is not a whole number"),
    (["summary", "--convert-timeout", "1e400"],
     "argument --convert-timeout: must be a finite number of seconds more than 0: '1e400'"),
    (["summary", "--convert-timeout", "inf"],
     "argument --convert-timeout: must be a finite number of seconds more than 0: 'inf'"),
    (["profile", "--steps", "9" * 400],
     "argument --steps: '" + "9" * 37 + "...' is too large (at most 18 digits)"),
    (["profile", "--shape", "4x" + "9" * 400],
     "argument --shape: '4x" + "9" * 35 + "...' is not a shape like 4x512 (at most 8 sizes of at most 12 digits)"),
])
def test_bad_argument_messages_say_what_is_wrong(argv, says, two_runs, capsys) -> None:
    paths = {"compare": [str(p) for p in two_runs], "profile": ["rmsnorm", "--device", "cpu"]}.get(argv[0], [str(two_runs[0])])
    rc, out, err, _, _ = run_cli([*argv[:1], *paths, *argv[1:]], capsys)
    line = _one_line(rc, out, err)
    assert line.startswith("trntui: error: " + says), line


def test_a_window_of_nan_is_one_error_not_one_per_run(tmp_path, capsys) -> None:
    d = tmp_path / "job"
    for i in range(3):
        (d / f"r{i}").mkdir(parents=True)
        (d / f"r{i}" / "trace.json").write_bytes(valid_trace(n_steps=2))
    for window in ("nan:inf", "nan:", ":inf", "inf:"):
        rc, out, err, _, _ = run_cli(["summary", "--window", window, str(d)], capsys)
        line = _one_line(rc, out, err)
        assert "argument --window: bad time" in line, line


def test_memory_budget_of_one_byte_says_one_byte(two_runs, capsys) -> None:
    """It used to say "over the memory budget of 0 MiB"."""
    rc, out, err, _, _ = run_cli(["summary", "--no-cache", "--memory-budget", "1", str(two_runs[0])], capsys)
    line = _one_line(rc, out, err)
    assert "over the memory budget of 1 B" in line, line
    assert not re.search(r"budget of 0\b", line)


def test_a_rule_that_overflows_the_parser_is_refused_before_any_run_is_loaded(two_runs, loads, capsys) -> None:
    """A path that does not exist after a bad rule: the rule is the error (it is checked first)."""
    rc, out, err, _, _ = run_cli(["compare", str(two_runs[0]), str(two_runs[0].parent / "missing.json"),
                                  "--fail-if", "(" * 300 + "self_cpu" + ")" * 300 + " > 1"], capsys)
    line = _one_line(rc, out, err)
    assert line.startswith("trntui: error: --fail-if '((((") and "missing.json" not in line, line
    assert not loads


# ------------------------------------------------------------------------------------------------------
# gates that checked nothing, rules that are not a number, filters that match nothing
# ------------------------------------------------------------------------------------------------------
def test_a_rule_evaluating_to_nan_is_not_a_pass(two_runs, capsys) -> None:
    rule = "(self_cpu - self_cpu) / (self_cpu - self_cpu) > 1"  # 0/0 in every run
    rc, out, err, _, _ = run_cli(["compare", *map(str, two_runs), "--no-tui", "--fail-if", rule], capsys)
    assert rc == 2 and "Traceback" not in out + err
    assert "no regression" not in err
    assert re.search(r"rule '.*' is undefined \(nan > 1: not a number", err), err
    assert err.splitlines()[-1] == "trntui: compare: 1 rule(s), 0 check(s): 2 check(s) undefined (not a number): not a pass"


def test_a_gate_that_checked_nothing_is_not_a_pass(corpus_dir, tmp_path, capsys) -> None:
    """Two CPU-only runs and a device-time gate: nothing could be checked; it used to say "no regression",
    exit 0 (a CI gate that passes every build)."""
    cpu = corpus_dir / "cpu_only.json.gz"
    other = tmp_path / "cpu_again.json.gz"
    other.write_bytes(cpu.read_bytes())
    rc, out, err, _, _ = run_cli(["compare", str(cpu), str(other), "--no-tui", "--fail-if",
                                  "device_time > 1.1 * baseline"], capsys)
    assert rc == 2 and "Traceback" not in out + err
    assert "no regression" not in err
    last = err.splitlines()[-1]
    assert last == ("trntui: compare: 1 rule(s), 0 check(s): the gate checked nothing "
                    "(baseline device_time unavailable): not a pass") or (
        last.startswith("trntui: compare: 1 rule(s), 0 check(s): the gate checked nothing (")
        and last.endswith("unavailable): not a pass")), last
    # a gate that did check something still passes
    rc, out, err, _, _ = run_cli(["compare", str(cpu), str(other), "--no-tui", "--fail-if",
                                  "self_cpu > 10 * baseline"], capsys)
    assert rc == 0 and err.splitlines()[-1] == "trntui: compare: 1 rule(s), 1 check(s): no regression", err


def test_filter_that_is_not_a_pattern_is_an_error_not_an_empty_diff(two_runs, capsys) -> None:
    rc, out, err, _, _ = run_cli(["compare", *map(str, two_runs), "--no-tui", "--filter", "("], capsys)
    line = _one_line(rc, out, err)
    assert line.startswith("trntui: error: argument --filter: ") and "missing )" in line, line
    rc, out, err, _, _ = run_cli(["compare", *map(str, two_runs), "--no-tui", "--filter", "aten::(mm|add)"], capsys)
    assert rc == 0 and "aten::mm" in out and "aten::relu" not in out


# ------------------------------------------------------------------------------------------------------
# markdown
# ------------------------------------------------------------------------------------------------------
SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(2)>"


@pytest.mark.parametrize("command", ["summary", "compare"])
def test_markdown_output_escapes_html(command, tmp_path, capsys) -> None:
    a = tmp_path / "a.json"
    a.write_bytes(valid_trace(names=(SCRIPT, IMG, "a&b", "[x](javascript:alert(3))")))
    argv = [command, str(a)] + ([str(a), "--no-tui"] if command == "compare" else []) + ["--format", "markdown"]
    rc, out, err, _, _ = run_cli(argv, capsys)
    assert rc == 0 and "Traceback" not in err, err
    assert "<script" not in out and "<img" not in out and "](javascript" not in out
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    assert "&lt;img src=x onerror=alert(2)&gt;" in out and "a&amp;b" in out


# ------------------------------------------------------------------------------------------------------
# profile: arguments checked before the workload runs
# ------------------------------------------------------------------------------------------------------
MARKER_WORKLOAD = """
    import os, torch

    def make_workload(ctx):
        open(os.environ["TRNTUI_TEST_MARKER"], "w").close()
        return (lambda x: x + 1), (torch.ones(4),)
"""


@pytest.fixture
def marker_workload(tmp_path, monkeypatch) -> tuple[Path, Path]:
    pytest.importorskip("torch")
    wl = tmp_path / "wl.py"
    wl.write_text(textwrap.dedent(MARKER_WORKLOAD))
    marker = tmp_path / "workload-ran"
    monkeypatch.setenv("TRNTUI_TEST_MARKER", str(marker))
    return wl, marker


def _profile(capsys, wl: Path, *extra: str):
    return run_cli(["profile", f"{wl}:make_workload", "--device", "cpu", "--no-tui", "--steps", "1", *extra], capsys,
                   timeout=CAPTURE_TIMEOUT_S)  # the capture child imports torch: a hang bound for a loaded machine


def test_profile_sort_bogus_fails_before_the_workload(marker_workload, tmp_path, capsys) -> None:
    wl, marker = marker_workload
    rc, out, err, _, _ = _profile(capsys, wl, "--sort", "bogus", "--out", str(tmp_path / "out"))
    line = _one_line(rc, out, err)
    assert "argument --sort" in line and "bogus" in line
    assert not marker.exists() and not (tmp_path / "out").exists()


def _unwritable_dir(tmp_path: Path) -> Path:
    if os.geteuid() == 0:  # root writes through permission bits: /proc cannot hold a directory for anyone
        return Path("/proc")
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    return d


def test_profile_out_unwritable_fails_before_the_workload(marker_workload, tmp_path, capsys) -> None:
    wl, marker = marker_workload
    out_dir = _unwritable_dir(tmp_path) / "capture"
    rc, out, err, _, _ = _profile(capsys, wl, "--out", str(out_dir))
    line = _one_line(rc, out, err)
    assert line.startswith(f"trntui: error: --out {out_dir}: cannot write in "), line
    assert not marker.exists(), "the workload ran before --out was checked"


def test_profile_out_on_a_full_disk_fails_before_the_workload(marker_workload, tmp_path, monkeypatch, capsys) -> None:
    import collections
    import shutil

    wl, marker = marker_workload
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(1 << 30, (1 << 30) - (1 << 20), 1 << 20))
    rc, out, err, _, _ = _profile(capsys, wl, "--out", str(tmp_path / "capture"))
    line = _one_line(rc, out, err)
    assert re.search(r"--out .*capture: only 1 MiB free in .* \(a capture needs at least 64 MiB\)", line), line
    assert not marker.exists()


# ------------------------------------------------------------------------------------------------------
# discovery: deep trees, unreadable directories
# ------------------------------------------------------------------------------------------------------
def _deep_tree(root: Path, levels: int) -> list[str]:
    """`root/d/d/d/...` `levels` deep (made and later removed level by level: shutil.rmtree itself recurses)."""
    paths = []
    p = str(root)
    for _ in range(levels):
        p = os.path.join(p, "d")
        os.mkdir(p)
        paths.append(p)
    return paths


@pytest.mark.parametrize("command", ["summary", "info", "compare", "overview"])
def test_a_1500_level_directory_tree(command, tmp_path, capsys) -> None:
    root = tmp_path / "deep"
    root.mkdir()
    dirs = _deep_tree(root, 1500)
    try:
        (Path(dirs[999]) / "trace.json").write_bytes(valid_trace())  # far below what discovery searches
        argv = [command, str(root)] + ([str(root), "--no-tui"] if command == "compare" else [])
        rc, out, err, caught, _ = run_cli(argv, capsys)
        if command == "info":
            assert rc in (0, 2) and "Traceback" not in out + err and "Recursion" not in out + err, err
        else:
            line = _one_line(rc, out, err)
            assert "no trace files found" in line and "Recursion" not in line, line
        (root / "trace.json").write_bytes(valid_trace())  # a trace at the top of the same tree is found
        rc, out, err, caught, _ = run_cli(argv, capsys)
        assert rc == 0 and "Traceback" not in out + err and "Recursion" not in out + err, err
    finally:
        for p in reversed(dirs):
            for f in Path(p).iterdir():
                f.unlink()
            os.rmdir(p)


def _drop_read_override() -> None:
    """In the child: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the bounding set, so root's next exec
    obeys permission bits (as every user does)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _run_unprivileged(*argv: str) -> tuple[int, str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), TRNTUI_NO_PROGRESS="1", TRNTUI_NO_CACHE="1")
    kw = {"preexec_fn": _drop_read_override} if os.geteuid() == 0 else {}
    try:
        proc = subprocess.run([sys.executable, "-m", "trntui.cli", *argv], env=env, capture_output=True, text=True,
                              timeout=120, **kw)
    except subprocess.SubprocessError as exc:
        pytest.skip(f"cannot start a child without read override here: {exc}")
    return proc.returncode, proc.stdout, proc.stderr


def test_unreadable_directories_are_reported(tmp_path) -> None:
    d = tmp_path / "prof"
    (d / "run_a").mkdir(parents=True)
    (d / "run_a" / "trace.json").write_bytes(valid_trace())
    locked = d / "locked"
    locked.mkdir()
    (locked / "trace.json").write_bytes(valid_trace())
    only_locked = tmp_path / "only"
    (only_locked / "locked").mkdir(parents=True)
    (only_locked / "locked" / "trace.json").write_bytes(valid_trace())
    for p in (locked, only_locked / "locked"):
        p.chmod(0)
    try:
        probe = subprocess.run([sys.executable, "-c", f"import os; os.listdir({str(locked)!r})"],
                               preexec_fn=_drop_read_override if os.geteuid() == 0 else None, capture_output=True)
        if probe.returncode == 0:
            pytest.skip("permission bits are not enforced for this user here")
        # nothing readable: the error says why, not "no trace files found"
        rc, out, err = _run_unprivileged("summary", str(only_locked))
        line = _one_line(rc, out, err)
        assert "could not be read (permission denied" in line and "locked" in line, line
        rc, out, err = _run_unprivileged("summary", str(only_locked / "locked"))
        line = _one_line(rc, out, err)
        assert "cannot read this directory (permission denied)" in line, line
        # runs found beside an unreadable directory: shown, and one warning names what was not searched
        (d / "run_b").mkdir()
        (d / "run_b" / "trace.json").write_bytes(valid_trace(n_steps=2))
        for argv in (["summary", str(d)], ["compare", "--no-tui", str(d)]):
            rc, out, err = _run_unprivileged(*argv)
            assert rc == 0 and "Traceback" not in err and "run_a" in out and "run_b" in out, err
            assert err == (f"trntui: warning: {d}: 1 directory could not be read (permission denied; not searched): "
                           "locked\n"), err
        # info lists what it could not search
        rc, out, err = _run_unprivileged("info", str(d))
        assert rc == 0 and "Traceback" not in err, err
        assert "unreadable: locked (permission denied; not searched)" in out, out
        rc, out, err = _run_unprivileged("info", "--format", "json", str(d))
        import json

        assert json.loads(out)["unreadable"] == ["locked"]
    finally:
        for p in (locked, only_locked / "locked"):
            p.chmod(0o755)
