"""A kernel's call signature: which arguments it takes, how scalars are checked, and how
symbolic sizes are bound from the arrays — shared by the GPU runtime and the simulator.

A kernel's ``params`` are its declared parameters (``A_ptr: T.handle`` takes an array,
``n: T.int32`` a scalar) followed by its symbolic sizes (``M = T.int32()``), which the
caller never passes: they are read from the arrays' shapes and strides. Every mismatch is
a :class:`LaunchError` that names the parameter and says what to pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import LaunchError
from . import alu
from .expr import BinOp, Cast, IntImm, SizeVar, UnaryOp, Var
from .printer import script


def hidden_params(func) -> set[int]:
    """ids of the parameters a caller never passes: the symbolic sizes (read from the
    arrays) and the TMA tensor maps (encoded from the arrays)."""
    return ({id(v) for v in func.attr("size_vars", ())}
            | {id(m.var) for m in func.attr("tensor_maps", ())})


def declared_params(func) -> list[Var]:
    """The parameters a caller passes (symbolic sizes and tensor maps excluded)."""
    hidden = hidden_params(func)
    return [p for p in func.params if id(p) not in hidden]


def check_scalar(param: Var, value):
    """``value`` (a Python number, a numpy scalar or a 0-d array) for scalar parameter
    ``param``: returned as a numpy scalar of the parameter's dtype, range-checked."""
    import numpy as np

    t = param.dtype
    what = f"parameter {param.name!r} ({t})"
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0 and not isinstance(
            value, (bool, int, float)):
        value = value.item()  # numpy scalar, 0-d numpy array or 0-d tensor
    if isinstance(value, bool):
        if t.kind != "bool" and not t.is_int:
            raise LaunchError(f"{what} got the bool {value}", hint=f"pass a {t} number")
        return np.asarray(value).astype(_np(t))[()]
    if isinstance(value, int):
        if t.kind == "bool":
            if value not in (0, 1):
                raise LaunchError(f"{what} got {value}", hint="pass True or False")
            return np.bool_(value)
        if t.is_int and not alu.fits(value, t):
            lo, hi = alu.int_range(t)
            raise LaunchError(f"{what} got {value}, which does not fit ({lo}..{hi})",
                              hint="pass a value in range or declare a wider type")
        if t.is_float and not alu.float_fits(float(value), t):
            raise LaunchError(f"{what} got {value}, which overflows {t}")
        return np.asarray(value).astype(_np(t))[()]
    if isinstance(value, float):
        if not t.is_float:
            raise LaunchError(f"{what} got the float {value!r}",
                              hint=f"pass an int (int(x)) for a {t} parameter")
        if not alu.float_fits(value, t):
            raise LaunchError(f"{what} got {value!r}, which overflows {t}",
                              hint="pass a smaller value or declare a wider float type")
        return np.asarray(value).astype(_np(t))[()]
    raise LaunchError(f"{what} got a {type(value).__name__}",
                      hint="pass a Python number, a numpy scalar or a 0-d array")


def _np(t):
    import numpy as np

    return np.dtype(np.bool_) if t.kind == "bool" else t.numpy()


def evaluate(e, sizes: dict[int, int]) -> int:
    """The value of a size expression (ints, SizeVars, arithmetic) given the sizes."""
    if isinstance(e, int):
        return e
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, Var):
        return sizes[id(e)]
    if isinstance(e, Cast):
        return evaluate(e.value, sizes)
    if isinstance(e, UnaryOp) and e.op == "-":
        return -evaluate(e.a, sizes)
    if isinstance(e, BinOp):
        v = alu.fold(e.op, evaluate(e.a, sizes), evaluate(e.b, sizes), e.a.dtype)
        if v is not None:
            return int(v)
    raise LaunchError(f"cannot evaluate the size expression {script(e)} at launch")


@dataclass
class Binding:
    """The sizes of one call: id(SizeVar) -> value."""

    sizes: dict

    def value(self, e) -> int:
        return evaluate(e, self.sizes)

    def grid(self, func) -> tuple[int, int, int]:
        g = tuple(self.value(x) for x in func.launch_config.grid)
        if any(x <= 0 for x in g):
            raise LaunchError(f"{func.name}: the grid {g} computed from the sizes has an empty "
                              "dimension", hint="check the sizes the arrays give")
        return g


def bind_sizes(func, arrays: list[tuple[object, tuple, tuple]]) -> Binding:
    """Bind the symbolic sizes of ``func`` from ``(buffer, shape, strides)`` per global
    buffer (strides in elements); then check every buffer's shape and strides."""
    sizes: dict[int, int] = {}
    source: dict[int, str] = {}
    for buf, shape, strides in arrays:
        for what, exprs, got in (("dimension", buf.shape, shape),
                                 ("stride", buf.strides or (), strides)):
            for d, (e, v) in enumerate(zip(exprs, got)):
                if isinstance(e, SizeVar):
                    here = f"{buf.name}'s {what} {d}"
                    if id(e) in sizes and sizes[id(e)] != v:
                        raise LaunchError(f"size {e.name} is {sizes[id(e)]} from "
                                          f"{source[id(e)]} but {v} from {here}",
                                          hint="pass arrays whose sizes agree")
                    sizes.setdefault(id(e), int(v))
                    source.setdefault(id(e), here)
    for v in func.attr("size_vars", ()):
        if id(v) not in sizes:
            raise LaunchError(f"size {v.name} is not the extent or stride of any array")
        lo, hi = alu.int_range(v.dtype)
        if not 0 <= sizes[id(v)] <= hi:
            raise LaunchError(f"size {v.name} = {sizes[id(v)]} does not fit {v.dtype}")
    return Binding(sizes)


def expected_shape(buf, binding: Binding) -> tuple[int, ...]:
    return tuple(binding.value(s) for s in buf.shape)


def expected_strides(buf, binding: Binding) -> tuple[int, ...]:
    return tuple(binding.value(s) for s in buf.elem_strides())


def storage_elems(buf, binding: Binding) -> int:
    """Elements from the first to one past the last element (0 for an empty buffer)."""
    shape, strides = expected_shape(buf, binding), expected_strides(buf, binding)
    if 0 in shape:
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(shape, strides))


def describe_shape(shape) -> str:
    parts = [str(s) if isinstance(s, int) else script(s) for s in shape]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
