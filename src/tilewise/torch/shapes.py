"""Symbolic sizes of a kernel, bound from torch tensors (ints, or ``SymInt`` under
``torch.compile``) and evaluated with Python arithmetic, which torch traces: an output of
shape ``(M, N)`` of a kernel whose ``M`` and ``N`` are ``T.int32()`` sizes gets the input
tensors' symbolic sizes."""

from __future__ import annotations

from ..errors import LaunchError
from ..ir.expr import BinOp, Cast, IntImm, SizeVar, UnaryOp, Var

_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
        "//": lambda a, b: a // b, "%": lambda a, b: a % b,
        "min": lambda a, b: a if a <= b else b, "max": lambda a, b: a if a >= b else b}


def sources(inputs) -> dict:
    """``{id(SizeVar): (input name, 0: an extent / 1: a stride, axis)}`` from ``(name,
    buffer)`` pairs: the first input that shows a size (as an extent or a stride) gives
    it; the launch checks that the others agree. Worked out once per kernel."""
    out: dict = {}
    for name, buf in inputs:
        for kind, exprs in ((0, buf.shape), (1, buf.strides or ())):
            for axis, e in enumerate(exprs):
                if isinstance(e, SizeVar):
                    out.setdefault(id(e), (name, kind, axis))
    return out


def bind(srcs: dict, values: dict) -> dict:
    """``{id(SizeVar): size}`` read off a call's inputs (ints, or ``SymInt`` under
    ``torch.compile``) at the places :func:`sources` found."""
    return {v: (values[n].shape[a] if kind == 0 else values[n].stride(a))
            for v, (n, kind, a) in srcs.items() if hasattr(values[n], "shape")}


def evaluate(e, sizes: dict, op: str, buf):
    """The value of size expression ``e`` (an int, or a SymInt expression)."""
    if isinstance(e, int):
        return e
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, Var):
        if id(e) not in sizes:
            raise LaunchError(f"{op}: the size {e.name} of output {buf.name!r} is not the "
                              "extent or stride of any input",
                              hint="pass the output as an input the kernel writes "
                              "(mutates_args=) instead of outputs=")
        return sizes[id(e)]
    if isinstance(e, Cast):
        return evaluate(e.value, sizes, op, buf)
    if isinstance(e, UnaryOp) and e.op == "-":
        return -evaluate(e.a, sizes, op, buf)
    if isinstance(e, BinOp) and e.op in _OPS:
        return _OPS[e.op](evaluate(e.a, sizes, op, buf), evaluate(e.b, sizes, op, buf))
    raise LaunchError(f"{op}: cannot compute the shape of output {buf.name!r} from the sizes "
                      f"(an expression of kind {type(e).__name__})",
                      hint="declare output shapes from sizes with + - * // %")
