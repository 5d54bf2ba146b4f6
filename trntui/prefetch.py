"""Imports a command needs only once its load is done, made while the load's forked decoder works.

`trntui summary` names the modules it uses after the load (the key_averages analysis, the report); when the load
decodes with two processes (trntui/loaders/kineto/parallel.py), the parent imports them right after forking the
decoder, while the child already decodes (the pieces each side takes balance the time), instead of before the
load, while the second core waits. Without a forked decoder nothing happens early: the modules are imported
where they are used, as always."""

from __future__ import annotations

_WANTED: list[str] = []


def after_load(*modules: str) -> None:
    """Name modules the caller will import after its load (`import_wanted` imports them beside a forked decoder)."""
    _WANTED.extend(m for m in modules if m not in _WANTED)


def import_wanted() -> None:
    """Import the modules named by `after_load` (the decoding process, once its child is forked). A module that
    fails to import is left to the caller's own import, which then raises where it is used."""
    import importlib

    while _WANTED:
        name = _WANTED.pop(0)
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S110 - the caller's own import reports it
            pass
