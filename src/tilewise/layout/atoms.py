"""Instruction atoms: the register / tensor-memory layouts instructions impose.

Atoms are never typed in as iters. Each factory states the instruction's mapping as the
formula of its reference (PTX ISA tables, via ptx-semantics.md §3), evaluates it for every
thread and register, and *fits* a layout to that table (``_fit``): each logical bit of the
tile is sent to the place its unit coordinate reaches, and the fitted layout is then
checked against the whole table. A formula that is not a tile layout is a defect here,
reported loudly, never a silently wrong atom.

Logical tile of a tcgen05 atom: rows are the lane offset ``dl`` (0..31 for ``.32x32b``,
0..15 for ``.16x*b``); columns are element columns, ``col = c * e + h`` where ``c`` is the
logical 32-bit column of the formula, ``e = 32 // dtype_bits`` elements share one 32-bit
register and ``h`` is the element's half (bits ``[16h, 16h+16)`` for 16-bit types, the
``.pack::16b`` rule). The register axis ``m`` counts elements of the thread's fragment:
``m = r * e + h``, so an fp16 fragment of 4 registers is ``m`` in 0..7, like the seed's
``A_reg = T.alloc_local((8,), "float16")``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from tilewise.errors import LayoutError, did_you_mean
from tilewise.layout.axes import Axis, Iter, as_int
from tilewise.layout.layout import TileLayout
from tilewise.ptx import mma, tcgen05

Place = dict[str, int]

# The atoms' shapes: every tcgen05.ld/st shape. ``.16x32bx2``'s upper half-warp adds the
# half-split immediate to its columns; with tilewise's split (``num`` columns,
# :func:`tilewise.ptx.tcgen05.half_split`) the two halves sit side by side, one 16 x 2num tile.
ATOM_SHAPES = tcgen05.SHAPES


def _columns(shape: str, num: int) -> Callable:
    """``c(t, r)`` of ``shape``, with ``.16x32bx2``'s half split added for the upper half."""
    c = ATOM_SHAPES[shape].c
    if shape != "16x32bx2":
        return c
    split = tcgen05.half_split(shape, num, packed=False)
    return lambda t, r: c(t, r) + split * (t >= 16)


def _fit(dims: tuple[int, int], table: Iterable[tuple[tuple[int, int], Place]]) -> TileLayout:
    """The layout over ``dims`` (powers of two) whose places are ``table``. Fitting and
    checking a table costs milliseconds, so the atom functions built on it are cached (pure
    functions of their arguments; a TileLayout is immutable)."""
    rows, cols = dims
    places: dict[int, Place] = {}
    for (row, col), place in table:
        places[row * cols + col] = place
    size = rows * cols
    if sorted(places) != list(range(size)):
        raise RuntimeError(f"atom table does not cover its {rows}x{cols} tile")
    iters = []
    for bit in reversed(range(size.bit_length() - 1)):  # outermost bit first
        unit = {k: v for k, v in places[1 << bit].items() if v}
        if len(unit) > 1:
            raise RuntimeError(f"atom bit {bit} moves two axes at once: {unit}")
        name, stride = next(iter(unit.items()), ("m", 0))
        iters.append(Iter(2, stride, Axis.get(name)))
    layout = TileLayout._build(iters).canonicalize().group(dims)
    got = layout.apply_np(np.arange(size))
    for name in {k for place in places.values() for k in place}:
        want = np.array([places[i].get(name, 0) for i in range(size)])
        if not np.array_equal(got.get(name, np.zeros(size, np.int64)), want):
            raise RuntimeError(f"atom formula is not a tile layout on axis {name}")
    return layout


def _elems_per_32b(dtype_bits: object) -> int:
    bits = as_int(dtype_bits, "dtype_bits", "pass dtype_bits=16 or 32")
    if bits not in (8, 16, 32):
        raise LayoutError(
            f"dtype_bits {bits} is not supported by tcgen05 register atoms",
            hint="pass dtype_bits=8, 16 or 32",
        )
    return 32 // bits


def _check_shape_num(shape: str, num: object) -> tuple[int, int, Callable, Callable]:
    if shape not in ATOM_SHAPES:
        raise LayoutError(
            f"unknown tcgen05 shape {shape!r}", hint=did_you_mean(str(shape), ATOM_SHAPES)
        )
    s = ATOM_SHAPES[shape]
    n = as_int(num, "num", "num is the .xN repeat count: 1, 2, 4, ..., 128")
    if tcgen05.shape_num_problem(shape, n):
        raise LayoutError(
            f"num={n} is not a legal .x count for tcgen05 .{shape}",
            hint=f"use one of {list(s.nums)}",
        )
    return s.lanes, s.nregs(n), s.dl, _columns(shape, n)


def tcgen05_shape(shape: str, num: int = 1, dtype_bits: int = 32) -> tuple[int, int]:
    """``(rows, cols)`` of one warp's tcgen05 fragment tile (elements of dtype_bits)."""
    lanes, nregs, _, c = _check_shape_num(shape, num)
    e = _elems_per_32b(dtype_bits)
    return lanes, e * (1 + max(c(t, r) for t in range(32) for r in range(nregs)))


def _tcgen05_table(
    shape: str,
    num: int,
    dtype_bits: int,
    rows_per_warp: int,
    warps: int,
    slabs: int,
    thread_axis: str,
) -> Iterable[tuple[tuple[int, int], Place]]:
    _, nregs, dl, c = _check_shape_num(shape, num)
    e = _elems_per_32b(dtype_bits)
    for w in range(warps):
        for s in range(slabs):
            for t in range(32):
                for r in range(nregs):
                    for h in range(e):
                        row = w * rows_per_warp + 16 * s + dl(t, r)
                        reg = (s * nregs + r) * e + h
                        yield (row, c(t, r) * e + h), {thread_axis: 32 * w + t, "m": reg}


@functools.lru_cache(maxsize=None)
def tcgen05_atom(shape: str, num: int = 1, dtype_bits: int = 32) -> TileLayout:
    """Register layout of one warp's ``tcgen05.ld/st.<shape>.x<num>`` fragment: logical
    ``(dl, col)`` -> ``laneid`` and register element index ``m``."""
    rows, cols = tcgen05_shape(shape, num, dtype_bits)
    return _fit((rows, cols), _tcgen05_table(shape, num, dtype_bits, rows, 1, 1, "laneid"))


@functools.lru_cache(maxsize=None)
def tcgen05_warpgroup_atom(
    shape: str, num: int = 1, dtype_bits: int = 32, datapath: str = "D"
) -> TileLayout:
    """The four warps of a warpgroup issuing ``tcgen05.<shape>.x<num>`` together.

    Datapath ``D`` (M=128): warp ``w`` covers rows ``32w..32w+31``; a ``.16x*b`` shape is
    issued twice (slab 0 at row 0, slab 1 at row 16) and slab ``s``'s registers follow
    slab ``s-1``'s in the thread's fragment. Datapath ``F`` (M=64): warp ``w`` covers rows
    ``16w..16w+15`` in one issue (``.16x*b`` shapes only). Thread axis: ``tid_in_wg``.
    """
    rows, cols = tcgen05_shape(shape, num, dtype_bits)
    dp = _check_datapath(datapath)
    if dp == "F" and rows == 32:
        raise LayoutError(
            f"tcgen05 .{shape} moves 32 lanes per warp; datapath F (M=64) uses 16 lanes per warp",
            hint="use a .16x64b/.16x128b/.16x256b shape",
        )
    per_warp = 32 if dp == "D" else 16
    slabs = per_warp // rows
    table = _tcgen05_table(shape, num, dtype_bits, per_warp, 4, slabs, "tid_in_wg")
    return _fit((4 * per_warp, cols), table)


# ---- tensor-memory datapaths (ptx/tcgen05.py: row -> lane per datapath) ------------
DATAPATHS = tcgen05.DATAPATHS


def _check_datapath(kind: str) -> str:
    if kind not in DATAPATHS:
        raise LayoutError(
            f"unknown tensor-memory datapath {kind!r}", hint=did_you_mean(str(kind), DATAPATHS)
        )
    return kind


@functools.lru_cache(maxsize=None)
def tmem_datapath(kind: str, cols: int = 1) -> TileLayout:
    """Tensor-memory layout of an ``M x cols`` accumulator: row -> ``TLane`` per the
    datapath ``kind`` ("D": M=128, "F": M=64), column -> ``TCol``."""
    rows, lane = DATAPATHS[_check_datapath(kind)]
    n = as_int(cols, "cols", "cols is a positive power of two")
    if n <= 0 or n & (n - 1):
        raise LayoutError(f"cols={n} is not a positive power of two", hint="e.g. cols=32")
    table = (((r, c), {"TLane": lane(r), "TCol": c}) for r in range(rows) for c in range(n))
    return _fit((rows, n), table)


# ---- mma.sync / ldmatrix ---------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def mma_m8n8_fragment(dtype_bits: int = 16) -> TileLayout:
    """An 8-row fragment of mma.sync / ldmatrix: lane ``t`` holds row ``t // 4``, columns
    ``e*(t%4) .. e*(t%4)+e-1`` (``e = 32 // dtype_bits``: 8x8 for 16-bit types)."""
    e = _elems_per_32b(dtype_bits)
    table = (
        ((t // 4, e * (t % 4) + h), {"laneid": t, "m": h}) for t in range(32) for h in range(e)
    )
    return _fit((8, 4 * e), table)


@functools.lru_cache(maxsize=None)
def ldmatrix_m8n8(num: int = 1, trans: bool = False) -> TileLayout:
    """Register layout of ``ldmatrix.sync.aligned.m8n8.x<num>{.trans}.b16``: matrix ``i``
    is rows ``8i..8i+7`` of a ``(8*num) x 8`` tile and lands in register ``i``."""
    n = as_int(num, "num", "ldmatrix takes .x1, .x2 or .x4")
    if n not in (1, 2, 4):
        raise LayoutError(f"num={n} is not a legal ldmatrix count", hint="use 1, 2 or 4")

    def table() -> Iterable[tuple[tuple[int, int], Place]]:
        for i in range(n):
            for t in range(32):
                for h in range(2):
                    row, col = mma.matrix_element(t, h, bool(trans))
                    yield (8 * i + row, col), {"laneid": t, "m": 2 * i + h}

    return _fit((8 * n, 8), table())


# ---- mma.sync m16n8k* (ptx/mma.py: the PTX ISA fragment formulas) ---------------------
def _mma_e(dtype_bits: object) -> int:
    bits = as_int(dtype_bits, "dtype_bits", "pass the input element size: 8, 16 or 32")
    if bits not in (8, 16, 32):
        raise LayoutError(f"mma.sync has no {bits}-bit inputs",
                          hint="pass dtype_bits=16 (f16/bf16), 32 (tf32) or 8 (s8/u8/fp8)")
    return 32 // bits


@functools.lru_cache(maxsize=None)
def mma_a_atom(dtype_bits: int = 16) -> TileLayout:
    """The A fragment of one ``mma.sync.m16n8kK`` (K = 256 / dtype_bits): a (16, K) tile of
    one warp, element ``i`` of lane ``l`` at row ``l//4 + 8 (r % 2)``, column
    ``e (l%4) + h + 4 e (r // 2)`` (register ``r = i // e``, half ``h = i % e``)."""
    e = _mma_e(dtype_bits)
    table = ((mma.a_coords(t, i, e), {"laneid": t, "m": i})
             for t in range(32) for i in range(mma.A_REGS * e))
    return _fit((mma.M, 8 * e), table)


@functools.lru_cache(maxsize=None)
def mma_b_atom(dtype_bits: int = 16) -> TileLayout:
    """The B fragment of one ``mma.sync.m16n8kK``: a (K, 8) tile of one warp, element ``i``
    of lane ``l`` at row ``e (l%4) + h + 4 e r``, column ``l // 4``."""
    e = _mma_e(dtype_bits)
    table = ((mma.b_coords(t, i, e), {"laneid": t, "m": i})
             for t in range(32) for i in range(mma.B_REGS * e))
    return _fit((8 * e, mma.N), table)


@functools.lru_cache(maxsize=None)
def mma_c_atom() -> TileLayout:
    """The C / D fragment of one ``mma.sync.m16n8k*``: a (16, 8) tile of one warp, element
    ``i`` (0..3) of lane ``l`` at row ``l//4 + 8 (i // 2)``, column ``2 (l%4) + i % 2``. The
    same for every accumulator type: a float16 accumulator packs elements ``2j, 2j+1`` in
    register ``j``."""
    table = ((mma.c_coords(t, i), {"laneid": t, "m": i}) for t in range(32) for i in range(4))
    return _fit((mma.M, mma.N), table)


_OPERANDS = ("A", "B", "C")
_WARP_AXES = ("warpid", "wid_in_wg")


def mma_fragment(operand: str, shape: tuple[int, int], dtype_bits: int = 16,
                 warps: tuple[int, int] = (1, 1), warp_axis: str = "warpid") -> TileLayout:
    """The register layout of a whole ``mma.sync`` operand tile: ``operand`` ``"A"`` (M, K),
    ``"B"`` (K, N) or ``"C"`` (M, N) of ``shape``, split over a ``warps = (wm, wn)`` grid of
    warps (warp ``wm_i * wn + wn_i`` on ``warp_axis``: ``warpid`` for a CTA, ``wid_in_wg``
    for a warpgroup) that owns C rows ``[M/wm * wm_i, ...)`` and columns ``[N/wn * wn_i,
    ...)``. Inside a warp the tile is a grid of instruction atoms (:func:`mma_a_atom`,
    :func:`mma_b_atom`, :func:`mma_c_atom`) in row-major order, each atom's registers after
    the previous atom's. A is replicated over the warps of one row of the grid (they
    all need those rows of A), B over the warps of one column. Built from iters and
    checked against the fragment formulas element by element."""
    if operand not in _OPERANDS:
        raise LayoutError(f"unknown mma operand {operand!r}", hint="pass 'A', 'B' or 'C'")
    if warp_axis not in _WARP_AXES:
        raise LayoutError(f"warp_axis {warp_axis!r} is not a warp axis",
                          hint="pass warp_axis='warpid' (CTA) or 'wid_in_wg' (warpgroup)")
    e = _mma_e(dtype_bits) if operand != "C" else 1
    wm, wn = (as_int(w, "warps", "warps is (rows, columns) of warps, e.g. (2, 2)")
              for w in warps)
    rows, cols = (as_int(x, "shape", "shape is (rows, columns)") for x in shape)
    unit = {"A": (mma.M * wm, 8 * e), "B": (8 * e, mma.N * wn), "C": (mma.M * wm, mma.N * wn)}
    ur, uc = unit[operand]
    if wm < 1 or wn < 1 or rows <= 0 or cols <= 0 or rows % ur or cols % uc:
        raise LayoutError(f"a ({rows}, {cols}) {operand} tile does not split into "
                          f"{ur} x {uc} blocks ({wm} x {wn} warps of mma.sync atoms)",
                          hint=f"make the shape a multiple of ({ur}, {uc})")
    shard, replica = _mma_iters(operand, rows // ur, cols // uc, e, wm, wn, warp_axis)
    layout = TileLayout.from_iters(shard, replica).group((rows, cols))
    _check_mma_fragment(layout, operand, (rows, cols), e, wm, wn, warp_axis)
    return layout


def _mma_iters(operand: str, br: int, bc: int, e: int, wm: int, wn: int, w: str):
    """Shard and replica iters: ``br x bc`` atoms per warp, warps ``wm x wn``."""
    if operand == "C":
        rows = [(wm, wn, w), (br, bc * 4, "m"), (2, 2, "m"), (8, 4, "laneid")]
        cols = [(wn, 1, w), (bc, 4, "m"), (4, 1, "laneid"), (2, 1, "m")]
        return rows + cols, []
    if operand == "A":
        size = 4 * e
        rows = [(wm, wn, w), (br, bc * size, "m"), (2, e, "m"), (8, 4, "laneid")]
        cols = [(bc, size, "m"), (2, 2 * e, "m"), (4, 1, "laneid"), (e, 1, "m")]
        return rows + cols, [(wn, 1, w)] if wn > 1 else []
    size = 2 * e
    rows = [(br, bc * size, "m"), (2, e, "m"), (4, 1, "laneid"), (e, 1, "m")]
    cols = [(wn, 1, w), (bc, size, "m"), (8, 4, "laneid")]
    return rows + cols, [(wm, wn, w)] if wm > 1 else []


def _check_mma_fragment(layout, operand, shape, e, wm, wn, w) -> None:
    """Every (warp, lane, element) the formulas give holds its element, and nothing else."""
    want = []
    per = {"A": mma.A_REGS * e, "B": mma.B_REGS * e, "C": 4}[operand]
    tile = {"A": (mma.M, 8 * e), "B": (8 * e, mma.N), "C": (mma.M, mma.N)}[operand]
    coords = {"A": lambda t, i: mma.a_coords(t, i, e), "B": lambda t, i: mma.b_coords(t, i, e),
              "C": mma.c_coords}[operand]
    t, i = np.meshgrid(np.arange(32), np.arange(per), indexing="ij")
    r0, c0 = coords(t, i)
    for wi in range(wm):
        for wj in range(wn):
            base_r = wi * (shape[0] // wm) if operand != "B" else 0
            base_c = wj * (shape[1] // wn) if operand != "A" else 0
            nr = (shape[0] // wm if operand != "B" else shape[0]) // tile[0]
            nc = (shape[1] // wn if operand != "A" else shape[1]) // tile[1]
            for b in range(nr * nc):
                row = base_r + (b // nc) * tile[0] + r0
                col = base_c + (b % nc) * tile[1] + c0
                want.append((row.ravel() * shape[1] + col.ravel(), wi * wn + wj,
                             t.ravel(), b * per + i.ravel()))
    got = layout.apply_np(np.concatenate([x[0] for x in want]))
    lin = np.concatenate([x[0] for x in want])
    warp = np.concatenate([np.full(len(x[0]), x[1]) for x in want])
    reps = [r.get(w, 0) for r in layout.replicas()]
    first = got.get(w, np.zeros_like(lin))
    ok = np.zeros(len(lin), bool)
    for d in reps:
        ok |= first + d == warp
    held = np.concatenate([x[2] for x in want]), np.concatenate([x[3] for x in want])
    if not (ok.all() and np.array_equal(got["laneid"], held[0])
            and np.array_equal(got["m"], held[1])
            and len(lin) == layout.size() * len(reps)):
        raise RuntimeError(f"mma {operand} fragment layout disagrees with the PTX formulas")


# ---- structural matching -------------------------------------------------------------
@dataclass(frozen=True)
class MatchResult:
    """Truthy when a layout is an atom; otherwise ``reason`` says what differs."""

    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


def _label(axis: Axis) -> str:
    return "register axis" if axis.kind == "memory" else axis.name


def _iter_mismatch(a: Iter, b: Iter) -> str | None:
    if a.axis != b.axis:
        return f"an iter on {a.axis.name} where the atom has {b.axis.name}"
    if a.extent != b.extent:
        return f"extent {a.extent} on {a.axis.name} where the atom has {b.extent}"
    if a.stride != b.stride:
        return f"{_label(a.axis)} stride {a.stride} where the atom has {b.stride}"
    return None


def match_atom(layout: TileLayout, atom: TileLayout) -> MatchResult:
    """Is ``layout`` structurally ``atom`` (canonical forms equal)? Iters are compared
    innermost first, so the reason names the first difference a fragment would show."""
    a, b = layout.canonicalize(), atom.canonicalize()
    if a == b:
        return MatchResult(True)
    for x, y in zip(reversed(a.shard), reversed(b.shard)):
        why = _iter_mismatch(x, y)
        if why:
            return MatchResult(False, why)
    if len(a.shard) != len(b.shard):
        return MatchResult(
            False,
            f"{len(a.shard)} iters ({a.size()} elements) where the "
            f"atom has {len(b.shard)} ({b.size()} elements)",
        )
    for what, x, y in (
        ("replica", a.replica, b.replica),
        ("offset", dict(a.offset), dict(b.offset)),
        ("swizzle", a.swizzling, b.swizzling),
    ):
        if x != y:
            return MatchResult(False, f"{what} {x} where the atom has {y}")
    return MatchResult(False, "the layouts differ")  # unreachable: the key has no more


# ---- wgmma -----------------------------------------------------------------------------
def wgmma_accumulator(n: int) -> TileLayout:
    """The accumulator fragment of ``wgmma.mma_async.m64nN`` as a (64, N) register tile of
    a warpgroup (:func:`tilewise.ptx.wgmma.acc_coords`): rows ``16w + l // 4 + 8 (i // 2)``,
    columns ``8j + 2 (l % 4) + i % 2`` for value ``m = 4j + i`` of warp ``w``, lane ``l``.
    Element ``m`` of the thread's fragment is register ``m`` of a float32 accumulator, half
    ``m % 2`` of register ``m // 2`` of a float16 one."""
    from tilewise.ptx import wgmma

    problem = wgmma.n_problem(n) if isinstance(n, int) else f"N = {n!r} is not an int"
    if problem:
        raise LayoutError(f"no wgmma accumulator for {problem}",
                          hint="use N = 8, 16, ..., 256")
    spec = ((4, 1, "wid_in_wg"), (2, 2, "m"), (8, 4, "laneid"),
            (n // 8, 4, "m"), (4, 1, "laneid"), (2, 1, "m"))
    layout = TileLayout._build([Iter(e, s, Axis.get(a)) for e, s, a in spec]).group((64, n))
    t = np.arange(128)[:, None]
    v = np.arange(n // 2)[None, :]
    rows, cols = wgmma.acc_coords(t, v)
    got = layout.apply_np((rows * n + cols).ravel())
    want = {"wid_in_wg": np.broadcast_to(t // 32, rows.shape), "laneid":
            np.broadcast_to(t % 32, rows.shape), "m": np.broadcast_to(v, rows.shape)}
    for axis, values in want.items():
        if not np.array_equal(got[axis], values.ravel()):
            raise RuntimeError(f"wgmma accumulator layout disagrees with the formula on {axis}")
    return layout


@functools.lru_cache(maxsize=None)
def wgmma_accumulator_rows() -> TileLayout:
    """One value per row of the (64, N) wgmma accumulator, as a (64, 1) register tile laid
    out like the accumulator's rows (:func:`wgmma_accumulator`): row ``16w + 8h + l // 4``
    is register ``h`` of every lane ``l`` of warp ``w`` that holds that row (the four lanes
    of a quad: a replica over ``l % 4``). A row reduction of the accumulator
    (``Tx.wg.max(m, acc, axes=-1)``) writes it, and ``Tx.wg.mul(acc, acc, m)`` broadcasts it
    back over the columns, all in registers: the online softmax of attention. Written out:
    ``S[(4, 2, 8, 1):(1@wid_in_wg, 1, 4@laneid, 1)] + R[4:1@laneid]``."""
    spec = ((4, 1, "wid_in_wg"), (2, 1, "m"), (8, 4, "laneid"), (1, 1, "m"))
    layout = TileLayout._build([Iter(e, s, Axis.get(a)) for e, s, a in spec],
                               [Iter(4, 1, Axis.get("laneid"))]).group((64, 1))
    _check_accumulator_part(layout, 1, lambda rows, cols: rows, lambda v: v // 2 % 2)
    return layout


@functools.lru_cache(maxsize=None)
def wgmma_accumulator_columns(n: int) -> TileLayout:
    """One value per column of the (64, N) wgmma accumulator, as an (N,) register tile laid
    out like its columns: column ``8j + 2 (l % 4) + i`` is register ``2j + i`` of every lane
    ``l`` (of every warp) that holds that column (a replica over ``l // 4`` and the warps).
    A bias row in registers (``Tx.wg.add(acc, acc, bias)``), loaded once per tile."""
    from tilewise.ptx import wgmma

    if wgmma.n_problem(n) if isinstance(n, int) else True:
        raise LayoutError(f"no wgmma accumulator for N = {n!r}", hint="use N = 8, 16, ..., 256")
    spec = ((n // 8, 2, "m"), (4, 1, "laneid"), (2, 1, "m"))
    rep = ((8, 4, "laneid"), (4, 1, "wid_in_wg"))
    layout = TileLayout._build([Iter(e, s, Axis.get(a)) for e, s, a in spec],
                               [Iter(e, s, Axis.get(a)) for e, s, a in rep]).group((n,))
    _check_accumulator_part(layout, n, lambda rows, cols: cols, lambda v: v // 4 * 2 + v % 2)
    return layout


def _check_accumulator_part(layout: TileLayout, n: int, coord, reg) -> None:
    """Every value the threads of a warpgroup hold in the wgmma accumulator
    (:func:`tilewise.ptx.wgmma.acc_coords`) is, for the part ``layout`` describes (its row
    or its column: ``coord(rows, cols)``), held by that thread in register ``reg(v)``."""
    from tilewise.ptx import wgmma

    t = np.arange(128)[:, None]
    v = np.arange(max(n, 8) // 2)[None, :]
    rows, cols = wgmma.acc_coords(t, v)
    cols_of = np.broadcast_to(coord(rows, cols), rows.shape).ravel()
    warp = np.broadcast_to(t // 32, rows.shape).ravel()
    lane = np.broadcast_to(t % 32, rows.shape).ravel()
    value = np.broadcast_to(v, rows.shape).ravel()
    want = {(int(k), int(w), int(ln), int(reg(j))) for k, w, ln, j in
            zip(cols_of, warp, lane, value)}
    got = set()
    for k in range(layout.size()):
        for place in layout.apply_all(k):
            got.add((k, place["wid_in_wg"], place["laneid"], place["m"]))
    if got != want:
        raise RuntimeError("wgmma accumulator row/column layout disagrees with the formula")


@functools.lru_cache(maxsize=None)
def wgmma_a_fragment(k: int) -> TileLayout:
    """The A operand of ``wgmma.mma_async.m64nNk16`` from registers (f16/bf16) as a (64, k)
    register tile of a warpgroup, ``k`` a multiple of 16: K-step ``s`` (columns ``16s ..
    16s + 15``) is elements ``8s .. 8s + 7`` of every thread, element ``8s + i`` being the
    ISA's ``a_i`` (:func:`tilewise.ptx.wgmma.a_coords`), two per 32-bit register. Checked
    against that formula element by element; it equals ``wgmma_accumulator(k)``, which is
    why an accumulator cast to 16 bits in place feeds the next wgmma (FlashAttention's P)."""
    from tilewise.ptx import wgmma

    kk = k if isinstance(k, int) else None
    if kk is None or kk <= 0 or kk % 16 or kk > wgmma.N_MAX:
        raise LayoutError(f"no wgmma A fragment of K = {k!r}",
                          hint="use K = 16, 32, ..., 256 (a multiple of the instruction's 16)")
    spec = ((4, 1, "wid_in_wg"), (2, 2, "m"), (8, 4, "laneid"),
            (kk // 8, 4, "m"), (4, 1, "laneid"), (2, 1, "m"))
    layout = TileLayout._build([Iter(e, s, Axis.get(a)) for e, s, a in spec]).group((64, kk))
    t = np.arange(128)[:, None, None]
    step = np.arange(kk // 16)[None, :, None]
    i = np.arange(8)[None, None, :]
    rows, cols = wgmma.a_coords(t, i)
    cols = cols + 16 * step
    got = layout.apply_np((rows * kk + cols).ravel())
    want = {"wid_in_wg": t // 32, "laneid": t % 32, "m": 8 * step + i}
    for axis, values in want.items():
        if not np.array_equal(got[axis], np.broadcast_to(values, cols.shape).ravel()):
            raise RuntimeError(f"wgmma A fragment layout disagrees with the formula on {axis}")
    return layout


# ---- shared operand tiles ----------------------------------------------------------------
def widest_swizzle(cols: int, dtype_bits: int = 16) -> int:
    """The widest swizzle (128, 64 or 32 bytes; 0: none) whose column blocks split a row of
    ``cols`` elements of ``dtype_bits``: what :func:`swizzled_tile` takes for a tile whose
    width is not a multiple of 128 bytes (a head_dim of 96 takes 64, of 80 takes 32)."""
    row = as_int(cols, "cols", "pass the tile's column count") * as_int(
        dtype_bits, "dtype_bits", "pass the element size in bits (16 for bf16)")
    return next((b for b in (128, 64, 32) if row % (b * 8) == 0), 0)


def swizzled_tile(rows: int, cols: int, dtype_bits: int = 16, swizzle: int = 128,
                  stages: int | None = None) -> TileLayout:
    """A (rows, cols) shared tile stored as column blocks ``swizzle`` bytes wide, each
    block a row-major (rows, block) run with the ``swizzle``-byte swizzle (``swizzle=0``:
    16-byte blocks, no swizzle). This is what a TMA load of boxes ``swizzle`` bytes wide
    writes, and a canonical wgmma / tcgen05 operand layout whichever of the two dimensions
    is K: with ``cols`` = K the tile is K-major, with ``cols`` = M or N it is MN-major.
    A tile whose ``cols`` fill one block is plain row-major (then swizzled). With
    ``stages`` the layout is of a (stages, rows, cols) ring of such tiles, one after
    another (a pipeline's shared buffers)."""
    if swizzle not in (0, 32, 64, 128):
        raise LayoutError(f"swizzle {swizzle!r} is not 0, 32, 64 or 128 bytes",
                          hint="pass swizzle=128 (the usual), 64, 32 or 0 (no swizzle)")
    bits = as_int(dtype_bits, "dtype_bits", "pass the element size in bits (16 for bf16)")
    width = (swizzle or 16) * 8 // bits
    r = as_int(rows, "rows", "pass the tile's row count")
    c = as_int(cols, "cols", "pass the tile's column count")
    n = 1 if stages is None else as_int(stages, "stages", "pass the number of stages")
    if r <= 0 or c <= 0 or c % width:
        raise LayoutError(
            f"a ({rows}, {cols}) tile of {bits}-bit elements does not split into column "
            f"blocks of {width} elements ({swizzle or 16} bytes)",
            hint=f"make cols a multiple of {width}, or pick a narrower swizzle")
    if n <= 0:
        raise LayoutError(f"stages={stages!r} is not a positive count", hint="pass stages >= 1")
    iters = [(r, width), (c // width, r * width), (width, 1)]
    if stages is not None:
        iters.insert(0, (n, r * c))
    base = TileLayout._build([Iter(e, st, Axis.get("m")) for e, st in iters]).canonicalize()
    base = base.group((r, c) if stages is None else (n, r, c))  # drawn in the tile's shape
    return base.swizzle(swizzle, bits) if swizzle else base
