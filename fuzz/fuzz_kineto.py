"""Fuzz entry point for the Kineto JSON loader (atheris, coverage-guided). See docs/fuzzing.md.

    pip install atheris
    python fuzz/fuzz_kineto.py -atheris_runs=200000 -max_len=65536 fuzz/corpus/

Every input is written as a trace file and loaded, analysed and rendered in every CLI format. The only
exception allowed out is `trntui.errors.TrntuiError` (the one-line "bad input" error); anything else, or a
control character in the rendered output, is a crash that atheris reports with the input that caused it.

Without atheris, `python fuzz/fuzz_kineto.py FILE...` replays inputs (e.g. a crash file) through the same check.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_TMP = Path(tempfile.mkdtemp(prefix="trntui-fuzz-"))


def check(data: bytes) -> None:
    """Load `data` as a trace (plain and gzipped by its magic), analyse and render it; raise on any bug."""
    from trntui.analysis.key_averages import key_averages
    from trntui.errors import TrntuiError
    from trntui.loaders.kineto import load_kineto
    from trntui.report.summary import render

    path = _TMP / ("input.json.gz" if data[:2] == b"\x1f\x8b" else "input.json")
    path.write_bytes(data)
    try:
        profile = load_kineto(path)
    except TrntuiError:
        return
    table = key_averages(profile)
    for fmt in ("table", "csv", "json", "markdown"):
        out = render(profile, table, fmt)
        bad = _CONTROL.search(out)
        if bad is not None:
            raise AssertionError(f"control character {bad.group(0)!r} in {fmt} output")
    try:
        from trntui.analysis.chains import follow
    except ImportError:
        return
    for i in range(min(len(profile), 200)):
        follow(profile, i)


def seeds() -> list[bytes]:
    """A few valid traces to start from (the malformed-corpus generator's small valid and hostile traces)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from malformed import hostile_trace, valid_trace

    return [valid_trace(n_steps=1), hostile_trace(), b'[{"ph":"X","name":"a","ts":1,"dur":2}]']


def main() -> None:
    try:
        import atheris
    except ImportError:
        files = [Path(a) for a in sys.argv[1:] if not a.startswith("-")]
        if not files:
            print("atheris is not installed: pip install atheris (see docs/fuzzing.md); "
                  "replaying the seed inputs instead", file=sys.stderr)
            for data in seeds():
                check(data)
            return
        for f in files:
            for p in sorted(f.rglob("*")) if f.is_dir() else [f]:
                if p.is_file():
                    check(p.read_bytes())
        print(f"replayed {len(files)} path(s): no crash", file=sys.stderr)
        return

    with atheris.instrument_imports():
        import trntui.analysis.key_averages  # noqa: F401
        import trntui.loaders.files  # noqa: F401
        import trntui.loaders.kineto  # noqa: F401
        import trntui.loaders.kineto.recover  # noqa: F401
        import trntui.report.summary  # noqa: F401

    for c in [Path(a) for a in sys.argv[1:] if not a.startswith("-")]:
        c.mkdir(parents=True, exist_ok=True)
        if not any(c.iterdir()):  # seed an empty corpus directory
            for k, data in enumerate(seeds()):
                (c / f"seed{k}.json").write_bytes(data)
    atheris.Setup(sys.argv, check)
    atheris.Fuzz()


if __name__ == "__main__":
    os.environ.setdefault("TRNTUI_DEBUG", "1")
    main()
