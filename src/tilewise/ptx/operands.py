"""Operand kinds of the PTX table, and the one place a call's operands are checked.

Every operand of a table entry is a :class:`Param` of one kind of :data:`KINDS`. Binding a
call (:meth:`tilewise.ptx.op.PtxOp.bind`, when the parser meets ``T.ptx.*`` or a variant
emits an instruction) checks each operand against its kind once; the code generator and
the simulator then trust the bound call. A kind says whether the operand is a compile-time
part of the instruction (``static``: spelt into the opcode or passed as an LLVM
``immarg``) or a run-time value; the code generator converts run-time operands by kind
(:mod:`tilewise.codegen.lowerings.args`), the simulator evaluates them.

=============  ===========================================================================
kind           operand
=============  ===========================================================================
``ptr``        an address ``T.address_of(buf[...])`` of a buffer in ``space`` (``shared``,
               ``global`` or ``any``)
``value``      a run-time scalar, passed as ``dtype`` (int32 unless the row says)
``desc64``     a 64-bit matrix or instruction descriptor (a run-time 64-bit integer)
``taddr``      a tensor-memory address (32 bits: lane << 16 | column)
``rank``       a CTA rank in the cluster: the instruction addresses that CTA's shared
               memory (``shared::cluster``, through ``mapa``)
``imm``        a compile-time int: one of ``choices``, or in ``[lo, hi]`` and a multiple
               of ``step``
``flag``       a compile-time bool
``str``        a compile-time string, one of ``choices`` (spelt into the opcode)
``reg32``      one 32-bit register value (an mma.sync fragment register); a float is
               passed by its bits
``regs_in``    trailing 32-bit register values (``tcgen05.st``)
``regs_out``   trailing destination registers: 32-bit buffer elements (``tcgen05.ld``)
``regs_inout`` trailing registers read and written (wgmma accumulators)
``tensormap``  a TMA tensor map: the hidden ``byval`` kernel parameter the ``tma`` variant
               creates (``ptx/tma.py``); kernels cannot name one
``coords``     trailing int32 tensor coordinates, innermost first (TMA copies)
``text``       a compile-time string, any text (``T.print``'s format, an assert's message)
``args``       trailing run-time scalars of any dtype (the values ``T.print`` prints)
=============  ===========================================================================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import ScriptError
from ..ir import dtype as dt
from ..ir.dtype import DataType
from ..ir.expr import AddressOf, BufferLoad, Expr, IntImm, StringImm, Var, as_int, const

REQUIRED = object()

#: Buffer scopes a ``ptr`` operand of each space accepts.
SPACES: dict[str, tuple[str, ...]] = {
    "shared": ("shared", "shared.dyn"),
    "global": ("global",),
    "any": ("shared", "shared.dyn", "global", "local"),
}


@dataclass(frozen=True)
class Param:
    """One operand of a table entry (see the module docstring for the kinds).

    ``spell`` maps a static operand's value to its text in the opcode or the intrinsic
    name (default ``str(value)``); ``count(values)`` gives the number of registers of a
    ``regs_*`` operand from the other operands' values."""

    name: str
    kind: str
    default: object = REQUIRED
    choices: tuple = ()
    lo: int | None = None
    hi: int | None = None
    step: int = 1
    space: str = "any"
    dtype: DataType = dt.int32
    spell: tuple = ()
    count: Callable | None = None

    @property
    def static(self) -> bool:
        return KINDS[self.kind].static

    @property
    def optional(self) -> bool:
        return self.default is None

    def spelt(self, value) -> str:
        """How ``value`` of this static operand reads in an opcode or intrinsic name."""
        return dict(self.spell).get(value, str(value))

    def legal(self) -> str:
        """The legal values of an ``imm`` operand, in words."""
        if self.choices:
            return ", ".join(map(str, self.choices))
        step = f" in steps of {self.step}" if self.step != 1 else ""
        return f"{self.lo}..{self.hi}{step}"


@dataclass(frozen=True)
class Kind:
    """One operand kind: ``bind(op, param, value, span)`` checks an operand and returns
    it as IR (``None`` for an optional operand left out)."""

    name: str
    static: bool
    bind: Callable


KINDS: dict[str, Kind] = {}


def kind(name: str, static: bool = False):
    """Register the decorated function as the binding check of operand kind ``name``."""

    def deco(fn):
        KINDS[name] = Kind(name, static, fn)
        return fn

    return deco


def _error(op, p, what: str, span, hint: str | None = None) -> ScriptError:
    return ScriptError(f"operand {p.name!r} of T.{op.name} {what}", span, hint)


def _as_expr(op, p, v, span) -> Expr:
    if isinstance(v, (str, StringImm)):
        raise _error(op, p, "must be a number, not a string", span)
    try:
        return const(v)
    except TypeError:
        raise _error(op, p, f"must be a run-time value or a number, got "
                     f"{type(v).__name__}", span) from None


@kind("ptr")
def _ptr(op, p, v, span):
    if not isinstance(v, AddressOf):
        raise _error(op, p, "must be an address", span,
                     "pass T.address_of(buffer[index])")
    scope = v.buffer.scope
    if scope not in SPACES[p.space]:
        raise _error(op, p, f"must be an address in {p.space} memory; {v.buffer.name!r} is "
                     f"in {scope} memory", span,
                     f"pass the address of a {p.space} buffer element")
    return v


@kind("value")
def _value(op, p, v, span):
    return _as_expr(op, p, v, span)


@kind("rank")
def _rank(op, p, v, span):
    e = _value(op, p, v, span)
    if not e.dtype.is_int:
        raise _error(op, p, f"is a CTA rank in the cluster and must be an integer, got "
                     f"{e.dtype}", span)
    return e


@kind("taddr")
def _taddr(op, p, v, span):
    e = _value(op, p, v, span)
    if not e.dtype.is_int:
        raise _error(op, p, f"is a tensor-memory address and must be a 32-bit integer, got "
                     f"{e.dtype}", span, "pass the address tcgen05.alloc wrote")
    return e


@kind("desc64")
def _desc64(op, p, v, span):
    e = v if isinstance(v, Expr) else const(v, dt.uint64) if isinstance(v, int) else None
    if e is None or not e.dtype.is_int or e.dtype.bits != 64:
        got = e.dtype if e is not None else type(v).__name__
        raise _error(op, p, f"is a 64-bit descriptor and must be a 64-bit integer, got {got}",
                     span, "build it in a T.uint64 variable")
    return e


@kind("imm", static=True)
def _imm(op, p, v, span):
    iv = as_int(v)
    if iv is None:
        raise _error(op, p, "must be a compile-time constant", span,
                     "pass a Python int literal or constant")
    bad = (iv not in p.choices) if p.choices else not (
        p.lo <= iv <= p.hi and (iv - p.lo) % p.step == 0)
    if bad:
        raise _error(op, p, f"is {iv}; PTX allows {p.legal()}", span, f"use {p.legal()}")
    return IntImm(iv, dt.int32)


@kind("flag", static=True)
def _flag(op, p, v, span):
    iv = as_int(v)
    if iv is None or iv not in (0, 1):
        raise _error(op, p, "must be a compile-time True or False", span)
    return IntImm(iv, dt.bool_)


@kind("str", static=True)
def _str(op, p, v, span):
    s = v.value if isinstance(v, StringImm) else v
    if not isinstance(s, str) or s not in p.choices:
        raise _error(op, p, f"is {s!r}; expected one of {', '.join(map(repr, p.choices))}",
                     span)
    return StringImm(s)


@kind("reg32")
def _reg32(op, p, v, span):
    e = _as_expr(op, p, v, span)
    if e.dtype.bits != 32:
        raise _error(op, p, f"is a 32-bit register and must be a 32-bit value, got {e.dtype}",
                     span, "pass an element of a 32-bit (uint32) view of the fragment")
    return e


def _register(op, p, v, span, k):
    e = _as_expr(op, p, v, span)
    if e.dtype.bits != 32:
        raise ScriptError(f"register {k} of T.{op.name} must be a 32-bit value, got "
                          f"{e.dtype}", span, "pass 32-bit values (a uint32 view of the data)")
    return e


def _destination(op, p, v, span, k):
    if not isinstance(v, BufferLoad) or v.buffer.dtype.bits != 32:
        raise ScriptError(f"register {k} of T.{op.name} is a destination and must be a "
                          f"32-bit buffer element", span,
                          "pass elements of a 32-bit local buffer, e.g. R32[i]")
    return v


kind("regs_in")(_register)
kind("regs_out")(_destination)
kind("regs_inout")(_destination)


@kind("tensormap")
def _tensormap(op, p, v, span):
    if not isinstance(v, Var) or v.dtype.kind != "tensormap":
        raise _error(op, p, "must be a TMA tensor map", span,
                     "tensor maps are made by Tx.*.copy_async(..., dispatch=\"tma\"); copy "
                     "with the tile primitive instead of naming the instruction")
    return v


@kind("coords")
def _coordinate(op, p, v, span, k):
    e = _as_expr(op, p, v, span)
    if not e.dtype.is_int:
        raise ScriptError(f"coordinate {k} of T.{op.name} must be an integer, got {e.dtype}",
                          span, "pass int32 tensor coordinates, innermost first")
    return e


@kind("text", static=True)
def _text(op, p, v, span):
    s = v.value if isinstance(v, StringImm) else v
    if not isinstance(s, str):
        raise _error(op, p, f"must be a string literal, got {type(s).__name__}", span)
    if "\0" in s:
        raise _error(op, p, "must not contain a NUL character", span)
    return StringImm(s)


@kind("args")
def _argument(op, p, v, span, k):
    e = _as_expr(op, p, v, span)
    if e.dtype.kind not in ("int", "uint", "float", "bool") or e.dtype.bits == 8 and \
            e.dtype.kind == "float":
        raise ScriptError(f"value {k} of T.{op.name} is a {e.dtype}; it prints integers, bools "
                          "and 16-, 32- or 64-bit floats", span,
                          "pass a number (load the element, e.g. A[i]); print an 8-bit float "
                          "by its bits (a uint8 view)")
    return e


def regs_written(p: Param | None) -> bool:
    """Whether a register operand's registers receive values (out, inout)."""
    return p is not None and p.kind in ("regs_out", "regs_inout")


def regs_read(p: Param | None) -> bool:
    """Whether a trailing operand's values are read (register values, coordinates)."""
    return p is not None and p.kind in ("regs_in", "regs_inout", "coords", "args")
