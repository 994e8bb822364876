"""The one table of instructions a kernel may call (``T.ptx.*``, ``T.cuda.*``, math).

Each entry says what the instruction takes (operands, immediates and their legal values),
what it returns, which target feature it needs and how it is spelt in PTX. The parser
binds calls against it, the verifier checks targets against it, and two registries hang
off it: the LLVM lowering (``tilewise.codegen.intrinsics``, ``@lowering(name)``) and the
simulator semantics (``tilewise.sim.semantics``, ``@semantics(name)``), each registered
beside its implementation. A test asserts that every entry has both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ScriptError, did_you_mean
from ..ir import dtype as dt
from ..ir.dtype import DataType
from ..ir.expr import Call, Expr, IntImm, StringImm, as_int, const

REQUIRED = object()


@dataclass(frozen=True)
class Param:
    """One operand. ``kind``: ptr (an address), value (a run-time scalar), imm (a
    compile-time integer), str (a compile-time string), flag (a compile-time bool)."""

    name: str
    kind: str
    default: object = REQUIRED
    choices: tuple = ()


@dataclass(frozen=True)
class PtxOp:
    name: str  # the path under T, e.g. "ptx.cp_async"
    params: tuple[Param, ...]
    ptx: str  # the PTX spelling, for docs, explain and golden tests
    feature: str | None = None  # Target.has(feature) must hold
    returns: DataType | None = None  # None: no value; "same" handled by math ops
    varargs: str | None = None  # name of a trailing list of register operands
    doc: str = ""
    math: bool = False  # result type follows the first operand (float math)
    extra: dict = field(default_factory=dict)

    def bind(self, args: list, kwargs: dict, span=None) -> tuple:
        """Positional operands in table order, defaults filled, immediates checked."""
        out: list = []
        args = list(args)
        n_fixed = len(self.params)
        if len(args) > n_fixed and self.varargs is None:
            raise ScriptError(
                f"T.{self.name} takes {n_fixed} operand(s) ({self.signature()}), "
                f"got {len(args)}", span, hint=f"call it as T.{self.name}({self.signature()})")
        names = [p.name for p in self.params]
        for bad in kwargs:
            if bad not in names:
                raise ScriptError(f"T.{self.name} has no operand named {bad!r}", span,
                                  hint=did_you_mean(bad, names))
        for i, p in enumerate(self.params):
            if i < len(args):
                if p.name in kwargs:
                    raise ScriptError(f"T.{self.name} got operand {p.name!r} twice", span)
                v = args[i]
            elif p.name in kwargs:
                v = kwargs.pop(p.name)
            elif p.default is not REQUIRED:
                v = p.default
            else:
                raise ScriptError(f"T.{self.name} is missing operand {p.name!r}", span,
                                  hint=f"call it as T.{self.name}({self.signature()})")
            out.append(self._check(p, v, span))
        out.extend(const(a) if not isinstance(a, Expr) else a for a in args[n_fixed:])
        return tuple(out)

    def _check(self, p: Param, v, span):
        if v is None and p.default is None:
            return None  # an optional operand left out
        if p.kind in ("imm", "flag"):
            iv = as_int(v)
            if iv is None:
                raise ScriptError(f"operand {p.name!r} of T.{self.name} must be a compile-time "
                                  f"constant", span, hint="pass a Python int literal or constant")
            if p.choices and iv not in p.choices:
                raise ScriptError(
                    f"operand {p.name!r} of T.{self.name} is {iv}; PTX allows "
                    + ", ".join(map(str, p.choices)), span,
                    hint=f"use one of {', '.join(map(str, p.choices))}")
            return IntImm(iv, dt.bool_ if p.kind == "flag" else dt.int32)
        if p.kind == "str":
            s = v.value if isinstance(v, StringImm) else v
            if not isinstance(s, str) or (p.choices and s not in p.choices):
                raise ScriptError(f"operand {p.name!r} of T.{self.name} is {s!r}; expected one "
                                  f"of {', '.join(map(repr, p.choices))}", span)
            return StringImm(s)
        if v is None:
            return None
        return const(v) if not isinstance(v, Expr) else v

    def signature(self) -> str:
        parts = [p.name if p.default is REQUIRED else f"{p.name}={p.default!r}"
                 for p in self.params]
        if self.varargs:
            parts.append("*" + self.varargs)
        return ", ".join(parts)

    def result_type(self, args) -> DataType | None:
        if self.math:
            return args[0].dtype if args and isinstance(args[0], Expr) else dt.float32
        return self.returns

    def call(self, args: list, kwargs: dict, span=None) -> Call:
        bound = self.bind(args, dict(kwargs), span)
        return Call(self.name, bound, self.result_type(bound) or dt.handle, span=span)


def _p(name, kind="value", default=REQUIRED, choices=()):
    return Param(name, kind, default, tuple(choices))


_TCGEN05_SHAPES = ("32x32b", "16x64b", "16x128b", "16x256b", "16x32bx2")
_NUMS = (1, 2, 4, 8, 16, 32, 64, 128)
_LDST = (_p("taddr"), _p("row", "imm", 0), _p("col", "imm", 0),
         _p("shape", "str", choices=_TCGEN05_SHAPES), _p("num", "imm", choices=_NUMS))

_OPS = [
    # ---- cp.async (LDGSTS), PTX ISA §9.7.9.25
    PtxOp("ptx.cp_async", (_p("dst", "ptr"), _p("src", "ptr"),
                           _p("cp_size", "imm", choices=(4, 8, 16)),
                           _p("src_size", "value", None), _p("ignore_src", "value", None),
                           _p("prefetch", "imm", None, (64, 128, 256))),
          "cp.async.{ca|cg}.shared.global{.L2::NB} [dst], [src], cp-size{, src-size}",
          "cp_async",
          doc="asynchronous global->shared copy of 4/8/16 bytes; .cg when 16 bytes; "
              "prefetch: the L2 prefetch size hint in bytes"),
    PtxOp("ptx.cp_async.commit_group", (), "cp.async.commit_group", "cp_async"),
    PtxOp("ptx.cp_async.wait_group", (_p("n", "imm", 0),), "cp.async.wait_group n", "cp_async"),
    PtxOp("ptx.cp_async.wait_all", (), "cp.async.wait_all", "cp_async"),
    # ---- bulk copies by the TMA unit (non-tensor), PTX ISA §9.7.9.25.4
    PtxOp("ptx.cp_async.bulk.g2s", (_p("dst", "ptr"), _p("src", "ptr"), _p("nbytes"),
                                    _p("mbar", "ptr")),
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], "
          "size, [mbar]", "tma",
          doc="global -> shared copy of nbytes (a multiple of 16, both addresses 16-byte "
              "aligned) that performs complete_tx(nbytes) on mbar when the bytes have landed"),
    PtxOp("ptx.cp_async.bulk.s2g", (_p("dst", "ptr"), _p("src", "ptr"), _p("nbytes")),
          "cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size", "tma",
          doc="shared -> global copy of nbytes, tracked by this thread's bulk async-groups"),
    PtxOp("ptx.cp_async.bulk.commit_group", (), "cp.async.bulk.commit_group", "tma"),
    PtxOp("ptx.cp_async.bulk.wait_group", (_p("n", "imm", 0),), "cp.async.bulk.wait_group n",
          "tma", doc="wait until at most n of this thread's bulk groups are pending"),
    PtxOp("ptx.cp_async.bulk.wait_group_read", (_p("n", "imm", 0),),
          "cp.async.bulk.wait_group.read n", "tma",
          doc="wait until at most n bulk groups still read their shared-memory source"),
    PtxOp("ptx.fence.proxy_async", (), "fence.proxy.async.shared::cta", "tma",
          doc="order this thread's generic-proxy shared-memory accesses with the async proxy"),
    # ---- a synchronous vector move: ld.<space>.v{1,2,4}.b{8..32} then st.<space>...
    PtxOp("ptx.ld_st", (_p("dst", "ptr"), _p("src", "ptr"),
                        _p("nbytes", "imm", choices=(1, 2, 4, 8, 16))),
          "ld.<src-space>.v<n>.b32 {r..}, [src]; st.<dst-space>.v<n>.b32 [dst], {r..}", None,
          doc="copy nbytes (naturally aligned) as one vector load and one vector store"),
    # ---- barriers and warp primitives
    PtxOp("cuda.cta_sync", (), "bar.sync 0", None, doc="__syncthreads()"),
    PtxOp("ptx.elect_sync", (), "elect.sync %r|%p, 0xffffffff", "elect_sync", returns=dt.bool_),
    # ---- mbarrier, PTX ISA §9.7.13.15
    PtxOp("ptx.mbarrier.init", (_p("mbar", "ptr"), _p("count")),
          "mbarrier.init.shared.b64 [mbar], count", "cp_async"),
    PtxOp("ptx.mbarrier.arrive", (_p("mbar", "ptr"),), "mbarrier.arrive.shared.b64 state, [mbar]",
          "cp_async", returns=dt.uint64),
    PtxOp("ptx.mbarrier.arrive_expect_tx", (_p("mbar", "ptr"), _p("tx_bytes")),
          "mbarrier.arrive.expect_tx.shared.b64 state, [mbar], tx", "mbarrier_tx",
          returns=dt.uint64),
    PtxOp("ptx.mbarrier.expect_tx", (_p("mbar", "ptr"), _p("tx_bytes")),
          "mbarrier.expect_tx.relaxed.cta.shared.b64 [mbar], tx", "mbarrier_tx"),
    PtxOp("ptx.mbarrier.try_wait_parity", (_p("mbar", "ptr"), _p("parity")),
          "mbarrier.try_wait.parity.shared.b64 p, [mbar], parity", "mbarrier_tx",
          returns=dt.bool_),
    PtxOp("ptx.mbarrier.wait_parity", (_p("mbar", "ptr"), _p("parity")),
          "mbarrier.try_wait.parity.shared.b64 p, [mbar], parity (looped until p)",
          "mbarrier_tx",
          doc="block until the phase of parity `parity` has completed (a try_wait loop)"),
    PtxOp("ptx.cp_async.mbarrier_arrive", (_p("mbar", "ptr"),),
          "cp.async.mbarrier.arrive.noinc.shared.b64 [mbar]", "cp_async"),
    # ---- tcgen05 tensor memory, PTX ISA §9.7.16
    PtxOp("ptx.tcgen05.alloc", (_p("dst", "ptr"),
                                _p("n_cols", "imm", choices=(32, 64, 128, 256, 512)),
                                _p("cta_group", "imm", 1, (1, 2))),
          "tcgen05.alloc.cta_group::N.sync.aligned.shared::cta.b32 [dst], nCols", "tcgen05"),
    PtxOp("ptx.tcgen05.dealloc", (_p("taddr"), _p("n_cols", "imm", choices=(32, 64, 128, 256, 512)),
                                  _p("cta_group", "imm", 1, (1, 2))),
          "tcgen05.dealloc.cta_group::N.sync.aligned.b32 taddr, nCols", "tcgen05"),
    PtxOp("ptx.tcgen05.relinquish_alloc_permit", (_p("cta_group", "imm", 1, (1, 2)),),
          "tcgen05.relinquish_alloc_permit.cta_group::N.sync.aligned", "tcgen05"),
    PtxOp("ptx.tcgen05.ld", _LDST + (_p("pack", "flag", False),),
          "tcgen05.ld.sync.aligned.<shape>.x<num>{.pack::16b}.b32 {regs}, [taddr]", "tcgen05",
          varargs="regs", doc="registers are lvalues (buffer elements) that receive the cells"),
    PtxOp("ptx.tcgen05.st", _LDST + (_p("unpack", "flag", False),),
          "tcgen05.st.sync.aligned.<shape>.x<num>{.unpack::16b}.b32 [taddr], {regs}", "tcgen05",
          varargs="regs"),
    PtxOp("ptx.tcgen05.wait.ld", (), "tcgen05.wait::ld.sync.aligned", "tcgen05"),
    PtxOp("ptx.tcgen05.wait.st", (), "tcgen05.wait::st.sync.aligned", "tcgen05"),
    PtxOp("ptx.tcgen05.fence.before_thread_sync", (), "tcgen05.fence::before_thread_sync",
          "tcgen05"),
    PtxOp("ptx.tcgen05.fence.after_thread_sync", (), "tcgen05.fence::after_thread_sync",
          "tcgen05"),
]

# ---- math, lowered through libdevice (__nv_<name>f / __nv_<name>)
_MATH1 = ("exp", "exp2", "log", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
          "floor", "ceil", "fabs", "erf", "trunc", "round")
_OPS += [PtxOp(n, (_p("x"),), f"__nv_{n}", math=True, doc=f"libdevice {n}") for n in _MATH1]
_OPS += [PtxOp(n, (_p("x"), _p("y")), f"__nv_{n}", math=True, doc=f"libdevice {n}")
         for n in ("pow", "atan2", "fmod")]
_OPS += [PtxOp("fma", (_p("a"), _p("b"), _p("c")), "__nv_fma", math=True)]

PTX_OPS: dict[str, PtxOp] = {op.name: op for op in _OPS}
MATH_OPS = frozenset(op.name for op in _OPS if op.math)


def lookup(name: str, span=None) -> PtxOp:
    op = PTX_OPS.get(name)
    if op is None:
        raise ScriptError(f"T.{name} is not an instruction tilewise knows", span,
                          hint=did_you_mean(name, PTX_OPS))
    return op


def prefixes() -> set[str]:
    """Every dotted prefix of a table name ("ptx", "ptx.cp_async", ...)."""
    out = set()
    for name in PTX_OPS:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            out.add(".".join(parts[:i]))
    return out
