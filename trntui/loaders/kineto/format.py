"""The Kineto trace format: its discovery, its load and its cache inputs (trntui/loaders/protocol.py)."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from trntui.errors import LoadError, OverBudget
from trntui.loaders.discover import Run
from trntui.loaders.kineto.discover import find_kineto_runs
from trntui.loaders.protocol import LoadOptions

if TYPE_CHECKING:  # (the model imports numpy: finding runs, and the first scans of a load (early.py), do without it)
    from trntui.model.builder import ProfileBuilder


def load_traces(traces: list[Path], builder: ProfileBuilder, options: LoadOptions, *, alone: bool = True) -> None:
    """Add every chrome trace of a run to `builder`, each under what is left of the memory budget.

    `alone`: the traces are all the run holds. Then a run of one file fails with that file's error, and a run
    of several fails only when none can be read. Otherwise (other sources follow, e.g. a Neuron export) an
    unreadable trace is skipped and counted. A trace over the budget always stops the load."""
    from trntui.loaders.kineto.load import load_kineto_into  # the decoder: imported when something is read

    budget = options.budget
    failures: list[LoadError] = []

    def left() -> int | None:
        return None if budget is None else max(budget - builder.nbytes, 1)

    for trace in traces:
        if len(traces) == 1 and alone:
            load_kineto_into(trace, builder, budget=left(), scratch_dir=options.scratch_dir,
                             args_from_file=options.args_from_file)
            continue
        try:  # one broken file of several (e.g. a rank killed mid-write) must not hide the others
            load_kineto_into(trace, builder, budget=left(), scratch_dir=options.scratch_dir,
                             args_from_file=options.args_from_file)
        except OverBudget:
            raise
        except LoadError as exc:
            failures.append(exc)
            builder.meta.skip("unreadable trace files", 1)
            builder.meta.notes.append(f"skipped {exc}")
    if failures and len(failures) == len(traces) and alone:
        raise failures[0]


class KinetoFormat:
    """torch.profiler / Kineto chrome traces: `trace.json`, `*.pt.trace.json[.gz]`, any chrome-trace file."""

    name = "kineto"

    def find_runs(self, path: Path) -> list[Run]:
        return find_kineto_runs(path)

    def begin(self, run: Run, options: LoadOptions) -> AbstractContextManager[None]:
        """Before the model (numpy) is imported: a run of one big plain trace is mapped and the compiled scans of
        its first pieces start on threads, for `load` to claim (early.py)."""
        if len(run.framework_traces) != 1:
            return nullcontext()
        from trntui.loaders.kineto.early import begin

        return begin(run.framework_traces[0], options.budget, options.args_from_file)

    def load(self, run: Run, builder: ProfileBuilder, options: LoadOptions) -> None:
        load_traces(run.framework_traces, builder, options)

    def inputs(self, run: Run) -> list[Path] | None:
        return list(run.framework_traces)


FORMAT = KinetoFormat()
