"""Shared-memory matrix operands of the tensor-core instructions (wgmma, tcgen05.mma):
which descriptor fields describe a region of a shared buffer, found from the buffer's
layout — or the reason none does.

An instruction reads an operand tile of ``mn`` rows (M of A, N of B) by ``k`` columns
through a descriptor (start address, LBO, SBO, swizzle; :mod:`tilewise.ptx.wgmma` states
the canonical layouts). The region's element offsets come from its buffer's
``TileLayout`` (swizzle included, :class:`tilewise.tile.partition.Side`); the plan tries the
K-major form, then the MN-major one, takes LBO and SBO from the offsets of the neighbours
of the tile's first element, and then checks **every** element of every K-step's tile
against the canonical layout. So a layout is accepted exactly when the hardware would
read what the layout says, and a refusal names the first element that differs.

The buffer must start on a swizzle repeat (the allocation's ``align=``; 1024 bytes for a
128-byte swizzle) and a symbolic region start (a pipeline stage ``smem[s, :, :]``) must be
a multiple of it, because the swizzle works on absolute shared addresses.

The descriptors of the K-steps differ in their start address only, by constants: step
``i`` starts ``step_bytes[i]`` bytes after the region's first element (within a 128-byte
swizzle row, K-major, a 32-byte step is an add to the start address, as CUTLASS's
descriptor iterator does). So :func:`step_descriptors` builds the region's descriptor once
and each step's from it by one integer add, exactly (its docstring says why).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..ir import dtype as dt
from ..ir.expr import AddressOf, BufferRegion, Expr, IntImm, Var, as_int, binop, cast, const
from ..ir.stmt import LetStmt
from ..ptx import wgmma
from ..ptx.table import PTX_OPS
from ..passes.indexing import memory_offset
from ..ir.analysis import known_multiple
from .partition import Side, region_text
from .registry import DispatchFail


@dataclass(frozen=True)
class OperandPlan:
    """How one shared operand is described: ``k_major``, the descriptor fields, the buffer
    coordinates of the region's first element and, per K-step, the byte offset of the
    step's first element (its start address) from it."""

    k_major: bool
    swizzle: int
    lbo: int
    sbo: int
    start: tuple  # full buffer coordinates of the region's element (0, 0)
    step_bytes: tuple[int, ...]  # per K-step: bytes from element (0, 0) to (0, k0), % 16 == 0

    def fields(self) -> int:
        return wgmma.encode_fields(self.lbo, self.sbo, self.swizzle)

    @property
    def steps(self) -> int:
        return len(self.step_bytes)


def _text(region: BufferRegion) -> str:
    return f"{region_text(region)} ({region.buffer.scope})"


def _dims(region: BufferRegion) -> list[int]:
    dims = [d for d, r in enumerate(region.region) if r.extent > 1]
    if len(dims) != 2:
        raise DispatchFail(f"the operand region {_text(region)} must span exactly "
                           f"two dimensions (rows and K), it spans {len(dims)}")
    return dims


def plan_operand(region: BufferRegion, mn_dim: int, k_inst: int, allow_mn_major: bool,
                 what: str, inst: str = "wgmma") -> OperandPlan:
    """The descriptor plan of ``region`` (a shared buffer region) whose region dimension
    ``mn_dim`` (0 or 1 of its two spanned dimensions) is M/N and the other K. ``inst`` names
    the instruction in the refusal (wgmma and tcgen05 share the canonical layouts)."""
    buf = region.buffer
    if buf.scope not in ("shared", "shared.dyn"):
        raise DispatchFail(f"{what} {_text(region)} must be in shared memory")
    dims = _dims(region)
    mn_d, k_d = dims[mn_dim], dims[1 - mn_dim]
    mn, kt = region.region[mn_d].extent, region.region[k_d].extent
    if kt % k_inst:
        raise DispatchFail(f"{what} has K = {kt}, not a multiple of the instruction's {k_inst}")
    eb = buf.dtype.bytes
    swz = buf.layout.swizzling.mode if buf.layout is not None and buf.layout.swizzling else 0
    _check_alignment(region, swz, eb, what)
    offs = _byte_offsets(region, mn_d, k_d, mn, kt, eb)
    forms = [True] + ([False] if allow_mn_major else [])
    reasons = []
    for k_major in forms:
        plan, reason = _fit(region, offs, mn, kt, k_inst, eb, swz, k_major)
        if plan is not None:
            return plan
        reasons.append(reason)
    raise DispatchFail(f"{what} {_text(region)} is not a canonical {inst} layout: "
                       + "; ".join(reasons))


@dataclass(frozen=True)
class Orientation:
    """Which region dimension of A and B is M / N (the other is K), from the call's
    ``transA`` / ``transB`` options: A is (M, K) or, transposed, (K, M); B is (K, N) or,
    transposed, (N, K)."""

    a_mn: int  # 0: A is (M, K); 1: A is (K, M)
    b_mn: int  # 1: B is (K, N); 0: B is (N, K)

    @classmethod
    def of(cls, ctx) -> Orientation:
        return cls(1 if ctx.option("transA", False) else 0,
                   0 if ctx.option("transB", False) else 1)

    def mnk(self, a: tuple, b: tuple) -> tuple:
        """(M, K of A, K of B, N) from the 2-D shapes of A and B."""
        return a[self.a_mn], a[1 - self.a_mn], b[1 - self.b_mn], b[self.b_mn]

    def text(self) -> str:
        return (f"A ({'K, M' if self.a_mn else 'M, K'}) and "
                f"B ({'K, N' if self.b_mn else 'N, K'})")


def step_accumulates(ctx, i: int) -> Expr:
    """Whether K-step ``i`` of a gemm_async adds to the accumulator (wgmma's scale-d,
    tcgen05's enable-input-d): the call's ``accum`` (a constant or a run-time flag) for the
    first step, always for the rest."""
    if i:
        return const(True)
    accum = ctx.option("accum", False)
    return const(bool(accum)) if isinstance(accum, (bool, int)) else accum


def step_descriptors(plan: OperandPlan, fields: int, buf) -> tuple[LetStmt, list[Expr]]:
    """The 64-bit descriptors of ``plan``'s K-steps (an operand region of ``buf``) with the
    instruction's fixed ``fields`` (LBO, SBO, swizzle ...: wgmma's and tcgen05's descriptors
    both have the start address in bits 0-13 and nothing else below bit 16): a ``LetStmt``
    binding ``d`` (``<buffer>_desc``, uint32) to the low word of the region's descriptor,
    ``((addr & 0x3FFFF) >> 4) | lo``, once, and per step ``i`` ``u64(d + step_bytes[i] / 16)
    | hi`` (``lo`` / ``hi``: the fields' low / high word), one 32-bit add of a constant.

    Why each is bit for bit the descriptor of its step's own start address ``addr_i``,
    ``((addr_i & 0x3FFFF) >> 4) | fields`` (PTX ISA §9.7.15.5.1.2 "Matrix Descriptor Format";
    tcgen05's shared-memory descriptor, §9.7.16 Table 40):

    * ``addr_i = addr + step_bytes[i]``: the plan measured the offsets on the buffer's layout,
      and a run-time region start is a multiple of the swizzle repeat (checked), which moves
      every offset by the same amount;
    * the mask is needed: the offset of a shared location is below 2^18 (228 KB on sm_90 and
      sm_100), but its 32-bit shared::cta address in a cluster launch also carries the CTA's
      rank at bit 24 (measured on the H200; the simulator models it,
      ``sim/ops/wgmma/semantics.CLUSTER_RANK_SHIFT``);
    * ``step_bytes[i]`` is a multiple of 16 (the plan declines otherwise) and ``(addr_i &
      0x3FFFF)`` is the offset of a byte inside shared memory, below 2^18, so
      ``(addr_i & 0x3FFFF) >> 4 = ((addr & 0x3FFFF) >> 4) + step_bytes[i] / 16`` with no
      carry out of the field;
    * bits 0-15 of ``lo`` are zero and that sum is under 2^14, so adding it after the ``|``
      carries nothing into the fields: ``(f | lo) + c = (f + c) | lo``.

    The mask sits on the region's address only: masked per step, LLVM cannot see step ``i``
    as step 0 plus a constant (it recomputed and masked every step's address)."""
    lo, hi = fields & 0xFFFFFFFF, fields >> 32 << 32
    assert not lo & 0xFFFF and not any(off % wgmma.CHUNK for off in plan.step_bytes)  # _fit
    addr = PTX_OPS["ptx.smem_addr"].call([AddressOf(buf, tuple(plan.start))], {})
    base = Var(f"{buf.name}_desc", dt.uint32)
    start = binop("&", binop(">>", addr, IntImm(4, dt.uint32)), IntImm(0x3FFF, dt.uint32))
    let = LetStmt(base, binop("|", start, IntImm(lo, dt.uint32)))
    return let, [binop("|", cast(dt.uint64, binop("+", base, IntImm(off >> 4, dt.uint32))),
                       IntImm(hi, dt.uint64)) for off in plan.step_bytes]


def _check_alignment(region, swz: int, eb: int, what: str) -> None:
    repeat = wgmma.repeat_bytes(swz)
    buf = region.buffer
    if swz and max(16, buf.storage_root().align) < repeat:  # a view starts where its root does
        raise DispatchFail(f"{what} buffer {buf.name!r} has a {swz}-byte swizzle, which works "
                           f"on absolute shared addresses: allocate it with align={repeat}")
    if all(as_int(r.start) is not None for r in region.region):
        return
    layout = buf.layout.unswizzled() if buf.layout is not None else None
    off = memory_offset(layout, buf.shape, [r.start for r in region.region])
    if math.gcd(known_multiple(off) * eb, repeat) != repeat:
        raise DispatchFail(f"{what} {_text(region)} starts at a run-time offset not "
                           f"known to be a multiple of {repeat} bytes (the swizzle repeat)")


def _byte_offsets(region, mn_d: int, k_d: int, mn: int, kt: int, eb: int) -> np.ndarray:
    """(mn, kt) byte offsets in the buffer of the region's elements (constant starts)."""
    nd = len(region.region)
    rel = np.zeros((mn * kt, nd), np.int64)
    rows, cols = np.meshgrid(np.arange(mn), np.arange(kt), indexing="ij")
    rel[:, mn_d], rel[:, k_d] = rows.ravel(), cols.ravel()
    return (Side("op", region).offsets(rel) * eb).reshape(mn, kt)


def _fit(region, offs, mn, kt, k_inst, eb, swz, k_major):
    per = wgmma.CHUNK // eb
    w = wgmma.line_chunks(swz)
    base = int(offs[0, 0])
    if k_major:
        sbo = _diff(offs, 8, 0, base)
        lbo = _diff(offs, 0, per, base) if w == 1 else wgmma.CHUNK
    else:
        far = _diff(offs, per * w, 0, base)  # the next core-matrix block along M/N
        k8 = _diff(offs, 0, 8, base)  # the next 8 rows of K
        lbo, sbo = (far, k8) if w > 1 else (k8, far)
    if lbo < 0 or sbo < 0:
        return None, f"{'K' if k_major else 'MN'}-major: neighbouring core matrices are not " \
                     "at a fixed positive stride"
    steps = []
    rows, cols = np.meshgrid(np.arange(mn), np.arange(k_inst), indexing="ij")
    for i in range(kt // k_inst):
        start = int(offs[0, i * k_inst])
        d = wgmma.Descriptor(start, max(lbo, 16), max(sbo, 16), swz)
        got = wgmma.element_address(k_major, rows, cols, eb, d)
        want = offs[:, i * k_inst:(i + 1) * k_inst]
        bad = np.argwhere(got != want)
        if len(bad):
            r, c = bad[0]
            form = "K" if k_major else "MN"
            return None, (f"{form}-major (swizzle {swz or 'none'}, LBO {lbo}, SBO {sbo}) puts "
                          f"element ({r}, {i * k_inst + c}) at byte {int(got[r, c])}, the "
                          f"layout at {int(want[r, c])}")
        if (start - base) % wgmma.CHUNK:  # the start address field counts 16-byte units
            return None, (f"K-step {i} starts {start - base} bytes after the tile's first "
                          "element, not a multiple of 16")
        steps.append(start - base)
    return OperandPlan(k_major, swz, max(lbo, 16), max(sbo, 16),
                       tuple(r.start for r in region.region), tuple(steps)), None


def _diff(offs, dr: int, dc: int, base: int) -> int:
    """Byte distance from element (0, 0) to element (dr, dc); 0 (an unused field) when
    the tile does not reach that far."""
    if dr >= offs.shape[0] or dc >= offs.shape[1]:
        return 0  # the tile never reaches that neighbour: the field is unused
    return int(offs[dr, dc]) - base

