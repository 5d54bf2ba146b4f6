"""Make an N-rank distributed job from ONE real rank's Kineto trace, with one rank slowed down.

    python scripts/make_rank_job.py TRACE OUT_DIR [--ranks 16] [--slow-rank 5] [--slow 1.3] [--jitter 0.01]
                                                   [--seed 0] [--no-sync]

Each rank is the input trace re-timed (SYNTHETIC: built from one real capture, not a real multi-rank run):

- rank r runs at speed 1/f_r: every time t moves to t0 + (t − t0)·f_r (t0: the first step's start, else the
  first event, so all ranks start together), with
  f_r = 1 ± `jitter` (seeded, so ranks are not byte-identical) and f = `slow` for the slowed rank;
- with sync (default), the collectives synchronise the ranks as real collectives do: the i-th collective call
  (device NCCL/RCCL kernels when the trace has them, else its `nccl:*`/`gloo:*` host scopes) ends on every rank
  when the last rank's call would have ended, so ranks that arrive early wait (their call gets longer) and
  everything after the call moves later by that wait;
- `distributedInfo` says `{"backend", "rank": r, "world_size": N}`; files are `rankNN.pt.trace.json.gz`, written
  with `baseTimeNanoseconds` and relative µs timestamps (exactly 3 decimals, as current Kineto writes them).

So the slowed rank computes more slowly, arrives last at every collective and makes the others wait: the
straggler a cross-rank view has to find. Used by tests/ (on a small corpus rank) and bench/ranks.py (64 ranks of
the 68k-event corpus trace).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path

import numpy as np

DEVICE_COLLECTIVE_RX = re.compile(r"(?:^|\s)(?:nccl|rccl|ncclDev)[A-Za-z]*Kernel|^nccl[A-Z_]", re.I)
HOST_COLLECTIVE_RX = re.compile(r"^(?:nccl|gloo|ucc|mpi):[A-Za-z_]")
DEVICE_CATS = ("kernel", "Kernel")
HOST_CATS = ("user_annotation", "cpu_op", "Operator")


def read_trace(path: Path) -> dict:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        doc = json.load(fh)
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    return doc


def _collectives(events: list[dict], start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) ns of the collective calls, sorted by end: device kernels if any, else host scopes."""
    for cats, rx in ((DEVICE_CATS, DEVICE_COLLECTIVE_RX), (HOST_CATS, HOST_COLLECTIVE_RX)):
        idx = [
            k for k, e in enumerate(events)
            if e.get("ph") == "X" and e.get("cat") in cats and rx.search(str(e.get("name", "")))
            and (cats is DEVICE_CATS or rx.match(str(e.get("name", ""))))
        ]
        if idx:
            a = np.asarray(idx)
            order = np.argsort(end[a], kind="stable")
            return start[a][order], end[a][order]
    return np.zeros(0, np.int64), np.zeros(0, np.int64)


def make_job(
    trace: Path,
    out_dir: Path,
    *,
    ranks: int = 16,
    slow_rank: int = 5,
    slow: float = 1.3,
    jitter: float = 0.01,
    seed: int = 0,
    sync: bool = True,
    compresslevel: int = 1,
) -> list[Path]:
    """Write `ranks` files under `out_dir`; returns their paths (rank order)."""
    doc = read_trace(Path(trace))
    events: list[dict] = [e for e in doc.get("traceEvents", []) if isinstance(e, dict)]
    base = int(doc.get("baseTimeNanoseconds") or 0)
    has_ts = np.array([isinstance(e.get("ts"), (int, float)) for e in events], bool)
    ts = np.array([float(e["ts"]) if h else 0.0 for e, h in zip(events, has_ts)])
    dur = np.array([float(e.get("dur", 0) or 0) if isinstance(e.get("dur", 0), (int, float)) else 0.0 for e in events])
    start = np.rint(ts * 1000).astype(np.int64) + base
    end = start + np.rint(dur * 1000).astype(np.int64)
    timed = has_ts & np.array([e.get("ph") != "M" for e in events], bool)
    steps = np.array([str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X" for e in events], bool)
    t0 = int(start[steps].min()) if steps.any() else int(start[timed].min())  # every rank starts step 1 together
    cs, ce = _collectives(events, start, end)
    timed_idx = np.nonzero(timed)[0].tolist()

    rng = np.random.default_rng(seed)
    factor = 1.0 + jitter * rng.uniform(-1.0, 1.0, ranks)
    if 0 <= slow_rank < ranks:
        factor[slow_rank] = slow

    def warp(r: int, t: np.ndarray) -> np.ndarray:
        return t0 + np.rint((t - t0) * factor[r]).astype(np.int64)

    # D[r, i]: how much later than the warped time everything after collective i ends up on rank r
    shift = np.zeros((ranks, len(cs)), np.int64)
    if sync and len(cs):
        for i in range(len(cs)):
            before = shift[:, i - 1] if i else np.zeros(ranks, np.int64)  # the waits so far (never decreases)
            own_end = np.array([warp(r, ce[i : i + 1])[0] for r in range(ranks)]) + before
            shift[:, i] = own_end.max() - own_end + before  # wait for the last rank, then carry on

    def retime(r: int, t: np.ndarray) -> np.ndarray:
        out = warp(r, t)
        if len(cs):
            k = np.searchsorted(ce, t, side="right") - 1
            out = out + np.where(k >= 0, shift[r, np.maximum(k, 0)], 0)
        return out

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    top = {k: v for k, v in doc.items() if k not in ("traceEvents", "baseTimeNanoseconds", "distributedInfo", "traceName")}
    backend = (doc.get("distributedInfo") or {}).get("backend") or "nccl"
    paths = []
    for r in range(ranks):
        s2 = np.where(has_ts, retime(r, start), 0)
        e2 = np.where(has_ts, retime(r, end), 0)
        new_base = (int(s2[timed].min()) // 1_000_000) * 1_000_000
        ts_us = ((s2 - new_base) / 1000.0).tolist()
        dur_us = ((e2 - s2) / 1000.0).tolist()
        for k in timed_idx:
            e = events[k]
            e["ts"] = ts_us[k]
            if "dur" in e:
                e["dur"] = dur_us[k]
        body = dict(top)
        body["baseTimeNanoseconds"] = new_base
        body["distributedInfo"] = {"backend": backend, "rank": r, "world_size": ranks}
        body["traceEvents"] = events
        path = out_dir / f"rank{r:02d}.pt.trace.json.gz"
        body["traceName"] = str(path)
        path.write_bytes(gzip.compress(json.dumps(body, separators=(",", ":")).encode("utf-8"), compresslevel))
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace", type=Path)
    p.add_argument("out_dir", type=Path)
    p.add_argument("--ranks", type=int, default=16)
    p.add_argument("--slow-rank", type=int, default=5)
    p.add_argument("--slow", type=float, default=1.3, help="the slowed rank's time factor (1.3 = 30%% slower)")
    p.add_argument("--jitter", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-sync", action="store_true", help="no collective synchronisation between ranks")
    a = p.parse_args(argv)
    paths = make_job(a.trace, a.out_dir, ranks=a.ranks, slow_rank=a.slow_rank, slow=a.slow, jitter=a.jitter,
                     seed=a.seed, sync=not a.no_sync)
    print(f"wrote {len(paths)} ranks under {a.out_dir} (rank {a.slow_rank} slowed x{a.slow})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
