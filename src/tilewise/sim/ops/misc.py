"""Simulator semantics of the barrier, warp, vector-move and math entries of the PTX table.

* ``cuda.cta_sync`` (``bar.sync 0``): every thread of the CTA must arrive. The model is
  warp-synchronous and the IR has no early exit, so the barrier is reached by all threads
  exactly when it executes with the full CTA active; a partial active set means the other
  threads can never arrive (a divergent barrier: deadlock on hardware).
* ``ptx.bar.sync`` / ``ptx.bar.arrive`` (named barriers): whole warps arrive; ``count``
  arrivals complete the barrier, which then makes the participants' shared writes
  visible to every thread and orders their accesses for the race checks
  (:meth:`~tilewise.sim.memory.CtaMemory.release`); an incomplete ``bar.sync`` waits
  while other forked thread sets and CTAs run (:mod:`tilewise.sim.scheduler`), else it is a
  deadlock.
* ``ptx.elect_sync``: true for the lowest active lane of each warp.
* ``ptx.setmaxnreg``: no effect on values; the whole warpgroup must execute it.
* ``ptx.ld_st``: a synchronous vector load then store, naturally aligned, any spaces; a
  side in registers is checked against the wgmma accumulators in flight.
* ``ptx.red.add`` / ``ptx.wait_flag`` (flags between CTAs in global memory): the add is
  atomic (no race); it *publishes* the adding thread's global writes so far under the
  flag's address, and a ``wait_flag`` that finds the flag at its value *acquires* them
  (:meth:`~tilewise.sim.races.GlobalRaces.publish`): reads of them are then ordered, not
  races. CTAs run one after another in index order, so a wait is satisfied at once or
  never: a flag still short of the value is reported (only lower-numbered CTAs, which
  have run, can have added to it; on the GPU, waiting for a later CTA can hang).
* ``ptx.griddepcontrol.wait`` / ``ptx.griddepcontrol.launch_dependents`` (programmatic
  dependent launch): no-ops. The simulator runs one launch at a time, so every grid a
  launch could depend on has completed, and its memory is visible, before it starts.
* math (libdevice): computed in float32 for the 8/16/32-bit float types (then rounded to
  the result type), in float64 for float64.
"""

from __future__ import annotations

import math

import numpy as np

from ...ir import alu
from ...ir.launch import WARP, WARPGROUP
from ...ptx.table import MATH_OPS
from ..async_core import Part, async_part
from ..access import check_pointer, check_shared_read, mark_shared_write, read_bytes, write_bytes
from ..collective import whole_groups
from ..memory import GLOBAL0, LOCAL, SHARED
from ..registry import semantics
from ..scheduler import Wait
from ..values import fit, np_dtype


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
    ctx.asyncs.barrier()
    ctx.stats.barriers += 1


@semantics("ptx.bar.sync")
def bar_sync(ctx, site, args):
    for bid, count, bar, gen, tid0 in _named_barrier(ctx, site, args, "bar.sync"):
        _wait_named(ctx, site, bid, count, bar, gen, tid0)


@semantics("ptx.bar.arrive")
def bar_arrive(ctx, site, args):
    _named_barrier(ctx, site, args, "bar.arrive")


def _named_barrier(ctx, site, args, what: str) -> list:
    """Named barrier ``id``: the active warps arrive; when ``count`` threads have, the
    barrier completes (the participants' shared writes become visible) and resets. Warps of
    one statement may name different barriers (``bar.sync(1 + wg, 128)``): each group
    arrives on its own. Returns the barriers still open after the arrivals, ``(id, count,
    state, generation, first thread)`` each: a ``bar.sync`` waits until each completes."""
    whole_groups(ctx, site.span, what)
    act = ctx.active()
    ids = fit(args[0], act.shape, np.int64)
    counts = fit(args[1], act.shape, np.int64)
    pending = []
    for bid, count in sorted(set(zip(ids.tolist(), counts.tolist()))):
        tids = act[(ids == bid) & (counts == count)]
        if not 0 <= bid < 16 or count <= 0 or count % WARP or count > ctx.n:
            ctx.hazard(f"{what} {bid}, {count}: the id must be 0..15 and the count a positive "
                       f"multiple of 32 up to the CTA's {ctx.n} threads", site.span,
                       "use ids 1..15 (0 is __syncthreads's) and whole warps",
                       tid=int(tids[0]))
            continue
        bar = _arrive_named(ctx, site, what, bid, count, tids)
        if bar is not None:
            pending.append((bid, count, bar, bar["gen"], int(tids[0])))
    return pending


def _wait_named(ctx, site, bid, count, bar, gen, tid0) -> None:
    """A ``bar.sync`` waits while other forked thread sets run; a barrier nothing can
    complete is a deadlock."""
    wait = Wait(ctx, f"T.{site.name}({bid}, {count})", site.span,
                lambda: (tid0, None, f"{len(bar['arrived'])} of {count} threads arrived"))
    if not ctx.block(lambda: bar["gen"] != gen, wait):
        ctx.hazard(f"bar.sync {bid}, {count} can never complete (deadlock): "
                   f"{len(bar['arrived'])} of {count} threads arrived and no other thread "
                   "can reach it" + ctx.blocked_elsewhere(), site.span,
                   "make the count the number of threads that execute this barrier",
                   tid=tid0)


@async_part("named_barriers", order=5)
class NamedBarriers(Part):
    """The CTA's named barriers: id -> {"gen", "arrived", "count"} (made on first use)."""

    def __init__(self, core):
        super().__init__(core)
        self.bars: dict = {}


def _arrive_named(ctx, site, what, bid: int, count: int, tids):
    """``tids`` arrive on barrier ``bid``; returns its state while it is still open (None
    once this arrival completed it)."""
    bar = ctx.asyncs.part("named_barriers").bars.setdefault(
        bid, {"gen": 0, "arrived": [], "count": count})
    if bar["arrived"] and bar["count"] != count:
        ctx.hazard(f"{what} {bid} with count {count} while threads already waiting there "
                   f"expect {bar['count']}", site.span, "use one count per barrier phase",
                   tid=int(tids[0]))
    bar["count"] = count
    bar["arrived"].extend(tids.tolist())
    if len(bar["arrived"]) < count:
        return bar
    if len(bar["arrived"]) > count:
        ctx.hazard(f"{len(bar['arrived'])} threads arrived on barrier {bid}, which expects "
                   f"{count}", site.span, "make the count the number of threads that execute "
                   "the barrier", tid=int(tids[0]))
    ctx.mem.release(bar["arrived"])
    bar["arrived"] = []
    bar["gen"] += 1
    ctx.stats.barriers += 1
    return None


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
    _registers(ctx, s, nbytes, tids, site.span, False)
    _registers(ctx, d, nbytes, tids, site.span, True)
    data = read_bytes(ctx, s[0], s[1], nbytes, tids, site.span)
    on_shared = d[0] == SHARED
    if on_shared.any():
        mark_shared_write(ctx, d[1][on_shared], nbytes, tids[on_shared], site.span)
    write_bytes(ctx, d[0], d[1], data, tids, site.span)


@semantics("ptx.griddepcontrol.wait", "ptx.griddepcontrol.launch_dependents")
def griddepcontrol(ctx, site, args):
    """Programmatic dependent launch: nothing to wait for or to release here (the module
    docstring)."""


def _flags(ctx, site, args, what):
    """Per global space the flags touch: ``(space, offsets, uint32 words of the space, the
    call's values, thread ids)`` of the active threads (none after a pointer hazard)."""
    spaces = tuple(GLOBAL0 + k for k in range(len(ctx.mem.globals)))
    p = check_pointer(ctx, args[0], 4, site.span, what, spaces)
    if p is None:
        return
    tids = ctx.active()
    values = fit(args[1], tids.shape, np.int64).astype(np.uint32)
    for s in np.unique(p[0]).tolist():
        sel = p[0] == s
        yield s, p[1][sel], ctx.mem.space_bytes(s).view(np.uint32), values[sel], tids[sel]


@semantics("ptx.red.add")
def red_add(ctx, site, args):
    for s, offs, words, add, tids in _flags(ctx, site, args, "red.release.gpu.global.add.u32 "
                                            "(T.ptx.red.add)"):
        np.add.at(words, offs // 4, add)  # atomic: each thread's add lands
        ctx.mem.races.publish(ctx, s, offs, tids)


@semantics("ptx.wait_flag")
def wait_flag(ctx, site, args):
    what = "ld.acquire.gpu.global.u32 (T.ptx.wait_flag)"
    for s, offs, words, want, tids in _flags(ctx, site, args, what):
        have = words[offs // 4]
        short = have < want
        if short.any():
            k = int(np.argmax(short))
            name = ctx.mem.plan.param_names[s - GLOBAL0]
            ctx.hazard(f"{what} waits for the flag at offset {int(offs[k])} of {name} "
                       f"to reach {int(want[k])}, and it is {int(have[k])}: no CTA that ran "
                       "before this one added the rest. CTAs run in index order here, and "
                       "on the GPU a CTA waiting for a later one can hang (it may never be "
                       "scheduled)", site.span,
                       "wait only for flags that lower-numbered CTAs add to (T.ptx.red.add), "
                       "and check the count the wait expects", tid=int(tids[k]))
            return
        ctx.mem.races.acquire(s, offs)


def _registers(ctx, place, nbytes, tids, span, write):
    """A vector move to or from registers is an ordinary register access (the wgmma
    accumulator checks see it as they see element loads and stores)."""
    local = place[0] == LOCAL
    if local.any() and ctx.checks.regs:
        for w in ctx.asyncs.reg_watchers:
            w.register_access(tids[local], place[1][local], nbytes, span, write)


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
    "fma": lambda a, b, c: (alu.numpy_fma(a, b, c, a.dtype) if a.dtype.itemsize <= 4 else
                            a * b + c),
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
