"""The namespaces kernels are written with, built once: ``T`` (the builtins, dtypes and the
PTX table) and ``Tx`` (tile primitives by scope)."""

from .builtins import handlers
from .decorator import prim_func
from .namespace import make_namespaces

T, Tx = make_namespaces(handlers(), prim_func)
