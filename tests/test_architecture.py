"""The architecture holds: the layers import only downwards (import-linter contracts in pyproject.toml, every
import counted, also inside functions), the core is usable without the TUI, and the repository is self-contained."""

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


def test_layers_import_only_downwards(capsys) -> None:
    """pyproject.toml's import-linter contracts (docs/architecture.md): the core never imports a shell or Textual,
    the TUI never imports the CLI's commands, analysis never imports loaders or the report, loaders never import
    analysis, the model is the bottom. Function-level and TYPE_CHECKING imports count."""
    from pathlib import Path

    from importlinter.cli import lint_imports

    repo = Path(__file__).resolve().parents[1]
    rc = lint_imports(config_filename=str(repo / "pyproject.toml"), no_cache=True)
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "0 broken" in out and "kept" in out


def test_layer_check_sees_function_level_imports(tmp_path) -> None:
    """The import graph the contracts are checked on includes imports inside functions (most of ours are lazy)."""
    import grimp

    pkg = tmp_path / "layered"
    (pkg / "core").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "__init__.py").write_text("")
    (pkg / "shell.py").write_text("")
    (pkg / "core" / "calc.py").write_text("def f():\n    from layered import shell\n    return shell\n")
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        graph = grimp.build_graph("layered", cache_dir=None)
    finally:
        sys.path.remove(str(tmp_path))
    assert "layered.shell" in graph.find_modules_directly_imported_by("layered.core.calc")
