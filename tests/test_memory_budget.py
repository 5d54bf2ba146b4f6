"""`--memory-budget`: in-memory when it fits, streamed (args on disk) when not, refused when not even that fits
(issue 7). A streamed load must give exactly the profile an in-memory load gives."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from trntui import memory
from trntui.cli import main
from trntui.errors import OverBudget, TrntuiError
from trntui.session import find_runs, load_run
from trntui.loaders.kineto import chunks as K
from trntui.loaders.kineto import streaming as S


def _load(path: Path, budget):
    return load_run(find_runs(path)[0], cache=False, memory_budget=budget)


@pytest.fixture
def small_stream(monkeypatch):
    """Streaming thresholds scaled to test traces: 64 KB chunks, no fixed costs, 1 byte per event."""
    monkeypatch.setattr(K, "_CHUNK_BYTES", 64 << 10)
    monkeypatch.setattr(memory, "STREAMED_FIXED_BYTES", 0)
    monkeypatch.setattr(memory, "STREAMED_BYTES_PER_EVENT", 1)


def _assert_same(a, b) -> None:
    assert len(a) == len(b) > 0
    for col in ("start", "end", "lane", "name", "cat", "kind", "ext", "corr"):
        assert np.array_equal(getattr(a, col), getattr(b, col)), col
    assert a.names == b.names and a.cats == b.cats
    assert [lane.label for lane in a.lanes] == [lane.label for lane in b.lanes]
    for col in ("key", "event", "cat", "role"):
        assert np.array_equal(getattr(a.flows, col), getattr(b.flows, col)), col
    assert all(a.args_raw[i] == b.args_raw[i] for i in range(len(a)))
    assert a.meta.skipped == b.meta.skipped


@pytest.mark.parametrize("parser", ["python", "compiled"])
@pytest.mark.parametrize("name", ["cuda_ns_resolution_68k.json.gz", "rocm_mi250_train.json.gz"])
def test_streamed_load_equals_in_memory_load(corpus_dir, small_stream, name, parser, monkeypatch) -> None:
    """Streamed (args spilled to disk chunk by chunk) or in memory: the same profile, on each Kineto parser."""
    from trntui.loaders.kineto.parser import _scan

    if parser == "compiled" and _scan is None:
        pytest.skip("the compiled Kineto parser is not built in this install")
    monkeypatch.setenv("TRNTUI_KINETO_PARSER", parser)
    path = corpus_dir / name
    full = _load(path, "none")
    size = memory.json_size(path)
    streamed = _load(path, int(size * memory.FULL_LOAD_FACTOR) - 1)  # just too big for an in-memory load
    assert any("streamed to stay within the memory budget" in n for n in streamed.meta.notes)
    assert not any("streamed" in n for n in full.meta.notes)
    _assert_same(full, streamed)
    assert isinstance(streamed.args_raw.blob, np.ndarray)  # args are read from the mapped spill file
    from trntui.analysis.key_averages import key_averages

    ta, tb = key_averages(full), key_averages(streamed)
    assert ta.name == tb.name and ta.count.tolist() == tb.count.tolist()
    assert np.array_equal(ta.self_device_time_total, tb.self_device_time_total)


def test_streamed_plain_file_with_bom(tmp_path, corpus_dir, small_stream) -> None:
    raw = gzip.decompress((corpus_dir / "cuda_simple_add.json.gz").read_bytes())
    plain = tmp_path / "trace.json"
    plain.write_bytes(b"\xef\xbb\xbf" + raw)
    full = _load(plain, "none")
    _assert_same(full, _load(plain, int(len(raw) * memory.FULL_LOAD_FACTOR) - 1))


def test_budget_that_fits_loads_in_memory(corpus_dir) -> None:
    p = _load(corpus_dir / "cuda_simple_add.json.gz", "4G")
    assert not any("streamed" in n for n in p.meta.notes)


def test_over_budget_is_one_line_exit_2(capsys, corpus_dir) -> None:
    path = corpus_dir / "cuda_ns_resolution_68k.json.gz"
    rc = main(["summary", "--no-cache", "--memory-budget", "1M", str(path)])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "over the memory budget of 1 MiB" in err and "even streamed" in err and path.name in err


def test_projection_stops_a_streamed_load_early(corpus_dir, small_stream, monkeypatch) -> None:
    """The projection after each chunk refuses the load before the file has been read to the end."""
    monkeypatch.setattr(memory, "STREAMED_BYTES_PER_EVENT", 10_000)
    path = corpus_dir / "cuda_ns_resolution_68k.json.gz"
    chunks = []
    real = S.Stream.after_chunk
    monkeypatch.setattr(S.Stream, "after_chunk", lambda self, part, consumed: (chunks.append(consumed), real(self, part, consumed)))
    with pytest.raises(OverBudget, match="even streamed"):
        _load(path, 30 << 20)  # under the 2.4 x 15 MB of an in-memory load
    assert len(chunks) <= 1  # refused while inflating (events counted as they are written) or after the first chunk


def test_bad_budget_values(capsys, corpus_dir) -> None:
    assert memory.parse_size("4G") == 4 << 30
    assert memory.parse_size("1.5GB") == int(1.5 * (1 << 30))
    assert memory.parse_size("800m") == 800 << 20
    assert memory.parse_size("512MiB") == 512 << 20
    assert memory.parse_size("none") is None and memory.parse_size("off") is None
    with pytest.raises(TrntuiError):
        memory.parse_size("lots")
    with pytest.raises(SystemExit) as exc:  # argparse checks it, before any work
        main(["summary", "--memory-budget", "2X", str(corpus_dir / "cuda_simple_add.json.gz")])
    rc = exc.value.code
    _, err = capsys.readouterr()
    assert rc == 2 and err.strip() == ("trntui: error: argument --memory-budget: bad memory budget '2X': use a size "
                                       "like 4G, 1.5GB, 800M, or 'none'")  # checked by argparse, before any work


def test_env_budget_is_the_default(monkeypatch) -> None:
    monkeypatch.setenv("TRNTUI_MEMORY_BUDGET", "3G")
    assert memory.resolve(None) == 3 << 30 and memory.resolve("auto") == 3 << 30
    assert memory.resolve("1G") == 1 << 30
    monkeypatch.delenv("TRNTUI_MEMORY_BUDGET")
    avail = memory.available_bytes()
    if avail:
        assert memory.resolve(None) == int(avail * 0.8)


def test_gzip_size_from_trailer(tmp_path) -> None:
    data = json.dumps({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1, "pid": 1, "tid": 1}] * 500}).encode()
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(data))
    assert memory.json_size(p) == len(data)


def test_truncated_gzip_streamed_is_one_line_error(tmp_path, corpus_dir, small_stream) -> None:
    src = (corpus_dir / "cuda_simple_add.json.gz").read_bytes()
    p = tmp_path / "cut.json.gz"
    p.write_bytes(src[: len(src) // 2])
    with pytest.raises(TrntuiError) as exc:
        _load(p, 1000)
    assert "\n" not in str(exc.value) and p.name in str(exc.value)


def test_multi_file_run_over_budget_is_not_skipped(tmp_path, corpus_dir) -> None:
    """One file of several that does not fit must stop the load, not be skipped as a damaged file."""
    run = tmp_path / "ranks"
    run.mkdir()
    for k in range(2):
        shutil.copy(corpus_dir / "cuda_ns_resolution_68k.json.gz", run / f"rank{k}.pt.trace.json.gz")
    runs = find_runs(run)
    target = next(r for r in runs if len(r.framework_traces) > 1) if any(len(r.framework_traces) > 1 for r in runs) else None
    if target is None:
        pytest.skip("this layout gives one run per file")
    with pytest.raises(OverBudget):
        load_run(target, cache=False, memory_budget="1M")


def test_neuron_export_over_budget_is_refused_before_reading(repo_dir, monkeypatch, capsys) -> None:
    """A Neuron Parquet export is not streamed: a budget it cannot fit (rows from the Parquet footers) refuses it
    with one line, exit 2; a budget it fits loads it."""
    from trntui.loaders.neuron.parquet import load as neuron_parquet_load

    sample = repo_dir / "sample_profiles" / "neuron" / "naive"
    monkeypatch.setattr(memory, "NEURON_BYTES_PER_ROW", 1 << 30)  # every row "needs" 1 GiB
    read = []
    monkeypatch.setattr(neuron_parquet_load, "read_system_rows", lambda d: read.append(d))
    rc = main(["summary", "--memory-budget", "2G", str(sample)])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "this Neuron export (" in err and "system-trace rows) needs about" in err and "over the memory budget of 2.00 GiB" in err
    assert read == []  # refused before the rows were read
    monkeypatch.undo()
    assert _load(sample, "2G").meta.device_kind == "neuron"


def test_streamed_projection_refuses_with_a_count_in_events(corpus_dir, small_stream, monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(memory, "STREAMED_BYTES_PER_EVENT", 10_000)
    plain = tmp_path / "cuda_ns_resolution_68k.json"  # plain: a gzip file would be refused while inflating
    plain.write_bytes(gzip.decompress((corpus_dir / "cuda_ns_resolution_68k.json.gz").read_bytes()))
    with pytest.raises(OverBudget, match=r"even streamed, this trace \(about [1-9]\d?,\d{3} events\)") as refused:
        _load(plain, 30 << 20)  # a count in events, not "about 0.1M events"
    projected = int(re.search(r"about ([\d,]+) events", str(refused.value)).group(1).replace(",", ""))
    assert 3_000 < projected < 300_000  # projected from part of a ~68k-event trace


def test_event_counts_in_messages_have_a_sensible_unit() -> None:
    assert [memory.events_text(n) for n in (0, 1, 950, 68_123, 999_999, 1_000_000, 2_430_000)] == [
        "0 events", "1 event", "950 events", "68,123 events", "999,999 events", "1.0M events", "2.4M events"]


def test_a_marginal_early_projection_does_not_refuse(corpus_dir, small_stream, monkeypatch) -> None:
    """Bytes per event vary along a trace: mid-decode the load is refused only when clearly over (25%); the
    exact check at the end of the decode refuses as soon as it is over."""
    path = corpus_dir / "cuda_ns_resolution_68k.json.gz"
    events = sum(p.n for p in K.decode_chunked(gzip.decompress(path.read_bytes()))[0])
    monkeypatch.setattr(memory, "STREAMED_BYTES_PER_EVENT", 100)
    exact = events * 100
    assert _load(path, exact).meta.notes  # exactly at the budget: loads
    with pytest.raises(OverBudget):
        _load(path, exact - 1)  # one byte under: refused by the final check
