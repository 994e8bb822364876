"""Tile primitives and their dispatch: the registry, :class:`DispatchContext` and the
active-thread analysis (see docs/dispatch.md; ``explain`` is :func:`tilewise.pipeline.explain`)."""

from .context import ActiveThreads, DispatchContext
from .dispatch import Decision, dispatch
from .registry import DispatchFail, Predicate, Variant, candidates, predicate, register_dispatch

__all__ = ["ActiveThreads", "Decision", "DispatchContext", "DispatchFail", "Predicate",
           "Variant", "candidates", "dispatch", "predicate", "register_dispatch"]
