"""`python -m trntui`: the `trntui` program (trntui/cli.py `entry`).

`python -m` puts the current directory first on `sys.path`, which the `trntui` console script does not. From the
parent of a clone (a current directory holding a folder named `trntui`, an empty one is enough) that folder is
then imported as a namespace package in place of an editable install (whose finder comes after the path), and
`from trntui import __version__` fails. This file is the real package's own, so when `trntui` came without a
file, the current directory leaves `sys.path` (as for the console script, and for the processes trntui starts,
which copy this `sys.path`) and the package is imported again.
"""

import os
import sys


def _unshadow() -> None:
    if getattr(sys.modules.get("trntui"), "__file__", None) is not None:
        return
    cwd = os.path.abspath(os.getcwd())
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != cwd]
    for name in [m for m in sys.modules if m == "trntui" or m.startswith("trntui.")]:
        del sys.modules[name]


_unshadow()

from trntui.cli import entry  # noqa: E402 - after the current directory left sys.path

entry()
