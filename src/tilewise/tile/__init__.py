"""Tile primitives and their dispatch: the registry, :class:`DispatchContext` and the
active-thread analysis (see docs/dispatch.md; ``explain`` is :func:`tilewise.pipeline.explain`).

Importing the package runs nothing: ``import tilewise`` needs only :mod:`.primitives` (for
``Tx``); the dispatch machinery and numpy load when a kernel is dispatched."""

_NAMES = {
    "ActiveThreads": "context", "DispatchContext": "context",
    "Decision": "dispatch", "dispatch": "dispatch",
    "DispatchFail": "registry", "Predicate": "registry", "Variant": "registry",
    "candidates": "registry", "predicate": "registry", "register_dispatch": "registry",
}
__all__ = sorted(_NAMES)


def __getattr__(name):
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
