"""copy -> ld_stmatrix: shared memory <-> registers with ``ldmatrix`` / ``stmatrix``.

PTX ISA §9.7.14.5.15 ``ldmatrix`` (sm_75+) and §9.7.14.5.16 ``stmatrix`` (sm_90+),
``.m8n8.x1/.x2/.x4{.trans}.shared.b16`` (geometry: :mod:`tilewise.ptx.mma`): a warp moves
one, two or four 8 x 8 matrices of 16-bit elements; lanes ``8j..8j+7`` give the row
addresses of matrix ``j`` (16 contiguous bytes, 16-byte aligned, anywhere in shared
memory), register ``j`` of every lane holds its part of matrix ``j``: lane ``l`` row
``l // 4``, elements ``2 (l % 4) + h`` (``h`` the low / high half), or with ``.trans``
rows ``2 (l % 4) + h`` of column ``l // 4``. With 8-bit elements a 16-bit pair is 2
adjacent elements (a row is 16 of them), with 32-bit elements a register is one element
(a row is 4): ``.trans`` needs 16-bit elements.

Algorithm:

1. **Accept** a copy between one ``local`` (2-D) region and one shared region of one
   dtype (8, 16 or 32 bits) whose extents agree (dimensions of extent 1 aside), in scope
   warp, warpgroup or cta with every thread active, with no option but ``dispatch=``, on a
   target with ldmatrix (a load) or stmatrix (a store).
2. **Registers**: the register region's places (:mod:`tilewise.tile.fragment`). The
   copy moves whole 32-bit registers: every register it touches must lie in the region in
   every lane of every warp of the scope, and every warp must hold the same registers
   (one program for all warps). A store refuses replicated registers (each copy would
   store).
3. **Matrices**: for each 32-bit register ``k`` the shared element offsets of its
   elements (the shared layout evaluated exactly, swizzle included) must form an 8 x 8
   ``.b16`` matrix: without ``.trans`` lanes ``4i..4i+3`` hold the 16 bytes of one row in
   order; with ``.trans`` (16-bit elements) lane ``4c + r // 2`` half ``r % 2`` is column
   ``c`` of row ``r``. Each row must be 16-byte aligned (from the buffer base, which is
   16-byte aligned; a symbolic region start by what it is known to be a multiple of).
4. **Issue**: registers in ascending order are cut into runs of consecutive registers of
   one mode: ``.x4``, then ``.x2``, ``.x1``. Lane ``l`` of an issue passes row ``l % 8``
   of matrix ``(l // 8) % num``: the shared element that the layout puts in that row's
   first place, computed from the register layout's inverse (and checked against the
   numeric plan for every thread of the scope before it is emitted).
5. Registers travel as a ``uint32`` view of the register storage. No barrier: a shared
   tile written by other threads needs the caller's ``T.cuda.cta_sync()`` first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilewise.ir.expr import AddressOf, BufferLoad, IntImm
from tilewise.ir.launch import WARP
from tilewise.ir.stmt import DeclBuffer, Evaluate, seq
from tilewise.ptx import mma
from tilewise.ptx.table import PTX_OPS
from tilewise.tile import predicates as P
from tilewise.tile.context import Unknown, eval_threads
from tilewise.tile.fragment import logical_coords, places, region_starts, word_view
from tilewise.tile.partition import Side
from tilewise.tile.registry import DispatchFail, predicate, register_dispatch

PAIRS = (("local", "shared*"), ("shared*", "local"))
SCOPES = ("warp", "warpgroup", "cta")
ROW = mma.ROW_BYTES


# ---- predicates ----------------------------------------------------------------------------
def _is_load(ctx) -> bool:
    return ctx.dst.buffer.scope == "local"


def has_instruction(ctx):
    if _is_load(ctx):
        return P.has_feature(ctx, "ldmatrix", "ldmatrix")
    return P.has_feature(ctx, "stmatrix", "stmatrix (shared <- registers)")


def element_size(ctx):
    bits = ctx.dst.buffer.dtype.bits
    if bits in (8, 16, 32):
        return True
    return False, f"{ctx.dst.buffer.dtype} elements are {bits}-bit; ldmatrix moves 8/16/32-bit"


def matching_extents(ctx):
    reg, mem = (ctx.dst, ctx.src) if _is_load(ctx) else (ctx.src, ctx.dst)
    if len(reg.shape) != 2:
        return False, f"the register region is {len(reg.shape)}-D; ldmatrix moves 2-D tiles"
    if tuple(x for x in mem.shape if x != 1) != tuple(x for x in reg.shape if x != 1):
        return False, (f"the register region is {reg.shape} but the shared region is "
                       f"{mem.shape}; ld_stmatrix copies tiles of one shape")
    return True


# ---- steps 2-3: the plan -------------------------------------------------------------------
@dataclass(frozen=True)
class Issue:
    first: int  # the first 32-bit register
    num: int
    trans: bool


class _Copy:
    """The numeric facts of one copy: per scope thread and register element, the logical
    element (region-relative) it holds, and the shared offsets of those elements."""

    def __init__(self, ctx):
        self.ctx, self.load = ctx, _is_load(ctx)
        self.reg, self.mem = (ctx.dst, ctx.src) if self.load else (ctx.src, ctx.dst)
        self.bits = self.reg.buffer.dtype.bits
        self.e = 32 // self.bits
        self.warps = ctx.thread_count // WARP
        self.side = Side("dst" if not self.load else "src", self.mem)
        self.pl = places(self.reg, ctx.thread_count, "the register tile")
        if len(self.pl.shifts) > 1 and not self.load:
            raise DispatchFail("the register tile is replicated over warps; stmatrix from "
                               "every copy would store each element several times")
        self.coord = self._inverse()

    def _inverse(self) -> np.ndarray:
        """(threads, elements, 2) region-relative coordinates, -1 where nothing is held."""
        rows, cols = self.reg.shape
        span = int(self.pl.m.max()) + 1
        out = np.full((self.ctx.thread_count, span + self.e, 2), -1, np.int64)
        rr, cc = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        for s in self.pl.shifts:
            t, m = self.pl.thread + s, self.pl.m
            if (out[t, m, 0] >= 0).any():
                raise DispatchFail("the register layout puts two elements in one register")
            out[t, m, 0], out[t, m, 1] = rr, cc
        return out

    def registers(self) -> list[int]:
        """The 32-bit registers the copy moves (the same in every lane of every warp)."""
        held = self.coord[..., 0] >= 0  # (threads, elements)
        words = held[:, :held.shape[1] // self.e * self.e].reshape(len(held), -1, self.e)
        full, some = words.all(2), words.any(2)
        if (some & ~full).any():
            t, k = np.argwhere(some & ~full)[0]
            raise DispatchFail(f"32-bit register {k} of thread {t} is only partly in the copied "
                               f"region; ldmatrix moves whole registers ({self.e} "
                               f"{self.reg.buffer.dtype} each)")
        if (full != full[:1]).any():
            t = int(np.argmax((full != full[:1]).any(1)))
            raise DispatchFail(f"thread {t} holds other registers of the tile than thread 0 "
                               f"({np.nonzero(full[t])[0].tolist()} vs "
                               f"{np.nonzero(full[0])[0].tolist()}); every lane of every warp "
                               "moves the same registers")
        return np.nonzero(full[0])[0].tolist()

    def offsets(self, k: int) -> np.ndarray:
        """(warps, 32, e) shared element offsets of register ``k``'s elements."""
        c = self.coord[:, k * self.e:(k + 1) * self.e]  # (threads, e, 2)
        rel = np.zeros(c.shape[:2] + (len(self.mem.shape),), np.int64)
        dims = [d for d, x in enumerate(self.mem.shape) if x != 1]
        reg_dims = [d for d, x in enumerate(self.reg.shape) if x != 1]
        for d, rd in zip(dims, reg_dims):
            rel[..., d] = c[..., rd]
        offs = self.side.offsets(rel.reshape(-1, rel.shape[-1]))
        return offs.reshape(self.warps, WARP, self.e)

    def mode(self, k: int) -> bool:
        """``trans`` of the matrix register ``k`` is, or DispatchFail with both reasons."""
        off = self.offsets(k)
        plain = self._plain(off)
        if plain is None:
            return False
        trans = self._trans(off)
        if trans is None:
            return True
        raise DispatchFail(f"register {k} of the tile is no 8 x 8 .b16 matrix of shared rows: "
                           f"without .trans {plain}; with .trans {trans}")

    def _plain(self, off) -> str | None:
        eb = self.bits // 8
        inside = off - off[..., :1]
        if (inside != np.arange(self.e)).any():
            w, lane, _ = np.argwhere(inside != np.arange(self.e))[0]
            return f"lane {lane}'s {self.e} elements are not adjacent in shared memory"
        starts = off[..., 0].reshape(self.warps, 8, 4)
        if (starts - starts[..., :1] != np.arange(4) * self.e).any():
            w, i, q = np.argwhere(starts - starts[..., :1] != np.arange(4) * self.e)[0]
            return (f"lane {4 * i + q}'s elements do not follow lane {4 * i + q - 1}'s in one "
                    f"16-byte row (warp {w})")
        return self._aligned(starts[..., 0], eb)

    def _trans(self, off) -> str | None:
        if self.bits != 16:
            return f"needs 16-bit elements, not {self.reg.buffer.dtype}"
        lane = np.arange(WARP)
        row, col = mma.matrix_element(lane[:, None], np.arange(2)[None, :], True)
        grid = np.zeros((self.warps, 8, 8), np.int64)
        grid[:, row, col] = off
        if (grid - grid[..., :1] != np.arange(8)).any():
            w, r, c = np.argwhere(grid - grid[..., :1] != np.arange(8))[0]
            return (f"column {c} of row {r} (lane {4 * c + r // 2}, half {r % 2}) is not the "
                    f"element after column {c - 1} in shared memory")
        return self._aligned(grid[..., 0], 2)

    def _aligned(self, row_starts: np.ndarray, eb: int) -> str | None:
        align = self.side.alignment(row_starts.ravel())
        if align % ROW:
            return (f"a row starts at byte {int(row_starts.ravel()[0]) * eb} of "
                    f"{self.mem.buffer.name!r}, only {align}-byte aligned (rows need 16)")
        return None


def plan(c: _Copy) -> list[Issue]:
    regs = c.registers()
    if not regs:
        raise DispatchFail("the region holds no whole register")
    modes = {k: c.mode(k) for k in regs}
    out, k = [], 0
    while k < len(regs):
        run = 1
        while (k + run < len(regs) and regs[k + run] == regs[k] + run
               and modes[regs[k + run]] == modes[regs[k]] and run < 4):
            run += 1
        num = 4 if run == 4 else 2 if run >= 2 else 1
        out.append(Issue(regs[k], num, modes[regs[k]]))
        k += num
    return out


# ---- steps 4-5: emission -------------------------------------------------------------------
def _address(c: _Copy, i: Issue):
    """The shared element each lane addresses (row ``l % 8`` of matrix ``(l//8) % num``)."""
    tid = c.ctx.tid
    lane = tid % WARP
    j, row = (lane // 8) % i.num, lane % 8
    src_lane, half = (row // 2, row % 2) if i.trans else (row * 4, 0)
    m = (IntImm(i.first) + j) * c.e + half
    coords = logical_coords(c.reg.buffer.layout, c.reg.buffer.shape, m, tid - lane + src_lane)
    starts = region_starts(c.reg, "the register tile")
    rel = [x - s for x, s in zip(coords, starts)]
    reg_dims = [d for d, x in enumerate(c.reg.shape) if x != 1]
    mem_idx, it = [], iter(reg_dims)
    for r, x in zip(c.mem.region, c.mem.shape):
        mem_idx.append(r.start if x == 1 else r.start + rel[next(it)])
    _check_address(c, i, rel)
    return AddressOf(c.mem.buffer, tuple(mem_idx))


def _check_address(c: _Copy, i: Issue, rel) -> None:
    """The address expressions name, for every thread of the scope, the element of the
    numeric plan (a layout the digit inverse misreads is declined, never mis-addressed)."""
    tids = np.arange(c.ctx.thread_count)
    lane = tids % WARP
    j, row = (lane // 8) % i.num, lane % 8
    src = (tids - lane + (row // 2 if i.trans else row * 4))
    m = (i.first + j) * c.e + ((row % 2) if i.trans else 0)
    want = c.coord[src, m]
    try:
        got = [eval_threads(x, {id(c.ctx.tid): tids}, tids) for x in rel]
    except Unknown:
        got = None
    if got is None or any((g != want[:, k]).any() for k, g in enumerate(got)):
        raise DispatchFail(f"the register layout {c.reg.buffer.layout!r} cannot be inverted "
                           "into row addresses (its thread and register digits are not a "
                           "mixed-radix numbering)")


def emit(ctx, c: _Copy, issues: list[Issue]):
    need = max(i.first + i.num for i in issues)
    view = word_view(c.reg.buffer.storage_root(), need, "ld_stmatrix")
    op = PTX_OPS["ptx.ldmatrix" if c.load else "ptx.stmatrix"]
    out = [DeclBuffer(view, span=ctx.span)]
    for i in issues:
        regs = [BufferLoad(view, (IntImm(i.first + k),)) for k in range(i.num)]
        call = op.call([_address(c, i), i.num, i.trans, *regs], {}, span=ctx.span)
        out.append(Evaluate(call, span=ctx.span))
    return seq(*out)


def _describe(c: _Copy, issues: list[Issue]) -> str:
    what = "ldmatrix" if c.load else "stmatrix"
    parts = ", ".join(f".x{i.num}{'.trans' if i.trans else ''} regs "
                      f"{i.first}..{i.first + i.num - 1}" for i in issues)
    return f"{what}: {parts}"


@register_dispatch("copy", "cuda", variant="ld_stmatrix", priority=40,
                   declines={"*": "option {option}= does not apply to ldmatrix"}, when=[
    predicate("operands are regions", P.operands_are_regions),
    predicate("registers <-> shared", P.direction, pairs=PAIRS),
    predicate("target has the instruction", has_instruction),
    predicate("scope", P.scope_in, scopes=SCOPES),
    predicate("all threads active", P.all_active),
    predicate("same dtype", P.same_dtype),
    predicate("element size", element_size),
    predicate("extents", matching_extents),
])
def ld_stmatrix(ctx):
    c = _Copy(ctx)
    issues = plan(c)
    ctx.info.append(_describe(c, issues))
    return emit(ctx, c, issues)
