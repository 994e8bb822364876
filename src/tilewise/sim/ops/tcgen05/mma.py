"""Simulator semantics of ``tcgen05.mma``, ``tcgen05.cp`` and ``tcgen05.commit`` (PTX ISA
§9.7.16.9.2, §9.7.16.10, §9.7.16.12.1; geometry and encodings in :mod:`tilewise.ptx.tcgen05`).

All three have single-thread semantics: every active thread issues its own. The simulator
reads the operands as the hardware does — the instruction descriptor for the shape, types
and majorness, each shared-memory descriptor for the canonical layout and swizzle of its
operand (so a wrong descriptor reads the wrong bytes, as on the GPU) — and checks them:
reserved descriptor bits, a shape Table 39 does not list, tensor-memory cells outside the
allocation or the lane alignment of the datapath, descriptors reaching outside every shared
buffer, shared bytes the issuing thread may not see.

**Numerics** (``tcgen05.mma``, float32 D): the products of one instruction's K inputs are
exact in float64 and summed in float64 (exact for K <= 32 of 16-bit or 8-bit inputs, to
within float64 rounding for tf32), then added to D with one rounding to float32:
``D = fl32(D + sum_k a[m,k] b[k,n])`` per instruction. The tensor cores' internal order
differs, so results agree with the GPU to within float32 rounding per K-step. tf32 inputs
keep their 10 high mantissa bits (the 13 low ones are ignored, not rounded).

**Datapaths**: M = 128 (cta_group 1) is Layout D, row m in lane m; M = 64 is Layout F, row
m in lane 32 (m // 16) + m % 16 plus the address's lane field (0 or 16). A in tensor memory
sits in those lanes too, 256 bits (8 columns) a K-step, elements packed low half first.

**Asynchrony** (:mod:`.state`): the results are written at issue but
stay owned by the op, and its shared operands read, until the issuing thread's next
``tcgen05.commit`` arrives on an mbarrier and a thread observes that phase.
``cta_group=2`` needs a CTA pair, which the simulator (one CTA at a time) does not model.
"""

from __future__ import annotations

import numpy as np

from ....errors import SimulationError
from ....ir.dtype import DTYPES
from ....ptx import tcgen05, wgmma
from ...access import check_proxy_fence, check_shared_read, mbarrier_addrs
from ...memory import SHARED
from ...registry import semantics
from .state import tcgen05_of


def _one_group(site, group) -> None:
    if group != 1:
        raise SimulationError("cta_group=2 needs a CTA pair; clusters are not simulated",
                              site.span, "simulate with cta_group=1, or check the kernel on "
                              "Blackwell hardware")


def _per_thread(ctx, args):
    """``[(tid, operand values...)]``: one issue per active thread."""
    act = ctx.active()
    cols = [np.broadcast_to(np.asarray(a), act.shape) for a in args]
    return [(int(t), *(c[k].item() for c in cols)) for k, t in enumerate(act.tolist())]


# ------------------------------------------------------------------------ shared operands
def _read_operand(ctx, site, tid, desc, k_major, mn, k, dtype, what):
    """The (mn x k) operand read through shared-memory descriptor ``desc``: (values as
    float64, shared byte offsets), or (None, None) after a hazard."""
    d, problem = tcgen05.decode_smem_desc(desc)
    if problem:
        ctx.hazard(f"{what}: the shared-memory descriptor {int(desc):#018x} is not a valid "
                   f"tcgen05 descriptor: {problem}", site.span,
                   "build it with tilewise.ptx.tcgen05.smem_desc (or let Tx.gemm_async "
                   "build it)", tid=tid)
        return None, None
    t = DTYPES[dtype]
    rows, cols = np.meshgrid(np.arange(mn), np.arange(k), indexing="ij")
    starts = wgmma.element_address(k_major, rows, cols, t.bytes, d).ravel()
    nbytes = _visible(ctx, site, tid, starts, t.bytes, what)
    if nbytes is None:
        return None, None
    vals = ctx.mem.shared[nbytes].copy().view(t.numpy()).reshape(mn, k)
    if dtype == "float32":  # tf32: the 13 low mantissa bits are ignored
        vals = (vals.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    return vals.astype(np.float64), np.unique(nbytes)


def _visible(ctx, site, tid, starts, eb, what):
    """The byte offsets ``starts + 0..eb-1`` when they lie in one shared buffer and the
    issuing thread may read them; None after a hazard."""
    lo, hi = int(starts.min()), int(starts.max()) + eb
    if not any(p.base <= lo and hi <= p.base + p.nbytes
               for p in ctx.mem.plan.placements(SHARED)):
        ctx.hazard(f"{what}: a shared-memory descriptor reaches shared bytes {lo:#x}..{hi:#x}, "
                   "outside every shared buffer", site.span,
                   "build the descriptor from the operand buffer's address and layout (let "
                   "the tile primitive build it)", tid=tid, addr=(SHARED << 40) + lo)
        return None
    check_shared_read(ctx, starts, eb, np.full(starts.size, tid), site.span)
    nbytes = (starts[:, None] + np.arange(eb)).ravel()
    name = what.split(" ")[0]
    check_proxy_fence(ctx, nbytes, tid, name, site.span, f"the {name} that reads it")
    return nbytes


# ------------------------------------------------------------------------ tensor memory
def _cells_ok(ctx, site, tid, lanes, cols, what) -> bool:
    bad = ctx.tmem.unallocated(lanes, cols)
    if bad is None:
        return True
    ctx.hazard(f"{what} uses tensor-memory column {bad}, which is not allocated (tensor "
               "memory used before tcgen05.alloc, or past the end of the allocation)",
               site.span, "allocate enough columns with T.ptx.tcgen05.alloc, and keep the "
               "accumulator inside them", tid=tid)
    return False


def _lanes(ctx, site, tid, m, taddr, what):
    """Lanes of rows 0..m-1 at ``taddr`` (datapath D or F), or None after a hazard."""
    lane0 = tcgen05.lane_of(taddr)
    legal = (0,) if m == 128 else (0, 16)
    if lane0 not in legal:
        ctx.hazard(f"{what}: the address's lane field is {lane0}; M = {m} (datapath "
                   f"{'D' if m == 128 else 'F'}) allows lane {' or '.join(map(str, legal))}",
                   site.span, "address the allocation's lane 0 (or 16 for an M = 64 tile "
                   "in the upper half of the lanes)", tid=tid)
        return None
    return tcgen05.datapath_lanes(m, np.arange(m), lane0)


def _tmem_a(ctx, site, tid, taddr, m, k, dtype):
    """A (m x k) from tensor memory: 32-bit cells of 32 / bits elements, low first."""
    lanes = _lanes(ctx, site, tid, m, taddr, "tcgen05.mma A")
    t = DTYPES[dtype]
    ncol = k * t.bits // 32
    cols = tcgen05.col_of(taddr) + np.arange(ncol)
    if lanes is None or not _cells_ok(ctx, site, tid, lanes[:, None], cols[None, :],
                                      "tcgen05.mma A"):
        return None
    cells = np.ascontiguousarray(ctx.tmem.cells[lanes[:, None], cols[None, :]])
    vals = cells.view(t.numpy()).reshape(m, k)
    if dtype == "float32":
        vals = (vals.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    return vals.astype(np.float64)


# ------------------------------------------------------------------------ tcgen05.mma
def _decode(ctx, site, tid, kind, idesc):
    d = tcgen05.decode_instr_desc(kind, idesc)
    problem = None
    if d.reserved:
        problem = (f"bits {d.reserved:#010x} are set (sparsity, saturation, negation, shift "
                   "or reserved bits, which the dense MMA tilewise models keeps 0)")
    elif d.a is None or d.b is None or d.d is None:
        problem = f"its A / B / D type codes name no type of kind::{kind}"
    else:
        problem = tcgen05.mma_shape_problem(d.m, d.n, 1)
    if problem:
        ctx.hazard(f"tcgen05.mma: the instruction descriptor {int(idesc):#010x} is not "
                   f"valid: {problem}", site.span, "build it with "
                   "tilewise.ptx.tcgen05.instr_desc (or let Tx.gemm_async build it)", tid=tid)
        return None
    return d


def _mma_one(ctx, site, tensor_a, tid, d_tmem, a, b_desc, idesc, enable, kind):
    d = _decode(ctx, site, tid, kind, idesc)
    if d is None:
        return
    k = tcgen05.KINDS[kind].k
    lanes = _lanes(ctx, site, tid, d.m, d_tmem, "tcgen05.mma D")
    cols = tcgen05.col_of(d_tmem) + np.arange(d.n)
    if lanes is None or not _cells_ok(ctx, site, tid, lanes[:, None], cols[None, :],
                                      "tcgen05.mma D"):
        return
    if tensor_a:
        A, a_bytes = _tmem_a(ctx, site, tid, a, d.m, k, d.a), np.zeros(0, np.int64)
    else:
        A, a_bytes = _read_operand(ctx, site, tid, a, not d.trans_a, d.m, k, d.a,
                                   "tcgen05.mma A")
    B, b_bytes = _read_operand(ctx, site, tid, b_desc, not d.trans_b, d.n, k, d.b,
                               "tcgen05.mma B")
    if A is None or B is None:
        return
    cells = ctx.tmem.cells
    old = cells[lanes[:, None], cols[None, :]]
    acc = old.view(np.float32).astype(np.float64) if enable else 0.0
    if d.d == "float32":
        cells[lanes[:, None], cols[None, :]] = (acc + A @ B.T).astype(np.float32).view(np.uint32)
    else:  # float16 D: one element per cell, in its low 16 bits (§9.7.16.10.4.1)
        acc = (old & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float64) \
            if enable else 0.0
        half = (acc + A @ B.T).astype(np.float16).view(np.uint16)
        cells[lanes[:, None], cols[None, :]] = half.astype(np.uint32)
    tcgen05_of(ctx).issue(tid, "tcgen05.mma", site.span, lanes[:, None], cols[None, :],
                             np.concatenate([a_bytes, b_bytes]))


@semantics("ptx.tcgen05.mma", "ptx.tcgen05.mma.ts")
def mma(ctx, site, args):
    d_tmem, a, b_desc, idesc, enable, kind, group = args
    _one_group(site, group)
    tensor_a = site.name == "ptx.tcgen05.mma.ts"
    for tid, d_, a_, b_, i_, e_ in _per_thread(ctx, (d_tmem, a, b_desc, idesc, enable)):
        _mma_one(ctx, site, tensor_a, tid, int(d_), int(a_), int(b_), int(i_), bool(e_), kind)


# ------------------------------------------------------------------------ tcgen05.cp
def _cp_one(ctx, site, tid, taddr, desc, shape):
    s = tcgen05.CP_SHAPES[shape]
    d, problem = tcgen05.decode_smem_desc(desc)
    if problem:
        ctx.hazard(f"tcgen05.cp: the shared-memory descriptor {int(desc):#018x} is not valid: "
                   f"{problem}", site.span, "build it with tilewise.ptx.tcgen05.smem_desc",
                   tid=tid)
        return
    rows, byte = np.meshgrid(np.arange(s.rows), np.arange(s.row_bytes), indexing="ij")
    starts = wgmma.element_address(True, rows, byte, 1, d).ravel()
    nbytes = _visible(ctx, site, tid, starts, 1, f"tcgen05.cp.{shape}")
    if nbytes is None:
        return
    words = ctx.mem.shared[nbytes].copy().view("<u4").reshape(s.rows, s.cols)
    lanes = tcgen05.lane_of(taddr) + np.array([s.lanes(r) for r in range(s.rows)])
    cols = tcgen05.col_of(taddr) + np.arange(s.cols)
    if not _cells_ok(ctx, site, tid, lanes[:, :, None], cols[None, None, :],
                     f"tcgen05.cp.{shape}"):
        return
    ctx.tmem.cells[lanes[:, :, None], cols[None, None, :]] = words[:, None, :]
    tcgen05_of(ctx).issue(tid, "tcgen05.cp", site.span, lanes[:, :, None],
                             cols[None, None, :], np.unique(nbytes))


@semantics("ptx.tcgen05.cp")
def cp(ctx, site, args):
    """Source row ``r`` (a K-major canonical tile of ``row_bytes``-byte rows, read through
    the descriptor) lands in lanes ``lane0 + lanes(r)`` of the shape's multicast, columns
    ``col0 ..`` (:data:`tilewise.ptx.tcgen05.CP_SHAPES`)."""
    taddr, desc, shape, group = args
    _one_group(site, group)
    for tid, t_, d_ in _per_thread(ctx, (taddr, desc)):
        _cp_one(ctx, site, tid, int(t_), int(d_), shape)


# ------------------------------------------------------------------------ tcgen05.commit
@semantics("ptx.tcgen05.commit")
def commit(ctx, site, args):
    mbar, group = args
    _one_group(site, group)
    addrs = mbarrier_addrs(ctx, mbar, site.span, "tcgen05.commit")
    if addrs is None:
        return
    for t, a in zip(ctx.active().tolist(), addrs.tolist()):
        tcgen05_of(ctx).commit(t, a, site.span)
