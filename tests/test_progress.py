"""Load progress and cancellation (issue 7): the stages a load reports, the CLI's progress line, and a reporter
that cancels the load."""

from __future__ import annotations

import io

import pytest

from trntui import progress
from trntui.cli import main
from trntui.session import find_runs, load_run
from trntui.loaders.kineto import chunks as K


def _stages(path, monkeypatch, **kw):
    seen: list[tuple[str, int, int]] = []
    with progress.reporting(lambda s, d, t: seen.append((s, d, t))):
        load_run(find_runs(path)[0], cache=False, **kw)
    return seen


def test_load_reports_its_stages_in_order(corpus_dir, monkeypatch) -> None:
    monkeypatch.setattr(K, "_CHUNK_BYTES", 1 << 20)  # several chunks
    seen = _stages(corpus_dir / "cuda_ns_resolution_68k.json.gz", monkeypatch, memory_budget="none")
    names = [s for s, _, _ in seen]
    first = {s: names.index(s) for s in dict.fromkeys(names)}
    assert first["reading"] < first["decoding"] < first["merging"] < first["sorting"]
    decoding = [(d, t) for s, d, t in seen if s == "decoding"]
    assert len(decoding) >= 5
    assert all(0 < d <= t for d, t in decoding)
    done = [d for d, _ in decoding]
    assert done == sorted(done) and done[-1] == decoding[-1][1]  # monotonic, ends at 100%


def test_streamed_load_reports_inflating(corpus_dir, monkeypatch) -> None:
    from trntui import memory

    monkeypatch.setattr(memory, "STREAMED_FIXED_BYTES", 0)
    seen = _stages(corpus_dir / "cuda_ns_resolution_68k.json.gz", monkeypatch, memory_budget="20M")
    names = [s for s, _, _ in seen]
    assert "inflating" in names and names.index("inflating") < names.index("decoding")


def test_reporter_can_cancel_a_load(corpus_dir, monkeypatch) -> None:
    monkeypatch.setattr(K, "_CHUNK_BYTES", 1 << 20)
    calls = []

    def cancel_on_decoding(stage: str, done: int, total: int) -> None:
        calls.append(stage)
        if stage == "decoding":
            raise progress.Cancelled()

    with progress.reporting(cancel_on_decoding), pytest.raises(progress.Cancelled):
        load_run(find_runs(corpus_dir / "cuda_ns_resolution_68k.json.gz")[0], cache=False)
    assert calls[-1] == "decoding" and "merging" not in calls


def test_no_reporter_outside_the_block() -> None:
    seen = []
    with progress.reporting(lambda *a: seen.append(a)):
        progress.report("x", 1, 2)
    progress.report("y", 1, 2)
    assert seen == [("x", 1, 2)]


def test_stderr_line_draws_after_the_delay_and_is_erased() -> None:
    out = io.StringIO()
    bar = progress.StderrProgress("trace.json", out, delay=0.0, force=True)
    bar("decoding", 50_000_000, 200_000_000)
    text = out.getvalue()
    assert text.startswith("\r\x1b[K")
    assert "trntui: trace.json · decoding 50 MB of 200 MB (25%)" in text and "Ctrl-C cancels" in text
    bar.clear()
    assert out.getvalue().endswith("\r\x1b[K")


def test_stderr_line_is_quiet_for_quick_loads_and_pipes() -> None:
    out = io.StringIO()
    bar = progress.StderrProgress("t", out, delay=60.0, force=True)
    bar("decoding", 1, 2)
    bar.clear()
    assert out.getvalue() == ""
    piped = progress.StderrProgress("t", io.StringIO(), delay=0.0)  # StringIO is not a terminal
    assert not piped.enabled


def test_stderr_line_escapes_names() -> None:
    out = io.StringIO()
    bar = progress.StderrProgress("evil\x1b]0;x\x07.json", out, delay=0.0, force=True)
    bar("decoding", 1, 2)
    assert "\x1b]" not in out.getvalue() and "\x07" not in out.getvalue()


def test_cli_summary_on_a_pipe_prints_no_progress(capsys, corpus_dir) -> None:
    rc = main(["summary", "--no-cache", str(corpus_dir / "cuda_ns_resolution_68k.json.gz")])
    _, err = capsys.readouterr()
    assert rc == 0 and err == ""


def test_cancelled_cli_load_is_one_line(capsys, corpus_dir, monkeypatch) -> None:
    """A cancellation raised inside the load reaches the user as one line, exit 2 (Ctrl-C itself gives 130)."""
    real = K.part_of

    def cancelled(events, *args):
        raise progress.Cancelled()

    monkeypatch.setattr(K, "part_of", cancelled)
    monkeypatch.setattr(K, "compiled_part", cancelled)  # (the compiled builder's entry, where it is in use)
    rc = main(["summary", "--no-cache", str(corpus_dir / "cuda_simple_add.json.gz")])
    _, err = capsys.readouterr()
    assert rc == 2 and err == "trntui: error: load cancelled\n"
    monkeypatch.setattr(K, "part_of", real)


def test_progress_line_is_erased_before_results_are_printed(capsys, corpus_dir, monkeypatch) -> None:
    """On a terminal, the table must not start on the progress line: the line is erased first."""
    import sys

    class TTY(io.StringIO):
        def isatty(self) -> bool:
            return True

    log: list[str] = []

    class Err(TTY):
        def write(self, s: str) -> int:
            log.append(("err", s))
            return len(s)

    class Out(TTY):
        def write(self, s: str) -> int:
            log.append(("out", s))
            return len(s)

    monkeypatch.setattr(sys, "stderr", Err())
    monkeypatch.setattr(sys, "stdout", Out())
    monkeypatch.setattr(progress.StderrProgress, "__init__", _eager_init)
    rc = main(["summary", "--no-cache", str(corpus_dir / "cuda_ns_resolution_68k.json.gz")])
    assert rc == 0
    first_out = next(k for k, (kind, _) in enumerate(log) if kind == "out")
    drawn = [k for k, (kind, s) in enumerate(log) if kind == "err" and "trntui:" in s]
    assert drawn and drawn[0] < first_out  # the line was drawn during the load
    assert log[first_out - 1] == ("err", "\r\x1b[K")  # and erased right before the first output


_real_init = progress.StderrProgress.__init__


def _eager_init(self, label="", stream=None, *, delay=0.5, force=False):
    _real_init(self, label, stream, delay=0.0, force=True)
    self.last_draw = -1.0
