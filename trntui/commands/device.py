"""`trntui device PATH`: inside a NeuronCore execution — engine busy %, DMA, top instructions, roofline.

PATH is a Neuron Explorer device profile (a directory with `Instruction.parquet`), a directory holding several
(`--nc` picks the NeuronCore), or a Neuron system profile whose device profiles sit in it or beside it (matched
to its process through `DeviceProfileList`). `--exec K` narrows to one execution of a session profile.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trntui.loaders.neuron_device import DeviceRef


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "device",
        help="inside a NeuronCore execution: engine busy %%, DMA, top instructions, roofline (device profile)",
        description="Analyse a Neuron Explorer device profile (Parquet): per-engine busy %% (union of Instruction "
        "intervals), DMA bytes and bandwidth by route and queue, top instructions / opcodes / HLO ops / framework "
        "ops with bytes and FLOPs, and the roofline (arithmetic intensity against the documented peak of the "
        "instance type) with its verdict. Figures the export's own Summary states are shown next to ours.",
    )
    p.add_argument("path", help="device profile directory, a directory holding device profiles, or a system profile")
    p.add_argument("--nc", type=int, metavar="N", help="NeuronCore (logical) when the path holds several")
    p.add_argument("--exec", dest="execution", type=int, metavar="K",
                   help="only execution K (ExecutionInfo.execution_index) of a session profile")
    p.add_argument("--pcore", type=int, action="append", metavar="P",
                   help="only physical core P of a logical NeuronCore (repeatable)")
    p.add_argument("--instance-type", metavar="TYPE",
                   help="instance type for the roofline peaks when the export does not say (trn1, trn2, trn3, inf2, ...)")
    p.add_argument("--limit", type=int, default=10, metavar="N", help="rows per top table (default 10)")
    p.add_argument("--format", choices=("table", "csv", "json", "markdown"), default="table")
    from trntui.commands.options import memory_budget

    p.add_argument(
        "--memory-budget", metavar="SIZE", type=memory_budget,
        help="most memory the read and the analysis may use, e.g. 4G or 800M (default: $TRNTUI_MEMORY_BUDGET, else "
        "80%% of the available memory); an export that cannot fit is refused before it is read, with what it needs",
    )
    p.set_defaults(func=run)


def locate(path: Path, nc: int | None = None) -> "DeviceRef":
    """The one device profile `path` designates (LoadError with one line naming the choices otherwise)."""
    from trntui.errors import LoadError
    from trntui.loaders.neuron_device import device_profiles_of

    if not path.exists():
        raise LoadError(path, "no such file or directory")
    refs = device_profiles_of(path, nc)
    if not refs:
        hint = f" for NeuronCore {nc}" if nc is not None else ""
        raise LoadError(
            path,
            f"no Neuron device profile{hint} here or beside it (a directory with Instruction.parquet, from "
            "`neuron-explorer view -d DIR --output-format parquet` on a capture with device profiling)",
        )
    if len(refs) > 1:
        names = ", ".join(f"{r.name} (nc {r.identity.nc})" for r in refs[:6])
        raise LoadError(path, f"holds {len(refs)} device profiles ({names}{', ...' if len(refs) > 6 else ''}); "
                              "pick one with --nc N or give its directory")
    return refs[0]


def run(args: argparse.Namespace) -> int:
    from trntui import memory
    from trntui.analysis.device import analyse, window_for
    from trntui.report.device import render
    from trntui.loaders.neuron_device import load_device

    ref = locate(Path(args.path), args.nc)
    export = load_device(ref.path, ref.identity, budget=memory.resolve(args.memory_budget))
    window, shift = window_for(export, execution=args.execution)
    report = analyse(export, window=window, shift=shift, pcores=args.pcore, instance_type=args.instance_type,
                     top=max(args.limit, 1))
    sys.stdout.write(render(export, report, args.format, limit=max(args.limit, 1)))
    sys.stdout.flush()
    return 0
