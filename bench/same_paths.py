"""The compiled and the Python Kineto paths give the same results on the bench's big traces (issue 32, Must show 1).

    python bench/same_paths.py            # the CPU trace and the 2M trace
    python bench/same_paths.py --big      # and the 5M trace (summary outputs only: its digests take minutes)

For each trace, in fresh processes: `trntui summary --no-cache` in every format (table, csv, json, markdown) with
`TRNTUI_KINETO_PARSER=compiled` and `=python`, compared by SHA-256; and (not for the 5M trace) the digests of
tests/kineto_digest.py (every column, names, lanes, flows, args bytes, link ids, metadata, both key_averages
tables) of `load_kineto` on both paths. A big plain trace is read from a memory map, its args left in the file on
the compiled path (model/args.py `FileBlob`): the digests read every event's args back from it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import make_inputs  # noqa: E402

DIGEST = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
from tests.kineto_digest import digest
from trntui.loaders.kineto.load import load_kineto
profile = load_kineto(sys.argv[1])
print(json.dumps({"args_in": type(profile.args_raw.blob).__name__, **digest(profile)}))
"""


def _env(parser: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "TRNTUI_KINETO_PARSER")}
    env.update(PYTHONPATH=str(ROOT), TRNTUI_KINETO_PARSER=parser, TRNTUI_CACHE_DIR=str(make_inputs.DATA / "cache"),
               PYTHONPYCACHEPREFIX=str(make_inputs.DATA / "pycache"))
    return env


def summaries(trace: Path, parser: str) -> dict[str, str]:
    out = {}
    for fmt in ("table", "csv", "json", "markdown"):
        got = subprocess.run([sys.executable, "-m", "trntui.cli", "summary", str(trace), "--no-cache", "--format", fmt],
                             capture_output=True, env=_env(parser), check=True)
        out[fmt] = hashlib.sha256(got.stdout).hexdigest()
    return out


def digests(trace: Path, parser: str) -> dict[str, str]:
    got = subprocess.run([sys.executable, "-c", DIGEST, str(trace), str(ROOT)], capture_output=True, text=True,
                         env=_env(parser), check=True)
    return json.loads(got.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--big", action="store_true", help="also the 5M-event trace (summary outputs only)")
    args = ap.parse_args(argv)
    kinds = ["cpu", "2m"] + (["5m"] if args.big else [])
    same = True
    for kind in kinds:
        trace = make_inputs.ensure(kind)
        s = {p: summaries(trace, p) for p in ("compiled", "python")}
        ok = s["compiled"] == s["python"]
        line = f"{trace.name}: summary in 4 formats {'equal' if ok else 'DIFFER'}"
        if kind != "5m":
            d = {p: digests(trace, p) for p in ("compiled", "python")}
            kept = d["compiled"].pop("args_in"), d["python"].pop("args_in")
            differ = sorted(k for k in d["python"] if d["compiled"].get(k) != d["python"][k])
            ok = ok and not differ
            line += (f"; digests of {len(d['python'])} aspects {'equal' if not differ else 'DIFFER: ' + ', '.join(differ)}"
                     f" (args held as {kept[0]} / {kept[1]})")
        print(line, flush=True)
        same = same and ok
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
