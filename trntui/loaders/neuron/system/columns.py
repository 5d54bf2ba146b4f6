"""Neuron system-trace rows as columns: `Strs` (a dictionary-encoded string column) and `SystemRows` (the columns
of `SystemProfileEvents`), the selection of rows and the concatenation of split tables' rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trntui.model.args import ArgsStore


class Strs:
    """A column of strings (or None) as codes into `values` (dictionary encoded): per-row work is numpy work."""

    __slots__ = ("codes", "values")

    def __init__(self, codes: np.ndarray, values: list[Any]) -> None:
        self.codes = np.asarray(codes, np.int64)
        self.values = list(values)

    @classmethod
    def from_list(cls, items: list[Any]) -> "Strs":
        ids: dict[Any, int] = {}
        codes = np.fromiter((ids.setdefault(x, len(ids)) for x in items), np.int64, count=len(items))
        return cls(codes, list(ids))

    def __len__(self) -> int:
        return len(self.codes)

    def tolist(self) -> list[Any]:
        v = self.values
        return [v[c] for c in self.codes.tolist()]

    def take(self, idx: np.ndarray) -> "Strs":
        return Strs(self.codes[idx], self.values)

    def __getitem__(self, k: int) -> Any:
        return self.values[int(self.codes[k])]

    def mapped(self, fn: Any) -> "Strs":
        """fn applied to each distinct value (equal results merged into one code)."""
        out = [fn(v) for v in self.values]
        ids: dict[Any, int] = {}
        remap = np.fromiter((ids.setdefault(x, len(ids)) for x in out), np.int64, count=len(out))
        return Strs(remap[self.codes] if len(out) else self.codes, list(ids))

    @staticmethod
    def concat(parts: list["Strs"]) -> "Strs":
        ids: dict[Any, int] = {}
        codes = []
        for p in parts:
            remap = np.fromiter((ids.setdefault(x, len(ids)) for x in p.values), np.int64, count=len(p.values))
            codes.append(remap[p.codes] if len(p.values) else p.codes)
        return Strs(np.concatenate(codes) if codes else np.zeros(0, np.int64), list(ids))

    def first_seen_codes(self, idx: np.ndarray, fn: Any = None) -> tuple[np.ndarray, list[Any]]:
        """Codes of rows `idx` renumbered 0.. by first appearance (in `idx` order) of `fn(value)`, and those
        values in that order (what a dict filled row by row gives)."""
        vals = self.values if fn is None else [fn(v) for v in self.values]
        ids: dict[Any, int] = {}
        merged = np.fromiter((ids.setdefault(x, len(ids)) for x in vals), np.int64, count=len(vals))
        uvals = list(ids)
        c = merged[self.codes[idx]] if len(vals) else np.zeros(0, np.int64)
        if not len(c):
            return c, []
        first = np.full(len(uvals), len(c), np.int64)
        first[c[::-1]] = np.arange(len(c) - 1, -1, -1)  # repeated indices: the last write (first row) wins
        present = np.nonzero(first < len(c))[0]
        u = present[np.argsort(first[present], kind="stable")]
        rank = np.empty(len(uvals), np.int64)
        rank[u] = np.arange(len(u))
        return rank[c], [uvals[k] for k in u.tolist()]


@dataclass
class SystemRows:
    """`SystemProfileEvents` rows as columns. Missing values: -1 for ints, "" / None for strings.

    String columns are `Strs` (codes + distinct values); `args` is a list (dicts or JSON text per row) or an
    `ArgsStore` of JSON bytes (the columnar Parquet path)."""

    name: Strs
    start: np.ndarray
    end: np.ndarray
    source: Strs
    instance: Strs
    pid: np.ndarray
    tid: np.ndarray
    nc: np.ndarray
    pcore: np.ndarray
    stream: Strs
    seq: np.ndarray
    """`nrt_sequence_id` (column or extra attribute), -1 when absent."""
    flow_row: np.ndarray
    """Exploded `flow_id`: row index of each (row, flow value) pair."""
    flow_key: np.ndarray
    args: Any
    """Per row: a dict, or a JSON object string/bytes parsed on demand, or None (a list or an `ArgsStore`)."""
    notes: list[str] = field(default_factory=list)
    category: Strs | None = None
    """The Kineto category Explorer kept in a row's attributes (`category` / `cat`), when read column-wise."""
    skipped: dict[str, int] = field(default_factory=dict)
    """What was left out and how many (the profile's `meta.skip` counts): values out of the int64 range."""

    def __len__(self) -> int:
        return len(self.start)

    def take(self, mask: np.ndarray) -> "SystemRows":
        idx = np.nonzero(mask)[0]
        remap = np.full(len(self), -1, np.int64)
        remap[idx] = np.arange(len(idx))
        fsel = mask[self.flow_row] if len(self.flow_row) else np.zeros(0, bool)
        return SystemRows(
            name=self.name.take(idx),
            start=self.start[idx],
            end=self.end[idx],
            source=self.source.take(idx),
            instance=self.instance.take(idx),
            pid=self.pid[idx],
            tid=self.tid[idx],
            nc=self.nc[idx],
            pcore=self.pcore[idx],
            stream=self.stream.take(idx),
            seq=self.seq[idx],
            flow_row=remap[self.flow_row[fsel]],
            flow_key=self.flow_key[fsel],
            args=_take_args(self.args, idx),
            notes=list(self.notes),
            category=self.category.take(idx) if self.category is not None else None,
            skipped=dict(self.skipped),
        )


def _take_args(args: Any, idx: np.ndarray) -> Any:
    if isinstance(args, ArgsStore):
        return args.permuted(idx)
    return [args[i] for i in idx.tolist()]


def concat_rows(parts: list[SystemRows]) -> SystemRows:
    """Rows of several split tables, in order."""
    if len(parts) == 1:
        return parts[0]
    offsets = np.cumsum([0] + [len(p) for p in parts[:-1]])
    cat = lambda attr: Strs.concat([getattr(p, attr) for p in parts])  # noqa: E731
    arr = lambda attr: np.concatenate([getattr(p, attr) for p in parts])  # noqa: E731
    if all(isinstance(p.args, ArgsStore) for p in parts):
        args: Any = ArgsStore.concat([p.args for p in parts])
    else:
        args = [x for p in parts for x in p.args]
    return SystemRows(
        name=cat("name"),
        start=arr("start"),
        end=arr("end"),
        source=cat("source"),
        instance=cat("instance"),
        pid=arr("pid"),
        tid=arr("tid"),
        nc=arr("nc"),
        pcore=arr("pcore"),
        stream=cat("stream"),
        seq=arr("seq"),
        flow_row=np.concatenate([p.flow_row + o for p, o in zip(parts, offsets)]),
        flow_key=arr("flow_key"),
        args=args,
        notes=[n for p in parts for n in p.notes],
        category=Strs.concat([p.category for p in parts]) if all(p.category is not None for p in parts) else None,
        skipped={k: sum(p.skipped.get(k, 0) for p in parts) for k in dict.fromkeys(k for p in parts for k in p.skipped)},
    )

