"""copy_async -> tcgen05_ldst: tensor memory <-> registers with ``tcgen05.ld`` / ``tcgen05.st``.

Warpgroup-collective (PTX ISA §9.7.16.8.3 ``tcgen05.ld``, §9.7.16.8.4 ``tcgen05.st``): the four
warps of a warpgroup each move their own 32-lane slice of tensor memory (§9.7.16.8.1, Table
46: warp ``w % 4`` may only touch lanes ``[32w, 32w+32)``) to or from their registers. One
registration serves both directions: ``tmem -> local`` is a load, ``local -> tmem`` a store.
The registers follow the instruction's fragment (§9.7.16.8.2 and the figures of §9.7.16.10;
the formulas are ptx-semantics.md §3, evaluated by :mod:`tilewise.layout.atoms`).

Algorithm:

1. **Accept** a copy between exactly one ``tmem`` and one ``local`` region of one dtype and one
   shape, in scope ``warpgroup`` with all 128 threads of the warpgroup active, on a target
   with tcgen05 (sm_100a / sm_100f / sm_103a / sm_110a; PTX ISA 8.6+), with constant starts
   of the register region (the tensor-memory column start may be computed at run time) and
   no option but ``dispatch=``. Elements are 8, 16 or 32 bits; ``e = 32 // bits`` elements
   share one 32-bit register.
2. **Register layout**: the local view's layout restricted to the region
   (``layout.slice``). Its thread axis is ``tid_in_wg`` (``laneid`` + ``wid_in_wg`` are
   rewritten as ``tid_in_wg``); its offset on ``m`` is the first register used (a column slice
   of a wider fragment).
3. **Datapath** of the tensor-memory side (§9.7.16.10 "data path layout organization";
   :mod:`tilewise.tile.tmem_region`): ``D`` (M=128) maps row ``r`` to lane ``r``, ``F``
   (M=64) row ``r`` to lane ``32 (r // 16) + r % 16`` — a ``tmem_datapath("F")`` buffer, or a
   64-row half of a 128-lane buffer, classified automatically (rows 64..127: lane alignment
   16). Columns ``TCol = col0 + j``: ``e`` elements a cell; or, for 16-bit data,
   ``TCol = col0 + 2 j``: one element in the low half of each cell, moved with
   ``.pack::16b`` (ld) / ``.unpack::16b`` (st).
4. **Instruction shape**: with ``W32 = width / e`` 32-bit registers a row, try ``.16x256b``,
   ``.16x128b``, ``.16x64b``, ``.16x32bx2`` (widest first) with ``num = W32 / footprint``
   (8, 4, 2, 2 registers per ``.num``, §3 "Footprint"; ``.16x32bx2``'s two half-warps side
   by side, ``immHalfSplitoff`` = ``num``); the register layout must be ``match_atom``-equal to
   :func:`tcgen05_warpgroup_atom` of that shape, num and datapath. Otherwise ``.32x32b`` on
   datapath D only: ``W32`` is issued as power-of-two pieces (largest first, ``num <= 128``,
   increasing column offsets), each of which must match the ``.32x32b`` warpgroup atom;
   anything else declines with the matcher's reasons. Shape / num combinations that do not
   exist (§9.7.16.8.2 Table 49: ``.16x256b`` up to ``.x32``, ``.16x128b`` up to ``.x64``,
   others ``.x128``; ``.32x32b`` on datapath F; a width that is not a multiple of the
   shape's footprint) decline with a reason naming them.
5. **Issue**: warp ``w`` of the warpgroup addresses its own lane slice,
   ``taddr = allocated_addr + ((32 w + lane alignment) << 16) + run-time column`` (datapath F:
   its 16 rows sit in the first or second half of the slice), with immediates
   ``row = 16 * slab`` (two slabs for a ``.16x*b`` shape on datapath D, slab 1's registers
   after slab 0's; one slab otherwise) and ``col`` = the first cell + the piece's offset
   (doubled when packed: a register holds two cells' halves).
6. **Registers**: a ``DeclBuffer`` of a ``uint32`` view of the local storage root
   (``<root>_32b``, same bytes); register ``i`` of an issue is ``<root>_32b[reg_base + i]``
   (received for ld, sent for st): ``e`` elements each, low first; packed 16-bit data is
   split over two cells by ``.pack::16b`` / ``.unpack::16b``.
7. **No wait**: completion (``T.ptx.tcgen05.wait.ld()`` / ``wait.st()``) is the caller's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilewise.errors import LayoutError
from tilewise.ir import dtype as dt
from tilewise.ir.expr import BufferLoad, BufferRegion, Cast, IntImm, as_int
from tilewise.ir.stmt import Buffer, DeclBuffer, Evaluate, seq
from tilewise.layout import TileLayout, match_atom, tcgen05_warpgroup_atom
from tilewise.ptx import tcgen05
from tilewise.ptx.table import PTX_OPS
from tilewise.tile import predicates as P
from tilewise.tile.registry import DispatchFail, predicate, register_dispatch
from tilewise.tile.tmem_region import TmemRegion, classify

PAIRS = (("tmem", "local"), ("local", "tmem"))  # (dst, src)
WIDE_SHAPES = ("16x256b", "16x128b", "16x64b", "16x32bx2")  # widest first
SHAPES = tcgen05.SHAPES  # registers, 32-bit columns (footprint) and max .num per shape
THREAD_AXES = {"tid_in_wg": 1, "laneid": 1, "wid_in_wg": 32}  # -> stride on tid_in_wg


@dataclass(frozen=True)
class Issue:
    """One ``tcgen05.ld/st`` per warp: immediates and the first 32-bit register."""

    shape: str
    num: int
    row: int
    col: int
    reg_base: int

    @property
    def nregs(self) -> int:
        return SHAPES[self.shape].nregs(self.num)


@dataclass(frozen=True)
class Copy:
    """What the plan is computed from."""

    load: bool
    tmem: TmemRegion
    reg: BufferRegion
    bits: int

    @property
    def e(self) -> int:
        return 32 // self.bits

    @property
    def rows(self) -> int:
        return self.reg.shape[0]

    @property
    def width(self) -> int:
        return self.reg.shape[1]

    @property
    def scale(self) -> int:
        """Cells per register column: 2 when packed (one 16-bit element a cell)."""
        return 2 if self.tmem.packed else 1


# ---- predicates ----------------------------------------------------------------------------
def same_shape(ctx):
    d, s = ctx.dst.shape, ctx.src.shape
    if d == s:
        return True
    return False, f"dst is {d} but src is {s}; tcgen05.ld/st copies tiles of one shape"


# ---- the copy's operands -------------------------------------------------------------------
def _operands(ctx) -> Copy:
    load = ctx.src.buffer.scope == "tmem"
    tmem, reg = (ctx.src, ctx.dst) if load else (ctx.dst, ctx.src)
    if len(reg.shape) != 2:
        raise DispatchFail(f"the region is {len(reg.shape)}-D; tcgen05.ld/st copies a 2-D "
                           "(rows x columns) tile")
    if any(as_int(x.start) is None for x in reg.region):
        raise DispatchFail(f"the region of register buffer {reg.buffer.name!r} starts at a "
                           "run-time position; registers are named at compile time (only "
                           "the tensor-memory column start may be computed at run time)")
    bits = reg.buffer.dtype.bits
    if bits not in (8, 16, 32):
        raise DispatchFail(f"{reg.buffer.dtype} elements are {bits}-bit; tcgen05_ldst moves "
                           "8-, 16- or 32-bit elements")
    return Copy(load, classify(tmem, "tensor-memory"), reg, bits)


def _bounds(r: BufferRegion) -> list[tuple[int, int]]:
    return [(as_int(x.start), as_int(x.start) + x.extent) for x in r.region]


def _region_text(r: BufferRegion) -> str:
    return f"{r.buffer.name}[{', '.join(f'{a}:{b}' for a, b in _bounds(r))}]"


# ---- step 2: the register layout -----------------------------------------------------------
def register_layout(c: Copy) -> tuple[TileLayout, int]:
    """The region's register layout on ``tid_in_wg`` x ``m`` without its ``m`` offset, and
    that offset (the first register element)."""
    b = c.reg.buffer
    if b.layout is None or not b.layout.thread_axes():
        raise DispatchFail(f"register buffer {b.name!r} has no thread axes in its layout; view "
                           "it with a layout such as S[(128, 8) : (1@tid_in_wg, 1)]")
    try:
        sub = b.layout.slice(_bounds(c.reg), shape=b.shape)
    except LayoutError as err:
        raise DispatchFail(f"register region {_region_text(c.reg)}: {err.message}") from None
    if sub.replica:
        raise DispatchFail(f"register layout {b.layout!r} replicates elements across threads")
    iters = [_thread_iter(it, b.layout) for it in sub.shard]
    rest = {k: v for k, v in sub.offset.items() if k != "m"}
    if any(rest.values()):
        raise DispatchFail(f"register region {_region_text(c.reg)} starts at a thread offset "
                           f"{rest}; all 128 threads of the warpgroup take part, so copy "
                           "whole rows of the fragment")
    return TileLayout.from_iters(iters), sub.offset.get("m", 0)


def _thread_iter(it, layout) -> tuple[int, int, str]:
    name = it.axis.name
    if name == "m":
        return it.extent, it.stride, "m"
    if name not in THREAD_AXES:
        raise DispatchFail(f"register layout {layout!r} uses axis {name}; a warpgroup's "
                           "registers are laid out on tid_in_wg (or laneid and wid_in_wg)")
    return it.extent, it.stride * THREAD_AXES[name], "tid_in_wg"


# ---- step 4: the instruction shape ---------------------------------------------------------
def _footprint(shape: str) -> int:
    """32-bit register columns one ``.num`` covers (``.16x32bx2``: two halves side by side)."""
    return SHAPES[shape].cols * (2 if shape == "16x32bx2" else 1)


def _atom(shape: str, num: int, bits: int, dp: str) -> TileLayout | str:
    if num not in tcgen05.NUMS:
        return f"needs .x{num}, not a power of two"
    if num > SHAPES[shape].max_num:
        return f"needs .x{num}, above the .{shape} maximum .x{SHAPES[shape].max_num}"
    return tcgen05_warpgroup_atom(shape, num, bits, dp)


def _threads_look_like(layout: TileLayout, c: Copy, shape: str, dp: str) -> bool:
    """Whether the first columns (up to one ``.x1`` block) are distributed over threads like
    ``shape``'s ``.x1`` fragment, registers ignored: the user meant that shape."""
    block = _footprint(shape) * c.e
    cols = min(block, c.width)
    atom = tcgen05_warpgroup_atom(shape, 1, c.bits, dp)
    rr, cc = np.meshgrid(np.arange(c.rows), np.arange(cols), indexing="ij")
    coords = np.stack([rr.ravel(), cc.ravel()], axis=1)
    mine = layout.apply_np(coords, shape=(c.rows, c.width)).get("tid_in_wg")
    want = atom.apply_np(coords, shape=(c.rows, block)).get("tid_in_wg")
    return mine is not None and np.array_equal(mine, want)


def _illegal_combination(c: Copy, shape: str, w32: int) -> str | None:
    fc, mx = _footprint(shape), SHAPES[shape].max_num
    if w32 % fc:
        return (f"the register layout is the .{shape} fragment, but the copy is {c.width} "
                f"columns wide ({w32} 32-bit columns), not a multiple of the .{shape} column "
                f"footprint ({fc} 32-bit columns = {fc * c.e} {c.reg.buffer.dtype} columns)")
    if w32 // fc > mx:
        return (f"the register layout is the .{shape} fragment, but {w32} 32-bit columns need "
                f".{shape}.x{w32 // fc}; the largest is .x{mx} (PTX ISA Table 49: at most 128 "
                f"registers per thread), so copy at most {mx * fc * c.e} columns per call")
    num = w32 // fc
    if num & (num - 1):
        return (f"the register layout is the .{shape} fragment, but {w32} 32-bit columns "
                f"need .{shape}.x{num}, not a power of two (.num is 1, 2, 4, ..., "
                f"{mx}); split the copy into power-of-two column blocks")
    return None


def match_wide(layout: TileLayout, c: Copy, dp: str, w32: int, why: list[str]):
    """``(shape, num)`` of the widest ``.16x*b`` atom the layout is, else None (reasons in
    ``why``); an existing-fragment-but-illegal-width layout declines outright."""
    for shape in WIDE_SHAPES:
        fc = _footprint(shape)
        if w32 % fc == 0:
            atom = _atom(shape, w32 // fc, c.bits, dp)
            res = match_atom(layout, atom) if not isinstance(atom, str) else None
            if res:
                return shape, w32 // fc
            why.append(f".{shape}.x{w32 // fc}: " + (atom if res is None else res.reason))
        if _threads_look_like(layout, c, shape, dp):
            bad = _illegal_combination(c, shape, w32)
            if bad:
                raise DispatchFail(bad)
    return None


def pieces_32x32b(layout: TileLayout, c: Copy, w32: int, why: list[str]) -> list[tuple]:
    """``[(num, col, reg_elem_offset)]`` of the ``.32x32b`` issues covering ``w32`` columns:
    powers of two, largest first; each must be the ``.32x32b`` warpgroup fragment."""
    out, col = [], 0
    while col < w32:
        num = min(1 << ((w32 - col).bit_length() - 1), SHAPES["32x32b"].max_num)
        cols = (col * c.e, (col + num) * c.e)
        try:
            sub = layout.slice([(0, c.rows), cols], shape=(c.rows, c.width))
        except LayoutError as err:
            why.append(f".32x32b.x{num} (columns {cols[0]}:{cols[1]}): {err.message}")
            return []
        res = match_atom(_without_m_offset(sub), _atom("32x32b", num, c.bits, "D"))
        if not res:
            where = f" (columns {cols[0]}:{cols[1]})" if num != w32 else ""
            why.append(f".32x32b.x{num}{where}: {res.reason}")
            return []
        out.append((num, col, sub.offset.get("m", 0)))
        col += num
    return out


def _without_m_offset(layout: TileLayout) -> TileLayout:
    iters = [(it.extent, it.stride, it.axis) for it in layout.shard]
    return TileLayout.from_iters(iters, offset={k: v for k, v in layout.offset.items()
                                                if k != "m"})


def plan(c: Copy) -> tuple[str, list[Issue]]:
    """The datapath and the issues (steps 2-5 of the module docstring)."""
    dp, col0 = c.tmem.datapath, c.tmem.cell0()
    layout, m0 = register_layout(c)
    if c.width % c.e:
        raise DispatchFail(f"the copy is {c.width} {c.reg.buffer.dtype} columns wide; {c.e} "
                           f"{c.reg.buffer.dtype} elements share a 32-bit register, so the "
                           f"width must be a multiple of {c.e}")
    w32, why = c.width // c.e, []
    wide = match_wide(layout, c, dp, w32, why)
    if wide is not None:
        shape, num = wide
        slabs = 2 if dp == "D" else 1
        n = SHAPES[shape].nregs(num)
        base = _reg_index(c, m0)
        return dp, [Issue(shape, num, 16 * s, col0, base + s * n) for s in range(slabs)]
    if dp == "F":
        raise DispatchFail(
            "datapath F (M=64) has no .32x32b form (.32x32b moves 32 lanes per warp, F gives "
            "each warp 16 rows); lay the registers out as a .16x64b / .16x128b / .16x256b / "
            ".16x32bx2 warpgroup atom on datapath F (tcgen05_warpgroup_atom(shape, num, bits, "
            "'F')); " + "; ".join(why))
    pieces = pieces_32x32b(TileLayout.from_iters(
        [(it.extent, it.stride, it.axis) for it in layout.shard], offset={"m": m0}), c, w32, why)
    if not pieces:
        raise DispatchFail(f"the register layout {c.reg.buffer.layout!r} of "
                           f"{_region_text(c.reg)} is no tcgen05 warpgroup fragment: "
                           + "; ".join(why))
    return dp, [Issue("32x32b", num, 0, col0 + c.scale * col, _reg_index(c, m))
                for num, col, m in pieces]


def _reg_index(c: Copy, m: int) -> int:
    if m % c.e:
        raise DispatchFail(f"the register region starts at element {m} of its fragment, inside "
                           f"a 32-bit register; start it at a multiple of {c.e}")
    return m // c.e


# ---- steps 5-6: emission -------------------------------------------------------------------
def _reg_view(c: Copy, issues: list[Issue]) -> Buffer:
    root = c.reg.buffer.storage_root()
    nbits = root.size * root.dtype.bits
    need = max(i.reg_base + i.nregs for i in issues)
    if nbits % 32 or nbits // 32 < need:
        raise DispatchFail(f"register buffer {root.name!r} holds {nbits // 8} bytes per thread; "
                           f"the copy needs {need} whole 32-bit registers")
    return Buffer(root.name + "_32b", (nbits // 32,), dt.uint32, "local", view_of=root,
                  span=c.reg.buffer.span)


def _emit(ctx, c: Copy, issues: list[Issue]):
    view = _reg_view(c, issues)
    op = PTX_OPS["ptx.tcgen05.ld" if c.load else "ptx.tcgen05.st"]
    addr = c.tmem.region.buffer.allocated_addr
    lane = tcgen05.lane_slice(ctx.tid // 32)  # the warp's slice
    if c.tmem.lane0:
        lane = lane + c.tmem.lane0  # datapath F in the upper half of the slices
    taddr = addr + _as(addr, tcgen05.address(lane, 0))
    if c.tmem.cell_rt() is not None:
        taddr = taddr + _as(addr, c.tmem.cell_rt())
    stmts = [DeclBuffer(view, span=ctx.span)]
    for i in issues:
        regs = [BufferLoad(view, (IntImm(i.reg_base + k),)) for k in range(i.nregs)]
        call = op.call([taddr, i.row, i.col, i.shape, i.num, c.tmem.packed, *regs], {},
                       span=ctx.span)
        stmts.append(Evaluate(call, span=ctx.span))
    return seq(*stmts)


def _as(like, e):
    return e if e.dtype == like.dtype else Cast(like.dtype, e)


def _describe(c: Copy, dp: str, issues: list[Issue]) -> str:
    kind = "tcgen05.ld" if c.load else "tcgen05.st"
    pack = (".pack::16b" if c.load else ".unpack::16b") if c.tmem.packed else ""
    parts = ", ".join(f".{i.shape}.x{i.num}{pack} row {i.row} col {i.col} regs "
                      f"{i.reg_base}..{i.reg_base + i.nregs - 1}" for i in issues)
    where = f" lanes +{c.tmem.lane0}" if c.tmem.lane0 else ""
    rt = " + run-time column" if c.tmem.col_rt is not None else ""
    return f"{kind} datapath {dp}{where}{rt}: {parts}"


@register_dispatch("copy_async", "cuda", variant="tcgen05_ldst", priority=12,
                   declines={"*": "option {option}= does not apply to tcgen05.ld/st "
                             "(completion is T.ptx.tcgen05.wait.ld/st, issued by the caller)"},
                   when=[
    predicate("target has tcgen05", P.has_feature, feature="tcgen05",
              what="tcgen05 tensor memory"),
    predicate("operands are regions", P.operands_are_regions),
    predicate("tmem <-> local", P.direction, pairs=PAIRS),
    predicate("scope", P.scope_in, scopes=("warpgroup",)),
    predicate("all threads active", P.all_active),
    predicate("same dtype", P.same_dtype),
    predicate("same shape", same_shape),
])
def tcgen05_ldst(ctx):
    c = _operands(ctx)
    dp, issues = plan(c)
    ctx.info.append(_describe(c, dp, issues))
    return _emit(ctx, c, issues)
