"""The load's shortcuts give what the plain computation gives (issue 20): link ids read from the args bytes, link ids
left unparsed until asked for, and the order/code helpers that replace numpy's sorts and np.unique."""

from __future__ import annotations

import gzip
import json
import random

import msgspec
import numpy as np
import pytest

from trntui.analysis.key_averages import key_averages
from trntui.loaders import kineto
from trntui.loaders.kineto import chunks as kchunks
from trntui.loaders.kineto import link_ids
from trntui.model.args import ArgsStore, raw_many
from trntui.model.arrays import dense_codes, distinct, small_codes, time_order


def _random_args(rng: random.Random) -> list[bytes]:
    keys = ['"External id"', '"external id"', '"correlation"', '"Ev Idx"', '"cbid"', '"exte"', '"correlationx"']
    odd = ["1.5", '"7"', "[1, 2]", '{"External id": 4}', '"a\\"b"', "-0", '"x: 5"', '"External id"', "1e3", "null",
           '"\\u0045xternal id"']
    out = []
    for _ in range(rng.randint(0, 12)):
        items = []
        for _ in range(rng.randint(0, 5)):
            value = str(rng.randint(-(10 ** rng.randint(0, 19)), 10 ** rng.randint(0, 19)))
            if rng.random() < 0.15:
                value = rng.choice(odd)
            space = rng.choice(["", " ", " ", "  ", "\n"])
            items.append(f"{rng.choice(keys)}{rng.choice(['', ' '])}:{space}{value}{rng.choice(['', ' '])}")
        out.append(("{" + rng.choice([", ", ",", ",\n"]).join(items) + "}").encode() if rng.random() > 0.1 else b"")
    return out


def test_link_ids_read_from_the_args_bytes_equal_msgspec_per_event() -> None:
    """`piece_links` (numpy over the args bytes, msgspec for what it cannot read) = `link_columns` (msgspec per
    event), including nested objects, escapes, duplicates, floats, strings, nulls and odd spacing."""
    rng = random.Random(20)
    compared = 0
    for _ in range(1500):
        raws = _random_args(rng)
        args = [msgspec.Raw(r) for r in raws]
        got = link_ids.piece_links(ArgsStore.from_raw(args), lambda: args)
        want = link_ids.link_columns([a if len(a) else None for a in args], None, fast_only=True)
        assert (got is None) == (want is None), raws
        if want is not None:
            compared += 1
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), raws
    assert compared > 500


def test_link_ids_of_a_trace_without_rows_that_link_stay_in_the_args(corpus_dir, monkeypatch) -> None:
    """A CPU-only trace's summary on the Python path never parses External id / correlation; asking for them later
    gives the values an eager parse gives. The compiled scan reads them as it goes: there they are in memory at
    once (a cache write or a link query then decodes no args), with the same values."""
    from trntui.loaders.kineto.parser import _scan

    want = None
    for parser in ("python", "compiled") if _scan is not None else ("python",):
        monkeypatch.setenv("TRNTUI_KINETO_PARSER", parser)
        profile = kineto.load_kineto(corpus_dir / "cpu_only.json.gz")
        key_averages(profile)
        assert profile.links_parsed() == (parser == "compiled")
        if want is None:
            want = link_ids.link_columns(raw_many(profile.args_raw, np.arange(len(profile))), None)
        assert np.array_equal(profile.ext, want[0]) and np.array_equal(profile.corr, want[1])
        assert (profile.ext > 0).any()
        assert profile.links_parsed()


def test_pieces_decoded_before_the_first_row_that_links_get_their_link_ids(tmp_path, monkeypatch) -> None:
    """A trace whose first pieces hold only CPU ops and whose runtime/device rows come later: every piece's link
    ids are there, equal to a load in one piece."""
    events = []
    for k in range(3000):
        events.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op{k % 7}", "pid": 1, "tid": 1, "ts": 10.0 * k,
                       "dur": 5.0, "args": {"External id": k + 1, "Ev Idx": k}})
    for k in range(3000):
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": 10.0 * k + 1, "dur": 1.0, "args": {"External id": k + 1, "cbid": 211, "correlation": 90000 + k}})
        events.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10.0 * k + 3, "dur": 2.0,
                       "args": {"External id": k + 1, "correlation": 90000 + k, "stream": 7}})
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}), encoding="utf-8")
    whole = kineto.load_kineto(path)
    monkeypatch.setattr(kchunks, "_CHUNK_BYTES", 64 << 10)
    pieces = kineto.load_kineto(path)
    assert pieces.links_parsed()
    assert np.array_equal(pieces.ext, whole.ext) and np.array_equal(pieces.corr, whole.corr)
    table, want = key_averages(pieces), key_averages(whole)
    assert table.name == want.name and np.array_equal(table.self_device_time_total, want.self_device_time_total)


def test_order_and_code_helpers_equal_numpy() -> None:
    rng = np.random.default_rng(20)
    for _ in range(300):
        n = int(rng.integers(0, 3000))
        start = rng.integers(0, int(rng.integers(1, 4000)), n).astype(np.int64)
        end = start + rng.integers(0, 6, n)
        assert np.array_equal(time_order(start, end), np.lexsort((start - end, start)))
        values = rng.integers(-5, int(rng.integers(1, 60)), n).astype(np.int64)
        if rng.random() < 0.5:
            values = np.sort(values)
        u, inv = np.unique(values, return_inverse=True)
        got_u, got_inv = dense_codes(values)
        assert np.array_equal(got_u, u) and np.array_equal(got_inv, inv.reshape(-1))
        assert np.array_equal(distinct(values), u)
        assert np.array_equal(small_codes(values)[1], inv.reshape(-1))


@pytest.mark.parametrize("name", ["cuda_ns_resolution_68k.json.gz", "rocm_mi250_train.json.gz"])
def test_corpus_trace_in_small_pieces_equals_one_piece(corpus_dir, tmp_path, monkeypatch, name) -> None:
    """Times converted per piece, pids/tids merged from each piece's combinations, link ids per piece: the same
    profile (columns, lanes, flows) as decoding the trace as one piece."""
    path = tmp_path / "trace.json"
    path.write_bytes(gzip.decompress((corpus_dir / name).read_bytes()))
    one = kineto.load_kineto(path)
    monkeypatch.setattr(kchunks, "_CHUNK_BYTES", 256 << 10)
    many = kineto.load_kineto(path)
    for col in ("start", "end", "lane", "name", "cat", "kind", "ext", "corr"):
        assert np.array_equal(getattr(one, col), getattr(many, col)), col
    assert [(l.tier, l.subsystem, l.ident, l.pid, l.tid) for l in one.lanes] == [
        (l.tier, l.subsystem, l.ident, l.pid, l.tid) for l in many.lanes]
    assert np.array_equal(one.flows.event, many.flows.event) and np.array_equal(one.flows.key, many.flows.key)
    assert one.names == many.names and one.meta.notes == many.meta.notes


def test_loads_in_threads_at_once_equal_loads_one_after_another(corpus_dir, tmp_path, monkeypatch) -> None:
    """Threads decoding at the same time (a Dask worker's threads, the app's worker) never share a piece buffer."""
    import threading

    monkeypatch.setattr(kchunks, "_CHUNK_BYTES", 128 << 10)
    paths = []
    for name in ("cuda_ns_resolution_68k.json.gz", "rocm_mi250_train.json.gz", "cpu_only.json.gz"):
        path = tmp_path / name.replace(".gz", "")
        path.write_bytes(gzip.decompress((corpus_dir / name).read_bytes()))
        paths.append(path)
    want = [kineto.load_kineto(p) for p in paths]
    got: dict[int, object] = {}

    def load(k: int) -> None:
        got[k] = kineto.load_kineto(paths[k % len(paths)])

    threads = [threading.Thread(target=load, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, profile in got.items():
        ref = want[k % len(paths)]
        assert np.array_equal(profile.start, ref.start) and np.array_equal(profile.name, ref.name)
        assert [profile.args_raw[i] for i in range(0, len(profile), 50)] == [ref.args_raw[i] for i in range(0, len(ref), 50)]
