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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..ir import dtype as dt
from ..ir.expr import AddressOf, BufferRegion, Expr, IntImm, as_int, binop, cast
from ..ptx import wgmma
from ..ptx.table import PTX_OPS
from ..passes.indexing import memory_offset
from ..script.analysis import known_multiple
from .partition import Side, region_text
from .registry import DispatchFail


@dataclass(frozen=True)
class OperandPlan:
    """How one shared operand is described: ``k_major``, the descriptor fields, and per
    K-step the region coordinates of the step's first element (its start address)."""

    k_major: bool
    swizzle: int
    lbo: int
    sbo: int
    step_coords: tuple  # per K-step: full buffer coordinates of element (0, k0)

    def fields(self) -> int:
        return wgmma.encode_fields(self.lbo, self.sbo, self.swizzle)


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
        plan, reason = _fit(region, offs, mn, kt, k_inst, eb, swz, k_major, mn_d, k_d)
        if plan is not None:
            return plan
        reasons.append(reason)
    raise DispatchFail(f"{what} {_text(region)} is not a canonical {inst} layout: "
                       + "; ".join(reasons))


def descriptor_expr(fields: int, buf, coords) -> Expr:
    """The 64-bit descriptor of an operand tile starting at element ``coords`` of ``buf``:
    the start address field ``(addr & 0x3FFFF) >> 4`` (the 14 bits 0-13, the same in the
    wgmma and tcgen05 encodings) or'ed with the instruction's fixed ``fields``."""
    addr = PTX_OPS["ptx.smem_addr"].call([AddressOf(buf, tuple(coords))], {})
    start = binop("&", binop(">>", cast(dt.uint64, addr), IntImm(4, dt.uint32)),
                  IntImm(0x3FFF, dt.uint64))
    return binop("|", start, IntImm(fields, dt.uint64))


def _check_alignment(region, swz: int, eb: int, what: str) -> None:
    repeat = wgmma.repeat_bytes(swz)
    buf = region.buffer
    if swz and max(16, buf.storage_root().align) < repeat:  # a view sits on its root
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


def _fit(region, offs, mn, kt, k_inst, eb, swz, k_major, mn_d, k_d):
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
        coords = [r.start for r in region.region]
        coords[k_d] = coords[k_d] + i * k_inst
        steps.append(tuple(coords))
    return OperandPlan(k_major, swz, max(lbo, 16), max(sbo, 16), tuple(steps)), None


def _diff(offs, dr: int, dc: int, base: int) -> int:
    """Byte distance from element (0, 0) to element (dr, dc); 0 (an unused field) when
    the tile does not reach that far."""
    if dr >= offs.shape[0] or dc >= offs.shape[1]:
        return 0  # the tile never reaches that neighbour: the field is unused
    return int(offs[dr, dc]) - base

