"""The Neuron profile format: sessions found by discover.py, loaded as their framework trace (Kineto) plus the
system trace of their Explorer export (or a conversion of their raw files) and mapping files."""

from __future__ import annotations

from pathlib import Path

from typing import TYPE_CHECKING

from trntui.loaders.discover import Run
from trntui.loaders.kineto.format import load_traces
from trntui.loaders.protocol import LoadOptions

if TYPE_CHECKING:  # (the model imports numpy: finding runs and starting a load do without it, formats.py)
    from trntui.model.builder import ProfileBuilder
    from trntui.loaders.neuron.discover import NeuronSource


def load_source(source: NeuronSource, builder: ProfileBuilder, options: LoadOptions, *, has_framework: bool) -> None:
    """Add what a Neuron session holds besides its framework trace: the export's (or converted capture's)
    system-trace rows, the torch-neuronx mapping rows, the session's notes."""
    from trntui.loaders.neuron.discover import read_mapping

    if source.export is not None:
        kwargs = dict(pid_filter=source.pid, label=source.export.name, instance_hint=source.instance,
                      budget=options.budget)
        if source.export_format == "parquet":
            from trntui.loaders.neuron.parquet import load_parquet_export

            load_parquet_export(source.export, builder, **kwargs)
        else:
            from trntui.loaders.neuron.json_export import load_json_export

            load_json_export(source.export, builder, **kwargs)
    elif source.raw:
        from trntui.loaders.neuron.convert import load_converted

        load_converted(source, builder, cache_dir=options.cache_dir, has_framework=has_framework,
                       timeout=options.convert_timeout, budget=options.budget)
    if source.mappings:
        rows = [r for p in source.mappings for r in read_mapping(p)]
        builder.meta.trace_meta.setdefault("neuron_mapping", []).extend(rows)
        builder.meta.sources.extend(str(p) for p in source.mappings)
    if source.notes:
        builder.meta.notes.extend(source.notes)


class NeuronFormat:
    """Neuron profile directories: torch-neuronx captures, Explorer exports, raw captures (neuron-formats.md §3)."""

    name = "neuron"

    def find_runs(self, path: Path) -> list[Run]:
        if not path.is_dir():  # a file is never a Neuron session (its discovery is imported for directories only)
            return []
        from trntui.loaders.neuron.discover import find_neuron_runs

        return find_neuron_runs(path)

    def load(self, run: Run, builder: ProfileBuilder, options: LoadOptions) -> None:
        source = run.source
        extra = source is not None and source.extra
        load_traces(run.framework_traces, builder, options, alone=not extra)
        if extra:
            load_source(source, builder, options, has_framework=bool(run.framework_traces))

    def inputs(self, run: Run) -> list[Path] | None:
        """The framework trace, every file of the export and the mapping files. A raw capture: its files plus
        the cached conversion when there is one (converted output is cached like any input); None before its
        first conversion (the export is made at load time)."""
        source = run.source
        if source is None or not source.extra:
            return list(run.framework_traces)
        export = source.export
        raw_files: list[Path] = []
        if export is None and source.raw:
            from trntui.loaders.neuron.convert import cached_export

            hit = cached_export(source.session_dir)
            if hit is None:
                return None
            export = hit[0]
            raw_files = sorted(p for p in source.session_dir.iterdir() if p.is_file() and p not in run.framework_traces)
        if export is None:
            return None
        files = sorted(f for f in export.rglob("*") if f.is_file()) if export.is_dir() else [export]
        return list(run.framework_traces) + raw_files + files + sorted(source.mappings)


FORMAT = NeuronFormat()
