"""The one table of instructions a kernel may call (``T.ptx.*``, ``T.cuda.*``, math).

Each entry says what the instruction takes (operands of the kinds of
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

The simulator semantics are registered with ``@semantics(name)`` in :mod:`tilewise.sim.ops`.
Tests assert that every entry (every spelling, aliases included) has both.

``traits=`` (:mod:`tilewise.ptx.traits`) says whether the instruction blocks on other
threads, which proxy it accesses shared memory through and how it completes; the default is
a synchronous, non-blocking, generic-proxy instruction. The simulator's scheduler and its
proxy-fence check read these, and a test derives from each row's simulator semantics that
the declaration is not missing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..errors import ScriptError, did_you_mean
from ..ir import dtype as dt
from ..ir.dtype import DataType
from ..ir.expr import Call
from . import mma, packed, printf, tcgen05, tma, wgmma
from .operands import KINDS, REQUIRED, Param, regs_read, regs_written
from .traits import SYNC, Traits, async_op, blocking, completing

__all__ = ["Asm", "MATH_OPS", "PTX_OPS", "Param", "PtxOp", "REQUIRED", "ROWS", "lookup",
           "prefixes", "register"]


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


def _p(name, kind="value", default=REQUIRED, choices=(), **kw) -> Param:
    return Param(name, kind, default, tuple(choices), **kw)


def _shared(name="mbar") -> Param:
    return _p(name, "ptr", space="shared")


_CTA_GROUP = _p("cta_group", "imm", 1, tcgen05.CTA_GROUPS)
_N_COLS = _p("n_cols", "imm", choices=tcgen05.ALLOC_COLS)
_LDST = (_p("taddr", "taddr"), _p("row", "imm", 0, lo=0, hi=tcgen05.LANES - 1),
         _p("col", "imm", 0, lo=0, hi=tcgen05.COLS - 1),
         _p("shape", "str", choices=tuple(tcgen05.SHAPES)),
         _p("num", "imm", choices=tcgen05.NUMS))


def _ldst_regs(kind: str) -> Param:
    return _p("regs", kind, count=lambda v: tcgen05.SHAPES[v["shape"]].nregs(v["num"]))


def _ldst_check(values) -> str | None:
    return tcgen05.shape_num_problem(values["shape"], values["num"])


def _wgmma_regs(values) -> int:
    return wgmma.acc_regs(values["n"], values["acc"])


def _wgmma_check(values) -> str | None:
    k_dtype = values["ab"]
    if values["trans_a"] or values["trans_b"]:
        if not wgmma.transposable(k_dtype):
            return (f"a transposed (MN-major) operand needs {' or '.join(wgmma.TRANSPOSABLE)} "
                    f"inputs, not {k_dtype}")
    if values["acc"] == "float16" and k_dtype != "float16":
        return f"a float16 accumulator needs float16 inputs, not {k_dtype}"
    return None


_WGMMA = (_p("a_desc", "desc64"), _p("b_desc", "desc64"),
          _p("scale_d", "value", dtype=dt.bool_),
          _p("n", "imm", lo=wgmma.N_MIN, hi=wgmma.N_MAX, step=wgmma.N_STEP),
          _p("ab", "str", choices=tuple(wgmma.PTX_TYPE)),
          _p("acc", "str", "float32", choices=tuple(wgmma.ACC_TYPE)),
          _p("trans_a", "flag", False), _p("trans_b", "flag", False))

# A from registers (PTX ISA §9.7.15.5.1.1.1): a0..a3, the B descriptor, no trans-a
_WGMMA_RS = (tuple(_p(f"a{i}", "reg32") for i in range(wgmma.A_REGS))
             + (_p("b_desc", "desc64"), _p("scale_d", "value", dtype=dt.bool_),
                _p("n", "imm", lo=wgmma.N_MIN, hi=wgmma.N_MAX, step=wgmma.N_STEP),
                _p("ab", "str", choices=wgmma.A_REG_TYPES),
                _p("acc", "str", "float32", choices=tuple(wgmma.ACC_TYPE)),
                _p("trans_b", "flag", False)))


def _wgmma_rs_check(values) -> str | None:
    return _wgmma_check({**values, "trans_a": False})


_DIM = _p("dim", "imm", lo=1, hi=tma.MAX_RANK)
_CACHE_HINT = _p("cache_hint", "str", None, tuple(tma.CACHE_POLICY))


def _coords() -> Param:
    return _p("coords", "coords", count=lambda v: v["dim"])


def _mma_regs(values) -> int:
    return mma.c_regs(values["acc"])


def _mma_check(values) -> str | None:
    return mma.combination_problem(values["a_type"], values["b_type"], values["acc"])


def _mma_params(inputs: tuple[str, ...]) -> tuple[Param, ...]:
    return ((_p("a_type", "str", choices=inputs), _p("b_type", "str", choices=inputs),
             _p("acc", "str", choices=tuple(mma.ACC_TYPE)))
            + tuple(_p(f"a{i}", "reg32") for i in range(mma.A_REGS))
            + tuple(_p(f"b{i}", "reg32") for i in range(mma.B_REGS)))


def _mma_row(name: str, inputs: tuple[str, ...], feature: str, doc: str) -> PtxOp:
    return PtxOp(name, _mma_params(inputs),
                 "mma.sync.aligned.m16n8k<K>.row.col.<acc>.<a>.<b>.<acc> {d}, {a0, a1, a2, a3}, "
                 "{b0, b1}, {d}", feature, regs=_p("acc_regs", "regs_inout", count=_mma_regs),
                 check=_mma_check,
                 doc=doc + "; D = A @ B + D in place: A (16 x K) in a0..a3 and B (K x 8) in "
                 "b0, b1 (32-bit registers of packed inputs), D (16 x 8) the accumulator "
                 "registers (4 float32 / int32, or 2 float16x2), read and written "
                 "(ptx/mma.py gives the fragments); the whole warp executes it")


def _matrix_row(name: str, what: str, feature: str, doc: str) -> PtxOp:
    pointer = "src" if name.endswith("ldmatrix") else "dst"
    spelling = ("{regs}, [src]" if pointer == "src" else "[dst], {regs}")
    return PtxOp(name, (_shared(pointer), _p("num", "imm", choices=mma.LDMATRIX_NUMS),
                        _p("trans", "flag")),
                 f"{what}.sync.aligned.m8n8.x<num>{{.trans}}.shared.b16 {spelling}", feature,
                 regs=_p("regs", "regs_out" if pointer == "src" else "regs_in",
                         count=lambda v: v["num"]), doc=doc)


def _tcgen05_mma_params(a: Param) -> tuple[Param, ...]:
    return (_p("d_tmem", "taddr"), a, _p("b_desc", "desc64"),
            _p("idesc", "value", dtype=dt.uint32),
            _p("enable_input_d", "value", dtype=dt.bool_),
            _p("kind", "str", choices=tuple(tcgen05.KINDS)), _CTA_GROUP)


_MMA_DOC = ("D (+)= A @ B on the tensor cores, issued by one thread: D in tensor memory at "
            "d_tmem, {a}, B in shared memory by its descriptor (ptx/tcgen05.py smem_desc), "
            "shapes, types and majorness in the 32-bit instruction descriptor idesc "
            "(instr_desc); enable_input_d false overwrites D. Completion: "
            "T.ptx.tcgen05.commit to an mbarrier")
_CP_SPELL = tuple((k, v.llvm) for k, v in tcgen05.CP_SHAPES.items())

_PROXY_SPACES = (("shared::cta", ".shared_cta"), ("shared::cluster", ".shared_cluster"),
                 ("global", ".global"))

_OPS = [
    # ---- cp.async (LDGSTS), PTX ISA §9.7.9.25
    PtxOp("ptx.cp_async", (_shared("dst"), _p("src", "ptr", space="global"),
                           _p("cp_size", "imm", choices=(4, 8, 16)),
                           _p("src_size", "value", None), _p("ignore_src", "value", None),
                           _p("prefetch", "imm", None, (64, 128, 256))),
          "cp.async.{ca|cg}.shared.global{.L2::NB} [dst], [src], cp-size{, src-size}",
          "cp_async", traits=async_op("cp_async_group"),
          doc="asynchronous global->shared copy of 4/8/16 bytes; .cg when 16 bytes; "
              "prefetch: the L2 prefetch size hint in bytes"),
    PtxOp("ptx.cp_async.commit_group", (), "cp.async.commit_group", "cp_async",
          llvm="llvm.nvvm.cp.async.commit.group", traits=completing("cp_async_group")),
    PtxOp("ptx.cp_async.wait_group", (_p("n", "imm", 0, lo=0, hi=2**31 - 1),),
          "cp.async.wait_group n", "cp_async", llvm="llvm.nvvm.cp.async.wait.group",
          traits=completing("cp_async_group")),
    PtxOp("ptx.cp_async.wait_all", (), "cp.async.wait_all", "cp_async",
          llvm="llvm.nvvm.cp.async.wait.all", traits=completing("cp_async_group")),
    PtxOp("ptx.cp_async.mbarrier_arrive", (_shared(),),
          "cp.async.mbarrier.arrive.noinc.shared.b64 [mbar]", "cp_async",
          llvm="llvm.nvvm.cp.async.mbarrier.arrive.noinc.shared",
          traits=completing("cp_async_group")),
    # ---- bulk copies by the TMA unit (non-tensor), PTX ISA §9.7.9.25.4
    PtxOp("ptx.cp_async.bulk.g2s", (_shared("dst"), _p("src", "ptr", space="global"),
                                    _p("nbytes"), _shared()),
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], "
          "size, [mbar]", "tma", traits=async_op("mbarrier", "async"),
          doc="global -> shared copy of nbytes (a multiple of 16, both addresses 16-byte "
              "aligned) that performs complete_tx(nbytes) on mbar when the bytes have landed"),
    PtxOp("ptx.cp_async.bulk.s2g", (_p("dst", "ptr", space="global"), _shared("src"),
                                    _p("nbytes")),
          "cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size", "tma",
          traits=async_op("bulk_group", "async"),
          doc="shared -> global copy of nbytes, tracked by this thread's bulk async-groups"),
    PtxOp("ptx.cp_async.bulk.commit_group", (), "cp.async.bulk.commit_group", "tma",
          llvm="llvm.nvvm.cp.async.bulk.commit.group", traits=completing("bulk_group")),
    PtxOp("ptx.cp_async.bulk.wait_group", (_p("n", "imm", 0, lo=0, hi=2**31 - 1),),
          "cp.async.bulk.wait_group n", "tma", llvm="llvm.nvvm.cp.async.bulk.wait.group",
          traits=completing("bulk_group"),
          doc="wait until at most n of this thread's bulk groups are pending"),
    PtxOp("ptx.cp_async.bulk.wait_group_read", (_p("n", "imm", 0, lo=0, hi=2**31 - 1),),
          "cp.async.bulk.wait_group.read n", "tma",
          llvm="llvm.nvvm.cp.async.bulk.wait.group.read", traits=completing("bulk_group"),
          doc="wait until at most n bulk groups still read their shared-memory source"),
    # ---- tensor copies by the TMA unit, PTX ISA §9.7.9.25.5 (facts in ptx/tma.py)
    PtxOp("ptx.cp_async.bulk.tensor.g2c",
          (_DIM, _shared("dst"), _shared(), _p("tmap", "tensormap"),
           _p("cta_mask", "value", None, dtype=dt.DTYPES["uint16"]),
           _p("cta_group", "imm", 0, (0, 1, 2)), _CACHE_HINT),
          "cp.async.bulk.tensor.<dim>d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
          "{.multicast::cluster}{.cta_group::N}{.L2::cache_hint} [dst], [tmap, {coords}], "
          "[mbar]{, cta_mask}{, policy}", "tma", regs=_coords(),
          feature_by=("cta_group", {1: "tcgen05", 2: "tcgen05"}),
          traits=async_op("mbarrier", "async"),
          doc="global -> shared copy of the tensor map's box at `coords` (innermost first; "
              "out-of-bounds elements filled) that performs complete_tx(box bytes) on mbar; "
              "with cta_mask, into the same offsets of every CTA of the cluster in the mask "
              "and on their mbarriers at mbar's offset"),
    PtxOp("ptx.cp_async.bulk.tensor.s2g",
          (_DIM, _shared("src"), _p("tmap", "tensormap"), _CACHE_HINT),
          "cp.async.bulk.tensor.<dim>d.global.shared::cta.tile.bulk_group{.L2::cache_hint} "
          "[tmap, {coords}], [src]{, policy}", "tma", regs=_coords(),
          traits=async_op("bulk_group", "async"),
          doc="shared -> global copy of a box (elements out of bounds are not written), "
              "tracked by this thread's bulk async-groups"),
    PtxOp("ptx.cp_async.bulk.tensor.s2g_reduce",
          (_DIM, _shared("src"), _p("tmap", "tensormap"),
           _p("op", "str", choices=tma.REDUCE_OPS), _CACHE_HINT),
          "cp.reduce.async.bulk.tensor.<dim>d.global.shared::cta.<op>.tile.bulk_group"
          "{.L2::cache_hint} [tmap, {coords}], [src]{, policy}", "tma", regs=_coords(),
          traits=async_op("bulk_group", "async"),
          doc="shared -> global reduction (add, min or max) of a box into global memory"),
    PtxOp("ptx.prefetch_tensormap", (_p("tmap", "tensormap"),),
          "prefetch.param.tensormap [tmap]", "tma",
          doc="bring a tensor map into the cache ahead of the copies that use it"),
    PtxOp("ptx.cp_async.bulk.s2c",
          (_shared("dst"), _shared("src"), _p("nbytes"), _shared(), _p("rank", "rank")),
          "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [dst], "
          "[src], size, [mbar]", "tma", traits=async_op("mbarrier", "async"),
          doc="shared -> shared copy of nbytes (a multiple of 16, 16-byte aligned) into CTA "
              "`rank` of the cluster: dst and mbar are this CTA's addresses of the buffer and "
              "mbarrier, mapped to that CTA (mapa); complete_tx(nbytes) on its mbarrier"),
    # ---- clusters, PTX ISA §9.7.13.4 (barrier.cluster) and §9.7.13.15.18
    PtxOp("ptx.barrier.cluster.arrive",
          (_p("relaxed", "flag", False, spell=((1, ".relaxed"), (0, ""))),
           _p("aligned", "flag", False, spell=((1, ".aligned"), (0, "")))),
          "barrier.cluster.arrive{.relaxed}{.aligned}", "cluster",
          llvm="llvm.nvvm.barrier.cluster.arrive{relaxed}{aligned}",
          doc="arrive on the cluster barrier (release; relaxed=True orders nothing); "
              "aligned=True: every thread of the warp executes it"),
    PtxOp("ptx.barrier.cluster.wait",
          (_p("aligned", "flag", False, spell=((1, ".aligned"), (0, ""))),),
          "barrier.cluster.wait{.aligned}", "cluster",
          llvm="llvm.nvvm.barrier.cluster.wait{aligned}", traits=blocking(),
          doc="wait until every thread of every CTA of the cluster has arrived (acquire)"),
    PtxOp("cuda.cluster_sync", (), "barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned",
          "cluster", traits=blocking(),
          doc="all threads of the cluster: arrive, then wait (TIRx's spelling)"),
    PtxOp("ptx.fence.mbarrier_init", (), "fence.mbarrier_init.release.cluster", "cluster",
          llvm="llvm.nvvm.fence.mbarrier_init.release.cluster",
          doc="make this thread's mbarrier.init visible to the cluster (before the barrier "
              "that precedes remote arrivals or multicast copies)"),
    PtxOp("ptx.fence.proxy_async",
          (_p("space", "str", "shared::cta", [s for s, _ in _PROXY_SPACES],
              spell=_PROXY_SPACES),),
          "fence.proxy.async{.space}", "tma", llvm="llvm.nvvm.fence.proxy.async{space}",
          doc="order this thread's generic-proxy accesses of `space` (shared::cta, the "
              "default; shared::cluster; global) with the async proxy"),
    # ---- a synchronous vector move: ld.<space>.v{1,2,4}.b{8..32} then st.<space>...
    PtxOp("ptx.ld_st", (_p("dst", "ptr"), _p("src", "ptr"),
                        _p("nbytes", "imm", choices=(1, 2, 4, 8, 16))),
          "ld.<src-space>.v<n>.b32 {r..}, [src]; st.<dst-space>.v<n>.b32 [dst], {r..}", None,
          doc="copy nbytes (naturally aligned) as one vector load and one vector store"),
    # ---- barriers, warp primitives, registers
    PtxOp("cuda.cta_sync", (), "bar.sync 0", None, doc="__syncthreads()"),
    PtxOp("ptx.bar.sync", (_p("id"), _p("count")), "bar.sync id, count", None,
          traits=blocking(),
          doc="named barrier `id` (1..15; 0 is __syncthreads's): wait until `count` threads "
              "(a multiple of 32, whole warps) have arrived, this one included"),
    PtxOp("ptx.bar.arrive", (_p("id"), _p("count")), "bar.arrive id, count", None,
          doc="arrive on named barrier `id` without waiting (a producer signalling the "
              "`count` - k threads that bar.sync on it)"),
    PtxOp("ptx.elect_sync", (), "elect.sync %r|%p, 0xffffffff", "elect_sync", returns=dt.bool_,
          doc="true in one active lane of each warp (the lowest)"),
    PtxOp("ptx.setmaxnreg", (_p("inc", "flag", spell=((1, "inc"), (0, "dec"))),
                             _p("n", "imm", lo=24, hi=256, step=8)),
          "setmaxnreg.{inc|dec}.sync.aligned.u32 n", "setmaxnreg",
          llvm="llvm.nvvm.setmaxnreg.{inc}.sync.aligned.u32",
          doc="raise (inc=True) or lower the per-thread register limit of the warps of the "
              "warpgroup to n (24..256, a multiple of 8); the whole warpgroup executes it"),
    # ---- mbarrier, PTX ISA §9.7.13.15
    PtxOp("ptx.mbarrier.init", (_shared(), _p("count")),
          "mbarrier.init.shared.b64 [mbar], count", "cp_async",
          llvm="llvm.nvvm.mbarrier.init.shared"),
    PtxOp("ptx.mbarrier.arrive", (_shared(),), "mbarrier.arrive.shared.b64 state, [mbar]",
          "cp_async", returns=dt.uint64, llvm="llvm.nvvm.mbarrier.arrive.shared"),
    PtxOp("ptx.mbarrier.arrive_expect_tx", (_shared(), _p("tx_bytes")),
          "mbarrier.arrive.expect_tx.shared.b64 state, [mbar], tx", "mbarrier_tx",
          returns=dt.uint64, llvm="llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta"),
    PtxOp("ptx.mbarrier.arrive.expect_tx",
          (_shared(), _p("tx_bytes"), _p("remote", "rank", None),
           _p("pred", "value", None, dtype=dt.bool_)),
          "mbarrier.arrive.expect_tx{.release.cluster.shared::cluster}.b64 _, [mbar], tx",
          "mbarrier_tx",
          doc="expect_tx(tx_bytes) then arrive (TIRx's spelling; no state is returned): on "
              "this CTA's mbarrier, or with remote=rank on the mbarrier at the same shared "
              "offset in CTA `rank` of the cluster (a shared::cluster address, by mapa); "
              "pred: only the threads where it is true arrive"),
    PtxOp("ptx.mbarrier.expect_tx", (_shared(), _p("tx_bytes")),
          "mbarrier.expect_tx.relaxed.cta.shared.b64 [mbar], tx", "mbarrier_tx",
          llvm="llvm.nvvm.mbarrier.expect.tx.scope.cta.space.cta"),
    PtxOp("ptx.mbarrier.try_wait_parity", (_shared(), _p("parity")),
          "mbarrier.try_wait.parity.shared.b64 p, [mbar], parity", "mbarrier_tx",
          returns=dt.bool_, llvm="llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta",
          traits=blocking("mbarrier"),
          doc="one try: true when the phase of parity `parity` has completed"),
    PtxOp("ptx.mbarrier.try_wait", (_shared(), _p("parity")),
          "mbarrier.try_wait.parity.shared.b64 p, [mbar], parity (looped until p)",
          "mbarrier_tx", aliases=("ptx.mbarrier.wait_parity",), traits=blocking("mbarrier"),
          doc="block until the phase of parity `parity` has completed: a try_wait.parity "
              "loop (TIRx's spelling; also T.ptx.mbarrier.wait_parity)"),
    PtxOp("ptx.smem_addr", (_shared("ptr"),), "mov.b64 a, ptr (its shared-window offset)", None,
          returns=dt.uint32,
          doc="the 32-bit shared-window address of a shared-memory location (what matrix "
              "descriptors and shared::cta operands hold)"),
    # ---- wgmma, PTX ISA §9.7.15 (warpgroup matrix multiply-accumulate, sm_90a)
    PtxOp("ptx.wgmma.fence", (), "wgmma.fence.sync.aligned", "wgmma",
          llvm="llvm.nvvm.wgmma.fence.sync.aligned",
          doc="order the warpgroup's register accesses before the next wgmma.mma_async "
              "(needed before the first one and after writing accumulators or A registers)"),
    PtxOp("ptx.wgmma.commit_group", (), "wgmma.commit_group.sync.aligned", "wgmma",
          llvm="llvm.nvvm.wgmma.commit_group.sync.aligned", traits=completing("wgmma_group"),
          doc="close a group of the warpgroup's uncommitted wgmma.mma_async operations"),
    PtxOp("ptx.wgmma.wait_group", (_p("n", "imm", 0, lo=0, hi=2**31 - 1),),
          "wgmma.wait_group.sync.aligned n", "wgmma", traits=completing("wgmma_group"),
          doc="wait until at most n wgmma groups of the warpgroup are pending; then their "
              "accumulators may be read and their shared operands reused"),
    PtxOp("ptx.wgmma.mma_async", _WGMMA,
          "wgmma.mma_async.sync.aligned.m64n<n>k<K>.<acc>.<ab>.<ab> {d}, a-desc, b-desc, "
          "scale-d, 1, 1{, trans-a, trans-b}", "wgmma",
          regs=_p("acc_regs", "regs_inout", count=_wgmma_regs), check=_wgmma_check,
          traits=async_op("wgmma_group", "async"),
          doc="D = A @ B (+ D where scale_d): A (64 x K) and B (K x n) in shared memory by "
              "their matrix descriptors (ptx/wgmma.py), D the warpgroup's accumulator "
              "fragment (n/2 float32 or n/4 float16x2 registers per thread); trans_a / "
              "trans_b: the operand is MN-major"),
    PtxOp("ptx.wgmma.mma_async.rs", _WGMMA_RS,
          "wgmma.mma_async.sync.aligned.m64n<n>k16.<acc>.<ab>.<ab> {d}, {a0, a1, a2, a3}, "
          "b-desc, scale-d, 1, 1, trans-b", "wgmma",
          regs=_p("acc_regs", "regs_inout", count=_wgmma_regs), check=_wgmma_rs_check,
          traits=async_op("wgmma_group", "async"),
          doc="D = A @ B (+ D where scale_d) with A (64 x 16, f16/bf16) from registers: a0..a3 "
              "the warpgroup's A fragment (ptx/wgmma.py a_coords: two inputs per register), "
              "B (16 x n) in shared memory by its descriptor, D the accumulator fragment; "
              "trans_b: B is MN-major. A's registers, like D's, belong to the wgmma until a "
              "wait_group retires it"),
    # ---- warp-level matrix instructions, PTX ISA §9.7.14
    _mma_row("ptx.mma_sync", mma.SYNC_INPUTS, "mma_sync",
             "mma.sync m16n8k16 (float16, bfloat16), m16n8k8 (float32 as tf32), m16n8k32 "
             "(int8, uint8)"),
    _mma_row("ptx.mma_sync_fp8", mma.FP8_INPUTS, "mma_fp8",
             "mma.sync m16n8k32 with fp8 inputs (e4m3, e5m2; float32 accumulators)"),
    _matrix_row("ptx.ldmatrix", "ldmatrix", "ldmatrix",
                "load num (1, 2, 4) 8x8 matrices of 16-bit elements from shared memory: lanes "
                "8j..8j+7 pass the 16-byte row addresses of matrix j, register j of every lane "
                "receives its part of matrix j (trans: transposed); destinations are 32-bit "
                "buffer elements"),
    _matrix_row("ptx.stmatrix", "stmatrix", "stmatrix",
                "store num (1, 2, 4) 8x8 matrices of 16-bit elements to shared memory, the "
                "inverse of ldmatrix (same lanes, rows and registers)"),
    # ---- tcgen05 tensor memory, PTX ISA §9.7.16
    PtxOp("ptx.tcgen05.alloc", (_shared("dst"), _N_COLS, _CTA_GROUP),
          "tcgen05.alloc.cta_group::N.sync.aligned.shared::cta.b32 [dst], nCols", "tcgen05",
          llvm="llvm.nvvm.tcgen05.alloc.shared.cg{cta_group}"),
    PtxOp("ptx.tcgen05.dealloc", (_p("taddr", "taddr"), _N_COLS, _CTA_GROUP),
          "tcgen05.dealloc.cta_group::N.sync.aligned.b32 taddr, nCols", "tcgen05",
          llvm="llvm.nvvm.tcgen05.dealloc.cg{cta_group}"),
    PtxOp("ptx.tcgen05.relinquish_alloc_permit", (_CTA_GROUP,),
          "tcgen05.relinquish_alloc_permit.cta_group::N.sync.aligned", "tcgen05",
          llvm="llvm.nvvm.tcgen05.relinq.alloc.permit.cg{cta_group}"),
    PtxOp("ptx.tcgen05.ld", _LDST + (_p("pack", "flag", False),),
          "tcgen05.ld.sync.aligned.<shape>.x<num>{.pack::16b}.b32 {regs}, [taddr]", "tcgen05",
          regs=_ldst_regs("regs_out"), check=_ldst_check, traits=async_op("tcgen05_ld"),
          doc="registers are destinations (32-bit buffer elements) that receive the cells"),
    PtxOp("ptx.tcgen05.st", _LDST + (_p("unpack", "flag", False),),
          "tcgen05.st.sync.aligned.<shape>.x<num>{.unpack::16b}.b32 [taddr], {regs}", "tcgen05",
          regs=_ldst_regs("regs_in"), check=_ldst_check, traits=async_op("tcgen05_st")),
    PtxOp("ptx.tcgen05.wait.ld", (), "tcgen05.wait::ld.sync.aligned", "tcgen05",
          llvm="llvm.nvvm.tcgen05.wait.ld", traits=completing("tcgen05_ld")),
    PtxOp("ptx.tcgen05.wait.st", (), "tcgen05.wait::st.sync.aligned", "tcgen05",
          llvm="llvm.nvvm.tcgen05.wait.st", traits=completing("tcgen05_st")),
    PtxOp("ptx.tcgen05.mma", _tcgen05_mma_params(_p("a_desc", "desc64")),
          "tcgen05.mma.cta_group::N.kind::<kind> [d_tmem], a-desc, b-desc, idesc, "
          "enable-input-d", "tcgen05", traits=async_op("tcgen05_commit", "async"),
          doc=_MMA_DOC.format(a="A in shared memory by its descriptor")),
    PtxOp("ptx.tcgen05.mma.ts", _tcgen05_mma_params(_p("a_tmem", "taddr")),
          "tcgen05.mma.cta_group::N.kind::<kind> [d_tmem], [a_tmem], b-desc, idesc, "
          "enable-input-d", "tcgen05", traits=async_op("tcgen05_commit", "async"),
          doc=_MMA_DOC.format(a="A in tensor memory at a_tmem (row-major, 256 bits a "
                                "K-step)")),
    PtxOp("ptx.tcgen05.commit", (_shared(), _CTA_GROUP),
          "tcgen05.commit.cta_group::N.mbarrier::arrive::one.shared::cluster.b64 [mbar]",
          "tcgen05", llvm="llvm.nvvm.tcgen05.commit.shared.cg{cta_group}",
          traits=completing("tcgen05_commit"),
          doc="arrive (count 1) on mbar once every earlier tcgen05.mma / tcgen05.cp of this "
              "thread has completed"),
    PtxOp("ptx.tcgen05.cp", (_p("taddr", "taddr"), _p("s_desc", "desc64"),
                             _p("shape", "str", choices=tuple(tcgen05.CP_SHAPES),
                                spell=_CP_SPELL), _CTA_GROUP),
          "tcgen05.cp.cta_group::N.<shape>{.<multicast>} [taddr], s-desc", "tcgen05",
          llvm="llvm.nvvm.tcgen05.cp.{shape}.cg{cta_group}",
          traits=async_op("tcgen05_commit", "async"),
          doc="shared -> tensor memory, issued by one thread: the rows of the shape (a "
              "K-major canonical tile by the descriptor) land in the lanes the shape and its "
              "multicast name (ptx/tcgen05.py CP_SHAPES); completion: T.ptx.tcgen05.commit"),
    PtxOp("ptx.tcgen05.fence.before_thread_sync", (), "tcgen05.fence::before_thread_sync",
          "tcgen05", llvm="llvm.nvvm.tcgen05.fence.before.thread.sync"),
    PtxOp("ptx.tcgen05.fence.after_thread_sync", (), "tcgen05.fence::after_thread_sync",
          "tcgen05", llvm="llvm.nvvm.tcgen05.fence.after.thread.sync"),
]

# ---- warp shuffle, PTX ISA §9.7.9.6 (shfl.sync)
def _shfl_check(values) -> str | None:
    v = values["value"]
    if v.dtype.bits != 32 or v.dtype.kind not in ("int", "uint", "float"):
        return (f"shuffles move 32-bit values; value is {v.dtype} (convert it with "
                f"T.cast, or shuffle a uint32 view of the data)")
    return None


_OPS += [PtxOp("ptx.shfl_sync", (_p("mode", "str", choices=("up", "down", "bfly", "idx")),
                                 _p("value"), _p("b"), _p("c", "value", None),
                                 _p("mask", "value", None, dtype=dt.uint32)),
               "shfl.sync.{mode}.b32 d, a, b, c, membermask", None,
               result=lambda v: v["value"].dtype, check=_shfl_check,
               doc="exchange a 32-bit value between the lanes of a warp: lane i reads the "
                   "value of lane i-b (up), i+b (down), i^b (bfly) or b (idx) when that "
                   "lane is within the segment c says (default: the whole warp, c = 0 for "
                   "up and 31 otherwise); otherwise its own. mask (default all lanes) names "
                   "the lanes that execute it together; they must all be active")]


# ---- warp vote, PTX ISA §9.7.13.1 (vote.sync)
_OPS += [PtxOp("ptx.vote_sync", (_p("mode", "str", choices=("any", "all", "uni", "ballot")),
                                 _p("pred"), _p("mask", "value", None, dtype=dt.uint32)),
               "vote.sync.{mode}.pred d, p, membermask  (ballot: vote.sync.ballot.b32)", None,
               result=lambda v: dt.uint32 if getattr(v["mode"], "value", v["mode"]) == "ballot"
               else dt.bool_,
               doc="a predicate of every lane of a warp, combined: any (true in some lane), "
                   "all (in every lane), uni (the same in every lane) -> bool, or ballot -> "
                   "uint32, bit i the predicate of lane i; the same value in every lane. "
                   "mask (default all lanes) names the lanes that execute it together; they "
                   "must all be active")]


# ---- packed two-lane arithmetic and conversions, approximate math (facts in ptx/packed.py)
def _typed(*names: str, t: DataType):
    def check(values) -> str | None:
        for n in names:
            if values[n].dtype != t:
                return (f"operand {n!r} must be a {t} value, got {values[n].dtype}"
                        + (" (a packed register: a uint view of the data)" if t.is_int else
                           f' (convert it with T.cast(x, "{t}"))'))
        return None
    return check


for _pk in packed.PACKED.values():
    _names = "abc"[:_pk.arity]
    _w = _pk.lanes.word
    _OPS.append(PtxOp(_pk.name, tuple(_p(n, dtype=_w) for n in _names), _pk.ptx,
                      _pk.lanes.feature, returns=_w, check=_typed(*_names, t=_w),
                      doc=f"{_pk.op} of two {_pk.lanes.elem} lanes packed in a {_w} "
                          "(lane 0 in the low bits), each rounded as the scalar instruction"))
for _name, _lanes in packed.CVT_PACK.items():
    _OPS.append(PtxOp(_name, (_p("a", dtype=dt.float32), _p("b", dtype=dt.float32)),
                      f"cvt.rn.{_lanes.name}.f32 d, a, b", None, returns=_lanes.word,
                      check=_typed("a", "b", t=dt.float32),
                      doc=f"two float32 values rounded to {_lanes.elem} and packed: a in the "
                          "upper half, b in the lower"))
def _same_float(values) -> str | None:
    t = values["a"].dtype
    if t.name not in ("float16", "bfloat16", "float32"):
        return f"fma.rn takes float16, bfloat16 or float32 values, got {t}"
    bad = [n for n in "bc" if values[n].dtype != t]
    return f"operand {bad[0]!r} must be {t} like 'a', got {values[bad[0]].dtype}" if bad \
        else None


_OPS += [
    PtxOp("ptx.fma.rn", tuple(_p(n, dtype=dt.float32) for n in "abc"),
          "fma.rn.<type> d, a, b, c", None,
          result=lambda v: v["a"].dtype, check=_same_float,
          doc="a * b + c rounded once, in the operands' type (float16, bfloat16, float32)"),
    PtxOp("ptx.sqrt.rn", (_p("x", dtype=dt.float32),), "sqrt.rn.f32 d, x", None,
          returns=dt.float32, llvm="llvm.nvvm.sqrt.rn.f", check=_typed("x", t=dt.float32),
          doc="the correctly rounded square root"),
]
for _ap in packed.APPROX.values():
    _OPS.append(PtxOp(_ap.name, (_p("x", dtype=dt.float32),), f"{_ap.ptx} d, x", None,
                      returns=dt.float32, llvm=_ap.llvm, check=_typed("x", t=dt.float32),
                      doc=f"{_ap.doc}; {_ap.bound} (PTX ISA)"))

# ---- math, lowered through libdevice (__nv_<name>f / __nv_<name>)
_MATH1 = ("exp", "exp2", "log", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
          "floor", "ceil", "fabs", "erf", "trunc", "round")
_OPS += [PtxOp(n, (_p("x"),), f"__nv_{n}", math=True, doc=f"libdevice {n}") for n in _MATH1]
_OPS += [PtxOp(n, (_p("x"), _p("y")), f"__nv_{n}", math=True, doc=f"libdevice {n}")
         for n in ("pow", "atan2", "fmod")]
_OPS += [PtxOp("fma", (_p("a"), _p("b"), _p("c")), "__nv_fma", math=True)]


# ---- device printf and assert (system calls; facts in ptx/printf.py)
def _print_check(values) -> str | None:
    try:
        printf.conversions(values["fmt"])
    except printf.FormatError as e:
        return str(e)
    return None


_OPS += [
    PtxOp("print", (_p("fmt", "text"),), "vprintf fmt, args (a system call)", None,
          regs=_p("values", "args", count=lambda v: printf.count(v["fmt"])),
          check=_print_check,
          check_regs=lambda v, regs: printf.values_problem(v["fmt"], [r.dtype for r in regs]),
          doc="C printf from every thread that executes it: %d %i %u %o %x %X %c for "
              "integers and bools, %f %e %g (and capitals) for floats; the output reaches "
              "the host's stdout at the next synchronisation, threads in no defined order "
              "(the simulator prints in thread order)"),
    PtxOp("device_assert", (_p("cond", "value", dtype=dt.bool_), _p("msg", "text", "")),
          "__assertfail msg, file, line, function, 1 (a system call); trap", None,
          doc="stop the kernel when cond is false in any thread: the device prints the "
              "kernel's file:line and msg, the host's next CUDA call fails with "
              "CUDA_ERROR_ASSERT, which tilewise reports naming the assert; the simulator "
              "raises a SimulationError at the assert's line"),
]


def _spellings(op: PtxOp):
    yield op.name, op
    for alias in op.aliases:  # a call keeps the spelling it was written with
        yield alias, replace(op, name=alias, aliases=(), alias_of=op.name)


#: The rows of the table, one per instruction.
ROWS: tuple[PtxOp, ...] = tuple(_OPS)
#: Every spelling (aliases included) -> its entry.
PTX_OPS: dict[str, PtxOp] = {name: entry for op in _OPS for name, entry in _spellings(op)}
MATH_OPS = frozenset(op.name for op in _OPS if op.math)


def register(registry: dict, names, fn, what: str) -> None:
    """Enter ``fn`` in ``registry`` (the LLVM lowerings, the simulator semantics) for the
    entries ``names`` and every spelling of each; an entry registered twice is an error
    naming ``what``."""
    for name in names:
        for spelling in PTX_OPS[name].names:
            if spelling in registry:
                raise RuntimeError(f"two {what} registered for {spelling!r}")
            registry[spelling] = fn


def lookup(name: str, span=None) -> PtxOp:
    op = PTX_OPS.get(name)
    if op is None:
        raise ScriptError(f"T.{name} is not an instruction tilewise knows", span,
                          hint=did_you_mean(name, PTX_OPS))
    return op


def prefixes() -> frozenset[str]:
    """Every dotted prefix of a table name ("ptx", "ptx.cp_async", ...); computed once per
    size of the table (the parser asks for every ``T.ptx.a.b`` it reads)."""
    n = len(PTX_OPS)
    if _PREFIXES[0] != n:
        out = set()
        for name in PTX_OPS:
            parts = name.split(".")
            for i in range(1, len(parts) + 1):
                out.add(".".join(parts[:i]))
        _PREFIXES[:] = [n, frozenset(out)]
    return _PREFIXES[1]


_PREFIXES: list = [-1, frozenset()]  # [len(PTX_OPS) when computed, the prefixes]
