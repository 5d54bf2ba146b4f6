"""Runs named for people, and loading them to compare: the runs under one or more paths (variants of
`trntui profile`, ranks of a Neuron capture, plain trace files) in capture order with short unique names,
the baseline first. Used by `trntui compare` and by the explorer's compare screen (a core module, so the app
never imports the CLI's commands)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from trntui.errors import TrntuiError
from trntui.session import find_runs, load_run

if TYPE_CHECKING:  # pragma: no cover
    from trntui.analysis.compare import ComparedRun


def discover(paths: Sequence[str | Path], merge: bool = False) -> list[tuple[str, Any]]:
    """(display name, loader Run) for every run under `paths`, in order; raises TrntuiError for < 2 runs."""
    from trntui.loaders.discover import capture_order, manifest_position

    found: list[tuple[str, Any]] = []
    for p in paths:
        runs = find_runs(Path(p), merge=merge)
        if len(runs) > 1 and all(manifest_position(r) is not None for r in runs):
            runs = sorted(runs, key=capture_order)  # (find_runs' Neuron layouts come sorted by name)
        elif len(runs) > 1:
            orders = _builtin_order(runs)
            if all(o is not None for o in orders):
                runs = [r for _, r in sorted(zip(orders, runs), key=lambda x: x[0])]
        variants = [_variant(r) for r in runs]
        use_variants = len(runs) > 1 and all(variants) and len(set(variants)) == len(variants)
        for r, v in zip(runs, variants):
            short = v if use_variants else r.name
            if len(paths) == 1 or len(runs) == 1:
                name = short if len(runs) > 1 else _path_name(Path(p), r)
            else:
                name = f"{Path(p).name}/{short}"
            found.append((name, r))
    if len(found) < 2:
        where = ", ".join(str(p) for p in paths)
        raise TrntuiError(f"compare needs at least two runs; {where} holds {len(found)}")
    # unique names
    seen: dict[str, int] = {}
    out = []
    for name, r in found:
        if name in seen:
            seen[name] += 1
            name = f"{name}#{seen[name]}"
        else:
            seen[name] = 1
        out.append((name, r))
    return out


def _variant(run: Any) -> str:
    """The manifest's variant name (`trntui profile` and the bundled samples write one), or ``."""
    v = (getattr(run, "manifest", None) or {}).get("variant")
    return v if isinstance(v, str) and v else ""


def _builtin_order(runs: Sequence[Any]) -> list[float | None]:
    """Order variants of a built-in workload as the workload lists them (naive, fused, compiled) when the
    manifests name variants but carry no order."""
    variants = [_variant(r) for r in runs]
    if not all(variants):
        return [None] * len(runs)
    try:
        import trntui.capture.builtins  # noqa: F401 - registers the built-ins (no torch import)
        from trntui.capture.workloads import BUILTINS
    except Exception:  # noqa: BLE001 - ordering is a nicety
        return [None] * len(runs)
    for info in BUILTINS.values():
        known = list(getattr(info, "variants", ()))
        if set(variants) <= set(known):
            return [float(known.index(v)) for v in variants]
    return [None] * len(runs)


def _path_name(path: Path, run: Any) -> str:
    """A short name for a single-run path: the directory (or file) name, without trace suffixes."""
    name = path.name or str(path)
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            if name.endswith(".pt.trace"):
                name = name[: -len(".pt.trace")]
            break
    if name in ("trace", "") and path.parent.name:
        name = path.parent.name
    return name or run.name


def load_runs(
    paths: Sequence[str | Path], *, by_shapes: bool = False, baseline: str | None = None, options: Any = None,
    merge: bool = False,
) -> list["ComparedRun"]:
    """Load every run under `paths` for comparison (baseline first); `options`: `LoadOptions` (None: the
    defaults, trntui/settings.py)."""
    from trntui.analysis.compare import make_run
    from trntui.progress import finished

    found = discover(paths, merge)
    found = _with_baseline_first(found, baseline)
    runs = [make_run(name, load_run(r, options), group_by_input_shapes=by_shapes, source=str(r.root)) for name, r in found]
    finished()  # the progress line (on a terminal) is erased before anything is printed
    return runs


def _with_baseline_first(found: list[tuple[str, Any]], baseline: str | None) -> list[tuple[str, Any]]:
    if baseline is None:
        return found
    names = [n for n, _ in found]
    if baseline in names:
        k = names.index(baseline)
    elif baseline.isdigit() and 1 <= int(baseline) <= len(found):
        k = int(baseline) - 1
    else:
        raise TrntuiError(f"--baseline {baseline!r}: no such run (runs: {', '.join(names)})")
    return [found[k]] + found[:k] + found[k + 1 :]
