"""A row of the PTX table (:mod:`tilewise.ptx.table`): :class:`PtxOp`, and the two helpers
the family modules (``rows_*.py``) write their operands with.

Each row says what the instruction takes (operands of the kinds of
:mod:`tilewise.ptx.operands`, checked once when a call is bound), what it returns, which
target feature it needs (:data:`tilewise.target.FEATURES`, which also words the message
for targets without it), how it is spelt in PTX and how it is lowered to LLVM:

* ``llvm="llvm.nvvm.<name>"``: one intrinsic call. The name may hold ``{operand}`` fields
  for static operands (spelt by :meth:`Param.spelt`); every other operand is passed in
  order, converted by its kind. The code generator generates these lowerings from the
  table (:mod:`tilewise.codegen.lowerings.generated`).
* ``llvm=Asm(text, constraints)``: inline PTX, where LLVM 22 has no intrinsic; also
  generated.
* ``llvm=None``: a hand-written lowering registered with ``@lowering(name)`` in
  :mod:`tilewise.codegen.lowerings`.

``traits=`` (:mod:`tilewise.ptx.traits`) says whether the instruction blocks on other
threads, which proxy it accesses shared memory through and how it completes; the default is
a synchronous, non-blocking, generic-proxy instruction. The simulator's scheduler and its
proxy-fence check read these, and a test derives from each row's simulator semantics that
the declaration is not missing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import ScriptError, did_you_mean
from ..ir import dtype as dt
from ..ir.dtype import DataType
from ..ir.expr import Call
from .operands import KINDS, REQUIRED, Param, regs_read, regs_written
from .traits import SYNC, Traits

__all__ = ["Asm", "PtxOp", "param", "shared_ptr", "word_value"]


@dataclass(frozen=True)
class Asm:
    """Inline PTX: ``text`` with ``{operand}`` fields for static operands and ``$k`` for the
    k-th LLVM operand (the result first, when there is one), and the LLVM constraint
    string (``"=r,l,r"``)."""

    text: str
    constraints: str


@dataclass(frozen=True)
class PtxOp:
    name: str  # the path under T, e.g. "ptx.cp_async"
    params: tuple[Param, ...]
    ptx: str  # the PTX spelling, for docs, explain and golden tests
    feature: str | None = None  # Target.has(feature) must hold
    returns: DataType | None = None  # None: no value
    regs: Param | None = None  # a trailing register vector (kind regs_in/out/inout)
    llvm: str | Asm | None = None  # see the module docstring
    check: Callable | None = None  # values of the static operands -> problem or None
    aliases: tuple[str, ...] = ()  # other spellings of the same instruction
    alias_of: str | None = None  # set on the entry of an alias spelling: the row's name
    doc: str = ""
    math: bool = False  # result type follows the first operand (float math)
    result: Callable | None = None  # bound operand values -> the result's dtype
    # (operand, {value: feature}): a static operand whose value needs another feature than
    # the row's (TMA's cta_group=1/2 exists on tcgen05 targets only)
    feature_by: tuple | None = None
    traits: Traits = SYNC  # blocks / proxy / completion (ptx/traits.py)

    @property
    def reads_regs(self) -> bool:
        """Whether its trailing register operands are read (``regs_in``/``regs_inout``)."""
        return regs_read(self.regs)

    @property
    def writes_regs(self) -> bool:
        """Whether its trailing register operands are written (``regs_out``/``regs_inout``)."""
        return regs_written(self.regs)
    # (static operand values, bound trailing operands) -> problem or None (T.print's values
    # against its format's conversions)
    check_regs: Callable | None = None

    def features_of(self, args) -> tuple[str, ...]:
        """The target features a bound call needs (the row's, and its operand's)."""
        out = () if self.feature is None else (self.feature,)
        if self.feature_by is not None:
            name, by_value = self.feature_by
            k = next(i for i, p in enumerate(self.params) if p.name == name)
            value = getattr(args[k], "value", args[k])
            if value in by_value:
                out += (by_value[value],)
        return out

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def bind(self, args: list, kwargs: dict, span=None) -> tuple:
        """Positional operands in table order, defaults filled, every operand checked."""
        args = list(args)
        self._check_arity(args, kwargs, span)
        out, values = [], {}
        for i, p in enumerate(self.params):
            v = self._pick(p, i, args, kwargs, span)
            if v is None and p.optional:
                out.append(None)
                values[p.name] = None
                continue
            bound = KINDS[p.kind].bind(self, p, v, span)
            out.append(bound)
            values[p.name] = getattr(bound, "value", bound) if p.static else bound
        out.extend(self._bind_regs(args[len(self.params):], values, span))
        return tuple(out)

    def _check_arity(self, args, kwargs, span):
        n_fixed = len(self.params)
        if len(args) > n_fixed and self.regs is None:
            raise ScriptError(
                f"T.{self.name} takes {n_fixed} operand(s) ({self.signature()}), "
                f"got {len(args)}", span, hint=f"call it as T.{self.name}({self.signature()})")
        names = [p.name for p in self.params]
        for bad in kwargs:
            if bad not in names:
                raise ScriptError(f"T.{self.name} has no operand named {bad!r}", span,
                                  hint=did_you_mean(bad, names))

    def _pick(self, p: Param, i: int, args, kwargs, span):
        if i < len(args):
            if p.name in kwargs:
                raise ScriptError(f"T.{self.name} got operand {p.name!r} twice", span)
            return args[i]
        if p.name in kwargs:
            return kwargs[p.name]
        if p.default is not REQUIRED:
            return p.default
        raise ScriptError(f"T.{self.name} is missing operand {p.name!r}", span,
                          hint=f"call it as T.{self.name}({self.signature()})")

    def _bind_regs(self, regs: list, values: dict, span) -> list:
        problem = self.check(values) if self.check else None
        if problem:
            raise ScriptError(f"T.{self.name}: {problem}", span)
        if self.regs is None:
            return []
        want = self.regs.count(values)
        if len(regs) != want and self.regs.kind == "args":
            raise ScriptError(f"T.{self.name}'s format prints {want} value(s); the call "
                              f"passes {len(regs)}", span,
                              hint="give one value per conversion (%d, %f, ...); write %% for "
                              "a percent sign")
        if len(regs) != want and self.regs.kind == "coords":
            raise ScriptError(f"T.{self.name} of a {want}-D tensor takes {want} "
                              f"coordinate(s); the call passes {len(regs)}", span,
                              hint=f"pass exactly {want} coordinate(s), innermost first")
        if len(regs) != want:
            raise ScriptError(f"T.{self.name} with these operands moves {want} 32-bit "
                              f"register(s) per thread; the call passes {len(regs)}", span,
                              hint=f"pass exactly {want} register operand(s)")
        bind = KINDS[self.regs.kind].bind
        bound = [bind(self, self.regs, r, span, k) for k, r in enumerate(regs)]
        problem = self.check_regs(values, bound) if self.check_regs else None
        if problem:
            raise ScriptError(f"T.{self.name}: {problem}", span)
        return bound

    def signature(self) -> str:
        parts = [p.name if p.default is REQUIRED else f"{p.name}={p.default!r}"
                 for p in self.params]
        if self.regs is not None:
            parts.append("*" + self.regs.name)
        return ", ".join(parts)

    def result_type(self, args) -> DataType | None:
        if self.result is not None:
            return self.result(dict(zip((p.name for p in self.params), args)))
        if self.math:
            return args[0].dtype if args and hasattr(args[0], "dtype") else dt.float32
        return self.returns

    def call(self, args: list, kwargs: dict, span=None) -> Call:
        bound = self.bind(args, dict(kwargs), span)
        return Call(self.name, bound, self.result_type(bound) or dt.handle, span=span)


def param(name, kind="value", default=REQUIRED, choices=(), **kw) -> Param:
    """An operand of a row: its name, kind (:mod:`tilewise.ptx.operands`), default
    (:data:`REQUIRED` when it has none) and choices; ``**kw`` the kind's other
    fields (``lo=``, ``space=``, ``dtype=``, ``spell=``, ``count=``...)."""
    return Param(name, kind, default, tuple(choices), **kw)


def shared_ptr(name="mbar") -> Param:
    """A pointer operand into shared memory (an mbarrier's, by default)."""
    return param(name, "ptr", space="shared")


def word_value(what: str, verb: str, name: str = "value") -> Callable:
    """A row's check that operand ``name`` is one 32-bit int, uint or float value (what a
    shuffle or a remote store moves): the problem says ``what`` the instruction does and
    suggests to ``verb`` a uint32 view of other data."""
    def check(values) -> str | None:
        v = values[name]
        if v.dtype.bits != 32 or v.dtype.kind not in ("int", "uint", "float"):
            return (f"{what}; {name} is {v.dtype} (convert it with T.cast, or {verb} a "
                    "uint32 view of the data)")
        return None
    return check
