"""The pieces every text report shares: times, percentages and sizes, and tables as aligned text, Markdown and
CSV. One place, so the CLI, the app and every report format the same value the same way.

A leaf module (it imports nothing of trntui but `textsafe` and `units`): any layer above the model may use it.
"""

from __future__ import annotations

import csv
import io
import re as _re
from typing import Any, Iterable, Sequence

from trntui.textsafe import csv_safe, safe_text
from trntui.units import format_bytes, format_time  # noqa: F401 - re-exported: sizes and durations are formatted in trntui/units.py


def format_pct(p: float) -> str:
    return f"{p:.2f}%"


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str = "") -> list[str]:
    """An aligned plain-text table: rule, header, rule, rows, rule; columns two spaces apart, as wide as their
    widest cell, trailing blanks cut. `align` has one letter per column, `l` or `r`; missing letters are `r`
    (numbers), so `"l"` left-aligns just the first column. Cells are printed as given (make them safe first)."""
    widths = [max([len(h)] + [len(r[j]) for r in rows]) for j, h in enumerate(headers)]
    sep = "  "

    def line(vals: Sequence[str]) -> str:
        return sep.join(
            v.ljust(w) if align[j : j + 1] == "l" else v.rjust(w) for j, (v, w) in enumerate(zip(vals, widths))
        ).rstrip()

    rule = "-" * (sum(widths) + len(sep) * (len(widths) - 1))
    return [rule, line(headers), rule, *[line(r) for r in rows], rule]


def markdown_safe(text: str) -> str:
    """A whole Markdown report made inert where it is rendered (a PR comment, a wiki, a notebook): `&`, `<` and
    `>` become entities (a trace's `<script>`, `<img onerror=...>` or `<!--` is shown, never interpreted as
    HTML), and `](` is escaped (a name cannot become a link). Applied once, to every Markdown report, as the
    terminal-safety pass is applied to every string the CLI prints."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("](", "]\\(")


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown (GitHub) table; `|` in a cell is escaped. Cells are printed as given (make them safe first)."""

    def esc(s: str) -> str:
        return s.replace("|", "\\|")

    return [
        "| " + " | ".join(esc(h) for h in headers) + " |",
        "|" + "|".join(" --- " for _ in headers) + "|",
        *["| " + " | ".join(esc(c) for c in r) + " |" for r in rows],
    ]


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """CSV (`\\n` line ends) of `header` then `rows`. Text cells are made terminal-safe and guarded against
    formula injection (`textsafe.csv_safe`); numbers stay numbers, None is an empty cell."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([csv_safe(safe_text(h)) for h in header])
    for row in rows:
        writer.writerow([csv_safe(safe_text(v)) if isinstance(v, str) else v for v in row])
    return buf.getvalue()


# -- long C++ / Triton names ----------------------------------------------------------------------------------

_RETURN_TYPE = _re.compile(r"^(?:__global__\s+)?void\s+")
_ANON = _re.compile(r"\(anonymous namespace\)::")
_LAMBDA = _re.compile(r"(?:::)?\{lambda\([^{}]*\)#\d+\}")
_OPERATOR_CALL = _re.compile(r"::operator\(\)\(\)(?: const)?")
_PARAMS = _re.compile(r"(?<=[\w>\]])\((?:[^()]*)\)(?: const)?")
_NAMESPACES = _re.compile(r"\b(?:[A-Za-z_]\w*::)+(?=[A-Za-z_~])")
_SPACES = _re.compile(r"\s+")


def simplified_name(name: str) -> str:
    """A C++ name the way Nsight's short kernel names read: no return type, no parameter lists, no namespaces,
    no lambda scopes, the template arguments kept (`void at::native::vectorized_elementwise_kernel<4,
    at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, ...)` ->
    `vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, Array<char*, 3>>`). Other names are unchanged."""
    if "(" not in name and "<" not in name:
        return name  # an op (`aten::foo`), a Triton kernel: nothing to simplify
    s = _RETURN_TYPE.sub("", name.strip())
    s = _ANON.sub("", s)
    s = _OPERATOR_CALL.sub("", s)
    for _ in range(8):
        t = _PARAMS.sub("", _LAMBDA.sub("", s))
        if t == s:
            break
        s = t
    s = _NAMESPACES.sub("", s)
    s = _SPACES.sub(" ", s).replace("> >", ">>").replace("> >", ">>")
    return s or name


_BOILERPLATE = _re.compile(r"^(?:\d+\w*|true|false|float|double|int|bool|half|unsigned int|long|Array<.*>)$")
"""Template arguments that rarely tell two kernels apart (sizes, flags, element types, the launch's Array)."""


def _template_args(text: str) -> list[str]:
    """The top-level comma-separated arguments of a template argument list."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    out.append(text[start:].strip())
    return [a for a in out if a]


def short_name(name: str, width: int) -> str:
    """`name` in at most `width` cells, keeping what tells long C++/Triton names apart: the simplified name
    (`simplified_name`), then, if still too long, its start (the kernel's own name) and the template arguments
    that name something, or its end, with what lies between elided (`…`). Two names may read the same:
    `short_names` makes a column's names distinct."""
    if width <= 0:
        return ""
    if len(name) <= width:
        return name
    s = simplified_name(name)
    if len(s) <= width:
        return s
    if width < 8:
        return s[: width - 1] + "…"
    cut = s.find("<")
    has_head = 0 < cut <= width - 10  # the kernel's own name, with room after it for what tells it apart
    head = s[: cut + 1] if has_head else s[: width // 2]
    room = width - len(head) - 1
    if has_head and s.endswith(">"):
        # the template arguments that name something (a functor, an op), without the numbers and the
        # `Array<char*, N>` of the launch configuration: what tells `vectorized_elementwise_kernel<…>`s apart
        core = [a for a in _template_args(s[cut + 1 : -1]) if not _BOILERPLATE.match(a)]
        if core:
            text = ", ".join(core)
            if len(text) + 2 <= room:
                return head + "…" + text + "…>"
            if room >= 6:
                return head + "…" + text[: room - 2] + "…>"
    return head + "…" + s[len(s) - room :]


def _window(s: str, width: int, at: int, lead: str) -> str:
    """`s` in `width` cells showing the text around index `at` (where it differs from another name): `lead`
    (the kernel's own name, `simplified_name` up to its `<`) when it leaves room, else the start of `s`, then
    `…`, the window, and `…` unless the window reaches the end."""
    if len(s) <= width:
        return s
    if not lead or len(lead) > width - 10:
        lead = s[: width // 2]
        if at < len(lead):
            return s[: width - 1] + "…"  # the names differ in what their start shows
    room = width - len(lead) - 1
    start = max(at - min(4, room // 3), 0)
    if len(s) - start <= room:
        return lead + "…" + s[len(s) - room :]
    return lead + "…" + s[start : start + room - 1] + "…"


def _first_difference(texts: Sequence[str]) -> int:
    """The first index at which two of `texts` (distinct) differ."""
    first = None
    ordered = sorted(set(texts))
    for x, y in zip(ordered, ordered[1:]):  # the first difference of any pair is that of two neighbours in order
        at = next((i for i, (a, b) in enumerate(zip(x, y)) if a != b), min(len(x), len(y)))
        first = at if first is None else min(first, at)
    return first or 0


def _collisions(out: Sequence[str], names: Sequence[str]) -> list[list[int]]:
    """Groups of rows whose different names read the same."""
    seen: dict[str, list[int]] = {}
    for k, s in enumerate(out):
        seen.setdefault(s, []).append(k)
    return [same for same in seen.values() if len(same) > 1 and len({names[k] for k in same}) > 1]


def short_names(names: Sequence[str], width: int) -> list[str]:
    """`short_name` of each of `names`, distinct for distinct names: where the plain shortening makes two long
    names read the same (three `vectorized_elementwise_kernel<4, …>` rows, two overloads that differ only in a
    namespace or a parameter list), those show the part where they differ — of the simplified names where those
    differ, else of the names themselves — group by group until every name reads differently. Names equal
    to each other read the same; a width too small to show a difference numbers the names (`~2`)."""
    out = [short_name(n, width) for n in names]
    for _ in range(64):
        groups = _collisions(out, names)
        if not groups:
            return out
        for same in groups:
            basis = [names[k] for k in same]
            for shorter in (simplified_name, lambda n: _RETURN_TYPE.sub("", n.strip())):
                texts = [shorter(names[k]) for k in same]
                if len(set(texts)) == len({names[k] for k in same}):  # still tells every name apart
                    basis = texts
                    break
            if width >= 8:
                at = _first_difference(basis)
                leads = [simplified_name(names[k]) for k in same]
                texts = [_window(b, width, at, lead[: lead.find("<") + 1]) for b, lead in zip(basis, leads)]
                if len(set(texts)) > 1 or all(t != out[same[0]] for t in texts):
                    for k, t in zip(same, texts):
                        out[k] = t
                    continue
            distinct = sorted({names[k] for k in same})
            for k in same:
                tag = f"~{distinct.index(names[k]) + 1}"
                out[k] = (out[k][: max(width - len(tag), 0)] + tag)[-width:] if width > 0 else ""
    left = _collisions(out, names)
    if left:  # the rounds went in circles: number what still reads the same, across the column
        distinct = sorted({names[k] for same in left for k in same})
        for same in left:
            for k in same:
                tag = f"~{distinct.index(names[k]) + 1}"
                out[k] = (out[k][: max(width - len(tag), 0)] + tag)[-width:] if width > 0 else ""
    return out


def terminal_width() -> int | None:
    """The width headless tables fit: `COLUMNS` when set, else the terminal's when standard output is one;
    None when it is a pipe or a file (scripts and CI get every column and whole names, as with `--wide`)."""
    import os
    import sys

    from ..settings import columns

    if (width := columns()) is not None:
        return width
    try:
        if sys.stdout.isatty():
            return os.get_terminal_size(sys.stdout.fileno()).columns or None
    except (AttributeError, OSError, ValueError):
        pass
    return None


def fitted_table(headers: Sequence[str], rows: Sequence[Sequence[str]], name_column: int, width: int | None,
                 align: str = "", min_name: int = 24, give_way: Sequence[int] = ()) -> list[str]:
    """`text_table` that fits `width` cells (None: everything in full, `--wide`): the columns of `give_way`
    (indices, least important first) are left out one by one while the others leave the names of column
    `name_column` less than `min_name` cells, then the names are shortened (`short_names`) to the room left.
    Columns left out are named on a line under the table."""
    hidden: list[int] = []
    if width is not None and rows:
        def cells(j: int) -> int:
            return max([len(headers[j])] + [len(r[j]) for r in rows]) + 2

        def others() -> int:
            return sum(cells(j) for j in range(len(headers)) if j != name_column and j not in hidden)

        for j in give_way:
            if width - others() >= min(min_name, cells(name_column) - 2):
                break
            hidden.append(j)
        room = max(width - others(), min_name, len(headers[name_column]))
        names = short_names([r[name_column] for r in rows], room)
        rows = [[*r[:name_column], n, *r[name_column + 1:]] for r, n in zip(rows, names)]
    keep = [j for j in range(len(headers)) if j not in hidden]
    align = "".join(align[j : j + 1] or "r" for j in keep)
    lines = text_table([headers[j] for j in keep], [[r[j] for j in keep] for r in rows], align)
    if hidden:
        import textwrap

        note = (f"({len(hidden)} column{'s' if len(hidden) > 1 else ''} left out to fit {width} columns: "
                f"{', '.join(headers[j] for j in sorted(hidden))}; --wide shows them)")
        lines += textwrap.wrap(note, max(width or 0, 40))
    return lines


def fold(line: str, width: int) -> list[str]:
    """A prose line (a recommendation, a note, a device line) folded to `width` cells, its continuation lines
    indented; table rows and rules are left as they are (`fitted_table` fits those)."""
    if len(line) <= width or "  " in line.strip():
        return [line]  # short, or a table's row or rule (cells two spaces apart): never folded
    import textwrap

    lead = len(line) - len(line.lstrip(" "))
    indent = " " * (lead + 2)
    return textwrap.wrap(line, max(width, 40), subsequent_indent=indent, break_on_hyphens=False) or [line]


def fold_legend(line: str, width: int | None) -> list[str]:
    """A legend of entries two spaces apart (`  K=Kernel  M=Memcpy  …`) packed into lines of `width` cells,
    each continuation line indented like the first; None: one line."""
    if width is None or len(line) <= width:
        return [line]
    lead = line[: len(line) - len(line.lstrip(" "))]
    out: list[str] = []
    for entry in line.split("  "):
        if not entry.strip():
            continue
        if out and len(out[-1]) + 2 + len(entry) <= width:
            out[-1] += "  " + entry.strip()
        else:
            out.append(lead + entry.strip())
    return out

