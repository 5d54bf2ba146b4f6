"""The core is usable without the TUI: importing it never imports Textual."""

from __future__ import annotations

import subprocess
import sys


def test_core_does_not_import_textual() -> None:
    code = (
        "import sys\n"
        "import trntui.model, trntui.loaders, trntui.analysis.key_averages, trntui.analysis.chains,"
        " trntui.analysis.links, trntui.report, trntui.cli\n"
        "from trntui.loaders import kineto\n"
        "import pkgutil, importlib, trntui.analysis, trntui.loaders, trntui.capture\n"
        "for pkg in (trntui.analysis, trntui.loaders, trntui.capture, trntui.model):\n"
        "    for m in pkgutil.iter_modules(pkg.__path__):\n"
        "        importlib.import_module(pkg.__name__ + '.' + m.name)\n"
        "bad = [m for m in sys.modules if m == 'textual' or m.startswith('textual.') or m.startswith('trntui.tui')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_summary_path_keeps_heavy_imports_off() -> None:
    """`trntui summary` on a trace must not pay for pandas/pyarrow/textual/torch imports."""
    code = (
        "import sys, io, contextlib, pathlib\n"
        "from trntui.cli import main\n"
        "p = pathlib.Path(sys.argv[1])\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    rc = main(['summary', str(p)])\n"
        "assert rc == 0, rc\n"
        "heavy = [m for m in ('pandas', 'pyarrow', 'textual', 'torch') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    from tests.conftest import CORPUS

    subprocess.run([sys.executable, "-c", code, str(CORPUS / "cuda_simple_add.json.gz")], check=True)
