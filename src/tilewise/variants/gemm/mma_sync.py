"""gemm -> mma_sync: ``C (+)= A @ B`` on register tiles with ``mma.sync.aligned.m16n8kK``.

PTX ISA §9.7.14 (fragments: :mod:`tilewise.ptx.mma`). One instruction multiplies a 16 x K
tile of A by a K x 8 tile of B into a 16 x 8 tile of C, by one warp, with K = 16 (float16,
bfloat16), 8 (float32 inputs, as tf32), 32 (int8 / uint8, and fp8 e4m3 / e5m2 on sm_89+).
Accumulators: float32 (every float input), float16 (float16 inputs), int32 (integers).

Algorithm:

1. Accept ``C`` (M, N), ``A`` (M, K), ``B`` (K, N): regions of register (``local``)
   buffers with constant starts, M a multiple of 16, N of 8, K of the instruction's K; a
   legal type combination on a target that has it (sm_80; fp8 sm_89); scope warp,
   warpgroup or cta with every thread of the scope active.
2. Evaluate each operand's layout over its region (:mod:`tilewise.tile.fragment`): the
   scope thread (warp, lane) and fragment element of every element.
3. **C**: every 16 x 8 tile ``(i, j)`` lies in one warp as the C fragment
   (:func:`tilewise.layout.mma_c_atom`): each element in the lane the formula names, and
   each fragment element ``k`` in one register index in every lane (a float16 pair
   ``2k, 2k + 1`` in one 32-bit register). The warp owning it computes it.
4. **A, B**: a warp that owns C tile ``(i, j)`` must hold A tile ``(i, kk)`` and B tile
   ``(kk, j)`` of every K-step ``kk`` as the A / B fragments (:func:`mma_a_atom`,
   :func:`mma_b_atom`); several warps may hold one (a replica on the warp axis).
5. **One program for all warps**: the warps of the scope run the same code, so every warp
   must own the same number of C tiles with the same registers (its instruction list is
   the same list of register indices); the layouts of :func:`tilewise.layout.mma_fragment`
   do. Otherwise the variant declines naming two warps that differ.
6. Emit 32-bit views of the operands' register storage; ``accum=False`` zeroes C's
   registers first (a run-time ``accum``: only where it is false); then ``for kk`` (K-steps
   outermost, so consecutive instructions are independent) ``for`` each C tile of the warp
   in register order: one ``T.ptx.mma_sync`` (``mma_sync_fp8`` for fp8) reading A's, B's
   and C's registers and writing C's in place.

Each decline names the operand, the element and what the fragment needs instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilewise.ir import dtype as dt
from tilewise.ir.expr import BufferLoad, BufferRegion, IntImm, UnaryOp, cmp
from tilewise.ir.launch import WARP
from tilewise.ir.stmt import Buffer, BufferStore, DeclBuffer, Evaluate, IfThenElse, seq
from tilewise.ptx import mma
from tilewise.ptx.table import PTX_OPS
from tilewise.tile import options as O
from tilewise.tile import predicates as P
from tilewise.tile.fragment import Places, places, word_view
from tilewise.tile.registry import DispatchFail, predicate, register_dispatch

SCOPES = ("warp", "warpgroup", "cta")
ROLES = {"A": ("the A fragment", mma.a_coords), "B": ("the B fragment", mma.b_coords),
         "C": ("the C fragment", None)}


# ---- predicates ----------------------------------------------------------------------------
def _regions(ctx):
    args = ctx.call.args
    if len(args) != 3 or not all(isinstance(a, BufferRegion) for a in args):
        return False, "operands must be three buffer regions (C, A, B)"
    for name, r in zip("CAB", args):
        if r.buffer.scope != "local":
            how = (" (load it with Tx.warp.copy(<registers>, <shared tile>): ldmatrix)"
                   if name != "C" and r.buffer.scope.startswith("shared") else "")
            return False, (f"{name} ({r.buffer.name!r}) is in {r.buffer.scope} memory; "
                           f"mma.sync takes every operand in registers{how}")
        if len(r.shape) != 2:
            return False, f"{name} is {len(r.shape)}-D; gemm multiplies 2-D tiles"
    return True


def _types(ctx):
    c, a, b = (r.buffer.dtype.name for r in ctx.call.args)
    for name, t in (("A", a), ("B", b)):
        if t not in mma.IN_TYPE:
            return False, (f"{name} is {t}; mma.sync multiplies float16, bfloat16, float32 "
                           "(as tf32), int8, uint8, float8_e4m3 or float8_e5m2")
    problem = mma.combination_problem(a, b, c)
    if problem:
        return False, problem.replace("accumulate in", "accumulate (C) in")
    feature = "mma_fp8" if a in mma.FP8 else "mma_sync"
    return P.has_feature(ctx, feature, "mma.sync" + (" with fp8 inputs" if a in mma.FP8
                                                      else ""))


def _shapes(ctx):
    c, a, b = ctx.call.args
    (m, n), (ma, k), (kb, nb) = c.shape, a.shape, b.shape
    if (ma, nb, kb) != (m, n, k):
        return False, (f"C is {c.shape}, A {a.shape}, B {b.shape}: gemm computes C (M, N) "
                       "from A (M, K) and B (K, N)")
    ki = mma.k_of(a.buffer.dtype.name)
    if m % mma.M or n % mma.N or k % ki:
        return False, (f"M = {m}, N = {n}, K = {k}: mma.sync tiles C in {mma.M} x {mma.N} "
                       f"and K in steps of {ki} ({a.buffer.dtype}); make M a multiple of "
                       f"{mma.M}, N of {mma.N} and K of {ki}")
    return True


# ---- steps 2-4: fragments ------------------------------------------------------------------
@dataclass(frozen=True)
class Frag:
    """One operand tile of one instruction: the warps holding it and its 32-bit words."""

    warps: tuple[int, ...]
    words: tuple[int, ...]


def _coords_of(role: str, e: int):
    if role == "C":
        return mma.c_coords
    fn = ROLES[role][1]
    return lambda lane, i: fn(lane, i, e)


def fragment(pl: Places, role: str, r0: int, c0: int, n: int, e: int, bits: int) -> Frag:
    """The instruction tile of ``role`` at region position (r0, c0) with ``n`` elements per
    lane, ``e`` per 32-bit register, or DispatchFail naming the first element that is not
    where the fragment needs it."""
    lane = np.arange(WARP)[:, None]
    rows, cols = _coords_of(role, e)(lane, np.arange(n)[None, :])
    rows, cols = rows + r0, cols + c0
    t, m = pl.thread[rows, cols], pl.m[rows, cols]
    what = f"{role} ({pl.name!r})"
    warps = np.unique(t // WARP)
    if len(warps) > 1:
        raise DispatchFail(f"{what}: the {_tile_text(role, r0, c0, rows, cols)} is spread over "
                           f"warps {warps.tolist()}; one mma.sync needs it in one warp")
    bad = np.argwhere(t % WARP != lane)
    if len(bad):
        k, i = bad[0]
        raise DispatchFail(f"{what}: element ({rows[k, i]}, {cols[k, i]}) is in lane "
                           f"{t[k, i] % WARP}, but {ROLES[role][0]} of mma.sync puts it in lane "
                           f"{k} (give it the layout mma_fragment({role!r}, ...))")
    bad = np.argwhere(m != m[0])
    if len(bad):
        k, i = bad[0]
        raise DispatchFail(f"{what}: element ({rows[k, i]}, {cols[k, i]}) is register element "
                           f"{m[k, i]} of lane {k} but its counterpart ({rows[0, i]}, "
                           f"{cols[0, i]}) of lane 0 is element {m[0, i]}; a register holds the "
                           "same fragment element in every lane")
    return Frag(tuple(pl.owners(int(t[0, 0]))), _words(what, m[0], rows[0], cols[0], e, bits))


def _tile_text(role, r0, c0, rows, cols) -> str:
    return f"tile rows {r0}..{int(rows.max())}, columns {c0}..{int(cols.max())}"


def _words(what: str, m: np.ndarray, rows, cols, e: int, bits: int) -> tuple[int, ...]:
    """The 32-bit register of each group of ``e`` fragment elements (lane 0's places)."""
    out = []
    for j in range(len(m) // e):
        first = int(m[j * e])
        if first % e or any(int(m[j * e + h]) != first + h for h in range(e)):
            got = ", ".join(str(int(x)) for x in m[j * e:(j + 1) * e])
            raise DispatchFail(
                f"{what}: elements ({rows[j * e]}, {cols[j * e]})... of one mma.sync register "
                f"are register elements {got}; {e} {bits}-bit values share a 32-bit register, "
                f"so they must be elements {e}k..{e}k+{e - 1}")
        out.append(first * bits // 32)
    return tuple(out)


@dataclass(frozen=True)
class Step:
    """One mma.sync: the words of A, B and C in every warp that issues it."""

    a: tuple[int, ...]
    b: tuple[int, ...]
    c: tuple[int, ...]


def plan(ctx) -> list[Step]:
    """The instruction list every warp of the scope issues (steps 2-5)."""
    c, a, b = ctx.call.args
    ta, tb, tc = (r.buffer.dtype.name for r in (a, b, c))
    ea, eb, ec = mma.per_reg(ta), mma.per_reg(tb), 2 if tc == "float16" else 1
    pc, pa, pb = (places(r, ctx.thread_count, n) for r, n in ((c, "C"), (a, "A"), (b, "B")))
    (m, n), k_inst = c.shape, mma.k_of(ta)
    tiles, owner = {}, {}
    for i in range(m // mma.M):
        for j in range(n // mma.N):
            f = fragment(pc, "C", mma.M * i, mma.N * j, 4, ec, 32 // ec)
            if len(f.warps) > 1:
                raise DispatchFail(f"C ({pc.name!r}) is replicated over warps {list(f.warps)}; "
                                   "each C element must be computed by one warp")
            tiles[i, j], owner[i, j] = f.words, f.warps[0]
    a_tiles = {(i, kk): fragment(pa, "A", mma.M * i, k_inst * kk, mma.A_REGS * ea, ea, 32 // ea)
               for i in range(m // mma.M) for kk in range(a.shape[1] // k_inst)}
    b_tiles = {(kk, j): fragment(pb, "B", k_inst * kk, mma.N * j, mma.B_REGS * eb, eb, 32 // eb)
               for kk in range(a.shape[1] // k_inst) for j in range(n // mma.N)}
    streams = {}
    for w in range(ctx.thread_count // WARP):
        mine = sorted((tiles[t], t) for t in tiles if owner[t] == w)
        streams[w] = [_step(a_tiles[i, kk], b_tiles[kk, j], words, w, (i, j, kk))
                      for kk in range(a.shape[1] // k_inst) for words, (i, j) in mine]
    _same_program(streams, owner)
    return streams[0]


def _step(fa: Frag, fb: Frag, c_words, w: int, where) -> Step:
    i, j, kk = where
    for role, f, tile in (("A", fa, (i, kk)), ("B", fb, (kk, j))):
        if w not in f.warps:
            raise DispatchFail(f"warp {w} of the scope computes C tile ({i}, {j}) but holds no "
                               f"copy of {role} tile {tile} (it is in warps {list(f.warps)}); "
                               f"a warp needs the {role} rows/columns of its C tiles "
                               f"(mma_fragment({role!r}, ..., warps=...) replicates them)")
    return Step(fa.words, fb.words, c_words)


def _same_program(streams: dict[int, list[Step]], owner) -> None:
    first = streams[0]
    for w, s in streams.items():
        if s != first:
            def tiles(x):
                return sorted(t for t, o in owner.items() if o == x)
            raise DispatchFail(
                f"the warps of the scope would run different instructions: warp 0 computes "
                f"C tiles {tiles(0)} and warp {w} C tiles {tiles(w)}"
                + ("" if len(s) == len(first) else f" ({len(first)} vs {len(s)} mma.sync)")
                + "; every warp must own as many C tiles, in the same registers "
                "(split C with mma_fragment('C', shape, warps=(wm, wn)))")
    if not first:
        raise DispatchFail("no warp owns a C tile")


# ---- step 6: emission ----------------------------------------------------------------------
def _zero(ctx, view: Buffer, words: list[int]):
    stores = seq(*(BufferStore(view, (IntImm(w),), IntImm(0, dt.uint32), span=ctx.span)
                   for w in words))
    accum = ctx.option("accum", False)
    if isinstance(accum, (bool, int)):
        return None if accum else stores
    cond = UnaryOp("not", accum) if accum.dtype == dt.bool_ else cmp("==", accum, 0)
    return IfThenElse(cond, stores, span=ctx.span)


def emit(ctx, steps: list[Step]):
    c, a, b = ctx.call.args
    roots = {}
    for r in (a, b, c):
        root = r.buffer.storage_root()
        roots.setdefault(id(root), root)
    need = {id(r.buffer.storage_root()): 0 for r in (a, b, c)}
    for s in steps:
        for r, words in ((a, s.a), (b, s.b), (c, s.c)):
            key = id(r.buffer.storage_root())
            need[key] = max(need[key], max(words) + 1)
    views = {k: word_view(root, need[k], "mma.sync") for k, root in roots.items()}
    out = [DeclBuffer(v, span=ctx.span) for v in views.values()]
    va, vb, vc = (views[id(r.buffer.storage_root())] for r in (a, b, c))
    zero = _zero(ctx, vc, sorted({w for s in steps for w in s.c}))
    if zero is not None:
        out.append(zero)
    ta, tb, tc = (r.buffer.dtype.name for r in (a, b, c))
    op = PTX_OPS["ptx.mma_sync_fp8" if ta in mma.FP8 else "ptx.mma_sync"]
    for s in steps:
        regs = ([BufferLoad(va, (IntImm(w),)) for w in s.a]
                + [BufferLoad(vb, (IntImm(w),)) for w in s.b]
                + [BufferLoad(vc, (IntImm(w),)) for w in s.c])
        out.append(Evaluate(op.call([ta, tb, tc, *regs], {}, span=ctx.span), span=ctx.span))
    return seq(*out)


def _describe(ctx, steps: list[Step]) -> str:
    c, a, b = ctx.call.args
    ta, tb, tc = (r.buffer.dtype.name for r in (a, b, c))
    warps = ctx.thread_count // WARP
    per = f" per warp, {warps} warps" if warps > 1 else ""
    return f"{len(steps)} x {mma.ptx_spelling(ta, tb, tc)}{per}"


@register_dispatch("gemm", "cuda", variant="mma_sync", priority=20, options=(O.ACCUM,), when=[
    predicate("three register regions", _regions),
    predicate("scope", P.scope_in, scopes=SCOPES),
    predicate("all threads active", P.all_active),
    predicate("types", _types),
    predicate("shapes", _shapes),
])
def mma_sync_variant(ctx):
    steps = plan(ctx)
    ctx.info.append(_describe(ctx, steps))
    return emit(ctx, steps)
