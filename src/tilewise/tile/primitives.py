"""Tile primitives and their typed operand and option schemas.

A tile primitive is called as ``Tx.<scope>.<op>(dst, src..., **options)``. Each primitive
declares its operands (:class:`Operand`: a buffer region, a scalar, or either); its options
are the union of what its variants honour (each variant's allow-list, :mod:`.options`,
:func:`.registry.options_of`), so a misspelt or foreign option is a ScriptError at the
user's line naming the options that exist, and an option one variant does not honour
declines that variant (never silently ignored). A primitive may also declare a ``check``
run when the call is parsed (shapes, dtypes, axes), so a malformed call is an error at the
user's line rather than a list of declining variants. The compute primitives (elementwise
operations, reductions, ``permute_layout``) are built from the tables of :mod:`.compute`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import ScriptError, did_you_mean
from . import compute
from .options import Option
from .registry import options_of

__all__ = ["Operand", "Option", "PRIMITIVES", "Primitive", "lookup"]

SCOPE_NAMES = {"thread": "thread", "warp": "warp", "wg": "warpgroup", "warpgroup": "warpgroup",
               "cta": "cta", "cluster": "cluster"}


@dataclass(frozen=True)
class Operand:
    """A positional operand: ``kind`` is ``region`` (a buffer region; a whole buffer is
    its full region), ``scalar`` (a number or a run-time value) or ``value`` (either);
    an ``optional`` operand may be left out (it is then the destination: ``exp(x)``)."""

    name: str
    kind: str = "region"
    optional: bool = False


@dataclass(frozen=True)
class Primitive:
    name: str
    operands: tuple
    doc: str
    check: Callable | None = field(default=None, compare=False)  # (checker, call parts)
    # options that may also be passed positionally after the operands, in this order
    # (TIRx's unary math ops: ``Tx.cta.exp(dst, src, bias, scale)``)
    trailing: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "operands", tuple(
            o if isinstance(o, Operand) else Operand(o) for o in self.operands))

    @property
    def operand_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.operands)

    @property
    def options(self) -> tuple[Option, ...]:
        """``dispatch=`` and every option some variant of this primitive honours."""
        return options_of(self.name)

    def option(self, name: str) -> Option | None:
        return next((o for o in self.options if o.name == name), None)

    def check_options(self, given: dict, span=None) -> tuple[tuple[str, object], ...]:
        out = []
        for k, v in given.items():
            opt = self.option(k)
            if v is None and opt is not None:
                continue  # an option passed as None is an option not given
            if opt is None:
                raise ScriptError(
                    f"{self.name} has no option {k!r}", span,
                    hint=did_you_mean(k, [o.name for o in self.options]) +
                    f" ({self.name} options: {', '.join(o.name for o in self.options)})")
            out.append((k, opt.check(self.name, v, span)))
        return tuple(out)


def _check_fill(c, dst, srcs, opts):
    """``fill=`` (what a partial tile's outside reads as) must fit the destination's
    dtype."""
    v = opts.get("fill")
    t = dst.buffer.dtype
    if v is not None and not t.is_float and (not float(v).is_integer() or t.kind == "bool"):
        c.fail(f"fill={v!r} cannot be stored in the {t} destination",
               "give an integer fill (or none: 0) for integer tiles")
    return srcs, opts


PRIMITIVES: dict[str, Primitive] = {
    p.name: p
    for p in [
        Primitive("copy", ("dst", "src"),
                  "synchronous copy of a tile between any two memories", check=_check_fill),
        Primitive("copy_async", ("dst", "src"),
                  "asynchronous copy; completion (commit/wait/barrier) is the caller's",
                  check=_check_fill),
        Primitive("gemm_async", ("C", "A", "B"),
                  "asynchronous C (+)= A @ B on the tensor cores (wgmma, tcgen05.mma); the "
                  "fences, commits and waits are the caller's"),
        Primitive("gemm", ("C", "A", "B"),
                  "synchronous C (+)= A @ B of register or shared tiles (mma.sync)"),
    ]
}


def _elementwise(op: compute.Elementwise) -> Primitive:
    operands = tuple(Operand(n, k, optional=op.in_place) for n, k in op.operands)
    return Primitive(op.name, (Operand("dst"),) + operands, op.doc,
                     check=lambda c, dst, srcs, opts: compute.check_elementwise(
                         c, op, dst, srcs, opts),
                     trailing=("bias", "scale") if op.unary_math else ())


def _reduction(red: compute.Reduction) -> Primitive:
    return Primitive(red.name, ("dst", "src"), red.doc,
                     check=lambda c, dst, srcs, opts: (srcs, {**opts, "axes": (
                         compute.check_reduction(c, red, dst, srcs[0],
                                                 opts.get("axes", -1)))}))


PRIMITIVES.update({p.name: p for p in [
    *(_elementwise(op) for op in compute.ELEMENTWISE.values()),
    *(_reduction(r) for r in compute.REDUCTIONS.values()),
    Primitive("permute_layout", ("dst", "src"),
              "the same tile held under another layout: dst[i] = src[i] with dst and src "
              "laid out differently (registers through shuffles or shared memory)",
              check=lambda c, dst, srcs, opts: (compute.check_permute(c, dst, srcs[0]), opts)),
]})


def lookup(name: str, span=None) -> Primitive:
    p = PRIMITIVES.get(name)
    if p is None:
        raise ScriptError(f"Tx.{name} is not a tile primitive", span,
                          hint=did_you_mean(name, PRIMITIVES))
    return p
