"""Every process trntui starts: none imports from the current directory, none outlives trntui, and one that dies
says why (trntui/children.py).

The commands run as a user runs them: a script like the `trntui` console script (its own directory first on
`sys.path`, never the current directory), in a process of its own, with a current directory that holds a folder
named `trntui` (the parent of a git clone: an empty one is enough to shadow the package in a child that puts
the current directory first). Signals go to the command's session (started with `start_new_session`), so the
processes left of it are found in the process table by their session id.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.rank_job import REPO, make_job

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc")


@pytest.fixture(scope="module")
def job(corpus_dir: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("job8")
    make_job(corpus_dir, out, ranks=8, slow_rank=3, slow=1.3)
    return out


@pytest.fixture()
def shadowed(tmp_path: Path) -> Path:
    """A current directory holding an empty folder named `trntui`."""
    cwd = tmp_path / "parent-of-a-clone"
    (cwd / "trntui").mkdir(parents=True)
    return cwd


def _entry_script(where: Path) -> Path:
    """A script that runs `trntui` as the console script pip writes does."""
    script = where / "bin" / "trntui"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text("import sys\nfrom trntui.cli import entry\nif __name__ == '__main__':\n    sys.exit(entry())\n")
    return script


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONSAFEPATH", "PYTHONPATH")}
    found = subprocess.run([sys.executable, "-c", "import trntui, sys; sys.exit(0 if trntui.__file__ else 1)"],
                           cwd="/", env=env, capture_output=True)
    if found.returncode != 0:  # trntui is not installed in this interpreter: found through PYTHONPATH, as tests do
        env["PYTHONPATH"] = str(REPO)
    return env


def start(tmp_path: Path, cwd: Path, *argv: str) -> "subprocess.Popen[str]":
    return subprocess.Popen([sys.executable, str(_entry_script(tmp_path)), *argv], cwd=cwd, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def run(tmp_path: Path, cwd: Path, *argv: str, timeout: float = 300) -> tuple[int, str, str]:
    proc = start(tmp_path, cwd, *argv)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        _kill_session(proc.pid)
    return proc.returncode, out, err


def session_processes(sid: int) -> list[tuple[int, str]]:
    """(pid, command line) of the live processes of session `sid` (zombies, which nobody reaps in some
    containers, are dead and not counted)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] not in ("Z", "X"):
            found.append((int(name), cmd[:200]))
    return found


def _kill_session(sid: int) -> None:
    for pid, _ in session_processes(sid):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def left_after(sid: int, within: float = 15.0) -> list[tuple[int, str]]:
    """The processes of session `sid` still alive `within` seconds from now (polled; an empty list as soon as
    there are none)."""
    end = time.monotonic() + within
    while True:
        left = session_processes(sid)
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.1)


def _wait_for(sid: int, count: int, timeout: float = 60.0) -> bool:
    """Wait until session `sid` has `count` live processes (the command and the helpers it started)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if len(session_processes(sid)) >= count:
            return True
        time.sleep(0.01)
    return False


# --- item 26.1: a folder named trntui in the current directory ------------------------------------------------


@pytest.mark.cluster  # worker processes or a Dask cluster
@pytest.mark.parametrize("engine", ["local", "dask"])
def test_ranks_from_a_directory_holding_a_trntui_folder(job: Path, shadowed: Path, tmp_path: Path,
                                                        engine: str) -> None:
    rc, out, err = run(tmp_path, shadowed, "ranks", "--no-cache", "--jobs", "2", "--engine", engine, str(job))
    assert rc == 0, err
    assert "straggler: rank 3" in out
    assert "Traceback" not in err and "ImportError" not in err, err


@pytest.mark.cluster  # worker processes
def test_python_m_trntui_from_a_directory_holding_a_trntui_folder(job: Path, shadowed: Path) -> None:
    """`python -m trntui` puts the current directory first on `sys.path`: from the parent of a clone the folder
    there is imported in place of an editable install unless trntui/__main__.py takes it off again."""
    def run_m(*argv: str) -> "subprocess.CompletedProcess[str]":
        return subprocess.run([sys.executable, "-m", "trntui", *argv], cwd=shadowed, env=_env(), text=True,
                              capture_output=True, timeout=300, start_new_session=True)

    version = run_m("--version")
    assert version.returncode == 0 and version.stdout.startswith("trntui "), version.stderr
    ranks = run_m("ranks", "--no-cache", "--jobs", "2", str(job))
    assert ranks.returncode == 0, ranks.stderr
    assert "straggler: rank 3" in ranks.stdout
    assert "Traceback" not in ranks.stderr and "ImportError" not in ranks.stderr, ranks.stderr


def test_the_apps_loader_process_from_a_directory_holding_a_trntui_folder(corpus_dir: Path, shadowed: Path,
                                                                          tmp_path: Path) -> None:
    """The loader process `trntui open` starts for a run the cache takes (trntui/tui/loader.py) loads it there."""
    from trntui.loaders.protocol import LoadOptions
    from trntui.request import resolve
    from trntui.tui import loader

    trace = corpus_dir / "cuda_sampled_rank0.json.gz"
    options = LoadOptions(cache=True, cache_dir=tmp_path / "cache", cache_min_bytes=0).resolved()
    request = resolve(trace, options=options)
    old = os.getcwd()
    os.chdir(shadowed)
    try:
        proc = loader._start_loader(request)
        assert proc is not None
        out, err = proc.communicate(timeout=120)
    finally:
        os.chdir(old)
    assert proc.returncode == 0, err
    assert loader.ENTRY_WRITTEN in out
    assert "Traceback" not in err, err


# --- a worker that dies says why --------------------------------------------------------------------------------


def _explode(text: str) -> None:
    raise RuntimeError(text)


class _Boom:
    """An item whose unpickling in the worker raises: the worker process dies of it (not the task)."""

    def __reduce__(self):  # noqa: ANN204
        return (_explode, ("the item could not be rebuilt in the worker",))


def _identity(item: object) -> object:
    return item


def _die_of(sig: int) -> None:
    os.kill(os.getpid(), sig)
    time.sleep(5)


def _raise_value_error(item: int) -> int:
    raise ValueError(f"rank {item} is bad")


@pytest.mark.cluster  # worker processes or a Dask cluster
def test_a_worker_that_dies_of_an_exception_says_which(capfd) -> None:
    from trntui.engine import EngineOptions, map_tasks
    from trntui.errors import TrntuiError

    with pytest.raises(TrntuiError) as got:
        map_tasks(_identity, [1, _Boom(), 3], EngineOptions("local", 2))
    text = str(got.value)
    assert "a worker process died while working on item" in text
    assert "exited with status 1: RuntimeError: the item could not be rebuilt in the worker" in text
    assert "out of memory" not in text
    assert "Traceback" not in capfd.readouterr().err  # the worker's traceback is read, not printed


@pytest.mark.cluster  # worker processes or a Dask cluster
def test_a_worker_killed_by_a_signal_names_it_and_guesses_nothing() -> None:
    from trntui.engine import EngineOptions, map_tasks
    from trntui.errors import TrntuiError

    with pytest.raises(TrntuiError) as got:
        map_tasks(_die_of, [signal.SIGSEGV, signal.SIGSEGV], EngineOptions("local", 2))
    assert "was killed by SIGSEGV" in str(got.value)
    assert "out of memory" not in str(got.value)


@pytest.mark.cluster  # worker processes or a Dask cluster
def test_an_exception_a_task_raises_reaches_the_caller_as_itself() -> None:
    from trntui.engine import EngineOptions, map_tasks

    with pytest.raises(ValueError, match="rank 1 is bad"):
        map_tasks(_raise_value_error, [1, 1], EngineOptions("local", 2))


def test_death_reasons_in_the_os_words() -> None:
    from trntui.children import death_reason, last_exception

    tb = ("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n    import y\n"
          "ImportError: cannot import name '__version__' from 'trntui' (unknown location)\n")
    assert last_exception("noise\n" + tb) == "ImportError: cannot import name '__version__' from 'trntui' (unknown location)"
    assert death_reason(1, tb).startswith("exited with status 1: ImportError: cannot import name")
    assert death_reason(-9) == "was killed by SIGKILL"
    assert death_reason(3) == "exited with status 3"


# --- issue 28 class 4: signals ------------------------------------------------------------------------------------


@pytest.mark.cluster  # worker processes or a Dask cluster
@pytest.mark.parametrize("when", ["0.3s", "1.0s", "workers running"])
def test_sigkill_of_ranks_leaves_no_process_of_it(job: Path, tmp_path: Path, when: str) -> None:
    proc = start(tmp_path, tmp_path, "ranks", "--no-cache", "--jobs", "2", str(job))
    try:
        if when.endswith("s"):
            time.sleep(float(when[:-1]))
        else:
            # the command, the resource tracker, the forkserver and two workers
            assert _wait_for(proc.pid, 5), session_processes(proc.pid)
        seen = session_processes(proc.pid)
        proc.kill()
        proc.wait(timeout=30)
        left = left_after(proc.pid)
        assert left == [], f"alive after SIGKILL at {when} (of {len(seen)} seen): {left}"
        out, err = proc.communicate(timeout=30)  # (its pipes closed: nothing holds them any more)
        assert "Traceback" not in err and "leaked" not in err, err
    finally:
        _kill_session(proc.pid)


@pytest.mark.cluster  # worker processes or a Dask cluster
@pytest.mark.parametrize("delay", [0.0, 0.02, 0.05, 0.1, 0.2, 0.3])
def test_ctrl_c_while_the_pool_starts_is_one_line(job: Path, tmp_path: Path, delay: float) -> None:
    """Ctrl-C reaches the whole foreground process group: the command and every helper it is starting (the
    resource tracker, the forkserver, workers). Sent `delay` after the first helper appears (0.2-0.3 s into
    `ranks` on an idle machine): one line, exit 130, no traceback or "Fatal Python error" from any of them."""
    for _ in range(2):
        proc = start(tmp_path, tmp_path, "ranks", "--no-cache", "--jobs", "2", str(job))
        try:
            assert _wait_for(proc.pid, 2), "no helper process started"
            time.sleep(delay)
            os.killpg(proc.pid, signal.SIGINT)
            out, err = proc.communicate(timeout=60)
            assert "Traceback" not in err and "Fatal Python error" not in err and "KeyboardInterrupt" not in err, err
            assert proc.returncode in (130, 0), err  # (0: it had finished)
            if proc.returncode == 130:
                assert err.strip().splitlines() == ["trntui: error: interrupted"], err
            assert left_after(proc.pid) == []
        finally:
            _kill_session(proc.pid)


def test_ctrl_c_before_the_command_runs_is_one_line(monkeypatch, capsys) -> None:
    """Ctrl-C while the command still imports (numpy, its parser), before `main`'s own handler: one line, 130."""
    from trntui import cli

    def interrupted(argv=None):  # noqa: ANN001, ANN202
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "main", interrupted)
    monkeypatch.setattr(sys, "argv", ["trntui", "open", "x"])
    with pytest.raises(SystemExit) as got:
        cli.entry()
    assert got.value.code == 130
    assert capsys.readouterr().err == "trntui: error: interrupted\n"
