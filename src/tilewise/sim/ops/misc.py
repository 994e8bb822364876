"""Simulator semantics of the barrier, warp, vector-move and math entries of the PTX table.

* ``cuda.cta_sync`` (``bar.sync 0``): every thread of the CTA must arrive. The model is
  warp-synchronous and the IR has no early exit, so the barrier is reached by all threads
  exactly when it executes with the full CTA active; a partial active set means the other
  threads can never arrive (a divergent barrier: deadlock on hardware).
* ``ptx.elect_sync``: true for the lowest active lane of each warp.
* ``ptx.setmaxnreg``: no effect on values; the whole warpgroup must execute it.
* ``ptx.ld_st``: a synchronous vector load then store, naturally aligned, any spaces.
* math (libdevice): computed in float32 for the 8/16/32-bit float types (then rounded to
  the result type), in float64 for float64.
"""

from __future__ import annotations

import math

import numpy as np

from ...ir.launch import WARP, WARPGROUP
from ...ptx.table import MATH_OPS
from ..access import check_pointer, check_shared_read, mark_shared_write, read_bytes, write_bytes
from ..collective import whole_groups
from ..memory import SHARED
from ..registry import semantics
from ..values import np_dtype


@semantics("cuda.cta_sync")
def cta_sync(ctx, site, args):
    if ctx.act is not None:
        absent = np.setdiff1d(ctx.tids, ctx.act)
        ctx.hazard(f"bar.sync (T.cuda.cta_sync) reached by {len(ctx.act)} of {ctx.n} threads: "
                   f"it sits in a divergent branch or loop, so thread {int(absent[0])} and "
                   f"{len(absent) - 1} other(s) can never arrive (deadlock)", site.span,
                   "move the barrier out of the branch so that every thread of the CTA "
                   "reaches it", tid=int(absent[0]))
    ctx.mem.barrier()
    ctx.stats.barriers += 1


@semantics("ptx.elect_sync")
def elect_sync(ctx, site, args):
    act = ctx.active()
    warp = act // WARP
    first = np.ones(len(act), bool)
    first[1:] = warp[1:] != warp[:-1]
    return first


@semantics("ptx.setmaxnreg")
def setmaxnreg(ctx, site, args):
    """A register-allocation hint with no effect on values: a no-op, once every warpgroup
    that executes it does so whole (``.sync.aligned``)."""
    whole_groups(ctx, site.span, "setmaxnreg", WARPGROUP, "warpgroup")


@semantics("ptx.ld_st")
def ld_st(ctx, site, args):
    dst, src, nbytes = args
    tids = ctx.active()
    s = check_pointer(ctx, src, nbytes, site.span, "ld (vector load)")
    d = check_pointer(ctx, dst, nbytes, site.span, "st (vector store)")
    if s is None or d is None:
        return
    on_shared = s[0] == SHARED
    if on_shared.any():
        check_shared_read(ctx, s[1][on_shared], nbytes, tids[on_shared], site.span)
    data = read_bytes(ctx, s[0], s[1], nbytes, tids, site.span)
    on_shared = d[0] == SHARED
    if on_shared.any():
        mark_shared_write(ctx, d[1][on_shared], nbytes, tids[on_shared], site.span)
    write_bytes(ctx, d[0], d[1], data, tids, site.span)


# ------------------------------------------------------------------------- math
def _round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


_erf = np.vectorize(math.erf, otypes=[np.float64])
_MATH = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "log10": np.log10,
    "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "tanh": np.tanh, "floor": np.floor, "ceil": np.ceil, "fabs": np.abs,
    "erf": lambda x: _erf(x).astype(x.dtype), "trunc": np.trunc, "round": _round_half_away,
    "pow": np.power, "atan2": np.arctan2, "fmod": np.fmod,
    "fma": lambda a, b, c: (a.astype(np.float64) * b + c).astype(a.dtype),
}


def _math_semantics(name):
    fn = _MATH[name]

    def run(ctx, site, args):
        out = np_dtype(site.call.type)
        work = np.dtype(np.float64 if out.itemsize == 8 else np.float32)
        with np.errstate(all="ignore"):
            r = fn(*[np.asarray(a).astype(work) for a in args])
        return r.astype(out) if np.ndim(r) else out.type(r)

    return run


for _name in sorted(MATH_OPS):
    semantics(_name)(_math_semantics(_name))
