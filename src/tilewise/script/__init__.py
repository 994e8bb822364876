"""The front end: ``@T.prim_func`` parses a Python function into IR; ``T`` and ``Tx`` are
the namespaces kernels are written with."""

from .builtins import handlers as _handlers
from .decorator import from_source, prim_func, script_env
from .namespace import make_namespaces as _make

T, Tx = _make(_handlers())

__all__ = ["T", "Tx", "prim_func", "from_source", "script_env"]
