"""The front end: ``@T.prim_func`` parses a Python function into IR; ``T`` and ``Tx`` are
the namespaces kernels are written with."""

from .decorator import prim_func
from .names import T, Tx
from .source import from_source, script_env

__all__ = ["T", "Tx", "prim_func", "from_source", "script_env"]
