"""Shared fixtures: the real-trace corpus and small helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "data" / "kineto"
"""Real Kineto traces vendored from HTA's test data (MIT, see tests/data/kineto/README.md and its licence file)."""


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """Run `trntui ARGV` in-process: (exit code, stdout, stderr); argparse's own exits count as exit codes."""
    from trntui.cli import main

    try:
        rc = main(list(argv))
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The real Kineto traces (HTA test data, MIT) that every build must load."""
    if not CORPUS.is_dir():
        pytest.fail(f"trace corpus not found at {CORPUS} (it is part of the repository: tests/data/kineto)")
    return CORPUS


@pytest.fixture(scope="session")
def repo_dir() -> Path:
    return REPO


@pytest.fixture(scope="session", autouse=True)
def _private_config_dir(tmp_path_factory):
    """Tests never write to the user's config directory (saved SQL queries, history): each session gets its own."""
    import os

    old = os.environ.get("TRNTUI_CONFIG_DIR")
    os.environ["TRNTUI_CONFIG_DIR"] = str(tmp_path_factory.mktemp("trntui-config"))
    yield
    if old is None:
        os.environ.pop("TRNTUI_CONFIG_DIR", None)
    else:
        os.environ["TRNTUI_CONFIG_DIR"] = old


@pytest.fixture(scope="session", autouse=True)
def _private_profile_cache(tmp_path_factory):
    """Tests never write to the user's parsed-profile cache (~/.cache/trntui): each session gets its own."""
    import os

    old = os.environ.get("TRNTUI_CACHE_DIR")
    os.environ["TRNTUI_CACHE_DIR"] = str(tmp_path_factory.mktemp("trntui-cache"))
    yield
    if old is None:
        os.environ.pop("TRNTUI_CACHE_DIR", None)
    else:
        os.environ["TRNTUI_CACHE_DIR"] = old


@pytest.fixture(scope="session", autouse=True)
def _no_terminal_width():
    """Headless tables fit `COLUMNS` when it is set (trntui/report/format.terminal_width), and pytest-xdist's
    workers have COLUMNS=80: tests (and the commands they start) print full tables unless a test sets it."""
    import os

    old = os.environ.pop("COLUMNS", None)
    yield
    if old is not None:
        os.environ["COLUMNS"] = old


@pytest.fixture(params=["python", "compiled"])
def each_kineto_parser(request, monkeypatch):
    """Run the test once on each Kineto parser, forced by the user's setting (`TRNTUI_KINETO_PARSER`, read by
    settings.kineto_parser), with the parsed-profile cache off so every load parses. The compiled run is skipped
    where the extension is not built (an install without a compiler); afterwards the test checks the compiled
    builder really read (or, on the Python run, never read) a piece."""
    from trntui.loaders.kineto import chunks, compiled
    from trntui.loaders.kineto.parser import _scan, parser_name

    want = request.param
    if want == "compiled" and _scan is None:
        pytest.skip("the compiled Kineto parser is not built in this install")
    monkeypatch.setenv("TRNTUI_KINETO_PARSER", want)
    monkeypatch.setenv("TRNTUI_NO_CACHE", "1")
    assert parser_name() == want
    calls = []
    real = compiled.part_of_scan

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(chunks, "compiled_part", counted)
    yield want
    if want == "python":
        assert not calls, "the Python run used the compiled builder"
    else:
        assert calls, "the compiled run never used the compiled builder"
