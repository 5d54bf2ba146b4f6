"""Bad input never crashes the CLI: every malformed case ends in a loaded profile that says what it skipped,
or in a one-line error naming the file with exit 2. No tracebacks, no hangs (a case past the hang bound
`CASE_TIMEOUT_S` is stopped and fails; slowness alone never fails), no warnings.

The corpus is generated at test time by `tests/malformed` (nothing committed as blobs).
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from malformed import Case, build_corpus, valid_trace  # noqa: E402
from malformed.cli import CASE_TIMEOUT_S, check_outcome, run_cli  # noqa: E402

_ROOT = Path(tempfile.mkdtemp(prefix="trntui-malformed-"))
atexit.register(shutil.rmtree, _ROOT, True)
CASES = build_corpus(_ROOT)


@pytest.mark.parametrize("case", CASES, ids=[c.name.encode("ascii", "backslashreplace").decode() for c in CASES])
def test_malformed_case_summary(case: Case, capsys) -> None:
    rc, out, err, caught, _ = run_cli(["summary", str(case.path)], capsys)  # a hang: stopped at CASE_TIMEOUT_S
    check_outcome(case, rc, out, err, caught)


@pytest.mark.parametrize("fmt", ["csv", "json", "markdown"])
def test_malformed_corpus_other_formats(fmt: str, capsys) -> None:
    """The same cases through the machine-readable formats: same two outcomes, never a traceback."""
    outcomes = {}
    for case in CASES:
        rc, out, err, caught, _ = run_cli(["summary", "--format", fmt, str(case.path)], capsys)  # hang bound
        outcomes[case.name] = check_outcome(case, rc, out, err, caught, fmt)
        if fmt == "json" and rc == 0:
            import json

            doc = json.loads(out)
            prof = doc["profile"] if "profile" in doc else doc["runs"][0]["profile"]
            assert isinstance(prof["skipped"], dict)
    assert "loaded" in outcomes.values() and "error" in outcomes.values()


def test_corpus_covers_the_issue_list() -> None:
    names = " ".join(c.name for c in CASES)
    for needle in ("truncated/", "empty", "dir_unreadable", "top_", "missing_fields", "renamed_fields",
                   "strings_for_numbers", "bad_durations", "nan_inf", "mixed_ts", "duplicate_ids",
                   "flows_without_ends", "link_cycles", "non_utf8", "control_chars", "bare_na", "gzip_"):
        assert needle in names, needle
    assert sum(c.name.startswith("truncated/") for c in CASES) >= 20


# ------------------------------------------------------------------------------------------------------
# specific outcomes worth pinning down
# ------------------------------------------------------------------------------------------------------
def _case(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


def _load(name: str):
    from trntui.session import load_profile

    return load_profile(_case(name).path)


def test_truncated_trace_says_how_many_were_lost() -> None:
    from trntui.session import load_profile

    good = valid_trace()
    full = load_profile(_case("gzip_name_plain.json.gz").path)
    p = _ROOT / "cut_half.json"
    p.write_bytes(good[: len(good) // 2])
    prof = load_profile(p)
    assert prof.meta.skipped == {"incomplete event at the cut (file truncated)": 1}
    assert any("file is truncated: recovered" in n for n in prof.meta.notes)
    assert 0 < len(prof) < len(full)


def test_damaged_event_in_the_middle_is_skipped_not_the_rest() -> None:
    prof = _load("unescaped_quote.json")
    full = _load("gzip_name_plain.json.gz")
    assert prof.meta.skipped == {"damaged events (invalid JSON)": 1}
    assert len(prof) == len(full) - 1


def test_control_characters_and_na_are_repaired() -> None:
    for name in ("control_chars.json", "bare_na.json", "bare_na_and_control.json", "non_utf8.json"):
        prof = _load(name)
        full = _load("gzip_name_plain.json.gz")
        assert len(prof) == len(full), name
        assert any(n.startswith("repaired:") for n in prof.meta.notes), name


def test_corrupted_gzip_keeps_what_precedes_the_damage() -> None:
    full = _load("gzip_name_plain.json.gz")
    assert len(_load("gzip_bad_crc.json.gz")) == len(full)
    assert len(_load("gzip_plus_garbage.json.gz")) == len(full)
    flipped = _load("gzip_flipped_byte.json.gz")
    assert 0 < len(flipped) < len(full)
    assert flipped.meta.skipped_total >= 1


def test_out_of_range_values_are_skipped_and_counted() -> None:
    prof = _load("bad_durations.json")
    assert prof.meta.skipped.get("events with non-finite or out-of-range timestamps", 0) >= 3
    assert int(prof.end.max()) < 2**62
    assert (prof.end >= prof.start).all()


def test_one_broken_file_of_a_run_does_not_hide_the_others() -> None:
    """Files read as one run (--merge): a broken one is skipped and counted, the others are read."""
    from trntui.session import find_runs, load_run

    runs = find_runs(_case("dir_one_good_one_broken").path, merge=True)
    assert len(runs) == 1
    prof = load_run(runs[0], cache=False)
    assert prof.meta.skipped.get("unreadable trace files") == 1
    assert len(prof) > 0


def test_one_broken_file_of_a_directory_of_runs_does_not_hide_the_others(capsys) -> None:
    """Unrelated files are runs of their own: the good one is printed, the broken one is one line."""
    case = _case("dir_one_good_one_broken")
    rc, out, err, caught, _ = run_cli(["summary", str(case.path)], capsys)
    assert rc == 0 and not caught
    assert "== a.pt.trace.json ==" in out and "Self CPU time total:" in out
    lines = err.splitlines()
    assert len(lines) == 1 and "b.pt.trace.json" in lines[0]


def test_multi_run_directory_with_broken_runs(tmp_path, capsys) -> None:
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "trace.json").write_bytes(valid_trace())
    for k, data in enumerate((b"", b"{garbage", b"[1, 2]")):
        (tmp_path / f"bad{k}").mkdir()
        (tmp_path / f"bad{k}" / "trace.json").write_bytes(data)
    rc, out, err, caught, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and not caught
    assert "== good ==" in out
    lines = err.splitlines()
    assert len(lines) == 3 and all(ln.startswith("trntui: error: ") for ln in lines)
    for bad in ("bad0", "bad1", "bad2"):
        shutil.rmtree(tmp_path / bad)
        (tmp_path / bad).mkdir()
    shutil.rmtree(tmp_path / "good")
    rc, out, err, caught, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 2 and len(err.splitlines()) == 1


def test_cli_never_shows_a_traceback_for_unexpected_errors(monkeypatch, capsys) -> None:
    """The last line of defence: an internal bug still ends in one line and exit 2."""
    import trntui.session as loaders

    def boom(*a, **k):
        raise RuntimeError("internal \x1b[2J bug")

    monkeypatch.setattr(loaders, "load_run", boom)
    monkeypatch.delenv("TRNTUI_DEBUG", raising=False)
    rc, out, err, caught, _ = run_cli(["summary", str(_case("gzip_name_plain.json.gz").path)], capsys)
    assert rc == 2
    assert len(err.splitlines()) == 1 and "\x1b" not in err and "Traceback" not in err


def test_links_and_chains_terminate_on_every_loadable_case() -> None:
    """Cycles in links (External id / correlation / flows / Python parent ids pointing back) never hang."""
    from malformed.cli import time_limit

    from trntui.analysis.links import build_links
    from trntui.errors import TrntuiError
    from trntui.session import load_profile

    try:
        from trntui.analysis.chains import follow
    except ImportError:  # pragma: no cover - chains not in this build
        follow = None
    for case in CASES:
        if case.name == "fifo.json":
            continue
        with time_limit(CASE_TIMEOUT_S):
            try:
                prof = load_profile(case.path)
            except TrntuiError:
                continue
            build_links(prof)
            if follow is not None:
                for i in range(len(prof)):
                    follow(prof, i)


def test_damaged_cache_entries_never_break_the_cli(tmp_path: Path, monkeypatch, capsys) -> None:
    """Every file of a cache entry truncated, emptied, swapped with another one or mis-shaped: the CLI still
    prints the same table (a miss, then a rebuild), never a traceback."""
    import numpy as np

    try:
        from trntui import cache
    except ImportError:  # pragma: no cover - no cache in this build
        pytest.skip("no cache")
    monkeypatch.setenv("TRNTUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRNTUI_CACHE_MIN_BYTES", "0")
    monkeypatch.delenv("TRNTUI_NO_CACHE", raising=False)
    trace = tmp_path / "prof" / "trace.json"
    trace.parent.mkdir()
    trace.write_bytes(valid_trace(n_steps=4))
    rc, expected, err, caught, _ = run_cli(["summary", str(trace)], capsys)
    assert rc == 0 and not err
    entries = [p for p in (tmp_path / "cache").rglob("meta.json")]
    if not entries:
        pytest.skip("this build did not cache the run")
    entry = entries[0].parent
    pristine = {p.name: p.read_bytes() for p in entry.iterdir() if p.is_file()}
    other = next(iter(pristine))

    def damages(name: str, data: bytes):
        yield data[: len(data) // 2]
        yield b""
        yield pristine[other] if name != other else b"{}"
        if name.endswith(".npy"):
            import io

            buf = io.BytesIO()
            np.save(buf, np.arange(3, dtype=np.int64) * 10**12)  # wrong length and values
            yield buf.getvalue()
        if name == "meta.json":
            yield b'{"stamp": 5}'
            yield data.replace(b'"names"', b'"nomes"')

    for name, data in pristine.items():
        for bad in damages(name, data):
            for p, d in pristine.items():
                (entry / p).write_bytes(d)
            (entry / name).write_bytes(bad)
            rc, out, err, caught, _ = run_cli(["summary", str(trace)], capsys)
            assert rc in (0, 2) and "Traceback" not in err and "TRNTUI_DEBUG" not in err, (name, err)
            if rc == 0:
                assert out == expected, name
