"""The rows of the warpgroup and warp matrix instructions (:mod:`tilewise.ptx.table`):
wgmma (facts in :mod:`tilewise.ptx.wgmma`), mma.sync, ldmatrix and stmatrix (facts in
:mod:`tilewise.ptx.mma`).
"""

from __future__ import annotations

from ..ir import dtype as dt
from . import mma, wgmma
from .op import PtxOp
from .op import param as _p
from .op import shared_ptr as _shared
from .operands import Param
from .traits import async_op, completing


FENCE_OPERANDS = 64  # registers one fence_operand takes (larger sets: several calls)


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


def _wgmma_row(name: str, params: tuple[Param, ...], ptx: str, check, doc: str) -> PtxOp:
    """A wgmma.mma_async form: the accumulator registers read and written in place, completed
    by the warpgroup's wgmma groups, shared operands read through the async proxy."""
    return PtxOp(name, params, ptx, "wgmma",
                 regs=_p("acc_regs", "regs_inout", count=_wgmma_regs), check=check,
                 traits=async_op("wgmma_group", "async"), doc=doc)


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


ROWS = [
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
    PtxOp("ptx.wgmma.fence_operand", (_p("count", "imm", lo=1, hi=FENCE_OPERANDS),),
          "// begin inline asm // end inline asm (empty: no instruction; the registers "
          "tied in and out)", None,
          regs=_p("regs", "regs_inout", count=lambda v: v["count"]),
          doc="a compiler barrier on `count` 32-bit registers (CUTLASS's "
              "warpgroup_fence_operand): code reading them stays after it. LLVM does not "
              "know that wgmma writes its accumulators until wait_group, and may move "
              "reads of them (a bitcast, a pack into a vector store) above the wait; "
              "ptxas then serialises every wgmma of the kernel (C7514). Placed after the "
              "wait, before the reads; the simulator's semantics: none"),
    _wgmma_row("ptx.wgmma.mma_async", _WGMMA,
               "wgmma.mma_async.sync.aligned.m64n<n>k<K>.<acc>.<ab>.<ab> {d}, a-desc, b-desc, "
               "scale-d, 1, 1{, trans-a, trans-b}", _wgmma_check,
               "D = A @ B (+ D where scale_d): A (64 x K) and B (K x n) in shared memory by "
               "their matrix descriptors (ptx/wgmma.py), D the warpgroup's accumulator "
               "fragment (n/2 float32 or n/4 float16x2 registers per thread); trans_a / "
               "trans_b: the operand is MN-major"),
    _wgmma_row("ptx.wgmma.mma_async.rs", _WGMMA_RS,
               "wgmma.mma_async.sync.aligned.m64n<n>k16.<acc>.<ab>.<ab> {d}, "
               "{a0, a1, a2, a3}, b-desc, scale-d, 1, 1, trans-b", _wgmma_rs_check,
               "D = A @ B (+ D where scale_d) with A (64 x 16, f16/bf16) from registers: "
               "a0..a3 the warpgroup's A fragment (ptx/wgmma.py a_coords: two inputs per "
               "register), B (16 x n) in shared memory by its descriptor, D the accumulator "
               "fragment; trans_b: B is MN-major. A's registers, like D's, belong to the "
               "wgmma until a wait_group retires it"),
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
]
