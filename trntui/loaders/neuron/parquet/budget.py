"""Refusing an export that cannot fit the memory budget, before it is read: its rows from the Parquet footers,
its split parts, and the real decoded size of its text columns."""

from __future__ import annotations

from pathlib import Path

from trntui import fsio
from trntui.loaders.neuron.parquet.tables import EVENTS, _pyarrow, table_files
from trntui.model.builder import ProfileBuilder

def _text_bytes(files: list[Path], cap: int) -> int:
    """Bytes the string and binary columns of `files` take once decoded (as Arrow, and again as Python strings
    for the columns read row by row): exact per column chunk, from the footer for plainly encoded chunks (their
    uncompressed size IS their data) and from the dictionary and its indices for dictionary-encoded ones (a 1 MiB
    value shared by 2,000 rows is 2 GiB decoded, though the file holds it once; reading the indices and the
    dictionary costs about the chunk's uncompressed size, at most `cap` / 8). Stops counting past `cap`."""
    import pyarrow.compute as pc

    pa, pq = _pyarrow()
    total = 0
    for f in files:
        probe = pq.ParquetFile(f)
        schema = probe.schema_arrow
        texts = [k for k, fld in enumerate(schema) if pa.types.is_string(fld.type) or pa.types.is_large_string(fld.type)
                 or pa.types.is_binary(fld.type) or pa.types.is_large_binary(fld.type)
                 or (pa.types.is_dictionary(fld.type) and not pa.types.is_integer(fld.type.value_type))]
        # string columns read as dictionaries: indices and the dictionary, never the decoded values
        pf = pq.ParquetFile(f, read_dictionary=[schema[k].name for k in texts])
        md = pf.metadata
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            dict_cols = []
            for k in texts:
                if k >= rg.num_columns:
                    continue
                col = rg.column(k)
                if col.has_dictionary_page and col.total_uncompressed_size <= cap // 8:
                    dict_cols.append(schema[k].name)
                else:  # plain pages (or a dictionary that fell back to them): their data, decoded, is this big
                    total += col.total_uncompressed_size
            if dict_cols:  # indices + dictionary only: small whatever the decoded size
                t = pf.read_row_group(g, columns=dict_cols, use_threads=False)
                for name in dict_cols:
                    col = t.column(name)
                    for chunk in col.chunks:
                        if pa.types.is_dictionary(chunk.type):
                            lengths = pc.binary_length(chunk.dictionary).fill_null(0)
                            idx = chunk.indices.fill_null(0)
                            total += int(pc.sum(pc.take(lengths, idx)).as_py() or 0) if len(idx) else 0
                        else:
                            total += chunk.nbytes
                del t
            if total > cap:
                return total
    return total


_TEXT_BYTES_PER_ROW = 256
"""String bytes per row that `memory.NEURON_BYTES_PER_ROW` already covers (names, sources, attribute JSON)."""


def _check_budget(directory: Path, builder: ProfileBuilder, budget: int | None) -> None:
    """Refuse the export, before reading it, when it cannot fit: its rows (from the Parquet footers) and the
    real decoded size of its text columns (`_text_bytes`: a dictionary-encoded value shared by many rows is
    counted once per row, as the read materialises it)."""
    if budget is None:
        return
    from trntui import memory

    try:
        _pa, pq = _pyarrow()
        events = table_files(directory, EVENTS)
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in events)
        # only regular files: a FIFO of another name is never read, and opening it here would block
        others = sorted(p for p in directory.glob("*.parquet") if p not in events and fsio.is_regular(p))
        base = builder.nbytes + memory.STREAMED_FIXED_BYTES + rows * memory.NEURON_BYTES_PER_ROW
        parts = len(events) if len(events) > 1 else 0
        base += parts * parts * memory.NEURON_PART_PAIR_BYTES  # (1,001 duplicated parts: 1.65 GB under 200M)
        text = _text_bytes(events + others, budget) if base <= budget else 0  # (over already: not worth the scan)
    except Exception:  # noqa: BLE001 - an unreadable footer is reported by the read itself
        return
    # text beyond what the per-row figure covers is held twice at the peak (Arrow's column and its copy)
    extra = 2 * max(0, text - rows * _TEXT_BYTES_PER_ROW)
    needed = base + extra
    if needed > budget:
        texts = f", {'at least ' if text > budget else ''}{memory.fmt(text)} of text once decoded" if extra else ""
        split = f" in {parts:,} split parts" if parts else ""
        raise memory.over_budget(directory, needed, budget, f"this Neuron export ({rows:,} system-trace rows{split}{texts})")
