"""Tile primitives and their typed operand and option schemas.

A tile primitive is called as ``Tx.<scope>.<op>(dst, src..., **options)``. Each primitive
declares its operands (:class:`Operand`: a buffer region, a scalar, or either) and the
options it accepts; a misspelt or foreign option is a ScriptError at the user's line naming
the options that exist (never silently ignored). A primitive may also declare a ``check``
run when the call is parsed (shapes, dtypes, axes), so a malformed call is an error at the
user's line rather than a list of declining variants. The compute primitives (elementwise
operations, reductions, ``permute_layout``) are built from the tables of :mod:`.compute`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import ScriptError, did_you_mean
from . import compute

SCOPE_NAMES = {"thread": "thread", "warp": "warp", "wg": "warpgroup", "warpgroup": "warpgroup",
               "cta": "cta", "cluster": "cluster"}


@dataclass(frozen=True)
class Option:
    name: str
    kind: str  # str | int | bool | expr | ptr | axes | operand
    doc: str
    choices: tuple = ()


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
    options: tuple[Option, ...]
    doc: str
    check: Callable | None = field(default=None, compare=False)  # (checker, call parts)

    def __post_init__(self):
        object.__setattr__(self, "operands", tuple(
            o if isinstance(o, Operand) else Operand(o) for o in self.operands))

    @property
    def operand_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.operands)

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
            if opt.kind == "str" and not isinstance(v, str):
                raise ScriptError(f"option {k}= of {self.name} must be a string", span)
            if opt.kind == "int" and (not isinstance(v, int) or isinstance(v, bool)):
                raise ScriptError(f"option {k}= of {self.name} must be a compile-time int", span)
            if opt.kind == "bool" and not isinstance(v, bool):
                raise ScriptError(f"option {k}= of {self.name} must be a compile-time True or "
                                  f"False, got {type(v).__name__}", span)
            if opt.kind == "axes" and not (isinstance(v, int) and not isinstance(v, bool) or (
                    isinstance(v, (tuple, list)) and all(isinstance(a, int) for a in v))):
                raise ScriptError(f"option {k}= of {self.name} must be an axis or a tuple of "
                                  f"axes (compile-time ints), got {v!r}", span,
                                  hint="e.g. axes=-1 or axes=(0, 1)")
            if opt.choices and v not in opt.choices:
                raise ScriptError(f"option {k}={v!r} of {self.name} is not one of "
                                  f"{', '.join(map(repr, opt.choices))}", span)
            out.append((k, tuple(v) if isinstance(v, list) else v))
        return tuple(out)


_DISPATCH = Option("dispatch", "str", "force one variant by name")
_COMMON = (_DISPATCH,)

PRIMITIVES: dict[str, Primitive] = {
    p.name: p
    for p in [
        Primitive("copy", ("dst", "src"), _COMMON,
                  "synchronous copy of a tile between any two memories"),
        Primitive("copy_async", ("dst", "src"), _COMMON + (
            Option("mbar", "ptr", "complete on this mbarrier (TMA); cp.async cannot"),
            Option("cache_hint", "str", "L2 cache hint", ("evict_first", "evict_last", "normal")),
            Option("prefetch_size", "int", "L2 prefetch size in bytes", (64, 128, 256)),
            Option("predicate", "expr", "copy only where this is true (zero-fill elsewhere)"),
            Option("cta_group", "int", "tcgen05 CTA group", (1, 2)),
            Option("cta_mask", "expr", "TMA multicast: the CTAs of the cluster (a 16-bit mask "
                   "of ranks) whose shared memory receives the tile"),
            Option("oob", "str", "TMA: what elements outside the array read as",
                   ("zero", "nan")),
            Option("l2_promotion", "int", "TMA: L2 promotion of the tensor map, in bytes",
                   (0, 64, 128, 256)),
            Option("prefetch_tensormap", "bool", "TMA: prefetch the tensor map first"),
            Option("use_tma_reduce", "str", "TMA store: reduce into global memory instead of "
                   "overwriting it", ("add", "min", "max")),
            Option("remote_cta_id", "expr", "dsmem: the CTA rank in the cluster whose shared "
                   "memory receives the tile"),
        ), "asynchronous copy; completion (commit/wait/barrier) is the caller's"),
        Primitive("gemm_async", ("C", "A", "B"), _COMMON + (
            Option("accum", "expr", "add into C (True, or a run-time bool) instead of "
                   "overwriting it (False, the default)"),
            Option("cta_group", "int", "tcgen05 CTA group", (1, 2)),
        ), "asynchronous C (+)= A @ B on the tensor cores (wgmma, tcgen05.mma); the fences, "
           "commits and waits are the caller's"),
        Primitive("gemm", ("C", "A", "B"), _COMMON + (
            Option("accum", "expr", "add into C (True, or a run-time bool) instead of "
                   "overwriting it (False, the default)"),
        ), "synchronous C (+)= A @ B of register or shared tiles (mma.sync)"),
    ]
}

_PRECISE = Option("precise", "bool", "compute through libdevice instead of the approximate "
                  "instructions (ex2/lg2/rsqrt.approx.f32)")
_FTZ = Option("ftz", "bool", "exp / exp2: flush subnormal inputs and results to zero "
              "(ex2.approx.ftz.f32, one instruction; the form without it adds three)")
_SCALE_BIAS = (Option("scale", "operand", "dst = f(src * scale + bias): a number, a run-time "
                      "scalar or a region that broadcasts"),
               Option("bias", "operand", "see scale="))


def _elementwise(op: compute.Elementwise) -> Primitive:
    operands = tuple(Operand(n, k, optional=op.in_place) for n, k in op.operands)
    options = _COMMON + (_SCALE_BIAS + (_PRECISE, _FTZ) if op.unary_math else ())
    return Primitive(op.name, (Operand("dst"),) + operands, options, op.doc,
                     check=lambda c, dst, srcs, opts: compute.check_elementwise(
                         c, op, dst, srcs, opts))


def _reduction(red: compute.Reduction) -> Primitive:
    options = _COMMON + (Option("axes", "axes", "the axes to reduce (default -1, the last)"),
                         Option("accum", "bool", "fold the old dst into the result"))
    return Primitive(red.name, ("dst", "src"), options, red.doc,
                     check=lambda c, dst, srcs, opts: (srcs, {**opts, "axes": (
                         compute.check_reduction(c, red, dst, srcs[0],
                                                 opts.get("axes", -1)))}))


PRIMITIVES.update({p.name: p for p in [
    *(_elementwise(op) for op in compute.ELEMENTWISE.values()),
    *(_reduction(r) for r in compute.REDUCTIONS.values()),
    Primitive("permute_layout", ("dst", "src"), _COMMON,
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
