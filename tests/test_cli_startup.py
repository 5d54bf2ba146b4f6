"""The CLI's numpy runs with one BLAS thread (OpenBLAS's start-up spin would take the core the forked decoder
needs), without changing the environment that processes trntui starts see, and never over a user's choice."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = (
    "import os; from trntui import settings; settings.numpy_with_one_blas_thread(); import numpy; "
    "print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'))"
)


def _probe(env: dict[str, str]) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return out.stdout.split()


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_numpy_has_no_blas_worker_threads_and_the_environment_is_untouched() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    threads, value = _probe(env)
    assert threads == "1"  # the interpreter's own thread only
    assert value == "None"  # a workload or worker started later gets the user's environment


def test_a_users_blas_setting_is_kept() -> None:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2")
    assert _probe(env)[1] == "2"


HELD = (
    "import os, sys; from trntui import settings; settings.hold_one_blas_thread(); "
    "held = os.environ.get('OPENBLAS_NUM_THREADS'); import trntui.session; "
    "early = 'numpy' in sys.modules; settings.numpy_with_one_blas_thread(); "
    "print(held, early, len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'))"
)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_the_cli_holds_one_blas_thread_until_numpy_is_imported_then_lets_go() -> None:
    """The CLI no longer imports numpy first (a load begins its scans before the import, early.py): it holds
    OPENBLAS_NUM_THREADS=1 until the import, finding runs imports no numpy, and the variable goes with the import."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", HELD], env=env, capture_output=True, text=True, check=True)
    held, early, threads, after = out.stdout.split()
    assert held == "1" and early == "False"
    assert threads == "1" and after == "None"
    env["OPENBLAS_NUM_THREADS"] = "3"  # the user's choice: never held, never removed
    out = subprocess.run([sys.executable, "-c", HELD], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split()[0] == "3" and out.stdout.split()[3] == "3"



LIBRARY = (
    "import os, sys\n"
    "seen = []\n"
    "class Watch:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'numpy' and not seen:\n"
    "            seen.append(os.environ.get('OPENBLAS_NUM_THREADS'))\n"
    "        return None\n"
    "sys.meta_path.insert(0, Watch())\n"
    "from pathlib import Path\n"
    "from trntui.session import find_runs, load_run\n"
    "(run,) = find_runs(Path(sys.argv[1]))\n"
    "load_run(run, cache=False)\n"
    "print(seen[0], os.environ.get('OPENBLAS_NUM_THREADS'))\n"
)


def test_a_library_load_leaves_numpy_its_own_blas_threads() -> None:
    """Only the CLI holds one BLAS thread: a notebook that loads a run gets numpy imported without the variable
    (its BLAS keeps its threads for the notebook's own work), and the environment is left as it was."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    trace = Path(__file__).parent / "data" / "kineto" / "cuda_simple_add.json.gz"
    out = subprocess.run([sys.executable, "-c", LIBRARY, str(trace)], env=env, capture_output=True, text=True,
                         check=True)
    at_import, after = out.stdout.split()
    assert at_import == "None" and after == "None"
