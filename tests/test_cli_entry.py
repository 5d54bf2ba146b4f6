"""The `trntui` program itself (the console script pyproject.toml declares, `python -m trntui`, `python -m
trntui.cli`), run as a user runs it, in a child process: it prints what `trntui.cli.main` prints, with its exit
code, also when the reader goes away early (`| head -1`), when the output cannot be written (a full disk), on an
error; a command that only prints ends without the interpreter's teardown (trntui/cli.py `entry`), but still runs
what was registered to run at exit. And the CLI's numpy has no BLAS worker threads (tests/test_cli_startup.py
checks the setting itself; this checks the command line, whose argument checks can import numpy)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CORPUS, REPO, run_cli

SMALL = CORPUS / "cuda_simple_add.json.gz"
BIG_OUTPUT = CORPUS / "mtia_inference.json.gz"
"""`summary --limit -1 --group-by-input-shapes` of it prints ~0.5 MB: more than a pipe holds."""


def _console_script() -> str:
    """What pip writes for the `trntui` entry of [project.scripts] (module:function), as a `python -c` program."""
    text = (REPO / "pyproject.toml").read_text()
    m = re.search(r'^\[project\.scripts\]\s*\ntrntui\s*=\s*"([\w.]+):(\w+)"', text, re.M)
    assert m, "pyproject.toml declares no `trntui` console script"
    module, func = m.groups()
    return f"import sys\nfrom {module} import {func}\nsys.argv[0] = 'trntui'\nsys.exit({func}())\n"


PROGRAMS = {
    "console script": ["-c", _console_script()],
    "python -m trntui": ["-m", "trntui"],
    "python -m trntui.cli": ["-m", "trntui.cli"],
}


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), TRNTUI_NO_PROGRESS="1")
    env.pop("TRNTUI_DEBUG", None)
    return env


def _run(program: str, *argv: str, **kw) -> subprocess.CompletedProcess:  # type: ignore[no-untyped-def]
    return subprocess.run([sys.executable, *PROGRAMS[program], *argv], env=_env(), capture_output=True,
                          timeout=300, **kw)


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_the_program_prints_what_main_prints_and_exits_0(program: str, capsys) -> None:
    argv = ["summary", str(SMALL), "--no-cache", "--limit", "-1"]
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 0 and out.count("\n") > 5
    proc = _run(program, *argv)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == out
    assert proc.stderr == b""


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_an_error_is_one_line_and_exit_2(program: str, tmp_path: Path) -> None:
    missing = tmp_path / "no_such_trace.json"
    proc = _run(program, "summary", str(missing))
    assert proc.returncode == 2
    assert proc.stdout == b""
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("trntui: error:") and "no_such_trace.json" in lines[0]
    usage = _run(program, "summary")  # argparse's own exit
    assert usage.returncode == 2 and b"required" in usage.stderr


def test_a_large_output_to_a_file_is_complete(tmp_path: Path, capsys) -> None:
    """Everything is flushed before the process ends early: a file gets every byte `main` prints."""
    argv = ["summary", str(BIG_OUTPUT), "--no-cache", "--limit", "-1", "--group-by-input-shapes"]
    rc, expected, _ = run_cli(capsys, *argv)
    assert rc == 0 and len(expected) > 100_000
    target = tmp_path / "out.txt"
    with open(target, "wb") as f:
        proc = subprocess.run([sys.executable, *PROGRAMS["console script"], *argv], env=_env(), stdout=f,
                              stderr=subprocess.PIPE, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert target.read_text() == expected


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_a_reader_that_goes_away_is_not_an_error(program: str) -> None:
    """`trntui summary ... | head -1`: the first line arrives, then the pipe closes under the ~0.5 MB table: exit
    0, nothing on stderr (no 'Exception ignored', no traceback)."""
    proc = subprocess.Popen([sys.executable, *PROGRAMS[program], "summary", str(BIG_OUTPUT), "--no-cache",
                             "--limit", "-1", "--group-by-input-shapes"], env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 0, err
    assert first.startswith(b"---")
    assert err == b""


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_output_that_cannot_be_written_is_exit_2() -> None:
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([sys.executable, *PROGRAMS["console script"], "summary", str(SMALL), "--no-cache"],
                              env=_env(), stdout=full, stderr=subprocess.PIPE, timeout=300)
    assert proc.returncode == 2
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("trntui: error:") and "No space left" in lines[0], lines


def test_what_is_registered_to_run_at_exit_still_runs(tmp_path: Path) -> None:
    """The early end skips the interpreter's teardown, not the atexit callbacks (libraries clean up there)."""
    flag = tmp_path / "ran"
    code = (
        "import atexit, sys\n"
        f"atexit.register(lambda: open({str(flag)!r}, 'w').write('ran'))\n"
        "from trntui.cli import entry\n"
        f"sys.argv = ['trntui', 'summary', {str(SMALL)!r}, '--no-cache', '--limit', '3']\n"
        "entry()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert b"Self CPU" in proc.stdout
    assert flag.read_text() == "ran"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_the_cli_imports_numpy_without_blas_worker_threads() -> None:
    """`--sort`'s default is checked against key_averages' sort keys while the arguments are parsed, which imports
    numpy: the CLI imports it with one BLAS thread before that (a 2-core box would otherwise start OpenBLAS's
    spinning worker on the core the forked decoder needs)."""
    code = (
        "import io, os, sys, contextlib\n"
        "from trntui.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    rc = main(['summary', {str(SMALL)!r}, '--no-cache'])\n"
        "print(rc, 'numpy' in sys.modules, len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'))\n"
    )
    env = {k: v for k, v in _env().items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "True", "1", "None"]
