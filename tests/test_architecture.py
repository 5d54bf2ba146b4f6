"""The core is usable without the TUI: importing it never imports Textual."""

from __future__ import annotations

import subprocess
import sys


def test_core_does_not_import_textual() -> None:
    code = (
        "import sys\n"
        "import trntui.model, trntui.loaders, trntui.analysis.key_averages, trntui.analysis.chains,"
        " trntui.analysis.links, trntui.report.summary, trntui.cli\n"
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


def test_repository_is_self_contained() -> None:
    """A fresh clone tests itself: no test, bench or package file reads from outside the repository (the trace
    corpus is vendored in tests/data/, the reference notes in docs/reference/)."""
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    outside = re.compile(r"""["'/]\.\.["'/]\s*/?\s*["']?shared|\bshared["']?\s*/\s*["']?(corpus|docs|bench)|parents\[\d\]\s*\.parent|REPO\.parent|parent\.parent\s*/""")
    hits = []
    for top in ("trntui", "tests", "bench", "scripts", "fuzz", ".ci"):
        for path in sorted((repo / top).rglob("*")):
            if path.suffix not in (".py", ".toml", ".cfg", "") or not path.is_file() or "__pycache__" in path.parts:
                continue
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if outside.search(line) and path.name != "test_architecture.py":
                    hits.append(f"{path.relative_to(repo)}:{n}: {line.strip()}")
    assert not hits, "reads outside the repository:\n" + "\n".join(hits)
    assert (repo / "tests" / "data" / "kineto" / "LICENSE-HTA-MIT.txt").is_file()


def test_cited_reference_notes_are_in_docs() -> None:
    """Every reference note a docstring or doc cites by file name (e.g. `neuron-formats.md §6`) is in docs/."""
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    cited = re.compile(r"\b([a-z][a-z0-9-]+)\.md\b")
    docs = {p.name for p in (repo / "docs").rglob("*.md")}
    known = docs | {p.name for p in repo.glob("*.md")} | {"README.md", "RESULTS.md", "CHANGELOG.md"}
    missing = set()
    sources = [p for top in ("trntui", "tests", "bench", "scripts") for p in (repo / top).rglob("*.py")]
    sources += list((repo / "docs").glob("*.md")) + [repo / "README.md"]  # docs/reference/ cites other repos' files
    for path in sources:
        for name in cited.findall(path.read_text(errors="replace")):
            if f"{name}.md" not in known:
                missing.add(f"{path.relative_to(repo)}: {name}.md")
    assert not missing, sorted(missing)
