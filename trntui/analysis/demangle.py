"""C++ name demangling exactly as torch's table does it.

torch's `_rewrite_name` passes every event name longer than one character through `torch._C._demangle`, which is
`c10::demangle`: the C++ runtime's `abi::__cxa_demangle`, and the name unchanged where that fails (torch/autograd/
profiler_util.py `StringTable`; c10/util/Type.cpp). We call the same function of the same library (libstdc++, or
libc++abi on macOS) through ctypes, so a trace read without torch shows the names torch's in-process table shows
(`_ZN2at6native3fooEv` → `at::native::foo()`). Where no C++ runtime can be loaded (or on Windows, where c10 does
not demangle either) names are left as they are.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from collections.abc import Iterator
from typing import Any, Callable


@functools.lru_cache(maxsize=1)
def _runtime() -> tuple[Any, Callable[[Any], None]] | None:
    """(`__cxa_demangle`, `free`) from the process's C++ runtime, or None."""
    if sys.platform.startswith("win"):
        return None
    for name in _library_names():
        if not name:
            continue
        try:
            fn = getattr(ctypes.CDLL(name), "__cxa_demangle")
        except (OSError, AttributeError):
            continue
        try:
            free = ctypes.CDLL(None).free
        except (OSError, AttributeError):
            return None
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        free.argtypes = [ctypes.c_void_p]
        free.restype = None
        return fn, free
    return None


def _library_names() -> Iterator[str | None]:
    """Library names to try, cheapest first: `find_library` runs ldconfig or a compiler in a subprocess (tens of
    ms), so it is asked only when the usual names do not load."""
    yield from ("libstdc++.so.6", "libc++abi.dylib", "libc++.1.dylib")
    import ctypes.util  # imports subprocess: only when needed

    yield ctypes.util.find_library("stdc++")
    yield ctypes.util.find_library("c++abi")


def available() -> bool:
    """Whether names can be demangled here (a C++ runtime with `__cxa_demangle` was found)."""
    return _runtime() is not None


@functools.lru_cache(maxsize=65536)
def demangle(name: str) -> str:
    """`c10::demangle(name)` for names longer than one character (torch leaves `t` alone: it would be
    `unsigned short`), else `name`."""
    if len(name) <= 1:
        return name
    rt = _runtime()
    if rt is None:
        return name
    fn, free = rt
    raw = name.encode("utf-8", "surrogateescape")
    status = ctypes.c_int(0)
    ptr = fn(raw, None, None, ctypes.byref(status))
    if not ptr:
        return name
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        free(ptr)
