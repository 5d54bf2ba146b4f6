"""The early decoder child of `trntui summary` (trntui/loaders/kineto/early.py): forked before numpy is imported,
adopted by the load, stopped when the load has no use for it; whichever process decodes a piece, the result is
the serial decode's."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import msgspec
import numpy as np
import pytest

from trntui.loaders.kineto import early
from trntui.loaders.kineto.columns import part_of
from trntui.loaders.kineto.schema import list_decoder
from trntui.loaders.kineto.wire import frames, pack_raw
from trntui.model.args import ArgsStore, raw_many

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or not Path("/dev/shm").is_dir(), reason="forks (Linux)")


def hostile_events(seed: int, n: int = 400) -> list[dict]:
    """Events with what the numpy-free form must get exactly right: string, numeric-string, mixed and huge
    pids/tids, flows with string/None/huge ids, unknown, empty, long and non-ASCII phases, non-ASCII names,
    out-of-range and negative times, M/B/E events, args that link (or nearly)."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        ph = rnd.choice("XXXXXXiIBEsfMCt") if rnd.random() > 0.03 else rnd.choice(["", "XX", "é", "b"])
        e: dict = {"ph": ph, "name": rnd.choice(["aten::mm", "naïve", "核", f"n{i % 23}", "b}, {c"]),
                   "cat": rnd.choice(["cpu_op", "kernel", "cuda_runtime", "", "ac2g", "gpu_memcpy"]),
                   "ts": rnd.choice([rnd.uniform(0, 1e6), 1e300, -1e300, 1.7e15 + i, 5e18]),
                   "pid": rnd.choice([1, 2, 3, 77] + ([] if seed % 3 else ["strpid", "7", 2**62 + 5, -4, 2**63 + 1])),
                   "tid": rnd.choice([1, 5, 9] + ([] if seed % 4 else ["T}, {x", "12", 2**64 - 1]))}
        if ph == "X":
            e["dur"] = rnd.choice([1.5, 10, -3, 0, 1e301])
        if ph in ("s", "f", "t"):
            e["id"] = rnd.choice([1, 2, 3, 2**62, -(2**62) - 1] + ([] if seed % 2 else [None, "9", "abc", 2**63]))
            e["bp"] = "e"
        if rnd.random() < 0.6:
            e["args"] = rnd.choice([
                {"External id": rnd.choice([1, 2, 99]), "correlation": rnd.choice([1, 4, 7])},
                {"External id": rnd.choice(["x", None, 2.5, "12"]), "correlation": 3},
                {"external id": 5, "l": [{"a": 1}, {"b": "}, {"}]},
                {"correlation": 8, "s": "q\"uote"},
                {},
            ])
        if ph == "M":
            e["name"] = rnd.choice(["process_name", "thread_name", "process_labels"])
            e["args"] = {"name": "p\u00e9", "labels": "GPU 0"}
        out.append(e)
    if seed % 5 == 0:  # a bigger int than 64 bits: msgpack cannot carry it (the child takes `part_of` then)
        out[3].update(ph="X", dur=1.0, pid=2**70)
    return out


def _decode(events: list[dict]) -> list:
    return list_decoder.decode(json.dumps(events).encode())


def _raw_then_numpy(events: list[dict], base: int, linking: bool):
    """`raw_piece` in its frame, read back and finished as the parent does (wire.frames -> part_of_raw)."""
    frame = b"".join(bytes(memoryview(b).cast("B")) for b in pack_raw(7, *early.raw_piece(_decode(events), base)))
    parts: dict = {}
    assert frames(frame, len(frame), parts, None, linking) == len(frame)
    return parts[7]


def _args(store: ArgsStore, m: int) -> list[bytes]:
    return [bytes(a) for a in raw_many(store, np.arange(m))]


def _same_value(a, b, what: str) -> None:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), what
        assert a.dtype == b.dtype and np.array_equal(a, b), what
    elif isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), what
        for k, (x, y) in enumerate(zip(a, b)):
            _same_value(x, y, f"{what}[{k}]")
    else:
        assert type(a) is type(b) and a == b, what


def assert_same_part(a, b) -> None:
    """Every field `merge` reads, equal (arrays with their dtypes; kept events as they re-encode)."""
    for f in ("n", "n_m", "n_x", "n_be", "n_sft", "linking"):
        assert getattr(a, f) == getattr(b, f), f
    for f in ("m_events", "be_events"):
        assert msgspec.json.encode(getattr(a, f)) == msgspec.json.encode(getattr(b, f)), f
    x, y = a.x, b.x
    for f in ("m", "base", "n_neg", "start", "end", "kinds", "bad", "cat", "name", "links"):
        _same_value(getattr(x, f), getattr(y, f), f"x.{f}")
    for f in ("cat", "code", "pid", "tid", "pids", "tids"):
        _same_value(getattr(x.combos, f), getattr(y.combos, f), f"combos.{f}")
    assert _args(x.args, x.m) == _args(y.args, y.m)
    assert (a.flows is None) == (b.flows is None)
    if a.flows is not None:
        for f in ("n", "base", "start", "pid", "tid", "keys", "cat", "ph", "bad"):
            _same_value(getattr(a.flows, f), getattr(b.flows, f), f"flows.{f}")


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("linking", [False, True])
def test_numpy_free_pieces_finish_to_the_same_part(seed, linking) -> None:
    events = hostile_events(seed)
    base = 0 if seed % 2 else 1_700_000_000_000_000_000
    want = part_of(_decode(events), linking, base)
    if seed % 5 == 0:  # an int beyond 64 bits: the frame cannot carry it (the child then sends `part_of`'s Part)
        with pytest.raises(OverflowError):
            _raw_then_numpy(events, base, linking)
        return
    assert_same_part(_raw_then_numpy(events, base, linking), want)


@pytest.mark.parametrize("events", [
    [],
    [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "x"}}],
    [{"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 1, "cat": "ac2g"}, {"ph": "t", "id": 1, "pid": 1, "ts": 2}],
    [{"ph": "X", "name": "a", "ts": 1, "dur": 2, "pid": "7", "tid": "8"}],
    [{"ph": "X", "name": "a", "ts": 1, "dur": 2, "pid": "p", "tid": 2**63}],
])
def test_small_and_degenerate_pieces_finish_to_the_same_part(events) -> None:
    assert_same_part(_raw_then_numpy(events, 5, False), part_of(_decode(events), False, 5))


_SCRIPT = """
import json, os, sys
from pathlib import Path
from trntui.loaders.kineto import early, pieces
pieces._PARALLEL_MIN_BYTES, pieces._PAR_CHUNK, pieces._PAR_MIN = 0, 16 << 10, 4 << 10
start, other = early.start, os.environ.get("EARLY_FOR")

def start_then_map(path, budget):  # (the load maps files from 32 MB: this one too, once the child is forked)
    start(Path(other) if other else path, budget)
    import trntui.loaders.kineto.load as load
    load._MAP_MIN_BYTES = 0

early.start = start_then_map
before = set(os.listdir("/dev/shm"))
from trntui.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:  # (argparse's refusal of an argument)
    code = exc.code
try:
    os.waitpid(-1, os.WNOHANG)
    children = True
except ChildProcessError:
    children = False
fds = [os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}")]
report = {"early": early.LAST, "numpy_before": "numpy" in sys.modules, "children": children,
          # (semaphores other processes on the machine create meanwhile are not ours)
          "shm_files": sorted(f for f in set(os.listdir("/dev/shm")) - before if not f.startswith("sem.")),
          "deleted_fds": [f for f in fds if "(deleted)" in f or f.startswith("/dev/shm")]}
sys.stdout.flush()
print("EARLY " + json.dumps(report), file=sys.stderr)
sys.exit(code)
"""


def _env(tmp_path: Path, cache: bool = False) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRNTUI_")}
    env.update(TRNTUI_CACHE_DIR=str(tmp_path / "cache"), TRNTUI_NO_PROGRESS="1", TRNTUI_CACHE_MIN_BYTES="0")
    env["TRNTUI_KINETO_PARSER"] = "python"  # the early child serves the Python path (the compiled one forks none)
    if not cache:
        env["TRNTUI_NO_CACHE"] = "1"
    return env


def test_the_compiled_path_forks_no_early_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trntui.loaders.kineto import parser, pieces

    if parser._scan is None:
        pytest.skip("the compiled parser is not built in this install")
    trace = tmp_path / "big.json"
    trace.write_bytes(b'{"traceEvents": [' + b",".join([b'{"ph": "X", "name": "a", "ts": 1, "dur": 1}'] * 1000) + b"]}")
    monkeypatch.setattr(pieces, "_PARALLEL_MIN_BYTES", 1)
    forked: list[str] = []
    monkeypatch.setattr(early, "_fork", lambda data, identity: forked.append(mode) or data.close())
    for mode in ("compiled", "python"):
        monkeypatch.setenv("TRNTUI_KINETO_PARSER", mode)
        early.start(trace, None)
        early.cancel()
    assert forked == ["python"]


def _early_run(tmp_path: Path, args: list[str], repo_dir: Path, **env: str) -> tuple[int, str, str, dict]:
    p = subprocess.run([sys.executable, "-c", _SCRIPT, *args], cwd=repo_dir, capture_output=True, text=True,
                       timeout=300, env={**_env(tmp_path, cache="--no-cache" not in args), **env})
    err, _, report = p.stderr.rpartition("EARLY ")
    assert report, p.stderr[-3000:]
    return p.returncode, p.stdout, err, json.loads(report)


def _serial_run(tmp_path: Path, args: list[str], repo_dir: Path) -> tuple[int, str, str]:
    p = subprocess.run([sys.executable, "-m", "trntui", *args], cwd=repo_dir, capture_output=True, text=True,
                       timeout=300, env=_env(tmp_path, cache="--no-cache" not in args))
    return p.returncode, p.stdout, p.stderr


def _trace(path: Path, events: list[dict], **top) -> Path:
    path.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ms", **top}), encoding="utf-8")
    return path


def _plain_events(n: int = 3000) -> list[dict]:
    out: list[dict] = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}}]
    for i in range(n):
        out.append({"ph": "X", "name": f"aten::op{i % 17}", "cat": "cpu_op", "ts": 1000.0 + i * 3, "dur": 2.5,
                    "pid": 1, "tid": 1 + i % 3, "args": {"External id": i, "Sequence number": i}})
        if i % 5 == 0:
            out.append({"ph": "X", "name": "cudaLaunchKernel", "cat": "cuda_runtime", "ts": 1000.0 + i * 3 + 1,
                        "dur": 0.5, "pid": 1, "tid": 1, "args": {"External id": i, "correlation": i}})
            out.append({"ph": "X", "name": f"kernel{i % 4}", "cat": "kernel", "ts": 1000.0 + i * 3 + 2, "dur": 1.0,
                        "pid": 0, "tid": 7, "args": {"External id": i, "correlation": i, "device": 0}})
            out.append({"ph": "s", "id": i, "pid": 1, "tid": 1, "ts": 1000.0 + i * 3 + 1, "cat": "ac2g",
                        "name": "ac2g"})
            out.append({"ph": "f", "id": i, "pid": 0, "tid": 7, "ts": 1000.0 + i * 3 + 2, "cat": "ac2g",
                        "name": "ac2g", "bp": "e"})
    return out


SUMMARY = ["summary", "--no-cache", "--limit", "-1"]


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_summary_adopts_the_early_child_which_never_imports_numpy(tmp_path, repo_dir, fmt) -> None:
    """The child forked at the start decodes its pieces without numpy, the load adopts it, and the output (stdout,
    stderr, exit code) is the serial decode's; nothing is left behind (no child, no frame file)."""
    trace = _trace(tmp_path / "trace.json", _plain_events(), baseTimeNanoseconds=1_700_000_000_000_000_000)
    args = [*SUMMARY, "--format", fmt, str(trace)]
    code, out, err, report = _early_run(tmp_path, args, repo_dir)
    assert (code, out, err) == _serial_run(tmp_path, args, repo_dir)
    assert code == 0 and out
    assert report["early"] == {"adopted": True, "numpy": False}
    assert not report["children"] and not report["shm_files"] and not report["deleted_fds"]


@pytest.mark.parametrize("seed", [1, 3, 5, 6, 7])
def test_hostile_traces_give_the_serial_output_through_the_early_child(tmp_path, repo_dir, seed) -> None:
    """String/huge ids, odd phases, out-of-range times, M/B/E and flows, `}, {` inside strings (a piece cut there
    fails: the load then decodes serially), an int msgpack cannot carry (seed 5: that piece is `part_of`'s, numpy
    imported in the child): the same output and exit code as the serial decode."""
    trace = _trace(tmp_path / "trace.json", hostile_events(seed, 3000))
    args = [*SUMMARY, "--format", "csv", str(trace)]
    code, out, err, report = _early_run(tmp_path, args, repo_dir)
    assert (code, out, err) == _serial_run(tmp_path, args, repo_dir)
    assert report["early"]["adopted"] is True
    assert not report["children"] and not report["deleted_fds"]


def test_a_cache_hit_stops_the_early_child(tmp_path, repo_dir) -> None:
    trace = _trace(tmp_path / "trace.json", _plain_events())
    args = ["summary", "--format", "csv", str(trace)]
    first = _early_run(tmp_path, args, repo_dir)
    assert first[3]["early"] == {"adopted": True, "numpy": False}
    code, out, err, report = _early_run(tmp_path, args, repo_dir)  # from the cache now
    assert (code, out, err) == first[:3]
    assert report["early"] == {"adopted": False, "numpy": False}  # started, then stopped at the cache hit
    assert not report["children"] and not report["shm_files"] and not report["deleted_fds"]


def test_a_child_for_another_file_is_stopped_and_the_load_forks_its_own(tmp_path, repo_dir) -> None:
    trace = _trace(tmp_path / "trace.json", _plain_events())
    other = _trace(tmp_path / "other.json", _plain_events(2000))
    args = [*SUMMARY, "--format", "csv", str(trace)]
    code, out, err, report = _early_run(tmp_path, args, repo_dir, EARLY_FOR=str(other))
    assert (code, out, err) == _serial_run(tmp_path, args, repo_dir)
    assert report["early"] == {"adopted": False, "numpy": False}
    assert not report["children"] and not report["deleted_fds"]


def test_no_early_child_for_a_streamed_load_gzip_or_a_directory(tmp_path, repo_dir) -> None:
    import gzip

    (tmp_path / "run").mkdir()
    trace = _trace(tmp_path / "run" / "trace.json", _plain_events())
    gz = tmp_path / "trace.json.gz"
    gz.write_bytes(gzip.compress(trace.read_bytes()))
    for args in ([*SUMMARY, "--memory-budget", "64K", str(trace)], [*SUMMARY, str(gz)], [*SUMMARY, str(trace.parent)]):
        code, out, err, report = _early_run(tmp_path, args, repo_dir)
        serial = _serial_run(tmp_path, args, repo_dir)
        if "--memory-budget" in args:  # refused (the projection's count depends on the piece sizes, patched here)
            assert code == serial[0] == 2 and "even streamed, this trace" in err
        else:
            assert (code, out, err) == serial, args
        assert report["early"] == {} and not report["children"], args


def test_errors_and_exit_codes_are_unchanged(tmp_path, repo_dir) -> None:
    """Events that are not events (the child's pieces fail: the load takes the whole-file path), a missing file, a
    bad option value: the same one line and exit code 2."""
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [' + ", ".join(["[1, 2]"] * 20000) + "]}")
    for args in ([*SUMMARY, str(bad)], [*SUMMARY, str(tmp_path / "missing.json")],
                 [*SUMMARY, "--memory-budget", "lots", str(bad)], [*SUMMARY, "--sort", "nope", str(bad)]):
        code, out, err, report = _early_run(tmp_path, args, repo_dir)
        assert (code, out, err) == _serial_run(tmp_path, args, repo_dir), args
        assert code == 2 and err.startswith("trntui: error: "), args
        assert not report.get("children"), args


def test_summary_arguments_are_checked_without_numpy() -> None:
    """`trntui summary`'s parser (every option but --steps and --window given) imports no numpy, so the early child
    can be forked after it."""
    probe = ("import sys; from trntui import cli; cli.build_parser('summary').parse_args(['summary', 'x.json', "
             "'--sort', 'cpu_time_total', '--limit', '5', '--format', 'json', '--group-by-input-shapes', '--gaps', "
             "'--merge', '--no-cache', '--memory-budget', '2G', '--convert-timeout', '5']); "
             "print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
