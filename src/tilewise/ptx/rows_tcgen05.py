"""The rows of tcgen05, tensor memory and the fifth-generation tensor cores
(:mod:`tilewise.ptx.table`; the geometry and descriptors in :mod:`tilewise.ptx.tcgen05`).
"""

from __future__ import annotations

from ..ir import dtype as dt
from . import tcgen05
from .op import PtxOp
from .op import param as _p
from .op import shared_ptr as _shared
from .operands import Param
from .traits import async_op, completing

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

ROWS = [
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
