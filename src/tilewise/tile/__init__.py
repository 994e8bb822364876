"""Tile primitives and their dispatch: the registry, :class:`DispatchContext`, the
active-thread analysis and :func:`explain` (see docs/dispatch.md)."""

from .context import ActiveThreads, DispatchContext
from .dispatch import Decision, dispatch, explain
from .registry import DispatchFail, Predicate, Variant, candidates, predicate, register_dispatch

__all__ = ["ActiveThreads", "Decision", "DispatchContext", "DispatchFail", "Predicate",
           "Variant", "candidates", "dispatch", "explain", "predicate", "register_dispatch"]
