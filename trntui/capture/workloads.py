"""What `trntui profile` runs: a built-in or a user-supplied workload, resolved and built into a `Workload`.

A workload is a set of named *variants*; each variant is a callable plus the inputs it is called with.
The contract (`Variant`, `Workload`, `CaptureContext`) lives in `trntui.capture.contract`, the built-ins and
their registry in `trntui.capture.builtins` (one decorated function each); both are re-exported here. User code
is named on the command line as `path/to/file.py:function` or `package.module:function` (see docs/capture.md
for the contract).

torch is never imported at module level here: `import trntui.capture` works without torch installed.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from trntui.capture.builtins import BUILTINS, BuiltinInfo, builtin  # noqa: F401 - re-exported
from trntui.capture.contract import CaptureContext, Factory, Variant, Workload  # noqa: F401 - re-exported
from trntui.errors import TrntuiError

DEFAULT_FUNCTION = "make_workload"
"""The function looked up when a workload is given as `file.py` with no `:function`."""


def builtin_names() -> list[str]:
    return sorted(BUILTINS)


# --------------------------------------------------------------------------------------------- resolving


@dataclass
class WorkloadSource:
    """A resolved `WORKLOAD` argument: a built-in, or a user function (not yet called)."""

    spec: str
    name: str
    builtin: BuiltinInfo | None = None
    function: Callable[..., Any] | None = None
    origin: str = ""


def resolve_source(spec: str) -> WorkloadSource:
    """Turn the `WORKLOAD` argument into a built-in or an imported user function. Raises `TrntuiError`."""
    spec = spec.strip()
    if spec in BUILTINS:
        return WorkloadSource(spec=spec, name=spec, builtin=BUILTINS[spec], origin="built-in")
    target, sep, func_name = spec.rpartition(":")
    if not sep:
        target, func_name = spec, ""
    looks_like_file = target.endswith(".py") or "/" in target or os.sep in target
    if not sep and not looks_like_file:
        known = ", ".join(sorted(BUILTINS))
        raise TrntuiError(
            f"unknown workload {spec!r} (built-ins: {known}; or give path/to/file.py:function or module:function)"
        )
    func_name = func_name or DEFAULT_FUNCTION
    if not func_name.isidentifier():
        raise TrntuiError(f"{spec}: {func_name!r} is not a function name")
    if looks_like_file:
        module, origin = _import_file(Path(target))
    else:
        module, origin = _import_module(target)
    fn = getattr(module, func_name, None)
    if fn is None:
        defined = sorted(
            n for n, v in vars(module).items()
            if inspect.isfunction(v) and not n.startswith("_") and getattr(v, "__module__", None) == module.__name__
        )
        hint = f" (functions defined there: {', '.join(defined[:8])})" if defined else ""
        raise TrntuiError(f"{origin} has no function {func_name!r}{hint}")
    if not callable(fn):
        raise TrntuiError(f"{origin}:{func_name} is not callable (it is a {type(fn).__name__})")
    name = _safe_name(Path(target).stem if looks_like_file else target.rsplit(".", 1)[-1])
    if func_name != DEFAULT_FUNCTION:
        name = f"{name}-{_safe_name(func_name)}"
    return WorkloadSource(spec=spec, name=name, function=fn, origin=f"{origin}:{func_name}")


def source_name(spec: str) -> str:
    """The name `resolve_source(spec)` gives the workload, without importing anything (the default `--out`)."""
    spec = spec.strip()
    if spec in BUILTINS:
        return spec
    target, sep, func_name = spec.rpartition(":")
    if not sep:
        target, func_name = spec, ""
    looks_like_file = target.endswith(".py") or "/" in target or os.sep in target
    func_name = func_name or DEFAULT_FUNCTION
    name = _safe_name(Path(target).stem if looks_like_file else target.rsplit(".", 1)[-1])
    if func_name != DEFAULT_FUNCTION:
        name = f"{name}-{_safe_name(func_name)}"
    return name or "workload"


def _import_file(path: Path) -> tuple[Any, str]:
    shown = str(path)
    if not path.exists():
        raise TrntuiError(f"{shown}: no such file")
    if not path.is_file():
        raise TrntuiError(f"{shown}: not a file")
    resolved = path.resolve()
    modname = "_trntui_workload_" + re.sub(r"\W", "_", resolved.stem) + f"_{abs(hash(str(resolved))):x}"
    spec = importlib.util.spec_from_file_location(modname, resolved)
    if spec is None or spec.loader is None:
        raise TrntuiError(f"{shown}: cannot be imported as Python source")
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    parent = str(resolved.parent)
    added = parent not in sys.path
    if added:
        sys.path.insert(0, parent)  # so the file can import its neighbours
    try:
        spec.loader.exec_module(module)
    except SystemExit as exc:
        sys.modules.pop(modname, None)
        raise TrntuiError(f"{shown}: exited with {exc.code!r} while being imported") from None
    except BaseException as exc:  # noqa: BLE001 - user code: report it in one line
        sys.modules.pop(modname, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise TrntuiError(f"{shown}: error while importing it: {exc_line(exc)}") from exc
    finally:
        if added:
            try:
                sys.path.remove(parent)
            except ValueError:
                pass
    return module, shown


def _import_module(name: str) -> tuple[Any, str]:
    if not all(part.isidentifier() for part in name.split(".")):
        raise TrntuiError(f"{name!r} is not a module name (give path/to/file.py:function or module:function)")
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)  # `trntui profile mymodule:fn` from the project directory, like `python -m`
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise TrntuiError(f"no module named {name!r} (not importable from {cwd})") from None
        raise TrntuiError(f"module {name!r}: error while importing it: {exc_line(exc)}") from exc
    except SystemExit as exc:
        raise TrntuiError(f"module {name!r}: exited with {exc.code!r} while being imported") from None
    except BaseException as exc:  # noqa: BLE001 - user code (KeyboardInterrupt stays Ctrl-C)
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise TrntuiError(f"module {name!r}: error while importing it: {exc_line(exc)}") from exc
    finally:
        if added:
            try:
                sys.path.remove(cwd)
            except ValueError:
                pass
    return module, name


# --------------------------------------------------------------------------------------------- building


def build_workload(source: WorkloadSource, ctx: CaptureContext) -> Workload:
    """Call the factory (built-in or user function) and normalise what it returns into a `Workload`."""
    if source.builtin is not None:
        workload = source.builtin.factory(ctx)
        return workload
    fn = source.function
    assert fn is not None
    try:
        takes_ctx = _accepts_positional(fn)
        result = fn(ctx) if takes_ctx else fn()
    except BaseException as exc:  # noqa: BLE001 - user code, SystemExit and BaseException subclasses included
        err = user_error(exc, str(source.origin))
        if err is None or err is exc:
            raise
        raise err from exc
    workload = normalize(result, source)
    workload.variants = {k: _to_device(v, ctx) for k, v in workload.variants.items()}
    return workload


def normalize(result: Any, source: WorkloadSource) -> Workload:
    """Accept `(fn, args)`, `(fn, args, kwargs)`, `Variant`, a dict of those, a `Workload`, or a bare callable."""
    what = source.origin or source.spec
    expected = "expected (fn, args), (fn, args, kwargs), a dict {variant: (fn, args)} or a trntui.capture.Workload"
    if isinstance(result, Workload):
        if not result.variants:
            raise TrntuiError(f"{what} returned a Workload with no variants")
        result.variants = {
            _variant_name(str(k), what): _as_variant(v, what, str(k)) for k, v in result.variants.items()
        }
        result.name = _safe_name(result.name) or source.name
        return result
    if isinstance(result, Mapping):
        if not result:
            raise TrntuiError(f"{what} returned an empty dict; {expected}")
        variants = {_variant_name(str(k), what): _as_variant(v, what, str(k)) for k, v in result.items()}
        return Workload(name=source.name, variants=variants)
    variant = _as_variant(result, what, None, expected)
    return Workload(name=source.name, variants={_default_variant_name(variant.fn): variant})


def _as_variant(value: Any, what: str, key: str | None, expected: str = "") -> Variant:
    where = f"{what} (variant {key!r})" if key is not None else what
    expected = expected or "expected (fn, args) or (fn, args, kwargs)"
    if isinstance(value, Variant):
        variant = value
    elif callable(value) and not isinstance(value, (tuple, list)):
        variant = Variant(fn=value)
    elif isinstance(value, (tuple, list)) and 1 <= len(value) <= 3 and callable(value[0]):
        args = value[1] if len(value) > 1 else ()
        kwargs = value[2] if len(value) > 2 else {}
        if not isinstance(args, (tuple, list)):
            args = (args,)  # (fn, x): a single input
        if not isinstance(kwargs, Mapping):
            raise TrntuiError(f"{where}: the third item must be a dict of keyword arguments")
        variant = Variant(fn=value[0], args=tuple(args), kwargs=dict(kwargs))
    else:
        raise TrntuiError(f"{where} returned {_describe(value)}; {expected}")
    if not callable(variant.fn):
        raise TrntuiError(f"{where}: {_describe(variant.fn)} is not callable")
    return variant


def _default_variant_name(fn: Any) -> str:
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str) or not name.isidentifier():
        name = type(fn).__name__ if not inspect.isfunction(fn) else "default"
    return _safe_name(name) or "default"


def _variant_name(name: str, what: str) -> str:
    safe = _safe_name(name)
    if not safe:
        raise TrntuiError(f"{what}: variant name {name!r} cannot be a directory name")
    return safe


def _safe_name(name: str) -> str:
    """A name usable as one directory component (letters, digits, `._-`)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")
    return cleaned[:64]


def _accepts_positional(fn: Callable[..., Any]) -> bool:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL):
            return True
    return False


def _to_device(variant: Variant, ctx: CaptureContext) -> Variant:
    """Move CPU tensors among the inputs to the capture device (no-op on CPU)."""
    if ctx.device == "cpu":
        return variant
    import torch

    def move(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return v.to(ctx.device) if v.device.type == "cpu" else v
        if isinstance(v, tuple):
            return tuple(move(x) for x in v)
        if isinstance(v, list):
            return [move(x) for x in v]
        if isinstance(v, dict):
            return {k: move(x) for k, x in v.items()}
        return v

    return Variant(fn=variant.fn, args=move(variant.args), kwargs=move(variant.kwargs), inference=variant.inference)


def input_shapes(variant: Variant) -> list[Any]:
    """Shapes (lists) of tensor inputs, `None` for other inputs — for the manifest."""
    out: list[Any] = []
    for v in list(variant.args) + list(variant.kwargs.values()):
        shape = getattr(v, "shape", None)
        out.append(list(shape) if shape is not None else None)
    return out


def input_dtypes(variant: Variant) -> list[str | None]:
    out: list[str | None] = []
    for v in list(variant.args) + list(variant.kwargs.values()):
        dt = getattr(v, "dtype", None)
        out.append(str(dt).replace("torch.", "") if dt is not None else None)
    return out


def _describe(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return "None" if value is None else f"a {type(value).__name__}"


def user_error(exc: BaseException, what: str, when: str = "") -> TrntuiError | None:
    """The one-line error for what user code raised (None for KeyboardInterrupt: Ctrl-C stays Ctrl-C).

    `sys.exit(N)` in a workload is not trntui exiting: it is reported with its exit code, as is any exception,
    including `BaseException` subclasses that are not `Exception`s (never a traceback, never a silent exit)."""
    if isinstance(exc, KeyboardInterrupt):
        return None
    if isinstance(exc, TrntuiError):
        return exc
    during = f" during {when}" if when else ""
    if isinstance(exc, SystemExit):
        code = exc.code
        status = 0 if code is None else code if isinstance(code, int) else 1  # as Python's own exit status
        arg = "" if code is None else repr(code)
        return TrntuiError(f"{what} called sys.exit({arg}){during} (exit code {status})")
    return TrntuiError(f"{what} raised {exc_line(exc)}{during}")


def exc_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message (what a capture failure prints)."""
    msg = str(exc).strip().splitlines()
    first = msg[0] if msg else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
