"""Every place trntui opens, creates, renames or deletes a file goes through trntui/fsio.py, or is in the short
allow-list below with its reason (issue 28, Must show 2). The rule and the same list are in docs/architecture.md
("File access"); this test walks the AST of every module, so a new `open(`, `Path.write_text`, `os.replace`,
`shutil.rmtree`, `pq.write_table`, `np.save`, ... outside fsio fails here until it is routed or listed.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "trntui"
DOC = REPO / "docs" / "architecture.md"

# Calls that touch the file system, by the callee's dotted name (`os.replace`) or by its last part on any object
# (`.write_text`: pathlib). Names that strings, lists, arrays or widgets also have (`replace`, `rename`,
# `remove`, `copy`, `open`) count only where the call's shape is a file operation (see `_is_file_call`).
MODULE_CALLS = {
    "os": {"open", "replace", "rename", "renames", "remove", "unlink", "rmdir", "removedirs", "mkdir", "makedirs",
           "mkfifo", "mknod", "link", "symlink", "truncate"},
    "shutil": {"rmtree", "copy", "copy2", "copyfile", "copytree", "move", "copyfileobj"},
    "tempfile": {"mkstemp", "mkdtemp", "NamedTemporaryFile", "TemporaryFile", "TemporaryDirectory",
                 "SpooledTemporaryFile"},
    "np": {"save", "savez", "savez_compressed", "load", "fromfile", "memmap"},
    "numpy": {"save", "savez", "savez_compressed", "load", "fromfile", "memmap"},
    "pq": {"write_table", "read_table", "ParquetFile", "ParquetWriter", "ParquetDataset", "read_metadata",
           "read_schema"},
    "pa": {"memory_map", "OSFile", "input_stream", "output_stream", "create_memory_map"},
    "gzip": {"open", "GzipFile"},
    "bz2": {"open"},
    "lzma": {"open"},
    "zipfile": {"ZipFile"},
    "readline": {"read_history_file", "write_history_file", "append_history_file"},
}
PATH_METHODS = {"write_text", "write_bytes", "read_text", "read_bytes", "touch", "unlink", "rmdir", "mkdir",
                "symlink_to", "hardlink_to", "rmtree"}
"""pathlib.Path methods (no other type in trntui has them)."""


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return ast.unparse(node)
    return f"({ast.unparse(node)})"


def _is_file_call(call: ast.Call) -> bool:
    f = call.func
    if isinstance(f, ast.Name):
        return f.id == "open"  # the builtin
    if not isinstance(f, ast.Attribute):
        return False
    owner = _dotted(f.value)
    if owner in MODULE_CALLS:
        return f.attr in MODULE_CALLS[owner]
    if f.attr in PATH_METHODS:
        return len(call.args) <= 1  # (a module's own write_text(columns, rows, stream, fmt) is not pathlib's)
    # Path.open(...) / Path.replace(target) / Path.rename(target): one positional argument or a mode string;
    # str.replace takes two, dataclasses.replace and DataFrame.rename take keywords, widgets' open() a pattern
    if f.attr in ("replace", "rename") and len(call.args) == 1 and not call.keywords and owner not in (
            "dataclasses",):
        return True
    if f.attr == "open" and owner not in MODULE_CALLS:
        return not call.args or (isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)
                                 and set(call.args[0].value) <= set("rwabxt+"))
    return False


def file_calls() -> list[tuple[str, str, str, int]]:
    """(module path, enclosing function, callee, line) of every file-touching call outside trntui/fsio.py."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel == "trntui/fsio.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        stack: list[tuple[ast.AST, str]] = [(tree, "<module>")]
        while stack:
            node, where = stack.pop()
            for child in ast.iter_child_nodes(node):
                inner = where
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    inner = child.name if where == "<module>" else f"{where}.{child.name}"
                if isinstance(child, ast.Call) and _is_file_call(child):
                    found.append((rel, inner, _dotted(child.func), child.lineno))
                stack.append((child, inner))
    return found


OWN_TEMP = "a file or directory trntui just created itself (mkstemp/mkdtemp/O_EXCL), in a directory of its own"
CACHE = ("the parsed-profile cache's own entries: written into a mkdtemp directory and renamed into place; read "
         "back with cache.keys._open_regular (O_NONBLOCK, O_NOFOLLOW, fstat S_ISREG), so a FIFO or a link in an entry "
         "is refused")
CAPTURE = ("a capture directory trntui creates (`profile --out`): only what trntui made is removed "
           "(runner.owned_problems / remove_owned, issue 28 class 1, tests/test_capture_data_loss.py)")
PROC = "a kernel file (/proc, /dev/shm, os.devnull) or an inherited pipe fd, never a user's path"

ALLOWED: dict[tuple[str, str, str], str] = {
    # the parsed-profile cache
    ("trntui/cache/derived.py", "load_derived", "os.unlink"): CACHE,
    ("trntui/cache/derived.py", "load_derived", "zipfile.ZipFile"): CACHE + " (ZipFile reads the fd opened so)",
    ("trntui/cache/derived.py", "save_derived", "np.savez"): CACHE,
    ("trntui/cache/derived.py", "save_derived", "os.replace"): CACHE,
    ("trntui/cache/derived.py", "save_derived", "os.unlink"): CACHE,
    ("trntui/cache/derived.py", "save_derived", "tempfile.mkstemp"): CACHE,
    ("trntui/cache/keys.py", "_open_regular", "os.open"): CACHE,
    ("trntui/cache/read.py", "discard_entry", "os.unlink"): CACHE,
    ("trntui/cache/write.py", "_write_entry", "np.save"): CACHE,
    ("trntui/cache/write.py", "_write_entry", "open"): CACHE,
    ("trntui/cache/write.py", "_write_entry.save", "np.save"): CACHE,
    ("trntui/cache/write.py", "_write_meta", "(d / f'.{name}').write_bytes"): CACHE,
    ("trntui/cache/write.py", "_write_meta", "os.replace"): CACHE,
    ("trntui/cache/write.py", "store", "final.parent.mkdir"): CACHE,
    ("trntui/cache/write.py", "store", "os.replace"): CACHE,
    ("trntui/cache/write.py", "store", "tempfile.mkdtemp"): CACHE,
    # capture (issue 28 class 1's rules)
    ("trntui/capture/runner.py", "check_writable", "tempfile.mkstemp"): CAPTURE + "; a probe file of its own",
    ("trntui/capture/runner.py", "check_writable", "os.unlink"): CAPTURE + "; the probe file it made",
    ("trntui/capture/runner.py", "_manifest_of", "path.read_text"): CAPTURE + "; checked is_symlink/is_file and "
                                                                    "a 16 MiB bound first",
    ("trntui/capture/runner.py", "remove_owned", "(entry / rel).unlink"): CAPTURE,
    ("trntui/capture/runner.py", "remove_owned", "d.rmdir"): CAPTURE,
    ("trntui/capture/runner.py", "remove_owned", "entry.rmdir"): CAPTURE,
    ("trntui/capture/runner.py", "remove_owned", "path.rmdir"): CAPTURE,
    ("trntui/capture/runner.py", "capture", "staging.mkdir"): CAPTURE,
    ("trntui/capture/runner.py", "capture", "vdir.mkdir"): CAPTURE,
    ("trntui/capture/runner.py", "capture", "out.rmdir"): CAPTURE + "; an empty --out",
    ("trntui/capture/runner.py", "capture", "out.parent.mkdir"): CAPTURE,
    ("trntui/capture/runner.py", "capture", "os.replace"): CAPTURE + "; the finished .partial onto a checked --out",
    ("trntui/capture/runner.py", "_write_manifest", "tmp.write_text"): CAPTURE + "; its manifest",
    ("trntui/capture/runner.py", "_write_manifest", "os.replace"): CAPTURE + "; its manifest",
    ("trntui/capture/neuron.py", "neff_cache_env", "target.mkdir"): CAPTURE + "; <variant>/neff_cache",
    # scratch of trntui's own
    ("trntui/loaders/kineto/streaming.py", "_temp", "directory.mkdir"): "the load's scratch directory "
                                                                        "(LoadOptions.scratch_dir); " + OWN_TEMP,
    ("trntui/loaders/kineto/streaming.py", "_temp", "tempfile.TemporaryFile"): OWN_TEMP + " (unlinked at once)",
    ("trntui/loaders/neuron/convert.py", "convert", "base.mkdir"): "the converter's scratch directory, " + OWN_TEMP,
    ("trntui/loaders/neuron/convert.py", "convert", "work.mkdir"): "the converter's scratch directory, " + OWN_TEMP,
    ("trntui/loaders/neuron/convert.py", "convert", "(work / 'export').mkdir"): "the converter's scratch "
                                                                                "directory, " + OWN_TEMP,
    ("trntui/commands/export.py", "run.write", "gzip.open"): "the temporary file fsio.replacing made "
                                                            "(commands/sql._write_file)",
    # kernel files and fds
    ("trntui/memory.py", "available_bytes", "open"): PROC + " (/proc/meminfo)",
    ("trntui/per_rank.py", "_peak_rss", "open"): PROC + " (/proc/self/status)",
    ("trntui/cli.py", "_main", "open"): PROC + " (os.devnull after a broken pipe)",
    ("trntui/engine.py", "_stderr_with_a_file", "open"): PROC + " (os.devnull when stderr is closed)",
    ("trntui/engine.py", "_oom_kills", "open"): PROC + " (/sys/fs/cgroup/memory.events)",
    ("trntui/children.py", "group_alive", "open"): PROC + " (/proc/<pid>/stat)",
    # the worker log: a mkstemp file of trntui's own, handed to the forkserver by name, unlinked once open
    ("trntui/engine.py", "_start_helpers", "tempfile.mkstemp"): OWN_TEMP + " (the workers' stderr log)",
    ("trntui/engine.py", "_remove", "os.unlink"): OWN_TEMP + " (that log, at exit if the forkserver never "
                                                            "opened it)",
    ("trntui/_forkserver.py", "_boot", "os.open"): OWN_TEMP + " (that log, by the name engine.py passed)",
    ("trntui/_forkserver.py", "_boot", "os.unlink"): OWN_TEMP + " (that log, once open)",
    ("trntui/tui/loader.py", "Forked.__init__", "open"): PROC + " (the loader's pipes)",
    ("trntui/tui/loader.py", "_fork_loader", "os.open"): PROC + " (os.devnull as the child's stdin)",
    ("trntui/tui/loader.py", "_fork_loader", "open"): PROC + " (fds 1 and 2 of the child)",
    # the user's config directory (readline's own files)
    ("trntui/commands/sql.py", "_history", "path.parent.mkdir"): "the config directory (readline's history file)",
    ("trntui/commands/sql.py", "_history", "readline.read_history_file"): "readline's history in the config "
                                                                          "directory (readline opens it itself)",
    ("trntui/commands/sql.py", "_history.save", "readline.write_history_file"): "as above",
    # a developer's tool, not the product
    ("trntui/tui/docgen.py", "main", "path.read_text"): "`python -m trntui.tui.docgen`: the repository's "
                                                              "docs/tui.md and README.md, run by developers",
    ("trntui/tui/docgen.py", "main", "path.write_text"): "as above",
}
"""(module, enclosing function, callee) -> why it does not go through fsio. Kept short: reviewers check it."""

FSIO_ROUTED_LIBRARY_OPENS: dict[tuple[str, str, str], str] = {
    ("trntui/loaders/neuron/parquet/tables.py", "read_tables", "pq.read_table"): "files from table_files (check_regular)",
    ("trntui/loaders/neuron/parquet/companions.py", "describe_export", "pq.ParquetFile"): "files from table_files",
    ("trntui/loaders/neuron/parquet/companions.py", "_source_counts", "pq.ParquetFile"): "files from table_files",
    ("trntui/loaders/neuron/parquet/budget.py", "_text_bytes", "pq.ParquetFile"): "table_files, or fsio.is_regular",
    ("trntui/loaders/neuron/parquet/budget.py", "_check_budget", "pq.ParquetFile"): "files from table_files",
    ("trntui/loaders/neuron/convert.py", "export_problem", "pq.ParquetFile"): "files from table_files",
    ("trntui/loaders/neuron/discover/scan.py", "_export_pids", "pq.read_table"): "files from table_files",
    ("trntui/loaders/neuron_device/reader.py", "file_columns", "pq.ParquetFile"): "fsio.check_regular just before",
    ("trntui/loaders/neuron_device/reader.py", "row_count", "pq.ParquetFile"): "fsio.check_regular just before",
    ("trntui/loaders/neuron_device/reader.py", "read_table", "pq.read_table"): "files from table_files",
    ("trntui/report/ranks.py", "write_parquet", "pq.write_table"): "the temporary file of fsio.atomic_write",
    ("trntui/report/results.py", "write_parquet", "pq.ParquetWriter"): "the temporary file of fsio.atomic_write "
                                                                       "(commands/sql, query/export)",
}
"""Library calls that open by name (pyarrow): allowed because the path was checked by fsio (check_regular,
table_files) or is fsio's own temporary file."""


def test_every_file_access_is_fsio_or_allowed_with_a_reason() -> None:
    allowed = {**ALLOWED, **FSIO_ROUTED_LIBRARY_OPENS}
    unknown = sorted({f"{rel}:{line} in {where}(): {callee}(...)" for rel, where, callee, line in file_calls()
                      if (rel, where, callee) not in allowed})
    assert not unknown, ("file access outside trntui/fsio.py (route it through fsio, or add it to ALLOWED with "
                         "its reason and to docs/architecture.md 'File access'):\n" + "\n".join(unknown))


def test_the_allow_list_has_no_stale_entries() -> None:
    seen = {(rel, where, callee) for rel, where, callee, _ in file_calls()}
    stale = sorted(k for k in {**ALLOWED, **FSIO_ROUTED_LIBRARY_OPENS} if k not in seen)
    assert not stale, f"allow-list entries that match no call any more (remove them): {stale}"


def test_the_walk_finds_what_it_must() -> None:
    """The detector itself: each kind of call is seen (a walk that found nothing would pass the test above)."""
    calls = {(rel, callee) for rel, _, callee, _ in file_calls()}
    assert ("trntui/cache/write.py", "np.save") in calls and ("trntui/report/ranks.py", "pq.write_table") in calls
    assert ("trntui/capture/runner.py", "tmp.write_text") in calls and ("trntui/memory.py", "open") in calls
    assert ("trntui/capture/runner.py", "os.replace") in calls
    probe = ast.parse("Path(p).write_text('x'); os.replace(a, b); shutil.rmtree(d); p.open('rb'); p.replace(q);"
                      "s.replace('a', 'b'); dataclasses.replace(x, y=1); widget.open(pattern); np.save(f, a)")
    hits = [ast.unparse(n.func) for n in ast.walk(probe) if isinstance(n, ast.Call) and _is_file_call(n)]
    assert sorted(hits) == sorted(["Path(p).write_text", "os.replace", "shutil.rmtree", "p.open", "p.replace",
                                   "np.save"])


def test_docs_state_the_rule_and_list_every_allowed_module() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "## File access" in text
    section = text.split("## File access", 1)[1].split("\n## ", 1)[0]
    assert "trntui/fsio.py" in section and "tests/test_file_access.py" in section
    for rel in sorted({rel for rel, _, _ in ALLOWED}):
        assert f"`{rel}`" in section, f"docs/architecture.md 'File access' does not list {rel}"
