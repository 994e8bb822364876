"""Building blocks of the compute variants' code: how a source operand is read for one
destination element (a scalar; a register of a register tile; an element of memory at the
broadcast coordinates), coordinate arithmetic, guards for symbolic sizes, and packing.

Broadcasting is numpy's, right-aligned: a source dimension of extent 1 (or a missing
leading one) reads coordinate 0 for every destination coordinate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..ir import dtype as dt
from ..ir.expr import BufferLoad, BufferRegion, Expr, FloatImm, IntImm, binop, cmp
from ..ir.stmt import Buffer, IfThenElse, Stmt
from .regtile import RegTile, is_reg_tile, root
from .registry import DispatchFail


def bcast_coords(src_shape, dst_shape, coords: list) -> list:
    """Source coordinates (relative to its region) for destination coordinates."""
    lead = len(dst_shape) - len(src_shape)
    out = []
    for i, e in enumerate(src_shape):
        d = i + lead
        out.append(0 if e == 1 or d < 0 else coords[d])
    return out


def bcast_lin(src_shape, dst_shape):
    """numpy: destination linear indices -> the source linear indices they read."""
    def f(lin: np.ndarray) -> np.ndarray:
        c = np.unravel_index(lin, tuple(dst_shape))
        sc = bcast_coords(src_shape, dst_shape, list(c))
        sc = [np.broadcast_to(np.asarray(x), lin.shape) for x in sc]
        return np.ravel_multi_index(sc, tuple(src_shape)) if sc else np.zeros_like(lin)
    return f


def unravel(p, shape) -> list:
    """Row-major coordinates of position ``p`` (an IR expression) in ``shape``."""
    out, inner = [], 1
    for k in range(len(shape) - 1, -1, -1):
        c = binop("//", p, inner) if inner != 1 else p
        out.append(binop("%", c, shape[k]) if k else c)
        inner *= shape[k]
    return out[::-1]


def linear(coords, shape):
    """The row-major linear index of coordinates (IR expressions) in ``shape``."""
    lin, inner = IntImm(0), 1
    for c, e in zip(reversed(coords), reversed(shape)):
        lin = binop("+", lin, binop("*", c, inner))
        inner *= e
    return lin


def absolute(region: BufferRegion, rel: list) -> tuple:
    return tuple(r.start + c for r, c in zip(region.region, rel))


def in_bounds(region: BufferRegion, idx: tuple) -> Expr | None:
    """``idx < extent`` on the buffer's symbolic dimensions (None when all are static)."""
    out = None
    for d, n in enumerate(region.buffer.shape):
        if not isinstance(n, int):
            c = cmp("<", idx[d], n)
            out = c if out is None else binop("and", out, c)
    return out


def guard(cond: Expr | None, body: Stmt) -> Stmt:
    return body if cond is None else IfThenElse(cond, body)


def is_memory(region) -> bool:
    return isinstance(region, BufferRegion) and not is_reg_tile(region)


@dataclass
class Source:
    """How one source operand of an elementwise op is read per destination register:
    ``kind`` scalar (``value``), reg (``flat`` register view, ``regs[r]``), or mem
    (``region``, loaded at the broadcast coordinates)."""

    name: str
    kind: str
    value: Expr | None = None
    region: BufferRegion | None = None
    flat: Buffer | None = None
    regs: list | None = None

    def load(self, r: int, coords_fn, dst_shape) -> Expr:
        if self.kind == "scalar":
            return self.value
        if self.kind == "reg":
            return BufferLoad(self.flat, (IntImm(self.regs[r]),))
        rel = bcast_coords(self.region.shape, dst_shape, coords_fn(r))
        return BufferLoad(self.region.buffer, absolute(self.region, rel))

    def bounds(self, r: int, coords_fn, dst_shape) -> Expr | None:
        if self.kind != "mem":
            return None
        rel = bcast_coords(self.region.shape, dst_shape, coords_fn(r))
        return in_bounds(self.region, absolute(self.region, rel))


def reg_source(name: str, region: BufferRegion, dst: RegTile) -> Source:
    """A register-tile source read in the threads that hold the destination."""
    tile = RegTile.of(region, dst.threads, f"operand {name}")
    regs = tile.registers_for(dst, bcast_lin(region.shape, dst.shape))
    if root(tile.buffer) is root(dst.buffer) and regs != list(range(dst.regs)):
        raise DispatchFail(f"operand {name} {tile.buffer.name!r} shares registers with the "
                           "destination but at other places; writing one register would "
                           "clobber another's input (use another buffer)")
    return Source(name, "reg", region=region, flat=tile.flat(), regs=regs)


def plan_sources(named: list, dst: RegTile | None) -> list[Source]:
    """Sources for a register destination (``dst``) or a memory one (``dst`` None)."""
    out = []
    for name, v in named:
        if v is None:
            continue
        if not isinstance(v, BufferRegion):
            out.append(Source(name, "scalar", value=v))
        elif is_reg_tile(v):
            if dst is None:
                raise DispatchFail(f"operand {name} is a register tile; a memory destination "
                                   "cannot read registers (compute into a register tile, "
                                   "then Tx.copy it)")
            out.append(reg_source(name, v, dst))
        else:
            out.append(Source(name, "mem", region=v))
    return out


def packed_constant(e: Expr, lanes) -> IntImm | None:
    """A float immediate repeated in both lanes of a packed register (None otherwise)."""
    if not isinstance(e, (FloatImm, IntImm)) or e.dtype != lanes.elem:
        return None
    v = np.asarray(float(e.value)).astype(lanes.elem.numpy())
    word = np.repeat(v, 2).view(lanes.word.numpy())[0]
    return IntImm(int(word), lanes.word)


def vector_view(buf: Buffer, word) -> Buffer:
    """The registers of ``buf``'s root seen as packed words of type ``word``."""
    base = root(buf)
    n = base.size * base.dtype.bits // word.bits
    return Buffer(f"{base.name}_{word.name[0]}{word.bits}", (n,), word, "local", None,
                  view_of=base, span=buf.span)


def shuffle_mask(ctx) -> int:
    """The ``membermask`` of a shuffle every lane of its warp executes: all 32 lanes, or
    the lanes a CTA of fewer than 32 threads has (DispatchFail for a partial last warp)."""
    block = ctx.launch.block
    if block < 32:
        return (1 << block) - 1
    if block % 32:
        raise DispatchFail(f"the CTA's {block} threads end in a partial warp; shuffles need "
                           "whole warps")
    return 0xFFFFFFFF


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def size_of(shape) -> int:
    return math.prod(shape)


U32 = dt.uint32
