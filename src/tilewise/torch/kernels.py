"""What tilewise.torch reads of a kernel: its parameters by name, its IR, whether it is
compiled (shared by the op's definition and its launch)."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=256)
def kernel_params(func) -> tuple[tuple[str, object, object], ...]:
    """``(name, parameter, buffer or None)`` of each declared parameter of ``func``: a
    buffer parameter is named by its buffer (``X`` for ``X = T.match_buffer(X_ptr, ...)``)."""
    from ..ir import signature as sig

    by_param = {id(p): b for p, b in func.buffer_map}
    out = []
    for p in sig.declared_params(func):
        buf = by_param.get(id(p))
        out.append((buf.name if buf is not None else p.name, p, buf))
    return tuple(out)


def is_compiled(obj) -> bool:
    """A compiled ``tw.Kernel`` or a loaded one (``tw.load``)."""
    from ..compiler import Kernel
    from ..runtime.saved import LoadedKernel

    return isinstance(obj, (Kernel, LoadedKernel))


def is_tuned(obj) -> bool:
    """A ``tilewise.autotune`` kernel: it stands for a PrimFunc (its heuristic
    configuration, for the signature and the simulator) and tunes on launch."""
    return getattr(type(obj), "__tilewise_prim_func__", None) is not None


def is_kernel(obj) -> bool:
    """A ``@T.prim_func``, a compiled or loaded kernel or a tuned one (not a factory)."""
    from ..ir.stmt import PrimFunc

    return isinstance(obj, PrimFunc) or is_compiled(obj) or is_tuned(obj)


def func_of(kernel):
    """The kernel's ``PrimFunc`` (a loaded kernel's is its signature; a tuned kernel's all
    configurations share the first one's)."""
    from ..ir.stmt import PrimFunc, as_prim_func

    if isinstance(kernel, PrimFunc) or is_tuned(kernel):
        return as_prim_func(kernel)
    return kernel.func


def result(outputs: tuple, outs: dict):
    """What the op returns: nothing, one tensor, or a tuple in ``outputs``' order."""
    if not outputs:
        return None
    if len(outputs) == 1:
        return outs[outputs[0]]
    return tuple(outs[n] for n in outputs)
